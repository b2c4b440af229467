"""MLA's absorbed decode attention: its FLOPs as the kernels run them, on a roof of its own."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.calibration.predictor import Parts, predict_from_parts
from engine.catalog.entries import Catalog
from engine.costmodel.iteration import iteration_cost
from engine.costmodel.perf import UNHIDDEN_FRACTION, Instance, Speculation, roof
from tests.costmodel.test_perf import assert_decode_run_sums_its_steps, assert_step_matches_iteration


def _ds(catalog: Catalog, chip: str, tp: int) -> Instance:
    return Instance(model=catalog.model("deepseek-v3"), hardware=catalog.chip(chip), tp=tp, weights="fp8")


def test_absorbed_flops_pad_a_rank_heads_to_the_kernel_tile(catalog: Catalog) -> None:
    """DeepSeek-V3: 61 layers, 128 heads, 512 latent + 64 rope. A decoded token meets each cached
    token with 2 x (512 + 64 + 512) FLOPs a head; a TP16 rank's 8 heads run as FlashMLA's 64 rows,
    a TP1 chip's 128 as two tiles; AMD's kernels tile 16 heads, so a TP8 rank's 16 are not padded."""
    per_row = 2.0 * 61 * (2 * 512 + 64)
    assert _ds(catalog, "h20", 16).decode_attention_flops_per_pair == pytest.approx(per_row * 16 * 64)
    assert _ds(catalog, "h200", 1).decode_attention_flops_per_pair == pytest.approx(per_row * 128)
    assert _ds(catalog, "h200", 8).decode_attention_flops_per_pair == pytest.approx(per_row * 8 * 64)
    assert _ds(catalog, "mi300x", 8).decode_attention_flops_per_pair == pytest.approx(per_row * 128)
    # the prompt's attention runs unabsorbed (qk 192, v 128), and standard heads are untouched
    assert catalog.model("deepseek-v3").attention_flops_per_pair() == pytest.approx(2.0 * 61 * 128 * 320)
    llama = Instance(model=catalog.model("llama-3.1-70b"), hardware=catalog.chip("h20"), tp=8)
    assert llama.decode_attention_flops_per_pair == llama.model.attention_flops_per_pair()


def test_the_decode_attention_is_timed_on_its_own_roof(catalog: Catalog) -> None:
    """An H20 TP16 step of 64 decodes at 3,000 tokens: the attention's math is compute-bound and
    adds to the weights' streaming instead of hiding under it (the two are separate kernels)."""
    inst = _ds(catalog, "h20", 16)
    c = iteration_cost(inst, decode_requests=64, decode_context_tokens=64 * 3000)
    att_c, att_m = float(c.attention_compute_s), float(c.attention_memory_s)
    assert att_c > 3 * att_m  # compute-bound: 8 heads cost 64 rows of math over one latent read
    rest_c, rest_m = float(c.compute_s) - att_c, float(c.memory_s) - att_m
    fixed = float(c.comm_s) + float(c.overhead_s)
    assert float(c.time_s) == pytest.approx(roof(rest_c, rest_m) + roof(att_c, att_m) + fixed, rel=1e-12)
    assert float(c.time_s) > roof(float(c.compute_s), float(c.memory_s)) + fixed


@settings(max_examples=40, deadline=None)
@given(
    q=st.integers(0, 8000),
    k=st.integers(0, 20000),
    d=st.integers(0, 256),
    c=st.integers(0, 8000),
    chip=st.sampled_from(["h20", "mi300x"]),
    tp=st.sampled_from([8, 16]),
)
def test_step_model_equals_iteration_cost_for_mla(
    catalog: Catalog, q: int, k: int, d: int, c: int, chip: str, tp: int
) -> None:
    assert_step_matches_iteration(_ds(catalog, chip, tp), q, k, d, c)


def test_a_decode_run_sums_its_steps(catalog: Catalog) -> None:
    assert_decode_run_sums_its_steps(_ds(catalog, "h20", 16))


def test_the_fit_scales_the_attention_roof_with_the_rates() -> None:
    """A segment's last two columns (the decode attention's compute and memory at eta = 1) take a
    roof of their own at the profile's rates."""
    seg = [[1.0, 0.010, 0.020, 0.001, 0.0, 0.008, 0.002]]
    p = Parts(segments=np.array(seg), numerator=1.0, throughput=False)
    t = predict_from_parts(p, "tpot", 0.5, 0.8, 0.0)
    rest = max(0.02, 0.025) + UNHIDDEN_FRACTION * min(0.02, 0.025)
    att = 0.016 + UNHIDDEN_FRACTION * 0.0025
    assert t == pytest.approx((rest + att + 0.001) * 1000.0)


def test_a_speculative_step_packs_its_queries_into_the_tiles(catalog: Catalog) -> None:
    """One drafted token: a TP8 rank's 16 heads x 2 queries are 32 rows of one 64-row tile, so each
    query costs 32 rows, not 64."""
    per_row = 2.0 * 61 * (2 * 512 + 64)
    spec = Speculation(tokens=1, acceptance=0.8, draft_share=0.1)
    inst = Instance(model=catalog.model("deepseek-v3"), hardware=catalog.chip("h200"), tp=8, speculation=spec)
    assert inst.decode_attention_flops_per_pair == pytest.approx(per_row * 8 * 32)
