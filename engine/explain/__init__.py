"""Explaining results: findings, values the pages show, previews and reports.

Owns: `advisor` (roofline placement and findings), `confidence` (calibration marks and the
expected error of each figure), `presentation` (the figures and frames the
dashboard draws), `previews` (what a setting will do before a run: length histograms, shipped
traces, deployments), `drill` (a scenario's faults under each fallback policy), `sustain` (how an
unsustainable run and its latencies are said), and `report` (exports with provenance, the
validation table).
May import: every lower package, up to engine.planning.
"""
