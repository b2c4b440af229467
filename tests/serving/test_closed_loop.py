"""Closed-loop clients: a start ramp and jittered think times keep them out of lock step."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine.core.errors import ScenarioError
from engine.scenario import codec as io
from engine.scenario.arrival import Arrival
from engine.scenario.model import Scenario
from engine.serving.run import simulate
from engine.serving.workload import closed_loop_pauses, generate


def long_prompts(clients: int, **arrival: Any) -> Scenario:
    """Llama-3.1-8B on one H100 whose token budget holds a whole 5,000-token prompt (200-token answers)."""
    return io.apply_overrides(
        io.load_preset("chat-colocated"),
        {
            "model": {"id": "llama-3.1-8b", "weights": "bf16"},
            "duration_s": 120.0,
            "workload.classes": [
                {
                    "name": "long",
                    "input": {"kind": "constant", "tokens": 5000},
                    "output": {"kind": "constant", "tokens": 200},
                }
            ],
            "workload.arrival": {"kind": "closed_loop", "clients": clients, **arrival},
            "deployment.mode": "colocated",
            "deployment.batching": {"token_budget": 8192},
            "deployment.pools": [
                {"name": "gpu", "role": "mixed", "hardware": "h100-sxm", "tp": 1, "count": 1}
            ],
            "faults": [],
        },
    )


def mean_ttft_s(s: Scenario) -> float:
    return float(simulate(s).requests["ttft_s"].mean())


def test_default_closed_loop_is_not_in_lock_step() -> None:
    alone = mean_ttft_s(long_prompts(1))
    five = mean_ttft_s(long_prompts(5))
    assert five <= 1.5 * alone, (five, alone)
    # started together and never jittered, the five prompts queue behind each other every round
    together = mean_ttft_s(long_prompts(5, ramp_s=0.0))
    assert together > 1.5 * alone, (together, alone)


def test_think_time_jitter_keeps_clients_apart() -> None:
    alone = mean_ttft_s(long_prompts(1, think_time_s=2.0))
    for think in ("exponential", "uniform"):
        assert mean_ttft_s(long_prompts(5, think_time_s=2.0, think=think)) <= 1.5 * alone, think


def test_same_seed_same_requests() -> None:
    s = long_prompts(5, think_time_s=1.0)
    a, b = simulate(s).requests, simulate(s).requests
    cols = ["arrival_s", "first_token_s", "completion_s"]
    assert np.array_equal(a[cols].to_numpy(), b[cols].to_numpy())
    other = simulate(s.model_copy(update={"seed": s.seed + 1})).requests
    assert not np.array_equal(a["arrival_s"].to_numpy()[:50], other["arrival_s"].to_numpy()[:50])


def test_pauses_do_not_depend_on_the_deployment() -> None:
    s = long_prompts(4, think_time_s=3.0)
    bigger = io.apply_overrides(s, {"deployment.pools[0].count": 3})
    assert np.array_equal(generate(s).pause_s, generate(bigger).pause_s)  # type: ignore[arg-type]


def test_ramp_spreads_first_arrivals() -> None:
    def first_arrivals(clients: int, **arrival: Any) -> np.ndarray:
        t = simulate(long_prompts(clients, **arrival)).requests
        return t["arrival_s"].to_numpy()[:clients]  # requests 0..N-1 are the clients' first

    # client k of N starts at k x ramp / N
    assert first_arrivals(4, ramp_s=8.0) == pytest.approx([0.0, 2.0, 4.0, 6.0])
    # default with think time: one mean think time
    assert first_arrivals(5, think_time_s=10.0) == pytest.approx([0.0, 2.0, 4.0, 6.0, 8.0])
    # default without: Arrival.CLIENT_RAMP_S
    gap = Arrival.CLIENT_RAMP_S / 5
    assert first_arrivals(5) == pytest.approx([k * gap for k in range(5)])
    # no ramp: every client at t = 0 (the old behaviour)
    assert (first_arrivals(5, ramp_s=0.0) == 0.0).all()


def test_default_ramp_is_capped_by_the_window() -> None:
    arr = Arrival(kind="closed_loop", clients=100)
    assert arr.start_ramp_s(600.0) == Arrival.CLIENT_RAMP_S
    assert arr.start_ramp_s(5.0) == 0.5
    assert Arrival(kind="closed_loop", think_time_s=4.0).start_ramp_s(5.0) == 4.0
    assert Arrival(kind="closed_loop", ramp_s=30.0, think_time_s=4.0).start_ramp_s(5.0) == 30.0


@pytest.mark.parametrize("think", ["constant", "exponential", "uniform"])
def test_think_distributions(think: str) -> None:
    s = long_prompts(1, think_time_s=2.0)
    arr = Arrival(kind="closed_loop", clients=1, think_time_s=2.0, think=think, think_spread=0.25)  # type: ignore[arg-type]
    pauses = closed_loop_pauses(arr, 20_001, s)[1:]  # the first is a start offset
    assert pauses.mean() == pytest.approx(2.0, rel=0.03)
    if think == "constant":
        assert (pauses == 2.0).all()
    elif think == "uniform":
        assert pauses.min() >= 1.5 and pauses.max() <= 2.5
        assert pauses.std() == pytest.approx(0.5 / np.sqrt(3), rel=0.05)
    else:
        assert pauses.std() == pytest.approx(2.0, rel=0.05)  # cv 1


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("think_spread", 1.5, r"workload\.arrival\.think_spread: .*less than or equal to 1"),
        ("think_spread", -0.1, r"workload\.arrival\.think_spread: .*greater than or equal to 0"),
        ("ramp_s", -1.0, r"workload\.arrival\.ramp_s: .*greater than or equal to 0"),
        ("think", "gaussian", r"workload\.arrival\.think: .*'exponential', 'constant' or 'uniform'"),
    ],
)
def test_validation_names_the_field_and_range(field: str, value: Any, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        io.apply_overrides(io.load_preset("chat-colocated"), {f"workload.arrival.{field}": value})


def test_a_closed_loop_can_stop_after_a_count_of_requests() -> None:
    """bench_serving's --num-prompts beside --max-concurrency: the clients send that many requests
    in all, then stop, however long the window; unset, they send until the window ends."""
    from engine.scenario import codec as io
    from engine.serving.run import simulate as run

    base = io.apply_overrides(
        io.load_preset("chat-colocated"),
        {"duration_s": 600.0, "workload.arrival": {"kind": "closed_loop", "clients": 8, "ramp_s": 0.0}},
    )
    capped = io.apply_overrides(base, {"workload.arrival.stop_after": 50})
    t = run(capped).requests
    assert len(t) == 50 and (t["outcome"] == "completed").all()
    assert len(run(base).requests) > 50
    assert io.apply_overrides(base, {"workload.arrival.kind": "poisson", "workload.arrival.stop_after": 50})
