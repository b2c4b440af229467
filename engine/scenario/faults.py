"""A scenario's faults: instances of a pool lost, or a prefill pool's KV link degraded or down.

Part of `engine.scenario.model.Scenario`, which checks that each names a pool of its deployment;
`engine.serving.disruptions` injects them in a run.
"""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
import json
from typing import Annotated, Literal

from pydantic import Field, model_validator

from engine.catalog.specs import Frozen
from engine.core import bounds
from engine.scenario.fields import Name


class Fault(Frozen):
    """At `at_s`, `instances` instances of `pool` are lost for `duration_s` (None: for good).

    With `kind = "link"`, the pool's KV link (a prefill pool's, disaggregated) runs at
    `link_factor` of its bandwidth for `duration_s` instead: a degraded or congested network.
    Transfers started meanwhile take that much longer; transfers under way finish as scheduled.
    `link_factor = 0` takes the link down: hand-offs from the pool wait for it to come back
    (`link_down = "queue"`, parked as for decode memory) or fail with reason `link_down`
    ("reject"); a link down for good fails them either way.
    """

    at_s: Annotated[float, Field(ge=0, le=bounds.MAX_DURATION_S)]
    pool: Name
    instances: Annotated[int, Field(ge=1, le=bounds.MAX_INSTANCES)] = 1
    duration_s: Annotated[float, Field(ge=0.001, le=bounds.MAX_DURATION_S)] | None = None
    in_flight: Literal["retry", "fail"] = "retry"
    kind: Literal["instances", "link"] = "instances"
    link_factor: Annotated[float, Field(ge=0, le=1)] = 0.1
    link_down: Literal["queue", "reject"] = "queue"

    @model_validator(mode="after")
    def _link_fields_on_a_link(self) -> "Fault":
        # an instance fault ignores a link's fields: one written without `kind = "link"` ran as an
        # instance outage, 44 points of attainment rosier than the drill meant (a review). Refused where
        # they differ from their defaults (a form keeps every field of the item whatever its kind, and
        # an instance fault's `instances` on a link fault is harmless: it says nothing of the link)
        if self.kind == "instances" and (
            given := [f for f in LINK_FIELDS if getattr(self, f) != type(self).model_fields[f].default]
        ):
            raise ValueError(
                f"{', '.join(given)}: {'applies' if len(given) == 1 else 'apply'} only to a fault with "
                f'kind = "link", and this fault\'s kind is "instances" (set kind = "link", or '
                f"{'its default' if len(given) == 1 else 'their defaults'}: "
                f"{', '.join(f'{f} = {json.dumps(type(self).model_fields[f].default)}' for f in given)})"
            )
        return self

    @model_validator(mode="after")
    def _physical_link(self) -> "Fault":
        # a link at a millionth of its bandwidth is no physical state: down (0) or from 0.1% of it
        if 0.0 < self.link_factor < MIN_LINK_FACTOR:
            raise ValueError(
                f"link_factor: 0 (the link down) or from {MIN_LINK_FACTOR:g} to 1 (got {self.link_factor:g})"
            )
        return self


LINK_FIELDS = ("link_factor", "link_down")
"""A link fault's own fields (`kind = "link"`)."""
MIN_LINK_FACTOR = 0.001
"""The smallest share of a KV link's bandwidth a link fault may leave, short of taking it down (0)."""
