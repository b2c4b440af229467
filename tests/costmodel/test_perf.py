"""The iteration cost model: numbers a reader can check by hand, and physical sanity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.catalog.entries import Catalog
from engine.catalog.specs import HardwareSpec
from engine.costmodel.iteration import (
    decode_cost,
    exposed_transfer_s,
    exposed_transfer_time,
    iteration_cost,
    kv_transfer_s,
    kv_transfer_time,
    prefill_cost,
    roofline_point,
)
from engine.costmodel.perf import Instance, Speculation, roof
from engine.costmodel.step import StepModel, decode_steps_time, decode_steps_within


def test_batch1_decode_70b_on_4xh100_is_weight_bandwidth_bound(h100_70b_tp4: Instance) -> None:
    inst = h100_70b_tp4
    cost = decode_cost(inst, 1, 1024)
    assert not bool(cost.compute_bound)
    eta = inst.profile.eta_bandwidth
    by_hand = inst.weight_bytes / (4 * 3.35e12 * eta)
    # memory part within 3% of weights / (4 x 3.35 TB/s x eta); KV and output head are small
    assert float(cost.memory_s) == pytest.approx(by_hand, rel=0.03)
    assert float(cost.time_s) >= by_hand
    assert float(cost.time_s) < by_hand * 1.3


def test_4k_prefill_is_compute_bound(h100_70b_tp4: Instance) -> None:
    cost = prefill_cost(h100_70b_tp4, 4096)
    assert bool(cost.compute_bound)
    assert float(cost.compute_s) > 5 * float(cost.memory_s)
    pt = roofline_point(h100_70b_tp4, "prefill", cost)
    assert pt.bound == "compute" and pt.intensity_flops_per_byte > pt.ridge_flops_per_byte


def test_linear_flops_linear_attention_quadratic(h100_70b_tp4: Instance) -> None:
    m = h100_70b_tp4.model
    lens = np.array([1024, 2048, 4096, 8192], dtype=float)
    cost = prefill_cost(h100_70b_tp4, lens)
    linear = 2 * m.matmul_params() * lens
    attn = np.asarray(cost.flops) - linear
    assert np.allclose(linear[1:] / linear[:-1], 2.0)
    assert np.allclose(attn[1:] / attn[:-1], 4.0)
    # attention FLOPs by hand for one 4096-token prompt: 4 L n_q h * q^2 / 2
    assert attn[2] == pytest.approx(4 * 80 * 64 * 128 * 4096**2 / 2)


def test_more_bandwidth_never_slower_at_decode(catalog: Catalog) -> None:
    m = catalog.model("llama-3.1-70b")
    h100 = catalog.chip("h100-sxm")
    faster = h100.model_copy(update={"memory_tb_s": 4.8})
    for batch in (1, 16, 128):
        slow = decode_cost(Instance(model=m, hardware=h100, tp=4), batch, 2048)
        fast = decode_cost(Instance(model=m, hardware=faster, tp=4), batch, 2048)
        assert float(fast.time_s) <= float(slow.time_s)


def test_h20_matches_decode_not_prefill(catalog: Catalog) -> None:
    m = catalog.model("llama-3.1-70b")
    # the same (assumed) efficiency on both chips: a comparison of the hardware alone
    h100 = Instance(model=m, hardware=catalog.chip("h100-sxm"), tp=4, profile_name="default")
    h20 = Instance(model=m, hardware=catalog.chip("h20"), tp=4, profile_name="default")
    assert float(decode_cost(h20, 8, 2048).time_s) <= float(decode_cost(h100, 8, 2048).time_s) * 1.1
    assert float(prefill_cost(h20, 4096).time_s) > 4 * float(prefill_cost(h100, 4096).time_s)


@pytest.mark.parametrize("hw_id", ["h100-sxm", "h200", "b200", "mi300x", "a100-80g"])
def test_faster_chip_never_slower(catalog: Catalog, hw_id: str) -> None:
    m = catalog.model("llama-3.1-8b")
    chip = catalog.chip(hw_id)
    better = chip.model_copy(
        update={"tflops": {k: v * 2 for k, v in chip.tflops.items()}, "memory_tb_s": chip.memory_tb_s * 2}
    )
    for q, d, c in [(2048, 0, 0), (0, 32, 32 * 1024), (512, 16, 16 * 2048)]:
        a = iteration_cost(
            Instance(model=m, hardware=chip),
            prefill_tokens=q,
            prefill_attn_pairs=q * q / 2,
            decode_requests=d,
            decode_context_tokens=c,
        )
        b = iteration_cost(
            Instance(model=m, hardware=better),
            prefill_tokens=q,
            prefill_attn_pairs=q * q / 2,
            decode_requests=d,
            decode_context_tokens=c,
        )
        assert float(b.time_s) <= float(a.time_s)


def test_tp_allreduce_cost(catalog: Catalog) -> None:
    m = catalog.model("llama-3.1-70b")
    hw = catalog.chip("h100-sxm")
    one = Instance(model=m, hardware=hw, tp=1, weights="fp8")
    four = Instance(model=m, hardware=hw, tp=4, weights="fp8")
    assert float(one.comm_time(100)) == 0.0
    # two all-reduces per layer: 160 x (ring term + latency)
    msg = 100 * 8192 * 2
    ring = 2 * 3 / 4 * msg / (450e9)
    assert float(four.comm_time(100)) == pytest.approx(160 * (ring + hw.allreduce_latency_us * 1e-6))


def test_kv_capacity(catalog: Catalog) -> None:
    m = catalog.model("llama-3.1-70b")
    inst = Instance(model=m, hardware=catalog.chip("h100-sxm"), tp=4, mem_fraction=0.9)
    by_hand = (4 * 80 * 2**30 * 0.9 - m.weight_bytes("bf16")) // 327_680  # "80 GB" of HBM is 80 GiB
    assert inst.kv_capacity_tokens == by_hand
    # vLLM keeps room for one forward pass of its token budget: per token and chip, the residual
    # and MLP input (2 x 8,192) beside the gate-up output and its activated half (3 x 28,672 / 4), bf16
    act = Instance(model=m, hardware=catalog.chip("h100-sxm"), tp=4, mem_fraction=0.9, activation_tokens=8192)
    reserve = 4 * 8192 * 2 * (2 * 8192 + 3 * 28_672 / 4)
    assert act.activation_bytes == reserve
    assert act.kv_capacity_tokens == (4 * 80 * 2**30 * 0.9 - m.weight_bytes("bf16") - reserve) // 327_680
    assert Instance(model=m, hardware=catalog.chip("h100-sxm"), tp=1).kv_capacity_tokens == 0
    # MLPerf's choice: Llama-2-70B fp8 runs on one MI300X, but one H100 has KV room for only about
    # 24 of its ~2k-token requests, so H100 submissions use tp=2 and batch in the hundreds.
    l2 = catalog.model("llama-2-70b")
    mi300x = Instance(model=l2, hardware=catalog.chip("mi300x"), weights="fp8", kv="fp8")
    h100_1 = Instance(model=l2, hardware=catalog.chip("h100-sxm"), weights="fp8", kv="fp8")
    h100_2 = Instance(model=l2, hardware=catalog.chip("h100-sxm"), tp=2, weights="fp8", kv="fp8")
    assert mi300x.kv_capacity_tokens > 256 * 2048
    assert h100_1.kv_capacity_tokens < 32 * 2048
    assert h100_2.kv_capacity_tokens > 128 * 2048


def test_ranks_keep_whole_kv_heads(catalog: Catalog) -> None:
    """With more tensor-parallel ranks than KV heads each rank keeps a whole head, replicated (vLLM,
    SGLang, TensorRT-LLM): Qwen3-235B's 4 KV heads at TP8 are held twice, so it holds half the tokens
    a split would and a decode step reads twice the KV bytes (a physics review found the split)."""
    q = catalog.model("qwen3-235b-a22b")
    h100 = catalog.chip("h100-sxm")
    tp4, tp8 = (Instance(model=q, hardware=h100, tp=t, weights="fp8", kv="fp8") for t in (4, 8))
    assert (tp4.kv_copies, tp8.kv_copies) == (1.0, 2.0)
    assert tp8.kv_bytes_held == 2 * tp8.kv_bytes_per_token
    free = 8 * 80 * 2**30 * tp8.mem_fraction - tp8.weight_bytes - tp8.activation_bytes
    assert tp8.kv_capacity_tokens == pytest.approx(free / (2 * 2 * 94 * 4 * 128), abs=1)  # by hand: 2 copies
    # a decode step reads each copy its ranks keep: 128 x 16k tokens of KV at twice 94 KB a token
    weights_only = float(decode_cost(tp8, 128, 1).memory_s)
    kv_s = float(decode_cost(tp8, 128, 16_384).memory_s) - weights_only
    by_hand = 128 * 16_383 * 2 * 96_256 / (8 * 3.35e12 * tp8.profile.eta_bandwidth)
    assert kv_s == pytest.approx(by_hand, rel=0.02)
    llama = catalog.model("llama-3.1-70b")  # 8 KV heads: split at TP8, twice at TP16
    assert Instance(model=llama, hardware=h100, tp=8).kv_copies == 1.0
    assert Instance(model=llama, hardware=h100, tp=16).kv_copies == 2.0
    assert (
        Instance(model=catalog.model("deepseek-v3"), hardware=h100, tp=8, weights="fp8").kv_copies == 8.0
    )  # MLA
    groq = Instance(model=llama, hardware=catalog.chip("groq-lpu"), tp=64, pp=9, weights="fp8")
    assert groq.kv_copies == 1.0  # its compiler places the cache


def test_kv_transfer_time_and_overlap() -> None:
    t = float(kv_transfer_time(327_680, 4096, link_gb_s=50.0, latency_s=0.0))
    assert t == pytest.approx(327_680 * 4096 / 50e9)
    assert float(exposed_transfer_time(t, prefill_s=1.0, layers=80, overlap=False)) == t
    hidden = float(exposed_transfer_time(t, prefill_s=1.0, layers=80, overlap=True))
    assert hidden == pytest.approx(t / 80)
    # the link's latency is not wire time a layer-by-layer transfer can hide: the last layer pays it
    late = float(kv_transfer_time(327_680, 4096, link_gb_s=50.0, latency_s=0.05))
    exposed = float(exposed_transfer_time(late, prefill_s=1.0, layers=80, overlap=True, latency_s=0.05))
    assert exposed == pytest.approx(0.05 + t / 80)


@given(
    kv_bytes=st.integers(1, 2_000_000),
    tokens=st.floats(0.0, 1e6),
    link_gb_s=st.floats(0.1, 1e4),
    latency_s=st.floats(0.0, 1e-3),
    prefill_s=st.floats(0.0, 100.0),
    layers=st.integers(1, 200),
    overlap=st.booleans(),
)
def test_the_float_transfer_times_equal_the_generic_ones_bit_for_bit(
    kv_bytes: int,
    tokens: float,
    link_gb_s: float,
    latency_s: float,
    prefill_s: float,
    layers: int,
    overlap: bool,
) -> None:
    """The simulator's hand-offs use the typed float functions (compiled: C doubles)."""
    full = kv_transfer_s(kv_bytes, tokens, link_gb_s, latency_s)
    assert full == kv_transfer_time(kv_bytes, tokens, link_gb_s, latency_s) and type(full) is float
    exposed = exposed_transfer_s(full, prefill_s, layers, overlap, latency_s)
    assert exposed == exposed_transfer_time(full, prefill_s, layers, overlap, latency_s)
    assert type(exposed) is float and exposed >= latency_s * (1 - 1e-12)


