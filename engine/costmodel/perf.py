"""The cost model of one engine iteration: a first-order roofline.

An instance is ``tp x pp`` chips of one kind serving one model. One iteration runs prefill
chunks (request i: ``q_i`` new tokens over ``k_i`` tokens already in its KV cache) and decode
steps (request j: context ``c_j``), ``D`` decode requests in all:

- FLOPs = 2 * P_a * (sum q_i + D) + A * (sum q_i * (k_i + q_i / 2) + sum c_j),
  with P_a the active matmul parameters and A the attention FLOPs per (query, key) pair
  (4 * L * n_q * h for standard heads);
- bytes = weights read (MoE: the experts the batch touches) + kv * (sum k_i + sum c_j)
  (reading the cache) + kv * (sum q_i + D) (writing the new tokens' KV);
- t = max(c, m) + u * min(c, m) + t_tp + t_pp + t_fixed, with c = FLOPs / (chips_per_stage * F *
  eta_F) - 2 * P_a * tokens * s_lp the compute time and m = bytes / (chips_per_stage * B * eta_B)
  the memory time.

Compute and memory overlap, but not wholly: ``u`` (`UNHIDDEN_FRACTION`) is the share of the
shorter of the two that the longer does not hide, measured on an H200's GEMMs near the ridge.

F is the chip's BF16 dense peak: eta_F is the fraction of it a stack reaches end to end. FP8 and
FP4 weights speed up the matmuls only: ``s_lp`` is the time per matmul FLOP they save against
BF16, from the GEMM kernels' measured fractions of their peaks (`MATMUL_FRACTION_BF16`,
`MATMUL_FRACTION_LOW`); attention, norms, the sampler and the stack's gaps do not speed up.

``t_tp`` is two ring all-reduces of the activations per layer over the scale-up link;
``t_pp`` one activation hand-off per stage boundary. Pipeline stages run one after another
for one batch (no micro-batch overlap is modelled), so pp adds memory, not speed.
All functions are pure and accept numpy arrays wherever a count is expected.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from engine.catalog.specs import (
    BYTES_PER_ELEMENT,
    EAGER_LAYER_MS,
    GIB,
    OVERHEAD_LAYERS,
    CalibrationProfile,
    HardwareSpec,
    KvPrecision,
    ModelSpec,
    Precision,
)
from engine.core.errors import ScenarioError

ACTIVATION_BYTES = 2.0
"""Bytes of one activation element exchanged in all-reduces (bf16)."""

MATMUL_FRACTION_BF16 = 0.834
"""Fraction of the BF16 dense peak large BF16 GEMMs reach (825 of 989 TFLOP/s on an H200,
Llama-3.1-70B projection shapes; data/reference/kernels-h200.csv, this project's measurement)."""
MATMUL_FRACTION_LOW = 0.745
"""Fraction of the FP8 dense peak the same GEMMs reach in FP8 (1,475 of 1,979 TFLOP/s on the H200).
FP4 GEMMs are assumed to reach the same fraction of theirs (no FP4 chip was measured)."""

UNHIDDEN_FRACTION = 0.32
"""Share of the shorter of an iteration's compute and memory times that the longer does not hide:
t = max(c, m) + UNHIDDEN_FRACTION * min(c, m). A GEMM whose compute and memory times are close
takes longer than either (tile start-up, the weights' first reads before the math can start).
Measured, not fitted: the median of (t - max) / min over this project's H200 GEMMs whose two times
are within a factor of two of each other (BF16 and FP8, 256 tokens, the three Llama-3.1-70B
projection shapes), each time at the kernels' best rates (data/reference/kernels-h200.csv;
tests/test_kernel_ceilings.py recomputes it). A plain iteration applies it to its totals, the step
model to each phase (attention and dense layers, experts)."""


def roof(compute_s: Any, memory_s: Any) -> Any:
    """An iteration's compute and memory times combined (scalars or arrays): the longer, plus the
    share of the shorter it does not hide (`UNHIDDEN_FRACTION`)."""
    if isinstance(compute_s, _SCALAR) and isinstance(memory_s, _SCALAR):
        hi, lo = (compute_s, memory_s) if compute_s >= memory_s else (memory_s, compute_s)
        return hi + UNHIDDEN_FRACTION * lo
    return np.maximum(compute_s, memory_s) + UNHIDDEN_FRACTION * np.minimum(compute_s, memory_s)


NOMINAL_SPEEDUP: dict[str, float] = {"fp8": 2.0, "int8": 2.0, "fp4": 4.0}
"""A tensor path's nominal speed-up over BF16 (each halving of the operand width doubles it)."""

_SCALAR = (float, int)
"""Plain numbers, which the transfer-time functions keep plain (the simulator's hot path)."""

_NEVER = 1 << 62
"""More decode steps than any run takes (`StepModel.decode_run`: the binding side never changes)."""


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding: `tokens` drafted per step, each accepted with probability `acceptance`.

    The target verifies the drafted tokens and the next one in one step; the expected tokens a
    step yields are (1 - a^(k+1)) / (1 - a). Drafting costs `draft_share` of one target decode
    step per drafted token (an MTP head: about one layer's worth) or the steps of a draft model.
    """

    tokens: int
    acceptance: float
    draft_share: float = 0.0
    draft: Instance | None = None

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens a verification step yields."""
        a, k = self.acceptance, self.tokens
        return float(k + 1) if a >= 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)


@dataclass(frozen=True, kw_only=True)
class Instance:
    """One serving instance: a model on tp x pp chips of one kind, with a calibration profile."""

    model: ModelSpec
    hardware: HardwareSpec
    tp: int = 1
    pp: int = 1
    weights: Precision = "bf16"
    kv: KvPrecision = "bf16"
    profile_name: str | None = None
    mem_fraction: float = 0.9
    dp: int = 1
    ep: int = 1
    imbalance: float = 1.0
    speculation: Speculation | None = None
    attention_weights: Precision | None = None
    """Precision of the attention projections where the checkpoint keeps them apart from the
    other weights (Meta's FP8 Llama 3.1 405B: bf16); None: `weights`. Memory and bytes read only."""
    eager: bool = False
    """The stack runs without CUDA/HIP graphs (`--enforce-eager`): every layer pays a launch cost
    per iteration (`EAGER_LAYER_MS`)."""
    activation_tokens: int = 0
    """Tokens of the largest forward pass the serving stack keeps memory for (its per-iteration
    token budget: vLLM profiles it at start-up and gives the KV cache only what is left)."""
    time_scale: float = 1.0
    """Every iteration takes this many times as long as modelled (1: as modelled). The planner's
    margin runs chips slower by their expected error (`engine.scenario.resolve.slowed`)."""
    profile: CalibrationProfile = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "profile", self.hardware.profile(self.profile_name))
        if self.tp < 1 or self.pp < 1 or self.dp < 1 or self.ep < 1:
            raise ScenarioError(
                f"tp, pp, dp and ep must be >= 1 (got tp={self.tp}, pp={self.pp}, dp={self.dp}, ep={self.ep})"
            )
        if self.ep > 1 and not self.model.moe:
            raise ScenarioError(f"ep: {self.model.id} has no experts to spread; ep must be 1 (got {self.ep})")
        if (self.tp * self.dp) % self.ep:
            raise ScenarioError(
                f"ep: {self.ep} must divide the chips of a pipeline stage, tp x dp = {self.tp * self.dp}"
            )
        if self.model.moe and self.ep > self.model.moe.experts:
            raise ScenarioError(f"ep: {self.ep} exceeds the model's {self.model.moe.experts} experts")

    @property
    def chips(self) -> int:
        """Chips in the instance: tp x dp per pipeline stage, pp stages."""
        return self.tp * self.pp * self.dp

    @property
    def plain(self) -> bool:
        """True for the classic instance (tp chips per stage, no pipeline, EP, DP or speculation):
        its iterations are one roofline over the whole batch, in closed form."""
        return self.pp == 1 and self.dp == 1 and self.ep == 1 and self.speculation is None

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes of one token across all layers (what a KV transfer moves)."""
        return self.model.kv_bytes_per_token(self.kv)

    @property
    def kv_copies(self) -> int:
        """Copies of each token's KV an instance holds and reads: MLA's latent is shared by all
        heads, so every tensor-parallel rank keeps and reads it whole; heads split otherwise."""
        return self.tp if self.model.mla else 1

    @property
    def kv_bytes_held(self) -> float:
        """Instance memory one cached token takes (and bytes an iteration reads per context token)."""
        return self.kv_bytes_per_token * self.kv_copies

    @property
    def _paths(self) -> tuple[float, float]:
        """(one chip's BF16 peak FLOP/s, the speed-up of the weights' tensor path over it).

        Datasheet peaks are rounded: where the path's listed peak is within 2% of its nominal
        speed-up over the listed BF16 one (2 for FP8, 4 for FP4; an H100's 1,979 against 989),
        the ratio is the nominal one and the BF16 peak the path's over it. Otherwise both are as
        listed (Gaudi 3's FP8 at its BF16 peak: 1; B300's FP4 at 5.8 times). A chip that lists no
        BF16 peak takes its next path's (`HardwareSpec.compute_precision`).
        """
        hw = self.hardware
        low, base = hw.compute_precision(self.weights), hw.peak_flops("bf16")
        if low == hw.compute_precision("bf16"):
            return base, 1.0
        path, nominal = hw.peak_flops(self.weights), NOMINAL_SPEEDUP.get(low, 1.0)
        if abs(path / base / nominal - 1.0) <= 0.02:
            return path / nominal, nominal
        return base, path / base

    @property
    def flops_per_s(self) -> float:
        """Achievable FLOP/s of one pipeline stage at BF16: tp chips at eta_F of their BF16 peak."""
        return self.tp * self._paths[0] * self.profile.eta_compute

    @property
    def matmul_saving_s_per_flop(self) -> float:
        """Seconds each matmul FLOP saves, against `flops_per_s`, where the weights run a faster
        tensor-core path than BF16 (FP8, FP4); 0 otherwise.

        Only the GEMMs speed up, by their kernels' speed-up g: the path's speed-up over BF16
        (`_paths`) times `MATMUL_FRACTION_LOW / MATMUL_FRACTION_BF16` (measured on an H200); no
        saving where g <= 1 (an FP8 path no faster than BF16, as on Gaudi 3 or TPU v5p). A matmul
        FLOP's BF16 kernel time, 1 / (F * MATMUL_FRACTION_BF16), shrinks by g; the rest of the
        stack's time per FLOP (1 / (F * eta_F) less the kernel's: attention, norms, sampling,
        gaps) stays. A profile above eta_F = MATMUL_FRACTION_BF16 leaves no such rest: its
        matmuls take their BF16 time over g (the two forms agree at MATMUL_FRACTION_BF16).
        """
        base, ratio = self._paths
        speedup = ratio * MATMUL_FRACTION_LOW / MATMUL_FRACTION_BF16
        if speedup <= 1.0:
            return 0.0
        # the BF16 kernel's time per FLOP, or the stack's whole time where eta_F claims more
        bf16_gemm = self.tp * base * max(self.profile.eta_compute, MATMUL_FRACTION_BF16)
        return (1.0 - 1.0 / speedup) / bf16_gemm

    @property
    def matmul_flops_per_s(self) -> float:
        """Achievable FLOP/s of one pipeline stage in the linear layers (at the weights' precision)."""
        saving = self.matmul_saving_s_per_flop
        return self.flops_per_s if saving == 0.0 else 1.0 / (1.0 / self.flops_per_s - saving)

    @property
    def bytes_per_s(self) -> float:
        """Achievable HBM bytes/s of one pipeline stage (tp chips at eta_B)."""
        return self.tp * self.hardware.memory_tb_s * 1e12 * self.profile.eta_bandwidth

    @property
    def expert_extra(self) -> float:
        """Extra time per unit of routed-expert work: 1 / eta_experts - 1 (0 for a dense model, or
        where the profile's experts run as fast as its dense layers). The experts' compute and
        memory times are both (1 + this) times what the profile's dense rates give."""
        e = self.profile.eta_experts
        if not self.model.moe or e is None:
            return 0.0
        return 1.0 / e - 1.0

    def with_experts_as_dense(self) -> Instance:
        """This instance with its profile's experts as fast as its dense layers (eta_experts unset)."""
        if self.profile.eta_experts is None:
            return self
        name = self.profile_name or self.hardware.default_profile
        prof = self.profile.model_copy(update={"eta_experts": None})
        hw = self.hardware.model_copy(update={"profiles": {**self.hardware.profiles, name: prof}})
        return dataclasses.replace(self, hardware=hw, profile_name=name)

    def expert_extra_work(self, tokens: ArrayLike) -> tuple[Any, Any]:
        """(FLOPs, bytes) that the experts' slowness adds to an iteration of `tokens` tokens, at the
        dense rates: `expert_extra` times the routed matmul FLOPs and the touched experts' bytes."""
        t = np.maximum(np.asarray(tokens, dtype=float), 0.0)
        m, x = self.model, self.expert_extra
        if m.moe is None or not x:
            return np.zeros_like(t), np.zeros_like(t)
        k, e = m.moe.experts_per_token, m.moe.experts
        flops = x * 2.0 * m.moe_layers() * k * m.expert_params() * t
        touched = e * (1.0 - np.power(1.0 - k / e, t))
        return flops, x * m.moe_layers() * touched * m.expert_params() * BYTES_PER_ELEMENT[self.weights]

    @property
    def expert_bytes(self) -> float:
        """Bytes of one copy of every routed expert (0 for a dense model)."""
        m = self.model
        if not m.moe:
            return 0.0
        return m.moe_layers() * m.moe.experts * m.expert_params() * BYTES_PER_ELEMENT[self.weights]

    @property
    def weight_bytes(self) -> float:
        """Bytes of the model's weights held by the instance.

        Attention and dense layers are held once per data-parallel rank; experts once per
        expert-parallel group (an EP group spreads one copy over its `ep` ranks).
        """
        total = self.model.weight_bytes(self.weights, self.attention_weights)
        if self.dp == 1 and self.ep == 1:
            return total
        experts = self.expert_bytes
        copies = (self.tp * self.dp) // self.ep if self.ep > 1 else self.dp
        return (total - experts) * self.dp + experts * copies

    @property
    def overhead_s(self) -> float:
        """Fixed seconds of one iteration: the profile's overhead, scaled by the model's layers."""
        per_layer = self.profile.overhead_ms / OVERHEAD_LAYERS + (EAGER_LAYER_MS if self.eager else 0.0)
        return per_layer / 1000.0 * self.model.layers

    @property
    def memory_bytes(self) -> float:
        """Usable device memory of the instance (mem_fraction of the total, `memory_gb` in GiB)."""
        return self.chips * self.hardware.memory_gb * GIB * self.mem_fraction

    @property
    def activation_bytes(self) -> float:
        """Memory kept for the activations of one forward pass of `activation_tokens` tokens
        (each data-parallel rank runs its share of them)."""
        if self.activation_tokens <= 0:
            return 0.0
        per_chip = self.activation_tokens / self.dp * self.model.activation_bytes_per_token(self.tp)
        return self.chips * per_chip

    @property
    def kv_capacity_tokens(self) -> int:
        """Tokens of KV cache that fit beside the weights and the activations (0 if they do not)."""
        free = self.memory_bytes - self.weight_bytes - self.activation_bytes
        return max(0, int(free // self.kv_bytes_held))

    def fits(self) -> bool:
        """True when the weights fit with room for at least one full-context request."""
        return self.kv_capacity_tokens >= min(self.model.max_context, 4096)

    def _link_bytes_per_s(self, span: int | None = None) -> float:
        """One-direction bandwidth per chip of the link joining `span` chips (default: tp).

        Within the scale-up domain (an NVLink node or rack) the scale-up fabric; beyond it the
        scale-out NICs; chips without a scale-up fabric use PCIe.
        """
        hw = self.hardware
        if (span or self.tp) > hw.scale_up_domain and hw.scale_out_gb_s:
            return hw.scale_out_gb_s * 1e9
        bw = hw.scale_up_gb_s / 2.0 or hw.pcie_gb_s
        return bw * 1e9

    def comm_time(self, tokens: ArrayLike) -> Any:
        """Seconds of tensor- and pipeline-parallel communication for an iteration of `tokens`."""
        t = np.asarray(tokens, dtype=float)
        msg = t * self.model.hidden * ACTIVATION_BYTES
        lat = self.hardware.allreduce_latency_us * 1e-6
        out = np.zeros_like(t)
        if self.tp > 1:
            ring = 2.0 * (self.tp - 1) / self.tp * msg / self._link_bytes_per_s()
            out = out + 2.0 * self.model.layers * (ring + lat)
        if self.pp > 1:
            out = out + (self.pp - 1) * (msg / self._link_bytes_per_s(self.chips) + lat)
        return out

    def weight_bytes_read(self, tokens: ArrayLike) -> Any:
        """Weight bytes one iteration of `tokens` tokens streams (vectorised over tokens)."""
        t = np.asarray(tokens, dtype=float)
        if not self.model.moe:
            return np.full_like(t, self.model.weight_bytes_read(self.weights, 0.0, self.attention_weights))
        return np.vectorize(lambda x: self.model.weight_bytes_read(self.weights, x, self.attention_weights))(
            t
        )


@dataclass(frozen=True)
class IterationCost:
    """Time of one iteration and what it is made of (arrays when the inputs were arrays)."""

    time_s: Any
    compute_s: Any
    memory_s: Any
    comm_s: Any
    overhead_s: float
    flops: Any
    bytes: Any
    saving_s: Any = 0.0
    """Seconds of `compute_s` the low-precision matmuls took off (<= 0): compute_s is
    flops / flops_per_s + saving_s, and only its first part scales with 1 / eta_F."""

    @property
    def compute_bound(self) -> Any:
        """True where compute time exceeds memory time."""
        return np.asarray(self.compute_s) >= np.asarray(self.memory_s)


def iteration_cost(
    inst: Instance,
    *,
    prefill_tokens: ArrayLike = 0,
    prefill_attn_pairs: ArrayLike = 0,
    prefill_cached_tokens: ArrayLike = 0,
    decode_requests: ArrayLike = 0,
    decode_context_tokens: ArrayLike = 0,
    prefill_largest: ArrayLike = 0,
) -> IterationCost:
    """Cost of one iteration from the batch's sums (scalars or broadcastable arrays).

    prefill_tokens = sum q_i; prefill_attn_pairs = sum q_i * (k_i + q_i / 2);
    prefill_cached_tokens = sum k_i; decode_requests = D; decode_context_tokens = sum c_j.
    """
    if not inst.plain:  # pipelines, expert/data parallelism, speculation: the step model, element-wise
        return _general_cost(
            inst,
            prefill_tokens,
            prefill_attn_pairs,
            prefill_cached_tokens,
            decode_requests,
            decode_context_tokens,
            prefill_largest,
        )
    m = inst.model
    q = np.asarray(prefill_tokens, dtype=float)
    pairs = np.asarray(prefill_attn_pairs, dtype=float)
    k = np.asarray(prefill_cached_tokens, dtype=float)
    d = np.asarray(decode_requests, dtype=float)
    c = np.asarray(decode_context_tokens, dtype=float)
    tokens = q + d
    lin = 2.0 * m.matmul_params() * tokens
    flops = lin + m.attention_flops_per_pair() * (pairs + c)
    kvb = inst.kv_bytes_held
    nbytes = np.where(tokens > 0, inst.weight_bytes_read(tokens) + kvb * (k + c) + kvb * tokens, 0.0)
    saving_s = -lin * inst.matmul_saving_s_per_flop
    compute_s = flops / inst.flops_per_s + saving_s
    memory_s = nbytes / inst.bytes_per_s
    if inst.expert_extra:  # the routed experts run slower than the dense layers: their extra work
        xf, xb = inst.expert_extra_work(tokens)
        saving_s = saving_s - xf * inst.matmul_saving_s_per_flop
        compute_s = compute_s + xf / inst.flops_per_s - xf * inst.matmul_saving_s_per_flop
        memory_s = memory_s + xb / inst.bytes_per_s
    comm_s = inst.comm_time(tokens)
    overhead = inst.overhead_s
    time_s = np.where(tokens > 0, roof(compute_s, memory_s) + comm_s + overhead, 0.0)
    if inst.time_scale != 1.0:
        time_s = time_s * inst.time_scale
    return IterationCost(time_s, compute_s, memory_s, comm_s, overhead, flops, nbytes, saving_s)


def _general_cost(
    inst: Instance,
    q: ArrayLike,
    pairs: ArrayLike,
    k: ArrayLike,
    d: ArrayLike,
    c: ArrayLike,
    largest: ArrayLike = 0,
) -> IterationCost:
    """`iteration_cost` of an instance that is not plain, from `StepModel` element by element.

    A decode-only iteration is a decode step (speculation amortised per token); compute and
    memory times are the FLOPs and bytes at the whole instance's achievable rates, the FLOPs
    beyond the batch's attention taken as matmuls (exact without speculation). A MoE model's
    slower experts (`Instance.expert_extra`) lengthen both, by the time the step model gives them
    (timed again with the experts as fast as the dense layers: micro-batches and speculation
    included), so the rest is what the links and hand-offs take.
    """
    arrays = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (q, pairs, k, d, c, largest)))

    def run(step: StepModel) -> np.ndarray:
        out = np.zeros((3, *arrays[0].shape))
        for idx in np.ndindex(arrays[0].shape):
            qi, pi, ki, di, ci, li = (float(a[idx]) for a in arrays)
            if qi <= 0 and di >= 1:
                out[(slice(None), *idx)] = step.decode_run(round(di), ci, 1)
            else:
                out[(slice(None), *idx)] = step.cost(qi, pi, ki, di, ci, largest=li)
        return out

    out = run(StepModel(inst))
    dense_t = run(StepModel(inst.with_experts_as_dense()))[0] if inst.expert_extra else out[0]
    t, flops, nbytes = (x if x.shape else float(x) for x in out)
    scale = inst.pp * inst.dp
    attention = inst.model.attention_flops_per_pair() * (arrays[1] + arrays[4])
    saving = -np.maximum(np.asarray(flops) - attention, 0.0) * inst.matmul_saving_s_per_flop / scale
    compute = np.asarray(flops) / (inst.flops_per_s * scale) + saving
    memory = np.asarray(nbytes) / (inst.bytes_per_s * scale)
    both = roof(compute, memory)
    comm = np.maximum(dense_t - both - inst.overhead_s, 0.0)
    if inst.expert_extra:  # the experts' extra time as compute and memory, not as communication
        stretch = 1.0 + np.divide(np.asarray(t) - dense_t, both, out=np.zeros_like(both), where=both > 0)
        compute, memory, saving = compute * stretch, memory * stretch, saving * stretch
    saving_s = saving if saving.shape else float(saving)
    return IterationCost(t, compute, memory, comm, inst.overhead_s, flops, nbytes, saving_s)


def prefill_cost(inst: Instance, prompt_tokens: ArrayLike, cached_tokens: ArrayLike = 0) -> IterationCost:
    """Cost of prefilling one prompt (or an array of prompts, one iteration each)."""
    q = np.asarray(prompt_tokens, dtype=float) - np.asarray(cached_tokens, dtype=float)
    k = np.asarray(cached_tokens, dtype=float)
    return iteration_cost(
        inst, prefill_tokens=q, prefill_attn_pairs=q * (k + q / 2.0), prefill_cached_tokens=k
    )


def decode_cost(inst: Instance, batch: ArrayLike, context_tokens: ArrayLike) -> IterationCost:
    """Cost of one decode step of `batch` requests that each hold `context_tokens` tokens."""
    b = np.asarray(batch, dtype=float)
    return iteration_cost(
        inst, decode_requests=b, decode_context_tokens=b * np.asarray(context_tokens, dtype=float)
    )


class StepModel:
    """Scalar fast path of `iteration_cost` for the simulator's inner loop (same formulas).

    Precomputes the per-instance constants once; `cost` takes the batch's sums as plain floats
    and returns (seconds, FLOPs, bytes). A test holds it equal to `iteration_cost`.
    """

    __slots__ = ("_apf", "_comm_lat", "_comm_per_tok", "_dense_bytes", "_expert_bytes", "_flops_s",
                 "_kvb", "_lin", "_bytes_s", "_moe", "_overhead", "_e", "_k_over_e",
                 "_last_batch", "_last_terms", "_inst", "_plain", "_draft", "_save", "_x", "_routed", "_scale")  # fmt: skip

    def __init__(self, inst: Instance) -> None:
        m = inst.model
        self._lin = 2.0 * m.matmul_params()
        self._apf = m.attention_flops_per_pair()
        self._kvb = inst.kv_bytes_held
        self._flops_s = inst.flops_per_s
        self._save = inst.matmul_saving_s_per_flop
        self._bytes_s = inst.bytes_per_s
        self._overhead = inst.overhead_s
        self._dense_bytes = (
            float(inst.weight_bytes_read(0.0))
            if not m.moe
            else float(m.weight_bytes_read(inst.weights, 0.0, inst.attention_weights))
        )
        self._moe = m.moe is not None
        self._e = float(m.moe.experts) if m.moe else 0.0
        self._k_over_e = m.moe.experts_per_token / m.moe.experts if m.moe else 0.0
        self._expert_bytes = m.moe_layers() * m.expert_params() * BYTES_PER_ELEMENT[inst.weights]
        self._x = inst.expert_extra
        self._routed = 2.0 * m.moe_layers() * m.moe.experts_per_token * m.expert_params() if m.moe else 0.0
        one = float(inst.comm_time(1.0))
        two = float(inst.comm_time(2.0))
        self._comm_per_tok = two - one
        self._comm_lat = one - self._comm_per_tok
        self._last_batch: tuple[int, float] | None = None  # decode_run's last (batch, context sum)
        self._last_terms: tuple[float, ...] = ()
        self._inst = inst
        self._plain = inst.plain
        spec = inst.speculation
        self._draft = StepModel(spec.draft) if spec is not None and spec.draft is not None else None
        self._scale = inst.time_scale  # the whole iteration, draft and links included

    # --- pipelines, expert and data parallelism, speculation (the general path) -------------
    # An instance that is not `plain` is timed here: a pass of a micro-batch through every layer
    # (attention and dense layers per data-parallel rank, experts on the busiest expert-parallel
    # rank, the all-to-all between them), pipelined over `pp` stages, with speculative decode
    # steps amortised over the tokens they yield. docs/cost-model.md states the model.

    def _tp_comm(self, tokens: float) -> float:
        inst = self._inst
        if inst.tp <= 1 or tokens <= 0:
            return 0.0
        msg = tokens * inst.model.hidden * ACTIVATION_BYTES
        ring = 2.0 * (inst.tp - 1) / inst.tp * msg / inst._link_bytes_per_s()
        return 2.0 * inst.model.layers * (ring + inst.hardware.allreduce_latency_us * 1e-6)

    def _pass(
        self, q: float, pairs: float, k: float, d: float, c_attn: float, c_kv: float, largest: float = 0.0
    ) -> tuple[float, ...]:
        """(seconds, FLOPs, bytes) of one micro-batch through every layer (no hand-off, no overhead)."""
        inst = self._inst
        tokens = q + d
        if tokens <= 0:
            return 0.0, 0.0, 0.0
        kv = self._kvb * (k + c_kv + tokens)
        if inst.dp == 1 and inst.ep == 1:
            flops = self._lin * tokens + self._apf * (pairs + c_attn)
            nbytes = self.weight_bytes(tokens) + kv
            compute = flops / self._flops_s - self._lin * tokens * self._save
            memory = nbytes / self._bytes_s
            if self._x:
                compute, memory = self._expert_extra(tokens, compute, memory)
            t = roof(compute, memory) + self._tp_comm(tokens)
            return t, flops, nbytes
        m = inst.model
        dp, ep = float(inst.dp), float(inst.ep)
        wb = BYTES_PER_ELEMENT[inst.weights]
        layers_moe = float(m.moe_layers())
        k_e = float(m.moe.experts_per_token) if m.moe else 0.0
        routed_lin = self._routed  # the routed experts' matmul FLOPs per token (0 for a dense model)
        # attention and dense layers: each data-parallel rank runs its own requests, and the
        # busiest sets the layer time (the MoE layers wait for every rank): a share 1/dp of the
        # decodes and of the prompt work, or at least the largest prompt chunk's (a prompt runs on
        # one rank; `largest`, 0 when unknown)
        f_att = (self._lin - routed_lin) * tokens + self._apf * (pairs + c_attn)
        busiest = dp > 1 and q > 0 and largest * dp > q
        if busiest:
            sp = min(1.0, largest / q)
            r_tok = q * sp + d / dp
            f_busy = (self._lin - routed_lin) * r_tok + self._apf * (pairs * sp + c_attn / dp)
            kv_rank = self._kvb * ((k + q) * sp + (c_kv + d) / dp)
            c_att = f_busy / self._flops_s - (self._lin - routed_lin) * r_tok * self._save
        else:  # evenly spread
            r_tok, kv_rank = tokens / dp, kv / dp
            c_att = f_att / dp / self._flops_s - (self._lin - routed_lin) * tokens / dp * self._save
        t_att = roof(c_att, (self._dense_bytes + kv_rank) / self._bytes_s)
        if not m.moe:
            flops, nbytes = f_att, self._dense_bytes * dp + kv
            return t_att + self._tp_comm(r_tok), flops, nbytes
        # experts: the busiest expert-parallel rank sets the layer time
        routed = tokens * k_e
        load = min(routed, routed / ep * inst.imbalance)
        chips_ep = inst.tp * dp / ep
        per_rank = m.moe.experts / ep
        touched_rank = (
            per_rank * (1.0 - math.pow(1.0 - min(1.0, 1.0 / per_rank), load)) if per_rank > 1 else 1.0
        )
        f_rank = 2.0 * layers_moe * m.expert_params() * load
        m_rank = layers_moe * touched_rank * m.expert_params() * wb
        chip_f, chip_b = self._flops_s / inst.tp, self._bytes_s / inst.tp
        c_exp = f_rank / (chips_ep * chip_f) - f_rank * self._save * inst.tp / chips_ep
        t_exp = roof(c_exp, m_rank / (chips_ep * chip_b)) * (1.0 + self._x)
        a2a = 0.0
        if ep > 1:  # dispatch and combine: each token's hidden state to and from its experts' ranks
            # spread evenly over the ranks (timing the busiest rank's own traffic here, on top of an
            # all-to-all not overlapped with compute, made the MoE rows worse: docs/validation.md)
            per_chip = tokens * k_e * m.hidden * ACTIVATION_BYTES * (ep - 1.0) / ep / (dp * inst.tp)
            hw = inst.hardware
            in_domain = inst.ep <= hw.scale_up_domain
            link = (
                hw.scale_up_gb_s / 2.0
                if in_domain and hw.scale_up_gb_s
                else hw.scale_out_gb_s or hw.pcie_gb_s
            )
            a2a = 2.0 * layers_moe * (per_chip / (link * 1e9) + hw.allreduce_latency_us * 1e-6)
        touched_all = m.expected_experts_touched(tokens)
        flops = f_att + routed_lin * tokens
        nbytes = self._dense_bytes * dp + kv + layers_moe * touched_all * m.expert_params() * wb
        return t_att + t_exp + a2a + self._tp_comm(r_tok), flops, nbytes

    def _pipelined(
        self,
        q: float,
        pairs: float,
        k: float,
        d: float,
        c_attn: float,
        c_kv: float,
        items: float,
        largest: float = 0.0,
    ) -> tuple[float, float, float]:
        """An iteration over `pp` stages with up to `pp` micro-batches in flight (seconds, FLOPs, bytes).

        With m micro-batches each stage works on every one of them in turn: one step of the whole
        batch takes max(m, pp) / pp passes of a micro-batch (fewer micro-batches than stages leave
        bubbles), plus the activation hand-off at each stage boundary.
        """
        inst = self._inst
        pp = inst.pp
        m = float(max(1, min(pp, int(items)))) if pp > 1 else 1.0
        t, flops, nbytes = self._pass(q / m, pairs / m, k / m, d / m, c_attn / m, c_kv / m, largest)
        t *= max(m, pp) / pp
        if pp > 1:
            msg = (q + d) / m * inst.model.hidden * ACTIVATION_BYTES
            t += (pp - 1) * (
                msg / inst._link_bytes_per_s(inst.chips) + inst.hardware.allreduce_latency_us * 1e-6
            )
        return t, flops * m, nbytes * m

    def _decode_step(self, batch: float, context_sum: float) -> tuple[float, float, float]:
        """(seconds, FLOPs, bytes) per token of a decode step of `batch` requests (speculation amortised)."""
        spec = self._inst.speculation
        if spec is None:
            t, f, b = self._pipelined(0.0, 0.0, 0.0, batch, context_sum, context_sum, batch)
            return t + self._overhead, f, b
        kk = float(spec.tokens + 1)
        # verify: every request's k drafted tokens and the next one attend its context at once
        t, f, b = self._pipelined(0.0, 0.0, 0.0, batch * kk, context_sum * kk, context_sum, batch)
        t += self._overhead
        if self._draft is not None:  # a draft model: k decode steps of its own
            dt, df, db = self._draft.cost(0.0, 0.0, 0.0, batch, context_sum)
        else:  # an MTP head: a share of one target step per drafted token, its launches included
            dt, df, db = (
                x * spec.draft_share for x in self._pipelined(0.0, 0.0, 0.0, batch, 0.0, 0.0, batch)
            )
            dt += self._overhead * spec.draft_share
        t += spec.tokens * dt
        f += spec.tokens * df
        b += spec.tokens * db
        e = spec.tokens_per_step
        return t / e, f / e, b / e

    def _expert_extra(self, tokens: float, compute: float, memory: float) -> tuple[float, float]:
        """Compute and memory times with the routed experts' extra work (`Instance.expert_extra`)."""
        routed = self._x * self._routed * tokens
        touched = self._e * (1.0 - math.pow(1.0 - self._k_over_e, tokens))
        return (
            compute + routed / self._flops_s - routed * self._save,
            memory + self._x * touched * self._expert_bytes / self._bytes_s,
        )

    @property
    def overhead_s(self) -> float:
        """Fixed overhead of one iteration."""
        return self._overhead

    def weight_bytes(self, tokens: float) -> float:
        """Weight bytes an iteration of `tokens` tokens reads."""
        if not self._moe:
            return self._dense_bytes
        touched = self._e * (1.0 - math.pow(1.0 - self._k_over_e, tokens))
        return self._dense_bytes + touched * self._expert_bytes

    def cost(
        self, q: float, pairs: float, k: float, d: float, c: float, items: int = 0, largest: float = 0.0
    ) -> tuple[float, float, float]:
        """(seconds, FLOPs, bytes) of one iteration from its sums (see `iteration_cost`).

        `items`: the requests in the iteration (prompts and decodes), which bounds how many
        micro-batches a pipeline can split it into (default: the decodes plus one prompt).
        """
        tokens = q + d
        if tokens <= 0:
            return 0.0, 0.0, 0.0
        if not self._plain:
            n = items or int(d) + (1 if q > 0 else 0)
            t, flops, nbytes = self._pipelined(q, pairs, k, d, c, c, n, largest)
            return (t + self._overhead) * self._scale, flops, nbytes
        flops = self._lin * tokens + self._apf * (pairs + c)
        nbytes = self.weight_bytes(tokens) + self._kvb * (k + c + tokens)
        comm = self._comm_lat + self._comm_per_tok * tokens if self._comm_per_tok else 0.0
        compute = flops / self._flops_s - self._lin * tokens * self._save
        memory = nbytes / self._bytes_s  # `roof`, inlined: the simulator's hottest line
        if self._x:
            compute, memory = self._expert_extra(tokens, compute, memory)
        both = (
            compute + UNHIDDEN_FRACTION * memory
            if compute >= memory
            else memory + UNHIDDEN_FRACTION * compute
        )
        t = both + comm + self._overhead
        return t * self._scale, flops, nbytes

    def decode_run(self, batch: int, context_sum: float, steps: int) -> tuple[float, float, float]:
        """(seconds, FLOPs, bytes) of `steps` decode steps of an unchanging batch.

        Step i sees a context sum of ``context_sum + i * batch``; compute and memory time are
        both linear in i, so their maximum changes side at most once and each side sums in
        closed form, as does their sum (`roof` is (1 - u) * max + u * (compute + memory)). This
        is what lets the simulator jump over many tokens with one event.
        """
        if steps <= 0 or batch <= 0:
            return 0.0, 0.0, 0.0
        if not self._plain:  # per-step cost at the run's mid context (linear pieces: nearly exact)
            t, f, b = self._decode_step(float(batch), context_sum + batch * (steps - 1) / 2.0)
            return steps * t * self._scale, steps * f, steps * b
        key = (batch, context_sum)
        if key == self._last_batch:  # the simulator asks again for the same batch (cut jumps)
            f0, f1, m0, m1, a_c, b_c, a_m, b_m, fixed, split_at, compute_late = self._last_terms
        else:
            b = float(batch)
            apf, kvb, flops_s, bytes_s = self._apf, self._kvb, self._flops_s, self._bytes_s
            f0 = self._lin * b + apf * context_sum
            f1 = apf * b
            m0 = (self.weight_bytes(b) if self._moe else self._dense_bytes) + kvb * (context_sum + b)
            m1 = kvb * b
            a_c, b_c = f0 / flops_s - self._lin * b * self._save, f1 / flops_s
            a_m, b_m = m0 / bytes_s, m1 / bytes_s
            if self._x:  # the experts' extra time depends on the batch, not the context: a constant
                a_c, a_m = self._expert_extra(b, a_c, a_m)
            fixed = (self._comm_lat + self._comm_per_tok * b if self._comm_per_tok else 0.0) + self._overhead
            # g(i) = compute - memory at step i; compute binds where g(i) >= 0. The step at which
            # the binding side changes (before any cap on the steps), and whether compute binds late.
            g0, g1 = a_c - a_m, b_c - b_m
            if abs(g1) < 1e-18:
                split_at, compute_late = (0 if g0 >= 0 else _NEVER), True
            elif g1 > 0:  # memory binds first, compute from ceil(-g0/g1) on
                split_at, compute_late = max(math.ceil(-g0 / g1), 0), True
            else:  # compute binds first, up to floor(-g0/g1)
                split_at, compute_late = max(math.floor(-g0 / g1) + 1, 0), False
            self._last_batch = key
            self._last_terms = (f0, f1, m0, m1, a_c, b_c, a_m, b_m, fixed, split_at, compute_late)
        split = min(split_at, steps)
        # each side's steps summed in closed form: a + slope * i over lo <= i < hi is
        # n * a + slope * (lo + hi - 1) * n / 2 with n = hi - lo
        if compute_late:
            a1, s1, a2, s2 = a_m, b_m, a_c, b_c
        else:
            a1, s1, a2, s2 = a_c, b_c, a_m, b_m
        rest = steps - split
        total = (split * a1 + s1 * (split - 1) * split / 2.0 if split > 0 else 0.0) + (
            rest * a2 + s2 * (split + steps - 1) * rest / 2.0 if rest > 0 else 0.0
        )
        n = float(steps)
        tri = n * (n - 1) / 2.0
        both = n * (a_c + a_m) + (b_c + b_m) * tri
        total = (1.0 - UNHIDDEN_FRACTION) * total + UNHIDDEN_FRACTION * both
        return (total + steps * fixed) * self._scale, n * f0 + f1 * tri, n * m0 + m1 * tri

    def decode_steps_within(self, batch: int, context_sum: float, budget_s: float, cap: int) -> int:
        """The largest number of decode steps (at most `cap`) that finish within `budget_s`."""
        lo, hi = 0, cap
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.decode_run(batch, context_sum, mid)[0] <= budget_s:
                lo = mid
            else:
                hi = mid - 1
        return lo


def decode_steps_time(inst: Instance, batch: int, context_sum: float, steps: int) -> float:
    """Total seconds of `steps` consecutive decode steps of an unchanging batch."""
    return StepModel(inst).decode_run(batch, context_sum, steps)[0]


def decode_steps_within(inst: Instance, batch: int, context_sum: float, budget_s: float, cap: int) -> int:
    """The largest number of decode steps (at most `cap`) that finish within `budget_s`."""
    return StepModel(inst).decode_steps_within(batch, context_sum, budget_s, cap)


def kv_transfer_time(
    kv_bytes_per_token: float,
    tokens: ArrayLike,
    link_gb_s: float,
    latency_s: float = 0.0,
) -> Any:
    """Seconds to move `tokens` tokens of KV cache over a link of `link_gb_s` GB/s (floats stay floats)."""
    if not link_gb_s > 0:  # resolve() refuses such a scenario; this keeps direct callers honest
        raise ScenarioError(f"KV transfer over a link of {link_gb_s} GB/s: the link needs a bandwidth")
    t = tokens if isinstance(tokens, _SCALAR) else np.asarray(tokens, dtype=float)
    return latency_s + t * kv_bytes_per_token / (link_gb_s * 1e9)


def exposed_transfer_time(transfer_s: ArrayLike, prefill_s: ArrayLike, layers: int, overlap: bool) -> Any:
    """Transfer time left on the critical path after the prefill ends.

    With layer-by-layer overlap, layer l's KV moves while layer l+1 computes: only the part of
    the transfer that outlasts the prefill, or at least the last layer's share, remains.
    Floats stay floats (the simulator's hot path); arrays are handled element-wise.
    """
    if isinstance(transfer_s, _SCALAR) and isinstance(prefill_s, _SCALAR):
        if not overlap:
            return float(transfer_s)
        return max(transfer_s - prefill_s * (layers - 1) / layers, transfer_s / layers)
    tr = np.asarray(transfer_s, dtype=float)
    if not overlap:
        return tr
    pf = np.asarray(prefill_s, dtype=float)
    return np.maximum(tr - pf * (layers - 1) / layers, tr / layers)


@dataclass(frozen=True)
class RooflinePoint:
    """Where a phase sits on an instance's roofline."""

    phase: str
    intensity_flops_per_byte: float
    attainable_tflops: float
    ridge_flops_per_byte: float
    bound: str
    time_s: float


def roofline_point(inst: Instance, phase: str, cost: IterationCost) -> RooflinePoint:
    """Arithmetic intensity, attainable FLOP/s and binding resource of one iteration."""
    flops, nbytes = float(cost.flops), float(cost.bytes)
    intensity = flops / nbytes if nbytes else math.inf
    ridge = inst.matmul_flops_per_s / inst.bytes_per_s
    attainable = min(inst.matmul_flops_per_s, intensity * inst.bytes_per_s) / inst.tp
    return RooflinePoint(
        phase=phase,
        intensity_flops_per_byte=intensity,
        attainable_tflops=attainable / 1e12,
        ridge_flops_per_byte=ridge,
        bound="compute" if intensity >= ridge else "bandwidth",
        time_s=float(cost.time_s),
    )
