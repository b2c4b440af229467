"""Admission control: whether an arriving request is accepted, and why not."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from engine.policies.registry import Policy, PolicyKind, RequestView, build, register

OVER_TARGET = "predicted_ttft_over_slo"
"""The reject reason of a request whose predicted TTFT would miss its target (`EarlyReject`)."""
QUEUE_FULL = "queue_full"
"""The reject reason of a request that finds its queue at its cap (`QueueCap`)."""


@dataclass(frozen=True, kw_only=True)
class Admission(Policy):
    """Decides at arrival whether a request is admitted; returns a rejection reason or None."""

    kind: ClassVar[PolicyKind] = "admission"

    def reject(
        self,
        request: RequestView,
        queued_requests: int,
        predicted_ttft_s: float,
        waited_s: float = 0.0,
        own_s: float = 0.0,
    ) -> str | None:
        """A reason to reject the request now, or None to admit it.

        `queued_requests` waits in the pool; `predicted_ttft_s` is the simulator's estimate of
        the rest of this request's TTFT on the instance the router chose (queued prompt tokens
        ahead of it, plus its own prompt, at the instance's prefill rate); `waited_s` is what it
        already spent since it was sent (the round trip, an offload, a MoE model's first-token
        latency), which its TTFT counts too; `own_s` is, where the request would be alone on the
        instance (nothing queued ahead, no decode sharing its iterations), its own prefill, the whole
        prediction then; 0 otherwise.
        """
        raise NotImplementedError


@register
@dataclass(frozen=True, kw_only=True)
class AdmitAll(Admission):
    """Admit everything."""

    name: ClassVar[str] = "none"
    help: ClassVar[str] = "Admit every request; overload shows up as queueing delay."

    def reject(
        self,
        request: RequestView,
        queued_requests: int,
        predicted_ttft_s: float,
        waited_s: float = 0.0,
        own_s: float = 0.0,
    ) -> str | None:
        return None


@register
@dataclass(frozen=True, kw_only=True)
class QueueCap(Admission):
    """Reject when the pool already has `max_queued` requests waiting.

    Classes below the workload's top priority are turned away once the queue reaches
    `low_priority_share` of the cap, so they shed first whatever the queue order.
    """

    name: ClassVar[str] = "queue_cap"
    help: ClassVar[str] = (
        "Reject a request when this many are already waiting in its pool (lower-priority classes at "
        "low_priority_share of it, so they shed first)."
    )
    max_queued: int = 256
    low_priority_share: float = 0.5

    def __post_init__(self) -> None:
        if not 1 <= self.max_queued <= 1_000_000:
            raise ValueError(f"max_queued: {self.max_queued} is outside 1..1000000")
        if not 0.0 < self.low_priority_share <= 1.0:
            raise ValueError(f"low_priority_share: {self.low_priority_share} is outside (0, 1]")

    def reject(
        self,
        request: RequestView,
        queued_requests: int,
        predicted_ttft_s: float,
        waited_s: float = 0.0,
        own_s: float = 0.0,
    ) -> str | None:
        cap = (
            self.max_queued
            if request.priority >= request.top_priority
            else self.max_queued * self.low_priority_share
        )
        if queued_requests >= cap:
            return QUEUE_FULL
        return None


@register
@dataclass(frozen=True, kw_only=True)
class EarlyReject(Admission):
    """Reject at arrival when the predicted TTFT exceeds the class's target by a factor; a request
    of the top priority that would be alone on its instance only when its own prefill cannot make
    the target.

    Mooncake's prediction-based early rejection: work that would miss its SLO anyway is turned
    away before it spends prefill compute. Classes below the workload's top priority use the
    stricter `low_priority_factor`, against the tighter of their own TTFT target and that of any
    class above them (`RequestView.guard_ttft_s`): under a queue order where a low-priority
    request delays the classes above it (first come first served, deadlines, shortest prompt),
    a batch class with a 30 s target is shed while the queue would still let a 1 s interactive
    class through, so lower priorities shed first. Under strict priority the classes above
    overtake it, and each class is judged by its own target.
    """

    name: ClassVar[str] = "early_reject"
    help: ClassVar[str] = (
        "Reject a request whose predicted wait for its first token exceeds factor x what is left of its TTFT "
        "target once the time it spent on its way in is taken off (low_priority_factor for classes below the "
        "top priority, so they shed first); a top-priority request alone on its instance only when its own "
        "prefill cannot make what is left."
    )
    # The simulator's TTFT prediction runs about 8% optimistic at the median and more in the tail
    # (docs/scheduling.md); 0.6 keeps admitted requests' p99 within target in our overload tests.
    factor: float = 0.6
    low_priority_factor: float = 0.3

    def __post_init__(self) -> None:
        for name in ("factor", "low_priority_factor"):
            value = getattr(self, name)
            if not 0.05 <= value <= 100:
                raise ValueError(f"{name}: {value} is outside 0.05..100")

    def reject(
        self,
        request: RequestView,
        queued_requests: int,
        predicted_ttft_s: float,
        waited_s: float = 0.0,
        own_s: float = 0.0,
    ) -> str | None:
        target = request.ttft_deadline_s - request.arrival_s
        if request.priority >= request.top_priority:
            f = self.factor
        else:
            f, target = self.low_priority_factor, min(target, request.guard_ttft_s)
        # the factor allows for the prediction's error, which is the wait ahead of it: it applies to
        # what is left of the target once the time already spent (known exactly) is taken off. A
        # request of the top priority that would be alone on its instance (`own_s` > 0: nothing
        # queued ahead, no decode beside it) is predicted by the cost model that will time its
        # prefill, with no wait to mispredict and no decode to slow: it is held to what is left
        # itself (to the factor of it where the factor is above 1)
        left = target - waited_s
        if own_s > 0.0 and request.priority >= request.top_priority:
            if own_s > (f if f > 1.0 else 1.0) * left:
                return OVER_TARGET
            return None
        if predicted_ttft_s > f * left:
            return OVER_TARGET
        return None


def build_admission(spec: Mapping[str, Any]) -> Admission:
    """An admission policy from its saved form."""
    policy = build("admission", spec)
    assert isinstance(policy, Admission)
    return policy
