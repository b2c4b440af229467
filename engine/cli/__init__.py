"""The command line: ``python -m engine`` (or ``fengong``).

Owns: `main` (the parser and the commands), `common` (loading scenarios from arguments, JSON
output) and `plan` (the planning commands). The top layer: it may import any engine package;
none imports it.
"""
