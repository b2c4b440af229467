"""Memory tiers (SRAM, HBM, DDR): where weights and KV live, what reading them costs, what fits."""

from __future__ import annotations

from typing import Any

import pytest

from engine.catalog.entries import Catalog
from engine.catalog.specs import GIB, TIER_SOURCED_FIELDS, HardwareSpec
from engine.costmodel.iteration import decode_cost, iteration_cost, prefill_cost, roofline_point
from engine.costmodel.perf import Instance
from engine.costmodel.step import StepModel

NEW_CHIPS = {"groq-lpu": "Dataflow", "sn40l": "CGRA", "alveo-v80": "FPGA"}


def chip(catalog: Catalog, hw_id: str = "sn40l", **update: Any) -> HardwareSpec:
    """A catalog chip, changed and validated again."""
    data = catalog.chip(hw_id).model_dump(by_alias=True)
    data.update(update)
    return HardwareSpec.model_validate(data)


def inst(catalog: Catalog, model: str, hw: HardwareSpec, tp: int, **kw: Any) -> Instance:
    return Instance(
        model=catalog.models[model], hardware=hw, tp=tp, weights="fp8", kv="fp8", profile_name="default", **kw
    )


def test_weights_that_fit_in_sram_are_read_at_sram_bandwidth(catalog: Catalog) -> None:
    hw = chip(catalog, sram_gb=64.0)  # every socket's SRAM holds its share of an 8B model
    i = inst(catalog, "llama-3.1-8b", hw, tp=2)
    tiers = i.memory_tiers
    assert tiers is not None and tiers.weight_shares()["sram"] == 1.0
    eta = i.profile.eta_bandwidth
    assert tiers.weight_s_per_byte == pytest.approx(1.0 / (2 * hw.sram_tb_s * 1e12 * eta))  # type: ignore[operator]
    # a decode step's memory time is the weights over SRAM, far below the same chip read from HBM
    flat = inst(
        catalog, "llama-3.1-8b", chip(catalog, sram_gb=None, sram_tb_s=None, ddr_gb=None, ddr_tb_s=None), 2
    )
    fast, slow = decode_cost(i, 1, 1024), decode_cost(flat, 1, 1024)
    assert float(fast.memory_s) < float(slow.memory_s) / 20
    assert float(slow.memory_s) == pytest.approx(float(slow.bytes) / flat.bytes_per_s)


def test_weights_beyond_the_sram_spill_to_hbm(catalog: Catalog) -> None:
    hw = catalog.chip("sn40l")  # 520 MB (0.4843 GiB) of SRAM a socket
    i = inst(catalog, "llama-3.1-8b", hw, tp=16)
    tiers = i.memory_tiers
    assert tiers is not None
    shares = tiers.weight_shares()
    sram_bytes = 16 * 0.4843 * GIB * i.mem_fraction
    assert shares["sram"] == pytest.approx(sram_bytes / i.weight_bytes)
    assert 0 < shares["hbm"] < 1 and shares["ddr"] == 0 and sum(shares.values()) == pytest.approx(1.0)
    eta = i.profile.eta_bandwidth
    by_hand = shares["sram"] / (16 * 240e12 * eta) + shares["hbm"] / (16 * 2.0e12 * eta)
    assert tiers.weight_s_per_byte == pytest.approx(by_hand)
    # the KV starts where the weights end: in HBM, none of it in SRAM
    assert tiers.kv_tier_tokens(i.kv_bytes_held)["sram"] == 0