@given(batch=st.integers(1, 512), ctx=st.integers(0, 200_000), steps=st.integers(0, 300))
def test_decode_steps_closed_form_equals_sum(
    h100_70b_tp4: Instance, batch: int, ctx: int, steps: int
) -> None:
    inst = h100_70b_tp4
    csum = batch * ctx
    brute = sum(
        float(iteration_cost(inst, decode_requests=batch, decode_context_tokens=csum + i * batch).time_s)
        for i in range(steps)
    )
    assert decode_steps_time(inst, batch, csum, steps) == pytest.approx(brute, rel=1e-9, abs=1e-12)


def test_decode_steps_within_budget(h100_70b_tp4: Instance) -> None:
    inst = h100_70b_tp4
    n = decode_steps_within(inst, 16, 16 * 1000, 1.0, cap=10_000)
    assert decode_steps_time(inst, 16, 16 * 1000, n) <= 1.0 < decode_steps_time(inst, 16, 16 * 1000, n + 1)


def test_moe_decode_reads_only_touched_experts(catalog: Catalog) -> None:
    m = catalog.model("mixtral-8x7b")
    inst = Instance(model=m, hardware=catalog.chip("h100-sxm"), tp=2)
    small = float(decode_cost(inst, 1, 1024).memory_s)
    big = float(decode_cost(inst, 64, 1024).memory_s)
    assert small < 0.5 * big


