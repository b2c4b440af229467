"""Portfolios: several pools per role, routing across them by speed and price, hand-off routes
between pools, and a KV fabric that transfers contend for (issue 15)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import simulate
from engine.core.errors import ScenarioError
from engine.costmodel.step import StepModel
from engine.explain.mode_switch import with_mode
from engine.explain.previews import with_pool_added, with_pool_removed
from engine.policies.registry import InstanceView, RequestView
from engine.policies.routers import CostAware, LeastLoaded
from engine.scenario.codec import apply_overrides, load_preset
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.instance import throughput
from tests.simhelp import check_invariants, records

H100_PREFILL = {"name": "pf-h100", "role": "prefill", "hardware": "h100-sxm", "tp": 2, "count": 2}
MI_PREFILL = {"name": "pf-mi300x", "role": "prefill", "hardware": "mi300x", "tp": 2, "count": 1}
H100_DECODE = {"name": "dec-h100", "role": "decode", "hardware": "h100-sxm", "tp": 2, "count": 1}
H20_DECODE = {"name": "dec-h20", "role": "decode", "hardware": "h20", "tp": 2, "count": 2}


def portfolio(**changes: Any) -> Scenario:
    """Chat on two prefill pools (H100, MI300X) and two decode pools (H100, H20), one minute."""
    return apply_overrides(
        load_preset("chat-disaggregated"),
        {
            "duration_s": 60.0,
            "deployment.pools": [H100_PREFILL, MI_PREFILL, H100_DECODE, H20_DECODE],
            **changes,
        },
    )


def pool_of_instances(result: Any) -> np.ndarray:
    """Each instance's pool (instances are numbered pool by pool, in order)."""
    pools = result.scenario.deployment.pools
    return np.repeat(np.arange(len(pools)), [p.count for p in pools])


def test_several_pools_per_role_each_take_work_and_every_request_ends_once() -> None:
    res = simulate(portfolio())
    t = res.requests
    assert t["outcome"].isin(["completed", "rejected", "failed"]).all()
    assert len(t) == t["request"].nunique()
    pools = pool_of_instances(res)
    done = t[t["outcome"] == "completed"]
    assert set(pools[done["prefill_instance"].to_numpy()]) == {0, 1}
    assert set(pools[done["decode_instance"].to_numpy()]) == {2, 3}
    # tokens generated equal the completed outputs; the bill's parts add up to it
    cost = res.summary["cost"]
    assert sum(cost["usd_by_part"].values()) == pytest.approx(cost["usd_total"], rel=1e-9)
    assert cost["usd_per_hour"] == pytest.approx(2 * 2 * 2.49 + 2 * 2.0 + 2 * 2.49 + 2 * 2 * 1.3)


def test_least_loaded_weighs_queues_by_speed() -> None:
    fast = InstanceView(0, 1, 4000, 0, 10_000, speed=1.0)
    slow = InstanceView(1, 1, 1500, 0, 10_000, speed=0.25)  # a quarter of the speed: 6,000 tokens' worth
    req = RequestView(0, 0, 0, 0.0, 500, 100, 1.0)
    assert LeastLoaded().choose(req, [fast, slow], 0) == 0
    same = [fast._replace(speed=1.0), slow._replace(speed=1.0)]
    assert LeastLoaded().choose(req, same, 0) == 1  # identical chips: the plain count decides


def test_a_faster_prefill_pool_takes_a_larger_share() -> None:
    res = simulate(portfolio())
    t = res.requests
    pools = pool_of_instances(res)
    per_instance = t.groupby(pools[t["prefill_instance"].to_numpy()]).size() / np.array([2, 1])
    # the H100 instances prefill faster than the MI300X one (on its conservative profile): they take more each
    assert per_instance[0] > per_instance[1]