def test_kv_spills_from_sram_to_hbm_as_the_context_grows(catalog: Catalog) -> None:
    hw = chip(catalog, sram_gb=2.0)  # room in SRAM for the weights and some KV
    i = inst(catalog, "llama-3.1-8b", hw, tp=8)
    tiers = i.memory_tiers
    assert tiers is not None
    in_sram = tiers.kv_tier_tokens(i.kv_bytes_held)["sram"]
    assert in_sram > 0
    per_token = [
        float(decode_cost(i, 1, c + 1000).memory_s) - float(decode_cost(i, 1, c).memory_s)
        for c in (in_sram // 4, 2 * in_sram)
    ]
    # each context token read from HBM costs the ratio of the bandwidths more than from SRAM
    assert per_token[1] / per_token[0] == pytest.approx(hw.sram_tb_s / hw.memory_tb_s, rel=1e-6)  # type: ignore[operator]


def test_capacity_counts_every_tier(catalog: Catalog) -> None:
    hw = catalog.chip("sn40l")
    i = inst(catalog, "llama-3.1-405b", hw, tp=8)
    assert i.memory_bytes == pytest.approx(8 * (0.4843 + 64 + 1536) * GIB * 0.9)
    # 405B in fp8 (about 410 GB) does not fit in eight sockets' HBM alone, but does with their DDR
    hbm_only = inst(catalog, "llama-3.1-405b", chip(catalog, ddr_gb=None, ddr_tb_s=None), tp=4)
    assert not hbm_only.fits() and inst(catalog, "llama-3.1-405b", hw, tp=4).fits()
    shares = inst(catalog, "llama-3.1-405b", hw, tp=4).memory_tiers.weight_shares()  # type: ignore[union-attr]
    assert shares["ddr"] > 0  # and its weights beyond HBM are read at DDR speed


def test_the_step_model_prices_tiers_as_iteration_cost_does(catalog: Catalog) -> None:
    i = inst(catalog, "llama-3.1-8b", chip(catalog, sram_gb=2.0), tp=8)
    step = StepModel(i)
    for q, pairs, k, d, c in (
        (512, 512 * 256, 0, 4, 8000),
        (0, 0, 0, 32, 32 * 3000),
        (2048, 2048 * 1024, 0, 0, 0),
    ):
        want = iteration_cost(
            i,
            prefill_tokens=q,
            prefill_attn_pairs=pairs,
            prefill_cached_tokens=k,
            decode_requests=d,
            decode_context_tokens=c,
        )
        got = step.cost(q, pairs, k, d, c)
        assert got[0] == pytest.approx(float(want.time_s), rel=1e-9)
        assert got[2] == pytest.approx(float(want.bytes), rel=1e-9)
    # a run of decode steps: the per-step costs summed, to within the bend where the KV spills
    run = step.decode_run(16, 16 * 2000.0, 50)[0]
    by_step = sum(step.cost(0, 0, 0, 16, 16 * 2000.0 + 16 * s)[0] for s in range(50))
    assert run == pytest.approx(by_step, rel=1e-3)


def test_a_chip_without_tiers_is_unchanged(catalog: Catalog) -> None:
    h100 = catalog.chip("h100-sxm")
    assert (
        not h100.tiered
        and h100.total_memory_gb == h100.memory_gb
        and h100.peak_memory_tb_s == h100.memory_tb_s
    )
    assert Instance(model=catalog.models["llama-3.1-8b"], hardware=h100).memory_tiers is None


@pytest.mark.parametrize("hw_id", sorted(NEW_CHIPS))
def test_the_new_chips_load_with_their_class_and_sources(catalog: Catalog, hw_id: str) -> None:
    hw = catalog.chip(hw_id)
    assert hw.kind == NEW_CHIPS[hw_id]
    for field in TIER_SOURCED_FIELDS:
        if getattr(hw, field) is not None:
            assert len(hw.sources[field]) > 10, field
    assert all(len(v) > 10 for v in hw.sources.values())


@pytest.mark.parametrize(
    ("update", "message"),
    [
        ({"sram_gb": -1.0}, r"sram_gb\n.*greater than or equal to 0.001"),
        ({"sram_gb": 1e9}, r"sram_gb\n.*less than or equal to 100000"),
        ({"ddr_tb_s": -0.1}, r"ddr_tb_s\n.*greater than or equal to 0.001"),
        ({"reconfig_s": -1.0}, r"reconfig_s\n.*greater than or equal to 0"),
        ({"reconfig_s": 1e6}, r"reconfig_s\n.*less than or equal to 3600"),
        ({"clock_ghz": 50.0}, r"clock_ghz\n.*less than or equal to 10"),
        ({"sram_tb_s": None}, r"sram_gb, sram_tb_s: a memory tier needs both"),
        ({"sram_tb_s": 1.0}, r"sram_tb_s: the SRAM tier is read before HBM"),
        ({"ddr_tb_s": 5.0}, r"ddr_tb_s: the DDR tier is read after HBM"),
    ],
)
def test_bad_tier_fields_are_refused_by_name(catalog: Catalog, update: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        chip(catalog, **update)


def test_a_tier_needs_a_source(catalog: Catalog) -> None:
    data = catalog.chip("sn40l").model_dump(by_alias=True)
    data["sources"].pop("sram_tb_s")
    with pytest.raises(ValueError, match="missing for sram_tb_s"):
        HardwareSpec.model_validate(data)


def test_the_roofline_draws_a_roof_per_tier(catalog: Catalog) -> None:
    from engine.explain.roofline_chips import roofline

    model = catalog.models["llama-3.1-8b"]
    curves, points = roofline(
        model, [(catalog.chip("sn40l"), 16), (catalog.chip("h100-sxm"), 1)], "fp8", "fp8"
    )
    sn = curves[curves["chip"] == "sn40l ×16"]
    roofs = {r: rows for r, rows in sn.groupby(sn["roof"].fillna("main"))}
    assert set(roofs) == {"main", "sram", "ddr"}
    low = {r: float(rows["attainable_tflops"].iloc[0]) for r, rows in roofs.items()}
    sn40l = catalog.chip("sn40l")
    hbm = sn40l.memory_tb_s
    assert low["sram"] == pytest.approx(low["main"] * sn40l.sram_tb_s / hbm)
    assert (
        low["ddr"] == pytest.approx(low["main"] * sn40l.ddr_tb_s / hbm)
        and low["ddr"] < low["main"] < low["sram"]
    )
    assert curves[curves["chip"] == "h100-sxm ×1"]["roof"].isna().all()  # one memory, one roof
    # decode of the 8B model, mostly in SRAM, reaches above the HBM roof
    dec = points[(points["chip"] == "sn40l ×16") & (points["phase"] == "decode")]
    assert (dec["achieved_tflops"] > dec["attainable_tflops"]).all()


def test_weights_read_from_ddr_make_a_prefill_bandwidth_bound_past_the_ridge(catalog: Catalog) -> None:
    """The bound is the longer of compute and memory time: an SN40L's 70B BF16 weights stream from
    DDR, so a 512-token prefill (intensity past the ridge) waits on memory (found in review: it
    was labelled compute-bound from its intensity)."""
    sn = Instance(model=catalog.models["llama-3.1-70b"], hardware=catalog.chip("sn40l"), tp=1)
    cost = prefill_cost(sn, 512)
    pt = roofline_point(sn, "prefill", cost)
    assert pt.intensity_flops_per_byte > pt.ridge_flops_per_byte
    assert float(cost.memory_s) > 2 * float(cost.compute_s)
    assert pt.bound == "bandwidth"
    h100 = Instance(model=catalog.models["llama-3.1-70b"], hardware=catalog.chip("h100-sxm"), tp=4)
    assert roofline_point(h100, "prefill", prefill_cost(h100, 4096)).bound == "compute"


def test_pipelined_and_data_parallel_instances_read_their_tiers_too(catalog: Catalog) -> None:
    flat_hw = chip(catalog, sram_gb=None, sram_tb_s=None, ddr_gb=None, ddr_tb_s=None)
    for layout in ({"pp": 2}, {"dp": 2}):
        tiered = inst(catalog, "llama-3.1-8b", catalog.chip("sn40l"), tp=8, **layout)
        flat = inst(catalog, "llama-3.1-8b", flat_hw, tp=8, **layout)
        fast, slow = decode_cost(tiered, 16, 2048), decode_cost(flat, 16, 2048)
        assert float(fast.time_s) < float(slow.time_s)
        # pp 2: 82% of the weights in SRAM; dp 2: each rank holds a copy in its 8 sockets, 41%
        assert float(fast.memory_s) < float(slow.memory_s) * (0.5 if "pp" in layout else 0.8)


def test_fitting_layout_adds_pipeline_stages_where_no_tp_alone_holds_the_model() -> None:
    """A 70B model at fp8 on 230 MB LPUs: no TP up to 64 holds it, 64 x 9 does (as sram-decode-groq
    serves it: pipeline stages need not be a power of two, and 64 x 16 was 448 chips too many); a
    chip that holds it at some TP gets that TP and one stage (`fitting_tp`'s answer)."""
    from engine.explain.roofline_chips import fitting_layout, fitting_tp
    from engine.scenario.codec import load_preset
    from engine.scenario.resolve import scenario_catalog

    sc = load_preset("sram-decode-groq")
    cat = scenario_catalog(sc)
    model, lpu, h100 = cat.model(sc.model.id), cat.chip("groq-lpu"), cat.chip("h100-sxm")
    args = ("fp8", sc.kv_precision(), sc.deployment.mem_fraction, sc.activation_tokens(lpu))
    assert fitting_tp(model, lpu, *args) is None
    assert fitting_layout(model, lpu, *args) == (64, 9)
    lpu_pool = next(p for p in sc.deployment.pools if p.hardware == "groq-lpu")
    assert (lpu_pool.tp, lpu_pool.pp) == (64, 9)
    assert fitting_layout(model, h100, "bf16", "bf16") == (fitting_tp(model, h100, "bf16", "bf16"), 1)


def test_a_refusal_suggests_only_layouts_within_the_stage_limit() -> None:
    """512 LPUs refused for Llama-3.1-70B with the long-context preset's activations said 'tp 8 x
    pp 67' (found in review): stages are at most 16, so the suggestion widens the tensor split."""
    from engine.core.bounds import MAX_PP
    from engine.scenario.resolve import layouts_text

    said = "; the layouts that hold it: "
    assert layouts_text(12) == f"{said}tp 16, or tp 8 x pp 2"
    assert layouts_text(128) == f"{said}tp 8 x pp 16" and layouts_text(129) == f"{said}tp 16 x pp 9"
    assert layouts_text(533) == f"{said}tp 64 x pp 9"
    assert layouts_text(64 * MAX_PP + 1) == ""  # past the largest instance: no layout to suggest