@given(
    q=st.integers(0, 20000),
    k=st.integers(0, 50000),
    d=st.integers(0, 512),
    c=st.integers(0, 100000),
    model_id=st.sampled_from(["llama-3.1-70b", "mixtral-8x7b", "deepseek-v3"]),
    tp=st.sampled_from([1, 2, 8]),
    eta_experts=st.sampled_from([1.0, 0.31]),
)
def test_step_model_equals_iteration_cost(
    catalog: Catalog, q: int, k: int, d: int, c: int, model_id: str, tp: int, eta_experts: float
) -> None:
    inst = Instance(
        model=catalog.model(model_id),
        hardware=_with_experts(catalog, "h200", eta_experts),
        tp=tp,
        weights="fp8",
    )
    assert_step_matches_iteration(inst, q, k, d, c)


def assert_step_matches_iteration(inst: Instance, q: int, k: int, d: int, c: int) -> None:
    """The step model's cost of one iteration (q prompt tokens after k cached, d decodes of c tokens
    of context each) equals `iteration_cost`'s: time, FLOPs and bytes."""
    pairs = q * (k + q / 2)
    ref = iteration_cost(
        inst,
        prefill_tokens=q,
        prefill_attn_pairs=pairs,
        prefill_cached_tokens=k,
        decode_requests=d,
        decode_context_tokens=c * d,
    )
    t, flops, nbytes = StepModel(inst).cost(q, pairs, k, d, c * d)
    assert t == pytest.approx(float(ref.time_s), rel=1e-9)
    assert flops == pytest.approx(float(ref.flops), rel=1e-9)
    assert nbytes == pytest.approx(float(ref.bytes), rel=1e-9)


