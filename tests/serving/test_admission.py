"""Admission control and queue order in the simulator: early rejection, lower priorities shed first,
strict priority (split from test_scheduling.py, which keeps preemption, faults and elastic roles)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.scenario import codec as io
from engine.serving.run import simulate
from tests.simhelp import check_invariants, overloaded, records, two_classes


def test_early_rejection_keeps_admitted_p99_ttft_within_slo() -> None:
    fcfs = simulate(overloaded())
    early = simulate(overloaded(**{"scheduler.admission": {"name": "early_reject"}}))
    slo_s = 3.0

    def p99_admitted(r: Any) -> float:
        t = r.requests
        return float(t.loc[t["outcome"] == "completed", "ttft_s"].quantile(0.99))

    assert p99_admitted(fcfs) > 5 * slo_s
    assert p99_admitted(early) <= slo_s
    assert early.summary["requests"]["rejected_by_reason"]["predicted_ttft_over_slo"] > 0
    assert early.summary["goodput_rps"] > 3 * fcfs.summary["goodput_rps"]
    check_invariants(early)


def test_early_rejection_predicts_a_warm_prompt_as_warm() -> None:
    """Multi-turn sessions over a shared 8k-token prefix: the prediction nets out the prefix the
    instance holds, so at a factor the cold prompts pass, the warm ones are not shed for a prefill
    they will not do (183 of 637 were, 92% of prompt tokens cached, before a session's turns waited
    on the previous answer)."""
    sc = io.apply_overrides(
        io.load_preset("agentic-cache"),
        {
            "duration_s": 120.0,
            "warmup_s": 0.0,
            "scheduler.admission.name": "early_reject",
            "scheduler.admission.factor": 1.0,
        },
    )
    res = simulate(sc)
    plain = {"duration_s": 120.0, "warmup_s": 0.0, "scheduler.admission.name": "none"}
    none = simulate(io.apply_overrides(io.load_preset("agentic-cache"), plain)).summary
    s = res.summary
    assert s["requests"]["rejected"] <= 0.02 * s["requests"]["total"]
    assert s["cache"]["hit_rate"] > 0.9 and s["slo_attainment"] >= none["slo_attainment"] - 0.01


def test_early_rejection_admits_a_prompt_whose_own_prefill_makes_the_target() -> None:
    """agentic-cache's cold first turns (about 9k tokens) prefill in 1.9 s against a 2 s target:
    the default factor (0.6) held that prediction to 1.2 s and shed every first turn, so no
    session ever started (all 119 rejected). A top-priority request alone on its instance is
    predicted by the cost model that will time its prefill, with no wait to mispredict and no decode
    to slow: it is admitted when that makes the target."""
    on = {"duration_s": 120.0, "warmup_s": 0.0, "scheduler.admission.name": "early_reject"}
    res = simulate(io.apply_overrides(io.load_preset("agentic-cache"), on)).summary
    none = simulate(
        io.apply_overrides(io.load_preset("agentic-cache"), {**on, "scheduler.admission.name": "none"})
    )
    assert res["requests"]["rejected"] <= 0.02 * res["requests"]["total"]
    assert res["requests"]["total"] >= 0.95 * none.summary["requests"]["total"]
    assert res["slo_attainment"] >= none.summary["slo_attainment"] - 0.01


def test_early_rejection_admits_alone_only_the_top_class_on_an_instance_with_no_decode() -> None:
    """The alone rule must not let a long prompt in beside running decodes nor for a lower class:
    on chat-colocated at 20 req/s with two classes, holding every prediction equal to its own
    prefill to the whole target admitted long low-priority prompts whose prefill stretched the
    high class's decode steps (high: 85% within SLO, failing its target, where 97% pass)."""
    on = {
        "scheduler.admission": {"name": "early_reject"},
        "workload.arrival.rate_rps": 20.0,
        "duration_s": 120.0,
    }
    res = simulate(two_classes(io.apply_overrides(io.load_preset("chat-colocated"), on))).summary["classes"]
    high, low = res["high"], res["low"]
    assert high["passes"] and high["slo_attainment"] >= 0.95
    assert low["rejected"] / low["requests"] > 2 * high["rejected"] / max(high["requests"], 1)
    # where prefills run first they stall the running decodes: an instance with any running request is
    # not empty (the alone test read the decodes priced into a mixed iteration, none there: 73% within SLO)
    first = {**on, "scheduler.iteration": {"name": "prefill_first"}}
    res = simulate(io.apply_overrides(io.load_preset("chat-colocated"), first)).summary
    assert res["slo_attainment"] >= 0.82


def test_lower_priority_sheds_first() -> None:
    res = simulate(two_classes(overloaded(**{"scheduler.admission": {"name": "early_reject"}})))
    high, low = res.summary["classes"]["high"], res.summary["classes"]["low"]
    assert low["rejected"] / low["requests"] > 2 * high["rejected"] / max(high["requests"], 1)


def test_strict_priority_serves_the_high_class_first() -> None:
    res = simulate(two_classes(overloaded(**{"scheduler.queue": {"name": "priority"}})))
    t = res.requests
    p99 = {c: float(t.loc[t["class"] == c, "ttft_s"].quantile(0.99)) for c in ("high", "low")}
    assert p99["high"] < 0.25 * p99["low"]
    fcfs = simulate(two_classes(overloaded()))
    t = fcfs.requests
    same = {c: float(t.loc[t["class"] == c, "ttft_s"].quantile(0.99)) for c in ("high", "low")}
    assert same["high"] > 0.5 * same["low"]


@pytest.mark.parametrize("queue", ["edf", "spf"])
def test_other_queue_orders_run_clean(queue: str) -> None:
    s = overloaded(**{"scheduler.queue": {"name": queue}, "duration_s": 40.0})
    rec, _ = records(s)
    check_invariants(simulate(s), rec)


@pytest.mark.parametrize("admission", [{"name": "early_reject"}, {"name": "queue_cap", "max_queued": 40}])
def test_every_admission_policy_sheds_lower_priorities_first_under_fcfs(admission: dict[str, Any]) -> None:
    """An interactive class with a tight TTFT target above a batch class with a loose one, served
    first come first served: the batch class is shed before the interactive one (issue 15)."""
    data = io.to_data(overloaded(**{"scheduler.admission": admission, "scheduler.queue": {"name": "fcfs"}}))
    cls = data["workload"]["classes"][0]
    data["workload"]["classes"] = [
        dict(cls, name="interactive", share=0.5, priority=5, slo=dict(cls["slo"], ttft_ms=3000)),
        dict(cls, name="batch", share=0.5, priority=0, slo=dict(cls["slo"], ttft_ms=60000)),
    ]
    res = simulate(io.from_data(data))
    c = res.summary["classes"]
    assert c["batch"]["rejected"] > 0
    assert (
        c["interactive"]["rejected"] / c["interactive"]["requests"]
        < 0.5 * c["batch"]["rejected"] / c["batch"]["requests"]
    )
