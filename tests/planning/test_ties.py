"""Of deployments tied on the objective, the nominal pick is the one that keeps the most requests within
their SLO (engine.planning.pick_tie.better_held, the risk-aware search's rule): three shapes tied at $59.76/h, the first found (90.2% within
SLO) was the pick, failed its full-length run and moved up to $64.74/h, where a tied shape at 95.3% held
at $59.76/h (a capacity planner's review)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from engine.planning.pick_tie import better_held


def _better(row: dict[str, Any], best: dict[str, Any], search: Any) -> bool:
    return better_held(search, row, best)


SEARCH: Any = SimpleNamespace(value=lambda r: r["usd_per_hour"])


def test_a_tie_goes_to_the_deployment_with_more_requests_within_slo() -> None:
    first = {"usd_per_hour": 59.76, "slo_attainment": 0.902}
    firmer = {"usd_per_hour": 59.76, "slo_attainment": 0.953}
    assert _better(firmer, first, SEARCH) and not _better(first, firmer, SEARCH)
    assert not _better({"usd_per_hour": 64.74, "slo_attainment": 0.99}, first, SEARCH)  # dearer: no tie
    assert _better({"usd_per_hour": 50.0, "slo_attainment": 0.5}, first, SEARCH)  # cheaper wins outright
    assert not _better({"usd_per_hour": 59.76, "slo_attainment": None}, first, SEARCH)
    assert not _better({"usd_per_hour": 59.76, "slo_attainment": float("nan")}, first, SEARCH)
    assert not _better(dict(first), first, SEARCH)  # as firm: the first found stays
    # a bill summed over pools an ulp off another's is a tie, not a cheaper deployment
    split, whole = 2 * 2.49 + 7 * 2.49, 9 * 2.49
    assert split != whole
    assert not _better(
        {"usd_per_hour": min(split, whole), "slo_attainment": 0.9},
        {"usd_per_hour": max(split, whole), "slo_attainment": 0.95},
        SEARCH,
    )