def _with_experts(catalog: Catalog, chip: str, eta_experts: float) -> HardwareSpec:
    """`chip` whose default profile runs MoE experts at `eta_experts` of its dense rates."""
    hw = catalog.chip(chip)
    prof = hw.profile(None).model_copy(update={"eta_experts": eta_experts})
    return hw.model_copy(update={"profiles": {**hw.profiles, "x": prof}, "default_profile": "x"})


def test_slow_experts_stretch_only_the_experts_work(catalog: Catalog) -> None:
    """eta_experts divides the routed experts' compute and memory times, nothing else: a dense
    model is unchanged, and a MoE decode step's memory time grows by exactly the touched experts'
    bytes read at the slower rate (FLOPs and bytes stay what the hardware does)."""
    dense = catalog.model("llama-3.1-70b")
    for e in (1.0, 0.31):
        a = iteration_cost(Instance(model=dense, hardware=catalog.chip("h200"), tp=4), decode_requests=8,
                           decode_context_tokens=8000)  # fmt: skip
        b = iteration_cost(Instance(model=dense, hardware=_with_experts(catalog, "h200", e), tp=4),
                           decode_requests=8, decode_context_tokens=8000)  # fmt: skip
        assert float(a.time_s) == float(b.time_s)
    m = catalog.model("deepseek-v3")
    fast = Instance(model=m, hardware=_with_experts(catalog, "h200", 1.0), tp=8, weights="fp8")
    slow = Instance(model=m, hardware=_with_experts(catalog, "h200", 0.25), tp=8, weights="fp8")
    a = iteration_cost(fast, decode_requests=64, decode_context_tokens=64 * 2000)
    b = iteration_cost(slow, decode_requests=64, decode_context_tokens=64 * 2000)
    assert float(b.flops) == float(a.flops) and float(b.bytes) == float(a.bytes)
    read = m.moe_layers() * m.expected_experts_touched(64) * m.expert_params() * 1.0  # fp8: 1 byte
    assert float(b.memory_s) - float(a.memory_s) == pytest.approx(3.0 * read / fast.bytes_per_s, rel=1e-9)
    routed = 2.0 * m.moe_layers() * m.moe.experts_per_token * m.expert_params() * 64
    per_flop = 1.0 / fast.flops_per_s - fast.matmul_saving_s_per_flop
    assert float(b.compute_s) - float(a.compute_s) == pytest.approx(3.0 * routed * per_flop, rel=1e-9)
    assert float(b.time_s) > float(a.time_s)
    # expert parallelism: the experts' phase of a pass takes 1 / eta_experts as long
    ep_fast = Instance(model=m, hardware=_with_experts(catalog, "h200", 1.0), tp=1, dp=8, ep=8, weights="fp8")
    ep_slow = Instance(
        model=m, hardware=_with_experts(catalog, "h200", 0.25), tp=1, dp=8, ep=8, weights="fp8"
    )
    assert (
        StepModel(ep_slow).cost(0, 0, 0, 256, 256 * 2000)[0]
        > StepModel(ep_fast).cost(0, 0, 0, 256, 256 * 2000)[0]
    )


@pytest.mark.parametrize("model_id,eta_experts", [("deepseek-v3", 0.31), ("mixtral-8x7b", 0.5)])
def test_decode_run_totals_with_slow_experts(catalog: Catalog, model_id: str, eta_experts: float) -> None:
    inst = Instance(model=catalog.model(model_id), hardware=_with_experts(catalog, "h200", eta_experts), tp=8,
                    weights="fp8")  # fmt: skip
    assert_decode_run_sums_its_steps(inst)


def assert_decode_run_sums_its_steps(inst: Instance) -> None:
    """A run of 40 decode steps of 32 requests (900 tokens of context each to start) costs what its
    steps cost one by one in `iteration_cost`: time, FLOPs and bytes."""
    t, flops, nbytes = StepModel(inst).decode_run(32, 32 * 900, 40)
    ref = [
        iteration_cost(inst, decode_requests=32, decode_context_tokens=32 * 900 + 32 * i) for i in range(40)
    ]
    assert t == pytest.approx(sum(float(r.time_s) for r in ref), rel=1e-9)
    assert flops == pytest.approx(sum(float(r.flops) for r in ref), rel=1e-9)
    assert nbytes == pytest.approx(sum(float(r.bytes) for r in ref), rel=1e-9)


