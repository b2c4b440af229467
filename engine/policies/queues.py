"""Queue orders: which waiting request an instance serves next."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from engine.policies.registry import Policy, PolicyKind, RequestView, build, register


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


def build_queue(spec: Mapping[str, Any]) -> QueueOrder:
    """A queue order from its saved form."""
    policy = build("queue", spec)
    assert isinstance(policy, QueueOrder)
    return policy
