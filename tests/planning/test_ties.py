"""Of deployments tied on the objective, the nominal pick is the one that keeps the most requests within
their SLO (engine.planning.plan._firmer): three shapes tied at $59.76/h, the first found (90.2% within
SLO) was the pick, failed its full-length run and moved up to $64.74/h, where a tied shape at 95.3% held
at $59.76/h (a capacity planner's review)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from engine.planning.plan import _firmer

SEARCH: Any = SimpleNamespace(value=lambda r: r["usd_per_hour"])


def test_a_tie_goes_to_the_deployment_with_more_requests_within_slo() -> None:
    first = {"usd_per_hour": 59.76, "slo_attainment": 0.902}
    firmer = {"usd_per_hour": 59.76, "slo_attainment": 0.953}
    assert _firmer(firmer, first, SEARCH) and not _firmer(first, firmer, SEARCH)
    assert not _firmer({"usd_per_hour": 64.74, "slo_attainment": 0.99}, first, SEARCH)  # dearer: no tie
    assert not _firmer({"usd_per_hour": 59.76, "slo_attainment": None}, first, SEARCH)
    assert not _firmer(dict(first), first, SEARCH)  # as firm: the first found stays
