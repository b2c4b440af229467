"""Fengong's engine: a discrete-event model of LLM serving over a roofline cost model.

The public front door is small: load a scenario (`load_preset`, `load_scenario`), change it
(`apply_overrides`), run it (`simulate`, `replicate`), write a run's files (`write_outputs`), plan
over it (`plan`, `capacity`, `sweep`), explain it (`advise`; `notes`, what qualifies a run's figures). The
engine never imports streamlit, prints nothing and does no I/O inside the model.

The packages follow the flow of data, each importing only those below it (an import-linter
contract in pyproject.toml holds the order; docs/architecture.md draws it):

    core       errors, hard limits, the trust boundary (bounded parsing, data files, safe CSV)
    catalog    hardware and model specs, the catalog
    costmodel  the cost of one iteration (roofline, step model)
    calibration  fitting the cost model to measurements; bands and their coverage; trust
    policies   routers, queue orders, admission: registered classes over read-only views
    scenario   the Scenario value, its files and share links, its resolution against the catalog
    serving    workload and traces, cache, instances, the simulation, metrics, simulate()
    planning   sizing, capacity search, the planner, sweeps
    explain    the advisor, presentation values, previews, reports
    cli        python -m engine

Names below are loaded on first use, so ``import engine`` (and the command line) pays only for
the packages it touches.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

# numpy's OpenBLAS starts a thread per core when it loads, and they spin a while waiting for work
# the engine never gives them (it does no large linear algebra): about 0.1 s of CPU per process on
# two cores, more on larger machines. One thread unless the user chose otherwise; effective only
# where numpy is not loaded yet (docs/performance.md, "OpenBLAS's threads").
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from engine.faces import lazy as _lazy

__version__ = "0.1.0"

_API = {
    "Advice": "engine.explain.advisor",
    "Finding": "engine.explain.advisor",
    "advise": "engine.explain.advisor",
    "notes": "engine.explain.run_notes",
    "Capacity": "engine.planning.capacity",
    "capacity": "engine.planning.capacity",
    "Catalog": "engine.catalog.entries",
    "load_catalog": "engine.catalog.entries",
    "model_from_hf_config": "engine.catalog.entries",
    "ScenarioError": "engine.core.errors",
    "Instance": "engine.costmodel.perf",
    "decode_cost": "engine.costmodel.iteration",
    "iteration_cost": "engine.costmodel.iteration",
    "prefill_cost": "engine.costmodel.iteration",
    "Plan": "engine.planning.plan",
    "SearchSpace": "engine.planning.candidates",
    "plan": "engine.planning.plan",
    "resolve": "engine.scenario.resolve",
    "SimResult": "engine.serving.run",
    "replicate": "engine.serving.run",
    "simulate": "engine.serving.run",
    "estimate_work": "engine.serving.work_bound",
    "Scenario": "engine.scenario.model",
    "apply_overrides": "engine.scenario.codec",
    "load_preset": "engine.scenario.codec",
    "preset_names": "engine.scenario.codec",
    "load_scenario": "engine.scenario.codec",
    "HardwareSpec": "engine.catalog.specs",
    "ModelSpec": "engine.catalog.model_spec",
    "sweep": "engine.planning.sweep",
    "write_outputs": "engine.cli.outputs",
}
_RENAMED = {"load_scenario": "load", "estimate_work": "estimate"}

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
    "estimate_work",
    "iteration_cost",
    "load_catalog",
    "load_preset",
    "load_scenario",
    "model_from_hf_config",
    "notes",
    "plan",
    "prefill_cost",
    "preset_names",
    "replicate",
    "resolve",
    "simulate",
    "sweep",
    "write_outputs",
]


__getattr__, __dir__ = _lazy(__name__, _API, _RENAMED, __all__, globals())


if TYPE_CHECKING:
    from engine.catalog.entries import Catalog, load_catalog, model_from_hf_config
    from engine.catalog.model_spec import ModelSpec
    from engine.catalog.specs import HardwareSpec
    from engine.cli.outputs import write_outputs
    from engine.core.errors import ScenarioError
    from engine.costmodel.iteration import decode_cost, iteration_cost, prefill_cost
    from engine.costmodel.perf import Instance
    from engine.explain.advisor import Advice, Finding, advise
    from engine.explain.run_notes import notes
    from engine.planning.candidates import SearchSpace
    from engine.planning.capacity import Capacity, capacity
    from engine.planning.plan import Plan, plan
    from engine.planning.sweep import sweep
    from engine.scenario.codec import apply_overrides, load_preset, preset_names
    from engine.scenario.codec import load as load_scenario
    from engine.scenario.model import Scenario
    from engine.scenario.resolve import resolve
    from engine.serving.run import SimResult, replicate, simulate
    from engine.serving.work_bound import estimate as estimate_work
