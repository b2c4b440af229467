"""Helpers shared by the simulation tests: small scenarios and the invariant checks."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.ledger import Records
from engine.serving.run import SimResult
from engine.serving.sim import Simulation
from engine.serving.workload import generate


def small(preset: str, **over: Any) -> Scenario:
    """A preset shortened to a quick run, with overrides by path."""
    s = io.load_preset(preset)
    base: dict[str, Any] = {"duration_s": 60.0}
    if s.warmup_s >= 60.0:  # a warm-up the short window cannot hold (agentic-cache's 300 s) goes
        base["warmup_s"] = 0.0
    if s.workload.trace is not None:
        base["workload.trace.max_requests"] = 400
    base.update(over)
    return io.apply_overrides(s, base)


def h100_edges(scenario: str | Scenario = "chat-colocated") -> tuple[float, float]:
    """The pessimistic and optimistic edges of the H100's throughput band under a preset's (or a
    scenario's) stack (`Calibration.edges`)."""
    from engine.calibration import trust
    from engine.catalog.entries import load_catalog

    cat = load_catalog()
    sc = io.load_preset(scenario) if isinstance(scenario, str) else scenario
    return trust.calibration(cat.hardware["h100-sxm"], sc.deployment.stack, cat)[1].edges()


def preempting(preset: str, preemption: str, rate_rps: float) -> Scenario:
    """`preset` for a minute in BF16 with 1,500-token answers at `rate_rps`: KV memory runs out and
    `preemption` ("swap" or "recompute") takes requests off the batch."""
    return io.apply_overrides(
        io.load_preset(preset),
        {
            "duration_s": 60.0,
            "scheduler.preemption": preemption,
            "model.weights": "bf16",
            "model.kv": "bf16",
            "workload.classes[0].output": {
                "kind": "lognormal",
                "mean": 1500,
                "p99": 4000,
                "max_tokens": 4096,
            },
            "workload.arrival.rate_rps": rate_rps,
        },
    )


def records(s: Scenario) -> tuple[Records, Any]:
    """Run the simulation itself and return its raw records and requests."""
    res = resolve(s)
    reqs = generate(s)
    return Simulation(res, reqs).run(), reqs


def check_invariants(result: SimResult, rec: Records | None = None) -> None:
    """DESIGN.md's invariants on one run."""
    t = result.requests
    # every request ends exactly once, with a reason when it did not complete
    assert set(t["outcome"]) <= {"completed", "rejected", "failed"}
    bad = t[(t["outcome"] != "completed") & (t["reason"] == "")]
    assert bad.empty, "a request ended without completing and without a reason"
    done = t[t["outcome"] == "completed"]
    # timestamps ordered, no negative durations
    assert (done["first_token_s"] >= done["arrival_s"] - 1e-9).all()
    assert (done["completion_s"] >= done["first_token_s"] - 1e-9).all()
    assert (done[["ttft_s", "e2e_s"]] >= -1e-9).all().all()
    assert (done["tpot_s"].dropna() >= 0).all()
    # utilisation within [0, 1]
    ts = result.timeseries
    for col in ("compute_util", "bandwidth_util", "busy"):  # (rounding snapped in: `tables._share`)
        assert ts[col].between(0.0, 1.0).all(), col
    assert ts["kv_memory"].between(-1e-9, 1 + 1e-6).all()
    for pool in result.summary["utilization"].values():
        for v in pool.values():
            assert 0.0 <= v <= 1.0
    if rec is not None:
        assert rec.tokens_emitted - rec.tokens_discarded == int(done["output_tokens"].sum())
        assert np.all(rec.kv_peak <= rec.kv_capacity)
        assert rec.kv_left is None, f"instances ended holding KV: {rec.kv_left}"


LEGACY_STACK = {
    "deployment.stack": "trtllm",
    "deployment.batching.max_batch": 256,
    "deployment.batching.chunk_tokens": 2048,
}
"""The serving settings every scenario ran with before serving stacks had defaults (TensorRT-LLM's
profile, 256 requests, 2,048-token chunks). Tests whose premise is a load level tuned under them
(an overload, a saturation) pin them, so they test the scheduler rather than the calibration."""


LONG_PROMPTS = {  # chat-colocated overloaded by long prompts: the admission and preemption tests' load
    **LEGACY_STACK,
    "duration_s": 120.0,
    "deployment.pools[0].count": 2,
    "workload.arrival.rate_rps": 6.0,
    "workload.classes[0].input": {"kind": "lognormal", "mean": 4000, "p99": 12000, "max_tokens": 16000},
    "workload.classes[0].slo": {"ttft_ms": 3000, "tpot_ms": 1000, "percentile": 99},
}


def overloaded(**over: Any) -> Scenario:
    """chat-colocated under `LONG_PROMPTS`, with `over` applied."""
    return io.apply_overrides(io.apply_overrides(io.load_preset("chat-colocated"), LONG_PROMPTS), over)


def two_classes(base: Scenario) -> Scenario:
    """`base` with its class split into a high-priority 30% and a low-priority 70%."""
    data = io.to_data(base)
    cls = data["workload"]["classes"][0]
    data["workload"]["classes"] = [
        dict(cls, name="high", share=0.3, priority=5),
        dict(cls, name="low", share=0.7),
    ]
    return io.from_data(data)
