"""The MoE step model's terms, fitted per stack where two sources allow (engine/calibration/moe_fit.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.calibration import calibrate, crossval, measurements, moe_fit, predictor, trust
from engine.catalog.entries import Catalog
from engine.costmodel.iteration import iteration_cost


@pytest.fixture(scope="module")
def fitted(reference_fit: tuple) -> tuple[list[measurements.Measurement], dict, moe_fit.ExpertFit]:
    return reference_fit  # the fit to every usable point (tests/conftest.py)


def test_stacks_with_two_sources_get_their_own_terms(fitted: tuple) -> None:
    points, _, ef = fitted
    by_stack: dict[str, set[str]] = {}
    for m in points:
        if m.id in ef.ids:
            by_stack.setdefault(m.stack, set()).add(m.source_key)
    for st, sources in by_stack.items():
        assert (st in ef.stacks) == (len(sources) >= moe_fit.MIN_SOURCES), st
    assert {"sglang", "vllm"} <= set(ef.stacks)
    # a stack without terms of its own takes the shared terms
    shared = {"eta_experts": ef.eta_experts, "eta_experts_compute": ef.eta_experts_compute,
              "moe_layer_ms": ef.moe_layer_ms, "span_step_ms": ef.span_step_ms}  # fmt: skip
    assert ef.terms("vllm-v0") == shared and ef.terms("no-such-stack") == shared
    assert ef.terms("sglang") == {**ef.stacks["sglang"].update(), "span_step_ms": ef.span_step_ms}


def test_the_terms_beat_one_experts_factor_in_sample(fitted: tuple, catalog: Catalog) -> None:
    """What the layer cost buys: over the points it is fitted to, the per-stack pair misses by less
    than the best single experts' factor without it (the model before issue 30)."""
    points, fits, ef = fitted
    pts = [m for m in points if m.id in set(ef.ids)]
    profs = [crossval.rule_profile(m.hardware, measurements.stack_of(m), fits)[0] for m in pts]

    def errors(update: object) -> np.ndarray:
        return np.array(
            [
                abs(predictor.predict(m, catalog, p.model_copy(update=update(m))) / m.value - 1.0)  # type: ignore[operator]
                for m, p in zip(pts, profs, strict=True)
            ]
        )

    new = errors(lambda m: ef.terms(m.stack, moe_fit.vendor_of(m, catalog)))
    old = min(
        (errors(lambda m, e=e: {"eta_experts": e}) for e in (0.25, 0.3, 0.35)),
        key=lambda x: float(np.sum(np.log1p(x) ** 2)),
    )
    assert np.median(new) < np.median(old) - 0.05
    assert math.isclose(
        float(np.median(np.abs(np.expm1(ef.log_errors)))), float(np.median(new)), rel_tol=1e-9
    )


def test_the_app_runs_the_shipped_terms_of_its_stack(fitted: tuple, catalog: Catalog) -> None:
    _, _, ef = fitted
    for st in ef.stacks:
        assert trust.experts_terms(st) == pytest.approx(ef.terms(st)), st
    assert trust.experts_terms("vllm-v0") == pytest.approx(ef.shared())
    for st, vd in ef.vendors:
        assert trust.experts_terms(st, vd) == pytest.approx(ef.terms(st, vd)), (st, vd)
    for vd in ef.by_vendor:  # a stack without terms of its own, on each vendor's chips
        assert trust.experts_terms("vllm-v0", vd) == pytest.approx(ef.terms("vllm-v0", vd)), vd
    prof, cal = trust.calibration(catalog.chip("b200"), "sglang", catalog, moe=True)
    assert (prof.eta_experts, prof.eta_experts_compute, prof.moe_layer_ms) == pytest.approx(
        tuple(ef.vendors[("sglang", "nvidia")].update().values())
    )
    assert cal.experts == prof.eta_experts


