"""The bottom layer: errors, hard limits, and the trust boundary for text and files.

Owns: `errors` (ScenarioError and how validation failures are worded), `bounds` (the hard
limits every scenario is checked against), `safeparse` (JSON/TOML with size and nesting limits),
`datafiles` (the data location: shipped ``data:`` files, ``upload:`` files, confinement), and
`safecsv` (CSV cells a spreadsheet cannot run).
May import: nothing of the engine. Everything else may import it.
"""
