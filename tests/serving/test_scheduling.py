"""Scheduling in the simulator: preemption, faults, fallbacks, elastic roles (admission and queue
order: test_admission.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine import policies
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.instance import least_loaded, views_of
from engine.serving.run import SimResult, simulate
from engine.serving.sim import Simulation
from engine.serving.workload import generate
from tests.simhelp import check_invariants, overloaded, preempting, records


def memory_bound(mode: str) -> Scenario:
    return overloaded(**{
        "scheduler.preemption": mode, "deployment.pools[0].count": 1, "deployment.mem_fraction": 0.52,
        "workload.arrival.rate_rps": 1.0,
        "workload.classes[0].input": {"kind": "lognormal", "mean": 1000, "p99": 4000, "max_tokens": 8000},
        "workload.classes[0].output": {"kind": "lognormal", "mean": 1500, "p99": 4000, "max_tokens": 4096},
    })  # fmt: skip


@pytest.mark.parametrize("mode", ["recompute", "swap"])
def test_preemption_never_lets_kv_exceed_capacity(mode: str) -> None:
    s = memory_bound(mode)
    rec, _ = records(s)
    res = simulate(s)
    check_invariants(res, rec)
    assert np.all(rec.kv_peak <= rec.kv_capacity)
    sched = res.summary["scheduler"]
    assert sched["preemptions"] > 0
    assert (sched["swapped_bytes"] > 0) == (mode == "swap")
    assert (sched["recomputed_tokens"] > 0) == (mode == "recompute")
    # admitting on the prompt alone (and preempting) queues far less than reserving whole outputs
    none = simulate(memory_bound("none"))
    assert res.summary["latency_ms"]["ttft"]["p99"] < 0.2 * none.summary["latency_ms"]["ttft"]["p99"]
    assert (res.requests["preemptions"] > 0).sum() > 0


def test_preemption_on_disaggregated_decode() -> None:
    s = io.apply_overrides(io.load_preset("chat-disaggregated"), {
        "duration_s": 60.0, "scheduler.preemption": "recompute", "deployment.mem_fraction": 0.5,
        "deployment.pools[1].count": 1, "workload.arrival.rate_rps": 4.0,
        "workload.classes[0].output": {"kind": "lognormal", "mean": 1500, "p99": 4000, "max_tokens": 4096},
    })  # fmt: skip
    rec, _ = records(s)
    res = simulate(s)
    check_invariants(res, rec)
    assert res.summary["scheduler"]["preemptions"] > 0


@pytest.mark.parametrize("policy", ["retry", "fail"])
def test_after_a_fault_every_request_ends_exactly_once(policy: str) -> None:
    s = io.apply_overrides(io.load_preset("chat-disaggregated"), {
        "duration_s": 120.0,
        "faults": [{"at_s": 40.0, "pool": "decode", "instances": 2, "duration_s": 30.0, "in_flight": policy},
                   {"at_s": 50.0, "pool": "prefill", "instances": 1, "duration_s": 20.0, "in_flight": policy}],
    })  # fmt: skip
    rec, reqs = records(s)
    res = simulate(s)
    check_invariants(res, rec)
    assert len(res.requests) == len(reqs)
    summ = res.summary
    if policy == "retry":
        assert summ["scheduler"]["retried"] > 0 and summ["requests"]["failed"] == 0
    else:
        assert summ["requests"]["failed"] > 0
        assert set(res.requests.loc[res.requests["outcome"] == "failed", "reason"]) == {"instance_lost"}
    ts = res.timeseries
    decode = ts[ts["pool"] == "decode"].set_index("t_s")["busy"]
    assert decode.loc[45:65].mean() < decode.loc[5:35].mean()  # the dip
    assert decode.loc[75:110].mean() > decode.loc[45:65].mean()  # and the recovery


def test_losing_instances_for_good() -> None:
    s = io.apply_overrides(io.load_preset("chat-colocated"), {
        "duration_s": 60.0, "faults": [{"at_s": 20.0, "pool": "mixed", "instances": 6}],
    })  # fmt: skip
    res = simulate(s)
    check_invariants(res)
    late = res.requests[res.requests["arrival_s"] > 21]
    assert (late["reason"] == "no_instance_up").all()


def test_elastic_roles_move_idle_decode_instances_to_prefill() -> None:
    s = io.apply_overrides(io.load_preset("chat-disaggregated"), {
        "duration_s": 120.0, "workload.arrival.rate_rps": 14.0,
        "workload.classes[0].input": {"kind": "lognormal", "mean": 3000, "p99": 9000, "max_tokens": 16000},
        "workload.classes[0].output": {"kind": "constant", "tokens": 64},
        "scheduler.elastic": {"enabled": True, "threshold": 4, "switch_s": 5, "check_s": 2},
    })  # fmt: skip
    rec, _ = records(s)
    res = simulate(s)
    check_invariants(res, rec)
    assert res.summary["scheduler"]["role_switches"] > 0
    fixed = simulate(io.apply_overrides(s, {"scheduler.elastic.enabled": False}))
    assert res.summary["latency_ms"]["ttft"]["p50"] < fixed.summary["latency_ms"]["ttft"]["p50"]


def test_elastic_needs_disaggregation() -> None:
    from engine.core.errors import ScenarioError

    with pytest.raises(ScenarioError, match="elastic roles need a disaggregated deployment"):
        io.apply_overrides(io.load_preset("chat-colocated"), {"scheduler.elastic.enabled": True})


def test_everything_on_still_scales_with_requests() -> None:
    s = io.apply_overrides(io.load_preset("chat-disaggregated"), {
        "duration_s": 120.0,
        "cache": {"enabled": True, "block_tokens": 64, "host": {"enabled": True, "capacity_gb": 100}},
        "workload.classes[0].multi_turn": {"turns_mean": 3, "think_time_s": 5},
        "scheduler": {"router": {"name": "cache_aware"}, "queue": {"name": "priority"},
                      "admission": {"name": "early_reject"}, "preemption": "swap",
                      "elastic": {"enabled": True}},
        "faults": [{"at_s": 30.0, "pool": "decode", "instances": 1, "duration_s": 20.0}],
    })  # fmt: skip
    rec, reqs = records(s)
    check_invariants(simulate(s), rec)
    assert rec.events / len(reqs) < 15


def test_an_instance_that_fails_while_switching_roles_stays_down() -> None:
    from engine.scenario.resolve import resolve
    from engine.serving import disruptions
    from engine.serving.sim import Simulation
    from engine.serving.workload import generate

    s = io.apply_overrides(io.load_preset("chat-disaggregated"), {
        "duration_s": 20.0, "faults": [{"at_s": 2.0, "pool": "decode", "instances": 1}],
    })  # fmt: skip
    sim = Simulation(resolve(s), generate(s))
    victim = sim.servers_of("decode")[0]  # the fault takes the pool's first live instance
    sim.env.process(disruptions._switch(sim, victim, "prefill", 5.0))  # still switching at 2 s
    sim.run()
    assert not victim.up and victim.role == "decode"  # lost for good, in its old role
    assert victim not in sim.servers_of("prefill") + sim.servers_of("decode")


@pytest.mark.pure  # patches what compiled code calls directly (tests/conftest.py)
def test_cached_live_server_lists_never_go_stale(monkeypatch: pytest.MonkeyPatch) -> None:
    from engine.serving.fleet import Fleet

    cached = Fleet.servers_of
    checks = [0]

    def checked(self: Fleet, role: str) -> list[Any]:
        got = cached(self, role)
        roles = ("mixed", "prefill") if role == "entry" else (role,)
        fresh = [
            s for s in self.servers if s.role in roles and s.up and not s.busy_switching and not s.draining
        ]
        assert got == fresh, f"stale {role} list at t={self.ledger.env.now}"
        checks[0] += 1
        return got

    monkeypatch.setattr(Fleet, "servers_of", checked)
    s = io.apply_overrides(io.load_preset("chat-disaggregated"), {
        "duration_s": 120.0, "workload.arrival.rate_rps": 14.0,
        "workload.classes[0].input": {"kind": "lognormal", "mean": 3000, "p99": 9000, "max_tokens": 16000},
        "scheduler.elastic": {"enabled": True, "threshold": 2, "switch_s": 3, "check_s": 1},
        "faults": [{"at_s": 20.0, "pool": "decode", "instances": 1, "duration_s": 15.0},
                   {"at_s": 50.0, "pool": "prefill", "instances": 2, "duration_s": 10.0}],
    })  # fmt: skip
    res = simulate(s)
    assert res.summary["scheduler"]["role_switches"] > 0 and checks[0] > 1000


def test_a_saturated_link_bills_waiting_to_the_chips_and_carrying_to_the_link() -> None:
    """At 1 GB/s the KV link queues: time waiting for it is the prefill chips holding KV (billed as
    prefill), time it carries a request's bytes is billed as transfer (issue 15)."""
    s = io.apply_overrides(
        io.load_preset("chat-disaggregated"), {"duration_s": 120.0, "deployment.link.bandwidth_gb_s": 1.0}
    )
    res = simulate(s)
    t = res.requests
    assert (t["kv_wait_s"] <= t["kv_transfer_s"] + 1e-12).all() and t["kv_wait_s"].max() > 1.0
    cost = res.summary["cost"]
    parts = cost["usd_by_part"]
    assert parts["prefill"] > 0.2 * (parts["prefill"] + parts["kv_transfer"])
    assert sum(parts.values()) == pytest.approx(cost["usd_total"], rel=1e-9)
    # what the link carried: the wire time of every transfer, at the sending chips' price
    prefill = next(p for p in s.deployment.pools if p.role == "prefill")
    rate = prefill.tp * 2.49 / 3600.0  # h100-sxm chips per instance at the catalog's price
    carried = float((t["kv_transfer_s"] - t["kv_wait_s"]).sum())
    assert parts["kv_transfer"] == pytest.approx(carried * rate, rel=1e-6)


