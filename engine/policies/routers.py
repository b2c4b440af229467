"""Routers: which instance of a pool receives a request."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from engine.policies.registry import InstanceView, Policy, PolicyKind, RequestView, build, register


@dataclass(frozen=True, kw_only=True)
class Router(Policy):
    """Chooses the instance of a pool that receives a request."""

    kind: ClassVar[PolicyKind] = "router"
    needs_prefix: ClassVar[bool] = False
    needs_timing: ClassVar[bool] = False  # views carry each instance's next decode step (`step_s`)
    ranked: ClassVar[bool] = False
    """True when `choose` picks the live instance of least `rank(view)`, the earlier one on a tie, from
    the views alone: the simulation may then keep each instance's rank until its view changes and
    choose from those (the views carry neither the request nor the tick)."""

    def choose(self, request: RequestView, instances: Sequence[InstanceView], tick: int) -> int:
        """Position (into `instances`) of the instance to use; `tick` counts routed requests."""
        raise NotImplementedError

    def rank(self, view: InstanceView) -> tuple[Any, ...]:
        """The order a `ranked` router picks by: the least wins."""
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


def _load(v: InstanceView) -> tuple[float, float, int]:
    # work in hand over the instance's speed: identical chips compare as plain counts
    return (v.waiting_tokens / v.speed, v.running_requests / v.speed, v.position)


@register
@dataclass(frozen=True, kw_only=True)
class LeastLoaded(Router):
    """Least outstanding work: the fewest waiting prompt tokens, then the fewest running.

    Both are weighed by each instance's speed, so that over several kinds of chips a faster one
    takes proportionally more (over identical chips, plain counts).
    """

    name: ClassVar[str] = "least_loaded"
    ranked: ClassVar[bool] = True
    help: ClassVar[str] = (
        "Least outstanding work: the instance with the fewest queued prompt tokens, then the fewest running "
        "requests, each over the instance's speed (a chip twice as fast counts half its queue)."
    )

    def choose(self, request: RequestView, instances: Sequence[InstanceView], tick: int) -> int:
        return min(_up(instances), key=_load).position

    def rank(self, view: InstanceView) -> tuple[float, float, int]:
        """Queued prompt tokens, then running requests, each over the speed; then the position."""
        # `_load`, inlined: the fleet ranks every instance whose kept view it rebuilds (one call fewer)
        return (view.waiting_tokens / view.speed, view.running_requests / view.speed, view.position)


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
            (
                (v.waiting_tokens + prompt - w * v.cached_prefix_tokens) / v.speed,
                v.running_requests / v.speed,
                v.position,
            )
            for v in _up(instances)
        )[2]


@register
@dataclass(frozen=True, kw_only=True)
class CostAware(Router):
    """The cheapest instance per token that still keeps the request on time, else the least loaded.

    An entry instance keeps a request on time when its queued prompt tokens plus this prompt,
    at its prompt rate, take no more than `ttft_share` of what is left of the request's TTFT target
    when it is placed (all of it at its arrival; less for a retry or a request delayed on its way
    in, `RequestView.now_s`); a decode instance when its next decode step, with this request added,
    takes no more than `tpot_share` of the request's TPOT target. Among those, the lowest price per million tokens
    wins (the instance's price per hour over its throughput), then the least loaded. Over a
    portfolio this fills the cheap chips first and spills to the dear ones under load.
    """

    name: ClassVar[str] = "cost_aware"
    help: ClassVar[str] = (
        "Fill the cheapest chips per token first: the cheapest instance whose queue keeps the request within "
        "ttft_share of what is left of its TTFT target (decode: whose next step stays within tpot_share of its "
        "TPOT target), else the least loaded."
    )
    needs_timing: ClassVar[bool] = True
    ttft_share: float = 0.5
    tpot_share: float = 0.8

    def __post_init__(self) -> None:
        for knob in ("ttft_share", "tpot_share"):
            value = getattr(self, knob)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"{knob}: {value} is outside (0, 1]")

    def _on_time(self, request: RequestView, v: InstanceView) -> bool:
        if v.role == "decode":
            return v.step_s <= self.tpot_share * request.tpot_target_s
        if v.tokens_per_s <= 0:
            return True
        start = request.now_s if request.now_s > request.arrival_s else request.arrival_s
        budget = self.ttft_share * (request.ttft_deadline_s - start)
        return (v.waiting_tokens + request.prompt_tokens) / v.tokens_per_s <= budget

    def choose(self, request: RequestView, instances: Sequence[InstanceView], tick: int) -> int:
        live = _up(instances)
        fit = [v for v in live if self._on_time(request, v)]
        if not fit:
            return min(live, key=_load).position
        return min(fit, key=lambda v: (v.usd_per_million_tokens, *_load(v))).position


def build_router(spec: Mapping[str, Any]) -> Router:
    """A router from its saved form."""
    policy = build("router", spec)
    assert isinstance(policy, Router)
    return policy
