"""The scenario: one validated, serialisable value, its files and links, and its resolution.

Owns: `model` (the Scenario and its parts: workload, deployment, cache, scheduler, faults),
`codec` (TOML and JSON files, field paths and overrides, presets, share links), and `resolve`
(looking a scenario's chips and model up in the catalog and building its instances).
May import: engine.core, engine.catalog, engine.costmodel, engine.policies.
"""
