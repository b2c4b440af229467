"""The MoE step model's terms: a fixed cost per MoE layer, and grouped GEMMs that lose efficiency
with few tokens per expert (docs/cost-model.md, 'The MoE step model')."""

from __future__ import annotations

import pytest

from engine.catalog.entries import Catalog
from engine.catalog.specs import HardwareSpec
from engine.costmodel.iteration import iteration_cost
from engine.costmodel.perf import Instance
from engine.costmodel.step import StepModel


def _chip(catalog: Catalog, **terms: float) -> HardwareSpec:
    hw = catalog.chip("h200")
    prof = hw.profile(None).model_copy(update=terms)
    return hw.model_copy(update={"profiles": {**hw.profiles, hw.default_profile: prof}})


def _decode(inst: Instance, batch: int) -> float:
    return float(iteration_cost(inst, decode_requests=batch, decode_context_tokens=batch * 1000.0).time_s)


@pytest.mark.parametrize("layout", [{"tp": 8}, {"tp": 1, "dp": 8, "ep": 8}])
def test_a_fixed_cost_per_moe_layer_on_every_iteration(catalog: Catalog, layout: dict[str, int]) -> None:
    m = catalog.model("deepseek-v3")
    base = Instance(model=m, hardware=_chip(catalog), weights="fp8", **layout)
    fixed = Instance(model=m, hardware=_chip(catalog, moe_layer_ms=0.1), weights="fp8", **layout)
    assert fixed.overhead_s - base.overhead_s == pytest.approx(0.1e-3 * m.moe_layers())
    for b in (1, 64):  # the same seconds at any batch: it does not scale with the work
        assert _decode(fixed, b) - _decode(base, b) == pytest.approx(0.1e-3 * m.moe_layers(), rel=1e-6)
    # the simulator's step model agrees with the predictor's iteration cost
    assert StepModel(fixed).cost(0, 0, 0, 8, 8000.0)[0] == pytest.approx(_decode(fixed, 8), rel=1e-9)
    # a dense model has no MoE layers: the term changes nothing
    dense = catalog.model("llama-3.1-70b")
    a = Instance(model=dense, hardware=_chip(catalog), tp=4)
    b = Instance(model=dense, hardware=_chip(catalog, moe_layer_ms=0.1), tp=4)
    assert _decode(a, 16) == _decode(b, 16) and a.overhead_s == b.overhead_s


def test_a_tp_group_over_machines_pays_a_fixed_cost_per_step(catalog: Catalog) -> None:
    """`span_step_ms` is paid once an iteration, not per layer, and only where the TP group is
    larger than the scale-up domain (an H200's eight: TP16 spans two machines, TP8 does not)."""
    m = catalog.model("deepseek-v3")
    hw, base_hw = _chip(catalog, span_step_ms=12.0), _chip(catalog)
    assert hw.scale_up_domain == 8
    one = Instance(model=m, hardware=hw, tp=8, weights="fp8")
    assert (
        not one.spans_machines
        and one.overhead_s == Instance(model=m, hardware=base_hw, tp=8, weights="fp8").overhead_s
    )
    two, bare = (Instance(model=m, hardware=h, tp=16, weights="fp8") for h in (hw, base_hw))
    assert two.spans_machines and two.overhead_s - bare.overhead_s == pytest.approx(12e-3)
    for b in (1, 64):
        assert _decode(two, b) - _decode(bare, b) == pytest.approx(12e-3, rel=1e-6)
    assert StepModel(two).cost(0, 0, 0, 8, 8000.0)[0] == pytest.approx(_decode(two, 8), rel=1e-9)
    dense = catalog.model("llama-3.1-70b")  # fitted through the MoE terms only (docs/decisions.md)
    d = Instance(model=dense, hardware=hw, tp=16)
    assert d.overhead_s == Instance(model=dense, hardware=base_hw, tp=16).overhead_s


