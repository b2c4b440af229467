"""What a launch command needs to know about a scenario's deployment, read once for every stack.

A serving stack is started per instance: each pool of the deployment becomes one command (or one
worker of a manifest) with its parallel sizes and batching limits (its chip's stack defaults where
the scenario sets none), and the scenario's KV precision, prefix cache and weight precision become
flags. This module gathers those facts from a Scenario (the catalog supplies the model's Hugging
Face id and the precision its checkpoint stores), so that the stack writers in `emit_engines` and
`emit_manifests` only translate them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from engine.catalog.entries import shared_catalog
from engine.catalog.model_spec import ModelSpec
from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.scenario import power_budget
from engine.scenario.crossing import crossing_text
from engine.scenario.crossing import vendor_crossing_text as vendor_crossing_text  # (re-exported)
from engine.scenario.model import Limits, Pool, Scenario
from engine.scenario.workload import LengthDist
from engine.serving.traces import read as read_trace


@dataclass(frozen=True, kw_only=True)
class PoolFacts:
    """One pool as a serving stack sees it: a role, parallel sizes, a chip and how many copies."""

    name: str
    role: str
    tp: int
    pp: int
    dp: int
    ep: int
    count: int
    chips_per_instance: int
    hardware_id: str
    vendor: str
    kind: str = "GPU"
    """The chip's class (`HardwareSpec.kind`): a stack builds for a vendor's GPUs and accelerators, not its
    FPGAs (`emit.has_build`)."""
    limits: Limits
    """Its batching limits: the scenario's where set, else the stack's defaults on its chip
    (`Scenario.batching`), as the run gave its instances (`ResolvedPool.limits`)."""
    power_limit_w: float | None = None
    """Each chip's power limit under the scenario's caps (None: uncapped; `engine.scenario.power_budget`)."""
    kv_tokens: int | None = None
    """Tokens of KV cache one rank of an instance holds beside its weights, as the run sizes it (None:
    not resolved). A request longer than this the run rejects (`too_long_for_kv`)."""
    autoscale: tuple[int, int] | None = None
    """(fewest, warm at the start) instances where the pool autoscales up to `count` (None: fixed)."""
    fp8_path: bool = True
    """Whether the chip has an FP8 matmul path (an FP8 peak in the catalog); without one the run reads FP8
    weights at FP8 and computes them at BF16 (`HardwareSpec.compute_precision`)."""

    @property
    def chips(self) -> int:
        """Chips in the pool: `count` instances (an autoscaled pool's most) of `chips_per_instance`."""
        return self.count * self.chips_per_instance

    @property
    def start_count(self) -> int:
        """Instances to start: the warm ones of an autoscaled pool, else `count` (`emit` wrote the
        autoscaler's ceiling as a fixed fleet: 32 H100s at $79.68/h for a run that billed $17.90/h)."""
        return self.count if self.autoscale is None else self.autoscale[1]

    def scaling_text(self) -> str:
        """'autoscaled between 1 and 8 instances (its autoscaler's bounds), 1 warm at the start', or '' (it
        said 'in the run', where emit runs nothing: a review)."""
        if self.autoscale is None:
            return ""
        low, warm = self.autoscale
        bounds = f"between {low} and {self.count} instances (its autoscaler's bounds)"
        return f"autoscaled {bounds}, {warm} warm at the start"

    def max_len(self, longest: int) -> int:
        """The longest request this pool's instances take: the workload's, at most what a rank's KV
        cache holds (vLLM refuses to start with a max-model-len its cache cannot hold: a review found
        --max-model-len 20480 written for a 70B on one H100 whose cache holds 18,176 tokens)."""
        return longest if self.kv_tokens is None else max(1, min(longest, self.kv_tokens))


@dataclass(frozen=True, kw_only=True)
class DeploymentFacts:
    """Everything the stack writers read: the model, precisions, batching limits, cache and pools."""

    scenario_name: str
    modelled_stack: str
    model_id: str
    hf_id: str | None
    moe: bool
    weights: str
    checkpoint_weights: str
    kv: str
    prefix_cache: bool
    cache_tiers: tuple[str, ...]
    mem_fraction: float
    eager: bool
    disaggregated: bool
    speculative: str | None
    preemption: str
    pools: tuple[PoolFacts, ...]
    edge_pools: tuple[str, ...] = ()
    policies: tuple[str, ...] = ()
    """Scheduler policies other than the plain defaults, as `kind = name` (no stack flag sets them)."""
    pins: tuple[str, ...] = ()
    """Classes pinned to pools, as 'chat -> decode-chat' (no stack flag routes by class)."""
    max_model_len: int = 131072
    """The longest request (prompt and output tokens) the workload can draw, at most the model's context."""


def _model(scenario: Scenario) -> ModelSpec:
    for m in scenario.custom_models:
        if m.id == scenario.model.id:
            return m
    return shared_catalog().model(scenario.model.id)


def _pool(scenario: Scenario, p: Pool) -> PoolFacts:
    chip = scenario.chip(p.hardware)
    return PoolFacts(
        name=p.name,
        role=p.role,
        tp=p.tp,
        pp=p.pp,
        dp=p.dp,
        ep=p.ep,
        count=p.count,
        chips_per_instance=p.chips_per_instance,
        hardware_id=p.hardware,
        vendor=chip.vendor if chip is not None else "unknown",
        kind=chip.kind if chip is not None else "GPU",
        limits=scenario.pool_batching(p),
        autoscale=None if p.autoscale is None else (p.autoscale.min_instances, p.autoscale.initial),
        fp8_path=chip is None or "fp8" in chip.tflops,
    )


def facts(scenario: Scenario, kv_tokens: Mapping[str, int] | None = None) -> DeploymentFacts:
    """The facts of a scenario's deployment that launch commands carry (edge pools are left out);
    `kv_tokens`: each pool's KV tokens a rank, by name, where the scenario was resolved."""
    model = _model(scenario)
    dep = scenario.deployment
    pools = _limited(scenario, tuple(_pool(scenario, p) for p in dep.pools if p.tier == "datacenter"))
    if kv_tokens:
        pools = tuple(replace(p, kv_tokens=kv_tokens.get(p.name)) for p in pools)
    if not pools:
        raise ScenarioError("deployment.pools: no data-centre pool to export")
    tiers = tuple(
        name
        for name, tier in (("host", scenario.cache.host), ("pooled", scenario.cache.pooled))
        if tier.enabled
    )
    spec = dep.speculative
    return DeploymentFacts(
        scenario_name=scenario.name,
        modelled_stack=dep.stack,
        model_id=model.id,
        hf_id=model.hf_id,
        moe=model.moe is not None,
        weights=scenario.model.weights,
        checkpoint_weights=model.hf_weights,
        kv=scenario.kv_precision(),
        prefix_cache=scenario.cache.enabled,
        cache_tiers=tiers if scenario.cache.enabled else (),
        mem_fraction=dep.mem_fraction,
        eager=dep.eager,
        disaggregated=dep.mode == "disaggregated",
        speculative=spec.method if spec is not None else None,
        preemption=scenario.scheduler.preemption,
        pools=pools,
        edge_pools=tuple(p.name for p in dep.pools if p.tier == "edge"),
        policies=_policies(scenario),
        pins=tuple(f"{c.name} -> {', '.join(c.pools)}" for c in scenario.workload.classes if c.pools),
        max_model_len=min(model.max_context, longest_request_tokens(scenario)),
    )


def _longest(dist: LengthDist) -> int:
    """The most tokens a distribution can draw (lognormal and empirical: up to their clip)."""
    if dist.kind == "constant" and dist.tokens is not None:
        return dist.tokens
    if dist.kind == "uniform" and dist.high is not None:
        return dist.high
    return dist.max_tokens


def unchunked_start_note(scenario: Scenario) -> str | None:
    """Under vLLM, where a pool's prefill is not chunked and its token budget is under the longest request
    the workload sends: vLLM refuses to start so (`emit_engines._vllm_refusals`), which `emit` said while
    `run` and `advise` priced the deployment bare (a review). None elsewhere."""
    dep = scenario.deployment
    if dep.stack != "vllm":
        return None
    budgets = [lim.token_budget for p in dep.pools if not (lim := scenario.pool_batching(p)).chunked_prefill]
    if not budgets:
        return None
    longest = min(_model(scenario).max_context, longest_request_tokens(scenario))
    if min(budgets) >= longest:
        return None
    return (
        f"vLLM refuses to start this deployment: with chunked prefill off (deployment.batching.chunked_prefill) "
        f"its token budget ({min(budgets):,}) must hold the longest request ({longest:,} tokens); the run models "
        "it anyway. Raise deployment.batching.token_budget to it, or turn chunked prefill on"
    )


def longest_request_tokens(scenario: Scenario) -> int:
    """The longest request the scenario's workload can send, prompt and output together (`longest_tokens`);
    `bounds.MAX_TOKENS_PER_REQUEST` where multi-turn sessions leave no bound short of the model's context."""
    each = longest_tokens(scenario)
    return bounds.MAX_TOKENS_PER_REQUEST if each is None else max([1, *(whole for _, whole in each)])


def longest_tokens(scenario: Scenario) -> list[tuple[int, int]] | None:
    """Per class, the longest prompt and the longest request (prompt and output) the workload can send:
    a trace's longest in the window (for every class), else the class's shared prefix plus its longest
    prompt, and that plus its longest output. None where multi-turn sessions (open loop) carry each
    turn's context into the next: no bound short of the model's context."""
    wl = scenario.workload
    if wl.trace is not None:
        reqs = read_trace(wl.trace, scenario)
        one = (int(reqs.prompt_tokens.max()), int((reqs.prompt_tokens + reqs.output_tokens).max()))
        return [one] * len(wl.classes)
    sessions = wl.arrival.kind in ("poisson", "gamma")
    out = []
    for c in wl.classes:
        if sessions and c.multi_turn.turns_mean > 1:
            return None
        prompt = min(c.prefix.tokens + _longest(c.input), bounds.MAX_TOKENS_PER_REQUEST)
        out.append((prompt, prompt + _longest(c.output)))
    return out


def _limited(scenario: Scenario, pools: tuple[PoolFacts, ...]) -> tuple[PoolFacts, ...]:
    """The pools with their chips' power limits under the scenario's caps (none set: as they are)."""
    dep = scenario.deployment
    caps = {p.name: p.power_cap_kw for p in dep.pools}
    hw = [scenario.chip(p.hardware_id) for p in pools]
    if (dep.power_cap_kw is None and not any(caps[p.name] for p in pools)) or None in hw:
        return pools
    capped = [
        power_budget.CappedPool(p.name, "datacenter", caps[p.name], h, p.chips)
        for p, h in zip(pools, hw, strict=True)
        if h is not None
    ]
    limits = power_budget.chip_limits(dep.power_cap_kw, capped)
    return tuple(
        replace(p, power_limit_w=lim.limit_w if lim else None) for p, lim in zip(pools, limits, strict=True)
    )


PLAIN_POLICIES = {"router": "least_loaded", "queue": "fcfs", "admission": "none"}
"""The scheduler's defaults, which every stack's own router and queue stand in for."""


def _policies(scenario: Scenario) -> tuple[str, ...]:
    sched = scenario.scheduler
    chosen = {"router": sched.router.name, "queue": sched.queue.name, "admission": sched.admission.name}
    return tuple(f"scheduler.{k} = {v}" for k, v in chosen.items() if v != PLAIN_POLICIES[k])


def model_arg(f: DeploymentFacts) -> str:
    """The model argument of a launch command: the Hugging Face id, or a placeholder to replace."""
    return f.hf_id or f"MODEL_PATH_FOR_{f.model_id.upper().replace('-', '_').replace('.', '_')}"


def vendor_crossing(f: DeploymentFacts) -> str:
    """Where a split deployment's prefill and decode pools run on chips of different vendors, that the
    KV cache crosses between them ('' otherwise): the simulation prices the hand-off by the link alone,
    whether or not a stack's KV connector runs between the two (a review found an H100-to-MI300X
    choice emitted with plain NixlConnector commands and nothing said)."""
    if not f.disaggregated:
        return ""
    return crossing_text([(p.role, p.vendor, p.hardware_id) for p in f.pools])


def shared_notes(f: DeploymentFacts, stack: str, *, copies: bool = True) -> list[str]:
    """Comments every stack's export opens with: what was modelled, what has no flag anywhere and
    (for commands, where a manifest has replicas) how many copies of each pool's command to run."""
    notes = [f"scenario {f.scenario_name!r}: model {f.model_id}, modelled with the {f.modelled_stack} stack"]
    if f.modelled_stack != stack:
        notes.append(
            f"the scenario's batching defaults are {f.modelled_stack}'s; set deployment.stack = "
            f"'{stack}' and plan again for {stack}'s own defaults"
        )
    if f.hf_id is None:
        notes.append(f"the catalog has no Hugging Face id for {f.model_id}: replace {model_arg(f)}")
    else:  # the catalog names its source's checkpoint, often the base model (a buyer's review)
        notes.append(
            f"model {f.hf_id}: the catalog's checkpoint; an instruct or fine-tuned variant of the same "
            "architecture runs as modelled: put its repository in its place"
        )
    if crossing := vendor_crossing(f):
        notes.append(crossing)
    if f.cache_tiers:
        notes.append(
            f"prefix-cache tiers {', '.join(f.cache_tiers)} (cache.host / cache.pooled): no flag of this export "
            "sets them; configure the stack's KV offloading (e.g. LMCache) by hand"
        )
    if f.edge_pools:
        notes.append(
            f"edge pools {', '.join(f.edge_pools)} (deployment.edge): left out; an edge site runs its own "
            "stack, and the offload rule has no flag"
        )
    if f.policies:
        notes.append(
            f"{', '.join(f.policies)}: the router and queue in front of the servers decide this; "
            "no server flag sets it"
        )
    if f.pins:  # dropped unsaid: the preset's own lesson says unpinned, the same chips fail chat (a review)
        notes.append(
            f"class pins ({'; '.join(f.pins)}): no server flag routes by class; the router in front must send "
            "each class to its pools (by model name or a request header), or the classes share every pool"
        )
    if f.speculative is not None:
        notes.append(
            f"speculative decoding ({f.speculative}): left out; set the stack's speculative options by hand"
        )
    for p in f.pools:
        if p.power_limit_w is not None:
            notes.append(
                f"pool {p.name}: its power cap holds each chip to {p.power_limit_w:.0f} W; set it on every GPU "
                f"before launch (NVIDIA: nvidia-smi -pl {p.power_limit_w:.0f}), as the run modelled"
            )
    for p in f.pools if copies else ():
        if p.autoscale is not None:
            notes.append(
                f"pool {p.name}: {p.scaling_text()}: start {p.start_count} cop{'y' if p.start_count == 1 else 'ies'} "
                f"of its command and add copies, up to {p.count}, as the load rises (no server flag scales)"
            )
        elif p.count > 1:
            notes.append(f"pool {p.name}: run {p.count} copies of its command behind a router")
    return notes
