"""Calibration: fit a chip's achievable fractions and overhead to measured timings.

A measurement is one of three kinds, on one model and instance (chip x tp, precisions):

- ``prefill``: the time of one prompt's prefill alone (ms);
- ``decode``: the time of one decode step of `batch` requests at `context_tokens` (ms);
- ``throughput``: an offline run's output tokens/s with every request of fixed prompt and output
  length queued at once (TensorRT-LLM's ``trtllm-bench`` tables).

Throughput is predicted by the steady state of continuous batching: B requests in flight, B
limited by the batch cap, the per-iteration token budget (B decode tokens plus the prefill
tokens B * ISL / OSL that keep the batch full) and the KV capacity (B * (ISL + OSL) tokens). An
iteration then runs B decodes at mean context ISL + OSL / 2 and those prefill tokens; the rate
is B / t_iteration.

The fit minimises the squared log error over a grid of (eta_compute, eta_bandwidth,
overhead_ms), refined twice around the best point: robust, dependency-free, and fast because the
cost model's compute and memory parts scale as 1/eta.
"""

from __future__ import annotations

import csv
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from engine.catalog.entries import Catalog
from engine.catalog.specs import OVERHEAD_LAYERS, CalibrationProfile, HardwareSpec, KvPrecision, Precision
from engine.core import datafiles
from engine.core.errors import ScenarioError
from engine.costmodel.iteration import iteration_cost
from engine.costmodel.perf import MATMUL_FRACTION_BF16, Instance, Speculation, roof
from engine.costmodel.stacks import activation_tokens

Kind = Literal["prefill", "decode", "throughput", "tpot", "ttft", "batch_latency"]
Figure = Literal["throughput", "ttft", "tpot", "energy"]

FIGURE_OF: dict[str, Figure] = {
    "throughput": "throughput", "prefill": "ttft", "ttft": "ttft",
    "decode": "tpot", "tpot": "tpot", "batch_latency": "tpot",
}  # fmt: skip
"""The kind of headline figure each kind of measurement checks (errors are reported per figure)."""

MIN_ETA_COMPUTE = 0.05
"""Lower bound of a fitted compute fraction."""
MAX_ETA_COMPUTE = 0.85
"""Upper bound of a fitted compute fraction (of the BF16 peak): large BF16 GEMMs alone reach about 83%
(`perf.MATMUL_FRACTION_BF16`), and tests/calibration/test_kernel_ceilings.py keeps Hopper fits below it."""
MAX_ETA_BANDWIDTH = 0.92
"""Upper bound of a fitted bandwidth fraction: streaming reads reach about 90% (Azure measured 92% on GB200)."""

DEFAULT_MAX_BATCH = 2048
"""Batch cap assumed for throughput points (trtllm-bench's default max_batch_size)."""
DEFAULT_TOKEN_BUDGET = 8192
"""Tokens per iteration assumed for throughput points (trtllm-bench's default max_num_tokens)."""

DECODE_PIECES = 8
"""A run of decode steps with a growing context is summed as this many pieces at their mid context."""

MEASUREMENT_COLUMNS = (
    "id", "model", "hardware", "tp", "weights", "kv", "kind", "prompt_tokens", "output_tokens",
    "batch", "context_tokens", "value", "unit", "source",
)  # fmt: skip
"""Columns of a measurement CSV a user can fit their own profile from."""


@dataclass(frozen=True, kw_only=True)
class Measurement:
    """One measured point and its setup.

    Kinds: ``prefill`` (one prompt alone, ms), ``decode`` (one step of `batch` requests at
    `context_tokens`, ms), ``throughput`` (tokens/s), ``tpot`` (time between a request's tokens,
    ms), ``ttft`` (time to first token, ms) and ``batch_latency`` (a static batch of `batch`
    requests from start to last token, ms). Throughput, TPOT and TTFT are predicted in the steady
    state of continuous batching under the row's limits: the batch cap, the token budget, chunked
    prefill or not, and at most `concurrency` requests in flight (0: as many as fit). With
    `static`, the `batch` requests all start together and the run ends when they finish.

    The instance is `tp` x `dp` chips: `dp` attention data-parallel ranks of `tp` chips, the
    routed experts spread over `ep` of them with `imbalance` (busiest rank over the mean), and
    `speculation` (drafted tokens, acceptance) for MTP speculative decoding. Such a point is
    predicted by the cost model's general step model (`predict`); it is never fitted.
    """

    id: str
    model: str
    hardware: str
    tp: int
    weights: Precision
    kv: KvPrecision
    kind: Kind
    prompt_tokens: int = 0
    output_tokens: int = 0
    batch: int = 1
    context_tokens: int = 0
    value: float
    unit: str
    source: str = ""
    kv_mem_fraction: float = 0.9
    stack: str = ""
    source_key: str = ""
    max_batch: int = DEFAULT_MAX_BATCH
    token_budget: int = DEFAULT_TOKEN_BUDGET
    chunked: bool = True
    concurrency: int = 0
    static: bool = False
    count_input: bool = False
    note: str = ""
    dp: int = 1
    ep: int = 1
    imbalance: float = 1.0
    speculation: tuple[int, float] | None = None
    attention_weights: Precision | None = None
    """The attention projections' precision where the checkpoint keeps them apart (None: `weights`)."""
    eager: bool = False
    """Run without CUDA/HIP graphs (the row states `--enforce-eager`)."""
    prompts: int = 0
    """Requests the benchmark sent in all, where the row states it (0: not stated)."""
    lockstep: bool = False
    """A concurrency whose clients start together and whose requests all have the same lengths
    (bench_serving's random dataset at range ratio 1): the clients stay in step, every round's
    prompts queueing behind each other. The steady-state predictor does not model this; the
    simulator's rerun does (`engine.explain.end_to_end.rerun_point`)."""

    @property
    def plain(self) -> bool:
        """True for a tensor-parallel instance without data or expert parallelism or speculation."""
        return self.dp == 1 and self.ep == 1 and self.speculation is None

    @property
    def figure(self) -> Figure:
        """The kind of headline figure this point checks."""
        return FIGURE_OF[self.kind]