def test_a_stacks_points_on_one_chip_vendor_get_terms_of_their_own(fitted: tuple, catalog: Catalog) -> None:
    """SGLang's MoE rows on AMD chips (dstack's and the cookbook's MI300X) and on NVIDIA chips each
    come from two sources, so each vendor gets its terms; the MI300X's slower MoE layer no longer
    sets the B200's (the cookbook's one-client step: 24 ms on MI300X, 9.2 ms on B200)."""
    points, _, ef = fitted
    groups: dict[tuple[str, str], set[str]] = {}
    for m in points:
        if m.id in ef.ids:
            groups.setdefault((m.stack, moe_fit.vendor_of(m, catalog)), set()).add(m.source_key)
    for (st, vd), sources in groups.items():
        split = st in ef.stacks and len({v for s, v in groups if s == st}) > 1
        assert ((st, vd) in ef.vendors) == (split and len(sources) >= moe_fit.VENDOR_MIN_SOURCES), (st, vd)
    amd, nvidia = ef.vendors[("sglang", "amd")], ef.vendors[("sglang", "nvidia")]
    assert amd.moe_layer_ms > nvidia.moe_layer_ms
    assert ef.terms("sglang", "amd") == {**amd.update(), "span_step_ms": ef.span_step_ms}
    # a vendor without terms of its own takes the stack's; a stack without its own, its chips' vendor's
    # over every stack, else the shared ones
    assert ef.terms("sglang", "intel") == ef.terms("sglang") != ef.terms("sglang", "nvidia")
    across = ef.by_vendor["amd"]
    assert (
        set(across.ids) > set(amd.ids) and ef.terms("vllm-v0", "amd")["moe_layer_ms"] == across.moe_layer_ms
    )
    assert ef.terms("vllm-v0", "intel") == ef.terms("vllm-v0") == ef.shared()
    assert ef.terms("trtllm", "nvidia") == ef.terms("trtllm") != ef.terms("vllm-v0", "nvidia")


def test_a_vendor_left_with_one_source_keeps_terms_of_its_own(fitted: tuple, catalog: Catalog) -> None:
    """With the SGLang cookbook's DeepSeek page held out, SGLang's MI300X points come from dstack
    alone: they take terms fitted to them (`VENDOR_MIN_SOURCES`), not the NVIDIA-heavy pooled ones
    whose one-client MI300X step came out 2.8 times too fast (docs/calibration.md)."""
    points, fits, _ = fitted
    kept = [m for m in points if "sgl-cookbook: docs/autoregressive/DeepSeek" not in m.source_key]
    ef = crossval.fit_experts(kept, catalog, fits)
    assert ef is not None and ("sglang", "amd") in ef.vendors
    amd = ef.vendors[("sglang", "amd")]
    assert amd.sources == 1 and amd.moe_layer_ms > ef.stacks["sglang"].moe_layer_ms


def test_the_app_takes_a_stacks_terms_on_its_chips_vendor(
    monkeypatch: pytest.MonkeyPatch, catalog: Catalog
) -> None:
    """presets/calibration.toml's [experts.<stack>.<vendor>] tables, as `validate` writes them."""
    shared = {"eta_experts": 0.4, "eta_experts_compute": 0.25, "moe_layer_ms": 0.15, "span_step_ms": 0.0}
    sglang = {"eta_experts": 0.5, "eta_experts_compute": 0.1, "moe_layer_ms": 0.075}
    amd = {"eta_experts": 0.75, "eta_experts_compute": 0.075, "moe_layer_ms": 0.3}
    vllm = {"eta_experts": 0.55, "eta_experts_compute": 0.4, "moe_layer_ms": 0.25, "span_step_ms": 9.0}
    across = {"eta_experts": 0.7, "eta_experts_compute": 0.1, "moe_layer_ms": 0.35}
    table = {"experts": {**shared, "sglang": {**sglang, "amd": amd}, "vllm": vllm, "vendor": {"amd": across}}}
    monkeypatch.setattr(trust, "_tables", lambda: table)
    assert trust.experts_terms("sglang", "AMD") == {**amd, "span_step_ms": 0.0}
    assert (
        trust.experts_terms("sglang", "NVIDIA")
        == trust.experts_terms("sglang")
        == {**sglang, "span_step_ms": 0.0}
    )
    assert trust.experts_terms("vllm", "AMD") == vllm and trust.experts_terms("mindie", "Huawei") == shared
    # a stack without terms of its own runs on AMD chips with AMD's over every stack
    assert trust.experts_terms("vllm-v0", "AMD") == {**across, "span_step_ms": 0.0}
    assert trust.experts_terms("vllm-v0", "NVIDIA") == shared
    prof, cal = trust.calibration(catalog.chip("mi300x"), "sglang", catalog, moe=True)
    assert prof.moe_layer_ms == 0.3 and "sglang's MoE rows on AMD chips" in cal.caveat
    prof, cal = trust.calibration(catalog.chip("mi300x"), "vllm-v0", catalog, moe=True)
    assert prof.moe_layer_ms == 0.35 and "every stack's MoE rows on AMD chips" in cal.caveat


