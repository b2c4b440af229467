"""The Scenario: everything one simulation needs, as one validated, immutable value.

A scenario names a model and hardware by catalog id (or carries custom entries inline) and
describes the workload (request classes, arrivals or a trace), the deployment (one colocated
pool, or prefill and decode pools), the cache, the scheduler, the faults to inject, the seed
and the window. It is a tree of frozen pydantic models: hashable (a cache key), comparable,
and serialisable to TOML and JSON with an exact round trip (see `engine.scenario.codec`).
Unknown keys are errors. Every failure names the field by its path, the value and the range.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, ValidationError, model_validator

from engine import policies
from engine.catalog.specs import MIN_LINK_GB_S, Frozen, HardwareSpec, KvPrecision, ModelSpec, Precision
from engine.core import bounds
from engine.core.errors import ScenarioError, format_validation_error
from engine.costmodel import stacks
from engine.costmodel.maturity import Maturity
from engine.costmodel.ownership import CostBasis
from engine.scenario.arrival import Arrival as Arrival  # re-exported: older code imports it from here
from engine.scenario.degrade import Degrade as Degrade  # re-exported, as Arrival
from engine.scenario.fields import Name, Tokens
from engine.scenario.network import ControlPlane, Edge, Network
from engine.scenario.policy_spec import PolicySpec
from engine.scenario.power_budget import PowerCapKw
from engine.scenario.scaling import Autoscale, conflicts

SCHEMA_VERSION = 1
"""Version of the scenario format; share links and result files carry it."""

Z99 = 2.3263478740408408
"""The standard normal's 99th percentile."""
LOGNORMAL_MAX_SPREAD = math.exp(Z99 * Z99 / 2)
"""Largest p99 / mean of a lognormal (about 14.97): past it no sigma gives both."""


class LengthDist(Frozen):
    """A distribution of token counts.

    ``constant`` (tokens), ``uniform`` (low..high), ``lognormal`` (mean and p99, the way
    people describe lengths) or ``empirical`` (a column of a CSV file, sampled with
    replacement). Draws are clipped to [1, max_tokens].
    """

    kind: Literal["constant", "uniform", "lognormal", "empirical"] = "constant"
    tokens: Tokens | None = None
    low: Tokens | None = None
    high: Tokens | None = None
    mean: Annotated[float, Field(ge=1, le=bounds.MAX_TOKENS_PER_REQUEST)] | None = None
    p99: Annotated[float, Field(ge=1, le=bounds.MAX_TOKENS_PER_REQUEST)] | None = None
    path: Annotated[str, Field(min_length=1, max_length=1024)] | None = None
    column: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    max_tokens: Tokens = bounds.MAX_TOKENS_PER_REQUEST

    @model_validator(mode="after")
    def _check(self) -> LengthDist:
        need = {
            "constant": ("tokens",),
            "uniform": ("low", "high"),
            "lognormal": ("mean", "p99"),
            "empirical": ("path", "column"),
        }[self.kind]
        missing = [f for f in need if getattr(self, f) is None]
        if missing:
            article = "an" if self.kind[0] in "aeiou" else "a"
            raise ValueError(
                f"{missing[0]}: {article} {self.kind} distribution needs {' and '.join(missing)}"
            )
        if self.kind == "uniform" and self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"low: must not exceed high ({self.high}) (got {self.low})")
        if (
            self.kind == "lognormal"
            and self.mean is not None
            and self.p99 is not None
            and self.p99 <= self.mean
        ):
            raise ValueError(f"p99: must exceed mean ({self.mean}) for a lognormal (got {self.p99})")
        if self.kind == "lognormal" and 2.0 * math.log((self.p99 or 1) / (self.mean or 1)) > Z99 * Z99:
            raise ValueError(
                f"p99: a lognormal's p99 is at most {LOGNORMAL_MAX_SPREAD:.2f}x its mean ({self.mean}), "
                f"so at most {LOGNORMAL_MAX_SPREAD * (self.mean or 0):.6g} (got {self.p99})"
            )
        return self

    def nominal_mean(self) -> float:
        """The mean of the distribution (empirical files: unknown until read, reported as nan)."""
        if self.kind == "constant":
            return float(self.tokens or 0)
        if self.kind == "uniform":
            return ((self.low or 0) + (self.high or 0)) / 2.0
        if self.kind == "lognormal":
            return float(self.mean or 0)
        return math.nan


