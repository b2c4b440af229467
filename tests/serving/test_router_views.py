"""The router's views kept between routes (`Server.view`) never go stale.

Each instance keeps the view a router was last given and builds it again only after a write of a
field it carries; a write that forgets to reset it would route on old figures and silently change
results. With `Fleet.check_views` every route compares the kept views against ones built afresh,
over runs that exercise every kind of write: queues and batches, hand-offs, preemption by swap and
by recompute, faults, fallbacks, elastic roles, autoscaling, the edge, isolation and the routers
that read the views.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench.scenarios import everything_on
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.serving import fleet
from engine.serving.fleet import Fleet
from engine.serving.instance import Server
from engine.serving.kv import KvLedger
from tests.simhelp import records

pytestmark = pytest.mark.pure  # patches what compiled code calls directly (tests/conftest.py)

CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "disaggregated": ("chat-disaggregated", {"duration_s": 120.0}),
    "power_of_two": (
        "chat-disaggregated",
        {"duration_s": 120.0, "scheduler.router": {"name": "power_of_two"}},
    ),
    "round_robin": ("chat-colocated", {"duration_s": 120.0, "scheduler.router": {"name": "round_robin"}}),
    "swap": ("chat-colocated", {"scheduler.preemption": "swap", "workload.arrival.rate_rps": 40.0}),
    "recompute": (
        "chat-disaggregated",
        {"scheduler.preemption": "recompute", "workload.arrival.rate_rps": 40.0},
    ),
    "fault": ("failure-drill", {}),
    "fallback": ("prefill-loss-fallback", {}),
    "decode_loss": ("portfolio-decode-loss", {}),
    "autoscaled": ("day-autoscaled", {}),
    "edge": ("edge-offload", {}),
    "isolation": ("premium-isolation", {}),
    "mooncake": ("mooncake-replay", {"workload.trace.max_requests": 3000}),
}


def _scenario(case: str) -> Scenario:
    preset, changes = CASES[case]
    return io.apply_overrides(io.load_preset(preset), changes)


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Turn the check on; count the routes it checked."""
    calls: list[int] = []
    check = fleet._check

    def counted(views: Any, servers: list[Server], *router: Any) -> Any:
        calls.append(len(servers))
        return check(views, servers, *router)

    monkeypatch.setattr(Fleet, "check_views", True)
    monkeypatch.setattr(fleet, "_check", counted)
    return calls


@pytest.mark.parametrize("case", sorted(CASES))
def test_kept_views_match_fresh_ones_at_every_route(case: str, checked: list[int]) -> None:
    records(_scenario(case))
    assert checked, "no route compared its views: the case does not exercise them"


def test_everything_on_keeps_its_views_fresh(checked: list[int]) -> None:
    # (its cache-aware router builds views afresh; the plain views are those of a copy with least_loaded)
    scn = io.apply_overrides(everything_on(), {"scheduler.router": {"name": "least_loaded"}})
    records(scn)
    assert checked


def test_a_write_that_keeps_a_stale_view_is_caught(
    checked: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    release = KvLedger.release_prefilled

    def forgetful(self: KvLedger, srv: Server, rid: int) -> None:
        kept = srv.view
        release(self, srv, rid)
        srv.view = kept  # as if freeing a sent prompt's memory did not reset the view

    monkeypatch.setattr(KvLedger, "release_prefilled", forgetful)
    with pytest.raises(AssertionError, match="stale router view"):
        records(_scenario("disaggregated"))