def test_decode_run_totals(h100_70b_tp4: Instance) -> None:
    sm = StepModel(h100_70b_tp4)
    t, flops, nbytes = sm.decode_run(8, 8 * 500, 50)
    ref = [
        iteration_cost(h100_70b_tp4, decode_requests=8, decode_context_tokens=8 * 500 + 8 * i)
        for i in range(50)
    ]
    assert flops == pytest.approx(sum(float(r.flops) for r in ref))
    assert nbytes == pytest.approx(sum(float(r.bytes) for r in ref))
    assert t == pytest.approx(sum(float(r.time_s) for r in ref))


def test_the_fixed_overhead_is_per_layer(catalog: Catalog) -> None:
    """A profile's overhead is stated for 80 layers: Llama-3.1-8B (32) pays 0.4 of it, 405B (126)
    1.575 times, in the iteration cost and in the simulator's fast path alike."""
    from engine.catalog.specs import CalibrationProfile

    prof = CalibrationProfile(eta_compute=0.5, eta_bandwidth=0.7, overhead_ms=8.0, source="test profile")
    chip = catalog.chip("h100-sxm").model_copy(update={"profiles": {"t": prof}, "default_profile": "t"})
    for model, tp, expected in (
        ("llama-3.1-8b", 1, 3.2),
        ("llama-3.1-70b", 4, 8.0),
        ("llama-3.1-405b", 8, 12.6),
    ):
        inst = Instance(model=catalog.model(model), hardware=chip, tp=tp, weights="fp8")
        assert inst.overhead_s * 1000 == pytest.approx(expected)
        bare = Instance(model=catalog.model(model), hardware=chip.model_copy(update={"profiles": {
            "t": prof.model_copy(update={"overhead_ms": 0.0})}}), tp=tp, weights="fp8")  # fmt: skip
        with_oh = float(iteration_cost(inst, decode_requests=4, decode_context_tokens=4096).time_s)
        without = float(iteration_cost(bare, decode_requests=4, decode_context_tokens=4096).time_s)
        assert (with_oh - without) * 1000 == pytest.approx(expected)
        assert StepModel(inst).cost(0.0, 0.0, 0.0, 4.0, 4096.0)[0] == pytest.approx(with_oh)


def test_eager_mode_adds_a_launch_cost_per_layer(catalog: Catalog) -> None:
    """Without CUDA/HIP graphs every layer of every iteration pays EAGER_LAYER_MS, in the cost
    model and the simulator's fast path, on top of the profile's own overhead."""
    from engine.catalog.specs import EAGER_LAYER_MS

    model = catalog.model("llama-3.1-405b")
    graphed = Instance(model=model, hardware=catalog.chip("mi300x"), tp=8, weights="fp8")
    eager = Instance(model=model, hardware=catalog.chip("mi300x"), tp=8, weights="fp8", eager=True)
    extra = EAGER_LAYER_MS * model.layers / 1000.0
    assert eager.overhead_s - graphed.overhead_s == pytest.approx(extra)
    for inst in (graphed, eager):
        t = float(iteration_cost(inst, decode_requests=16, decode_context_tokens=16 * 2048).time_s)
        assert StepModel(inst).cost(0.0, 0.0, 0.0, 16.0, 16 * 2048.0)[0] == pytest.approx(t)
    slow = float(iteration_cost(eager, decode_requests=16, decode_context_tokens=16 * 2048).time_s)
    fast = float(iteration_cost(graphed, decode_requests=16, decode_context_tokens=16 * 2048).time_s)
    assert slow - fast == pytest.approx(extra)


def test_the_roofline_preview_prices_what_the_run_will(catalog: Catalog) -> None:
    """The Hardware page's roofline and its tp guess build the instance the run builds: Meta's FP8
    405B with bf16 attention, eager, with the stack's activation reserve."""
    from engine.explain.roofline_chips import fitting_tp, roofline
    from engine.scenario.codec import apply_overrides, load_preset
    from engine.scenario.resolve import resolve

    over = {
        "model.id": "llama-3.1-405b", "model.weights": "fp8", "model.attention_weights": "bf16",
        "deployment.eager": True, "deployment.pools[0].tp": 8, "deployment.pools[0].pp": 1,
    }  # fmt: skip
    sc = apply_overrides(load_preset("pipeline-llama-405b"), over)
    inst = resolve(sc).pools[0].instance
    from engine.calibration import trust

    chip = trust.chip_for_stack(catalog.chip("h100-sxm"), sc.deployment.stack, catalog)  # as the page does
    _, points = roofline(
        inst.model, [(chip, 8)], "fp8", sc.kv_precision(), sc.deployment.mem_fraction,
        activation_tokens=sc.activation_tokens(), attention_weights="bf16", eager=True,
    )  # fmt: skip
    step = points[points["label"] == "decode batch 8, 4096 context"]["time_ms"]
    assert float(step.iloc[0]) == pytest.approx(float(decode_cost(inst, 8, 4096).time_s) * 1e3)
    # at 62% of HBM the bf16 attention no longer fits eight H100s: the guess says sixteen, as resolve would
    assert fitting_tp(inst.model, chip, "fp8", sc.kv_precision(), 0.62, sc.activation_tokens(), "bf16") == 16
    assert fitting_tp(inst.model, chip, "fp8", sc.kv_precision(), 0.62, sc.activation_tokens()) == 8


