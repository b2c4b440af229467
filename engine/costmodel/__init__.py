"""The cost of one engine iteration: the roofline, its step model, and calibration.

Owns: `perf` (Instance: FLOPs, bytes and time of prefill and decode iterations, KV capacity and
transfer), `roofline` (tables of one instance's phases), `calibrate` (fitting profiles to
measurements and checking them against the reference data).
May import: engine.core, engine.catalog.
"""
