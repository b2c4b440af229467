"""Traffic isolation: classes pinned to pools, and what happens when their pools are full (issue 15)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.core.errors import ScenarioError
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.serving.run import simulate


def portfolio(pinned: bool, premium_instances: int = 2, rate: float = 16.0, **premium: Any) -> Scenario:
    """Premium chat and a batch surge (a 3x peak) on a dedicated and a shared pool of H100s."""
    data = io.to_data(io.apply_overrides(io.load_preset("chat-colocated"), {"duration_s": 120.0}))
    cls = data["workload"]["classes"][0]
    pool = data["deployment"]["pools"][0]
    data["deployment"]["pools"] = [
        dict(pool, name="premium", count=premium_instances),
        dict(pool, name="shared", count=3),
    ]
    data["workload"]["classes"] = [
        dict(cls, name="premium", share=0.2, priority=5, **({"pools": ["premium"], **premium} if pinned else {})),
        dict(
            cls, name="batch", share=0.8, priority=0, slo=dict(cls["slo"], ttft_ms=60000, tpot_ms=200),
            **({"pools": ["shared"]} if pinned else {}),
        ),
    ]  # fmt: skip
    data["workload"]["arrival"] = {"kind": "poisson", "rate_rps": rate, "shape": "peak", "peak_factor": 3.0}
    return io.from_data(data)


def test_premium_traffic_isolated_from_a_batch_surge() -> None:
    shared = simulate(portfolio(False)).summary["classes"]
    isolated = simulate(portfolio(True)).summary["classes"]
    assert not shared["premium"]["passes"] and isolated["premium"]["passes"]
    assert isolated["premium"]["slo_attainment"] > shared["premium"]["slo_attainment"] + 0.15
    assert isolated["batch"]["passes"]


def test_pinned_requests_stay_on_their_pools_unless_they_may_spill() -> None:
    def where(**premium: Any) -> tuple[set[int], dict[str, Any]]:
        res = simulate(portfolio(True, premium_instances=1, rate=24.0, spill_queue=2, **premium))
        t = res.requests
        return set(
            t.loc[(t["class"] == "premium") & (t["prefill_instance"] >= 0), "prefill_instance"]
        ), res.summary

    waited, _ = where(overflow="wait")
    assert waited == {0}  # the premium pool's one instance
    spilled, _ = where(overflow="spill")
    assert 0 in spilled and len(spilled) > 1
    _, summary = where(overflow="reject")
    assert summary["requests"]["rejected_by_reason"].get("isolation_full", 0) > 0


def test_a_class_pinned_to_an_unknown_pool_is_refused() -> None:
    data = io.to_data(io.load_preset("chat-colocated"))
    data["workload"]["classes"][0]["pools"] = ["gold"]
    with pytest.raises(
        ScenarioError, match=r"workload\.classes\[0\]\.pools: 'gold' is not a pool of this deployment"
    ):
        io.from_data(data)
