"""The cost of one iteration over arrays, KV transfers, and where an iteration sits on the roofline.

`iteration_cost` applies the formulas of `engine.costmodel.perf` to any mix of prefill chunks and
decode steps, element-wise over numpy arrays (what tables, charts and the planner's estimates
use); the simulator's scalar fast path is `engine.costmodel.step.StepModel`, held equal to it by a
test. A KV hand-off's time is its bytes over the link plus the link's latency, and a layer-by-layer
transfer hides behind the prefill all but its last layer's share (`exposed_transfer_time`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from engine.core.errors import ScenarioError
from engine.core.traits import mypyc_attr
from engine.costmodel.perf import SCALAR_TYPES, Instance, roof
from engine.costmodel.step import StepModel


@mypyc_attr(native_class=False)  # a value that is pickled and compared: a plain class when compiled
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
    attention_compute_s: Any = 0.0
    """Seconds of `compute_s` that MLA's absorbed decode attention takes: a kernel of its own,
    timed on its own roof beside the rest (0 for standard heads, or without decodes)."""
    attention_memory_s: Any = 0.0
    """Seconds of `memory_s` that kernel takes reading the latent KV."""
    pipeline_s: Any = 0.0
    """Seconds a pipeline's stages spend in turn rather than together (0 without one): `compute_s`
    and `memory_s` are the work spread over every stage at once, and with fewer micro-batches than
    stages the iteration lasts longer by the other stages' share of the pass (a lone prompt on
    pp = 4 stages: three times `roof(compute_s, memory_s)`). Compute and memory work of the other
    stages, not link traffic: `comm_s` is the all-reduces, all-to-alls and hand-offs only."""

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
    Plain numbers on a plain instance give floats (`_plain_floats`), arrays give arrays.
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
    sums = (prefill_tokens, prefill_attn_pairs, prefill_cached_tokens, decode_requests, decode_context_tokens)
    if (in_floats := _plain_floats(inst, *sums)) is not None:
        return in_floats
    m = inst.model
    q = np.asarray(prefill_tokens, dtype=float)
    pairs = np.asarray(prefill_attn_pairs, dtype=float)
    k = np.asarray(prefill_cached_tokens, dtype=float)
    d = np.asarray(decode_requests, dtype=float)
    c = np.asarray(decode_context_tokens, dtype=float)
    tokens = q + d
    lin = 2.0 * m.matmul_params() * tokens
    apf, apf_dec = m.attention_flops_per_pair(), inst.decode_attention_flops_per_pair
    kvb = inst.kv_bytes_held
    tiers = inst.memory_tiers
    # MLA decodes absorbed, in a kernel of its own on its own roof (`StepModel._decode_attention`):
    # the rest of the iteration keeps the prompts' attention and KV
    absorbed = apf_dec != apf
    c_rest = 0.0 if absorbed else c
    flops = lin + apf * (pairs + c_rest)
    nbytes = np.where(tokens > 0, inst.weight_bytes_read(tokens) + kvb * (k + c_rest) + kvb * tokens, 0.0)
    saving_s = -lin * inst.matmul_saving_s_per_flop
    compute_s = flops / inst.flops_per_s + saving_s
    if tiers is None:
        memory_s = nbytes / inst.bytes_per_s
    else:  # SRAM, HBM, DDR: each byte at its tier's rate (engine.costmodel.tiers)
        kv_read = kvb * (k + c_rest) + kvb * tokens
        memory_s = np.where(tokens > 0, tiers.read_s(inst.weight_bytes_read(tokens), kv_read), 0.0)
    if inst.experts_slow:  # the routed experts run slower than the dense layers: their extra work
        xf, xb = inst.expert_extra_work(tokens)
        saving_s = saving_s - xf * inst.matmul_saving_s_per_flop
        compute_s = compute_s + xf / inst.flops_per_s - xf * inst.matmul_saving_s_per_flop
        memory_s = memory_s + (xb / inst.bytes_per_s if tiers is None else xb * tiers.weight_s_per_byte)
    comm_s = inst.comm_time(tokens)
    overhead = inst.overhead_s
    both = roof(compute_s, memory_s)
    dec_c: Any = 0.0
    dec_m: Any = 0.0
    if absorbed:
        dec_c = apf_dec * c / inst.flops_per_s
        dec_m = kvb * c / inst.bytes_per_s if tiers is None else tiers.read_s(0.0, kvb * c)
        both = both + roof(dec_c, dec_m)
        flops, nbytes = flops + apf_dec * c, nbytes + np.where(tokens > 0, kvb * c, 0.0)
        compute_s, memory_s = compute_s + dec_c, memory_s + dec_m
    time_s = np.where(tokens > 0, both + comm_s + overhead, 0.0)
    if inst.time_scale != 1.0:
        time_s = time_s * inst.time_scale
    return IterationCost(time_s, compute_s, memory_s, comm_s, overhead, flops, nbytes, saving_s, dec_c, dec_m)


def _plain_floats(
    inst: Instance, q_in: ArrayLike, pairs_in: ArrayLike, k_in: ArrayLike, d_in: ArrayLike, c_in: ArrayLike
) -> IterationCost | None:
    """`iteration_cost` of a plain instance on plain numbers, in floats: the same operations in the
    same order as on arrays (a float64 is a float64), without numpy's cost per call on scalars (the
    validation's fits price about 400,000 iterations). None for arrays, or a chip with memory tiers."""
    if not (
        isinstance(q_in, SCALAR_TYPES)
        and isinstance(pairs_in, SCALAR_TYPES)
        and isinstance(k_in, SCALAR_TYPES)
        and isinstance(d_in, SCALAR_TYPES)
        and isinstance(c_in, SCALAR_TYPES)
        and inst.memory_tiers is None
    ):
        return None
    q, pairs, k, d, c = float(q_in), float(pairs_in), float(k_in), float(d_in), float(c_in)
    m = inst.model
    tokens = q + d
    lin = 2.0 * m.matmul_params() * tokens
    apf, apf_dec = m.attention_flops_per_pair(), inst.decode_attention_flops_per_pair
    kvb = inst.kv_bytes_held
    flops_per_s, bytes_per_s, s_lp = inst.flops_per_s, inst.bytes_per_s, inst.matmul_saving_s_per_flop
    busy = tokens > 0
    absorbed = apf_dec != apf
    c_rest = 0.0 if absorbed else c
    flops = lin + apf * (pairs + c_rest)
    nbytes = inst.weight_bytes_read(tokens) + kvb * (k + c_rest) + kvb * tokens if busy else 0.0
    saving_s = -lin * s_lp
    compute_s = flops / flops_per_s + saving_s
    memory_s = nbytes / bytes_per_s
    if inst.experts_slow:
        xf, xb = inst.expert_extra_work(tokens)
        saving_s = saving_s - xf * s_lp
        compute_s = compute_s + xf / flops_per_s - xf * s_lp
        memory_s = memory_s + xb / bytes_per_s
    comm_s = inst.comm_time(tokens)
    overhead = inst.overhead_s
    both = roof(compute_s, memory_s)
    dec_c = 0.0
    dec_m = 0.0
    if absorbed:
        dec_c = apf_dec * c / flops_per_s
        dec_m = kvb * c / bytes_per_s
        both = both + roof(dec_c, dec_m)
        flops, nbytes = flops + apf_dec * c, nbytes + (kvb * c if busy else 0.0)
        compute_s, memory_s = compute_s + dec_c, memory_s + dec_m
    time_s = both + comm_s + overhead if busy else 0.0
    if inst.time_scale != 1.0:
        time_s = time_s * inst.time_scale
    return IterationCost(time_s, compute_s, memory_s, comm_s, overhead, flops, nbytes, saving_s, dec_c, dec_m)


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
    included). A pipeline with fewer micro-batches than stages runs its stages in turn: that
    share is `pipeline_s`, and the rest is what the links and hand-offs take.
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
    dense_t = run(StepModel(inst.with_experts_as_dense()))[0] if inst.experts_slow else out[0]
    t, flops, nbytes = (x if x.shape else float(x) for x in out)
    scale = inst.pp * inst.dp
    apf, apf_dec = inst.model.attention_flops_per_pair(), inst.decode_attention_flops_per_pair
    attention = apf * (arrays[1] + arrays[4]) if apf_dec == apf else apf * arrays[1] + apf_dec * arrays[4]
    saving = -np.maximum(np.asarray(flops) - attention, 0.0) * inst.matmul_saving_s_per_flop / scale
    compute = np.asarray(flops) / (inst.flops_per_s * scale) + saving
    memory = np.asarray(nbytes) / (inst.bytes_per_s * scale)
    tiers = inst.memory_tiers
    if tiers is not None:  # each byte at its tier's rate: the KV the batch reads and writes, the rest weights
        kv = np.minimum(
            inst.kv_bytes_held * (arrays[2] + arrays[4] + arrays[0] + arrays[3]), np.asarray(nbytes)
        )
        memory = np.asarray(tiers.read_s(np.asarray(nbytes) - kv, kv)) / scale
    both = roof(compute, memory)
    rest = np.maximum(dense_t - both - inst.overhead_s, 0.0)
    pipeline: Any = 0.0
    if inst.pp > 1:  # m micro-batches in flight (`StepModel._pipelined`): a step is pp / m of `both`
        items = np.where(
            (arrays[0] <= 0) & (arrays[3] >= 1),
            np.round(arrays[3]),
            np.floor(arrays[3]) + (arrays[0] > 0),
        )
        m = np.clip(items, 1.0, float(inst.pp))
        pipeline = np.minimum(both * (inst.pp / m - 1.0), rest)
        pipeline = pipeline if pipeline.shape else float(pipeline)
    comm = rest - pipeline
    if inst.experts_slow:  # the experts' extra time as compute and memory, not as communication
        stretch = 1.0 + np.divide(np.asarray(t) - dense_t, both, out=np.zeros_like(both), where=both > 0)
        compute, memory, saving = compute * stretch, memory * stretch, saving * stretch
    saving_s = saving if saving.shape else float(saving)
    return IterationCost(
        t, compute, memory, comm, inst.overhead_s, flops, nbytes, saving_s, pipeline_s=pipeline
    )


