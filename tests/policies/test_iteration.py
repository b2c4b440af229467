"""Iteration schedulers (mixed, prefill-first) and the gaps between tokens they cause."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine.core.errors import ScenarioError
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.serving.ledger import SEGMENT_COLUMNS
from engine.serving.run import simulate
from tests.simhelp import check_invariants, records

COL = {c: i for i, c in enumerate(SEGMENT_COLUMNS)}


def colocated(iteration: str, **over: Any) -> Scenario:
    return io.apply_overrides(
        io.load_preset("chat-colocated"),
        {
            "duration_s": 60.0,
            "deployment.pools[0].count": 2,
            "workload.arrival.rate_rps": 6.0,
            "scheduler.iteration": {"name": iteration},
            **over,
        },
    )


def test_each_stack_runs_its_scheduler() -> None:
    base = io.load_preset("chat-colocated")
    for stack, name in (
        ("vllm", "mixed"),
        ("trtllm", "mixed"),
        ("sglang", "prefill_first"),
        ("vllm-v0", "prefill_first"),
    ):
        assert io.apply_overrides(base, {"deployment.stack": stack}).iteration_scheduler().name == name
    over = io.apply_overrides(base, {"deployment.stack": "sglang", "scheduler.iteration": {"name": "mixed"}})
    assert over.iteration_scheduler().name == "mixed"
    with pytest.raises(
        ScenarioError, match=r"scheduler\.iteration\.name: 'fastest' is not a iteration policy"
    ):
        io.apply_overrides(base, {"scheduler.iteration": {"name": "fastest"}})


@pytest.mark.parametrize("iteration", ["mixed", "prefill_first"])
def test_prefill_first_pauses_decodes_and_mixed_does_not(iteration: str) -> None:
    s = colocated(iteration)
    rec, _ = records(s)
    seg = rec.segments
    with_prompts = seg[seg[:, COL["prefill_s"]] > 0]
    prompt_only = (with_prompts[:, COL["decodes"]] == 0).mean()
    if iteration == "prefill_first":
        assert prompt_only == 1.0  # decodes never ride along with a prompt
    else:
        assert prompt_only < 0.5  # under load most prompt iterations carry decodes
    check_invariants(simulate(s), rec)


def test_stalls_show_in_the_largest_gap_not_in_the_mean() -> None:
    """Without chunking, a whole prompt stalls every decode beside it: the largest gap of a
    request is many steps long while its mean TPOT moves little; disaggregated, there is none: its
    largest is the join, the rest of the step under way when its cache landed and the next one."""
    stalled = simulate(colocated("prefill_first", **{"deployment.batching.chunked_prefill": False}))
    lat = stalled.summary["latency_ms"]
    assert lat["max_tbt"]["p50"] > 4 * lat["tpot"]["p50"]
    assert lat["tbt"]["p99"] > 3 * lat["tbt"]["p50"]
    split = simulate(io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 60.0})).summary
    gaps = split["latency_ms"]
    assert gaps["tpot"]["p50"] < gaps["max_tbt"]["p50"] < 2 * gaps["tpot"]["p50"]
    assert gaps["tbt"]["p99"] < 1.2 * gaps["tpot"]["p99"]


def test_token_gaps_add_up_to_the_decode_time() -> None:
    """The token-weighted mean gap is the decode time over the decoded tokens (a bookkeeping check)."""
    res = simulate(colocated("mixed", **{"warmup_s": 0.0}))
    t = res.requests
    done = t[(t["outcome"] == "completed") & (t["output_tokens"] > 1)]
    decode_s = float((done["completion_s"] - done["first_token_s"]).sum())
    tokens = float((done["output_tokens"] - 1).sum())
    mean_ms = res.summary["latency_ms"]["tbt"]["mean"]
    assert mean_ms == pytest.approx(decode_s / tokens * 1e3, rel=0.05)


def test_largest_gap_is_at_least_the_mean_and_at_most_the_decode_time() -> None:
    t = simulate(colocated("mixed")).requests
    ok = t[(t["outcome"] == "completed") & (t["output_tokens"] > 2)]
    assert np.all(ok["max_tbt_s"] >= ok["tpot_s"] * 0.999)
    assert np.all(ok["max_tbt_s"] <= (ok["completion_s"] - ok["first_token_s"]) + 1e-9)


def test_a_tbt_target_fails_stalled_requests() -> None:
    base = colocated("prefill_first", **{"deployment.batching.chunked_prefill": False})
    loose = simulate(base).summary
    tight = simulate(io.apply_overrides(base, {"workload.classes[0].slo.tbt_ms": 60.0})).summary
    assert tight["slo_attainment"] < loose["slo_attainment"] - 0.2
    cls = tight["classes"]["chat"]
    assert cls["max_tbt_ms_at_percentile"] > 60.0 and not cls["passes"]


def test_chunks_bound_a_stall_only_when_decodes_ride_along() -> None:
    """Sarathi-Serve's point: splitting prompts shortens stalls only if decodes run between the
    chunks. Prefill-first runs a split prompt's chunks back to back (SGLang without mixed
    chunks), so its stall is the whole prompt; mixed iterations of 1,024 tokens stall by one chunk."""

    def gaps(iteration: str, chunked: bool) -> dict[str, float]:
        budget = {"deployment.batching.chunked_prefill": chunked, "deployment.batching.token_budget": 1024}
        return simulate(colocated(iteration, **budget)).summary["latency_ms"]["max_tbt"]

    whole, split = gaps("prefill_first", False), gaps("prefill_first", True)
    assert split["p90"] == pytest.approx(whole["p90"], rel=0.15)
    assert gaps("mixed", True)["p90"] < 0.5 * split["p90"]