def test_elastic_roles_drain_a_busy_instance_when_the_backlog_lasts() -> None:
    """Two prefill and four decode instances under a prompt-heavy load: no decode instance is
    ever idle, so switching only idle ones never fires; draining one (no new work, switch once
    empty) does, and lifts attainment (issue 15)."""
    base = io.apply_overrides(io.load_preset("chat-disaggregated"), {
        "duration_s": 240.0, "workload.arrival.rate_rps": 9.0,
        "deployment.pools[0].count": 2, "deployment.pools[1].count": 4,
        "workload.classes[0].input": {"kind": "lognormal", "mean": 3000, "p99": 9000, "max_tokens": 16000},
    })  # fmt: skip
    idle_only = simulate(io.apply_overrides(base, {"scheduler.elastic": {"enabled": True, "drain": False}}))
    drained_s = io.apply_overrides(base, {"scheduler.elastic": {"enabled": True, "drain": True}})
    rec, _ = records(drained_s)
    drained = simulate(drained_s)
    check_invariants(drained, rec)
    assert idle_only.summary["scheduler"]["role_switches"] == 0
    sched = drained.summary["scheduler"]
    assert sched["role_drains"] >= 1 and sched["role_switches"] >= 1
    assert drained.summary["slo_attainment"] > idle_only.summary["slo_attainment"] + 0.2