@dataclass(frozen=True)
class Parts:
    """A prediction as a weighted sum of iterations whose parts scale with 1/eta_F, 1/eta_B or not.

    Each row of `segments` is (weight, compute_s, memory_s, fixed_s, saving_s) at eta = 1 and no
    overhead; a time is sum(weight * (roof(compute / eta_F + saving, memory / eta_B) + fixed +
    overhead)) (`perf.roof`: the longer plus the unhidden share of the shorter), and a throughput
    is `numerator` divided by that time. `saving` (<= 0) is what low-precision matmuls take off the compute time (`perf.Instance.matmul_saving_s_per_flop`).
    """

    segments: np.ndarray
    numerator: float
    throughput: bool
    overhead_scale: float = 1.0
    """What one millisecond of a profile's overhead costs an iteration of this model (layers / 80)."""


def _instance(m: Measurement, catalog: Catalog, hw: HardwareSpec | None = None) -> Instance:
    chip = hw or catalog.chip(m.hardware)
    model = catalog.model(m.model)
    spec = (
        Speculation(m.speculation[0], m.speculation[1], draft_share=1.0 / model.layers)
        if m.speculation is not None
        else None
    )  # an MTP head: one layer's worth of a target step per drafted token, as the scenarios run it
    return Instance(
        model=model, hardware=chip, tp=m.tp, weights=m.weights, kv=m.kv, mem_fraction=m.kv_mem_fraction,
        dp=m.dp, ep=m.ep, imbalance=m.imbalance, speculation=spec,
        activation_tokens=activation_tokens(stack_of(m), m.token_budget), attention_weights=m.attention_weights,
        eager=m.eager,
    )  # fmt: skip


def steady_batch(
    inst: Instance, isl: int, osl: int, max_batch: int, token_budget: int, chunked: bool = True
) -> int:
    """Requests in flight in the steady state of a run of fixed ISL/OSL."""
    by_budget = token_budget / (1.0 + isl / max(osl, 1)) if chunked else float(max_batch)
    by_kv = inst.kv_capacity_tokens / max(isl + osl, 1)
    return max(1, int(min(max_batch, by_budget, by_kv)))


UNIT = CalibrationProfile(eta_compute=MATMUL_FRACTION_BF16, eta_bandwidth=1, overhead_ms=0, source="unit")
"""The profile predictions are decomposed at: no overhead, full bandwidth, and the BF16 GEMMs'
compute fraction, the highest at which a low-precision iteration's compute time is still
affine in 1 / eta_F (above it the matmuls' time is floored: `perf.Instance.matmul_saving_s_per_flop`).
`_seg` scales the compute part back to eta_F = 1."""


def _with_profile(inst: Instance, profile: CalibrationProfile) -> Instance:
    """`inst` with its chip running at `profile` (the layout, precisions and speculation kept)."""
    return Instance(
        model=inst.model, hardware=inst.hardware.model_copy(update={
            "profiles": {"given": profile}, "default_profile": "given",
        }), tp=inst.tp, pp=inst.pp, weights=inst.weights, kv=inst.kv, mem_fraction=inst.mem_fraction,
        dp=inst.dp, ep=inst.ep, imbalance=inst.imbalance, speculation=inst.speculation,
        activation_tokens=inst.activation_tokens, attention_weights=inst.attention_weights, eager=inst.eager,
    )  # fmt: skip


def _unit(inst: Instance, eta_experts: float | None) -> Instance:
    """`inst` at the `UNIT` profile, its routed experts at `eta_experts` of its dense layers' rates
    (None: as fast). The experts' share is a ratio, kept when eta_F and eta_B scale."""
    if eta_experts is None:
        return _with_profile(inst, UNIT)
    return _with_profile(inst, UNIT.model_copy(update={"eta_experts": eta_experts}))


Segment = tuple[float, float, float, float, float]
Seg = Callable[[float, Any], Segment]


def _seg(weight: float, c: Any) -> Segment:
    # the fixed part: communication, and (eager mode) the launches a unit profile still pays
    saving = float(c.saving_s)
    compute = (float(c.compute_s) - saving) * UNIT.eta_compute  # at eta_F = 1
    return (weight, compute, float(c.memory_s), float(c.comm_s) + float(c.overhead_s), saving)


def _seg_timed(weight: float, c: Any) -> Segment:
    """An iteration already timed at its profile: its whole time, overhead included, as 'compute'."""
    return (weight, float(c.time_s), 0.0, 0.0, 0.0)


def _decode_run(unit: Instance, batch: int, ctx0: float, steps: int, seg: Seg = _seg) -> list[Segment]:
    """`steps` decode steps of `batch` requests whose context grows from `ctx0` by one per step."""
    if steps <= 0:
        return []
    n = max(1, min(DECODE_PIECES, steps))
    edges = np.linspace(0.0, float(steps), n + 1)
    out = []
    for a, b in itertools.pairwise(edges):
        mid = ctx0 + (a + b) / 2.0
        out.append(seg(b - a, iteration_cost(unit, decode_requests=batch, decode_context_tokens=batch * mid)))
    return out