class Slo(Frozen):
    """Latency targets of a class: TTFT and TPOT at a percentile, optionally an E2E deadline and a
    TBT target (each request's largest gap between two tokens: stalls break it, means hide them)."""

    ttft_ms: Annotated[float, Field(ge=0.01, le=3_600_000)] = 2000.0
    tpot_ms: Annotated[float, Field(ge=0.01, le=60_000)] = 100.0
    percentile: Annotated[float, Field(ge=50, le=99.99)] = 99.0
    e2e_ms: Annotated[float, Field(ge=0.01, le=86_400_000)] | None = None
    tbt_ms: Annotated[float, Field(ge=0.01, le=600_000)] | None = None


class Prefix(Frozen):
    """Shared prompt prefixes: `groups` distinct system prompts of `tokens` tokens each."""

    tokens: Annotated[int, Field(ge=0, le=bounds.MAX_TOKENS_PER_REQUEST)] = 0
    groups: Annotated[int, Field(ge=1, le=100_000)] = 1


class MultiTurn(Frozen):
    """Multi-turn sessions: each turn's prompt extends the previous turn's whole context."""

    turns_mean: Annotated[float, Field(ge=1, le=1000)] = 1.0
    think_time_s: Annotated[float, Field(ge=0, le=86_400)] = 10.0


class RequestClass(Frozen):
    """One class of requests: its share of traffic, priority, lengths, prefixes and SLO.

    Priority: a higher number is more important (it is served first under strict priority and
    shed last under admission control).
    """

    name: Name
    share: Annotated[float, Field(ge=1e-6, le=1)] = 1.0
    priority: Annotated[int, Field(ge=0, le=100)] = 0
    input: LengthDist = LengthDist(kind="constant", tokens=1024)
    output: LengthDist = LengthDist(kind="constant", tokens=256)
    slo: Slo = Slo()
    prefix: Prefix = Prefix()
    multi_turn: MultiTurn = MultiTurn()
    pools: Annotated[tuple[Name, ...], Field(max_length=8)] = ()
    """Pools the class is pinned to: entry pools (mixed or prefill) it enters, and decode pools its
    prompts are handed to; where it names none of a kind, any pool of that kind."""
    overflow: Literal["wait", "spill", "reject"] = "wait"
    """When every pinned instance has `spill_queue` requests waiting: keep queueing there, spill
    to the other pools, or reject (`isolation_full`)."""
    spill_queue: Annotated[int, Field(ge=1, le=1_000_000)] = 8


class Trace(Frozen):
    """A trace to replay instead of generated arrivals.

    Formats: ``mooncake`` (JSONL: timestamp ms, input_length, output_length, hash_ids),
    ``azure`` (CSV: TIMESTAMP, ContextTokens, GeneratedTokens), ``csv`` (arrival_s,
    input_tokens, output_tokens[, class]) and ``agentic`` (kv-cache-tester's agentic-coding
    sessions: JSON, one document a session, t / in / out / hash_ids per request, nested
    sub-agents; its block size is the file's `block_size`). `time_scale` > 1 replays faster.
    `block_tokens` is Mooncake's block size (other formats ignore it). `max_gap_s` (agentic only;
    others ignore it) cuts each gap between a session's consecutive requests to at most that many
    seconds: the recorded sessions pause for hours or days between bursts of work.
    """

    format: Literal["mooncake", "azure", "csv", "agentic"]
    path: Annotated[str, Field(min_length=1, max_length=1024)]
    time_scale: Annotated[float, Field(ge=0.001, le=1000)] = 1.0
    max_requests: Annotated[int, Field(ge=1, le=bounds.MAX_REQUESTS)] = bounds.MAX_REQUESTS
    start_s: Annotated[float, Field(ge=0, le=10 * bounds.MAX_DURATION_S)] = 0.0
    block_tokens: Annotated[int, Field(ge=1, le=65536)] = 512
    max_gap_s: Annotated[float, Field(ge=0.001, le=bounds.MAX_DURATION_S)] | None = None


