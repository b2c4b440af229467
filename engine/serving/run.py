"""The front door: `simulate(scenario) -> SimResult`, and replications over seeds.

A SimResult is a plain value: the scenario, the per-request table, the per-pool time series,
the summary figures, and what the run cost to compute (events, wall time). It carries the seed
and the engine version so exported results say where they came from.

Before simulating, `simulate` estimates the run's work from its drawn requests and refuses one
over the documented bounds (`engine.serving.work_bound`); `check_work=False` lifts that for trusted
local runs (the CLI's ``--no-work-limit``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from engine.catalog.entries import Catalog
from engine.scenario.model import Scenario
from engine.scenario.resolve import Resolved, resolve
from engine.serving import metrics, work_bound
from engine.serving.sim import Records, Simulation
from engine.serving.workload import Requests, generate

ENGINE_VERSION = "0.1.0"


@dataclass(frozen=True)
class SimResult:
    """Everything one simulation produced."""

    scenario: Scenario
    requests: pd.DataFrame
    timeseries: pd.DataFrame
    summary: dict[str, Any]
    events: int
    wall_s: float
    engine_version: str = ENGINE_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The summary document with provenance (what `python -m engine run --json` prints)."""
        doc = dict(self.summary)
        doc["sim"] = {
            "wall_s": self.wall_s,
            "events": self.events,
            "events_per_request": self.events / max(len(self.requests), 1),
            "requests_simulated": len(self.requests),
        }
        doc["scenario"] = {"name": self.scenario.name, "seed": self.scenario.seed}
        doc["engine_version"] = self.engine_version
        return doc


def simulate(
    scenario: Scenario,
    catalog: Catalog | None = None,
    requests: Requests | None = None,
    *,
    check_work: bool = True,
) -> SimResult:
    """Run one scenario. `requests` may be given to replay the exact same requests.

    A run whose estimated work exceeds the bounds raises `work_bound.WorkBoundError` (a
    ScenarioError) before it starts, unless `check_work` is False.
    """
    resolved = resolve(scenario, catalog)
    reqs = requests if requests is not None else generate(scenario)
    if check_work:
        work_bound.check(scenario, reqs)
    t0 = time.perf_counter()
    sim = Simulation(resolved, reqs)
    rec = sim.run()
    wall = time.perf_counter() - t0
    return result_of(resolved, reqs, rec, wall)


def result_of(resolved: Resolved, reqs: Requests, rec: Records, wall: float) -> SimResult:
    """The SimResult of a finished simulation: per-request table, time series, summary, provenance."""
    n = len(rec.outcome)
    if n < len(reqs):  # a closed loop issued fewer requests than were drawn
        reqs = Requests(
            arrival_s=rec.arrival_s,
            cls=reqs.cls[:n], prompt_tokens=reqs.prompt_tokens[:n], output_tokens=reqs.output_tokens[:n],
            prefix_group=reqs.prefix_group[:n], prefix_tokens=reqs.prefix_tokens[:n],
            session=reqs.session[:n], reused_tokens=reqs.reused_tokens[:n], block_tokens=reqs.block_tokens,
        )  # fmt: skip
    table = metrics.with_slo(metrics.request_table(resolved, reqs, rec), resolved)
    ts = metrics.timeseries(resolved, rec)
    summ = metrics.summary(resolved, reqs, rec, table)
    return SimResult(
        scenario=resolved.scenario,
        requests=table,
        timeseries=ts,
        summary=summ,
        events=rec.events,
        wall_s=wall,
    )


# --- replications -------------------------------------------------------------------------

_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
         10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042}  # fmt: skip


def t_quantile(dof: int) -> float:
    """Two-sided 95% Student t quantile for `dof` degrees of freedom."""
    if dof <= 0:
        return math.nan
    keys = [k for k in _T975 if k <= dof]
    return _T975[max(keys)] if dof <= 30 else 1.96


def flatten(doc: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """Numeric leaves of a nested summary as ``a.b.c`` keys."""
    out: dict[str, float] = {}
    for k, v in doc.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict):
            out.update(flatten(v, key))
        elif isinstance(v, bool) or (isinstance(v, int | float) and v is not None):
            out[key] = float(v)
    return out


def replicate(
    scenario: Scenario, n: int, catalog: Catalog | None = None, *, check_work: bool = True
) -> tuple[list[SimResult], dict[str, Any]]:
    """Run `n` seeds (seed, seed+1, ...) and give each figure's mean and 95% interval."""
    runs = [
        simulate(scenario.model_copy(update={"seed": scenario.seed + i}), catalog, check_work=check_work)
        for i in range(n)
    ]
    flat = [flatten(r.summary) for r in runs]
    keys = sorted(set().union(*flat))
    stats: dict[str, Any] = {}
    for key in keys:
        vals = np.array([f[key] for f in flat if key in f and f[key] is not None and math.isfinite(f[key])])
        if len(vals) == 0:
            continue
        mean = float(vals.mean())
        half = (
            float(t_quantile(len(vals) - 1) * vals.std(ddof=1) / math.sqrt(len(vals)))
            if len(vals) > 1
            else math.nan
        )
        stats[key] = {"mean": mean, "ci95_low": mean - half, "ci95_high": mean + half, "n": len(vals)}
    return runs, stats
