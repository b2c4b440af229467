"""Policies decide from small hand-made views, without simpy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from engine import policies
from engine.core.errors import ScenarioError
from engine.policies import InstanceView, RequestView


def view(
    pos: int, waiting_tokens: int = 0, running: int = 0, cached: int = 0, up: bool = True
) -> InstanceView:
    return InstanceView(pos, 0, waiting_tokens, running, 1000, cached, up)


def req(
    rid: int = 0, prio: int = 0, arrival: float = 0.0, prompt: int = 100, deadline: float = 1.0, top: int = 0
) -> RequestView:
    return RequestView(rid, 0, prio, arrival, prompt, 10, deadline, top)


def test_round_robin_cycles_over_live_instances() -> None:
    rr = policies.build_router({"name": "round_robin"})
    views = [view(0), view(1, up=False), view(2)]
    assert [rr.choose(req(), views, t) for t in range(4)] == [0, 2, 0, 2]


def test_least_loaded_prefers_fewest_queued_tokens_then_running() -> None:
    ll = policies.build_router({"name": "least_loaded"})
    assert ll.choose(req(), [view(0, 500), view(1, 100, 9), view(2, 100, 3)], 0) == 2


@pytest.mark.parametrize(
    "name", sorted(n for n, c in policies.registered("router").items() if getattr(c, "ranked", False))
)
def test_a_ranked_router_chooses_the_least_rank(name: str) -> None:
    # the simulation chooses from kept ranks instead of calling `choose`: both must agree, ties and
    # unequal speeds included
    router = policies.build_router({"name": name})
    assert isinstance(router, policies.Router)
    speeds = (1.0, 0.25, 0.5, 1.0, 1.0, 0.75)
    for seed in range(50):
        views = [
            InstanceView(i, 0, (seed * 7 + i * 13) % 5 * 100, (seed + i) % 3, 1000, speed=speeds[i])
            for i in range(6)
        ]
        least = min(range(len(views)), key=lambda i: router.rank(views[i]))
        assert router.choose(req(), views, seed) == least


def test_power_of_two_picks_the_less_loaded_of_two_and_is_deterministic() -> None:
    p2 = policies.build_router({"name": "power_of_two"})
    views = [view(i, waiting_tokens=100 * i) for i in range(8)]
    picks = [p2.choose(req(rid=r), views, r) for r in range(200)]
    assert picks == [p2.choose(req(rid=r), views, r) for r in range(200)]
    assert 7 not in picks  # the most loaded instance never beats the other draw
    assert len(set(picks)) >= 5


def test_cache_aware_weighs_hits_against_load() -> None:
    ca = policies.build_router({"name": "cache_aware"})
    r = req(prompt=4000)
    assert ca.choose(r, [view(0, waiting_tokens=0), view(1, waiting_tokens=1000, cached=3000)], 0) == 1
    assert ca.choose(r, [view(0, waiting_tokens=0), view(1, waiting_tokens=5000, cached=3000)], 0) == 0
    blind = policies.build_router({"name": "cache_aware", "hit_weight": 0.0})
    assert blind.choose(r, [view(0, waiting_tokens=0), view(1, waiting_tokens=1000, cached=3000)], 0) == 0


@pytest.mark.parametrize(
    ("name", "expected"),
    [("fcfs", [0, 1, 2, 3]), ("priority", [2, 0, 1, 3]), ("edf", [1, 3, 0, 2]), ("spf", [3, 1, 2, 0])],
)
def test_queue_orders(name: str, expected: list[int]) -> None:
    q = policies.build_queue({"name": name})
    reqs = [
        req(0, prio=0, arrival=0.0, prompt=900, deadline=5.0),
        req(1, prio=0, arrival=1.0, prompt=200, deadline=2.0),
        req(2, prio=5, arrival=2.0, prompt=300, deadline=9.0),
        req(3, prio=0, arrival=3.0, prompt=100, deadline=3.5),
    ]
    assert [r.rid for r in sorted(reqs, key=q.key)] == expected


def test_admission_policies() -> None:
    none = policies.build_admission({"name": "none"})
    assert none.reject(req(), 10**6, 1e9) is None
    cap = policies.build_admission({"name": "queue_cap", "max_queued": 5})
    assert cap.reject(req(), 4, 0.0) is None and cap.reject(req(), 5, 0.0) == "queue_full"
    early = policies.build_admission({"name": "early_reject", "factor": 1.0, "low_priority_factor": 0.5})
    top = req(prio=2, top=2, arrival=0.0, deadline=1.0)
    low = req(prio=0, top=2, arrival=0.0, deadline=1.0)
    assert early.reject(top, 0, 0.9) is None
    assert early.reject(top, 0, 1.1) == "predicted_ttft_over_slo"
    assert early.reject(low, 0, 0.6) == "predicted_ttft_over_slo"  # lower priority sheds first
    assert early.reject(low, 0, 0.4) is None
    # time already spent on the way in comes off the target before the factor applies
    assert early.reject(top, 0, 0.5, waited_s=0.4) is None
    assert early.reject(top, 0, 0.5, waited_s=0.6) == "predicted_ttft_over_slo"
    # a top-priority request alone on its instance (own_s: its prefill, the whole prediction) is held
    # to what is left of its target, not to a factor below 1 of it; anything ahead: the factor
    strict = policies.build_admission({"name": "early_reject", "factor": 0.6})
    assert strict.reject(top, 0, 0.9, own_s=0.9) is None
    assert strict.reject(top, 0, 1.1, own_s=1.1) == "predicted_ttft_over_slo"
    assert strict.reject(top, 0, 0.9) == "predicted_ttft_over_slo"  # not alone: 0.6 x 1 s
    assert strict.reject(top, 0, 0.9, waited_s=0.2, own_s=0.9) == "predicted_ttft_over_slo"
    assert strict.reject(low, 0, 0.5, own_s=0.5) == "predicted_ttft_over_slo"  # lower classes: their factor
    lenient = policies.build_admission({"name": "early_reject", "factor": 2.0})
    assert lenient.reject(top, 0, 1.5, own_s=1.5) is None and lenient.reject(top, 0, 2.5, own_s=2.5)


def test_bad_knobs_and_names_are_refused() -> None:
    with pytest.raises(ScenarioError, match=r"scheduler\.router\.hit_weight: 99"):
        policies.build("router", {"name": "cache_aware", "hit_weight": 99})
    with pytest.raises(ScenarioError, match="unknown knob"):
        policies.build("admission", {"name": "early_reject", "slack": 2})
    with pytest.raises(ScenarioError, match="not a queue policy"):
        policies.build("queue", {"name": "lifo"})


def test_duplicate_registration_raises() -> None:
    with pytest.raises(ValueError, match="already registered"):

        @policies.register
        @dataclass(frozen=True, kw_only=True)
        class Another(policies.Router):
            name: ClassVar[str] = "round_robin"


def test_every_policy_has_help_and_buildable_defaults() -> None:
    for kind in ("router", "queue", "admission", "autoscaler"):
        for name, cls in policies.registered(kind).items():  # type: ignore[arg-type]
            assert cls.help, name
            assert policies.build(kind, {"name": name}).name == name  # type: ignore[arg-type]


def test_a_policy_classs_validator_is_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every scenario validated and every simulation builds its policies; the knobs' validator of a
    class is built on its first use only (a millisecond or two each time otherwise, dozens of times in
    a plan), and a policy built again still validates its knobs."""
    from engine.policies import registry

    built: list[type] = []
    real = registry.TypeAdapter

    def counting(cls: type) -> object:
        built.append(cls)
        return real(cls)

    monkeypatch.setattr(registry, "TypeAdapter", counting)
    monkeypatch.setattr(registry, "_ADAPTERS", {})
    first = policies.build_admission({"name": "queue_cap", "max_queued": 8})
    again = policies.build_admission({"name": "queue_cap", "max_queued": 9})
    assert [type(first), type(again)] == [type(first)] * 2 and first != again
    assert built == [type(first)]
    with pytest.raises(ScenarioError, match=r"scheduler\.admission\.max_queued"):
        policies.build_admission({"name": "queue_cap", "max_queued": 0})
    assert built == [type(first)]
