"""Planning over many simulations: sizing, capacity search, the planner and sweeps.

Owns: `sizing` (first-order instance counts from the cost model), `capacity` (the highest load
at which every class passes), `rules` (what makes a run pass), `candidates` (the search space,
instance kinds, shapes and the scenarios built from them), `search` (simulating a shape's
candidates within the budget), `plan` (the cheapest deployment that meets the SLOs, and the
Pareto frontiers), `calibrations` (each candidate's calibration and band), `margin` (the choice
again with chips at their bands' edges), `frontier` (the frontiers of passing runs), `portfolio` (a decode pool of its own chip per request class, for the
planner) and `sweep` (grids of runs on a local pool or a Dask cluster).
May import: every lower package, up to engine.serving.
"""
