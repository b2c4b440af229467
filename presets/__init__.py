"""Fengong's shipped data: hardware and model catalogs and scenario presets (TOML files)."""
