"""A policy's saved form in a scenario: its registered name plus its knobs."""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from engine.catalog.specs import Frozen


class PolicySpec(Frozen):
    """A policy's saved form: its registered `name` plus its knobs as extra keys."""

    model_config = ConfigDict(frozen=True, extra="allow")
    name: Annotated[str, Field(min_length=1, max_length=64)]

    def __hash__(self) -> int:
        return hash(self.model_dump_json())

    def as_dict(self) -> dict[str, Any]:
        """Name and knobs as one mapping."""
        return self.model_dump(mode="json")
