"""The scenario: one validated, serialisable value, its files and links, and its resolution.

Owns: `model` (the Scenario, its served model and the checks across its parts, which it
re-exports), its parts by actor: `workload` (request classes, lengths, SLOs, a trace),
`deployment` (pools, batching, the KV link, speculative decoding), `cache`, `scheduler`
(policies, elastic roles), `faults`; how requests arrive in `arrival`, a pool's autoscaling in
`scaling`, a policy's saved form in `policy_spec`, what overload sheds in `degrade`, power caps
and each chip's limit under them in `power_budget`; `network` (the user's way in: round trip,
gateway, edge site, control-plane costs), `fields`, `codec` (TOML and JSON files, field paths and
overrides, presets, share links), and `resolve` (looking a scenario's chips and model up in the
catalog and building its instances).
May import: engine.core, engine.catalog, engine.costmodel, engine.policies.

The face: `__all__` names what the packages above and the dashboard import, each loaded from its
module on first use (docs/architecture.md, Public API). `load_scenario` is `codec.load`; `resolve`
is `engine`'s (a face holds no name of one of its modules).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.faces import lazy as _lazy

_API = {
    "DEFAULT_PRESET": "engine.scenario.codec",
    "SEED_COUNTS": "engine.scenario.codec",
    "SEEDS_NOTE": "engine.scenario.codec",
    "SEEDS_PAGES": "engine.scenario.codec",
    "apply_overrides": "engine.scenario.codec",
    "check_untrusted": "engine.scenario.codec",
    "dumps_toml": "engine.scenario.codec",
    "closest_preset": "engine.scenario.codec",
    "from_link": "engine.scenario.codec",
    "from_link_partial": "engine.scenario.codec",
    "get_path": "engine.scenario.codec",
    "load_preset": "engine.scenario.codec",
    "load_scenario": "engine.scenario.codec",
    "loads_toml": "engine.scenario.codec",
    "preset_names": "engine.scenario.codec",
    "to_data": "engine.scenario.codec",
    "to_link": "engine.scenario.codec",
    "window_changes": "engine.scenario.codec",
    "Arrival": "engine.scenario.arrival",
    "USED_BY_KIND": "engine.scenario.arrival",
    "Batching": "engine.scenario.deployment",
    "Cache": "engine.scenario.cache",
    "Degrade": "engine.scenario.degrade",
    "Deployment": "engine.scenario.deployment",
    "ControlPlane": "engine.scenario.network",
    "Edge": "engine.scenario.network",
    "Gateway": "engine.scenario.network",
    "Network": "engine.scenario.network",
    "Fault": "engine.scenario.faults",
    "LINK_FIELDS": "engine.scenario.faults",
    "KvLink": "engine.scenario.deployment",
    "LengthDist": "engine.scenario.workload",
    "MultiTurn": "engine.scenario.workload",
    "PolicySpec": "engine.scenario.policy_spec",
    "Autoscale": "engine.scenario.scaling",
    "ColdStart": "engine.scenario.scaling",
    "Pool": "engine.scenario.deployment",
    "Prefix": "engine.scenario.workload",
    "RequestClass": "engine.scenario.workload",
    "Scenario": "engine.scenario.model",
    "Scheduler": "engine.scenario.scheduler",
    "Slo": "engine.scenario.workload",
    "Speculative": "engine.scenario.deployment",
    "Trace": "engine.scenario.workload",
    "named": "engine.scenario.naming",
    "scenario_catalog": "engine.scenario.resolve",
    "vendor_crossing_note": "engine.scenario.crossing",
}
_RENAMED = {"load_scenario": "load"}

__all__ = [
    "DEFAULT_PRESET",
    "LINK_FIELDS",
    "SEEDS_NOTE",
    "SEEDS_PAGES",
    "SEED_COUNTS",
    "USED_BY_KIND",
    "Arrival",
    "Autoscale",
    "Batching",
    "Cache",
    "ColdStart",
    "ControlPlane",
    "Degrade",
    "Deployment",
    "Edge",
    "Fault",
    "Gateway",
    "KvLink",
    "LengthDist",
    "MultiTurn",
    "Network",
    "PolicySpec",
    "Pool",
    "Prefix",
    "RequestClass",
    "Scenario",
    "Scheduler",
    "Slo",
    "Speculative",
    "Trace",
    "apply_overrides",
    "check_untrusted",
    "closest_preset",
    "dumps_toml",
    "from_link",
    "from_link_partial",
    "get_path",
    "load_preset",
    "load_scenario",
    "loads_toml",
    "named",
    "preset_names",
    "scenario_catalog",
    "to_data",
    "to_link",
    "vendor_crossing_note",
    "window_changes",
]


__getattr__, __dir__ = _lazy(__name__, _API, _RENAMED, __all__, globals())


if TYPE_CHECKING:
    from engine.scenario.arrival import USED_BY_KIND, Arrival
    from engine.scenario.cache import Cache
    from engine.scenario.codec import (
        DEFAULT_PRESET,
        SEED_COUNTS,
        SEEDS_NOTE,
        SEEDS_PAGES,
        apply_overrides,
        check_untrusted,
        closest_preset,
        dumps_toml,
        from_link,
        from_link_partial,
        get_path,
        load_preset,
        loads_toml,
        preset_names,
        to_data,
        to_link,
        window_changes,
    )
    from engine.scenario.codec import load as load_scenario
    from engine.scenario.crossing import vendor_crossing_note
    from engine.scenario.degrade import Degrade
    from engine.scenario.deployment import Batching, Deployment, KvLink, Pool, Speculative
    from engine.scenario.faults import LINK_FIELDS, Fault
    from engine.scenario.model import Scenario
    from engine.scenario.naming import named
    from engine.scenario.network import ControlPlane, Edge, Gateway, Network
    from engine.scenario.policy_spec import PolicySpec
    from engine.scenario.resolve import scenario_catalog
    from engine.scenario.scaling import Autoscale, ColdStart
    from engine.scenario.scheduler import Scheduler
    from engine.scenario.workload import LengthDist, MultiTurn, Prefix, RequestClass, Slo, Trace
