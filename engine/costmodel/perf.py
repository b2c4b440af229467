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

This module holds the deployment unit (`Instance`) and the roofline's constants; the iteration's
cost over arrays is `engine.costmodel.iteration`, its scalar fast path for the simulator
`engine.costmodel.step`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import Any, Final, get_args

import numpy as np
from numpy.typing import ArrayLike

from engine.catalog.model_spec import ModelSpec
from engine.catalog.specs import (
    BYTES_PER_ELEMENT,
    EAGER_LAYER_MS,
    GIB,
    OVERHEAD_LAYERS,
    CalibrationProfile,
    HardwareSpec,
    KvPrecision,
    Precision,
)
from engine.core.errors import ScenarioError
from engine.core.no_bool import real_number
from engine.costmodel import profile_pass, stages
from engine.costmodel.scale_out import SCALE_OUT_LATENCY_US as SCALE_OUT_LATENCY_US  # (re-exported)
from engine.costmodel.scale_out import scale_out_hops as scale_out_hops  # (re-exported)
from engine.costmodel.scale_out import spans_machines as spans_machines  # (re-exported)
from engine.costmodel.tiers import MemoryTiers

ACTIVATION_BYTES = 2.0
"""Bytes of one activation element exchanged in all-reduces (bf16)."""

MATMUL_FRACTION_BF16 = 0.834
"""Fraction of the BF16 dense peak large BF16 GEMMs reach (825 of 989 TFLOP/s on an H200,
Llama-3.1-70B projection shapes; data/reference/kernels-h200.csv, this project's measurement)."""
MATMUL_FRACTION_LOW = 0.745
"""Fraction of the FP8 dense peak the same GEMMs reach in FP8 (1,475 of 1,979 TFLOP/s on the H200).
FP4 GEMMs are assumed to reach the same fraction of theirs (no FP4 chip was measured)."""

UNHIDDEN_FRACTION: Final = 0.32
"""Share of the shorter of an iteration's compute and memory times that the longer does not hide:
t = max(c, m) + UNHIDDEN_FRACTION * min(c, m). A GEMM whose compute and memory times are close
takes longer than either (tile start-up, the weights' first reads before the math can start).
Measured, not fitted: the median of (t - max) / min over this project's H200 GEMMs whose two times
are within a factor of two of each other (BF16 and FP8, 256 tokens, the three Llama-3.1-70B
projection shapes), each time at the kernels' best rates (data/reference/kernels-h200.csv;
tests/calibration/test_kernel_ceilings.py recomputes it). A plain iteration applies it to its totals, the step
model to each phase (attention and dense layers, experts)."""


MLA_DECODE_ROWS = 64
"""Query rows one tile of an MLA decode kernel computes at once. A decode step runs MLA absorbed
(the up-projections folded into the query, vLLM's v1/attention/backends/mla/common.py): each head
meets the cached latent as 576-wide keys and 512-wide values, and every rank's heads form the rows
of one matrix product, padded to whole tiles: FlashMLA's BLOCK_SIZE_M is 64 (deepseek-ai/FlashMLA
csrc/flash_api.cpp, get_mla_metadata: ceil_div(heads_per_kv_head, BLOCK_SIZE_M); Hopper's wgmma
is 64 rows high), so a TP16 rank's 8 heads cost 64 rows. vLLM forces the KV block size to 64 to
run FlashMLA on Hopper (vllm/platforms/cuda.py, from v0.8). Assumption: the same 64 rows on other
chips and stacks (SGLang's FA3 and FlashInfer MLA kernels also tile 64 rows on Hopper) but those of
`MLA_DECODE_ROWS_BY_VENDOR`."""

MLA_DECODE_ROWS_BY_VENDOR: dict[str, int] = {"AMD": 16}
"""`MLA_DECODE_ROWS` where a vendor's MLA decode kernels tile otherwise: AMD's aiter (which SGLang
and vLLM run on MI300X) ships precompiled MLA decode kernels for 16 and for 128 query heads on
gfx942 (hsa/gfx942/mla/: mla_dec_stage1_bf16_a16w16_subQ16_mqa16 and ..._subQ128_mqa128; vLLM's
aiter MLA tests: 'num_heads (gqa_ratio) supported: 16 and 128'), so a TP8 rank's 16 heads are
not padded."""


