"""Requests longer than the model's context: refused as a server refuses them (a review ran
16,384-token prompts on llama-3-70b, whose context is 8,192 tokens, to the end, and `emit` wrote
--max-model-len 8192 for them)."""

from __future__ import annotations

import pytest

from engine.core.errors import ScenarioError
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.run import simulate


def _past_the_context(more: dict[str, object] | None = None) -> Scenario:
    """chat-disaggregated on llama-3-70b (8,192 tokens of context) with prompts that often pass it."""
    long = {"kind": "lognormal", "mean": 4000, "p99": 12000, "max_tokens": 16000}
    over = {"duration_s": 120.0, "model.id": "llama-3-70b", "workload.classes[0].input": long}
    return io.apply_overrides(io.load_preset("chat-disaggregated"), {**over, **(more or {})})


def test_requests_past_the_context_are_rejected_with_their_reason() -> None:
    result = simulate(_past_the_context())
    r = result.requests
    over = (r["prompt_tokens"] + r["output_tokens"]) > 8192
    assert over.any() and not over.all()
    assert (r.loc[over, "reason"] == "longer_than_context").all()
    assert (r.loc[~over, "reason"] != "longer_than_context").all()
    assert result.summary["requests"]["rejected_by_reason"]["longer_than_context"] == over.sum()


def test_a_class_no_request_of_which_fits_the_context_is_refused() -> None:
    sc = io.apply_overrides(
        io.load_preset("chat-disaggregated"),
        {"model.id": "llama-3-70b", "workload.classes[0].input": {"kind": "constant", "tokens": 16384}},
    )
    with pytest.raises(ScenarioError, match=r"workload\.classes\[0\]\.input: .*16,385 tokens or more.*8,192"):
        resolve(sc)
    # at the context exactly, it runs
    fits = io.apply_overrides(
        sc,
        {
            "workload.classes[0].input": {"kind": "constant", "tokens": 8000},
            "workload.classes[0].output": {"kind": "uniform", "low": 192, "high": 256},
        },
    )
    resolve(fits)
    with pytest.raises(ScenarioError, match="8,193 tokens or more"):
        resolve(
            io.apply_overrides(
                fits, {"workload.classes[0].output": {"kind": "uniform", "low": 193, "high": 256}}
            )
        )


def test_the_refusal_names_the_field_that_holds_most_of_the_request() -> None:
    """An output of 9,000 tokens past llama-3-70b's 8,192 named workload.classes[0].input (a review)."""
    sc = io.apply_overrides(
        io.load_preset("chat-disaggregated"),
        {
            "model.id": "llama-3-70b",
            "workload.classes[0].input": {"kind": "constant", "tokens": 100},
            "workload.classes[0].output": {"kind": "constant", "tokens": 9000},
        },
    )
    with pytest.raises(ScenarioError, match=r"^workload\.classes\[0\]\.output: every request"):
        resolve(sc)


def test_the_cache_hit_rate_counts_the_prompts_looked_up_not_those_turned_away() -> None:
    """`cache.hit_rate` divided by every request's prompt, the rejected ones' too, which are never looked
    up: an agentic trace read 67% where its served prompts found 94% (a trace replay review)."""
    result = simulate(
        _past_the_context(
            {"cache.enabled": True, "workload.classes[0].prefix": {"tokens": 1024, "groups": 2}}
        )
    )
    r = result.requests
    served = r[r["outcome"] != "rejected"]
    assert len(served) < len(r) and served["cache_hit_tokens"].sum() > 0
    expected = served["cache_hit_tokens"].sum() / served["prompt_tokens"].sum()
    assert result.summary["cache"]["hit_rate"] == pytest.approx(expected, rel=1e-9)
    assert result.summary["cache"]["hit_rate"] > r["cache_hit_tokens"].sum() / r["prompt_tokens"].sum()