def test_a_moe_steady_state_reads_a_prompts_experts_in_the_steps_that_carry_it(catalog: Catalog) -> None:
    """One client, a 4,000-token prompt and 400 output tokens: the prompt runs in one chunk, so one
    step in 400 reads every expert, and the TPOT stays near a batch-1 decode step's; the average
    iteration (a tenth of the prompt in every step) would read most experts at every step. A dense
    model's steady state keeps the average iteration (its weight reads do not depend on tokens)."""
    hw = catalog.chip("b200")
    prof = hw.profile(None).model_copy(update={"eta_experts": 0.5, "moe_layer_ms": 0.1})

    def point(model: str) -> measurements.Measurement:
        return measurements.Measurement(
            id="T1", model=model, hardware="b200", tp=8, weights="fp8", kv="bf16", kind="tpot",
            prompt_tokens=4000, output_tokens=400, value=10.0, unit="ms", stack="sglang",
            max_batch=4096, token_budget=16384, concurrency=1,
        )  # fmt: skip

    m = point("deepseek-v3")
    inst = predictor._with_profile(predictor.measured_instance(m, catalog), prof)
    steps = predictor._steady(inst, m, 1, predictor._seg_timed)
    assert [round(w, 6) for w, *_ in steps] == [round(1 - 1 / 400, 6), round(1 / 400, 6)]
    tpot = predictor.predict(m, catalog, prof)
    one = 1000 * float(iteration_cost(inst, decode_requests=1, decode_context_tokens=4200).time_s)
    spread = 1000 * float(
        iteration_cost(inst, decode_requests=1, decode_context_tokens=4200, prefill_tokens=10,
                       prefill_attn_pairs=4000 * 4000 / 2 / 400, prefill_largest=4000).time_s
    )  # fmt: skip
    assert one < tpot < 1.5 * one < spread
    dense = point("llama-3.3-70b")
    dinst = predictor._with_profile(predictor.measured_instance(dense, catalog), prof)
    assert len(predictor._steady(dinst, dense, 1, predictor._seg_timed)) == 1


def test_the_per_step_cost_over_machines_is_fitted_only_where_rows_span_machines(
    fitted: tuple, catalog: Catalog
) -> None:
    """Tencent's TP16 over two H20 machines is the only layout larger than its scale-up domain: with
    its rows the vLLM fit has a per-step cost of its own; without them every term takes the default."""
    points, _, ef = fitted
    spanning = {m.source_key for m in points if m.id in set(ef.ids) and moe_fit.spans_machines(m, catalog)}
    assert len(spanning) == 1 and "tke" in next(iter(spanning))
    assert ef.stacks["vllm"].span_step_ms is not None and ef.stacks["sglang"].span_step_ms is None
    assert ef.terms("sglang")["span_step_ms"] == ef.span_step_ms
    kept = [m for m in points if m.source_key not in spanning]
    out = crossval.fit_experts(kept, catalog, calibrate.reference_fits(kept, catalog))
    assert out is not None and out.span_step_ms == moe_fit.SPAN_DEFAULT_MS
    assert all(t.span_step_ms is None for t in out.stacks.values())
