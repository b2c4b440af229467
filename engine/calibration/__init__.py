"""Calibration: fitting the cost model to measurements, and how sure each figure is.

Owns: `reference` and `reference_gpustack` (reading the reference rows into points, each judged
usable or set aside with a reason), `measurements` (what a measured point says; a user's CSV),
`predictor` (a point's predicted figure from a profile, in closed form), `calibrate` (fitting a
profile per chip and serving stack, and the shipped profiles' fits), `crossval` and `validation` (held-out errors: leave a source,
a chip or a chip family out; the validation report), `bands` and `band_lookup` (the range beside a
figure: the 16th to 84th percentile of held-out predicted / measured ratios, and its coverage
measured out of sample), `trust` (which profile a chip runs with under a stack, its basis, and its
bands).
May import: engine.core, engine.catalog, engine.costmodel.
"""
