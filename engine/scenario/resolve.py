"""From a Scenario to the concrete things the simulation needs: specs and instance models.

A scenario names its model and chips by catalog id; resolving looks them up (custom entries
in the scenario first; one may not reuse a catalog id), builds one `perf.Instance` per pool and
checks what only the catalog can tell: that the chips exist, the calibration profile exists, the
weights fit, a prompt's KV cache has a link to cross, and one iteration takes a sane time.

The last check is what keeps a custom entry honest: every number of a spec is bounded, but a
chip at the bottom of every range serving a model at the top of its ranges is still absurd. One
prefill of `PROBE_TOKENS` tokens and one decode step at that context must each be finite and
take at most `MAX_ITERATION_S`, or resolving names the entry and the numbers to look at.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

from engine.calibration import software, trust
from engine.calibration.trust import Calibration
from engine.catalog.entries import Catalog, shared_catalog, unknown_text
from engine.catalog.model_spec import ModelSpec
from engine.catalog.specs import GIB, HardwareSpec
from engine.core.bounds import MAX_PP
from engine.core.errors import ScenarioError
from engine.costmodel import ownership, power, power_cap, stacks, stages
from engine.costmodel.iteration import IterationCost, decode_cost, prefill_cost
from engine.costmodel.perf import Instance, Speculation
from engine.scenario import power_budget
from engine.scenario.deployment import Limits
from engine.scenario.model import Pool, Scenario
from engine.scenario.power_budget import ChipLimit
from engine.scenario.workload import LengthDist

MAX_ITERATION_S = 86_400.0
"""Longest one engine iteration may take (a day): anything slower is a mistyped custom entry."""
PROBE_TOKENS = 1024
"""Prompt and context length of the iterations that check a pool's speed."""


@dataclass(frozen=True)
class ResolvedPool:
    """A pool with its instance cost model."""

    index: int
    spec: Pool
    instance: Instance
    calibration: Calibration
    limits: Limits
    """Its instances' batching limits: the scenario's where set, else its stack's defaults on this pool's
    chip (`Scenario.batching`): each server of a stack sizes its own by its own GPU, so an H100 pool
    beside a 910B one no longer took the 910B's 256 requests and 2,048 tokens."""
    power_limit: ChipLimit | None = None
    """Its chips' power limit under the scenario's caps (None: uncapped; `engine.scenario.power_budget`)."""

    @property
    def hardware(self) -> HardwareSpec:
        """The pool's chip."""
        return self.instance.hardware

    @property
    def chips(self) -> int:
        """Chips in the whole pool."""
        return self.spec.count * self.instance.chips

    @property
    def usd_per_hour(self) -> float:
        """Price of the whole pool per hour."""
        return self.chips * self.hardware.usd_per_hour


@dataclass(frozen=True)
class Resolved:
    """A scenario with its catalog entries looked up and its instances built."""

    scenario: Scenario
    model: ModelSpec
    pools: tuple[ResolvedPool, ...]

    @property
    def first_token_s(self) -> float:
        """The latency each request's first token takes beyond the step model, s (`first_token`): the
        pools' figure (one stack per deployment; where a pool's profile names another, the largest)."""
        return max((p.calibration.first_token_ms or 0.0 for p in self.pools), default=0.0) / 1e3

    def pool(self, role: str) -> ResolvedPool:
        """The first pool of a role (mixed, prefill, decode)."""
        for p in self.pools:
            if p.spec.role == role:
                return p
        raise KeyError(role)


def scenario_catalog(scenario: Scenario, base: Catalog | None = None) -> Catalog:
    """The catalog extended with the scenario's own custom entries, its chips at the scenario's own
    rents (`cost.usd_per_hour`)."""
    cat = (base or shared_catalog()).with_entries(scenario.custom_hardware, scenario.custom_models)
    return cat.with_rents(scenario.cost.usd_per_hour)


