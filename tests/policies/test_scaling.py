"""Autoscalers (issue 34): what each wants from a pool's load, and their knobs' checks."""

from __future__ import annotations

from typing import Any

import pytest

from engine import policies
from engine.core.errors import ScenarioError


def _load(**over: Any) -> policies.PoolLoad:
    base: dict[str, Any] = {
        "role": "decode",
        "serving": 4,
        "starting": 0,
        "draining": 0,
        "busy": 0.5,
        "queued_requests": 0,
        "kv_used": 0.3,
        "demand_rps": 10.0,
        "previous_demand_rps": 10.0,
        "capacity_rps": 2.0,
        "lookahead_s": 60.0,
        "interval_s": 30.0,
    }
    base.update(over)
    return policies.PoolLoad(**base)


def test_utilisation_sizes_for_its_target() -> None:
    a = policies.build_autoscaler({"name": "utilisation", "target": 0.5})
    assert a.desired(_load(serving=4, busy=0.5)) == 4
    assert a.desired(_load(serving=4, busy=1.0)) == 8
    assert a.desired(_load(serving=4, busy=0.1)) == 1
    assert a.desired(_load(serving=4, busy=0.0)) == 0  # the pool's minimum is the simulation's to apply


def test_queue_depth_steps_one_at_a_time() -> None:
    a = policies.build_autoscaler({"name": "queue", "up_above": 2.0, "down_below": 0.5, "busy_below": 0.5})
    assert a.desired(_load(serving=4, queued_requests=9)) == 5
    assert a.desired(_load(serving=4, queued_requests=8)) == 4
    assert a.desired(_load(serving=4, queued_requests=1, busy=0.2)) == 3
    assert a.desired(_load(serving=4, queued_requests=1, busy=0.9)) == 4  # busy: holds
    assert a.desired(_load(serving=4, starting=1, queued_requests=0, busy=0.1)) == 5  # waits for the start


def test_slo_divides_demand_by_capacity_within_the_targets() -> None:
    a = policies.build_autoscaler({"name": "slo", "headroom": 0.5, "predict": "constant"})
    assert a.desired(_load(demand_rps=10.0, capacity_rps=2.0)) == 10
    assert a.desired(_load(demand_rps=10.0, capacity_rps=4.0)) == 5
    assert a.desired(_load(demand_rps=0.0)) == 0


def test_slo_trend_looks_a_cold_start_ahead() -> None:
    a = policies.build_autoscaler({"name": "slo", "headroom": 1.0, "predict": "trend"})
    rising = _load(
        demand_rps=10.0, previous_demand_rps=7.0, interval_s=30.0, lookahead_s=60.0, capacity_rps=1.0
    )
    assert a.desired(rising) == 16  # 10 + 3 / 30 s x 60 s
    falling = _load(
        demand_rps=10.0, previous_demand_rps=30.0, interval_s=30.0, lookahead_s=60.0, capacity_rps=1.0
    )
    assert a.desired(falling) == 5  # never below half the last interval's demand


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"name": "utilisation", "target": 0.0}, "target"),
        ({"name": "queue", "up_above": 1.0, "down_below": 2.0}, "down_below"),
        ({"name": "slo", "headroom": 2.0}, "headroom"),
        ({"name": "slo", "lookahead": 1}, "lookahead"),
        ({"name": "nope"}, "name"),
    ],
)
def test_bad_knobs_name_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(ScenarioError, match=field):
        policies.build_autoscaler(spec)
