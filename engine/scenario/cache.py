"""A scenario's prefix cache: KV blocks reused across requests, in HBM, host memory and a pooled tier.

Part of `engine.scenario.model.Scenario`; `engine.serving.cache` holds the tiers in a run.
"""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
from typing import Annotated

from pydantic import Field, model_validator

from engine.catalog.specs import MIN_LINK_GB_S, Frozen


class CacheTier(Frozen):
    """One tier of the prefix cache: capacity per instance (or pooled) and its read bandwidth."""

    enabled: bool = False
    capacity_gb: Annotated[float, Field(ge=0, le=1_000_000)] = 0.0
    bandwidth_gb_s: Annotated[float, Field(ge=MIN_LINK_GB_S, le=100_000)] = 50.0

    @model_validator(mode="after")
    def _holds_something(self) -> "CacheTier":
        # an enabled tier of 0 GB holds nothing: accepted, it cached nothing unsaid (a review)
        if self.enabled and self.capacity_gb <= 0:
            raise ValueError("capacity_gb: an enabled tier needs a capacity above 0 GB (up to 1,000,000)")
        return self


class Cache(Frozen):
    """Prefix/KV-cache reuse over hashed token blocks, in up to three tiers."""

    enabled: bool = False
    block_tokens: Annotated[int, Field(ge=1, le=65536)] = 512
    hbm: bool = True
    host: CacheTier = CacheTier(capacity_gb=0.0, bandwidth_gb_s=50.0)
    pooled: CacheTier = CacheTier(capacity_gb=0.0, bandwidth_gb_s=25.0)
    usd_per_gb_hour: Annotated[float, Field(ge=0, le=100)] = 0.0005