def test_a_link_fault_slows_the_transfers_it_overlaps_and_only_those() -> None:
    base = io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 120.0})
    fault = {"at_s": 40.0, "pool": "prefill", "kind": "link", "link_factor": 0.02, "duration_s": 30.0}
    res = simulate(io.apply_overrides(base, {"faults": [fault]}))
    clean = simulate(base)
    t, c = res.requests, clean.requests
    # hand-offs happen when a prefill ends: after the arrival, within a few seconds here
    during = (t["arrival_s"] > 41.0) & (t["arrival_s"] < 68.0)
    after = t["arrival_s"] > 80.0
    assert t.loc[during, "kv_transfer_s"].mean() > 10 * c.loc[during, "kv_transfer_s"].mean()
    assert t.loc[after, "kv_transfer_s"].mean() == pytest.approx(
        c.loc[after, "kv_transfer_s"].mean(), rel=0.25
    )
    assert res.summary["scheduler"]["link_faults"] == 1


def test_a_link_fault_needs_a_sending_pool() -> None:
    from engine.core.errors import ScenarioError

    fault = {"at_s": 1.0, "pool": "decode", "kind": "link"}
    with pytest.raises(
        ScenarioError, match=r"faults\[0\]\.pool: a link fault hits the KV link a prefill pool sends on"
    ):
        io.apply_overrides(io.load_preset("chat-disaggregated"), {"faults": [fault]})