def test_low_precision_speeds_up_the_matmuls_only(catalog: Catalog) -> None:
    """eta_F is a fraction of the BF16 peak; FP8 and FP4 weights shorten only the GEMMs, by the
    kernels' measured speed-up, so a stack's FP8 compute reaches 1 / (2 (1/eta - beta)) of the
    FP8 peak, less than eta, and the simulator's fast path and the step model agree with it."""
    from engine.catalog.specs import CalibrationProfile
    from engine.costmodel.perf import MATMUL_FRACTION_BF16, MATMUL_FRACTION_LOW

    eta = 0.55
    prof = CalibrationProfile(eta_compute=eta, eta_bandwidth=0.7, overhead_ms=0.0, source="test profile")
    h100 = catalog.chip("h100-sxm").model_copy(update={"profiles": {"t": prof}, "default_profile": "t"})
    model = catalog.model("llama-3.1-70b")
    bf16 = Instance(model=model, hardware=h100, tp=2, weights="bf16")
    fp8 = Instance(model=model, hardware=h100, tp=2, weights="fp8")
    int4 = Instance(model=model, hardware=h100, tp=2, weights="int4")  # W4A16: BF16 matmuls
    assert bf16.matmul_saving_s_per_flop == 0.0 == int4.matmul_saving_s_per_flop
    assert bf16.matmul_flops_per_s == bf16.flops_per_s == 2 * h100.tflops["bf16"] * 1e12 * eta
    # an H100 lists 1,979 and 989 TFLOP/s: the nominal 2x, rounded, so the FP8 path's peak over 2
    speedup = 2.0 * MATMUL_FRACTION_LOW / MATMUL_FRACTION_BF16
    beta = (1.0 - 1.0 / speedup) / MATMUL_FRACTION_BF16
    peak16 = h100.tflops["fp8"] * 1e12 / 2.0
    assert fp8.matmul_flops_per_s == pytest.approx(2 * peak16 / (1.0 / eta - beta))
    frac = fp8.matmul_flops_per_s / (2 * h100.tflops["fp8"] * 1e12)
    assert 0.35 < frac < eta  # FP8 is faster than BF16 but reaches less of its own peak
    # a 4K prefill (compute-bound): the matmuls at the FP8 rate, attention at the BF16 one
    pre = prefill_cost(fp8, 4096)
    lin = 2.0 * model.matmul_params() * 4096
    att = model.attention_flops_per_pair() * 4096 * 4096 / 2.0
    assert float(pre.compute_s) == pytest.approx(lin / fp8.matmul_flops_per_s + att / fp8.flops_per_s)
    assert float(pre.saving_s) < 0.0 and float(prefill_cost(bf16, 4096).saving_s) == 0.0
    assert float(prefill_cost(bf16, 4096).compute_s) / float(pre.compute_s) < speedup
    for q, d, c in ((4096.0, 0.0, 0.0), (512.0, 64.0, 64 * 3000.0), (0.0, 256.0, 256 * 2000.0)):
        t = float(
            iteration_cost(fp8, prefill_tokens=q, prefill_attn_pairs=q * q / 2, decode_requests=d,
                           decode_context_tokens=c).time_s
        )  # fmt: skip
        assert StepModel(fp8).cost(q, q * q / 2, 0.0, d, c)[0] == pytest.approx(t)
    run = StepModel(fp8).decode_run(256, 256 * 2000.0, 50)[0]
    steps = sum(float(decode_cost(fp8, 256, 2000.0 + i).time_s) for i in range(50))
    assert run == pytest.approx(steps)
    # the speed-up is the chip's own: an FP8 path no faster than BF16 (Gaudi 3) saves nothing,
    # B300's FP4 (5.8 times its BF16 peak) saves more than B200's (4 times)
    gaudi = catalog.chip("gaudi3").model_copy(update={"profiles": {"t": prof}, "default_profile": "t"})
    assert gaudi.tflops["fp8"] == gaudi.tflops["bf16"]
    g8 = Instance(model=model, hardware=gaudi, tp=2, weights="fp8")
    assert g8.matmul_saving_s_per_flop == 0.0
    assert float(prefill_cost(g8, 4096).compute_s) == float(
        prefill_cost(Instance(model=model, hardware=gaudi, tp=2, weights="bf16"), 4096).compute_s
    )
    fp4 = {c: Instance(model=model, hardware=catalog.chip(c).model_copy(update={
        "profiles": {"t": prof}, "default_profile": "t"}), tp=2, weights="fp4") for c in ("b200", "b300")}  # fmt: skip
    assert fp4["b300"].flops_per_s == fp4["b200"].flops_per_s  # the same BF16 peak
    assert fp4["b300"].matmul_flops_per_s > 1.1 * fp4["b200"].matmul_flops_per_s
    # whatever eta_F a user states, the matmuls never run faster than BF16 at that eta_F allows
    # scaled by the kernels' speed-up, and never at or above the path's peak
    for eta_f in (0.5, MATMUL_FRACTION_BF16, 0.9, 1.0):
        p = prof.model_copy(update={"eta_compute": eta_f})
        chip = catalog.chip("b300").model_copy(update={"profiles": {"t": p}, "default_profile": "t"})
        inst = Instance(model=model, hardware=chip, tp=1, weights="fp4")
        g = chip.tflops["fp4"] / chip.tflops["bf16"] * MATMUL_FRACTION_LOW / MATMUL_FRACTION_BF16
        assert inst.matmul_flops_per_s <= inst.flops_per_s * g * (1 + 1e-9)
        assert inst.matmul_flops_per_s < chip.tflops["fp4"] * 1e12


