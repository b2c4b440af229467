"""Scheduling policies: routers, queue orders and admission control, each a registered class.

A policy is a frozen dataclass whose fields are its knobs; the same fields give its saved form
in a scenario (``[scheduler.router] name = "least_loaded"`` plus any knobs) and its widgets in
the app. A policy decides from a read-only view of the system and returns a decision; it never
touches simpy. Registering two policies of the same kind under one name raises.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, NamedTuple, TypeVar

from pydantic import TypeAdapter, ValidationError

from engine.errors import ScenarioError, format_validation_error

PolicyKind = Literal["router", "queue", "admission"]

_REGISTRY: dict[str, dict[str, type[Policy]]] = {"router": {}, "queue": {}, "admission": {}}


@dataclass(frozen=True, kw_only=True)
class Policy:
    """Base of every policy: `kind` and `name` identify it, dataclass fields are its knobs."""

    kind: ClassVar[PolicyKind]
    name: ClassVar[str]
    help: ClassVar[str] = ""

    def knobs(self) -> dict[str, Any]:
        """The knob values, as saved in a scenario."""
        return dataclasses.asdict(self)


P = TypeVar("P", bound=type[Policy])


def register(cls: P) -> P:
    """Class decorator adding a policy to the registry; a duplicate name raises."""
    table = _REGISTRY[cls.kind]
    if cls.name in table:
        raise ValueError(f"a {cls.kind} policy named {cls.name!r} is already registered")
    table[cls.name] = cls
    return cls


def registered(kind: PolicyKind) -> dict[str, type[Policy]]:
    """The registered policies of one kind, by name."""
    return dict(_REGISTRY[kind])


def build(kind: PolicyKind, spec: Mapping[str, Any], where: str = "") -> Policy:
    """A policy instance from its saved form ``{"name": ..., **knobs}``, validated."""
    where = where or f"scheduler.{kind}"
    data = dict(spec)
    name = data.pop("name", None)
    table = _REGISTRY[kind]
    if name not in table:
        raise ScenarioError(f"{where}.name: {name!r} is not a {kind} policy; choose one of {sorted(table)}")
    cls = table[name]
    unknown = sorted(set(data) - {f.name for f in dataclasses.fields(cls)})
    if unknown:
        knobs = [f.name for f in dataclasses.fields(cls)] or ["none"]
        raise ScenarioError(f"{where}.{unknown[0]}: unknown knob of {name!r}; its knobs: {', '.join(knobs)}")
    try:
        return TypeAdapter(cls).validate_python(data, strict=False)  # type: ignore[no-any-return]
    except ValidationError as exc:
        raise ScenarioError(format_validation_error(exc, prefix=where)) from None


# --- read-only views ----------------------------------------------------------------------


class InstanceView(NamedTuple):
    """What a router may know of one instance when it places a request."""

    position: int
    waiting_requests: int
    waiting_tokens: int
    running_requests: int
    kv_free_tokens: int
    cached_prefix_tokens: int = 0
    up: bool = True


class RequestView(NamedTuple):
    """What a policy may know of one request."""

    rid: int
    cls: int
    priority: int
    arrival_s: float
    prompt_tokens: int
    output_tokens: int
    ttft_deadline_s: float


# --- routers ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Router(Policy):
    """Chooses the instance of a pool that receives a request."""

    kind: ClassVar[PolicyKind] = "router"

    def choose(self, request: RequestView, instances: Sequence[InstanceView], tick: int) -> int:
        """Position (into `instances`) of the instance to use; `tick` counts routed requests."""
        raise NotImplementedError


def _up(instances: Sequence[InstanceView]) -> list[InstanceView]:
    return [v for v in instances if v.up] or list(instances)


@register
@dataclass(frozen=True, kw_only=True)
class RoundRobin(Router):
    """Each request to the next instance in turn."""

    name: ClassVar[str] = "round_robin"
    help: ClassVar[str] = "Each request goes to the next instance in turn, ignoring load."

    def choose(self, request: RequestView, instances: Sequence[InstanceView], tick: int) -> int:
        live = _up(instances)
        return live[tick % len(live)].position


@register
@dataclass(frozen=True, kw_only=True)
class LeastLoaded(Router):
    """The instance with the least outstanding work (waiting prompt tokens, then running)."""

    name: ClassVar[str] = "least_loaded"
    help: ClassVar[str] = "The instance with the fewest queued prompt tokens, then fewest running requests."

    def choose(self, request: RequestView, instances: Sequence[InstanceView], tick: int) -> int:
        live = _up(instances)
        return min(live, key=lambda v: (v.waiting_tokens, v.running_requests, v.position)).position


# --- queue orders -------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class QueueOrder(Policy):
    """Orders an instance's waiting requests: the smallest key is served first."""

    kind: ClassVar[PolicyKind] = "queue"

    def key(self, request: RequestView) -> tuple[float, ...]:
        """Sort key of a waiting request."""
        raise NotImplementedError


