"""Which of two passing deployments a search keeps: the cheaper on the objective, or of two as cheap, the one
that keeps more of its requests within their SLO (`better_held`). The nominal search breaks its ties so
(`plan._branch_and_bound`) as the risk-aware one does with the chips slowed (`risk_search`)."""

from __future__ import annotations

from typing import Any

from engine.planning.search import Search

TIE = 1.0 + 1e-9
"""Objectives this close are a tie, broken by headroom (`better_held`): a bill summed over pools differs
from another's by an ulp (2 x 2.49 + 7 x 2.49 is not 9 x 2.49)."""


def better_held(search: Search, got: dict[str, Any], best: dict[str, Any]) -> bool:
    """`got` is the better pick: cheaper, or as cheap with more of its requests within SLO. With the chips
    slowed, the first found won a tie (a review found two shapes at the choice's $24.90/h holding 96.8%
    where it held 94.2%, never tried); as modelled, of three shapes at $59.76/h the first found (90.2%
    within SLO) was the pick, failed its full-length run and moved up to $64.74/h, where a tied shape at
    95.3% held at $59.76/h (a capacity planner's review). The nominal search ties only shapes it simulated:
    one whose bound reaches the best's cost is not searched, and groups are compared by cost alone."""
    a, b = search.value(got), search.value(best)
    if a * TIE < b:
        return True
    return a <= b * TIE and float(got.get("slo_attainment") or 0.0) > float(best.get("slo_attainment") or 0.0)