class Workload(Frozen):
    """Request classes and how they arrive (generated, or replayed from a trace)."""

    classes: Annotated[tuple[RequestClass, ...], Field(min_length=1, max_length=bounds.MAX_CLASSES)] = (
        RequestClass(name="chat"),
    )
    arrival: Arrival = Arrival()
    trace: Trace | None = None

    @model_validator(mode="after")
    def _check(self) -> Workload:
        names = [c.name for c in self.classes]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"classes: names must be unique; repeated: {', '.join(dup)}")
        return self

    def shares(self) -> list[float]:
        """Traffic shares of the classes, normalised to sum to one."""
        total = sum(c.share for c in self.classes)
        return [c.share / total for c in self.classes]


class ModelChoice(Frozen):
    """The served model and its precisions."""

    id: Annotated[str, Field(min_length=1, max_length=64)] = "llama-3.1-70b"
    weights: Precision = "bf16"
    kv: KvPrecision | None = None
    """KV-cache precision; unset: the serving stack's default for the weights (`Scenario.kv_precision`)."""
    attention_weights: Precision | None = None
    """Precision of the attention projections where the checkpoint keeps them apart from the rest
    (Meta's FP8 Llama 3.1 405B quantises only the MLPs: bf16); unset: `weights`."""


class Pool(Frozen):
    """A pool of identical instances: `count` instances of `tp` x `pp` x `dp` chips of one kind."""

    name: Name
    role: Literal["mixed", "prefill", "decode"] = "mixed"
    hardware: Annotated[str, Field(min_length=1, max_length=64)] = "h100-sxm"
    tp: Annotated[int, Field(ge=1, le=bounds.MAX_TP)] = 1
    pp: Annotated[int, Field(ge=1, le=bounds.MAX_PP)] = 1
    dp: Annotated[int, Field(ge=1, le=bounds.MAX_TP)] = 1
    """Attention data parallelism: ranks of tp chips that each hold their own requests' KV cache."""
    ep: Annotated[int, Field(ge=1, le=bounds.MAX_TP * bounds.MAX_TP)] = 1
    """Expert parallelism: ranks the routed experts are spread over (divides tp x dp; MoE only)."""
    count: Annotated[int, Field(ge=1, le=bounds.MAX_INSTANCES)] = 1
    profile: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    maturity: Maturity | None = None
    """Software maturity of the chip's stack: measured, vendor, port; unset: as calibrated (docs/calibration.md)."""
    sends_to: Annotated[tuple[Name, ...], Field(max_length=8)] = ()
    """Prefill pools only: the decode pools this pool hands prompts to (empty: any decode pool)."""
    tier: Literal["datacenter", "edge"] = "datacenter"
    """Where the pool runs: the data centre, or an edge site (`deployment.edge`; role 'mixed')."""
    autoscale: Autoscale | None = None
    """Instances come and go with the load (`engine.scenario.scaling`); `count` is then the most it may have."""
    power_cap_kw: PowerCapKw = None
    """The pool's chips together may draw at most this, kW (`engine.scenario.power_budget`); unset: no cap."""

    @model_validator(mode="after")
    def _check(self) -> Pool:
        if self.autoscale is not None:
            self.autoscale.check_within(self.count, self.tier)
        return self

    @property
    def chips_per_instance(self) -> int:
        """Chips in one instance: tp x dp per pipeline stage, pp stages."""
        return self.tp * self.pp * self.dp