def _steady(unit: Instance, m: Measurement, b: int, seg: Seg = _seg) -> list[Segment]:
    """One average iteration of the steady state with `b` requests in flight (per output token)."""
    isl, osl = m.prompt_tokens, max(m.output_tokens, 1)
    ctx = isl + osl / 2.0
    if m.chunked:
        c = iteration_cost(
            unit, decode_requests=b, decode_context_tokens=b * ctx, prefill_tokens=b * isl / osl,
            prefill_attn_pairs=(b / osl) * isl * isl / 2.0,
            prefill_largest=min(isl, max((m.token_budget - b) / m.dp, 1)),  # a chunk fits one rank
        )  # fmt: skip
        return [seg(1.0, c)]
    # prefill-first without chunking: prefill iterations of k whole prompts between decode steps
    k = max(1, min(b, m.token_budget // max(isl, 1)))
    dec = iteration_cost(unit, decode_requests=b, decode_context_tokens=b * ctx)
    pf = iteration_cost(
        unit, prefill_tokens=k * isl, prefill_attn_pairs=k * isl * isl / 2.0, prefill_largest=isl
    )
    return [seg(1.0, dec), seg(b / osl / k, pf)]


def _static(unit: Instance, inst: Instance, m: Measurement, seg: Seg = _seg) -> tuple[list[Segment], int]:
    """A static batch: every request starts at once; waves of at most the batch cap (and KV room)."""
    isl, osl, n = m.prompt_tokens, max(m.output_tokens, 1), max(m.batch, 1)
    room = max(1, inst.kv_capacity_tokens // max(isl + osl, 1))
    per_wave = max(1, min(n, m.max_batch, room))
    waves = -(-n // per_wave)
    b = -(-n // waves)
    segs: list[Segment] = []
    if m.chunked:
        iters = max(1, -(-b * isl // max(m.token_budget, 1)))
        q = b * isl / iters
        pf = iteration_cost(
            unit, prefill_tokens=q, prefill_attn_pairs=b * isl * isl / 2.0 / iters,
            prefill_largest=min(isl, q, m.token_budget / m.dp),  # a prompt's chunk, on one rank
        )  # fmt: skip
        segs.append(seg(iters * waves, pf))
    else:
        k = max(1, min(b, m.token_budget // max(isl, 1)))
        iters = -(-b // k)
        pf = iteration_cost(
            unit, prefill_tokens=k * isl, prefill_attn_pairs=k * isl * isl / 2.0, prefill_largest=isl
        )
        segs.append(seg(iters * waves, pf))
    segs.extend(
        (w * waves, c, mm, f, sv) for w, c, mm, f, sv in _decode_run(unit, b, float(isl), osl - 1, seg)
    )
    return segs, n


def _own_prefill(unit: Instance, m: Measurement, b: int, seg: Seg = _seg) -> Segment:
    """A prompt's own prefill in the steady state: chunks that fit its rank's share of the budget
    beside the other `b - 1` requests' decodes, or (without chunking) one whole-prompt pass."""
    isl, osl = m.prompt_tokens, max(m.output_tokens, 1)
    if not m.chunked:
        return seg(
            1.0,
            iteration_cost(unit, prefill_tokens=isl, prefill_attn_pairs=isl * isl / 2.0, prefill_largest=isl),
        )
    others = b - 1  # with attention DP, the prompt's chunks fit its rank's own budget
    room = max((m.token_budget - others) // m.dp, 1)
    iters = max(1, -(-isl // room))
    q = isl / iters
    c = iteration_cost(
        unit, prefill_tokens=q, prefill_attn_pairs=isl * isl / 2.0 / iters,
        decode_requests=others, decode_context_tokens=others * (isl + osl / 2.0),
        prefill_largest=q,
    )  # fmt: skip
    return seg(iters, c)


def _round_prefill(unit: Instance, m: Measurement, b: int, seg: Seg = _seg) -> list[Segment]:
    """A lockstep round's mean wait for the first token: its `b` prompts, arrived together, prefill
    in passes of up to the token budget (whole prompts without chunking), the passes even in size
    so the work is the round's; prompt i's first token comes with the pass that ends it,
    ceil(i x passes / b), averaged over the round. With chunking, the prompts prefilled in earlier
    passes decode alongside. Under attention DP a prompt runs on one rank: the busiest holds at
    least a rank's budget of it."""
    isl = m.prompt_tokens
    per_pass = float(m.token_budget) if m.chunked else float(max(1, m.token_budget // max(isl, 1)) * isl)
    passes = max(1, math.ceil(b * isl / max(per_pass, 1.0)))
    q = b * isl / passes
    ends = np.ceil(np.arange(1, b + 1) * passes / b - 1e-9)  # the pass that ends each prompt
    prior = np.floor(np.arange(passes) * b / passes + 1e-9)  # prompts done before each pass
    done = float(prior.mean()) if m.chunked else 0.0
    c = iteration_cost(
        unit, prefill_tokens=q, prefill_attn_pairs=b * isl * isl / 2.0 / passes,
        decode_requests=done, decode_context_tokens=done * (isl + 1.0),
        prefill_largest=min(isl, q, m.token_budget / m.dp),
    )  # fmt: skip
    return [seg(float(ends.mean()), c)]


def parts(m: Measurement, inst: Instance) -> Parts:
    """The prediction of `m` on `inst` at eta = 1 and no overhead, as weighted iterations.

    Exact for a plain instance, whose iteration is one roofline over the whole batch. The step
    model of a data- or expert-parallel instance (or one that speculates) adds phases that do not
    scale together with 1/eta; `predict` times such points at their profile instead.
    """
    return _parts(m, inst, _unit(inst, inst.profile.eta_experts))


def _parts(m: Measurement, inst: Instance, unit: Instance, seg: Seg = _seg) -> Parts:
    """`parts` with every iteration timed on `unit` and made a segment by `seg`."""
    segs: list[Segment]
    numerator, thr = 1.0, False
    if m.kind == "prefill":
        q = float(m.prompt_tokens)
        segs = [
            seg(1.0, iteration_cost(unit, prefill_tokens=q, prefill_attn_pairs=q * q / 2, prefill_largest=q))
        ]
    elif m.kind == "decode":
        c = iteration_cost(unit, decode_requests=m.batch, decode_context_tokens=m.batch * m.context_tokens)
        segs = [seg(1.0, c)]
    elif m.kind == "batch_latency" or (m.kind == "throughput" and m.static):
        segs, n = _static(unit, inst, m, seg)
        if m.kind == "throughput":
            numerator, thr = float(n * (m.output_tokens + (m.prompt_tokens if m.count_input else 0))), True
    else:
        isl, osl = m.prompt_tokens, max(m.output_tokens, 1)
        cap = min(m.max_batch, m.concurrency) if m.concurrency else m.max_batch
        b = steady_batch(inst, isl, osl, cap, m.token_budget, m.chunked)
        steady = _steady(unit, m, b, seg)
        if m.kind == "throughput":
            segs = steady
            numerator, thr = float(b) * (1.0 + (isl / osl if m.count_input else 0.0)), True
        elif m.kind == "tpot":
            segs = steady
        else:  # ttft: the wait for a place, the running iteration, then the prompt's own iterations
            segs = []
            queued = max(m.concurrency - b, 0) if m.concurrency else 0
            if queued:
                segs.extend((w * queued / b * osl, c, mm, f, sv) for w, c, mm, f, sv in steady)
            if m.lockstep:  # a round's prompts arrive together and prefill one after another
                segs.extend(_round_prefill(unit, m, b, seg))
            else:
                if b > 1:
                    segs.extend((w * 0.5, c, mm, f, sv) for w, c, mm, f, sv in steady)
                segs.append(_own_prefill(unit, m, b, seg))
    return Parts(
        np.array(segs, dtype=float).reshape(-1, 5), numerator, thr, inst.model.layers / OVERHEAD_LAYERS
    )


def predict_from_parts(p: Parts, kind: Kind, eta_f: float, eta_b: float, overhead_ms: float) -> float:
    """Predicted value (ms for times, tokens/s for throughput) for given factors."""
    s = p.segments
    t = float(
        (
            s[:, 0]
            * (
                roof(s[:, 1] / eta_f + s[:, 4], s[:, 2] / eta_b)
                + s[:, 3]
                + p.overhead_scale * overhead_ms / 1000.0
            )
        ).sum()
    )
    return p.numerator / t if p.throughput else t * 1000.0


def predict(m: Measurement, catalog: Catalog, profile: CalibrationProfile) -> float:
    """What the cost model predicts for a measurement with a given profile."""
    inst = _instance(m, catalog)
    if not inst.plain:  # the step model's phases timed at the profile's rates: nothing left to scale
        p = _parts(m, inst, _with_profile(inst, profile), _seg_timed)
        return predict_from_parts(p, m.kind, 1.0, 1.0, 0.0)
    p = _parts(m, inst, _unit(inst, profile.eta_experts))
    return predict_from_parts(p, m.kind, profile.eta_compute, profile.eta_bandwidth, profile.overhead_ms)


@dataclass(frozen=True)
class Fit:
    """A fitted profile and its errors on the points it was fitted to."""

    profile: CalibrationProfile
    table: pd.DataFrame

    @property
    def median_abs_error(self) -> float:
        """Median of |predicted / measured - 1|."""
        return float(self.table["abs_error"].median())

    @property
    def worst_abs_error(self) -> float:
        """Largest |predicted / measured - 1|."""
        return float(self.table["abs_error"].max())


def _loss_grid(
    ps: Sequence[Parts], measured: Sequence[float], ef: np.ndarray, eb: np.ndarray, oh: np.ndarray
) -> np.ndarray:
    """Sum of squared log errors over a grid of (eta_F, eta_B, overhead) (axes 0, 1, 2)."""
    loss = np.zeros((ef.size, eb.size, oh.size))
    inv_f = (1.0 / ef)[:, None]
    inv_b = (1.0 / eb)[None, :]
    ohs = oh / 1000.0
    for p, meas in zip(ps, measured, strict=True):
        s = p.segments
        # (segments, F, B) roofline times, summed with weights: shape (F, B)
        both = roof(
            s[:, 1, None, None] * inv_f[None] + s[:, 4, None, None], s[:, 2, None, None] * inv_b[None]
        )
        base = np.tensordot(s[:, 0], both + s[:, 3, None, None], axes=1)
        t = base[:, :, None] + s[:, 0].sum() * p.overhead_scale * ohs[None, None, :]
        pred = p.numerator / t if p.throughput else t * 1000.0
        r2 = np.log(pred / meas) ** 2
        loss += r2 if ROBUST is None else 2.0 * ROBUST**2 * (np.sqrt(1.0 + r2 / ROBUST**2) - 1.0)
    return loss


def _grid_fit(
    ps: Sequence[Parts],
    measured: Sequence[float],
    fix_overhead_ms: float | None,
    fix_eta_bandwidth: float | None,
    prior: tuple[float, float] = (0.5, 0.75),
) -> tuple[float, float, float]:
    """The (eta_F, eta_B, overhead_ms) of least squared log error: a grid refined three times."""
    lo = np.array([MIN_ETA_COMPUTE, 0.2, 0.0])
    hi = np.array([MAX_ETA_COMPUTE, MAX_ETA_BANDWIDTH, 80.0 if fix_overhead_ms is None else 0.0])
    best = (0.5, 0.8, 0.0)
    for _ in range(4):
        ef = np.linspace(lo[0], hi[0], 40)
        eb = np.linspace(lo[1], hi[1], 40) if fix_eta_bandwidth is None else np.array([fix_eta_bandwidth])
        oh = np.linspace(lo[2], hi[2], 41) if fix_overhead_ms is None else np.array([fix_overhead_ms])
        loss = _loss_grid(ps, measured, ef, eb, oh)
        loss += PRIOR_WEIGHT * (
            np.log(ef / prior[0])[:, None, None] ** 2 + np.log(eb / prior[1])[None, :, None] ** 2
        )
        i, j, k = np.unravel_index(int(np.argmin(loss)), loss.shape)
        best = (float(ef[i]), float(eb[j]), float(oh[k]))
        span = (hi - lo) / 8.0
        lo = np.maximum([MIN_ETA_COMPUTE, 0.05, 0.0], np.array(best) - span)
        hi = np.minimum([MAX_ETA_COMPUTE, MAX_ETA_BANDWIDTH, 1000.0], np.array(best) + span)
    return best


def fit(
    points: Sequence[Measurement],
    catalog: Catalog,
    source: str,
    fix_overhead_ms: float | None = None,
    fix_eta_bandwidth: float | None = None,
    prior: tuple[float, float] = (0.5, 0.75),
) -> Fit:
    """Fit eta_compute, eta_bandwidth and overhead_ms of one chip to its measurements."""
    if not points:
        raise ScenarioError("calibration: no measurements to fit")
    chips = {p.hardware for p in points}
    if len({FAMILY.get(c, c) for c in chips}) != 1:
        raise ScenarioError(f"calibration: fit one chip (or one chip family) at a time (got {sorted(chips)})")
    # a MoE point is decomposed with its experts as fast as the dense layers, as the profile says
    ps = [_parts(m, inst, _unit(inst, None)) for m in points for inst in (_instance(m, catalog),)]
    best = _grid_fit(ps, [m.value for m in points], fix_overhead_ms, fix_eta_bandwidth, prior)
    profile = CalibrationProfile(
        eta_compute=round(best[0], 3),
        eta_bandwidth=round(best[1], 3),
        overhead_ms=round(best[2], 2),
        source=source,
        # MoE points were timed with experts as fast as the dense layers: the fractions hold their
        # slowness, which the shipped experts' factor must not add a second time
        eta_experts=1.0 if any(is_moe(m, catalog) for m in points) else None,
    )
    return Fit(profile=profile, table=table(points, catalog, profile))


def layout(m: Measurement) -> str:
    """How a point's chips are split when not plain tensor parallelism: ' (tp1 dp8 ep8, MTP 3 at 80%)'."""
    if m.plain:
        return ""
    chips = " ".join([f"tp{m.tp}"] + [f"{k}{v}" for k, v in (("dp", m.dp), ("ep", m.ep)) if v > 1])
    spec = f", MTP {m.speculation[0]} at {m.speculation[1]:.0%}" if m.speculation is not None else ""
    return f" ({chips}{spec})"


def describe(m: Measurement) -> str:
    """A short label of a point's setup: 'decode b1 ctx 512', 'tpot c8 20000/2000', ..."""
    io = f"{m.prompt_tokens}/{m.output_tokens}"
    if m.kind == "prefill":
        return f"prefill {m.prompt_tokens} tok"
    if m.kind == "decode":
        return f"decode b{m.batch} ctx {m.context_tokens}"
    if m.kind == "batch_latency" or m.static:
        return f"{m.kind.replace('_', ' ')} b{m.batch} {io}"
    load = f"c{m.concurrency}" if m.concurrency else "offline"
    return f"{'' if m.kind == 'throughput' else m.kind + ' '}{load} {io}".strip()


def table(
    points: Iterable[Measurement], catalog: Catalog, profile: CalibrationProfile | None = None
) -> pd.DataFrame:
    """Setup, measured, predicted and error for each point.

    Without an explicit profile, each point uses its chip's profile for the point's stack when
    the chip has one (e.g. ``trtllm``), and the profile the trust rules give it otherwise; a MoE
    point's also takes the shipped experts' factor (`trust.with_experts`).
    """
    from engine.calibration import trust  # the rules of a chip without its own profile

    rows = []
    for m in points:
        inst = _instance(m, catalog)
        stack = stack_of(m)
        own = inst.hardware.profiles.get(stack)
        moe = is_moe(m, catalog)
        if own is not None and moe:
            own = trust.with_experts(own)
        prof = profile or own or trust.calibration(inst.hardware, stack, catalog, moe=moe)[0]
        pred = predict(m, catalog, prof)
        setup = f"{m.model} {m.tp * m.dp}x{m.hardware} {m.weights}{layout(m)}"
        what = describe(m)
        rows.append(
            {
                "id": m.id, "setup": setup, "point": what, "kind": m.kind, "unit": m.unit,
                "profile": "given" if profile else (stack if own else f"{stack} (by rule)"),
                "measured": m.value, "predicted": pred, "error": pred / m.value - 1.0,
                "abs_error": abs(pred / m.value - 1.0),
            }
        )  # fmt: skip
    return pd.DataFrame(rows)


# --- the shipped profiles -------------------------------------------------------------------

STACKS = {
    "splitwise": "Splitwise characterization", "trtllm": "TensorRT-LLM", "vllm": "vLLM", "vllm-v0": "vLLM V0", "sglang": "SGLang",
    "user": "user", "vllm-ascend": "vLLM-Ascend", "mindie": "MindIE",
}  # fmt: skip
"""Serving stacks the reference measurements come from, by profile name."""

FAMILY = {"h100-sxm": "hopper", "h200": "hopper"}
"""Chips fitted together: the same GPU die and software, differing only in memory.

H200 is an H100 with more and faster HBM. Fitted alone on its four throughput points, its
bandwidth fraction is not identifiable and came out far below H100's, which would make the
faster chip slower at decode. One profile per (family, stack) keeps them physically consistent.
"""

BANDWIDTH_FROM = {("b200", "trtllm"): "h100-sxm"}
"""(chip, stack) fits whose points cannot identify the bandwidth fraction: a sibling's is used.

B200's TensorRT-LLM points are large-batch FP4 runs, bound mostly by compute; fitted freely, its
bandwidth fraction came out at 0.28 (2.2 TB/s of 8), which would make a B200 decode slower than
a single H100. The same stack on Hopper, whose points pin it down, gives the fraction used
instead; only eta_compute is fitted.
"""

FIXED_OVERHEAD_MS = {"trtllm": 3.0}
"""Per-iteration overhead held fixed when fitting a stack whose data cannot separate it.

TensorRT-LLM's published numbers are offline throughputs at large batch only: they cannot tell a
fixed per-iteration cost from a per-token one. Fitted freely, the overhead absorbs per-token
costs (about 13 ms on H100), which would make batch-1 decode nearly twice as slow as the stack
really is. Assumption: with CUDA graphs and an overlapped scheduler, the overhead per iteration
of an 80-layer model is about 3 ms (scaled by layers like every overhead); the fractions are
fitted with it held there.
"""

PRIOR_WEIGHT = 0.02
ROBUST: float | None = None
POOLED_PRIOR = False
"""Weak prior of every fit: eta_compute 0.5, eta_bandwidth 0.75, weight 0.02 on their squared log.

It decides only what the points cannot: four batch-1 decode steps say nothing of the compute
fraction, which would otherwise land on the grid's edge. Against a single point's squared log
error of 0.01 to 0.1 it moves identified factors by a few percent at most.
"""


def stack_of(m: Measurement) -> str:
    """The profile name a reference measurement belongs to."""
    if m.stack:
        return m.stack
    if "Splitwise" in m.source:
        return "splitwise"
    if "TensorRT-LLM" in m.source:
        return "trtllm"
    return "user"


def is_moe(m: Measurement, catalog: Catalog) -> bool:
    """True for points of mixture-of-experts models: never in a dense profile's fit (`fit_experts`)."""
    return catalog.model(m.model).moe is not None


EXPERT_FIGURES: tuple[Figure, ...] = ("throughput", "tpot")
"""The MoE figures `fit_experts` fits. TTFT is predicted, not fitted: the MoE rows that give it
(dstack's, at a concurrency) count time spent waiting inside the server, which no row states
(at 128 clients, a mean TTFT longer than a request's whole decode)."""


EXPERTS_CHECKED_ONLY: tuple[str, ...] = ("vllm-ascend", "mindie")
"""Stacks whose MoE rows check the experts' factor but are not fitted to it: the Ascend 910B's
(docs/calibration.md, 'Ascend 910B'). The factor is one for every chip and stack; the 910B's seven
rows rest on a dense profile of five points from one source, and would move every chip's MoE
figures by themselves (0.32 to 0.30)."""


@dataclass(frozen=True)
class ExpertFit:
    """One `eta_experts` for every stack, fitted to the MoE points with the dense profiles they borrow."""

    eta_experts: float
    ids: tuple[str, ...]
    log_errors: tuple[float, ...]
    """log(predicted / measured) of each fitted point at `eta_experts`."""

    @property
    def median_abs_error(self) -> float:
        """Median |predicted / measured - 1| over the fitted points."""
        return float(np.median(np.abs(np.expm1(self.log_errors))))

    @property
    def source(self) -> str:
        """Where the factor comes from, for a profile's source text."""
        return (
            f"fitted to {len(self.ids)} MoE throughput and TPOT measurements ({', '.join(self.ids)}), "
            "with the dense profiles each borrows (docs/calibration.md)"
        )


def fit_experts(
    points: Sequence[Measurement], catalog: Catalog, profile_of: Callable[[Measurement], CalibrationProfile]
) -> ExpertFit | None:
    """The routed experts' rate against the dense layers' (`CalibrationProfile.eta_experts`) of least
    squared log error over the MoE points' `EXPERT_FIGURES`, each predicted with `profile_of(point)`
    (the dense profile its chip and stack get); None without such points.

    One factor for every stack and chip: per stack, the MoE rows come from one source each (dstack's
    vLLM and SGLang runs), which cannot be told apart from that source's own harness. A grid in
    steps of 0.05, then 0.01 around the best.
    """
    pts = [
        (m, profile_of(m))
        for m in points
        if is_moe(m, catalog) and m.figure in EXPERT_FIGURES and m.stack not in EXPERTS_CHECKED_ONLY
    ]
    if not pts:
        return None

    def logs(e: float) -> np.ndarray:
        return np.array(
            [math.log(predict(m, catalog, p.model_copy(update={"eta_experts": e})) / m.value) for m, p in pts]
        )

    def best(grid: np.ndarray) -> float:
        return float(grid[int(np.argmin([float((logs(e) ** 2).sum()) for e in grid]))])

    coarse = best(np.round(np.arange(0.05, 1.0001, 0.05), 2))
    fine = best(np.round(np.arange(max(0.02, coarse - 0.04), min(1.0, coarse + 0.04) + 1e-9, 0.01), 2))
    return ExpertFit(fine, tuple(m.id for m, _ in pts), tuple(float(x) for x in logs(fine)))


def kv_oversubscribed(m: Measurement, catalog: Catalog) -> bool:
    """True for a static batch whose requests that run at once (at most the batch cap), grown to full
    length, overflow the KV room: the stack then preempts. A burst of more requests than the cap
    runs in waves, which the predictor models."""
    static = m.static or m.kind == "batch_latency"  # as `_parts` runs them
    at_once = min(m.batch, m.max_batch)
    return static and at_once * (m.prompt_tokens + m.output_tokens) > _instance(m, catalog).kv_capacity_tokens


def reference_fits(points: Sequence[Measurement], catalog: Catalog) -> dict[tuple[str, str], Fit]:
    """Fitted profiles per (chip, stack) from the reference points, as shipped in the catalog.

    Dense-model points only: MoE points check how the dense profiles carry to expert layers (their
    kernels, routing imbalance and all-to-all), which they would otherwise bend. Static batches
    that overflow the KV room are checked, not fitted: the stack preempts and recomputes, which
    the predictor's waves do not reproduce, and a fit would take the difference for slow chips
    (dstack's 32K-token H100 batches pulled the compute fraction to 0.14). Each (chip family,
    stack) with at least two points is fitted; stacks in `FIXED_OVERHEAD_MS` keep their overhead
    fixed and fit the two fractions. A chip with a single point is not fitted: it serves as a
    held-out check of a sibling chip's profile.
    """
    groups: dict[tuple[str, str], list[Measurement]] = {}
    for m in points:
        if is_moe(m, catalog) or kv_oversubscribed(m, catalog):
            continue
        groups.setdefault((FAMILY.get(m.hardware, m.hardware), stack_of(m)), []).append(m)
    from engine.calibration.trust import STACK_ORDER  # the serving stacks (a research harness is not one)

    first = _fit_groups(groups, catalog, {})
    # second pass: what a group's points cannot tell is drawn towards the same chip's fits under
    # the other serving stacks (Splitwise's harness, whose fixed costs no stack has, informs none)
    serving = {k: f for k, f in first.items() if k[1] in STACK_ORDER}
    priors: dict[tuple[str, str], tuple[float, float]] = {}
    pooled = (
        float(np.median([f.profile.eta_compute for f in serving.values()])) if serving else 0.5,
        float(np.median([f.profile.eta_bandwidth for f in serving.values()])) if serving else 0.75,
    )
    for key in groups:
        chip_fits = [f.profile for (c, s), f in serving.items() if FAMILY.get(c, c) == key[0] and s != key[1]]
        priors[key] = (
            (
                float(np.mean([p.eta_compute for p in chip_fits])),
                float(np.mean([p.eta_bandwidth for p in chip_fits])),
            )
            if chip_fits
            else pooled
        )
    return _fit_groups(groups, catalog, priors)


def _fit_groups(
    groups: dict[tuple[str, str], list[Measurement]],
    catalog: Catalog,
    priors: dict[tuple[str, str], tuple[float, float]],
) -> dict[tuple[str, str], Fit]:
    fits: dict[tuple[str, str], Fit] = {}
    # chips that borrow a sibling's bandwidth fraction are fitted after the sibling
    order = sorted(groups.items(), key=lambda kv: ((kv[1][0].hardware, kv[0][1]) in BANDWIDTH_FROM, kv[0]))
    for key, pts in order:
        stack = key[1]
        if len(pts) < 2:
            continue
        ids = ", ".join(p.id for p in pts)
        chips = sorted({p.hardware for p in pts})
        src = f"fitted to {STACKS.get(stack, stack)} measurements {ids} (data/reference/calibration*.csv)"
        if len(chips) > 1:
            src += f"; one profile for {' and '.join(chips)} (same GPU die and stack)"
        fixed = FIXED_OVERHEAD_MS.get(stack)
        if fixed is not None:
            src += f"; overhead held at {fixed} ms (assumption, docs/calibration.md)"
        sibling = BANDWIDTH_FROM.get((chips[0], stack)) if len(chips) == 1 else None
        eta_b = fits[(sibling, stack)].profile.eta_bandwidth if sibling and (sibling, stack) in fits else None
        if eta_b is not None:
            src += (
                f"; eta_bandwidth taken from the {sibling} {stack} fit (not identifiable from these points)"
            )
        prior = priors.get(key, (0.5, 0.75))
        result = fit(pts, catalog, src, fix_overhead_ms=fixed, fix_eta_bandwidth=eta_b, prior=prior)
        for chip in chips:
            fits[(chip, stack)] = result
    return fits


def profile_toml(name: str, profile: CalibrationProfile) -> str:
    """A ``[profiles.<name>]`` table as TOML text."""
    src = profile.source.replace("\\", "\\\\").replace('"', '\\"')
    return (
        f"[profiles.{name}]\n"
        f"eta_compute = {profile.eta_compute}\n"
        f"eta_bandwidth = {profile.eta_bandwidth}\n"
        f"overhead_ms = {profile.overhead_ms}\n"
        + (f"eta_experts = {profile.eta_experts}\n" if profile.eta_experts is not None else "")
        + f'source = "{src}"\n'
    )


def with_profile(text: str, name: str, profile: CalibrationProfile, make_default: bool) -> str:
    """A hardware entry's TOML text with a profile added or replaced (other text kept)."""
    lines = text.splitlines()
    out: list[str] = []
    skip = False
    for line in lines:
        if line.strip().startswith("["):
            skip = line.strip() == f"[profiles.{name}]"
        if not skip and not (make_default and line.startswith("default_profile")):
            out.append(line)
    if make_default:
        first_table = next(i for i, ln in enumerate(out) if ln.strip().startswith("["))
        out.insert(first_table, f'default_profile = "{name}"')
    body = "\n".join(out).rstrip() + "\n\n" + profile_toml(name, profile)
    return body


def reference_csv() -> Path | None:
    """The reference measurements shipped with the project (data/reference/calibration.csv), if present."""
    path = datafiles.data_dir() / "reference" / "calibration.csv"
    return path if path.is_file() else None


def reference_points() -> list[Measurement]:
    """The shipped reference measurements, read; ScenarioError when they are missing."""
    path = reference_csv()
    if path is None:
        raise ScenarioError(
            "reference data not found: data/reference/calibration.csv is missing from the project"
        )
    return read_reference_csv(path)


# --- reading measurements -----------------------------------------------------------------

_MODEL_IDS = {
    "Llama-2-70B": "llama-2-70b", "BLOOM-176B": "bloom-176b", "Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "Llama-3.3-70B-Instruct": "llama-3.3-70b", "Llama-3.1-405B-Instruct": "llama-3.1-405b",
    "Qwen3-235B-A22B": "qwen3-235b-a22b",
}  # fmt: skip
_HW_IDS = {
    "NVIDIA A100-80GB (DGX)": "a100-80g", "NVIDIA H100-80GB (DGX)": "h100-sxm",
    "NVIDIA H100 SXM 80GB": "h100-sxm", "NVIDIA H200 SXM 141GB": "h200", "NVIDIA B200 180GB": "b200",
    "NVIDIA GB200 192GB": "gb200",
}  # fmt: skip
_PRECISION: dict[str, Precision] = {"FP16": "bf16", "BF16": "bf16", "FP8": "fp8", "FP4": "fp4"}


def read_reference_csv(path: str | Path) -> list[Measurement]:
    """The shared reference file (calibration.csv: Splitwise timings, TensorRT-LLM throughputs)."""
    out = []
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            scen = row["scenario"]
            weights = _PRECISION[row["precision"]]
            kv: KvPrecision = "fp8" if weights in ("fp8", "fp4") else "bf16"
            common: dict[str, Any] = {
                "id": row["id"], "model": _MODEL_IDS[row["model"]], "hardware": _HW_IDS[row["hardware"]],
                "tp": int(row["tp"]), "weights": weights, "kv": kv, "value": float(row["value"]),
                "unit": row["unit"], "source": row["source"],
            }  # fmt: skip
            if scen.startswith("isolated prefill"):
                out.append(Measurement(kind="prefill", prompt_tokens=int(row["input_len"]), **common))
            elif scen.startswith("decode step"):
                batch = int(scen.rsplit(" ", 1)[-1])
                out.append(
                    Measurement(kind="decode", batch=batch, context_tokens=int(row["input_len"]), **common)
                )
            else:
                out.append(
                    Measurement(
                        kind="throughput", prompt_tokens=int(row["input_len"]),
                        output_tokens=int(row["output_len"]), kv_mem_fraction=0.92, **common,
                    )
                )  # fmt: skip
    return out


def read_measurements(path: str | Path) -> list[Measurement]:
    """A user's measurement CSV (columns `MEASUREMENT_COLUMNS`); errors name the line and column."""
    out = []
    try:
        fh = open(path, newline="", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc}") from None
    with fh:
        reader = csv.DictReader(fh)
        missing = [
            c for c in ("model", "hardware", "tp", "kind", "value") if c not in (reader.fieldnames or [])
        ]
        if missing:
            raise ScenarioError(f"{path}: missing column(s) {', '.join(missing)}")
        for line, row in enumerate(reader, start=2):
            try:
                kind = row["kind"].strip()
                if kind not in ("prefill", "decode", "throughput"):
                    raise ValueError(f"kind: {kind!r} is not prefill, decode or throughput")
                weights = (row.get("weights") or "bf16").strip()
                kv = (row.get("kv") or "bf16").strip()
                if weights not in ("bf16", "fp8", "fp4", "int4"):
                    raise ValueError(f"weights: {weights!r} is not bf16, fp8, fp4 or int4")
                if kv not in ("bf16", "fp8"):
                    raise ValueError(f"kv: {kv!r} is not bf16 or fp8")
                value = float(row["value"])
                if not math.isfinite(value) or value <= 0:
                    raise ValueError(f"value: must be a positive number (got {row['value']!r})")
                out.append(
                    Measurement(
                        id=row.get("id") or f"line{line}", model=row["model"].strip(),
                        hardware=row["hardware"].strip(), tp=int(row["tp"]),
                        weights=weights,  # type: ignore[arg-type]
                        kv=kv,  # type: ignore[arg-type]
                        kind=kind,  # type: ignore[arg-type]
                        prompt_tokens=int(row.get("prompt_tokens") or 0),
                        output_tokens=int(row.get("output_tokens") or 0),
                        batch=int(row.get("batch") or 1), context_tokens=int(row.get("context_tokens") or 0),
                        value=value, unit=row.get("unit") or ("tok/s" if kind == "throughput" else "ms"),
                        source=row.get("source") or str(path),
                    )
                )  # fmt: skip
            except (ValueError, TypeError) as exc:
                raise ScenarioError(f"{path}: line {line}: {exc}") from None
    return out
