"""The Scenario: everything one simulation needs, as one validated, immutable value.

A scenario names a model and hardware by catalog id (or carries custom entries inline) and
describes the workload (request classes, arrivals or a trace), the deployment (one colocated
pool, or prefill and decode pools), the cache, the scheduler, the faults to inject, the seed
and the window. It is a tree of frozen pydantic models: hashable (a cache key), comparable,
and serialisable to TOML and JSON with an exact round trip (see `engine.scenario.codec`).
Unknown keys are errors. Every failure names the field by its path, the value and the range.

This module keeps the Scenario, the served model (`ModelChoice`) and the checks across parts
(classes and faults name pools of the deployment, arrivals fit the window, autoscaling conflicts).
Each part has its own module, and its names are re-exported here: `workload` (classes, lengths,
SLOs, a trace), `deployment` (pools, batching, the KV link, speculative decoding), `cache`,
`scheduler` (policies, elastic roles), `faults`, and `arrival`, `degrade`, `network`, `scaling`,
`power_budget`.
"""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from engine import policies
from engine.catalog.model_spec import ModelSpec
from engine.catalog.specs import Frozen, HardwareSpec, KvPrecision, Precision
from engine.core import bounds
from engine.core.errors import ScenarioError, format_validation_error
from engine.core.text import Line, Prose
from engine.costmodel import stacks
from engine.costmodel.ownership import CostBasis

# The Scenario's parts, each in its own module, re-exported: callers, tests and the face import
# them from here, and their class names and fields are the scenario format.
from engine.scenario.arrival import Arrival as Arrival
from engine.scenario.cache import Cache as Cache
from engine.scenario.cache import CacheTier as CacheTier
from engine.scenario.degrade import Degrade as Degrade
from engine.scenario.deployment import Batching as Batching
from engine.scenario.deployment import Deployment as Deployment
from engine.scenario.deployment import KvLink as KvLink
from engine.scenario.deployment import Limits as Limits
from engine.scenario.deployment import Pool as Pool
from engine.scenario.deployment import Speculative as Speculative
from engine.scenario.faults import MIN_LINK_FACTOR as MIN_LINK_FACTOR
from engine.scenario.faults import Fault as Fault
from engine.scenario.fields import Name
from engine.scenario.network import ControlPlane, Network
from engine.scenario.scaling import conflicts
from engine.scenario.scheduler import Elastic as Elastic
from engine.scenario.scheduler import Scheduler as Scheduler
from engine.scenario.workload import LOGNORMAL_MAX_SPREAD as LOGNORMAL_MAX_SPREAD
from engine.scenario.workload import Z99 as Z99
from engine.scenario.workload import LengthDist as LengthDist
from engine.scenario.workload import MultiTurn as MultiTurn
from engine.scenario.workload import Prefix as Prefix
from engine.scenario.workload import RequestClass as RequestClass
from engine.scenario.workload import Slo as Slo
from engine.scenario.workload import Trace as Trace
from engine.scenario.workload import Workload as Workload

SCHEMA_VERSION = 1
"""Version of the scenario format; share links and result files carry it."""


class ModelChoice(Frozen):
    """The served model and its precisions."""

    id: Annotated[str, Field(min_length=1, max_length=64)] = "llama-3.1-70b"
    weights: Precision = "bf16"
    kv: KvPrecision | None = None
    """KV-cache precision; unset: the serving stack's default for the weights (`Scenario.kv_precision`)."""
    attention_weights: Precision | None = None
    """Precision of the attention projections where the checkpoint keeps them apart from the rest
    (Meta's FP8 Llama 3.1 405B quantises only the MLPs: bf16); unset: `weights`."""


NAME_MAX_CHARS = 160
DESCRIPTION_MAX_CHARS = 4000
"""The longest scenario name: room for a derived one (`engine.scenario.naming`) of a few pools."""


class Scenario(Frozen):
    """One complete, validated simulation setup."""

    version: Literal[1] = 1
    name: Annotated[Line, Field(min_length=1, max_length=NAME_MAX_CHARS)] = "scenario"
    description: Annotated[Prose, Field(max_length=DESCRIPTION_MAX_CHARS)] = ""
    lesson: Annotated[Prose, Field(max_length=600)] = ""
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
    def _check(self) -> "Scenario":
        if self.warmup_s >= self.duration_s:
            raise ValueError(f"warmup_s: {self.warmup_s} must be below duration_s {self.duration_s}")
        arr = self.workload.arrival
        if self.workload.trace is None and arr.kind in ("poisson", "gamma"):
            expected = arr.rate_rps * self.duration_s * arr.rows_factor()
            if expected > bounds.MAX_REQUESTS:
                raise ValueError(
                    f"workload.arrival.rate_rps: {arr.rate_rps:,g} req/s over duration_s {self.duration_s:,g} "
                    f"means up to {expected:,.0f} requests; {bounds.requests_limit_text()} (at most about "
                    f"{bounds.MAX_REQUESTS / (self.duration_s * arr.rows_factor()):,.0f} req/s over this window; the "
                    "work bound, checked at run time, may admit less)"
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
                raise ValueError(
                    f"faults[{i}].pool: {f.pool!r} is not one of {', '.join(sorted(pool_names))}"
                )
            if f.kind == "link":
                senders = [p.name for p in self.deployment.pools if p.role == "prefill"]
                if f.pool not in senders:
                    choose = ", ".join(senders) or "none: the deployment is colocated"
                    raise ValueError(
                        f"faults[{i}].pool: a link fault hits the KV link a prefill pool sends on; "
                        f"{f.pool!r} is not one (choose from {choose})"
                    )
        return self

    def _first_chip(self) -> HardwareSpec | None:
        return self.chip(self.deployment.pools[0].hardware)

    def chip(self, hw_id: str) -> HardwareSpec | None:
        """A chip by id: the scenario's own (`custom_hardware`) before the catalog's; None when unknown."""
        for h in self.custom_hardware:
            if h.id == hw_id:
                return h
        from engine.catalog.entries import shared_catalog

        return shared_catalog().hardware.get(hw_id)

    def pool_batching(self, pool: Pool) -> Limits:
        """The batching limits of `pool`'s instances (`batching` on its chip): what the work bound's
        estimates read per pool, as the run's instances take them (`ResolvedPool.limits`)."""
        return self.batching(self.chip(pool.hardware))

    def batching(self, hw: HardwareSpec | None = None) -> Limits:
        """The batching limits of a pool on `hw`: the scenario's where set, else the stack's defaults on
        that chip (`ResolvedPool.limits`; without `hw`, the first pool's chip's: what the sizing and the
        work bound estimate with)."""
        return self.deployment.batching.on(self.deployment.stack, hw or self._first_chip())

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
        raise ScenarioError(format_validation_error(exc, model=Scenario)) from None