class Batching(Frozen):
    """Continuous batching limits of every instance; an unset field takes the serving stack's default.

    `Scenario.batching()` gives the limits a run uses: these values where set, else the defaults
    of `deployment.stack` on the first pool's chip (engine/costmodel/stacks.py).
    """

    max_batch: Annotated[int, Field(ge=1, le=bounds.MAX_BATCH)] | None = None
    token_budget: Annotated[int, Field(ge=16, le=1_048_576)] | None = None
    chunked_prefill: bool | None = None
    chunk_tokens: Annotated[int, Field(ge=16, le=1_048_576)] | None = None


class Limits(Frozen):
    """The batching limits a run uses, every field set."""

    max_batch: int
    token_budget: int
    chunked_prefill: bool
    chunk_tokens: int
    source: str = ""


class Speculative(Frozen):
    """Speculative decoding on every decode step: `tokens` drafted, each accepted with `acceptance`.

    Defaults by method (docs/cost-model.md): ``mtp`` (a multi-token-prediction head, DeepSeek-V3:
    one token, 85% accepted, per its technical report) and ``draft`` (a small draft model of the
    same family, `draft_model`: four tokens, 70% accepted, the middle of the range Leviathan et
    al. report). Decode steps mixed with prompt chunks run without it.
    """

    method: Literal["mtp", "draft"] = "mtp"
    tokens: Annotated[int, Field(ge=1, le=16)] | None = None
    acceptance: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    draft_model: Annotated[str, Field(min_length=1, max_length=64)] | None = None

    DEFAULTS: ClassVar[dict[str, tuple[int, float]]] = {"mtp": (1, 0.85), "draft": (4, 0.7)}

    def resolved(self) -> tuple[int, float]:
        """(tokens, acceptance) with the method's defaults where unset."""
        k, a = self.DEFAULTS[self.method]
        return (
            self.tokens if self.tokens is not None else k,
            self.acceptance if self.acceptance is not None else a,
        )

    @model_validator(mode="after")
    def _check(self) -> Speculative:
        if self.method == "draft" and not self.draft_model:
            raise ValueError("draft_model: a draft model's catalog id is needed for method 'draft'")
        return self


class KvLink(Frozen):
    """The link the prompt's KV cache crosses from a prefill to a decode instance.

    `bandwidth_gb_s` per instance pair; left unset it is the sending instance's scale-out
    bandwidth (each chip has its own NIC). With `overlap`, layer l moves while l+1 computes.
    """

    bandwidth_gb_s: Annotated[float, Field(ge=MIN_LINK_GB_S, le=100_000)] | None = None
    latency_ms: Annotated[float, Field(ge=0, le=10_000)] = 0.05
    overlap: bool = True
    shared_gb_s: Annotated[float, Field(ge=MIN_LINK_GB_S, le=1_000_000)] | None = None
    """A fabric every hand-off also crosses (a spine, an inter-building or inter-site link), in GB/s
    for all transfers together; unset: none, each pair has its own path. Transfers contend for it."""


