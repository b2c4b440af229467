"""The cost model's sizing of a deployment: what a load asks, what an instance gives.

For each instance kind the cost model gives, from the workload's own requests (the planning
run's, so the estimate and the simulation see the same lengths):

- prefill seconds per request: every prompt (less its cache hits when the cache is on) timed as
  one iteration, its weight reads and fixed overhead shared by as many prompts as fit in the
  token budget, a pipeline counted full (pp micro-batches in flight: no bubbles, no hand-offs):
  an optimistic figure, since real batches are smaller; prompts are never speculated;
- the decode batch B*: the largest batch that fits in KV memory (a request reserves its prompt
  plus its output; with preemption on it holds only its prompt plus, on average, half its
  output; the prompt less its cache hits where the HBM tier shares them), within the batching
  limit, whose step at the mean decode context still meets the tightest TPOT target; decode
  tokens/s = B* / step time (with the scenario's speculative decoding, a step's cost per token it
  yields).

An instance kind (`Kind`) is a chip and a layout: tp chips per tensor-parallel group, pp pipeline
stages, dp attention data-parallel ranks and ep expert-parallel ranks (`layout_label`:
``tp8 pp2``, ``tp1 dp8 ep8``), built as the scenario's resolve builds a pool (`instance_of`).

A load of λ requests/s then needs at least ceil(λ·E[prefill s]) prefill instances and
ceil(λ·E[output tokens] / decode tokens/s) decode instances (a colocated pool at least the
larger of the two): a lower bound on the counts, hence on the cost, of every deployment of that
shape (`lower_bound`). The planner (`engine.planning.plan`) and the advisor start from these figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, NamedTuple

import numpy as np

from engine.calibration import software
from engine.catalog.entries import Catalog
from engine.catalog.specs import GIB, HardwareSpec
from engine.core.errors import ScenarioError
from engine.costmodel import ownership, stacks, stages
from engine.costmodel.iteration import decode_cost, prefill_cost
from engine.costmodel.ownership import CostBasis
from engine.costmodel.perf import Instance, roof
from engine.scenario.model import Batching, Limits, Scenario
from engine.scenario.resolve import speculation_of
from engine.serving.workload import Requests

Mode = Literal["colocated", "disaggregated"]


@dataclass(frozen=True)
class Demand:
    """What the target load asks of a deployment, drawn from the planning run's requests."""

    rate_rps: float
    prompt_tokens: np.ndarray
    cached_tokens: np.ndarray
    output_tokens: np.ndarray
    cls: np.ndarray
    ttft_target_s: tuple[float, ...]
    tpot_target_s: tuple[float, ...]
    percentile: tuple[float, ...]
    batching: Batching
    """The scenario's batching settings, each unset field its stack's default on a chip (`limits_on`)."""
    stack: str
    reserves_output: bool = True  # False with preemption: a request holds only what it has
    shares_hits: bool = False
    """True with the prefix cache's HBM tier on: a hit is read where it is cached, shared by the
    requests reading it, so a request holds only the rest of its prompt (optimistic, as the hits are)."""

    def limits_on(self, hw: HardwareSpec) -> Limits:
        """The batching limits an instance on `hw` runs with, as a pool on it does (`ResolvedPool.limits`)."""
        return self.batching.on(self.stack, hw)

    @property
    def mean_output_tokens(self) -> float:
        """Mean output tokens per request."""
        return float(self.output_tokens.mean()) if len(self.output_tokens) else 0.0

    @property
    def mean_decode_context_tokens(self) -> float:
        """Mean context of a decode step: the prompt plus half the output."""
        if not len(self.prompt_tokens):
            return 0.0
        return float(self.prompt_tokens.mean() + self.output_tokens.mean() / 2.0)


def demand(scenario: Scenario, requests: Requests) -> Demand:
    """The load of `scenario` as the cost model sees it."""
    wl = scenario.workload
    cached = np.zeros_like(requests.prompt_tokens)
    if scenario.cache.enabled:  # optimistic: every reusable token hits
        cached = np.minimum(requests.reused_tokens + requests.prefix_tokens, requests.prompt_tokens - 1)
    return Demand(
        rate_rps=wl.arrival.rate_rps,
        prompt_tokens=requests.prompt_tokens.astype(float),
        cached_tokens=np.maximum(cached, 0).astype(float),
        output_tokens=requests.output_tokens.astype(float),
        cls=requests.cls,
        ttft_target_s=tuple(c.slo.ttft_ms / 1e3 for c in wl.classes),
        tpot_target_s=tuple(c.slo.tpot_ms / 1e3 for c in wl.classes),
        percentile=tuple(c.slo.percentile for c in wl.classes),
        batching=scenario.deployment.batching,
        stack=scenario.deployment.stack,
        reserves_output=scenario.scheduler.preemption == "none",
        shares_hits=scenario.cache.enabled and scenario.cache.hbm,
    )