def test_cost_aware_fills_the_cheapest_chips_first_and_spills_under_load() -> None:
    req = RequestView(0, 0, 0, 0.0, 1000, 100, 1.0)  # a 1 s TTFT target
    cheap = InstanceView(0, 0, 0, 0, 10_000, role="prefill", tokens_per_s=10_000, usd_per_million_tokens=0.05)
    dear = InstanceView(1, 0, 0, 0, 10_000, role="prefill", tokens_per_s=40_000, usd_per_million_tokens=0.08)
    router = CostAware()
    assert router.choose(req, [cheap, dear], 0) == 0
    busy = cheap._replace(waiting_tokens=8_000)  # 0.9 s of work queued: beyond half the target
    assert router.choose(req, [busy, dear], 0) == 1
    # placed 0.85 s after it arrived (a retry, a slow way in), it has 0.15 s left: its 0.1 s of prefill
    # on the cheap instance is beyond half of that, and the dear one (0.025 s) keeps it on time
    assert router.choose(req, [cheap, dear], 0) == 0  # (at its arrival the cheap one did)
    assert router.choose(req._replace(now_s=0.85), [cheap, dear], 0) == 1
    assert router.choose(req._replace(now_s=0.85), [cheap._replace(tokens_per_s=40_000), dear], 0) == 0
    with pytest.raises(ValueError, match="ttft_share"):
        CostAware(ttft_share=0.0)
    # in a run: at a light load the decode pool whose tokens cost less (its price over its decode
    # rate at the scenario's batch limits, as the router prices it) carries more work per instance
    scn = portfolio(**{"workload.arrival.rate_rps": 4.0, "scheduler.router": {"name": "cost_aware"}})
    b = scn.batching()
    price = {
        i: p.usd_per_hour / p.spec.count / throughput(StepModel(p.instance), b.token_budget, b.max_batch)[1]
        for i, p in enumerate(resolve(scn).pools)
        if p.spec.role == "decode"
    }
    cheap, dear = sorted(price, key=price.__getitem__)
    assert price[dear] > 1.02 * price[cheap]  # a real difference, not a tie broken by order
    light = simulate(scn)
    t = light.requests
    pools = pool_of_instances(light)
    dec = pools[t.loc[t["outcome"] == "completed", "decode_instance"].to_numpy()]
    count = {p: scn.deployment.pools[p].count for p in (cheap, dear)}
    assert np.count_nonzero(dec == cheap) / count[cheap] > np.count_nonzero(dec == dear) / count[dear]