class Deployment(Frozen):
    """How the work is split: colocated (mixed pools) or disaggregated (prefill + decode)."""

    mode: Literal["colocated", "disaggregated"] = "colocated"
    stack: Literal["vllm", "sglang", "trtllm", "vllm-v0", "vllm-ascend", "mindie"] = "vllm"
    """Serving stack: its calibration profile per chip and its scheduler defaults (docs/calibration.md)."""
    pools: Annotated[tuple[Pool, ...], Field(min_length=1, max_length=bounds.MAX_POOLS)] = (
        Pool(name="main"),
    )
    batching: Batching = Batching()
    link: KvLink = KvLink()
    mem_fraction: Annotated[float, Field(gt=0.1, le=0.98)] = 0.9
    eager: bool = False
    """Run without CUDA/HIP graphs (vLLM's `--enforce-eager`): every layer of every iteration pays
    a launch cost (`engine.catalog.specs.EAGER_LAYER_MS`)."""
    fallback: Literal["none", "colocated"] = "none"
    """When every prefill instance is lost: reject arrivals (none), or let the decode instances
    serve whole requests until prefill is back (colocated). Spilling to another pool of the role is
    not a fallback: routing already spreads over every live pool of a role (docs/scheduling.md)."""
    degrade: Degrade = Degrade()
    """Shed low priorities and cap outputs while entry capacity is short (off unless enabled)."""
    edge: Edge | None = None
    """An edge site in front of the data centre: what its pools serve locally, its power budget and
    the offload latency (unset: no edge tier; pools with `tier = "edge"` need it)."""
    speculative: Speculative | None = None
    expert_imbalance: Annotated[float, Field(ge=1.0, le=64.0)] = 1.4
    """Tokens on the busiest expert-parallel rank over the mean (applies with ep > 1); 1.4 is the
    middle of the 1.2-1.8 range reported for real workloads without expert replication."""
    power_cap_kw: PowerCapKw = None
    """The site's data-centre chips together may draw at most this, kW (`engine.scenario.power_budget`)."""

    @model_validator(mode="after")
    def _check(self) -> Deployment:
        roles = [p.role for p in self.pools if p.tier == "datacenter"]  # edge pools stand apart
        names = [p.name for p in self.pools]
        if len(set(names)) != len(names):
            raise ValueError("pools: names must be unique")
        edge = [i for i, p in enumerate(self.pools) if p.tier == "edge"]
        for i in edge:
            if self.pools[i].role != "mixed":
                raise ValueError(f"pools[{i}].role: an edge pool serves whole requests: it must be 'mixed'")
        if edge and not roles:
            raise ValueError("pools: an edge site needs at least one data-centre pool to offload to")
        if edge and self.edge is None:
            raise ValueError(
                "edge: pools with tier 'edge' need the edge site's rule and power budget (deployment.edge)"
            )
        if self.edge is not None and not edge:
            raise ValueError("edge: an edge site needs at least one pool with tier 'edge'")
        if self.mode == "colocated" and any(r != "mixed" for r in roles):
            raise ValueError("pools: a colocated deployment has only 'mixed' pools")
        if self.mode == "disaggregated" and (
            "prefill" not in roles or "decode" not in roles or "mixed" in roles
        ):
            raise ValueError(
                "pools: a disaggregated deployment has one or more 'prefill' pools and one or more 'decode' "
                "pools, and no 'mixed' ones"
            )
        decode_names = {p.name for p in self.pools if p.role == "decode"}
        for i, p in enumerate(self.pools):
            for name in p.sends_to:
                if p.role != "prefill":
                    raise ValueError(
                        f"pools[{i}].sends_to: only a prefill pool hands prompts to decode pools"
                    )
                if name not in decode_names:
                    raise ValueError(
                        f"pools[{i}].sends_to: {name!r} is not a decode pool; choose from {sorted(decode_names)}"
                    )
            if (p.tp * p.dp) % p.ep:
                raise ValueError(
                    f"pools[{i}].ep: {p.ep} must divide the chips of a pipeline stage, tp x dp = {p.tp * p.dp}"
                )
        total = sum(p.count for p in self.pools)
        if total > bounds.MAX_INSTANCES:
            raise ValueError(f"pools: {total} instances in all; the limit is {bounds.MAX_INSTANCES}")
        return self

    def pool(self, role: str) -> Pool:
        """The first data-centre pool of a role."""
        for p in self.pools:
            if p.role == role and p.tier == "datacenter":
                return p
        raise KeyError(role)


class CacheTier(Frozen):
    """One tier of the prefix cache: capacity per instance (or pooled) and its read bandwidth."""

    enabled: bool = False
    capacity_gb: Annotated[float, Field(ge=0, le=1_000_000)] = 0.0
    bandwidth_gb_s: Annotated[float, Field(ge=MIN_LINK_GB_S, le=100_000)] = 50.0


