"""The predictor the fit uses: a measurement's predicted figure from a profile, in closed form.

Throughput is predicted by the steady state of continuous batching: B requests in flight, B
limited by the batch cap, the per-iteration token budget (B decode tokens plus the prefill
tokens B * ISL / OSL that keep the batch full) and the KV capacity (B * (ISL + OSL) tokens). An
iteration then runs B decodes at mean context ISL + OSL / 2 and those prefill tokens; the rate
is B / t_iteration. A measurement's time splits into parts (`parts`: compute, memory and fixed
seconds at unit fractions), so a profile's prediction is a weighted sum (`predict_from_parts`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.calibration.measurements import Kind, Measurement, stack_of
from engine.catalog.entries import Catalog
from engine.catalog.specs import OVERHEAD_LAYERS, CalibrationProfile, HardwareSpec
from engine.costmodel.iteration import iteration_cost
from engine.costmodel.perf import MATMUL_FRACTION_BF16, Instance, Speculation, roof
from engine.costmodel.stacks import activation_tokens
from engine.policies.iteration import STACK_SCHEDULER

DECODE_PIECES = 8
"""A run of decode steps with a growing context is summed as this many pieces at their mid context."""


@dataclass(frozen=True)
class Parts:
    """A prediction as a weighted sum of iterations whose parts scale with 1/eta_F, 1/eta_B or not.

    Each row of `segments` is (weight, compute_s, memory_s, fixed_s, saving_s, attention_compute_s,
    attention_memory_s) at eta = 1 and no overhead; a time is sum(weight * (roof(compute / eta_F +
    saving, memory / eta_B) + roof(attention_compute / eta_F, attention_memory / eta_B) + fixed +
    overhead)) (`perf.roof`: the longer plus the unhidden share of the shorter; the attention's
    roof is MLA's absorbed decode attention, a kernel of its own: 0 otherwise), and a throughput
    is `numerator` divided by that time. `saving` (<= 0) is what low-precision matmuls take off the compute time (`perf.Instance.matmul_saving_s_per_flop`).
    """

    segments: np.ndarray
    numerator: float
    throughput: bool
    overhead_scale: float = 1.0
    """What one millisecond of a profile's overhead costs an iteration of this model (layers / 80)."""


def measured_instance(m: Measurement, catalog: Catalog, hw: HardwareSpec | None = None) -> Instance:
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
        eager=m.eager, startup_profile=stack_of(m),
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
        startup_profile=inst.startup_profile,
    )  # fmt: skip


def unit_instance(inst: Instance, experts: CalibrationProfile | None) -> Instance:
    """`inst` at the `UNIT` profile with the MoE terms of `experts` (None: experts as fast as the
    dense layers): the routed experts' rate against the dense layers' (a ratio, kept when eta_F and
    eta_B scale), the grouped GEMMs' tile and the fixed cost per MoE layer (a fixed part)."""
    if experts is None:
        return _with_profile(inst, UNIT)
    return _with_profile(inst, UNIT.model_copy(update=moe_terms(experts)))


MOE_TERMS = ("eta_experts", "eta_experts_compute", "expert_tile_tokens", "moe_layer_ms", "span_step_ms")
"""The profile fields of the MoE step model (fitted per stack: `calibrate.fit_experts`)."""


def moe_terms(profile: CalibrationProfile) -> dict[str, float | None]:
    """The MoE step model's fields of `profile`."""
    return {k: getattr(profile, k) for k in MOE_TERMS}


Segment = tuple[float, float, float, float, float, float, float]
COLUMNS = 7
"""A segment's columns: weight, compute, memory, fixed, saving, the decode attention's compute and memory."""
Seg = Callable[[float, Any], Segment]


def _w(s: Segment, weight: float) -> Segment:
    """Segment `s` with `weight`."""
    return (weight, s[1], s[2], s[3], s[4], s[5], s[6])


