"""Serve less rather than fail: what a deployment sheds and cuts while its entry capacity is short."""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
from typing import Annotated

from pydantic import Field, model_validator

from engine.catalog.specs import Frozen
from engine.core import bounds


class Degrade(Frozen):
    """Serve less rather than fail: shed low priorities and cap outputs while entry capacity is short.

    The deployment is degraded, at a request's arrival, while a trigger holds: the live share of the
    entry pools' prefill capacity (peak FLOP/s of their instances that are up in their own role;
    decode instances fallen back to colocated do not count) is below `below_capacity` (0: never),
    or the requests waiting per live entry instance (prompts queued, and prefilled prompts waiting for
    decode memory) exceed `above_backlog` (unset: never).
    Meanwhile a class with priority below `shed_below_priority` is rejected (reason `degraded`;
    0: none), and an admitted request's output is cut to `max_output_tokens` (0: no cap; a real
    server lowers the request's max_tokens). Works with either fallback (docs/scheduling.md).
    """

    enabled: bool = False
    below_capacity: Annotated[float, Field(ge=0, le=1)] = 0.6
    above_backlog: Annotated[float, Field(gt=0, le=100_000)] | None = None
    max_output_tokens: Annotated[int, Field(ge=0, le=bounds.MAX_TOKENS_PER_REQUEST)] = 128
    shed_below_priority: Annotated[int, Field(ge=0, le=100)] = 0

    @model_validator(mode="after")
    def _check(self) -> "Degrade":
        if self.enabled and not self.below_capacity and self.above_backlog is None:
            raise ValueError(
                "below_capacity: 0 turns it off; set it (up to 1) or above_backlog (> 0): degrading needs a trigger"
            )
        if self.enabled and not self.max_output_tokens and not self.shed_below_priority:
            raise ValueError(
                "max_output_tokens: 0 turns it off; set it (1 or more) or shed_below_priority (1 to 100): "
                "degrading needs an action"
            )
        return self