class Cache(Frozen):
    """Prefix/KV-cache reuse over hashed token blocks, in up to three tiers."""

    enabled: bool = False
    block_tokens: Annotated[int, Field(ge=1, le=65536)] = 512
    hbm: bool = True
    host: CacheTier = CacheTier(capacity_gb=0.0, bandwidth_gb_s=50.0)
    pooled: CacheTier = CacheTier(capacity_gb=0.0, bandwidth_gb_s=25.0)
    usd_per_gb_hour: Annotated[float, Field(ge=0, le=100)] = 0.0005


class Elastic(Frozen):
    """Elastic roles: an instance may switch between prefill and decode (disaggregated only).

    Every `check_s`, if the prefill queue holds more than `threshold` requests per prefill
    instance and a decode instance is idle, that instance switches to prefill (and the reverse
    for prompts waiting for decode memory). A switch takes `switch_s`, during which the instance
    serves nothing. With `drain`, when the backlog has stayed over the threshold for `sustain_s`
    and no instance of the other role is idle, the least loaded one is drained: it takes no new
    work, finishes what it holds, then switches.

    With `restore`, instances return to their own pool's role once the spike is over, one at a
    time: when neither role is over the threshold and both backlogs have stayed at most a quarter
    of it for `restore_after_s` (the hysteresis that keeps a fluctuating load from switching back
    and forth), an idle moved instance switches home, or the least loaded one is drained first.
    """

    enabled: bool = False
    threshold: Annotated[float, Field(gt=0, le=100_000)] = 8.0
    switch_s: Annotated[float, Field(ge=0, le=3600)] = 20.0
    check_s: Annotated[float, Field(ge=0.01, le=3600)] = 5.0
    drain: bool = True
    sustain_s: Annotated[float, Field(ge=0, le=86_400)] = 15.0
    restore: bool = True
    restore_after_s: Annotated[float, Field(ge=0, le=86_400)] = 30.0


class Scheduler(Frozen):
    """Routing, queue order, admission control, preemption and elastic roles.

    Preemption: with ``none`` a request reserves KV for its prompt and its whole output on
    admission, so memory never runs out (TensorRT-LLM's guaranteed-no-evict policy). With
    ``recompute`` or ``swap`` it reserves only what it holds (vLLM's policy) and grows one token
    a step; when decode memory runs out, a victim (lowest priority, then latest arrival) is
    preempted and later either recomputed from scratch or swapped back in from host memory over
    PCIe. Both costs show up in latency.
    """

    router: PolicySpec = PolicySpec(name="least_loaded")
    queue: PolicySpec = PolicySpec(name="fcfs")
    admission: PolicySpec = PolicySpec(name="none")
    iteration: PolicySpec | None = None
    """How an iteration mixes prompts and decodes (`mixed`, `prefill_first`); unset: the stack's."""
    preemption: Literal["none", "recompute", "swap"] = "none"
    elastic: Elastic = Elastic()

    @model_validator(mode="after")
    def _check(self) -> Scheduler:
        for kind in ("router", "queue", "admission", "iteration"):
            spec: PolicySpec | None = getattr(self, kind)
            if spec is not None:
                policies.build(kind, spec.as_dict(), where=kind)  # type: ignore[arg-type]
        return self


class Fault(Frozen):
    """At `at_s`, `instances` instances of `pool` are lost for `duration_s` (None: for good).

    With `kind = "link"`, the pool's KV link (a prefill pool's, disaggregated) runs at
    `link_factor` of its bandwidth for `duration_s` instead: a degraded or congested network.
    Transfers started meanwhile take that much longer; transfers under way finish as scheduled.
    `link_factor = 0` takes the link down: hand-offs from the pool wait for it to come back
    (`link_down = "queue"`, parked as for decode memory) or fail with reason `link_down`
    ("reject"); a link down for good fails them either way.
    """

    at_s: Annotated[float, Field(ge=0, le=bounds.MAX_DURATION_S)]
    pool: Name
    instances: Annotated[int, Field(ge=1, le=bounds.MAX_INSTANCES)] = 1
    duration_s: Annotated[float, Field(ge=0.001, le=bounds.MAX_DURATION_S)] | None = None
    in_flight: Literal["retry", "fail"] = "retry"
    kind: Literal["instances", "link"] = "instances"
    link_factor: Annotated[float, Field(ge=0, le=1)] = 0.1
    link_down: Literal["queue", "reject"] = "queue"

    @model_validator(mode="after")
    def _physical_link(self) -> Fault:
        # a link at a millionth of its bandwidth is no physical state: down (0) or from 0.1% of it
        if 0.0 < self.link_factor < MIN_LINK_FACTOR:
            raise ValueError(
                f"link_factor: 0 (the link down) or from {MIN_LINK_FACTOR:g} to 1 (got {self.link_factor:g})"
            )
        return self