def slowed(resolved: Resolved, slowdown: Mapping[str, float]) -> Resolved:
    """`resolved` with each pool's chips slower by their chip's `slowdown` e (chip id -> e > -1):
    every iteration takes 1 + e times as long (`Instance.time_scale`), its compute, memory, links,
    fixed costs and any draft model alike, since the expected error e was measured on whole
    iterations; KV transfers between pools and the scheduler are unchanged, and FLOPs and bytes
    stay what the work is. For the planner's margin (`engine.planning.plan`, ``slowed``): chips as
    slow as their expected error allows; a negative e makes them faster (a run's spread,
    `engine.explain.margin.run_spread`: 1 / (1 + error) - 1)."""
    pools = []
    for p in resolved.pools:
        e = float(slowdown.get(p.instance.hardware.id, 0.0))
        if not e > -1.0:
            raise ScenarioError(f"slowdown of {p.instance.hardware.id}: must be above -1 (got {e})")
        inst = dataclasses.replace(p.instance, time_scale=1.0 + e) if e != 0 else p.instance
        pools.append(dataclasses.replace(p, instance=inst))
    return dataclasses.replace(resolved, pools=tuple(pools))


def layouts_text(min_chips: int, dp: int = 1, max_tp: int = 64) -> str:
    """Layouts of at least `min_chips` chips to suggest where a model does not fit: '; the layouts that
    hold it: tp 16, or tp 8 x pp 2' (tensor parallelism in powers of two, as stacks shard heads; one 8-chip node,
    then pipeline stages across nodes). None ('') for data-parallel ranks, whose share of the
    weights depends on the expert layout."""
    if dp > 1:
        return ""
    tp = 1
    while tp < min_chips and tp < max_tp:
        tp *= 2
    out = [f"tp {tp}"] if tp >= min_chips else []
    if min_chips > 8:  # one node's 8 chips a stage, wider where the stages would pass their limit
        width = 8
        while math.ceil(min_chips / width) > MAX_PP and width < max_tp:
            width *= 2
        if math.ceil(min_chips / width) <= MAX_PP:
            out.append(f"tp {width} x pp {math.ceil(min_chips / width)}")
    # ('at least 6 chips per instance (tp x pp: tp 8)' read 6 as a layout: a browser review)
    return f"; the layouts that hold it: {', or '.join(out)}" if out else ""


def _gib(gib: float) -> str:
    """'72 GiB', '0.21 GiB': an SRAM chip's memory read '0 GiB of each groq-lpu's 0 GiB' (a review)."""
    return f"{gib:,.0f} GiB" if gib >= 10 else f"{gib:.2g} GiB"


