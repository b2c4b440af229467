"""Which of two passing deployments of one chip group the search keeps as the group's pick (`better`)."""

from __future__ import annotations

from typing import Any

from engine.planning.search import Search

PICK_TIE = 1e-9
"""Relative difference under which two deployments cost the same (a bill summed over pools differs from
another's by an ulp: 2 x 2.49 + 7 x 2.49 is not 9 x 2.49)."""


def better(row: dict[str, Any], best: dict[str, Any], search: Search) -> bool:
    """Whether `row` beats its group's best: cheaper on the objective, or as cheap and keeping more of its
    requests within their SLO. Of three shapes at $59.76/h, the first found (90.2% within SLO) was the
    pick, failed its full-length run and moved up to $64.74/h, where a tied shape at 95.3% held at
    $59.76/h (a capacity planner's review). Only shapes the search simulated tie: one whose bound reaches
    the best's cost is not searched, and groups (chips) are compared by their picks' cost alone."""
    mine, theirs = search.value(row), search.value(best)
    if mine < theirs * (1 - PICK_TIE):
        return True
    if mine > theirs * (1 + PICK_TIE):
        return False
    a, b = row.get("slo_attainment"), best.get("slo_attainment")
    return a is not None and b is not None and a == a and b == b and a > b