MIN_LINK_FACTOR = 0.001
"""The smallest share of a KV link's bandwidth a link fault may leave, short of taking it down (0)."""


NAME_MAX_CHARS = 160
"""The longest scenario name: room for a derived one (`engine.scenario.naming`) of a few pools."""


class Scenario(Frozen):
    """One complete, validated simulation setup."""

    version: Literal[1] = 1
    name: Annotated[str, Field(min_length=1, max_length=NAME_MAX_CHARS)] = "scenario"
    description: Annotated[str, Field(max_length=4000)] = ""
    lesson: Annotated[str, Field(max_length=600)] = ""
    """What the scenario demonstrates, in a sentence or two (the Results page opens with it)."""
    counterpart: Name | None = None
    """A preset to compare against, the baseline the lesson is measured from (e.g. the same chips colocated)."""
    seed: Annotated[int, Field(ge=0, le=2**31 - 1)] = 1
    duration_s: Annotated[float, Field(ge=bounds.MIN_DURATION_S, le=bounds.MAX_DURATION_S)] = 600.0
    warmup_s: Annotated[float, Field(ge=0, le=bounds.MAX_DURATION_S)] = 0.0
    resolution_s: Annotated[float, Field(ge=0.01, le=3600)] = 5.0
    model: ModelChoice = ModelChoice()
    workload: Workload = Workload()
    deployment: Deployment = Deployment()
    cache: Cache = Cache()
    cost: CostBasis = CostBasis()
    scheduler: Scheduler = Scheduler()
    network: Network = Network()
    """The user's way to the first serving site: round trip, bandwidth, a gateway (docs/network.md)."""
    control_plane: ControlPlane = ControlPlane()
    """Per-request decision time and per-block KV-index lookups, paid before queueing (docs/network.md)."""
    faults: Annotated[tuple[Fault, ...], Field(max_length=bounds.MAX_FAULTS)] = ()
    custom_hardware: Annotated[tuple[HardwareSpec, ...], Field(max_length=16)] = ()
    custom_models: Annotated[tuple[ModelSpec, ...], Field(max_length=8)] = ()

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        if self.warmup_s >= self.duration_s:
            raise ValueError(f"warmup_s: {self.warmup_s} must be below duration_s {self.duration_s}")
        arr = self.workload.arrival
        if self.workload.trace is None and arr.kind in ("poisson", "gamma"):
            expected = arr.rate_rps * self.duration_s * arr.rows_factor()
            if expected > bounds.MAX_REQUESTS:
                raise ValueError(
                    f"workload.arrival.rate_rps: {arr.rate_rps} rps over duration_s {self.duration_s} "
                    f"means up to {expected:,.0f} requests; {bounds.requests_limit_text()}"
                )
        if self.deployment.fallback != "none" and self.deployment.mode != "disaggregated":
            raise ValueError(
                "deployment.fallback: a fallback for a lost prefill pool needs a disaggregated deployment"
            )
        if self.scheduler.elastic.enabled and self.deployment.mode != "disaggregated":
            raise ValueError("scheduler.elastic.enabled: elastic roles need a disaggregated deployment")
        self._check_autoscale()
        pool_names = {p.name for p in self.deployment.pools}
        entry_names = {
            p.name for p in self.deployment.pools if p.role in ("mixed", "prefill") and p.tier == "datacenter"
        }  # edge pools take only what `deployment.edge` sends them
        edge = self.deployment.edge
        class_names = [c.name for c in self.workload.classes]
        for name in edge.classes if edge is not None else ():
            if name not in class_names:
                raise ValueError(
                    f"deployment.edge.classes: {name!r} is not a request class; choose from {sorted(class_names)}"
                )
        decode_names = {p.name for p in self.deployment.pools if p.role == "decode"}
        for i, c in enumerate(self.workload.classes):
            for name in c.pools:
                if name not in entry_names | decode_names:
                    raise ValueError(
                        f"workload.classes[{i}].pools: {name!r} is not a pool of this deployment that a request "
                        f"enters or decodes on; choose from {sorted(entry_names | decode_names)}"
                    )
        for i, f in enumerate(self.faults):
            if f.pool not in pool_names:
                raise ValueError(f"faults[{i}].pool: {f.pool!r} is not one of {sorted(pool_names)}")
            if f.kind == "link":
                senders = [p.name for p in self.deployment.pools if p.role == "prefill"]
                if f.pool not in senders:
                    raise ValueError(
                        f"faults[{i}].pool: a link fault hits the KV link a prefill pool sends on; "
                        f"{f.pool!r} is not one (choose from {senders or 'none: the deployment is colocated'})"
                    )
        return self

    def _first_chip(self) -> HardwareSpec | None:
        hw_id = self.deployment.pools[0].hardware
        for h in self.custom_hardware:
            if h.id == hw_id:
                return h
        from engine.catalog.entries import load_catalog

        return load_catalog().hardware.get(hw_id)

    def batching(self, hw: HardwareSpec | None = None) -> Limits:
        """The batching limits of the run: the scenario's where set, else the stack's defaults on the
        first pool's chip (or on `hw`: what a planner candidate whose first pool runs it would use)."""
        b = self.deployment.batching
        hw = hw or self._first_chip()
        if hw is None:
            d = stacks.StackDefaults(256, 2048, True, 2048, "unknown chip: the smallest defaults")
        else:
            d = stacks.defaults(self.deployment.stack, hw)
        budget = b.token_budget if b.token_budget is not None else d.token_budget
        return Limits(
            max_batch=b.max_batch if b.max_batch is not None else d.max_batch,
            token_budget=budget,
            chunked_prefill=b.chunked_prefill if b.chunked_prefill is not None else d.chunked_prefill,
            chunk_tokens=b.chunk_tokens if b.chunk_tokens is not None else min(d.chunk_tokens, budget),
            source=d.source,
        )

    def activation_tokens(self, hw: HardwareSpec | None = None) -> int:
        """Tokens of forward pass each instance keeps activation memory for (`stacks.activation_tokens`)."""
        return stacks.activation_tokens(self.deployment.stack, self.batching(hw).token_budget)

    def _check_autoscale(self) -> None:
        dep, dg = self.deployment, self.deployment.degrade
        scaled = {p.name for p in dep.pools if p.autoscale is not None}
        faulted = [f.pool for f in self.faults]
        degrading = dg.enabled and dg.below_capacity > 0
        why = conflicts(scaled, self.scheduler.elastic.enabled, dep.fallback, degrading, faulted)
        if why:
            raise ValueError(why)

    def iteration_scheduler(self) -> policies.IterationScheduler:
        """The iteration scheduler of the run: the scenario's, else its serving stack's."""
        spec = self.scheduler.iteration
        data = (
            spec.as_dict() if spec is not None else {"name": policies.STACK_SCHEDULER[self.deployment.stack]}
        )
        return policies.build_iteration(data)

    def kv_precision(self) -> KvPrecision:
        """The KV-cache precision of the run: the scenario's, else the stack's default for the weights."""
        if self.model.kv is not None:
            return self.model.kv
        return stacks.kv_default(self.deployment.stack, self.model.weights)


def validate(data: Any) -> Scenario:
    """A Scenario from plain data, raising ScenarioError with one readable line per problem."""
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(format_validation_error(exc)) from None
