"""The command line: ``python -m engine`` (or ``fengong``).

Owns: `main` (the parser; each command imported only when it runs), `common` (loading scenarios
from arguments, JSON output), `run` (run, drill, scenario) and `run_text` (a run's printed report),
`entries` (roofline, import-model, calibrate), `catalog`, `validate`, and `plan_flags` with `plan`
(the planning commands). The top layer: it may import any engine package;
none imports it.
"""