def _unfit(scenario: Scenario, where: str, spec: Pool, inst: Instance, hw: HardwareSpec) -> str:
    """Why a pool's instance does not fit its chips: the activations, a pipeline stage, or the whole,
    with the least chips that would hold it."""
    model = inst.model
    act = inst.activation_bytes / GIB
    room = inst.fit_room_tokens
    need = inst.weight_bytes / GIB + act + room * inst.kv_bytes_held / GIB
    have = inst.memory_bytes / GIB
    per_chip = hw.total_memory_gb * scenario.deployment.mem_fraction
    act_chip = act / inst.chips
    pass_tokens = inst.activation_tokens // spec.dp  # one rank's forward pass
    if act_chip >= 0.5 * per_chip:  # more chips split the weights, hardly the activations
        return (
            f"deployment.batching.token_budget: the activations of one {pass_tokens:,}-token "
            f"forward pass take {_gib(act_chip)} of each {hw.id}'s {_gib(per_chip)} usable, and more "
            f"chips do not shrink them enough; lower the token budget (set at most "
            f"{max(int(pass_tokens * 0.25 * per_chip / act_chip), 16):,})"
        )
    if (over := stages.overflow(inst)) is not None:  # the whole would hold it; a stage does not
        return _stage_refusal(where, inst, room, over)
    if (spread := _expert_spread(where, inst)) is not None:  # ranks each hold every expert
        return spread
    min_chips = int(need // per_chip) + 1
    dp = f" x dp {spec.dp}" if spec.dp > 1 else ""
    spread = ""
    if model.moe and spec.dp > 1 and (ranks := _least_spread_ranks(inst)) is not None:
        min_chips, spread = ranks * inst.tp * inst.pp, "; ep = tp x dp, each rank a share of the experts"
    return (
        f"{where}.{'dp' if spread else 'tp'}: {model.id} in {scenario.model.weights} needs "
        f"{inst.weight_bytes / GIB:.0f} GiB of weights"
        f"{f' and {act:.0f} GiB of activations' if act >= 0.5 else ''} plus KV room for one "
        f"{room:,}-token request; tp {spec.tp} x pp {spec.pp}{dp} of {hw.id} hold {have:.0f} GiB usable. Use at "
        f"least {min_chips} chips per instance (tp x pp{' x dp' if dp else ''}{spread}"
        f"{layouts_text(min_chips, spec.dp)}), lower precision, or a larger chip"
        + (
            f", or a smaller deployment.batching.token_budget (the activations are one forward pass of "
            f"{pass_tokens:,} tokens{' per data-parallel rank' if spec.dp > 1 else ''})"
            if act > 0.25 * need
            else ""
        )
    )


def _expert_spread(where: str, inst: Instance) -> str | None:
    """Why a MoE instance of several ranks does not fit where spreading its experts would hold it:
    with ep below tp x dp each expert-parallel group keeps a whole copy of the experts, so more
    data-parallel ranks add copies rather than room. The least ep (a divisor of tp x dp) that fits,
    or None where none does or the instance holds one copy already."""
    moe, ranks = inst.model.moe, inst.tp * inst.dp
    if moe is None or inst.ep >= ranks:
        return None
    fits = [
        e
        for e in range(inst.ep + 1, min(ranks, moe.experts) + 1)
        if ranks % e == 0 and dataclasses.replace(inst, ep=e).fits()
    ]
    if not fits:
        return None
    return (
        f"{where}.ep: {inst.model.id}'s routed experts take {inst.expert_bytes / GIB:.0f} GiB a copy, and "
        f"ep {inst.ep} over tp {inst.tp} x dp {inst.dp} keeps {inst.expert_copies} copies "
        f"({inst.weight_bytes / GIB:.0f} GiB of weights in all against {inst.memory_bytes / GIB:.0f} GiB usable); "
        f"spread the experts over the ranks with ep {fits[0]}{f' to {ranks}' if fits[0] < ranks else ''} "
        f"(a divisor of tp x dp = {ranks})"
    )


def _least_spread_ranks(inst: Instance, most: int = 1024) -> int | None:
    """The least data-parallel ranks (at the instance's tp and pp, up to `most` chips) that hold a
    MoE model with its experts spread over every rank (ep = tp x dp), or None."""
    experts = inst.model.moe.experts if inst.model.moe else 0
    for dp in range(inst.dp, most // (inst.tp * inst.pp) + 1):
        ep = min(inst.tp * dp, experts)
        if (inst.tp * dp) % ep == 0 and dataclasses.replace(inst, dp=dp, ep=ep).fits():
            return dp
    return None


def _stage_refusal(where: str, inst: Instance, room: int, over: tuple[int, float, float]) -> str:
    """Why a pipeline whose chips together hold the model does not fit: its most loaded stage
    (`stages.overflow`: the stage, the bytes it needs, the bytes its chips give)."""
    stage, need, have = over
    layers = stages.layer_split(inst.model.layers, inst.pp)[stage]
    ends = " and the embedding" if stage == 0 else " and the output head" if stage == inst.pp - 1 else ""
    chips = inst.tp * inst.dp
    return (
        f"{where}.pp: the {inst.pp} pipeline stages split {inst.model.id}'s layers by count, and stage "
        f"{stage + 1} ({layers} layers{ends}) needs {need / GIB:.0f} GiB with KV room for one {room:,}-token "
        f"request, where {f'its {inst.hardware.id} gives' if chips == 1 else f'its {chips} {inst.hardware.id}s give'} "
        f"{have / GIB:.0f} GiB "
        "usable (the chips together would hold the model); use fewer stages and more tensor parallelism, "
        "lower precision, or a larger chip"
    )


def unknown_names(scenario: Scenario, cat: Catalog) -> str:
    """The first model or chip the scenario names that `cat` (its catalog) lacks, as `resolve` refuses it
    ('' for none); the command line says it of the file that names it (`engine.cli.common.load_scenario`)."""
    if scenario.model.id not in cat.models:
        return f"model.id: {unknown_text('model', scenario.model.id, cat.models)}"
    for i, spec in enumerate(scenario.deployment.pools):
        if spec.hardware not in cat.hardware:
            return f"deployment.pools[{i}].hardware: {unknown_text('hardware', spec.hardware, cat.hardware)}"
    return ""


def resolve(scenario: Scenario, catalog: Catalog | None = None) -> Resolved:
    """Look up the scenario's model and chips and build its instances, or say what is wrong."""
    cat = scenario_catalog(scenario, catalog)
    if problem := unknown_names(scenario, cat):
        raise ScenarioError(problem)
    model = cat.models[scenario.model.id]
    pools = []
    for i, spec in enumerate(scenario.deployment.pools):
        where = f"deployment.pools[{i}]"
        hw = cat.hardware[spec.hardware]
        if spec.profile is not None and spec.profile not in hw.profiles:
            raise ScenarioError(
                f"{where}.profile: {spec.profile!r} is not a profile of {hw.id}; choose one of {sorted(hw.profiles)}"
            )
        if scenario.deployment.stack in trust.NVIDIA_ONLY and hw.vendor != "NVIDIA":
            raise ScenarioError(
                f"deployment.stack: {scenario.deployment.stack!r} runs on NVIDIA GPUs only; {where}.hardware is "
                f"{hw.id!r} ({hw.vendor}). Choose vllm or sglang, or an NVIDIA chip."
            )
        if scenario.deployment.stack in stacks.ASCEND_ONLY and not hw.id.startswith("ascend"):
            raise ScenarioError(
                f"deployment.stack: {scenario.deployment.stack!r} runs on Huawei Ascend NPUs only; {where}.hardware "
                f"is {hw.id!r} ({hw.vendor}). Choose a stack every pool runs: vllm runs as vLLM-Ascend on an "
                "Ascend NPU, with its own fit"
            )
        if split := stacks.tp_split_problem(model, spec.tp):
            raise ScenarioError(f"{where}.tp: {split}")
        if spec.pp > model.layers:  # a stage with no layer (vLLM's get_pp_indices would give it none)
            raise ScenarioError(
                f"{where}.pp: {spec.pp} pipeline stages for {model.id}'s {model.layers} layers; each stage "
                f"needs at least one layer (at most {model.layers} stages)"
            )
        custom = any(h.id == hw.id for h in scenario.custom_hardware)
        hw, name, cal = pool_chip(scenario, spec, hw, cat, model, custom)
        # outside the try below: its errors name deployment.speculative, not this pool
        speculation = speculation_of(scenario, cat, hw, spec.tp) if spec.role != "prefill" else None
        try:
            inst = Instance(
                model=model,
                hardware=hw,
                tp=spec.tp,
                pp=spec.pp,
                dp=spec.dp,
                ep=spec.ep,
                imbalance=scenario.deployment.expert_imbalance if spec.ep > 1 else 1.0,
                weights=scenario.model.weights,
                attention_weights=scenario.model.attention_weights,
                kv=scenario.kv_precision(),
                profile_name=name,
                mem_fraction=scenario.deployment.mem_fraction,
                speculation=speculation,
                activation_tokens=scenario.activation_tokens(hw) * spec.dp,  # a pass of each DP rank's budget
                eager=scenario.deployment.eager,
                startup_profile=scenario.deployment.stack,
            )
        except ScenarioError as exc:
            raise ScenarioError(f"{where}.{exc}") from None
        if not inst.fits():
            raise ScenarioError(_unfit(scenario, where, spec, inst, hw))
        _check_speed(scenario, where, inst)
        if scenario.cost.mode == "own":  # refuse an owned chip without a price now, not after the run
            ownership.capex_usd(hw, scenario.cost)
        limits = scenario.batching(hw)
        pools.append(ResolvedPool(index=i, spec=spec, instance=inst, calibration=cal, limits=limits))
    _check_kv_link(scenario, pools)
    _check_edge_power(scenario, pools)
    _check_context(scenario, pools)
    return Resolved(scenario=scenario, model=model, pools=_capped(scenario, pools))


def pool_chip(
    scenario: Scenario, pool: Pool, hw: HardwareSpec, cat: Catalog, model: ModelSpec, custom: bool
) -> tuple[HardwareSpec, str, Calibration]:
    """A pool's chip as its instances see it, its profile's name and its calibration
    (`software.effective_chip`), the calibration with the pool's first-token latency (`first_token`)."""
    moe = model.moe is not None
    hw, name, cal = software.effective_chip(
        hw, scenario.deployment.stack, cat, pool.profile, pool.maturity, moe, custom
    )
    first = first_token(scenario, pool, hw.id, moe)
    return hw, name, cal if first is None else cal.with_first_token(*first)


def first_token(scenario: Scenario, pool: Pool, chip: str, moe: bool) -> tuple[float, str] | None:
    """The latency a pool's requests pay before their first token beyond the step model, ms, and
    why: the scenario's `deployment.first_token_ms` where set, else for a MoE model the figure fitted
    to one-client MoE TTFTs under the pool's stack (its profile's where that names a stack;
    `engine.calibration.first_token`); None for a dense model that sets none."""
    if scenario.deployment.first_token_ms is not None:
        return scenario.deployment.first_token_ms, "deployment.first_token_ms"
    if not moe:
        return None
    named = pool.profile if pool.profile in stacks.STACK_NAMES else scenario.deployment.stack
    found = trust.first_token_ms(trust.native_stack(chip, named))
    return None if found is None else (found[0], f"{found[1]}, docs/calibration.md")


def _capped(scenario: Scenario, pools: list[ResolvedPool]) -> tuple[ResolvedPool, ...]:
    """The pools with their chips held to the scenario's power caps (clock and bandwidth scaled)."""
    site = scenario.deployment.power_cap_kw
    if site is None and all(p.spec.power_cap_kw is None for p in pools):
        return tuple(pools)
    limits = power_budget.chip_limits(
        site,
        [
            power_budget.CappedPool(p.spec.name, p.spec.tier, p.spec.power_cap_kw, p.hardware, p.chips)
            for p in pools
        ],
    )
    out = []
    for p, limit in zip(pools, limits, strict=True):
        if limit is not None:
            inst = dataclasses.replace(
                p.instance, clock=limit.clock, bandwidth_scale=power_cap.bandwidth_factor(limit.clock)
            )
            p = dataclasses.replace(p, instance=inst, power_limit=limit)
        out.append(p)
    return tuple(out)


def speculation_of(scenario: Scenario, cat: Catalog, hw: HardwareSpec, tp: int) -> Speculation | None:
    """The speculative decoding of the scenario's decode steps on `tp` chips of `hw` (None: off).

    An MTP head costs 1/L of a target step per drafted token; a draft model runs on the
    instance's tensor-parallel group. The planner's sizing uses the same.
    """
    sp = scenario.deployment.speculative
    if sp is None:
        return None
    tokens, acceptance = sp.resolved()
    if sp.method == "mtp":
        return Speculation(tokens, acceptance, draft_share=1.0 / cat.models[scenario.model.id].layers)
    if sp.draft_model is None or sp.draft_model not in cat.models:
        raise ScenarioError(
            f"deployment.speculative.draft_model: unknown model {sp.draft_model!r}; known: {', '.join(sorted(cat.models))}"
        )
    draft = Instance(
        model=cat.models[sp.draft_model],
        hardware=hw,
        tp=tp,
        weights=scenario.model.weights,
        kv=scenario.kv_precision(),
        profile_name=hw.default_profile,
        mem_fraction=scenario.deployment.mem_fraction,
        eager=scenario.deployment.eager,
    )
    return Speculation(tokens, acceptance, draft=draft)


def _custom_path(entry: HardwareSpec | ModelSpec, scenario: Scenario) -> str | None:
    """The path of a scenario's custom entry (``custom_hardware[0]``), None for a catalog entry."""
    field = "custom_hardware" if isinstance(entry, HardwareSpec) else "custom_models"
    ids = [c.id for c in getattr(scenario, field)]
    return f"{field}[{ids.index(entry.id)}]" if entry.id in ids else None


def _check_kv_link(scenario: Scenario, pools: list[ResolvedPool]) -> None:
    """A prompt's KV cache leaves a prefill instance over its chips' scale-out link unless the
    scenario sets the link's bandwidth: that link must then exist (with elastic roles a decode
    instance may turn prefill, so its chip needs one too). Unused, a zero link is fine."""
    dep = scenario.deployment
    if dep.mode != "disaggregated" or dep.link.bandwidth_gb_s is not None:
        return
    senders = ("prefill", "decode") if scenario.scheduler.elastic.enabled else ("prefill",)
    for p in pools:
        hw = p.hardware
        if p.spec.role in senders and hw.scale_out_gb_s <= 0:
            path = _custom_path(hw, scenario)
            field = f"{path}.scale_out_gb_s" if path else f"deployment.pools[{p.index}].hardware"
            raise ScenarioError(
                f"{field}: chip {hw.id!r} has no scale-out link (0 GB/s), but pool {p.spec.name!r} "
                f"sends prompts' KV caches to the decode pool over it; give the chip a scale-out "
                f"bandwidth or set deployment.link.bandwidth_gb_s"
            )


def _shortest(dist: LengthDist) -> int:
    """The fewest tokens a distribution can draw (a lognormal's or a file's: one)."""
    if dist.kind == "constant" and dist.tokens is not None:
        return dist.tokens
    if dist.kind == "uniform" and dist.low is not None:
        return dist.low
    return 1


def _check_context(scenario: Scenario, pools: list[ResolvedPool]) -> None:
    """A class every request of which is longer than the model's context could never be served: a
    server refuses a prompt and output past it (the run rejects such requests, `longer_than_context`),
    so a class of only those is refused here (a review ran 16,384-token prompts on an 8,192-token
    model to the end)."""
    if scenario.workload.trace is not None or not pools:
        return
    model = pools[0].instance.model
    for i, c in enumerate(scenario.workload.classes):
        prompt, output = c.prefix.tokens + _shortest(c.input), _shortest(c.output)
        if prompt + output > model.max_context:
            # the field that holds most of it (a review: an output of 9,000 past 8,192 named .input)
            part = (
                "prefix.tokens"
                if c.prefix.tokens >= model.max_context
                else "output"
                if output > prompt
                else "input"
            )
            raise ScenarioError(
                f"workload.classes[{i}].{part}: every request of class {c.name!r} is {prompt + output:,} tokens or "
                f"more ({prompt:,} of prompt, {output:,} of output), past {model.id}'s context of "
                f"{model.max_context:,} tokens; prompt and output together must be at most {model.max_context:,}"
            )


def _check_edge_power(scenario: Scenario, pools: list[ResolvedPool]) -> None:
    """An edge site's power budget must power every edge chip idle and one edge instance busy."""
    edge = scenario.deployment.edge
    if edge is None:
        return
    ranges = [
        (p, *power.instance_power_range_w(p.hardware, p.instance.chips, scenario.model.weights))
        for p in pools
        if p.spec.tier == "edge"
    ]
    idle = sum(lo * p.spec.count for p, lo, _ in ranges)
    parts = ", ".join(f"{p.spec.count} x {p.spec.name} at {lo:.0f} W" for p, lo, _ in ranges)
    field = "deployment.edge.power_budget_w"
    if edge.power_budget_w < idle:
        raise ScenarioError(
            f"{field}: {edge.power_budget_w:g} W cannot power the edge instances even idle: they draw "
            f"{idle:.0f} W ({parts}); raise the budget or use fewer edge instances"
        )
    least = idle + min(hi - lo for _, lo, hi in ranges)
    if edge.power_budget_w < least:
        raise ScenarioError(
            f"{field}: {edge.power_budget_w:g} W powers the edge instances idle ({idle:.0f} W) but no instance "
            f"busy; running one needs at least {least:.0f} W"
        )


def _check_speed(scenario: Scenario, where: str, inst: Instance) -> None:
    """Refuse a pool whose probe prefill or decode step is not finite or takes over a day."""
    q = min(PROBE_TOKENS, inst.model.max_context)
    probes: tuple[tuple[str, IterationCost], ...] = (
        (f"a {q}-token prefill", prefill_cost(inst, q)),
        (f"a decode step at {q} tokens of context", decode_cost(inst, 1, q)),
    )
    for what, cost in probes:
        t = float(cost.time_s)
        if math.isfinite(t) and t <= MAX_ITERATION_S:
            continue
        hw, model = inst.hardware, inst.model
        prof = f"profiles.{inst.profile_name or hw.default_profile}"
        link = "scale_up_gb_s" if hw.scale_up_gb_s > 0 else "pcie_gb_s"
        parts = {
            "compute": (float(cost.compute_s), ("tflops", f"{prof}.eta_compute")),
            "memory": (float(cost.memory_s), ("memory_tb_s", f"{prof}.eta_bandwidth")),
            "communication": (float(cost.comm_s), (link, "allreduce_latency_us")),
        }
        name, (_, fields) = max(
            parts.items(), key=lambda kv: kv[1][0] if math.isfinite(kv[1][0]) else math.inf
        )
        hw_path, model_path = _custom_path(hw, scenario), _custom_path(model, scenario)
        suspects = [f"{hw_path}.{f}" for f in fields] if hw_path else []
        if model_path or not suspects:
            suspects.append(f"the size of {model_path or 'model'} ({model.id!r})")
        took = f"takes {t:.3g} s" if math.isfinite(t) else "has no finite time"
        raise ScenarioError(
            f"{where}: {what} of {model.id!r} on {inst.tp} x {inst.pp} x {hw.id!r} {took}; the limit "
            f"is {MAX_ITERATION_S:,.0f} s (one day). {name.capitalize()} time dominates: check "
            + " and ".join(suspects)
        )