def _seg(weight: float, c: Any) -> Segment:
    # the fixed part: communication, and (eager mode) the launches a unit profile still pays
    saving = float(c.saving_s)
    att_c, att_m = float(c.attention_compute_s), float(c.attention_memory_s)
    compute = (float(c.compute_s) - att_c - saving) * UNIT.eta_compute  # at eta_F = 1
    memory = float(c.memory_s) - att_m
    # a pipeline's stages in turn (`pipeline_s`) stay in the fixed part, where the fits were made
    fixed = float(c.comm_s) + float(c.pipeline_s) + float(c.overhead_s)
    return (weight, compute, memory, fixed, saving, att_c * UNIT.eta_compute, att_m)


def _seg_timed(weight: float, c: Any) -> Segment:
    """An iteration already timed at its profile: its whole time, overhead included, as 'compute'."""
    return (weight, float(c.time_s), 0.0, 0.0, 0.0, 0.0, 0.0)


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
        room = max((m.token_budget - b) / m.dp, 1.0)  # a chunk fits one rank's budget
        passes = math.ceil(isl / room)
        share = b / osl * passes  # iterations that carry a prompt's chunk, per iteration
        if unit.model.moe is not None and share < 1.0:
            return _chunk_steps(unit, m, b, ctx, passes, share, seg)
        c = iteration_cost(
            unit, decode_requests=b, decode_context_tokens=b * ctx, prefill_tokens=b * isl / osl,
            prefill_attn_pairs=(b / osl) * isl * isl / 2.0,
            prefill_largest=min(isl, room),
        )  # fmt: skip
        return [seg(1.0, c)]
    # prefill-first without chunking: prefill iterations of k whole prompts between decode steps
    k = max(1, min(b, m.token_budget // max(isl, 1)))
    dec = iteration_cost(unit, decode_requests=b, decode_context_tokens=b * ctx)
    pf = iteration_cost(
        unit, prefill_tokens=k * isl, prefill_attn_pairs=k * isl * isl / 2.0, prefill_largest=isl
    )
    return [seg(1.0, dec), seg(b / osl / k, pf)]


def _chunk_steps(
    unit: Instance, m: Measurement, b: int, ctx: float, passes: int, share: float, seg: Seg = _seg
) -> list[Segment]:
    """The steady state of a MoE model as the iterations it runs: most are decode steps of the `b`
    requests, and a `share` of them also carry a prompt's chunk (`passes` chunks a prompt).

    The average iteration (the decodes plus b / osl of a prompt) prices a dense model's steady
    state, whose weight reads do not depend on the tokens; a MoE iteration reads the experts its
    tokens touch, concave in the tokens, so spreading a prompt over every decode step would read
    most experts at every step where the real stack reads them in the few steps that carry it.
    """
    isl = m.prompt_tokens
    chunk = isl / passes
    dec = iteration_cost(unit, decode_requests=b, decode_context_tokens=b * ctx)
    pairs = isl * isl / 2.0 / passes
    mix = iteration_cost(
        unit,
        decode_requests=b,
        decode_context_tokens=b * ctx,
        prefill_tokens=chunk,
        prefill_attn_pairs=pairs,
        prefill_largest=chunk,
    )
    return [seg(1.0 - share, dec), seg(share, mix)]


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
    segs.extend(_w(s, s[0] * waves) for s in _decode_run(unit, b, float(isl), osl - 1, seg))
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


def _drifting_share(m: Measurement) -> float:
    """The share of an in-step run's requests that come after its first round and have drifted
    into groups (`_pass_group`): a scheduler that runs decodes beside prompt chunks (vLLM V1,
    TensorRT-LLM: `STACK_SCHEDULER` "mixed") starts each prompt's decode with the pass that ends
    its prefill, so a round's prompts finish, and come back, one pass apart. A prefill-first one
    (SGLang, vLLM V0, MindIE) prefills the whole round before any decode: rounds stay whole (0).
    Needs the prompts sent (0 where unstated: every round whole, as before)."""
    if not (m.chunked and m.prompts and STACK_SCHEDULER.get(m.stack) == "mixed"):
        return 0.0
    return max(0.0, 1.0 - m.concurrency / m.prompts)


def _pass_group(m: Measurement, b: int) -> int:
    """The prompts of a round of `b` that share the pass ending their prefill: the first round's
    work in even passes of up to the token budget (`_round_prefill`), b / passes a pass."""
    passes = max(1, math.ceil(b * m.prompt_tokens / max(m.token_budget, 1)))
    return max(1, round(b / passes))


def _first_round_share(m: Measurement, inst: Instance) -> float:
    """The share of a MoE concurrency run's requests that arrive in its first round: the benchmark
    clients start together, so the first `concurrency` of the `prompts` sent arrive at t = 0 and
    queue for each other's prefill (0 where the prompts are not stated, or for a dense model)."""
    if inst.model.moe is None or not m.prompts or m.concurrency <= 1:
        return 0.0
    return min(1.0, m.concurrency / m.prompts)


def _ttft(
    unit: Instance, inst: Instance, m: Measurement, b: int, steady: list[Segment], seg: Seg
) -> list[Segment]:
    """A TTFT: the wait for a place, then (in step) the round's or its group's prefill passes, or
    (clients apart) the first round's share and the steady state's half iteration and own prefill."""
    osl = max(m.output_tokens, 1)
    segs: list[Segment] = []
    queued = max(m.concurrency - b, 0) if m.concurrency else 0
    if queued:
        segs.extend(_w(s, s[0] * queued / b * osl) for s in steady)
    if m.lockstep:  # a round's prompts arrive together and prefill one after another
        drift = _drifting_share(m)  # under a mixing scheduler, the rounds after the first
        if drift < 1.0:
            first_round = _round_prefill(unit, m, b, seg)
            segs.extend(_w(s, s[0] * (1.0 - drift)) for s in first_round)
        if drift > 0.0:
            groups = _round_prefill(unit, m, _pass_group(m, b), seg)
            segs.extend(_w(s, s[0] * drift) for s in groups)
        return segs
    first = _first_round_share(m, inst)
    if first:
        segs.extend(_w(s, s[0] * first) for s in _round_prefill(unit, m, b, seg))
    rest = [_w(s, s[0] * 0.5) for s in steady] if b > 1 else []
    rest.append(_own_prefill(unit, m, b, seg))
    segs.extend(_w(s, s[0] * (1.0 - first)) for s in rest)
    return segs


def parts(m: Measurement, inst: Instance) -> Parts:
    """The prediction of `m` on `inst` at eta = 1 and no overhead, as weighted iterations.

    Exact for a plain instance, whose iteration is one roofline over the whole batch. The step
    model of a data- or expert-parallel instance (or one that speculates) adds phases that do not
    scale together with 1/eta; `predict` times such points at their profile instead.
    """
    return unit_parts(m, inst, unit_instance(inst, inst.profile))


def unit_parts(m: Measurement, inst: Instance, unit: Instance, seg: Seg = _seg) -> Parts:
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
        else:
            segs = _ttft(unit, inst, m, b, steady, seg)
    return Parts(
        np.array(segs, dtype=float).reshape(-1, COLUMNS), numerator, thr, inst.model.layers / OVERHEAD_LAYERS
    )


def predict_from_parts(p: Parts, kind: Kind, eta_f: float, eta_b: float, overhead_ms: float) -> float:
    """Predicted value (ms for times, tokens/s for throughput) for given factors."""
    s = p.segments
    t = float(
        (
            s[:, 0]
            * (
                roof(s[:, 1] / eta_f + s[:, 4], s[:, 2] / eta_b)
                + roof(s[:, 5] / eta_f, s[:, 6] / eta_b)
                + s[:, 3]
                + p.overhead_scale * overhead_ms / 1000.0
            )
        ).sum()
    )
    return p.numerator / t if p.throughput else t * 1000.0


def predict(m: Measurement, catalog: Catalog, profile: CalibrationProfile) -> float:
    """What the cost model predicts for a measurement with a given profile."""
    inst = measured_instance(m, catalog)
    if not inst.plain:  # the step model's phases timed at the profile's rates: nothing left to scale
        p = unit_parts(m, inst, _with_profile(inst, profile), _seg_timed)
        return predict_from_parts(p, m.kind, 1.0, 1.0, 0.0)
    p = unit_parts(m, inst, unit_instance(inst, profile))
    return predict_from_parts(p, m.kind, profile.eta_compute, profile.eta_bandwidth, profile.overhead_ms)
