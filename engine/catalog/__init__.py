"""The things a scenario names: hardware and model specs and the catalog that holds them.

Owns: `specs` (HardwareSpec, ModelSpec, calibration profiles: validated, sourced values) and
`entries` (the catalog: built-in TOML entries, the user's own folders, inline custom entries,
Hugging Face configs).
May import: engine.core.
"""