@register
@dataclass(frozen=True, kw_only=True)
class Fcfs(QueueOrder):
    """First come, first served."""

    name: ClassVar[str] = "fcfs"
    help: ClassVar[str] = "First come, first served."

    def key(self, request: RequestView) -> tuple[float, ...]:
        return (request.arrival_s, request.rid)


@register
@dataclass(frozen=True, kw_only=True)
class StrictPriority(QueueOrder):
    """Higher priority first, then first come first served."""

    name: ClassVar[str] = "priority"
    help: ClassVar[str] = "Strictly by class priority (higher first), FCFS within a priority."

    def key(self, request: RequestView) -> tuple[float, ...]:
        return (-request.priority, request.arrival_s, request.rid)


# --- admission ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Admission(Policy):
    """Decides at arrival whether a request is admitted; returns a rejection reason or None."""

    kind: ClassVar[PolicyKind] = "admission"

    def reject(self, request: RequestView, queued_requests: int, predicted_ttft_s: float) -> str | None:
        """A reason to reject the request now, or None to admit it."""
        raise NotImplementedError


@register
@dataclass(frozen=True, kw_only=True)
class AdmitAll(Admission):
    """Admit everything."""

    name: ClassVar[str] = "none"
    help: ClassVar[str] = "Admit every request; overload shows up as queueing delay."

    def reject(self, request: RequestView, queued_requests: int, predicted_ttft_s: float) -> str | None:
        return None


@register
@dataclass(frozen=True, kw_only=True)
class QueueCap(Admission):
    """Reject when the pool already has `max_queued` requests waiting."""

    name: ClassVar[str] = "queue_cap"
    help: ClassVar[str] = "Reject a request when this many are already waiting in its pool."
    max_queued: int = 256

    def __post_init__(self) -> None:
        if not 1 <= self.max_queued <= 1_000_000:
            raise ValueError(f"max_queued: {self.max_queued} is outside 1..1000000")

    def reject(self, request: RequestView, queued_requests: int, predicted_ttft_s: float) -> str | None:
        if queued_requests >= self.max_queued:
            return "queue_full"
        return None


def build_router(spec: Mapping[str, Any]) -> Router:
    """A router from its saved form."""
    policy = build("router", spec)
    assert isinstance(policy, Router)
    return policy


def build_queue(spec: Mapping[str, Any]) -> QueueOrder:
    """A queue order from its saved form."""
    policy = build("queue", spec)
    assert isinstance(policy, QueueOrder)
    return policy


def build_admission(spec: Mapping[str, Any]) -> Admission:
    """An admission policy from its saved form."""
    policy = build("admission", spec)
    assert isinstance(policy, Admission)
    return policy


def default_spec(kind: PolicyKind) -> dict[str, Any]:
    """The saved form of the default policy of a kind."""
    return {"router": {"name": "least_loaded"}, "queue": {"name": "fcfs"}, "admission": {"name": "none"}}[
        kind
    ]


def knob_fields(cls: type[Policy]) -> list[dataclasses.Field[Any]]:
    """The knob fields of a policy class (for widgets)."""
    return list(dataclasses.fields(cls))
