"""Fengong's engine: a discrete-event model of LLM serving over a roofline cost model.

The public front door is small: load a scenario (`load_preset`, `load_scenario`), validate it,
and run it. The engine never imports streamlit, prints nothing and does no I/O inside the model.
"""

from engine.advisor import Advice, Finding, advise
from engine.capacity import Capacity, capacity
from engine.catalog import Catalog, load_catalog, model_from_hf_config
from engine.errors import ScenarioError
from engine.perf import Instance, decode_cost, iteration_cost, prefill_cost
from engine.plan import Plan, SearchSpace, plan
from engine.resolve import resolve
from engine.run import SimResult, replicate, simulate
from engine.scenario import Scenario
from engine.scenario_io import apply_overrides, load_preset, preset_names
from engine.scenario_io import load as load_scenario
from engine.specs import HardwareSpec, ModelSpec
from engine.sweep import sweep

__version__ = "0.1.0"

__all__ = [
    "Advice",
    "Capacity",
    "Catalog",
    "Finding",
    "HardwareSpec",
    "Instance",
    "ModelSpec",
    "Plan",
    "Scenario",
    "ScenarioError",
    "SearchSpace",
    "SimResult",
    "__version__",
    "advise",
    "apply_overrides",
    "capacity",
    "decode_cost",
    "iteration_cost",
    "load_catalog",
    "load_preset",
    "load_scenario",
    "model_from_hf_config",
    "plan",
    "prefill_cost",
    "preset_names",
    "replicate",
    "resolve",
    "simulate",
    "sweep",
]