def _fell_back(s: Scenario, fallbacks: int) -> tuple[SimResult, set[int]]:
    """Run a scenario whose loss of prefill the colocated fallback covers: the invariants hold, no
    request is rejected or failed, `fallbacks` fallbacks happened. The result, and the indices of
    the decode pool's instances."""
    rec, _ = records(s)
    res = simulate(s)
    check_invariants(res, rec)
    assert res.summary["requests"]["rejected"] == 0 and res.summary["requests"]["failed"] == 0
    assert res.summary["scheduler"]["fallbacks"] == fallbacks
    return res, {i for i, (p, _, _) in enumerate(rec.servers) if p == 1}


@pytest.mark.parametrize("duration", [30.0, None])
def test_colocated_fallback_serves_through_the_loss_of_the_prefill_pool(duration: float | None) -> None:
    """Every prefill instance lost: without a fallback arrivals are rejected; with the colocated
    fallback the decode instances serve whole requests meanwhile, and go back to decoding only
    once prefill is back (issue 15)."""
    fault = {"at_s": 40.0, "pool": "prefill", "instances": 3, "duration_s": duration}
    base = io.apply_overrides(
        io.load_preset("chat-disaggregated"),
        {"duration_s": 120.0, "faults": [fault], "workload.arrival.rate_rps": 12.0},
    )  # three decode instances serve whole requests at this rate, not at the preset's 16
    plain = simulate(base)
    fell, decode_pool = _fell_back(io.apply_overrides(base, {"deployment.fallback": "colocated"}), 1)
    assert plain.summary["requests"]["rejected_by_reason"].get("no_instance_up", 0) > 100
    assert fell.summary["slo_attainment"] > plain.summary["slo_attainment"] + 0.1
    t = fell.requests
    during = (t["arrival_s"] > 41.0) & (t["arrival_s"] < 69.0)
    assert t.loc[during, "prefill_instance"].isin(decode_pool).all()  # served whole by decode instances
    whole = t[during & (t["outcome"] == "completed")]
    assert (whole["decode_instance"] == whole["prefill_instance"]).all()  # and decoded where prefilled
    assert whole.loc[whole["output_tokens"] > 1, "max_tbt_s"].notna().all()  # so their gaps are measured
    if duration is not None:
        assert not t.loc[t["arrival_s"] > 90.0, "prefill_instance"].isin(decode_pool).any()


@pytest.mark.parametrize("order", ["short_first", "long_first"])
def test_the_fallback_ends_when_any_fault_brings_prefill_back(order: str) -> None:
    """Two faults take the two prefill instances: the one that leaves none up starts the
    fallback, the other one's end brings prefill back and must end it. (CI found requests
    parked for good when only the fault that started a fallback could end it.)"""
    short = {"at_s": 20.0, "pool": "prefill", "instances": 1, "duration_s": 10.0}
    long = {"at_s": 20.0, "pool": "prefill", "instances": 1, "duration_s": 60.0}
    faults = [short, long] if order == "short_first" else [long, short]
    s = io.apply_overrides(
        io.load_preset("chat-disaggregated"),
        {
            "duration_s": 60.0,
            "deployment.pools[0].count": 2,
            "deployment.fallback": "colocated",
            "faults": faults,
        },
    )
    res, decode_pool = _fell_back(s, 1)
    t = res.requests
    # prefill is back at 30 s: decode instances take no new whole requests after they drain
    assert not t.loc[t["arrival_s"] > 35.0, "prefill_instance"].isin(decode_pool).any()
    assert (
        t.loc[(t["arrival_s"] > 21.0) & (t["arrival_s"] < 29.0), "prefill_instance"].isin(decode_pool).all()
    )


def _one_prefill(faults: list[dict[str, Any]], **over: Any) -> Scenario:
    return io.apply_overrides(
        io.load_preset("chat-disaggregated"),
        {"duration_s": 80.0, "deployment.pools[0].count": 1, "deployment.pools[1].count": 2,
         "deployment.fallback": "colocated", "faults": faults, **over},
    )  # fmt: skip


