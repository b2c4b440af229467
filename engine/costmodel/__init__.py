"""The cost of one engine iteration: the roofline, its step model, and calibration.

Owns: `perf` (Instance: the deployment unit, its memory and rates; the roofline constants),
`iteration` (FLOPs, bytes and time of prefill and decode iterations over arrays, KV transfer),
`step` (the simulator's scalar fast path of the same, decode runs in closed form), `roofline`
(tables of one instance's phases), `power` (a chip's power from what it does), `stacks` (serving stacks' scheduler defaults), `calibrate` (fitting profiles to
measurements), `reference` (reading the reference rows), `crossval` and `validation` (held-out
errors, the validation report), `trust` (which profile a chip runs with, and how sure it is).
May import: engine.core, engine.catalog.
"""