def test_the_general_path_splits_low_precision_compute_as_the_plain_one(catalog: Catalog) -> None:
    """An instance timed by the step model (speculation with nothing drafted, here) reports the
    same compute time, saving and communication as the plain roofline for FP8 weights: the time
    the matmuls save is not misread as communication."""
    from engine.costmodel.perf import Speculation

    model, h100 = catalog.model("llama-3.1-8b"), catalog.chip("h100-sxm")
    plain = Instance(model=model, hardware=h100, tp=1, weights="fp8")
    general = Instance(model=model, hardware=h100, tp=1, weights="fp8", speculation=Speculation(0, 0.8))
    assert plain.plain and not general.plain
    q = 100_000.0
    a = iteration_cost(plain, prefill_tokens=q, prefill_attn_pairs=q * q / 2)
    b = iteration_cost(general, prefill_tokens=q, prefill_attn_pairs=q * q / 2)
    assert float(b.time_s) == pytest.approx(float(a.time_s))
    assert float(b.compute_s) == pytest.approx(float(a.compute_s))
    assert float(b.saving_s) == pytest.approx(float(a.saving_s)) and float(a.saving_s) < 0.0
    assert float(b.comm_s) == pytest.approx(0.0, abs=1e-9) == float(a.comm_s)


@pytest.mark.parametrize(
    "layout", [dict(tp=4, pp=2), dict(tp=1, dp=8, ep=8), dict(tp=8, speculation=Speculation(2, 0.8, 1 / 61))]
)
def test_slow_experts_show_as_compute_and_memory_not_as_links(catalog: Catalog, layout: dict) -> None:
    """The step model's breakdown of an iteration: what the slower experts add is compute and
    memory time; the links' and hand-offs' share is what it is with the experts at dense speed."""
    m = catalog.model("deepseek-v3")
    fast = Instance(model=m, hardware=_with_experts(catalog, "h200", 1.0), weights="fp8", **layout)
    slow = Instance(model=m, hardware=_with_experts(catalog, "h200", 0.31), weights="fp8", **layout)
    for kw in (dict(decode_requests=64, decode_context_tokens=64 * 2000),
               dict(prefill_tokens=4096, prefill_attn_pairs=4096 * 2048, decode_requests=32,
                    decode_context_tokens=32 * 2000)):  # fmt: skip
        a, b = iteration_cost(fast, **kw), iteration_cost(slow, **kw)
        assert float(b.time_s) > float(a.time_s)
        assert float(b.comm_s) == pytest.approx(float(a.comm_s), rel=1e-9, abs=1e-12)
        assert float(b.flops) == float(a.flops) and float(b.bytes) == float(a.bytes)
        # the extra time is all in compute and memory (their roof grows by exactly that much)
        grown = float(roof(b.compute_s, b.memory_s)) - float(roof(a.compute_s, a.memory_s))
        assert grown == pytest.approx(float(b.time_s) - float(a.time_s), rel=1e-9)


