"""Every request ends exactly once: completed, rejected with a reason, or failed with a reason.

Reproductions of the ways requests used to stay pending (the decode pool lost for good, prompts
routed to an instance too small to ever hold them), a measured window that draws no request at
all, the end-of-run safety net, and a property test over random scenarios drawn from the presets.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from engine import policies
from engine.core.errors import ScenarioError
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.instance import Server
from engine.serving.ledger import NO_DECODE, PENDING, TOO_LONG, TOO_LONG_LIVE, UNFINISHED, Records
from engine.serving.run import SimResult, flatten, simulate
from tests.simhelp import check_invariants, preempting, records


def ended_once(res: SimResult, rec: Records) -> None:
    """Every issued request has an outcome; those that did not complete say why; counts add up."""
    assert not np.any(rec.outcome == PENDING), "a request never ended"
    t = res.requests
    assert len(t) == len(rec.outcome)
    assert set(t["outcome"]) <= {"completed", "rejected", "failed"}
    done = t["outcome"] == "completed"
    assert (t.loc[~done, "reason"] != "").all(), "a request ended without completing and without a reason"
    assert (t.loc[done, "reason"] == "").all()
    req = res.summary["requests"]
    assert req["completed"] + req["rejected"] + req["failed"] == req["total"]
    assert sum(req["rejected_by_reason"].values()) == req["rejected"]
    assert sum(req["failed_by_reason"].values()) == req["failed"]


def served_where_it_fits(res: SimResult, rec: Records) -> None:
    """A completed request ran only on instances whose KV memory could hold it."""
    t = res.requests[res.requests["outcome"] == "completed"]
    cap = rec.kv_capacity
    prompt = t["prompt_tokens"].to_numpy()
    whole = prompt + t["output_tokens"].to_numpy()
    assert (cap[t["prefill_instance"].to_numpy()] >= prompt).all()
    assert (cap[t["decode_instance"].to_numpy()] >= whole).all()


def run(s: Scenario) -> tuple[SimResult, Records]:
    rec, reqs = records(s)
    res = simulate(s, requests=reqs)
    check_invariants(res, rec)
    ended_once(res, rec)
    return res, rec


# --- (a) the whole decode pool lost for good ---------------------------------------------------


def _decode_lost(in_flight: str, duration: float | None = None) -> Scenario:
    fault: dict[str, Any] = {"at_s": 20.0, "pool": "decode", "instances": 3, "in_flight": in_flight}
    if duration is not None:
        fault["duration_s"] = duration
    return io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 60.0, "faults": [fault]})


@pytest.mark.parametrize("in_flight", ["retry", "fail"])
def test_losing_every_decode_instance_for_good_ends_every_request(in_flight: str) -> None:
    res, rec = run(_decode_lost(in_flight))
    t = res.requests
    after = t[t["arrival_s"] >= 20.0]
    assert len(after) > 0
    assert (after["outcome"] == "rejected").all() and (after["reason"] == NO_DECODE).all()
    # what was on its way when the pool went: failed at once, never left waiting
    before = t[(t["arrival_s"] < 20.0) & (t["outcome"] != "completed")]
    assert len(before) > 0 and (before["outcome"] == "failed").all()
    expected = {NO_DECODE} if in_flight == "retry" else {NO_DECODE, "instance_lost"}
    assert set(before["reason"]) <= expected
    assert (t.loc[t["outcome"] == "completed", "completion_s"] <= 20.0).all()
    # the prefill side stops at once: no iteration starts after the loss
    prefill = [i for i, (_, _, role) in enumerate(rec.servers) if role == "prefill"]
    seg = rec.segments
    assert not np.any(np.isin(seg[:, 0], prefill) & (seg[:, 1] > 20.0))


def test_losing_every_decode_instance_for_a_while_waits_for_them() -> None:
    res, _ = run(_decode_lost("retry", duration=10.0))
    t = res.requests
    assert (t["outcome"] == "completed").all()
    assert (t.loc[t["arrival_s"].between(20.0, 30.0), "first_token_s"] >= 30.0).all()


# --- (b) round robin over instances of unequal KV capacity -------------------------------------

_SMALL_CAP_POOLS = {
    # mem_fraction 0.77: two H100 tp2 instances hold ~352k tokens each, the L40S tp2 one (44.99 GiB a
    # card with ECC, its activations for vLLM's 2,048-token budget on a chip under 70 GiB) ~7.7k
    "deployment.pools": [
        {"name": "big", "role": "mixed", "hardware": "h100-sxm", "tp": 2, "count": 2},
        {"name": "small", "role": "mixed", "hardware": "l40s", "tp": 2, "count": 1},
    ],
    "deployment.mem_fraction": 0.77,
    "scheduler.router": {"name": "round_robin"},
    "workload.classes[0].input": {"kind": "uniform", "low": 4000, "high": 9000},
    "workload.arrival.rate_rps": 2.0,
}


def test_round_robin_never_sends_a_prompt_where_it_can_never_fit() -> None:
    s = io.apply_overrides(io.load_preset("chat-colocated"), {"duration_s": 60.0, **_SMALL_CAP_POOLS})
    caps = [p.instance.kv_capacity_tokens for p in resolve(s).pools]
    assert caps[1] < 8000 < caps[0]
    res, rec = run(s)
    t = res.requests
    assert (t["outcome"] == "completed").all()
    served_where_it_fits(res, rec)
    whole = t["prompt_tokens"] + t["output_tokens"]
    assert (whole > caps[1]).any()  # some could only go to the big instances
    assert (t.loc[whole <= caps[1], "prefill_instance"] == 2).any()  # the small one still serves
    # with the big instances lost for good, what only they could hold is turned away at arrival
    lost = io.apply_overrides(s, {"faults": [{"at_s": 20.0, "pool": "big", "instances": 2}]})
    res, rec = run(lost)
    t = res.requests
    late = t[t["arrival_s"] > 20.0]
    too_long = late["prompt_tokens"] + late["output_tokens"] > caps[1]
    assert too_long.any()
    assert (late.loc[too_long, "reason"] == TOO_LONG_LIVE).all()
    assert (late.loc[~too_long, "outcome"] == "completed").all()


def test_a_prompt_longer_than_every_instance_is_rejected_at_arrival() -> None:
    s = io.apply_overrides(
        io.load_preset("chat-colocated"),
        {
            "duration_s": 30.0,
            # within the model's 131,072-token context, past both pools' KV memory (121,395 tokens
            # an H100 tp2 instance holds at mem_fraction 0.55, 54,548 an H200 tp1)
            "deployment.pools": [
                {"name": "big", "role": "mixed", "hardware": "h100-sxm", "tp": 2, "count": 2},
                {"name": "other", "role": "mixed", "hardware": "h200", "tp": 1, "count": 1},
            ],
            "deployment.mem_fraction": 0.55,
            "workload.classes[0].input": {"kind": "constant", "tokens": 125_000},
        },
    )
    res, _ = run(s)
    assert set(res.requests["reason"]) == {TOO_LONG}


# --- elastic roles -------------------------------------------------------------------------------


def test_an_instance_switching_roles_keeps_the_kv_on_its_way_to_it() -> None:
    # a slow link keeps transfers in flight; an "idle" decode instance with KV on its way to it
    # used to switch to prefill, and the requests it then received were never decoded
    s = io.apply_overrides(io.load_preset("chat-disaggregated"), {
        "duration_s": 30.0, "seed": 0, "deployment.link.bandwidth_gb_s": 0.5, "workload.arrival.rate_rps": 10.0,
        "workload.classes[0].input": {"kind": "lognormal", "mean": 3000, "p99": 9000, "max_tokens": 16000},
        "workload.classes[0].output": {"kind": "constant", "tokens": 64},
        "scheduler.elastic": {"enabled": True, "threshold": 1, "switch_s": 0.5, "check_s": 0.3},
    })  # fmt: skip
    res, _ = run(s)
    assert res.summary["scheduler"]["role_switches"] > 0
    assert (res.requests["outcome"] == "completed").all()


# --- a measured window with no request in it ----------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "over"),
    [
        ("chat-colocated", {"duration_s": 5.0, "workload.arrival.rate_rps": 0.01}),  # no request at all
        (
            "chat-disaggregated",
            {"duration_s": 5.0, "warmup_s": 4.9, "workload.arrival.rate_rps": 1.0, "seed": 3},
        ),
    ],
)
def test_an_empty_window_gives_a_valid_summary(preset: str, over: dict[str, Any]) -> None:
    s = io.apply_overrides(io.load_preset(preset), over)
    res, _ = run(s)
    summ = res.summary
    assert summ["requests"]["total"] == 0
    assert summ["slo_attainment"] is None and summ["goodput_rps"] == 0.0  # nothing judged, not 0%
    assert summ["latency_ms"]["ttft"]["p50"] is None
    assert all(c["requests"] == 0 and c["ttft_ms_at_percentile"] is None for c in summ["classes"].values())
    assert all(math.isfinite(v) for v in flatten(res.to_json()).values())
    json.dumps(res.to_json(), allow_nan=False)


# --- the safety net ------------------------------------------------------------------------------


@pytest.mark.pure  # patches what compiled code calls directly (tests/conftest.py)
def test_requests_still_in_flight_when_the_run_ends_fail_with_a_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a decode instance that never takes what it receives: those requests would stay pending
    monkeypatch.setattr(Server, "_admit_incoming", lambda self: None)
    s = io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 10.0})
    res, _ = run(s)
    t = res.requests
    assert set(t["outcome"]) == {"failed"}  # every one lies stuck on a decode instance
    assert set(t["reason"]) == {UNFINISHED}
    assert res.summary["requests"]["failed_by_reason"] == {UNFINISHED: len(t)}


# --- random scenarios ----------------------------------------------------------------------------

PRESETS = io.preset_names()
ROUTERS = sorted(policies.registered("router"))
QUEUES = sorted(policies.registered("queue"))
ADMISSIONS = sorted(policies.registered("admission"))


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    """A valid, small scenario: a preset with random load, deployment, policies and faults."""
    base = io.load_preset(draw(st.sampled_from(PRESETS)))
    duration = draw(st.floats(2.0, 8.0))
    over: dict[str, Any] = {"duration_s": duration, "seed": draw(st.integers(0, 10_000))}
    if base.workload.trace is not None:
        over["workload.trace.max_requests"] = draw(st.integers(1, 150))
    elif base.workload.arrival.kind == "offline":
        over["workload.arrival.requests"] = draw(st.integers(1, 150))
    elif base.workload.arrival.kind == "closed_loop":
        over["workload.arrival.clients"] = draw(st.integers(1, 16))
    else:
        over["workload.arrival.rate_rps"] = draw(st.floats(0.2, 40.0))
        if draw(st.booleans()):  # long prompts and answers
            mean_in = draw(st.integers(500, 20_000))
            over["workload.classes[0].input"] = {
                "kind": "lognormal", "mean": mean_in, "p99": 3 * mean_in, "max_tokens": 60_000,
            }  # fmt: skip
            over["workload.classes[0].output"] = {
                "kind": "uniform",
                "low": 1,
                "high": draw(st.integers(1, 3000)),
            }
    pools = [p.name for p in base.deployment.pools]
    for i in range(len(pools)):
        over[f"deployment.pools[{i}].count"] = draw(st.integers(1, 3))
    if base.deployment.mode == "colocated" and draw(st.booleans()):  # a second pool of another chip
        hw, tp = draw(st.sampled_from([("l40s", 2), ("h20", 1), ("a100-80g", 2), ("h200", 1), ("l4", 4)]))
        more = {"name": "other", "role": "mixed", "hardware": hw, "tp": tp, "count": draw(st.integers(1, 2))}
        over["deployment.pools"] = [p.model_dump() for p in base.deployment.pools] + [more]
        pools.append("other")
    if draw(st.booleans()):  # small KV memory
        over["deployment.mem_fraction"] = draw(st.floats(0.45, 0.9))
    over["deployment.batching.max_batch"] = draw(st.integers(1, 64))
    over["deployment.batching.chunked_prefill"] = draw(st.booleans())
    over["scheduler.router"] = {"name": draw(st.sampled_from(ROUTERS))}
    over["scheduler.queue"] = {"name": draw(st.sampled_from(QUEUES))}
    over["scheduler.admission"] = {"name": draw(st.sampled_from(ADMISSIONS))}
    over["scheduler.preemption"] = draw(st.sampled_from(["none", "recompute", "swap"]))
    if base.deployment.mode == "disaggregated" and draw(st.booleans()):
        over["scheduler.elastic"] = {
            "enabled": True, "threshold": draw(st.floats(0.5, 8.0)), "switch_s": draw(st.floats(0.0, 2.0)),
            "check_s": draw(st.floats(0.2, 2.0)),
        }  # fmt: skip
    if base.deployment.mode == "disaggregated" and draw(st.booleans()):  # slow link: long transfers
        over["deployment.link.bandwidth_gb_s"] = draw(st.floats(0.2, 20.0))
    if draw(st.booleans()):
        over["cache.enabled"] = True
    faults = []
    for _ in range(draw(st.integers(0, 3))):
        fault: dict[str, Any] = {
            "at_s": draw(st.floats(0.0, duration)), "pool": draw(st.sampled_from(pools)),
            "instances": draw(st.integers(1, 3)), "in_flight": draw(st.sampled_from(["retry", "fail"])),
        }  # fmt: skip
        if draw(st.booleans()):
            fault["duration_s"] = draw(st.floats(0.5, 5.0))
        faults.append(fault)
    over["faults"] = faults
    if draw(st.booleans()):  # degrade: shed low priorities and cap outputs while capacity is short
        over["deployment.degrade"] = {
            "enabled": True, "below_capacity": draw(st.sampled_from([0.0, 0.5, 1.0])),
            "above_backlog": draw(st.sampled_from([None, 1.0, 4.0])), "max_output_tokens": draw(st.integers(0, 300)),
            "shed_below_priority": draw(st.integers(0, 3)),
        }  # fmt: skip
        if base.deployment.mode == "disaggregated" and draw(st.booleans()):
            over["deployment.fallback"] = "colocated"
    try:
        s = io.apply_overrides(base, over)
        resolve(s)  # the weights must fit the chips at this memory fraction
    except ScenarioError:
        assume(False)
    return s


def test_a_retried_request_served_whole_after_a_fallback_records_where_it_decoded() -> None:
    """Found by the random scenarios: a request decoding when its decode instance failed was
    retried and served whole by a fallen-back instance, but kept the failed instance as its
    decode instance (and the run's token-gap table crashed on a request with no gap in range)."""
    over = {
        "duration_s": 2.0, "seed": 0, "workload.arrival.rate_rps": 4.0,
        "deployment.pools[0].count": 1, "deployment.pools[1].count": 2,
        "deployment.batching.max_batch": 1, "deployment.batching.chunked_prefill": False,
        "scheduler.router": {"name": "cache_aware"}, "scheduler.queue": {"name": "edf"},
        "scheduler.admission": {"name": "early_reject"},
        "faults": [
            {"at_s": 1.0, "pool": "prefill", "instances": 1}, {"at_s": 0.5, "pool": "prefill", "instances": 1},
            {"at_s": 1.0, "pool": "decode", "instances": 1},
        ],
        "deployment.degrade": {
            "enabled": True, "below_capacity": 0.0, "above_backlog": 1.0, "max_output_tokens": 0,
            "shed_below_priority": 1,
        },
        "deployment.fallback": "colocated",
    }  # fmt: skip
    s = io.apply_overrides(io.load_preset("chat-disaggregated"), over)
    res, rec = run(s)
    served_where_it_fits(res, rec)
    t = res.requests
    done = t[t["outcome"] == "completed"]
    assert len(done) == len(t) and (done["retries"] > 0).any()
    assert (done["decode_instance"] >= 0).all()
    down = 1  # the decode fault at 1 s takes the decode pool's first instance, for good
    assert not ((done["decode_instance"] == down) & (done["completion_s"] > 1.0)).any()


def test_a_fallen_decode_instance_starts_once_a_lost_transfer_frees_its_room() -> None:
    """Found by the random scenarios: both prefill instances fail at the end of the window while
    their prompts' KV is on its way to a decode instance. That instance falls back to serving
    whole requests, and a retried prompt queues on it behind the room still reserved for those
    transfers. When they arrive from a failed instance the room is given back, and the instance
    must start the queued prompt then: nothing else would ever wake it."""
    over = {
        "duration_s": 2.0, "model.kv": "fp8", "workload.arrival": {"kind": "poisson", "rate_rps": 29.0},
        "deployment.pools": [
            {"name": "prefill", "role": "prefill", "hardware": "h100-sxm", "tp": 2, "count": 2},
            {"name": "decode", "role": "decode", "hardware": "h100-sxm", "tp": 2, "count": 3},
        ],
        "deployment.batching": {"max_batch": 6, "chunked_prefill": False},
        "deployment.link": {"bandwidth_gb_s": 0.5, "latency_ms": 0.05},
        "deployment.mem_fraction": 0.453125, "deployment.fallback": "colocated",
        "deployment.degrade": {"enabled": True, "below_capacity": 0.5, "max_output_tokens": 1},
        "scheduler.queue": {"name": "edf"}, "scheduler.preemption": "recompute",
        "faults": [{"at_s": 2.0, "pool": "prefill", "instances": 2}],
    }  # fmt: skip
    s = io.apply_overrides(io.load_preset("portfolio-h100-only"), over)
    res, rec = run(s)
    served_where_it_fits(res, rec)
    t = res.requests
    assert UNFINISHED not in set(t["reason"])
    retried = t[t["retries"] > 0]
    assert len(retried) and (retried["outcome"] == "completed").all()
    assert (retried["prefill_instance"] >= 2).all()  # served whole by the fallen-back decode instances


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(s=scenarios())
def test_every_request_ends_exactly_once_in_random_scenarios(s: Scenario) -> None:
    res, rec = run(s)
    served_where_it_fits(res, rec)
    assert UNFINISHED not in set(res.requests["reason"]), "the end-of-run safety net was needed"


@pytest.mark.pure  # patches what compiled code calls directly (tests/conftest.py)
def test_a_swap_out_holds_the_batch_for_its_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Preempted by swap, the victims' KV is copied out over PCIe before the step that needed its
    room: the instance runs nothing for that copy's time (swap_time of the tokens it freed)."""
    stalls: list[tuple[int, float, float]] = []
    stall = Server._stall

    def spy(self: Any, seconds: float) -> None:
        stalls.append((self.idx, self.sim.env.now, seconds))
        stall(self, seconds)

    monkeypatch.setattr(Server, "_stall", spy)
    rec, _ = records(preempting("chat-colocated", "swap", 6.0))
    assert stalls and all(s > 0.0 for _, _, s in stalls)
    assert rec.counters["preemptions"] >= len(stalls)
    segs = rec.segments
    for idx, t, s in stalls:  # no iteration of that instance starts inside its copy
        mine = segs[segs[:, 0] == idx]
        assert not ((mine[:, 1] > t + 1e-12) & (mine[:, 1] < t + s - 1e-9)).any()