@dataclass(frozen=True)
class InstanceRates:
    """One instance kind's analytic rates for a demand, and why it cannot serve it (if so).

    `decode_batch_limit` says what caps B*: ``kv_capacity``, ``max_batch`` or ``tpot``.
    A non-empty `prefill_problem` / `decode_problem` says why it cannot run that phase.
    """

    hardware: str
    tp: int
    chips: int
    usd_per_hour: float
    kv_capacity_tokens: int
    pp: int = 1
    dp: int = 1
    ep: int = 1
    prefill_s_per_request: float = math.inf
    decode_batch: int = 0
    decode_batch_limit: str = "kv_capacity"
    decode_step_s: float = math.inf
    decode_floor_s: float = math.inf
    """One decode step at batch 1 and the mean decode context: no TPOT is shorter on average."""
    decode_tokens_per_s: float = 0.0
    prefill_problem: str = ""
    decode_problem: str = ""


def _at_percentile(values: np.ndarray, pct: float) -> float:
    """An observed value at a percentile ("higher" method, as the metrics use)."""
    return float(np.percentile(values, pct, method="higher")) if len(values) else 0.0


def _unfit_why(inst: Instance, hw_id: str) -> str:
    """Why an instance does not fit its chips: a pipeline stage that overflows where the whole would
    hold it (`engine.costmodel.stages`), else the weights and activations against the whole."""
    act = inst.activation_bytes / GIB
    if (over := stages.overflow(inst)) is not None:  # the whole holds it; a stage does not
        stage, need, have = over
        return f"pipeline stage {stage + 1} needs {need / GIB:.0f} GiB of its {have / GIB:.0f} GiB on {hw_id}"
    return (
        f"weights do not fit ({inst.weight_bytes / GIB:.0f} GiB"
        + (
            f" and {act:.0f} GiB of activations for a {inst.activation_tokens // inst.dp:,}-token pass"
            if act >= 0.5
            else ""
        )
        + f" on {inst.chips} x {hw_id})"
    )


