"""The specialisation test on a stack's fixed cost per step: a software bottleneck is no case for a chip."""

from __future__ import annotations

from engine.explain.advisor import phase_bottlenecks, specialisation
from engine.scenario import codec as io
from engine.serving.run import simulate


def test_a_decode_bound_by_its_stacks_fixed_cost_is_no_case_for_a_chip() -> None:
    """The 910B's decode under vLLM-Ascend spends most of each step in its stack's fixed cost (35 ms of
    a 49 ms step): it read "bandwidth binds 100% of its work" and "an ASIC for decode is worth
    considering, built around bandwidth" beside a lesson saying the stack sets its pace (a review)."""
    from engine.explain.asic import FIXED_COST

    sc = io.apply_overrides(io.load_preset("chat-ascend-910b"), {"duration_s": 120.0})
    alone = sc.model_copy(
        update={"deployment": sc.deployment.model_copy(update={"pools": [sc.deployment.pools[0]]})}
    )
    result = simulate(alone)
    assert phase_bottlenecks(result)["decode"] == {FIXED_COST: 1.0}
    sp = specialisation(result, 12).set_index("phase")
    assert sp.loc["decode", "binding_resource"] == FIXED_COST and not sp.loc["decode", "bottleneck_clear"]
    assert (
        "a software bottleneck (its stack's fixed cost per step binds 100% of its work"
        in sp.loc["decode", "text"]
    )
    assert (
        sp.loc["decode", "verdict"] != "worth considering" and "built around" not in sp.loc["decode", "text"]
    )
    # beside the H100 pool, whose decode is bandwidth-bound, neither binds most of the work: mixed
    both = specialisation(simulate(sc), 12).set_index("phase")
    assert both.loc["decode", "text"].count("mixed bottleneck") == 1
    # a fixed cost that comes by rule (the Groq LPU's assumed 3 ms) says nothing of a stack
    groq = io.load_preset("sram-decode-groq")
    groq = groq.model_copy(update={"duration_s": 120.0, "warmup_s": min(groq.warmup_s, 30.0)})
    lpu = specialisation(simulate(groq), 12).set_index("phase")
    assert lpu.loc["decode", "binding_resource"] == FIXED_COST and not lpu.loc["decode", "bottleneck_clear"]
    assert "an assumed figure for its chips" in lpu.loc["decode", "text"]
    assert "software bottleneck" not in lpu.loc["decode", "text"]