def _counts(name: str, value: ArrayLike, low: float) -> np.ndarray:
    """`value` as floats, refused naming `name` where one is not a finite number of at least `low`
    (exported: a prompt of -5 tokens, or None, cost 0 s and a context of -2,000 tokens 12 ms: a review)."""
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ScenarioError(f"{name}: a number of at least {low:g} (got {value!r})") from None
    if not bool(np.all(np.isfinite(a))) or bool(np.any(a < low)):
        raise ScenarioError(f"{name}: a finite number of at least {low:g} (got {value!r})")
    return a


def prefill_cost(inst: Instance, prompt_tokens: ArrayLike, cached_tokens: ArrayLike = 0) -> IterationCost:
    """Cost of prefilling one prompt (or an array of prompts, one iteration each)."""
    k = _counts("cached_tokens", cached_tokens, 0.0)
    q = _counts("prompt_tokens", prompt_tokens, 1.0) - k
    if bool(np.any(q < 0)):
        raise ScenarioError("cached_tokens: at most the prompt's tokens")
    return iteration_cost(
        inst, prefill_tokens=q, prefill_attn_pairs=q * (k + q / 2.0), prefill_cached_tokens=k
    )


def decode_cost(inst: Instance, batch: ArrayLike, context_tokens: ArrayLike) -> IterationCost:
    """Cost of one decode step of `batch` requests that each hold `context_tokens` tokens."""
    b = _counts("batch", batch, 1.0)
    return iteration_cost(
        inst, decode_requests=b, decode_context_tokens=b * _counts("context_tokens", context_tokens, 0.0)
    )