def test_a_fallen_back_instance_lost_and_restored_decodes_again() -> None:
    """Both decode instances fail while serving whole requests, and return: they must come back as
    decode instances, not stay 'mixed' in the role they will have, which rejected every later
    arrival as having no decode instance."""
    s = _one_prefill(
        [
            {"at_s": 20.0, "pool": "prefill", "instances": 1, "duration_s": 30.0},
            {"at_s": 25.0, "pool": "decode", "instances": 2, "duration_s": 10.0},
        ]
    )
    rec, _ = records(s)
    res = simulate(s)
    check_invariants(res, rec)
    t = res.requests
    late = t[t["arrival_s"] > 55.0]
    assert len(late) > 300 and (late["outcome"] == "completed").all()
    assert res.summary["scheduler"]["fallbacks"] == 1
    # while nothing at all was up (25-35 s) arrivals found no instance; before and after, all served
    lost = t[t["outcome"] != "completed"]
    assert set(lost["reason"]) == {"no_instance_up"}
    assert (lost["arrival_s"].between(25.0, 35.5) | (lost["retries"] > 0)).all()  # or in flight when lost


@pytest.mark.parametrize("second_at", [36.0, 60.0])
def test_losing_prefill_again_while_the_fallback_drains_falls_back_again(second_at: float) -> None:
    """Prefill lost at 20 s for 10 s, then again: at 36 s the fallen-back instances are still
    finishing their prompts; they must serve whole requests again, not turn to decoding with no
    prefill instance up (which rejected every arrival of the second loss)."""
    s = _one_prefill(
        [
            {"at_s": 20.0, "pool": "prefill", "instances": 1, "duration_s": 10.0},
            {"at_s": second_at, "pool": "prefill", "instances": 1, "duration_s": 20.0},
        ],
        **{"workload.arrival.rate_rps": 40.0},
    )
    res, decode_pool = _fell_back(s, 2)
    t = res.requests
    during = t["arrival_s"].between(second_at + 1.0, second_at + 19.0)
    assert t.loc[during, "prefill_instance"].isin(decode_pool).all()


def test_a_fallback_needs_disaggregation() -> None:
    from engine.core.errors import ScenarioError

    with pytest.raises(
        ScenarioError, match=r"deployment\.fallback: a fallback for a lost prefill pool needs"
    ):
        io.apply_overrides(io.load_preset("chat-colocated"), {"deployment.fallback": "colocated"})


@pytest.mark.parametrize("mode", ["recompute", "swap", "disaggregated"])
def test_a_preempted_requests_largest_gap_is_at_least_its_stall(mode: str) -> None:
    """Issue 34: the wait between the last token before a preemption and the first after the request
    rejoins is a gap between two of its tokens: in its largest gap and in the TBT distribution."""
    if mode == "disaggregated":
        s = io.apply_overrides(io.load_preset("chat-disaggregated"), {
            "duration_s": 60.0, "scheduler.preemption": "recompute", "deployment.mem_fraction": 0.5,
            "deployment.pools[1].count": 1, "workload.arrival.rate_rps": 4.0,
            "workload.classes[0].output": {"kind": "lognormal", "mean": 1500, "p99": 4000, "max_tokens": 4096},
        })  # fmt: skip
    else:
        s = memory_bound(mode)
    rec, _ = records(s)
    res = simulate(s)
    assert len(rec.stalls) > 0 and len(rec.stalls) <= rec.preemptions.sum()
    table = res.requests.set_index("request")
    waited = {}
    for rid, _srv, since, back in rec.stalls.tolist():
        waited[int(rid)] = max(waited.get(int(rid), 0.0), back - since)
    done = [r for r in waited if table.loc[r, "outcome"] == "completed" and table.loc[r, "output_tokens"] > 1]
    assert done
    for rid in done:
        assert table.loc[rid, "max_tbt_s"] >= waited[rid] > 0.0, rid
    # the token-weighted TBT counts each rejoining token at its stall: its mean rises over the run
    from dataclasses import replace

    from engine.serving.gaps import token_gaps

    counted = token_gaps(rec, 0.0, rec.end_s)["mean"]
    ignored = token_gaps(replace(rec, stalls=rec.stalls[:0]), 0.0, rec.end_s)["mean"]
    assert counted is not None and ignored is not None and counted > ignored


