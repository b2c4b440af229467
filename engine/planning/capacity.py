"""Capacity: the highest arrival rate at which a scenario's deployment passes its SLOs.

Two definitions of passing (`engine.planning.rules.run_passes`): ``percentile`` (the default,
MLPerf's server-scenario rule), every class with its TTFT and TPOT within target at its SLO
percentile; ``attainment`` (DistServe's goodput), at least a share X (default 90%) of all
requests each meeting its class's TTFT and TPOT targets. Bisection on
`workload.arrival.rate_rps` from a bracket the cost model suggests (`analytic_capacity_rps`),
within a fixed number of simulations; every run is kept. An unsustainable run (its queue grows
through the window) fails under either rule, so the search stops below the rate it cannot sustain.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from engine.catalog.entries import Catalog
from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.planning.candidates import planning_scenario
from engine.planning.rules import DEFAULT_ATTAINMENT, Rule, check_rule, rule_text, run_passes
from engine.planning.search import Progress
from engine.planning.sizing import demand, instance_of, instance_rates
from engine.scenario import codec as scenario_io
from engine.scenario.model import Scenario
from engine.scenario.resolve import scenario_catalog
from engine.serving.run import simulate
from engine.serving.summary import shortfall_rps
from engine.serving.workload import generate


@dataclass(frozen=True)
class Capacity:
    """The highest tested arrival rate that passed under the rule, and the runs that showed it.

    `capacity_rps` is 0 when even the lowest rate tried failed; `failed_rps` is the lowest rate
    seen failing (None if none failed: the true capacity may be higher). `runs` has one row per
    simulation: rate, whether it passed under `rule`, whether every class passed at its
    percentile, its shortfall in req/s when unsustainable (None when it keeps up: such a run never
    passes, `engine.serving.saturation`), goodput and SLO attainment.
    """

    capacity_rps: float
    failed_rps: float | None
    estimate_rps: float
    runs: pd.DataFrame
    simulations: int
    rule: Rule = "percentile"
    attainment: float = DEFAULT_ATTAINMENT

    def to_json(self) -> dict[str, Any]:
        """Plain data for the CLI."""
        return {
            "capacity_rps": self.capacity_rps,
            "failed_rps": self.failed_rps,
            "estimate_rps": self.estimate_rps,
            "rule": self.rule,
            "attainment": self.attainment,
            "passes_when": rule_text(self.rule, self.attainment),
            "simulations": self.simulations,
            "runs": self.runs.to_dict(orient="records"),
        }


def analytic_capacity_rps(scenario: Scenario, catalog: Catalog | None = None) -> float:
    """The cost model's (optimistic) highest rate for the scenario's own deployment."""
    cat = scenario_catalog(scenario, catalog)
    d = demand(scenario, generate(scenario))
    prefill_rps = decode_rps = mixed_rps = 0.0
    roles = {p.role for p in scenario.deployment.pools}
    for p in scenario.deployment.pools:
        r = instance_rates(instance_of(scenario, cat, p.hardware, p.tp, p.pp, p.dp, p.ep), d)
        per_p = 1.0 / r.prefill_s_per_request if r.prefill_s_per_request > 0 else math.inf
        per_d = r.decode_tokens_per_s / max(d.mean_output_tokens, 1e-9)
        if p.role == "prefill":
            prefill_rps += p.count * per_p
        elif p.role == "decode":
            decode_rps += p.count * per_d
        else:
            mixed_rps += p.count * min(per_p, per_d)
    return mixed_rps if roles == {"mixed"} else min(prefill_rps, decode_rps)


def _bracket_and_bisect(
    passes: Callable[[float], bool],
    budget_left: Callable[[], bool],
    probe: float,
    low_rps: float | None,
    high_rps: float | None,
    top: float,
    rel_tol: float,
) -> None:
    """Double or halve from `probe` until a passing and a failing rate bracket the capacity (at most
    `top`), then bisect until the bracket is within `rel_tol`; `passes` records every run."""
    lo, hi = low_rps, high_rps
    while budget_left() and (lo is None or hi is None):
        if passes(probe):
            lo = probe
            if probe >= top:
                break
            probe = min(top, probe * 2.0 if hi is None else (probe + hi) / 2)
        else:
            hi = probe
            probe = probe / 2.0 if lo is None else (probe + lo) / 2
        if lo is not None and hi is not None and lo >= hi:
            lo = None  # a given low bound that fails: keep halving
            probe = hi / 2.0
    while lo is not None and hi is not None and budget_left() and (hi - lo) > rel_tol * hi:
        mid = (lo + hi) / 2.0
        if passes(mid):
            lo = mid
        else:
            hi = mid


def capacity(
    scenario: Scenario,
    *,
    max_simulations: int = 10,
    rel_tol: float = 0.03,
    low_rps: float | None = None,
    high_rps: float | None = None,
    duration_s: float | None = None,
    catalog: Catalog | None = None,
    progress: Progress | None = None,
    check_work: bool = True,
    rule: Rule = "percentile",
    attainment: float = DEFAULT_ATTAINMENT,
    slowdown: Mapping[str, float] | None = None,
) -> Capacity:
    """Bisection on `workload.arrival.rate_rps` for the highest rate that passes under `rule`.

    ``percentile``: every class passes at its SLO percentile. ``attainment``: at least
    `attainment` (a share in (0, 1]) of the requests meet their class's SLO. `check_work=False`
    lifts the work bound on each run (engine.serving.work_bound), as `simulate`'s does;
    `slowdown` (chip id -> e) runs every chip 1 + e times as long (`simulate`'s: the capacity's
    margin for the model's error, with chips slower, or faster for e < 0).
    """
    check_rule(rule, attainment)
    if not 2 <= max_simulations <= 100:
        raise ScenarioError(f"max_simulations: must be in [2, 100] (got {max_simulations})")
    if not 0 < rel_tol < 1:
        raise ScenarioError(f"rel_tol: must be in (0, 1) (got {rel_tol})")
    base = planning_scenario(scenario, scenario.workload.arrival.rate_rps, duration_s)
    cat = scenario_catalog(base, catalog)
    top = min(bounds.MAX_RATE_RPS, 0.95 * bounds.MAX_REQUESTS / base.duration_s)
    estimate = analytic_capacity_rps(base, cat)
    rows: list[dict[str, Any]] = []

    def passes(rate: float) -> bool:
        if progress:
            progress(len(rows), max_simulations, f"{rate:.3g} req/s")
        res = simulate(
            scenario_io.apply_overrides(base, {"workload.arrival.rate_rps": rate}),
            cat,
            check_work=check_work,
            slowdown=slowdown,
        )
        ok = run_passes(res.summary, rule, attainment)
        rows.append(
            {
                "rate_rps": rate,
                "passes": ok,
                "classes_pass": all(c["passes"] for c in res.summary["classes"].values()),
                "shortfall_rps": shortfall_rps(res.summary),
                "goodput_rps": res.summary["goodput_rps"],
                "slo_attainment": res.summary["slo_attainment"],
            }
        )
        return ok

    probe = min(top, high_rps or low_rps or (estimate if math.isfinite(estimate) and estimate > 0 else 1.0))
    _bracket_and_bisect(passes, lambda: len(rows) < max_simulations, probe, low_rps, high_rps, top, rel_tol)
    runs = pd.DataFrame(
        rows, columns=["rate_rps", "passes", "classes_pass", "shortfall_rps", "goodput_rps", "slo_attainment"]
    )
    ok = runs.loc[runs["passes"], "rate_rps"]
    bad = runs.loc[~runs["passes"].astype(bool), "rate_rps"]
    return Capacity(
        capacity_rps=float(ok.max()) if len(ok) else 0.0,
        failed_rps=float(bad.min()) if len(bad) else None,
        estimate_rps=estimate,
        runs=runs,
        simulations=len(runs),
        rule=rule,
        attainment=attainment,
    )
