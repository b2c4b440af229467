"""The serving simulation: from a scenario to what happened to every request.

Owns the request side: `workload` (request generation), `traces` (a package of trace readers, one
module a format: Mooncake, Azure, CSV, agentic sessions; `text` holds the text walking they share).
The serving core, by its actors (docs/architecture.md): `sim` (wires them, owns the clock and a
request's milestones), `ledger` (every request's state; a request ends exactly once), `fleet`
(live instances by role, routing), `kv` with `handoffs` and `link` (KV reservations, the prefix
cache, hand-offs over the link, swaps), `front_door` with `edge` (arrivals, closed loops,
admission, degrading), `instance` with `batching` and `outage` (one instance's state machine),
`host` (what an instance may see and call of the running simulation), `cache` (prefix cache
tiers), `disruptions` (faults, elastic roles). After a run: `metrics` (the summary figures from
the records, numpy only), `gaps` (gaps between tokens), `saturation` (whether the backlog grows
through the window: an unsustainable run), `tables` (the per-request table and time series,
pandas, laid out when first read). Around it: `work_load` (how many requests and how long, drawn
or expected), `work_bound` (the size of a run estimated from that load, checked before it starts)
and `run` (the front door: simulate, replicate).
May import: engine.core, engine.catalog, engine.costmodel, engine.policies, engine.scenario.

The face: `__all__` names what the packages above and the dashboard import, each loaded from its
module on first use (docs/architecture.md, Public API). `estimate_work` is `work_bound.estimate`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.core.native import extend as _extend
from engine.faces import lazy as _lazy

_extend(__name__, __path__)  # the compiled build's modules first, where it is current (engine.core.native)

_API = {
    "ENGINE_VERSION": "engine.serving.run",
    "SimResult": "engine.serving.run",
    "replicate": "engine.serving.run",
    "simulate": "engine.serving.run",
    "ClassGap": "engine.serving.trace_classes",
    "class_gap": "engine.serving.trace_classes",
    "with_classes": "engine.serving.trace_classes",
    "estimate_work": "engine.serving.work_bound",
    "read_trace": "engine.serving.workload",
    "whole_run": "engine.serving.workload",
    "trace_class_names": "engine.serving.traces.csv",
    "TooManyRequests": "engine.serving.traces",
}
_RENAMED = {"estimate_work": "estimate"}

__all__ = [
    "ENGINE_VERSION",
    "ClassGap",
    "SimResult",
    "TooManyRequests",
    "class_gap",
    "estimate_work",
    "read_trace",
    "replicate",
    "simulate",
    "trace_class_names",
    "whole_run",
    "with_classes",
]


__getattr__, __dir__ = _lazy(__name__, _API, _RENAMED, __all__, globals())


if TYPE_CHECKING:
    from engine.serving.run import ENGINE_VERSION, SimResult, replicate, simulate
    from engine.serving.trace_classes import ClassGap, class_gap, with_classes
    from engine.serving.traces import TooManyRequests
    from engine.serving.traces.csv import trace_class_names
    from engine.serving.work_bound import estimate as estimate_work
    from engine.serving.workload import read_trace, whole_run
