"""Planning over many simulations: sizing, capacity search, the planner and sweeps.

Owns: `sizing` (first-order instance counts from the cost model), `capacity` (the highest load
at which every class passes), `plan` (the cheapest deployment that meets the SLOs, and the
Pareto frontiers), `portfolio` (a decode pool of its own chip per request class, for the
planner) and `sweep` (grids of runs on a local pool or a Dask cluster).
May import: every lower package, up to engine.serving.
"""
