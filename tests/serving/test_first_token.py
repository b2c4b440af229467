"""The first-token latency on the way in (engine/serving/way_in.py, engine/scenario/resolve.py).

A MoE model's run pays, before its first token, the latency fitted to its stack's one-client MoE
TTFTs (presets/calibration.toml, engine/calibration/first_token.py), as the validation predicts
it: every first token and completion moves by exactly that figure, TPOT does not, and the chips
do no more work. A dense model pays none unless the scenario sets `deployment.first_token_ms`;
0 switches it off. The pool's calibration says it (summary, CLI, Results).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine.calibration import trust
from engine.core.errors import ScenarioError
from engine.explain import confidence
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.run import result_of
from engine.serving.sim import Simulation
from engine.serving.workload import generate
from tests.simhelp import check_invariants, small


def run(s: Scenario) -> tuple[Any, Any]:
    res = resolve(s)
    reqs = generate(s)
    rec = Simulation(res, reqs).run()
    return result_of(res, reqs, rec, 0.0), rec


def moe(**over: Any) -> Scenario:
    return small("moe-deepseek-h200", **{"duration_s": 20.0, **over})


def fitted_ms(stack: str) -> float:
    found = trust.first_token_ms(stack)
    assert found is not None, "presets/calibration.toml has no [first_token] table"
    return found[0]


def test_the_shipped_figure_is_per_stack_with_a_shared_one_for_the_rest() -> None:
    assert fitted_ms("sglang") != fitted_ms("vllm") == fitted_ms("trtllm") > 0
    assert "SGLang" in trust.first_token_ms("sglang")[1]  # type: ignore[index]
    assert "every stack" in trust.first_token_ms("vllm")[1]  # type: ignore[index]


@pytest.mark.parametrize("stack", ["vllm", "sglang"])
def test_a_moe_pool_carries_its_stacks_fitted_latency(stack: str) -> None:
    res = resolve(moe(**{"deployment.stack": stack}))
    ms = fitted_ms(stack)
    assert all(p.calibration.first_token_ms == ms for p in res.pools)
    assert res.first_token_s == pytest.approx(ms / 1e3)
    cal = res.pools[0].calibration
    assert (
        f"first token +{ms:.3g} ms a request, in every TTFT and end-to-end time, not on the chips"
        in confidence.describe(cal)
    )
    assert cal.as_dict()["first_token_ms"] == ms


def test_a_moe_run_pays_it_before_its_first_token_and_nowhere_else() -> None:
    paid, rec = run(moe())
    off, _ = run(moe(**{"deployment.first_token_ms": 0.0}))
    a, b = off.requests, paid.requests
    done = (a["outcome"] == "completed").to_numpy()
    assert done.sum() > 50 and (b["outcome"] == a["outcome"]).all()
    ms = fitted_ms("vllm")
    np.testing.assert_allclose(b["ttft_s"][done] - a["ttft_s"][done], ms / 1e3, atol=1e-9)
    np.testing.assert_allclose(b["e2e_s"][done] - a["e2e_s"][done], ms / 1e3, atol=1e-9)
    np.testing.assert_allclose(b["tpot_s"][done], a["tpot_s"][done], rtol=1e-9, equal_nan=True)
    # not on the chips: the same busy time, only shifted by the latency against the window (on the
    # chips, ~200 requests x 82 ms would add ~40% to two instances' 20 s), and no network or
    # control-plane time booked
    for pool, u in off.summary["utilization"].items():
        assert paid.summary["utilization"][pool]["busy"] == pytest.approx(u["busy"], rel=0.01)
    assert "way_in" not in paid.summary and rec.network_s is None
    assert paid.summary["calibration"]["prefill"]["first_token_ms"] == ms
    assert off.summary["calibration"]["prefill"]["first_token_ms"] == 0.0
    assert (
        "no first-token latency (deployment.first_token_ms)"
        in off.summary["calibration"]["prefill"]["caveat"]
    )
    check_invariants(paid, rec)


def test_a_dense_run_pays_none_unless_the_scenario_sets_it() -> None:
    s = small("chat-colocated", duration_s=20.0)
    res = resolve(s)
    assert res.first_token_s == 0.0 and all(p.calibration.first_token_ms is None for p in res.pools)
    assert "first_token_ms" not in res.pools[0].calibration.as_dict()
    base, _ = run(s)
    slow, _ = run(small("chat-colocated", duration_s=20.0, **{"deployment.first_token_ms": 50.0}))
    done = (base.requests["outcome"] == "completed").to_numpy()
    np.testing.assert_allclose(
        slow.requests["ttft_s"][done] - base.requests["ttft_s"][done], 0.050, atol=1e-9
    )
    assert all(c["first_token_ms"] == 50.0 for c in slow.summary["calibration"].values())


@pytest.mark.parametrize("value", [-1.0, 10_001.0])
def test_out_of_bounds_is_one_line_naming_the_field(value: float) -> None:
    with pytest.raises(ScenarioError, match=r"deployment\.first_token_ms: .*(0|10000)"):
        moe(**{"deployment.first_token_ms": value})


def test_a_summary_carries_it_back_into_the_pools_marks() -> None:
    s = moe()
    paid, _ = run(s)
    marks = confidence.pool_marks(s, paid.summary)
    assert all(m.calibration.first_token_ms == fitted_ms("vllm") for m in marks)
