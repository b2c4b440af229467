"""The MoE first-token latency (engine/calibration/first_token.py) and the first round of a MoE
concurrency run's TTFT (engine/calibration/predictor.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.calibration import crossval, first_token, predictor
from engine.calibration.measurements import Measurement
from engine.catalog.entries import Catalog


def _ttft(id_: str, model: str, stack: str, source: str, value: float, concurrency: int = 1) -> Measurement:
    return Measurement(
        id=id_, model=model, hardware="h200", tp=8, weights="fp8", kv="bf16", kind="ttft",
        prompt_tokens=600, output_tokens=500, value=value, unit="ms", stack=stack, source_key=source,
        concurrency=concurrency, prompts=10 * concurrency,
    )  # fmt: skip


def test_median_residual_per_stack_where_two_sources_allow(catalog: Catalog) -> None:
    pts = [
        _ttft("a", "deepseek-v3", "sglang", "s1", 150.0),
        _ttft("b", "deepseek-v3", "sglang", "s2", 130.0),
        _ttft("c", "deepseek-v3", "sglang", "s2", 190.0),
        _ttft("d", "deepseek-v3", "vllm", "s3", 60.0),  # one source: no figure of its own
        _ttft("e", "deepseek-v3", "vllm", "s3", 20.0, concurrency=8),  # under load: not fitted to
        _ttft("f", "llama-3.1-8b", "vllm", "s3", 900.0),  # dense: not fitted to
    ]
    ft = first_token.fit(pts, catalog, lambda m: 50.0)
    assert ft.ids == ("a", "b", "c", "d")
    assert ft.stacks == {"sglang": 100.0}  # median of 100, 80, 140
    assert ft.shared_ms == 90.0  # median of 100, 80, 140, 10
    assert ft.ms("sglang") == 100.0 and ft.ms("vllm") == 90.0 and ft.ms("trtllm") == 90.0


def test_never_negative_and_none_without_rows(catalog: Catalog) -> None:
    pts = [_ttft("a", "deepseek-v3", "sglang", "s1", 20.0)]
    assert first_token.fit(pts, catalog, lambda m: 50.0).shared_ms == 0.0
    assert first_token.fit([], catalog, lambda m: 50.0) is first_token.NONE
    assert first_token.NONE.ms("sglang") == 0.0


def test_moe_ttfts_held_out_take_the_fold_latency(reference_fit: tuple, catalog: Catalog) -> None:
    """A MoE TTFT is predicted with the latency added once; a MoE TPOT and a dense TTFT without it."""
    reference_points, fits, ef = reference_fit
    ft = crossval.fit_first_token(reference_points, catalog, fits, ef)
    assert ft.shared_ms > 0 and len(ft.ids) >= 2
    moe = next(m for m in reference_points if m.id in ft.ids)
    (plain,) = crossval._predict([moe], fits, catalog, ef)
    (added,) = crossval._predict([moe], fits, catalog, ef, ft)
    assert added.predicted == pytest.approx(plain.predicted + ft.ms(moe.stack))
    tpot = replace(moe, kind="tpot")
    assert crossval._predict([tpot], fits, catalog, ef, ft)[0].predicted == pytest.approx(
        crossval._predict([tpot], fits, catalog, ef)[0].predicted
    )


def _predict(m: Measurement, catalog: Catalog) -> float:
    return predictor.predict(m, catalog, catalog.chip(m.hardware).profile(None))


@pytest.mark.parametrize("model", ["deepseek-v3", "llama-3.1-70b"])
def test_first_round_only_for_moe_with_stated_prompts(model: str, catalog: Catalog) -> None:
    """Clients that start together send their first `concurrency` prompts at once: a MoE TTFT at 16
    clients of 80 prompts waits longer than the steady state alone; one client, a run whose prompts
    are not stated, and a dense model are predicted as before."""
    loaded = replace(_ttft("x", model, "vllm", "s", 1.0, concurrency=16), prompts=80)
    unstated = replace(loaded, prompts=0)
    one = replace(loaded, concurrency=1, prompts=10)
    if model == "deepseek-v3":
        assert _predict(loaded, catalog) > _predict(unstated, catalog) * 1.05
    else:
        assert _predict(loaded, catalog) == _predict(unstated, catalog)
    assert _predict(one, catalog) == _predict(replace(one, prompts=0), catalog)


@pytest.mark.parametrize("stack", ["vllm", "sglang"])
def test_in_step_rounds_drift_into_pass_groups_under_a_mixing_scheduler(stack: str, catalog: Catalog) -> None:
    """Clients in step (fixed lengths, started together): under vLLM V1 the prompts a round
    prefills in one pass decode, finish and come back together, so after the first round each
    group waits one pass, not the whole round; SGLang prefills the whole round first (rounds stay
    whole). The first round counts concurrency / prompts of the mean either way."""
    m = replace(
        _ttft("x", "deepseek-v3", stack, "s", 1.0, concurrency=32),
        prompt_tokens=1000, token_budget=4096, prompts=320, lockstep=True,
    )  # fmt: skip
    whole = replace(m, prompts=0)  # prompts unstated: every round whole, as before
    if stack == "vllm":
        assert predictor._pass_group(m, 32) == 4  # 32,000 tokens in 8 passes of 4,096
        assert _predict(m, catalog) < 0.5 * _predict(whole, catalog)
        # the first round alone: the whole round's wait
        assert _predict(replace(m, prompts=32), catalog) == pytest.approx(_predict(whole, catalog))
    else:
        assert _predict(m, catalog) == _predict(whole, catalog)
