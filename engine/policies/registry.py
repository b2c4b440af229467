"""The policy registry and the read-only views policies decide from.

A policy is a frozen dataclass whose fields are its knobs; the same fields give its saved form
in a scenario (``[scheduler.router] name = "least_loaded"`` plus any knobs) and its widgets in
the app. A policy decides from a read-only view of the system and returns a decision; it never
touches simpy. Registering two policies of the same kind under one name raises.
"""

# No `from __future__ import annotations` here: typing turns each string annotation of a NamedTuple into
# a ForwardRef, compiling it at import (docs/performance.md, "The cold start").
import dataclasses
import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, NamedTuple, TypeVar

from pydantic import TypeAdapter, ValidationError

from engine.core.errors import ScenarioError, format_validation_error
from engine.core.no_bool import boolean_in, field_keys

PolicyKind = Literal["router", "queue", "admission", "iteration", "autoscaler"]

_REGISTRY: dict[str, dict[str, type["Policy"]]] = {
    "router": {},
    "queue": {},
    "admission": {},
    "iteration": {},
    "autoscaler": {},
}
_ADAPTERS: dict[type["Policy"], TypeAdapter[Any]] = {}
"""Each registered class's knobs validator, built on first use (`_adapter`)."""


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


def left_knobs(kind: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """The knobs `spec` leaves out, at its policy's defaults (`fengong scenario` prints them: a file
    read there said `{name = "slo"}` where the autoscaler runs with headroom 0.8, a review); none for
    an unknown name (`build` refuses it)."""
    cls = _REGISTRY[kind].get(str(spec.get("name"))) if kind in _REGISTRY else None
    fields = dataclasses.fields(cls) if cls is not None else ()
    return {f.name: f.default for f in fields if f.name not in spec and f.default is not dataclasses.MISSING}


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
    keys = field_keys(cls, lambda: typing.get_type_hints(cls, include_extras=True))
    if (said := boolean_in(keys, data)) is not None:  # lax mode reads true as 1
        raise ScenarioError(f"{where}.{said}")
    try:
        return _adapter(cls).validate_python(data, strict=False)  # type: ignore[no-any-return]
    except ValidationError as exc:
        raise ScenarioError(format_validation_error(exc, prefix=where, model=cls)) from None


def _adapter(cls: type[Policy]) -> TypeAdapter[Any]:
    """The validator of one policy class's knobs, built on its first use and kept with the registry:
    building one costs a millisecond or two, and every scenario validated and every simulation
    builds its four policies (a plan runs dozens)."""
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


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
    role: str = "mixed"
    speed: float = 1.0
    """Its throughput in its role (prompt tokens/s on prefill and mixed, decode tokens/s on decode)
    over the fastest instance's in the deployment: 1.0 when every chip is the same."""
    tokens_per_s: float = 0.0
    """That throughput in tokens per second (0: unknown)."""
    usd_per_million_tokens: float = 0.0
    """Its price per hour spread over that throughput, per million tokens (0: unknown)."""
    kv_capacity_tokens: int = 0
    step_s: float = 0.0
    """Seconds of its next decode step with this request added (routers with `needs_timing` only)."""


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
    guard_ttft_s: float = math.inf  # the tightest TTFT target of the classes above this one
    tpot_target_s: float = math.inf  # its class's TPOT target
    now_s: float = -1.0
    """When it is being placed, for a router with `needs_timing` (-1 elsewhere): a request retried
    after a fault, or delayed on its way in, has spent part of its TTFT target already."""


def knob_fields(cls: type[Policy]) -> list[dataclasses.Field[Any]]:
    """The knob fields of a policy class (for widgets)."""
    return list(dataclasses.fields(cls))
