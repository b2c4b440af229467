"""The cost of one engine iteration: the roofline and its step model.

Owns: `perf` (Instance: the deployment unit, its memory and rates; the roofline constants),
`iteration` (FLOPs, bytes and time of prefill and decode iterations over arrays, KV transfer),
`step` (the simulator's scalar fast path of the same, decode runs in closed form), `roofline`
(tables of one instance's phases), `power` (a chip's power from what it does), `stacks` (serving
stacks' scheduler defaults), `ownership` (the bill of owned chips). Calibration, which fits these
to measurements, is `engine.calibration`.
May import: engine.core, engine.catalog.
"""