def _spike(**elastic: Any) -> Scenario:
    """Long prompts at 14 req/s for 40 s, then a trickle: prefill is starved only during the spike."""
    return io.apply_overrides(io.load_preset("chat-disaggregated"), {
        "duration_s": 200.0, "workload.arrival.rate_rps": 14.0,
        "workload.arrival.shape": "points",
        "workload.arrival.points": [{"at_s": 0, "factor": 1}, {"at_s": 40, "factor": 1},
                                    {"at_s": 41, "factor": 0.05}, {"at_s": 200, "factor": 0.05}],
        "workload.classes[0].input": {"kind": "lognormal", "mean": 3000, "p99": 9000, "max_tokens": 16000},
        "workload.classes[0].output": {"kind": "constant", "tokens": 64},
        "scheduler.elastic": {"enabled": True, "threshold": 4, "switch_s": 5, "check_s": 2, **elastic},
    })  # fmt: skip


def test_elastic_roles_return_home_once_the_spike_is_over() -> None:
    """Issue 34: roles switched during a spike return to their pools' roles after it (with hysteresis),
    and with `restore` off they stay where the spike left them."""
    from engine.scenario.resolve import resolve
    from engine.serving.sim import Simulation
    from engine.serving.workload import generate

    def after(s: Scenario) -> tuple[Simulation, dict[str, Any]]:
        sim = Simulation(resolve(s), generate(s))
        rec = sim.run()
        return sim, rec.counters

    sim, counters = after(_spike())
    assert counters["role_switches"] >= 2 and counters["role_restores"] >= 1
    assert all(s.role == s.pool.spec.role for s in sim.servers)  # every instance is home again
    kept, kept_counters = after(_spike(restore=False))
    assert kept_counters["role_switches"] >= 1 and kept_counters["role_restores"] == 0
    assert any(s.role != s.pool.spec.role for s in kept.servers)
    res = simulate(_spike())
    check_invariants(res, records(_spike())[0])
    assert res.summary["scheduler"]["role_restores"] == counters["role_restores"]


@pytest.mark.parametrize("policy", ["queue", "reject", "forever"])
def test_a_kv_link_that_goes_down_queues_or_fails_every_hand_off_with_a_reason(policy: str) -> None:
    """Issue 34: a link fault with link_factor 0 takes the prefill pool's KV link down for 10 s: hand-offs
    wait for it (queue) or fail with `link_down` (reject, or a link down for good); every request ends
    exactly once, and nothing crosses the link while it is down."""
    fault: dict[str, Any] = {"at_s": 20.0, "pool": "prefill", "kind": "link", "link_factor": 0.0}
    if policy != "forever":
        fault.update(duration_s=10.0, link_down=policy)
    s = io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 60.0, "faults": [fault]})
    rec, _ = records(s)
    res = simulate(s)
    check_invariants(res, rec)
    table = res.requests
    down = (table["first_token_s"] >= 20.0) & (table["first_token_s"] - table["kv_transfer_s"] < 30.0)
    sent_while_down = table[down & (table["first_token_s"] - table["kv_transfer_s"] > 20.0)]
    assert sent_while_down.empty  # a hand-off starts only once the link is back
    failed = table[table["reason"] == "link_down"]
    if policy == "queue":
        assert failed.empty and (table["outcome"] == "completed").all()
        waited = table[(table["arrival_s"] > 21.0) & (table["arrival_s"] < 28.0)]
        assert len(waited) > 10 and (waited["first_token_s"] >= 30.0).all()
    elif policy == "reject":
        assert len(failed) > 10 and failed["arrival_s"].between(19.0, 30.0).all()
        assert (table[table["arrival_s"] > 31.0]["outcome"] == "completed").all()
    else:
        assert (table[table["arrival_s"] > 21.0]["reason"] == "link_down").all()


@pytest.mark.parametrize("seed", range(3))
def test_least_loaded_from_its_kept_terms_picks_the_least_rank(seed: int) -> None:
    # the fleet answers the default router from two floats kept with each view (`least_loaded`),
    # not from `LeastLoaded.rank`: both must pick the same instance, ties and unequal speeds included
    sim = Simulation(resolve(io.load_preset("chat-colocated")), generate(io.load_preset("chat-colocated")))
    router = policies.build_router({"name": "least_loaded"})
    rng = np.random.default_rng(seed)
    servers = list(sim.servers)
    for _ in range(300):
        for k in rng.choice(len(servers), size=int(rng.integers(1, 4)), replace=False):  # a few change
            s = servers[k]
            s.waiting_tokens = int(rng.integers(0, 3)) * 100
            s.running = dict.fromkeys(range(int(rng.integers(0, 3))), 0)
            s.speeds = (float(rng.choice([0.25, 0.5, 1.0])), 1.0)
            s.view = None
        if rng.random() < 0.2:  # positions change (the kept terms do not depend on them)
            servers = [servers[k] for k in rng.permutation(len(servers))]
        views = views_of(servers)
        assert least_loaded(servers) == min(range(len(views)), key=lambda i: router.rank(views[i]))