def test_grouped_gemms_lose_efficiency_with_few_tokens_per_expert(catalog: Catalog) -> None:
    """A tile of t0 tokens per touched expert: t tokens per expert cost t + t0 tokens of work, so the
    extra compute is a large share of a small prefill and a small share of a large one."""
    m = catalog.model("deepseek-v3")
    plain = Instance(model=m, hardware=_chip(catalog), tp=8, weights="fp8")
    tiled = Instance(model=m, hardware=_chip(catalog, expert_tile_tokens=128), tp=8, weights="fp8")
    assert plain.expert_tile == 0.0 and tiled.expert_tile == 128.0 and tiled.experts_slow

    def prefill(inst: Instance, q: float) -> float:
        return float(iteration_cost(inst, prefill_tokens=q, prefill_attn_pairs=q * q / 2.0).compute_s)

    small, large = 256.0, 16384.0
    extra_small = prefill(tiled, small) / prefill(plain, small) - 1.0
    extra_large = prefill(tiled, large) / prefill(plain, large) - 1.0
    assert extra_small > 4 * extra_large > 0.0
    # the extra FLOPs are the touched experts' tiles: 2 x params x t0 per touched expert and MoE layer
    flops, _ = tiled.expert_extra_work(large)
    touched = m.expected_experts_touched(large)
    assert float(flops) == pytest.approx(2.0 * m.moe_layers() * m.expert_params() * 128 * touched)
    # on the expert-parallel path too, and the simulator's step model with it
    ep = {"tp": 1, "dp": 8, "ep": 8, "weights": "fp8"}
    a = StepModel(Instance(model=m, hardware=_chip(catalog), **ep)).cost(small, small * small / 2, 0, 0, 0.0)[
        0
    ]
    b = StepModel(Instance(model=m, hardware=_chip(catalog, expert_tile_tokens=128), **ep)).cost(
        small, small * small / 2, 0, 0, 0.0
    )[0]
    assert b > a


def test_experts_as_dense_keeps_the_fixed_cost_and_drops_the_rates(catalog: Catalog) -> None:
    m = catalog.model("deepseek-v3")
    hw = _chip(catalog, eta_experts=0.4, expert_tile_tokens=64, moe_layer_ms=0.05)
    inst = Instance(model=m, hardware=hw, tp=8, weights="fp8")
    dense = inst.with_experts_as_dense()
    assert dense.expert_extra == 0.0 and dense.expert_tile == 0.0 and not dense.experts_slow
    assert dense.overhead_s == inst.overhead_s  # the fixed cost is not the experts' rate
    compute_only = Instance(model=m, hardware=_chip(catalog, eta_experts_compute=0.2), tp=8, weights="fp8")
    assert compute_only.with_experts_as_dense().expert_compute_extra == 0.0


@pytest.mark.parametrize("layout", [{"tp": 8}, {"tp": 1, "dp": 8, "ep": 8}])
def test_the_experts_math_slows_a_prompt_not_a_small_decode_step(
    catalog: Catalog, layout: dict[str, int]
) -> None:
    """`eta_experts_compute` stretches the experts' FLOPs only: a long prompt's pass (compute-bound)
    takes longer, a batch-1 decode step (reading the touched experts' weights) does not move; unset,
    the experts' math runs at `eta_experts` (a profile of one rate keeps its times to the bit)."""
    m = catalog.model("deepseek-v3")
    one = Instance(model=m, hardware=_chip(catalog, eta_experts=0.5), weights="fp8", **layout)
    split = Instance(
        model=m, hardware=_chip(catalog, eta_experts=0.5, eta_experts_compute=0.1), weights="fp8", **layout
    )
    same = Instance(
        model=m, hardware=_chip(catalog, eta_experts=0.5, eta_experts_compute=0.5), weights="fp8", **layout
    )
    q = 8192.0

    def prompt(inst: Instance) -> float:
        return float(
            iteration_cost(inst, prefill_tokens=q, prefill_attn_pairs=q * q / 2, prefill_largest=q).time_s
        )

    assert prompt(split) > 1.5 * prompt(one)
    assert _decode(split, 1) == pytest.approx(_decode(one, 1), rel=0.02)
    assert (prompt(same), _decode(same, 64)) == (prompt(one), _decode(one, 64))
    assert split.expert_compute_extra == pytest.approx(9.0) and split.expert_extra == pytest.approx(1.0)