def test_cost_aware_counts_what_a_retried_request_has_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The router is told when it places a request: a retry after a fault has used part of its TTFT."""
    seen: list[tuple[float, float, int]] = []
    choose = CostAware.choose

    def spy(self: CostAware, request: RequestView, instances: Any, tick: int) -> int:
        seen.append((request.now_s, request.arrival_s, request.rid))
        return choose(self, request, instances, tick)

    monkeypatch.setattr(CostAware, "choose", spy)
    fault = {"at_s": 20.0, "pool": "dec-h100", "instances": 1, "duration_s": 10.0, "in_flight": "retry"}
    result = simulate(portfolio(**{"scheduler.router": {"name": "cost_aware"}, "faults": [fault]}))
    retried = set(np.flatnonzero(result.requests["retries"].to_numpy() > 0))
    assert retried and seen
    assert all(now >= arrival for now, arrival, _ in seen)
    assert any(now > arrival + 1.0 for now, arrival, rid in seen if rid in retried)


def test_cost_aware_prices_instances_on_the_scenarios_cost_basis() -> None:
    """Owned chips are priced as the bill counts them (capital, hosting, energy at TDP), not at rent."""
    from engine.costmodel import ownership
    from engine.serving.sim import Simulation
    from engine.serving.workload import generate

    def prices(sc: Scenario) -> dict[str, tuple[float, ...]]:
        sim = Simulation(resolve(sc), generate(sc))
        return {srv.pool.spec.name: srv.prices for srv in sim.servers}

    rent = portfolio(**{"scheduler.router": {"name": "cost_aware"}})
    own = apply_overrides(rent, {"cost.mode": "own"})
    pr, po = prices(rent), prices(own)
    for name, pool in ((p.spec.name, p) for p in resolve(own).pools):
        hw = pool.hardware
        chip_hour = ownership.chip_hour_usd(hw, own.cost, power_w=hw.tdp_w)
        for r, o in zip(pr[name], po[name], strict=True):  # per million tokens, in each role
            assert o == pytest.approx(r * chip_hour / hw.usd_per_hour)
    assert po != pr


def test_sends_to_pairs_prefill_and_decode_pools() -> None:
    sc = portfolio(
        **{
            "deployment.pools[0].sends_to": ["dec-h100"],
            "deployment.pools[1].sends_to": ["dec-h20"],
        }
    )
    res = simulate(sc)
    t = res.requests
    done = t[t["outcome"] == "completed"]
    pools = pool_of_instances(res)
    pairs = set(
        zip(
            pools[done["prefill_instance"].to_numpy()], pools[done["decode_instance"].to_numpy()], strict=True
        )
    )
    assert pairs == {(0, 2), (1, 3)}


def test_sends_to_names_decode_pools_of_a_prefill_pool() -> None:
    with pytest.raises(ScenarioError, match=r"pools\[0\].sends_to: 'pf-mi300x' is not a decode pool"):
        portfolio(**{"deployment.pools[0].sends_to": ["pf-mi300x"]})
    with pytest.raises(ScenarioError, match=r"pools\[2\].sends_to: only a prefill pool"):
        portfolio(**{"deployment.pools[2].sends_to": ["dec-h20"]})
    with pytest.raises(ScenarioError, match="one or more 'prefill' pools"):
        portfolio(**{"deployment.pools": [H100_DECODE, H20_DECODE]})


def test_a_shared_fabric_makes_transfers_wait_for_each_other() -> None:
    base = simulate(portfolio())
    shared = simulate(portfolio(**{"deployment.link.shared_gb_s": 2.0}))
    assert base.requests["kv_wait_s"].sum() < shared.requests["kv_wait_s"].sum()
    t = shared.requests
    done = t[t["outcome"] == "completed"]
    ttft_base = base.requests.loc[base.requests["outcome"] == "completed", "ttft_s"].mean()
    assert done["ttft_s"].mean() > ttft_base
    # the fabric never carries more than its bandwidth: bytes sent over the span of the transfers
    kvb = resolve(portfolio()).pools[0].instance.kv_bytes_per_token
    sent = float(done["prompt_tokens"].sum()) * kvb
    span = float(done["first_token_s"].max() - done["arrival_s"].min())
    assert sent / span <= 2.0e9 * 1.001
    # the link is billed for the slower wire time it carries; the queueing stays with prefill
    cost, base_cost = shared.summary["cost"]["usd_by_part"], base.summary["cost"]["usd_by_part"]
    assert cost["kv_transfer"] > base_cost["kv_transfer"]
    assert sum(cost.values()) == pytest.approx(shared.summary["cost"]["usd_total"], rel=1e-9)


def test_pools_are_added_and_removed_with_what_names_them() -> None:
    sc = apply_overrides(
        load_preset("premium-isolation"),
        {"faults": [{"at_s": 10, "pool": "premium", "instances": 1, "duration_s": 5}]},
    )
    more = with_pool_added(sc, "mixed")
    assert [p.name for p in more.deployment.pools] == ["premium", "shared", "mixed-2"]
    assert more.deployment.pools[-1].count == 1
    fewer = with_pool_removed(more, 0)
    assert [p.name for p in fewer.deployment.pools] == ["shared", "mixed-2"]
    assert fewer.faults == ()  # the fault named the removed pool
    assert fewer.workload.classes[0].pools == ()  # premium's pin went with its pool: it may go anywhere
    with pytest.raises(ValueError, match="only decode pool"):
        with_pool_removed(load_preset("chat-disaggregated"), 1)
    # the last edge pool takes its edge site with it; the last data-centre pool of a role stays
    edge = load_preset("edge-offload")
    alone = with_pool_removed(edge, 1)
    assert alone.deployment.edge is None and [p.name for p in alone.deployment.pools] == ["datacenter"]
    with pytest.raises(ValueError, match="only mixed pool"):
        with_pool_removed(edge, 0)
    # switching modes keeps each pool's chips, and the pins (and faults) follow their pools
    split = with_mode(sc, "disaggregated")
    assert [(p.name, p.role, p.count) for p in split.deployment.pools] == [
        ("premium-prefill", "prefill", 1),
        ("premium-decode", "decode", 1),
        ("shared-prefill", "prefill", 1),
        ("shared-decode", "decode", 2),
    ]
    assert split.workload.classes[0].pools == ("premium-prefill", "premium-decode")
    assert split.faults == ()  # it named 'premium', which is gone
    mixed = with_mode(load_preset("portfolio-chat-batch"), "colocated")
    assert [(p.name, p.role, p.hardware, p.count) for p in mixed.deployment.pools] == [
        ("prefill", "mixed", "h100-sxm", 4),
        ("decode-chat", "mixed", "h20", 3),
        ("decode-batch", "mixed", "mi300x", 2),
    ]
    edge = with_mode(load_preset("edge-offload"), "disaggregated")
    assert [p.tier for p in edge.deployment.pools].count("edge") == 1 and edge.deployment.edge is not None


def test_a_class_pinned_to_a_decode_pool_decodes_only_there() -> None:
    sc = portfolio(**{"workload.classes[0].pools": ["dec-h20"]})
    res = simulate(sc)
    done = res.requests[res.requests["outcome"] == "completed"]
    assert set(pool_of_instances(res)[done["decode_instance"].to_numpy()]) == {3}
    assert set(pool_of_instances(res)[done["prefill_instance"].to_numpy()]) == {0, 1}  # entry: any


def test_the_portfolio_preset_beats_the_cheapest_all_h100_split_at_equal_slo() -> None:
    """The lesson of portfolio-chat-batch, on a shorter window."""
    short = {"duration_s": 300.0}
    mix = simulate(apply_overrides(load_preset("portfolio-chat-batch"), short)).summary
    h100 = simulate(apply_overrides(load_preset("portfolio-h100-only"), short)).summary
    assert all(c["passes"] for c in mix["classes"].values())
    assert all(c["passes"] for c in h100["classes"].values())
    assert mix["cost"]["usd_per_request"] < h100["cost"]["usd_per_request"]
    assert mix["cost"]["usd_per_hour"] < h100["cost"]["usd_per_hour"]
    unpinned = apply_overrides(
        load_preset("portfolio-chat-batch"),
        {**short, "workload.classes[0].pools": [], "workload.classes[1].pools": []},
    )
    assert not simulate(unpinned).summary["classes"]["chat"]["passes"]


CHIPS = ("h100-sxm", "h20", "mi300x", "h200")


@settings(
    max_examples=int(os.environ.get("PORTFOLIO_EXAMPLES", 25)),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    prefill=st.lists(st.sampled_from(CHIPS), min_size=1, max_size=3),
    decode=st.lists(st.sampled_from(CHIPS), min_size=1, max_size=3),
    rate=st.floats(2.0, 30.0),
    router=st.sampled_from(["least_loaded", "power_of_two", "cost_aware", "round_robin"]),
    pin=st.booleans(),
    route=st.booleans(),
    fabric=st.sampled_from([None, 1.0, 50.0]),
    fault=st.booleans(),
    preempt=st.sampled_from(["none", "recompute"]),
    seed=st.integers(0, 1000),
)
def test_invariants_on_random_portfolios(
    prefill: list[str],
    decode: list[str],
    rate: float,
    router: str,
    pin: bool,
    route: bool,
    fabric: float | None,
    fault: bool,
    preempt: str,
    seed: int,
) -> None:
    """Every request ends exactly once, timestamps are ordered and KV never overflows, whatever the
    pools, routes, pins, fabric and faults."""
    pools = [
        {"name": f"p{i}", "role": "prefill", "hardware": h, "tp": 2, "count": 1}
        for i, h in enumerate(prefill)
    ]
    pools += [
        {"name": f"d{i}", "role": "decode", "hardware": h, "tp": 2, "count": 1} for i, h in enumerate(decode)
    ]
    if route:
        pools[0]["sends_to"] = [f"d{len(decode) - 1}"]
    changes: dict[str, Any] = {
        "duration_s": 20.0,
        "seed": seed,
        "deployment.pools": pools,
        "workload.arrival.rate_rps": rate,
        "scheduler.router": {"name": router},
        "scheduler.preemption": preempt,
        "deployment.link.shared_gb_s": fabric,
    }
    if pin:
        changes["workload.classes[0].pools"] = [f"p{len(prefill) - 1}", "d0"]
    if fault:
        changes["faults"] = [{"at_s": 5.0, "pool": "d0", "instances": 1, "duration_s": 5.0}]
    s = apply_overrides(load_preset("chat-disaggregated"), changes)
    rec, _ = records(s)
    res = simulate(s)
    check_invariants(res, rec)
    t = res.requests
    assert len(t) == t["request"].nunique() == res.summary["requests"]["total"]


def test_a_class_whose_decode_pool_is_lost_spills_to_another_decode_pool() -> None:
    """Issue 34: with `overflow = "spill"`, chat's own decode pool lost for good sends chat to the batch
    class's decode pool; nothing fails with no_decode_instance while that pool serves. With "wait"
    (the default) the chat requests after the loss fail, as before."""

    def run(overflow: str) -> Any:
        s = apply_overrides(load_preset("portfolio-chat-batch"), {
            "duration_s": 90.0, "workload.classes[0].overflow": overflow,
            "faults": [{"at_s": 30.0, "pool": "decode-chat", "instances": 3}],
        })  # fmt: skip
        return simulate(s)

    spilled = run("spill")
    table = spilled.requests
    assert "no_decode_instance" not in set(table["reason"])
    late_chat = table[(table["class"] == "chat") & (table["arrival_s"] > 31.0)]
    assert len(late_chat) > 100 and (late_chat["outcome"] == "completed").all()
    batch_servers = {7, 8}  # decode-batch's two instances, after 4 prefill and 3 decode-chat ones
    assert set(late_chat["decode_instance"]) <= batch_servers
    waited = run("wait").requests
    lost = waited[(waited["class"] == "chat") & (waited["arrival_s"] > 31.0)]
    assert (lost["reason"] == "no_decode_instance").mean() > 0.9


def test_the_decode_loss_preset_serves_every_chat_request_on_the_batch_pool() -> None:
    """portfolio-decode-loss (issue 34's preset): chat's decode pool lost for good at 300 s, chat spills;
    no request fails, and every chat request that arrives after the loss decodes on decode-batch."""
    s = load_preset("portfolio-decode-loss")
    res = simulate(s)
    assert res.summary["requests"]["failed"] == 0
    t = res.requests
    late = t[(t["class"] == "chat") & (t["arrival_s"] > 301.0)]
    batch_servers = {7, 8}  # after 4 prefill and 3 decode-chat instances
    assert len(late) > 1000 and set(late["decode_instance"]) <= batch_servers
    waited = simulate(apply_overrides(s, {"workload.classes[0].overflow": "wait"}))
    assert waited.summary["requests"]["failed_by_reason"].get("no_decode_instance", 0) > 1000