def instance_rates(inst: Instance, d: Demand, basis: CostBasis | None = None) -> InstanceRates:
    """Prefill seconds per request and decode tokens/s of one instance, from the cost model.

    Its price per hour follows the cost basis (rent by default); an owned chip is priced at idle
    power (`ownership.chip_hour_usd`), a lower bound of what a run of it bills.
    """
    hw = inst.hardware
    try:
        per_chip = ownership.chip_hour_usd(hw, basis or CostBasis())
        unpriced = ""
    except ScenarioError as exc:  # an owned chip without a purchase price: prune it, say why
        per_chip, unpriced = math.inf, str(exc)
    head = InstanceRates(
        hardware=hw.id,
        tp=inst.tp,
        chips=inst.chips,
        usd_per_hour=inst.chips * per_chip,
        kv_capacity_tokens=inst.kv_capacity_tokens,
        pp=inst.pp,
        dp=inst.dp,
        ep=inst.ep,
    )
    # unpriced, or a tp no stack would start the model with: prune it, say why
    if problem := unpriced or stacks.tp_split_problem(inst.model, inst.tp):
        return replace(head, prefill_problem=problem, decode_problem=problem)
    if not inst.fits() or not len(d.prompt_tokens):
        why = _unfit_why(inst, hw.id)
        return replace(head, prefill_problem=why, decode_problem=why)
    cap, lim = inst.kv_capacity_tokens, d.limits_on(inst.hardware)  # its chip's limits, as a pool's
    q, k = d.prompt_tokens, d.cached_tokens
    # prompts run unspeculated (resolve gives prefill pools none; mixed iterations run without it)
    cost = prefill_cost(replace(inst, speculation=None) if inst.speculation else inst, q, k)
    alone = np.asarray(cost.time_s, dtype=float)
    # prompts per iteration: every data-parallel rank has its own token budget and batch cap
    share = max(1.0, lim.token_budget * inst.dp // max(float(np.mean(q - k)), 1.0))
    # a full pipeline overlaps its stages: what the lone prompt spends in bubbles and hand-offs
    # is left out, keeping the figure a lower bound; otherwise an iteration of `share` prompts
    # pays the all-reduce latencies once, so each prompt its share of that iteration's exchange
    comm = inst.comm_time(share * (q - k)) / share if inst.pp == 1 else 0.0
    # an iteration of `share` prompts reads the weights once: it takes at least
    # roof(share * compute, memory), and roof scales linearly, so per prompt roof(compute, memory / share)
    # (a slowed chip's every iteration is `time_scale` times as long: its parts are the work's, unscaled)
    per_req = (roof(cost.compute_s, cost.memory_s / share) + comm + cost.overhead_s / share) * inst.time_scale
    tail = 1.0 - max(d.percentile) / 100.0
    prefill_problem = ""
    if float(np.mean(q > cap)) > tail:
        prefill_problem = f"{np.mean(q > cap):.0%} of prompts never fit in KV memory"
    for c, target in enumerate(d.ttft_target_s):
        at_pct = _at_percentile(alone[d.cls == c], d.percentile[c])
        if at_pct > target and not prefill_problem:
            prefill_problem = (  # the field to move named (a review: nothing said which target it was)
                f"p{d.percentile[c]:g} prompt alone takes {at_pct * 1e3:.0f} ms > TTFT {target * 1e3:.0f} ms "
                f"(workload.classes[{c}].slo.ttft_ms)"
            )
    reserve = d.prompt_tokens + d.output_tokens
    own = d.prompt_tokens - d.cached_tokens if d.shares_hits else d.prompt_tokens  # (shared: held once)
    held = own + d.output_tokens if d.reserves_output else own + d.output_tokens / 2.0
    b_kv = int(cap // max(float(held.mean()), 1.0))
    max_batch = lim.max_batch * inst.dp
    batches = np.arange(1, max(1, min(b_kv, max_batch)) + 1, dtype=float)
    steps = np.asarray(decode_cost(inst, batches, d.mean_decode_context_tokens).time_s, dtype=float)
    tpot = min(d.tpot_target_s)
    ok = steps <= tpot
    decode_problem = _decode_problem(float(np.mean(reserve > cap)), tail, float(steps[0]), d.tpot_target_s)
    batch = int(np.nonzero(ok)[0][-1]) + 1 if ok.any() else 1
    limit = "tpot" if batch < len(batches) else ("kv_capacity" if b_kv < max_batch else "max_batch")
    return replace(
        head,
        prefill_s_per_request=float(np.mean(per_req)),
        decode_batch=batch,
        decode_batch_limit=limit,
        decode_step_s=float(steps[batch - 1]),
        decode_floor_s=float(steps[0]),
        decode_tokens_per_s=batch / float(steps[batch - 1]),
        prefill_problem=prefill_problem,
        decode_problem=decode_problem,
    )


def slowed_rates(
    rates: dict[Kind, InstanceRates], scenario: Scenario, cat: Catalog, d: Demand, slowdown: dict[str, float]
) -> dict[Kind, InstanceRates]:
    """`rates` with each chip `slowdown` e slower (every iteration 1 + e times as long, as a slowed run's,
    `engine.scenario.resolve.slowed`): the lower bounds of a search with slowed chips, and its prunes (a
    decode step at batch 1 past the TPOT target once slowed). The kinds of a chip not slowed keep theirs."""
    out = {}
    for k, r in rates.items():
        e = float(slowdown.get(k.hardware, 0.0))
        inst = instance_of(scenario, cat, *k) if e else None
        out[k] = r if inst is None else instance_rates(replace(inst, time_scale=1.0 + e), d, scenario.cost)
    return out


def _decode_problem(never_fit: float, tail: float, step_s: float, tpot_targets: Sequence[float]) -> str:
    """Why decode cannot meet the SLO on an instance ('' where it can): more than the SLO's tail of
    requests never fit in KV memory, or one step at batch 1 already takes longer than the tightest TPOT
    target, named by its field (a review: nothing said which target it was)."""
    if never_fit > tail:
        return f"{never_fit:.0%} of requests never fit in KV memory"
    c = int(np.argmin(tpot_targets))
    if step_s <= tpot_targets[c]:
        return ""
    return (
        f"one decode step at batch 1 takes {step_s * 1e3:.1f} ms > TPOT {tpot_targets[c] * 1e3:.0f} ms "
        f"(workload.classes[{c}].slo.tpot_ms)"
    )


# --- shapes and their lower bounds -----------------------------------------------------------


def layout_label(tp: int, pp: int = 1, dp: int = 1, ep: int = 1) -> str:
    """How an instance spreads over its chips, degrees above 1 only: ``tp2``, ``tp8 pp2``, ``tp1 dp8 ep8``."""
    return " ".join([f"tp{tp}", *(f"{n}{v}" for n, v in (("pp", pp), ("dp", dp), ("ep", ep)) if v > 1)])


class Kind(NamedTuple):
    """An instance kind: a chip and the layout of one instance over its chips (see `Instance`)."""

    hardware: str
    tp: int
    pp: int = 1
    dp: int = 1
    ep: int = 1

    @property
    def chips(self) -> int:
        """Chips in one instance: tp x dp per pipeline stage, pp stages."""
        return self.tp * self.pp * self.dp

    def layout(self) -> str:
        """The layout without the chip: ``tp1 dp8 ep8``."""
        return layout_label(self.tp, self.pp, self.dp, self.ep)

    def label(self) -> str:
        """Chip and layout: ``h200 tp1 dp8 ep8``."""
        return f"{self.hardware} {self.layout()}"


@dataclass(frozen=True)
class Shape:
    """A deployment without its counts: the mode and the instance kind of each pool.

    Pools may be given as plain ``(hardware, tp)`` tuples (a tensor-parallel layout); they are
    kept as `Kind`.
    """

    mode: Mode
    prefill: Kind  # colocated: the mixed pool
    decode: Kind  # colocated: the same as prefill

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefill", Kind(*self.prefill))
        object.__setattr__(self, "decode", Kind(*self.decode))

    def label(self) -> str:
        """A short name: ``h100-sxm tp2``, ``h100-sxm tp2 -> h200 tp1 dp8 ep8``."""
        p = self.prefill.label()
        return p if self.mode == "colocated" else f"{p} -> {self.decode.label()}"


@dataclass(frozen=True)
class Bound:
    """A shape's analytic lower bound on counts and cost, or why it was pruned."""

    shape: Shape
    counts: tuple[int, int]  # (prefill, decode); colocated: (n, 0)
    usd_per_hour: float
    pruned: str


def lower_bound(shape: Shape, rates: dict[Kind, InstanceRates], d: Demand, cap: int) -> Bound:
    """The fewest instances of each pool the cost model allows for the demand, and their cost."""
    p, dd = rates[shape.prefill], rates[shape.decode]
    why = p.prefill_problem or dd.decode_problem
    if why:
        return Bound(shape, (0, 0), math.inf, why)
    n_p = max(1, math.ceil(d.rate_rps * p.prefill_s_per_request - 1e-9))
    n_d = max(1, math.ceil(d.rate_rps * d.mean_output_tokens / dd.decode_tokens_per_s - 1e-9))
    if shape.mode == "colocated":
        n = max(n_p, n_d)
        return Bound(shape, (n, 0), n * p.usd_per_hour, "" if n <= cap else f"needs over {cap} instances")
    cost = n_p * p.usd_per_hour + n_d * dd.usd_per_hour
    over = n_p > cap or n_d > cap
    return Bound(shape, (n_p, n_d), cost, f"needs over {cap} instances per pool" if over else "")


def instance_of(
    scenario: Scenario, cat: Catalog, hw: str, tp: int, pp: int = 1, dp: int = 1, ep: int = 1
) -> Instance:
    """An instance of kind (`hw`, tp, pp, dp, ep) serving the scenario's model, as resolve builds a pool.

    The chip runs the profile the scenario's pools give it (else the stack's, by rule), at the
    software maturity they state (`engine.calibration.software`); the
    deployment's expert imbalance applies with ep > 1, its speculative decoding to decode steps.
    An impossible layout (ep on a dense model, ep not dividing tp x dp) raises ScenarioError.
    """
    profile = next((p.profile for p in scenario.deployment.pools if p.hardware == hw), None)
    m = scenario.model
    model = cat.models[m.id]
    custom = any(h.id == hw for h in scenario.custom_hardware)
    rank_tokens = scenario.activation_tokens(cat.hardware[hw])  # one forward pass of the budget on this chip
    level = software.level_of(scenario.deployment.pools, hw)
    spec, name, _ = software.effective_chip(
        cat.hardware[hw], scenario.deployment.stack, cat, profile, level, model.moe is not None, custom
    )
    return Instance(
        model=model,
        hardware=spec,
        tp=tp,
        pp=pp,
        dp=dp,
        ep=ep,
        imbalance=scenario.deployment.expert_imbalance if ep > 1 else 1.0,
        weights=m.weights,
        attention_weights=m.attention_weights,
        kv=scenario.kv_precision(),
        profile_name=name,
        mem_fraction=scenario.deployment.mem_fraction,
        speculation=speculation_of(scenario, cat, spec, tp),
        activation_tokens=rank_tokens * dp,
        eager=scenario.deployment.eager,
    )
