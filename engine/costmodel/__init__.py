"""The cost of one engine iteration: the roofline, its step model, and calibration.

Owns: `perf` (Instance: FLOPs, bytes and time of prefill and decode iterations, KV capacity and
transfer), `roofline` (tables of one instance's phases), `power` (a chip's power from what it
does), `stacks` (serving stacks' scheduler defaults), `calibrate` (fitting profiles to
measurements), `reference` (reading the reference rows), `crossval` and `validation` (held-out
errors, the validation report), `trust` (which profile a chip runs with, and how sure it is).
May import: engine.core, engine.catalog.
"""