def roof(compute_s: Any, memory_s: Any) -> Any:
    """An iteration's compute and memory times combined (scalars or arrays): the longer, plus the
    share of the shorter it does not hide (`UNHIDDEN_FRACTION`)."""
    if isinstance(compute_s, SCALAR_TYPES) and isinstance(memory_s, SCALAR_TYPES):
        hi, lo = (compute_s, memory_s) if compute_s >= memory_s else (memory_s, compute_s)
        return hi + UNHIDDEN_FRACTION * lo
    return np.maximum(compute_s, memory_s) + UNHIDDEN_FRACTION * np.minimum(compute_s, memory_s)


NOMINAL_SPEEDUP: dict[str, float] = {"fp8": 2.0, "int8": 2.0, "fp4": 4.0}
"""A tensor path's nominal speed-up over BF16 (each halving of the operand width doubles it)."""

SCALAR_TYPES = (float, int)
"""Plain numbers, which the transfer-time functions keep plain (the simulator's hot path)."""


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
    startup_profile: str = ""
    """The serving stack (`deployment.stack`, a row's stack; '' for none): under 'vllm-v0' a MoE
    layer's fused-kernel buffers, the absorbed MLA matrices and the latent's alignment take KV room
    (`engine.costmodel.profile_pass`); other stacks size it from the dense estimate alone."""
    time_scale: float = 1.0
    """Every iteration takes this many times as long as modelled (1: as modelled). The planner's
    margin runs chips slower by their expected error (`engine.scenario.resolve.slowed`)."""
    clock: float = 1.0
    """Core clock over nominal under a power limit (`engine.costmodel.power_cap`): compute scales by it."""
    bandwidth_scale: float = 1.0
    """Achievable HBM bandwidth over nominal under a power limit (`power_cap.bandwidth_factor`)."""
    profile: CalibrationProfile = field(init=False)

    def __post_init__(self) -> None:
        self._check_given()
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

    def _check_given(self) -> None:
        """Refuse what no instance is, naming the field (an exported class: a review built one with
        time_scale -1, a negative prefill time; weights 'fp3', a KeyError later; hardware by its id)."""
        if not isinstance(self.hardware, HardwareSpec) or not isinstance(self.model, ModelSpec):
            raise ScenarioError(
                "hardware, model: catalog entries (load_catalog().chip(id), .model(id)), not ids"
            )
        if self.weights not in get_args(Precision) or self.kv not in get_args(KvPrecision):
            raise ScenarioError(
                f"weights: one of {', '.join(get_args(Precision))}; kv: one of {', '.join(get_args(KvPrecision))} "
                f"(got weights={self.weights!r}, kv={self.kv!r})"
            )
        for name in ("time_scale", "clock", "bandwidth_scale", "imbalance"):
            v = getattr(self, name)
            if not (real_number(v) and math.isfinite(v) and v > 0):
                raise ScenarioError(f"{name}: a positive number (got {v!r})")
        if not (real_number(self.mem_fraction) and 0 < self.mem_fraction <= 1):
            raise ScenarioError(f"mem_fraction: in (0, 1] (got {self.mem_fraction!r})")

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
    def kv_copies(self) -> float:
        """Copies of each token's KV an instance holds and reads: MLA's latent is shared by all
        heads, so every tensor-parallel rank keeps and reads it whole. Standard KV heads split over
        the ranks, each rank holding whole heads: with more ranks than KV heads each head is kept on
        tp / kv_heads of them (vLLM, SGLang and TensorRT-LLM replicate a head rather than split it;
        Qwen3-235B's 4 KV heads at TP8 are held twice), in general tp * ceil(kv_heads / tp) / kv_heads
        times; a chip whose compiler places the tensors (`stages.COMPILER_PLACED`: Groq's 576 LPUs of
        Llama-3.1-70B, an MLA latent on SambaNova's) splits the cache as it likes, once."""
        m = self.model
        if self.hardware.kind in stages.COMPILER_PLACED:
            return 1.0
        if m.mla:
            return float(self.tp)
        return self.tp * math.ceil(m.kv_heads / self.tp) / m.kv_heads

    @property
    def decode_attention_flops_per_pair(self) -> float:
        """FLOPs of attention between one decoded token and one cached token, all layers, as the
        instance's kernels run them (`ModelSpec.attention_flops_per_pair` for standard heads).

        MLA decodes absorbed: each head scores the 576-wide latent key (kv_lora_rank + rope) and
        sums the 512-wide latent values, 2 * (2 * kv_lora_rank + rope) FLOPs per head, and each
        rank computes its heads padded to whole tiles of `MLA_DECODE_ROWS` rows (a speculative
        step's tokens share the tiles: its k + 1 queries' heads are the rows). At a few thousand
        tokens of context this is compute-bound on a chip with little compute (an H20, a TP16).
        """
        m = self.model
        if not m.mla:
            return m.attention_flops_per_pair()
        queries = self.speculation.tokens + 1 if self.speculation is not None else 1
        per_rank = math.ceil(m.heads / self.tp) * queries
        tile = MLA_DECODE_ROWS_BY_VENDOR.get(self.hardware.vendor, MLA_DECODE_ROWS)
        rows = math.ceil(per_rank / tile) * tile / queries  # per query token
        width = 2 * m.mla.kv_lora_rank + m.mla.qk_rope_head_dim
        return 2.0 * m.layers * self.tp * rows * width

    @property
    def kv_bytes_held(self) -> float:
        """Instance memory one cached token takes (and bytes an iteration reads per context token)."""
        return self.kv_bytes_per_token * self.kv_copies

    @functools.cached_property  # the instance is frozen; the validation's fits ask it millions of times
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
        return self.tp * self._paths[0] * self.profile.eta_compute * self.clock

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
        return (1.0 - 1.0 / speedup) / bf16_gemm / self.clock  # a GEMM's time goes as 1 / clock

    @property
    def matmul_flops_per_s(self) -> float:
        """Achievable FLOP/s of one pipeline stage in the linear layers (at the weights' precision)."""
        saving = self.matmul_saving_s_per_flop
        return self.flops_per_s if saving == 0.0 else 1.0 / (1.0 / self.flops_per_s - saving)

    @property
    def bytes_per_s(self) -> float:
        """Achievable HBM bytes/s of one pipeline stage (tp chips at eta_B, times a power cap's
        bandwidth factor); a chip with SRAM or DDR tiers reads each byte at its own tier's rate
        instead (`memory_tiers`)."""
        return self.tp * self.hardware.memory_tb_s * 1e12 * self.profile.eta_bandwidth * self.bandwidth_scale

    @property
    def expert_extra(self) -> float:
        """Extra time per unit of routed-expert work: 1 / eta_experts - 1 (0 for a dense model, or
        where the profile's experts run as fast as its dense layers). The experts' compute and
        memory times are both (1 + this) times what the profile's dense rates give."""
        e = self.profile.eta_experts
        if not self.model.moe or e is None:
            return 0.0
        return 1.0 / e - 1.0

    @property
    def expert_compute_extra(self) -> float:
        """Extra compute time per unit of routed-expert math: 1 / eta_experts_compute - 1, where the
        profile states that rate apart from its weight streaming's; `expert_extra` otherwise."""
        c = self.profile.eta_experts_compute
        if not self.model.moe or c is None:
            return self.expert_extra
        return 1.0 / c - 1.0

    @property
    def expert_tile(self) -> float:
        """Tokens of work each touched routed expert costs beyond its own tokens in a MoE layer
        (`CalibrationProfile.expert_tile_tokens`; 0 for a dense model or where unset)."""
        t = self.profile.expert_tile_tokens
        return float(t) if self.model.moe and t else 0.0

    @property
    def experts_slow(self) -> bool:
        """True when the routed experts cost more than the dense layers' rates give them."""
        return bool(self.expert_extra or self.expert_compute_extra or self.expert_tile)

    def with_experts_as_dense(self) -> Instance:
        """This instance with its profile's experts as fast as its dense layers (eta_experts and
        expert_tile_tokens unset)."""
        p = self.profile
        if p.eta_experts is None and p.eta_experts_compute is None and not p.expert_tile_tokens:
            return self
        name = self.profile_name or self.hardware.default_profile
        prof = p.model_copy(
            update={"eta_experts": None, "eta_experts_compute": None, "expert_tile_tokens": None}
        )
        hw = self.hardware.model_copy(update={"profiles": {**self.hardware.profiles, name: prof}})
        return dataclasses.replace(self, hardware=hw, profile_name=name)

    def expert_extra_work(self, tokens: ArrayLike) -> tuple[Any, Any]:
        """(FLOPs, bytes) that the experts' slowness adds to an iteration of `tokens` tokens, at the
        dense rates: `expert_compute_extra` times the routed matmul FLOPs, `expert_extra` times the
        touched experts' bytes, and each touched expert's `expert_tile` tokens of grouped-GEMM work
        (at the experts' compute rate). Floats stay floats."""
        t: Any
        if isinstance(tokens, SCALAR_TYPES):
            scalar, t = True, max(float(tokens), 0.0)
        else:
            scalar, t = False, np.maximum(np.asarray(tokens, dtype=float), 0.0)
        m, x, xc, tile = self.model, self.expert_extra, self.expert_compute_extra, self.expert_tile
        if m.moe is None or not (x or xc or tile):
            return (0.0, 0.0) if scalar else (np.zeros_like(t), np.zeros_like(t))
        k, e = m.moe.experts_per_token, m.moe.experts
        # numpy's power for floats too: the same bits as for arrays (libm's pow need not give them)
        touched = e * (1.0 - (float(np.power(1.0 - k / e, t)) if scalar else np.power(1.0 - k / e, t)))
        per_token = 2.0 * m.moe_layers() * m.expert_params()
        flops = xc * per_token * k * t + (1.0 + xc) * per_token * tile * touched
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
        return (total - experts) * self.dp + experts * self.expert_copies

    @property
    def expert_copies(self) -> int:
        """Whole copies of the routed experts the instance holds a stage: one per expert-parallel group
        (tp x dp / ep of them), or one per data-parallel rank without expert parallelism."""
        return (self.tp * self.dp) // self.ep if self.ep > 1 else self.dp

    @property
    def overhead_s(self) -> float:
        """Fixed seconds of one iteration: the profile's overhead, scaled by the model's layers, and a
        MoE model's fixed cost per MoE layer (`CalibrationProfile.moe_layer_ms`) and, where its
        tensor-parallel group spans machines, per step (`CalibrationProfile.span_step_ms`)."""
        per_layer = self.profile.overhead_ms / OVERHEAD_LAYERS + (EAGER_LAYER_MS if self.eager else 0.0)
        fixed = per_layer / 1000.0 * self.model.layers
        if self.model.moe and self.profile.moe_layer_ms:
            fixed += self.profile.moe_layer_ms / 1000.0 * self.model.moe_layers()
        if self.model.moe and self.profile.span_step_ms and self.spans_machines:
            fixed += self.profile.span_step_ms / 1000.0
        return fixed

    @property
    def spans_machines(self) -> bool:
        """True when the tensor-parallel group spans machines (`spans_machines`)."""
        return spans_machines(self.hardware, self.tp)

    @property
    def memory_bytes(self) -> float:
        """Usable device memory of the instance (mem_fraction of the total, `memory_gb` in GiB):
        every tier's where the chip states SRAM or DDR beside it (`HardwareSpec.total_memory_gb`)."""
        return self.chips * self.hardware.total_memory_gb * GIB * self.mem_fraction

    @property
    def memory_tiers(self) -> MemoryTiers | None:
        """Where weights and KV live on a chip with SRAM or DDR tiers (`engine.costmodel.tiers`);
        None for a chip with one memory, whose iterations read bytes over `bytes_per_s`."""
        if not self.hardware.tiered:
            return None
        return MemoryTiers.build(
            self.hardware,
            chips_per_rank=self.tp * self.pp,
            tp=self.tp,
            mem_fraction=self.mem_fraction,
            eta_bandwidth=self.profile.eta_bandwidth * self.bandwidth_scale,
            weight_bytes=self.weight_bytes / self.dp,
            reserve_bytes=self.activation_bytes / self.dp,
        )

    @property
    def activation_bytes(self) -> float:
        """Memory kept for the activations of one forward pass of `activation_tokens` tokens
        (each data-parallel rank runs its share of them)."""
        if self.activation_tokens <= 0:
            return 0.0
        rank_tokens = self.activation_tokens / self.dp
        per_chip = rank_tokens * self.model.activation_bytes_per_token(self.tp)
        if self.startup_profile in profile_pass.PROFILED_STACKS:
            split = 1 if self.ep > 1 else self.tp
            per_chip += profile_pass.moe_pass_bytes(self.model, rank_tokens, split)
        return self.chips * per_chip

    @property
    def resident_extra_bytes(self) -> float:
        """Memory the stack keeps beside the weights it reads (V0's absorbed MLA matrices, each
        data-parallel rank's copy), which the KV cache does not get."""
        if self.startup_profile not in profile_pass.ABSORBING_STACKS:
            return 0.0
        return profile_pass.absorbed_mla_bytes(self.model, self.weights) * self.dp

    @property
    def kv_capacity_tokens(self) -> int:
        """Tokens of KV cache that fit beside the weights and the activations (0 if they do not): in
        a pipeline whose stages differ, the most loaded stage's (`engine.costmodel.stages`)."""
        if self.pp > 1 and stages.staged(self):
            return stages.stage_capacity(self)
        return self.whole_kv_capacity_tokens

    @property
    def kv_room_per_token(self) -> float:
        """KV memory one cached token takes as the stack lays it out (`kv_bytes_held`; under V0 with
        the MLA latent aligned, `profile_pass.aligned_kv_factor` times that)."""
        held = self.kv_bytes_held
        if self.startup_profile in profile_pass.ABSORBING_STACKS:
            held *= profile_pass.aligned_kv_factor(self.model, BYTES_PER_ELEMENT[self.kv])
        return held

    @property
    def whole_kv_capacity_tokens(self) -> int:
        """`kv_capacity_tokens` of the instance taken whole, its stages' differences aside."""
        free = self.memory_bytes - self.weight_bytes - self.activation_bytes - self.resident_extra_bytes
        return max(0, int(free // self.kv_room_per_token))

    @property
    def fit_room_tokens(self) -> int:
        """The KV room `fits` asks for: one full-context request, at most 4,096 tokens."""
        return min(self.model.max_context, 4096)

    def fits(self) -> bool:
        """True when the weights fit with room for at least one full-context request."""
        return self.kv_capacity_tokens >= self.fit_room_tokens

    def _link_bytes_per_s(self, span: int | None = None) -> float:
        """One-direction bandwidth per chip of the link joining `span` chips (default: tp).

        Within the scale-up domain (an NVLink node or rack) the scale-up fabric; beyond it the
        scale-out NICs; chips without a scale-up fabric use PCIe.
        """
        hw = self.hardware
        if spans_machines(hw, span or self.tp) and hw.scale_out_gb_s:
            return hw.scale_out_gb_s * 1e9
        bw = hw.scale_up_gb_s / 2.0 or hw.pcie_gb_s
        return bw * 1e9

    def allreduce_bytes_per_s(self) -> float:
        """One-direction bandwidth per chip of the tensor-parallel ring all-reduce.

        Within the scale-up domain it is the link's. Beyond it NCCL runs one ring per NIC (a
        channel each), so a domain's cross-domain share goes out over all its chips' NICs side by
        side, where one ring would cross through one: `scale_out_gb_s` (per chip) times the
        domain's chips, capped by the in-domain link every ring's other hops take
        (docs/cost-model.md, "t_tp").
        """
        hw = self.hardware
        if not self.spans_machines or not hw.scale_out_gb_s:
            return self._link_bytes_per_s()
        in_domain = self._link_bytes_per_s(hw.scale_up_domain)
        return min(hw.scale_out_gb_s * hw.scale_up_domain * 1e9, in_domain)

    def link_latency_s(self, span: int | None = None, *, reduce: bool = False) -> float:
        """Seconds of latency of one collective over `span` chips (default: tp): the chip's
        `allreduce_latency_us` within its scale-up domain, at least `SCALE_OUT_LATENCY_US` beyond it,
        times `scale_out_hops` for an all-reduce (`reduce`; a send or an all-to-all crosses once)."""
        lat = self.hardware.allreduce_latency_us
        chips = span or self.tp
        if spans_machines(self.hardware, chips):
            lat = max(lat, SCALE_OUT_LATENCY_US * (scale_out_hops(self.hardware, chips) if reduce else 1))
        return lat * 1e-6

    def comm_time(self, tokens: ArrayLike) -> Any:
        """Seconds of tensor- and pipeline-parallel communication for an iteration of `tokens`
        (floats stay floats)."""
        t: Any
        if isinstance(tokens, SCALAR_TYPES):
            scalar, t = True, float(tokens)
        else:
            scalar, t = False, np.asarray(tokens, dtype=float)
        msg = t * self.model.hidden * ACTIVATION_BYTES
        out: Any = 0.0 if scalar else np.zeros_like(t)
        if self.tp > 1:
            ring = 2.0 * (self.tp - 1) / self.tp * msg / self.allreduce_bytes_per_s()
            out = out + 2.0 * self.model.layers * (ring + self.link_latency_s(reduce=True))
        if self.pp > 1:
            out = out + (self.pp - 1) * (
                msg / self._link_bytes_per_s(self.chips) + self.link_latency_s(self.chips)
            )
        return out

    def weight_bytes_read(self, tokens: ArrayLike) -> Any:
        """Weight bytes one iteration of `tokens` tokens streams (vectorised over tokens; floats
        stay floats)."""
        if isinstance(tokens, SCALAR_TYPES):
            at = float(tokens) if self.model.moe else 0.0
            return self.model.weight_bytes_read(self.weights, at, self.attention_weights)
        t = np.asarray(tokens, dtype=float)
        if not self.model.moe:
            return np.full_like(t, self.model.weight_bytes_read(self.weights, 0.0, self.attention_weights))
        # element by element on Python floats, as `np.vectorize` did, without its trial call on the first
        read = self.model.weight_bytes_read
        per = [read(self.weights, x, self.attention_weights) for x in t.ravel().tolist()]
        return np.array(per, dtype=float).reshape(t.shape)
