"""A policy's saved form in a scenario: its registered name plus its knobs."""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
import math
from typing import Annotated, Any

from pydantic import ConfigDict, Field, model_validator

from engine.catalog.specs import Frozen


class PolicySpec(Frozen):
    """A policy's saved form: its registered `name` plus its knobs as extra keys."""

    model_config = ConfigDict(frozen=True, extra="allow")
    name: Annotated[str, Field(min_length=1, max_length=64)]

    @model_validator(mode="before")
    @classmethod
    def _a_bare_name(cls, data: Any) -> Any:
        """A policy given by its name alone (`--set scheduler.queue=priority`) is that policy with its
        defaults: the field's message read "valid dictionary or instance of PolicySpec" (a review). A
        knob that is not a finite number is refused by name: its JSON form (None) read "(got None)"."""
        if isinstance(data, str):
            return {"name": data}
        if isinstance(data, dict):
            for k, v in data.items():
                if isinstance(v, float) and not math.isfinite(v):
                    raise ValueError(f"{k}: must be a finite number (got {v})")
        return data

    def __hash__(self) -> int:
        return hash(self.model_dump_json())

    def as_dict(self) -> dict[str, Any]:
        """Name and knobs as one mapping."""
        return self.model_dump(mode="json")
