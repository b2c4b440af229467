"""Autoscalers: how many instances a pool should have, decided from a read-only view of its load.

Every evaluation interval the simulation shows each autoscaled pool's `PoolLoad` to its autoscaler,
which answers with the number of instances it wants. The simulation clamps the answer to the
pool's minimum and maximum, holds it through the scale-up and scale-down cooldowns, and turns it
into events (cold starts, drains); the autoscaler never sees simpy.

Three are built in, after the modes of NVIDIA Dynamo's planner (docs/autoscaling.md):

- ``utilisation``: keep the busy fraction of the serving instances near a target (a Kubernetes
  HPA on a utilisation metric: desired = ceil(serving x busy / target)).
- ``queue``: add an instance while the queue per serving instance is above a threshold; remove
  one while it is below another and the instances are not busy (Dynamo's default "throughput"
  mode scales on queue depth and KV use with static thresholds).
- ``slo``: predict the demand one cold start ahead (the last interval's rate, extrapolated by its
  trend) and divide by what one instance serves while meeting the TTFT and TPOT targets, as the
  cost model gives it (Dynamo's "sla" mode: replicas = predicted load / per-replica throughput at
  the SLA, prefill and decode apart).
"""

# No `from __future__ import annotations` here: typing turns each string annotation of a NamedTuple into
# a ForwardRef, compiling it at import (docs/performance.md, "The cold start").
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

from pydantic import Field

from engine.policies.registry import Policy, PolicyKind, build, register


class PoolLoad(NamedTuple):
    """What an autoscaler may know of its pool at an evaluation."""

    role: str
    serving: int
    """Instances taking work now."""
    starting: int
    """Instances requested and still starting (start-up, weight loading, warm-up)."""
    draining: int
    """Instances finishing what they hold before they stop."""
    busy: float
    """Mean fraction of the last interval the serving instances spent running iterations."""
    queued_requests: int
    """Requests waiting for the pool: prompts queued (prefill, mixed), hand-offs parked for decode memory."""
    kv_used: float
    """KV tokens reserved over KV capacity, over the serving instances."""
    demand_rps: float
    """Requests per second that reached the pool over the last interval."""
    previous_demand_rps: float
    """The same over the interval before it."""
    capacity_rps: float
    """Requests per second one instance serves within the TTFT and TPOT targets (the cost model's)."""
    lookahead_s: float
    """Seconds until an instance requested now would serve (its cold start) plus one interval."""
    interval_s: float


@dataclass(frozen=True, kw_only=True)
class Autoscaler(Policy):
    """Decides how many instances a pool wants (before the pool's bounds and cooldowns)."""

    kind: ClassVar[PolicyKind] = "autoscaler"

    def desired(self, load: PoolLoad) -> int:
        """The number of instances the pool should have."""
        raise NotImplementedError


@register
@dataclass(frozen=True, kw_only=True)
class TargetUtilisation(Autoscaler):
    """Keep the serving instances' busy fraction near `target`."""

    name: ClassVar[str] = "utilisation"
    help: ClassVar[str] = "Keep the busy fraction of serving instances near a target (like an HPA)."
    target: Annotated[float, Field(ge=0.05, le=1.0)] = field(
        default=0.7, metadata={"help": "The busy fraction to keep the serving instances at."}
    )

    def __post_init__(self) -> None:
        if not 0.05 <= self.target <= 1.0:
            raise ValueError(f"target: {self.target} must be from 0.05 to 1")

    def desired(self, load: PoolLoad) -> int:
        return math.ceil(load.serving * load.busy / self.target - 1e-9)


@register
@dataclass(frozen=True, kw_only=True)
class QueueDepth(Autoscaler):
    """One more instance while the queue per serving instance is over `up_above`; one fewer while
    it is at most `down_below` and the instances are busy less than `busy_below` of the time."""

    name: ClassVar[str] = "queue"
    help: ClassVar[str] = (
        "Scale on queued requests per instance, with static thresholds (Dynamo's default mode)."
    )
    up_above: Annotated[float, Field(gt=0, le=100_000)] = field(
        default=4.0,
        metadata={"help": "Queued requests per serving instance above which one more instance is asked for."},
    )
    down_below: Annotated[float, Field(ge=0, le=100_000)] = field(
        default=0.5,
        metadata={
            "help": "Queued requests per serving instance at or below which one fewer will do "
            "(below the scale-up threshold)."
        },
    )
    busy_below: Annotated[float, Field(gt=0, le=1.0)] = field(
        default=0.5,
        metadata={
            "help": "A scale-down also needs the serving instances busy less than this fraction of the time."
        },
    )

    def __post_init__(self) -> None:
        if not 0.0 <= self.down_below < self.up_above <= 100_000:
            raise ValueError(
                f"down_below: {self.down_below} must be from 0 to below up_above ({self.up_above})"
            )
        if not 0.0 < self.busy_below <= 1.0:
            raise ValueError(f"busy_below: {self.busy_below} must be above 0 and at most 1")

    def desired(self, load: PoolLoad) -> int:
        have = load.serving + load.starting
        per = load.queued_requests / max(load.serving, 1)
        if per > self.up_above:
            return have + 1
        if per <= self.down_below and load.busy < self.busy_below and load.starting == 0:
            return have - 1
        return have


@register
@dataclass(frozen=True, kw_only=True)
class SloDriven(Autoscaler):
    """Instances = predicted demand / what one instance serves within the SLO, with `headroom`."""

    name: ClassVar[str] = "slo"
    help: ClassVar[str] = (
        "Predict the demand a cold start ahead and size for what one instance serves within the TTFT "
        "and TPOT targets (Dynamo's SLA planner)."
    )
    headroom: Annotated[float, Field(ge=0.1, le=1.0)] = field(
        default=0.8,
        metadata={
            "help": "The share of an instance's capacity within the SLO to plan for (queueing grows sharply near 1)."
        },
    )
    predict: Literal["constant", "trend"] = field(
        default="constant",
        metadata={
            "help": "constant: the last interval's demand; trend: extrapolated along its change over one lookahead "
            "(a cold start plus an interval)."
        },
    )

    def __post_init__(self) -> None:
        if not 0.1 <= self.headroom <= 1.0:
            raise ValueError(f"headroom: {self.headroom} must be from 0.1 to 1")

    def predicted_rps(self, load: PoolLoad) -> float:
        """The demand expected one lookahead from now (never below zero, never below half the last)."""
        if self.predict == "constant" or load.interval_s <= 0:
            return load.demand_rps
        slope = (load.demand_rps - load.previous_demand_rps) / load.interval_s
        return max(load.demand_rps + slope * load.lookahead_s, 0.5 * load.demand_rps, 0.0)

    def desired(self, load: PoolLoad) -> int:
        if load.capacity_rps <= 0:
            return load.serving + load.starting
        return math.ceil(self.predicted_rps(load) / (load.capacity_rps * self.headroom) - 1e-9)


def build_autoscaler(spec: Mapping[str, Any], where: str = "") -> Autoscaler:
    """An autoscaler from its saved form."""
    policy = build("autoscaler", spec, where=where)
    assert isinstance(policy, Autoscaler)
    return policy
