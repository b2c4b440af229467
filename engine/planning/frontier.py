"""The planner's Pareto frontiers over the runs that meet every SLO.

`engine.planning.plan` marks its cost frontier (cost per hour against goodput) over every simulated run,
so the cheapest run of all sits on it even when it misses an SLO and its goodput is near zero:
a frontier point that nobody can deploy. A frontier to plan with holds passing runs only; a
failing run is shown apart, never as a point of the trade-off. `passing_frontiers` recomputes
both frontier flags that way, with `engine.planning.plan.pareto`, and leaves every other column as it was.
"""

from __future__ import annotations

import pandas as pd

from engine.planning.objective import COLUMN
from engine.planning.plan import pareto

FRONTIERS: dict[str, tuple[str, str, bool, bool]] = {
    "on_cost_frontier": ("usd_per_hour", "goodput_rps", False, True),
    "on_throughput_frontier": ("tokens_per_s_per_user", "goodput_tokens_per_s_per_chip", True, True),
}
"""Frontier flag -> (x column, y column, maximise x, maximise y), as `engine.planning.plan.plan` defines them."""


def passing_frontier(runs: pd.DataFrame, x: str, y: str, *, maximize_x: bool, maximize_y: bool) -> pd.Series:
    """True for the passing runs that no other passing run beats on both `x` and `y`; False for the rest."""
    flags = pd.Series(False, index=runs.index)
    passing = runs[runs["passes"].astype(bool)]
    if len(passing):
        flags.loc[passing.index] = pareto(passing, x, y, maximize_x=maximize_x, maximize_y=maximize_y)
    return flags


def passing_frontiers(runs: pd.DataFrame, objective: str = "usd_per_hour") -> pd.DataFrame:
    """A copy of a plan's runs whose frontier flags hold passing runs only (no runs: unchanged). The
    cost frontier's x is the plan's `objective` (`objective.COLUMN`), as `plan.plan` draws it: a
    power plan's frontier is power against goodput, not $/h."""
    out = runs.copy()
    if out.empty or "passes" not in out:
        return out
    for flag, (x, y, max_x, max_y) in FRONTIERS.items():
        x = COLUMN[objective] if flag == "on_cost_frontier" else x
        if x in out and y in out:
            out[flag] = passing_frontier(out, x, y, maximize_x=max_x, maximize_y=max_y)
    return out