def kv_transfer_time(
    kv_bytes_per_token: float,
    tokens: ArrayLike,
    link_gb_s: float,
    latency_s: float = 0.0,
) -> Any:
    """Seconds to move `tokens` tokens of KV cache over a link of `link_gb_s` GB/s (floats stay floats)."""
    if not link_gb_s > 0:  # resolve() refuses such a scenario; this keeps direct callers honest
        raise ScenarioError(f"KV transfer over a link of {link_gb_s} GB/s: the link needs a bandwidth")
    t = tokens if isinstance(tokens, SCALAR_TYPES) else np.asarray(tokens, dtype=float)
    return latency_s + t * kv_bytes_per_token / (link_gb_s * 1e9)


def kv_transfer_s(
    kv_bytes_per_token: float, tokens: float, link_gb_s: float, latency_s: float = 0.0
) -> float:
    """`kv_transfer_time` of one transfer in floats, the same operations in the same order (typed:
    compiled, the simulator's hand-offs run it in C doubles, where the generic one, for arrays and
    numpy scalars too, took about 1,000 instructions a call)."""
    if not link_gb_s > 0:
        raise ScenarioError(f"KV transfer over a link of {link_gb_s} GB/s: the link needs a bandwidth")
    return latency_s + tokens * kv_bytes_per_token / (link_gb_s * 1e9)


