"""The cost of one engine iteration: the roofline and its step model.

Owns: `perf` (Instance: the deployment unit, its memory and rates; the roofline constants),
`scale_out` (groups of chips wider than one machine: when their collectives cross the network, and
the latency they wait),
`iteration` (FLOPs, bytes and time of prefill and decode iterations over arrays, KV transfer),
`step` (the simulator's scalar fast path of the same, decode runs in closed form), `roofline`
(tables of one instance's phases), `power` (a chip's power from what it does), `power_cap` (a
chip's clock under a power limit), `stacks` (serving stacks' scheduler defaults), `maturity` (a
stack's software maturity: its factors and porting effort), `ownership` (the bill of owned chips).
Calibration, which fits these
to measurements, is `engine.calibration`.
May import: engine.core, engine.catalog.

The face: `__all__` names what the packages above and the dashboard import, each loaded from its
module on first use (docs/architecture.md, Public API).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.core.native import extend as _extend
from engine.faces import lazy as _lazy

_extend(__name__, __path__)  # the compiled build's modules first, where it is current (engine.core.native)

_API = {
    "decode_cost": "engine.costmodel.iteration",
    "iteration_cost": "engine.costmodel.iteration",
    "prefill_cost": "engine.costmodel.iteration",
    "LEVELS": "engine.costmodel.maturity",
    "MATURITIES": "engine.costmodel.maturity",
    "CostBasis": "engine.costmodel.ownership",
    "Instance": "engine.costmodel.perf",
    "Speculation": "engine.costmodel.perf",
    "UNHIDDEN_FRACTION": "engine.costmodel.perf",
    "SERVING_STACKS": "engine.costmodel.stacks",
    "STACK_NAMES": "engine.costmodel.stacks",
    "kv_default": "engine.costmodel.stacks",
}
_RENAMED: dict[str, str] = {}

__all__ = [
    "LEVELS",
    "MATURITIES",
    "SERVING_STACKS",
    "STACK_NAMES",
    "UNHIDDEN_FRACTION",
    "CostBasis",
    "Instance",
    "Speculation",
    "decode_cost",
    "iteration_cost",
    "kv_default",
    "prefill_cost",
]


__getattr__, __dir__ = _lazy(__name__, _API, _RENAMED, __all__, globals())


if TYPE_CHECKING:
    from engine.costmodel.iteration import decode_cost, iteration_cost, prefill_cost
    from engine.costmodel.maturity import LEVELS, MATURITIES
    from engine.costmodel.ownership import CostBasis
    from engine.costmodel.perf import UNHIDDEN_FRACTION, Instance, Speculation
    from engine.costmodel.stacks import SERVING_STACKS, STACK_NAMES, kv_default