def test_the_front_doors_first_come_order_is_fcfs_key() -> None:
    # the front door keys the default queue order itself rather than calling `Fcfs.key`
    sim = Simulation(resolve(io.load_preset("chat-colocated")), generate(io.load_preset("chat-colocated")))
    srv = sim.servers[0]
    for rid in (7, 3, 5):
        sim.front.enqueue(srv, rid)
    fcfs = policies.build_queue({"name": "fcfs"})
    assert sorted(srv.waiting) == sorted((fcfs.key(sim.ledger.request_view(r)), r) for r in (7, 3, 5))


def test_a_decode_instance_recomputes_preempted_contexts_on_its_own_chips() -> None:
    """Recompute preemption on a decode instance prefills the victims' contexts again on that
    instance: a segment of prefill work (FLOPs, no token) that holds its batch, so it shows in the
    instance's busy time and energy (it had run as a timer beside the decode steps)."""
    rec, _ = records(preempting("chat-disaggregated", "recompute", 4.0))
    segs = rec.segments
    decode = np.array([rec.servers[int(i)][2] == "decode" for i in segs[:, 0]])
    redo = segs[decode & (segs[:, 9] == 0) & (segs[:, 10] == 0)]  # no decodes, no steps: the recomputes
    assert rec.counters["preemptions"] > 0 and len(redo) > 0
    assert (redo[:, 3] > 0).all() and (redo[:, 2] > redo[:, 1]).all()  # prefill FLOPs, over time
    for row in redo:  # nothing else runs on that instance meanwhile
        mine = segs[segs[:, 0] == row[0]]
        assert not ((mine[:, 1] > row[1] + 1e-9) & (mine[:, 1] < row[2] - 1e-9)).any()


def test_a_queue_cap_counts_the_queue_of_the_requests_own_pool() -> None:
    """`queue_cap` turns a request away when `max_queued` wait in its pool: it counted every entry
    pool's queue, so a class isolated on its own pool was rejected over the shared pool's backlog (19
    premium requests `queue_full` while premium's queue held a couple: a review)."""
    from engine.serving.run import simulate

    sc = io.apply_overrides(
        io.load_preset("premium-isolation"),
        {
            "workload.arrival.rate_rps": 16.0,
            "workload.classes[1].priority": 5,  # premium below batch: turned away at half the cap
            "scheduler.admission": {"name": "queue_cap", "max_queued": 32},
            "duration_s": 300.0,
        },
    )
    classes = simulate(sc).summary["classes"]
    assert classes["batch"]["rejected"] > 0  # the shared pool's backlog reaches the cap
    assert classes["premium"]["rejected"] == 0  # its own pool's never does


def test_early_rejection_counts_the_work_ahead_in_the_queues_order() -> None:
    """Early rejection predicted every request's wait from the whole queue unless the order was strict
    priority, so under FCFS, EDF and SPF it turned away exactly the same requests (967 on
    enterprise-mixed: a review). The work ahead is now what sorts before the request: under SPF a
    short prompt waits behind the shorter ones only, so SPF turns away requests FCFS admits and the
    reverse, where FCFS's predictions are unchanged."""
    sc = io.apply_overrides(io.load_preset("enterprise-mixed"), {"duration_s": 300.0})
    runs = {q: simulate(io.apply_overrides(sc, {"scheduler.queue": q})).requests for q in ("fcfs", "spf")}
    rejected = {q: set(t.loc[t["outcome"] == "rejected", "request"]) for q, t in runs.items()}
    assert rejected["fcfs"] != rejected["spf"]
    # under SPF the rejected prompts run longer: a short one sees less work ahead of it
    spf = runs["spf"]
    mine = spf[spf["request"].isin(rejected["spf"] - rejected["fcfs"])]["prompt_tokens"]
    theirs = spf[spf["request"].isin(rejected["fcfs"] - rejected["spf"])]["prompt_tokens"]
    assert len(mine) and len(theirs) and mine.median() > theirs.median()