def test_a_tp_group_over_two_machines_pays_the_scale_out_latency(catalog: Catalog) -> None:
    """TP16 of H20s spans two 8-GPU machines: each all-reduce crosses the NICs, a ring per NIC (the
    machine's eight side by side, capped by NVLink) and at least `SCALE_OUT_LATENCY_US` (issue 30:
    Tencent's TP16 decodes a token in 30 ms at one client); inside one machine the chip's own
    latency and link hold."""
    from engine.costmodel.perf import SCALE_OUT_LATENCY_US

    hw, m = catalog.chip("h20"), catalog.model("deepseek-v3")
    eight = Instance(model=m, hardware=hw, tp=8, weights="fp8")
    sixteen = Instance(model=m, hardware=hw, tp=16, weights="fp8")
    assert eight.link_latency_s() == pytest.approx(hw.allreduce_latency_us * 1e-6)
    assert sixteen.link_latency_s() == pytest.approx(
        max(hw.allreduce_latency_us, SCALE_OUT_LATENCY_US) * 1e-6
    )
    assert eight.allreduce_bytes_per_s() == pytest.approx(hw.scale_up_gb_s / 2 * 1e9)
    nics = min(hw.scale_out_gb_s * hw.scale_up_domain, hw.scale_up_gb_s / 2)
    assert hw.scale_out_gb_s < nics < hw.scale_up_gb_s  # 8 x 50 = 400 GB/s: more than one NIC, under NVLink
    assert sixteen.allreduce_bytes_per_s() == pytest.approx(nics * 1e9)
    ring = 2 * 15 / 16 * m.hidden * 2 / (nics * 1e9)
    assert float(sixteen.comm_time(1)) == pytest.approx(2 * m.layers * (ring + sixteen.link_latency_s()))


def test_an_all_reduce_over_more_machines_waits_on_a_deeper_tree(catalog: Catalog) -> None:
    """A TP64 of H100s over eight machines read each all-reduce as fast as a TP16 over two, so its batch-1
    decode came out faster than TP16's (9.0 against 10.4 ms: a hardware strategist's review). Its network
    latency counts the hops of a tree over the machines, log2 of their count (NCCL's tuning model); a
    pipeline's send or an all-to-all's exchange crosses once."""
    from engine.costmodel.perf import SCALE_OUT_LATENCY_US, scale_out_hops

    hw, m = catalog.chip("h100-sxm"), catalog.model("llama-3.1-70b")
    assert [scale_out_hops(hw, n) for n in (16, 24, 32, 56, 64, 128)] == [1, 1, 2, 2, 3, 4]
    by_tp = {tp: Instance(model=m, hardware=hw, tp=tp, weights="fp8") for tp in (8, 16, 32, 64)}
    assert by_tp[64].link_latency_s(reduce=True) == pytest.approx(3 * SCALE_OUT_LATENCY_US * 1e-6)
    assert by_tp[64].link_latency_s() == pytest.approx(SCALE_OUT_LATENCY_US * 1e-6)  # one crossing
    assert by_tp[16].link_latency_s(reduce=True) == by_tp[16].link_latency_s()  # two machines: as fitted
    steps = [float(decode_cost(inst, 1, 1024).time_s) for inst in by_tp.values()]
    assert steps == sorted(steps)  # past one machine, a wider group decodes a lone request slower


def test_a_step_the_stacks_fixed_cost_sets_reads_fixed_cost(catalog: Catalog) -> None:
    """Found in review: a 910B's batch-1 decode of Qwen3-8B (47 ms, 35 of them the stack's fixed
    cost, 12 reading weights) read 'bandwidth'; an H100 decoding a 70B model at tp 2 reads it."""
    from engine.calibration import trust
    from engine.costmodel.roofline import FIXED, decode_table

    def table(chip: str, model: str, tp: int) -> pd.DataFrame:
        hw, name, _ = trust.effective_chip(catalog.chip(chip), "vllm", catalog)
        return decode_table(
            Instance(model=catalog.model(model), hardware=hw, tp=tp, profile_name=name), [1], [1024]
        )

    row = table("ascend-910b", "qwen3-8b", 1).iloc[0]
    assert row["bound"] == FIXED and row["time_ms"] > 2 * max(row["compute_ms"], row["memory_ms"])
    assert table("h100-sxm", "llama-3.1-70b", 2).iloc[0]["bound"] == "bandwidth"


def test_a_step_its_pipeline_stages_set_reads_pipeline_stages(catalog: Catalog) -> None:
    """Found in review: DeepSeek-V3 FP8 on ten H100s (tp 2 x pp 5), a 512-token prefill with 120 ms
    of stages in turn against 77 ms of memory, read 'bandwidth'."""
    from engine.calibration import trust
    from engine.costmodel.roofline import STAGES, prefill_table

    hw, name, _ = trust.effective_chip(catalog.chip("h100-sxm"), "vllm", catalog, moe=True)
    inst = Instance(
        model=catalog.model("deepseek-v3"), hardware=hw, tp=2, pp=5, weights="fp8", profile_name=name
    )
    row = prefill_table(inst, [512]).iloc[0]
    assert row["bound"] == STAGES and row["pipeline_ms"] > max(row["compute_ms"], row["memory_ms"])