def exposed_transfer_time(
    transfer_s: ArrayLike, prefill_s: ArrayLike, layers: int, overlap: bool, latency_s: float = 0.0
) -> Any:
    """Transfer time left on the critical path after the prefill ends.

    With layer-by-layer overlap, layer l's KV moves while layer l+1 computes: only the part of
    the wire time (`transfer_s` less the link's `latency_s`) that outlasts the prefill, or at
    least the last layer's share, remains, and the last layer's message still pays the latency.
    Floats stay floats (the simulator's hot path); arrays are handled element-wise.
    """
    if isinstance(transfer_s, SCALAR_TYPES) and isinstance(prefill_s, SCALAR_TYPES):
        if not overlap:
            return float(transfer_s)
        wire = transfer_s - latency_s
        return latency_s + max(wire - prefill_s * (layers - 1) / layers, wire / layers)
    tr = np.asarray(transfer_s, dtype=float)
    if not overlap:
        return tr
    pf = np.asarray(prefill_s, dtype=float)
    wire = tr - latency_s
    return latency_s + np.maximum(wire - pf * (layers - 1) / layers, wire / layers)


def exposed_transfer_s(
    transfer_s: float, prefill_s: float, layers: int, overlap: bool, latency_s: float = 0.0
) -> float:
    """`exposed_transfer_time` of one transfer in floats, the same operations (typed: compiled, the
    simulator's hand-offs run it in C doubles, where the generic one took about 1,900 instructions)."""
    if not overlap:
        return transfer_s
    wire = transfer_s - latency_s
    hidden = wire - prefill_s * (layers - 1) / layers
    last = wire / layers
    exposed = last if last > hidden else hidden  # `max(hidden, last)`: the first unless the second is greater
    return latency_s + exposed


@mypyc_attr(native_class=False)  # a value that is pickled and compared: a plain class when compiled
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
    """Arithmetic intensity, attainable FLOP/s and binding resource of one iteration.

    The bound is the longer of the iteration's compute and memory times (`compute_bound`), not its
    intensity against the ridge: those times hold what the ridge does not (weights in a slower
    memory tier, attention at BF16, a MoE's slower experts), so an SN40L's 70B prefill that reads
    its weights from DDR is bandwidth-bound though its intensity is past the ridge. The intensity
    stays the point's coordinate on the chart."""
    flops, nbytes = float(cost.flops), float(cost.bytes)
    intensity = flops / nbytes if nbytes else math.inf
    ridge = inst.matmul_flops_per_s / inst.bytes_per_s
    attainable = min(inst.matmul_flops_per_s, intensity * inst.bytes_per_s) / inst.tp
    return RooflinePoint(
        phase=phase,
        intensity_flops_per_byte=intensity,
        attainable_tflops=attainable / 1e12,
        ridge_flops_per_byte=ridge,
        bound="compute" if bool(cost.compute_bound) else "bandwidth",
        time_s=float(cost.time_s),
    )
