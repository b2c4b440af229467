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
    top_priority: int = 0  # the highest class priority in the workload


# --- routers ------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Router(Policy):
    """Chooses the instance of a pool that receives a request."""

    kind: ClassVar[PolicyKind] = "router"
    needs_prefix: ClassVar[bool] = False

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


def _load(v: InstanceView) -> tuple[int, int, int]:
    return (v.waiting_tokens, v.running_requests, v.position)


@register
@dataclass(frozen=True, kw_only=True)
class LeastLoaded(Router):
    """Least outstanding work: the fewest waiting prompt tokens, then the fewest running."""

    name: ClassVar[str] = "least_loaded"
    help: ClassVar[str] = (
        "Least outstanding work: the instance with the fewest queued prompt tokens, then the fewest running requests."
    )

    def choose(self, request: RequestView, instances: Sequence[InstanceView], tick: int) -> int:
        return min(_up(instances), key=_load).position


def _pick(seed: int, n: int) -> int:
    """A deterministic pseudo-random index in [0, n) from an integer seed."""
    x = (seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 29
    x = (x * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 32
    return int(x % n)


@register
@dataclass(frozen=True, kw_only=True)
class PowerOfTwo(Router):
    """Two instances drawn at random; the less loaded one wins (Mitzenmacher)."""

    name: ClassVar[str] = "power_of_two"
    help: ClassVar[str] = "Draw two instances at random and send the request to the less loaded one."

    def choose(self, request: RequestView, instances: Sequence[InstanceView], tick: int) -> int:
        live = _up(instances)
        if len(live) == 1:
            return live[0].position
        a = _pick(2 * tick + 1 + 7919 * request.rid, len(live))
        b = _pick(2 * tick + 2 + 7919 * request.rid, len(live) - 1)
        b = b + 1 if b >= a else b
        return min(live[a], live[b], key=_load).position


@register
@dataclass(frozen=True, kw_only=True)
class CacheAware(Router):
    """Mooncake's conductor in miniature: weigh the expected prefix hit against the load.

    The cost of an instance is the prompt tokens it would have to compute before this request
    finishes prefill: its queued tokens plus this prompt, minus `hit_weight` times the tokens
    of this prompt it already caches.
    """

    name: ClassVar[str] = "cache_aware"
    help: ClassVar[str] = (
        "Send the request where queued work plus its uncached prompt is smallest (prefix hits count for "
        "hit_weight tokens each)."
    )
    needs_prefix: ClassVar[bool] = True
    hit_weight: float = 1.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.hit_weight <= 10.0:
            raise ValueError(f"hit_weight: {self.hit_weight} is outside 0..10")

    def choose(self, request: RequestView, instances: Sequence[InstanceView], tick: int) -> int:
        prompt, w = request.prompt_tokens, self.hit_weight
        # (cost, running requests, position): ties go to the less busy, then the earlier instance
        return min(
            (v.waiting_tokens + prompt - w * v.cached_prefix_tokens, v.running_requests, v.position)
            for v in _up(instances)
        )[2]


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


@register
@dataclass(frozen=True, kw_only=True)
class EarliestDeadline(QueueOrder):
    """Earliest TTFT deadline first (arrival plus the class's TTFT target)."""

    name: ClassVar[str] = "edf"
    help: ClassVar[str] = "Earliest TTFT deadline first: arrival time plus the class's TTFT target."

    def key(self, request: RequestView) -> tuple[float, ...]:
        return (request.ttft_deadline_s, request.rid)


@register
@dataclass(frozen=True, kw_only=True)
class ShortestPrompt(QueueOrder):
    """Shortest prompt first (minimises mean TTFT; long prompts can starve)."""

    name: ClassVar[str] = "spf"
    help: ClassVar[str] = "Shortest prompt first: lowest mean TTFT, but long prompts may wait a long time."

    def key(self, request: RequestView) -> tuple[float, ...]:
        return (float(request.prompt_tokens), request.arrival_s, request.rid)


# --- admission ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Admission(Policy):
    """Decides at arrival whether a request is admitted; returns a rejection reason or None."""

    kind: ClassVar[PolicyKind] = "admission"

    def reject(self, request: RequestView, queued_requests: int, predicted_ttft_s: float) -> str | None:
        """A reason to reject the request now, or None to admit it.

        `queued_requests` waits in the pool; `predicted_ttft_s` is the simulator's estimate of
        this request's TTFT on the instance the router chose (queued prompt tokens ahead of it,
        plus its own prompt, at the instance's prefill rate).
        """
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


@register
@dataclass(frozen=True, kw_only=True)
class EarlyReject(Admission):
    """Reject at arrival when the predicted TTFT exceeds the class's target by a factor.

    Mooncake's prediction-based early rejection: work that would miss its SLO anyway is turned
    away before it spends prefill compute. Classes below the workload's top priority use the
    stricter `low_priority_factor`, so they shed first.
    """

    name: ClassVar[str] = "early_reject"
    help: ClassVar[str] = (
        "Reject a request whose predicted TTFT exceeds factor x its TTFT target (low_priority_factor for "
        "classes below the top priority, so they shed first)."
    )
    # The simulator's TTFT prediction runs about 10% optimistic at the median and more in the tail
    # (docs/scheduling.md); 0.6 keeps admitted requests' p99 within target in our overload tests.
    factor: float = 0.6
    low_priority_factor: float = 0.3

    def __post_init__(self) -> None:
        for name in ("factor", "low_priority_factor"):
            value = getattr(self, name)
            if not 0.05 <= value <= 100:
                raise ValueError(f"{name}: {value} is outside 0.05..100")

    def reject(self, request: RequestView, queued_requests: int, predicted_ttft_s: float) -> str | None:
        target = request.ttft_deadline_s - request.arrival_s
        f = self.factor if request.priority >= request.top_priority else self.low_priority_factor
        if predicted_ttft_s > f * target:
            return "predicted_ttft_over_slo"
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


def knob_fields(cls: type[Policy]) -> list[dataclasses.Field[Any]]:
    """The knob fields of a policy class (for widgets)."""
    return list(dataclasses.fields(cls))
