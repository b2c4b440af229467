"""What the planner minimises, and the cost model's lower bound of it per instance.

The buyer chooses the objective (`Objective`): the bill per hour at the target load (the default),
the cost per million output tokens, the number of chips, or the mean power drawn. Each is read
from a simulated run's row (`COLUMN`, `row_value`) and bounded from below, for the branch and
bound, by a per-instance weight times the lower bound on instance counts (`unit_weights`):

- ``usd_per_hour``: each instance's price per hour (`InstanceRates.usd_per_hour`), exact;
- ``chips``: each instance's chips, exact;
- ``power``: each instance's idle power (``idle_w`` times its chips): a chip draws at least its
  idle power whenever it is powered (`engine.costmodel.power`), so a run's mean power is never
  below it;
- ``usd_per_million_tokens``: the price per hour times the hours to the last arrival over every
  output token the planning run's requests ask for, times a million: the bill runs at least until
  the last request arrives, and no run completes more tokens than were asked.

Every bound is valid (never above the run's figure), so the search prunes by each; a bound that
were not would be listed in `UNBOUNDED` and the search would visit every shape of it without
pruning by the cost model, and the plan's notes say so (docs/planner.md, "Objective").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from engine.catalog.entries import Catalog
from engine.core.errors import ScenarioError
from engine.planning.sizing import InstanceRates, Kind
from engine.serving.workload import Requests

Objective = Literal["usd_per_hour", "usd_per_million_tokens", "chips", "power"]

OBJECTIVES: dict[str, str] = {
    "usd_per_hour": "cost per hour",
    "usd_per_million_tokens": "cost per million output tokens",
    "chips": "chips",
    "power": "mean power",
}
"""Each objective and what it reads, in words."""

COLUMN: dict[str, str] = {
    "usd_per_hour": "usd_per_hour",
    "usd_per_million_tokens": "usd_per_million_output_tokens",
    "chips": "chips",
    "power": "power_w",
}
"""The run-table column (`engine.planning.search.run_row`) each objective minimises."""

UNIT: dict[str, str] = {
    "usd_per_hour": "$/h",
    "usd_per_million_tokens": "$/M output tokens",
    "chips": "chips",
    "power": "kW",
}

UNBOUNDED: frozenset[str] = frozenset()
"""Objectives whose cost-model bound is not a valid lower bound: searched without pruning by it."""


BETTER = {
    "usd_per_hour": "cheaper",
    "usd_per_million_tokens": "cheaper",
    "chips": "smaller",
    "power": "leaner",
}
"""What a deployment better by each objective is, in a word ('a cheaper deployment may exist' read beside a
plan by power: a review); `better` writes it."""


BEST = {
    "usd_per_hour": "cheapest",
    "usd_per_million_tokens": "cheapest",
    "chips": "smallest",
    "power": "leanest",
}
"""The search's own winner by each objective, in a word: 'the nominal cheapest' stood beside a plan by
power (a browser pass); `best` writes it."""

BILLED = "its costs bill every chip to the run's end, the drain after the window included"
"""What a quoted run's $/M and $/request divide (docs/definitions.md, Cost): '$1.26 per M' beside $18/h over
four chips at 1,039 tok/s each ($1.20) did not add up, and nothing said why (a browser review)."""

DEARER = {"usd_per_hour": "costs", "usd_per_million_tokens": "costs", "chips": "takes", "power": "draws"}
"""The verb of a choice's premium over the nominal pick: 'the choice draws +0.4 kW (+5%)'."""


def best(objective: str) -> str:
    """'cheapest' (by cost), 'smallest' (by chips), 'leanest' (by power)."""
    return BEST.get(objective, "best")


def better(objective: str) -> str:
    """'cheaper' (by cost), 'smaller' (by chips: fewer of them), 'leaner' (by power: less of it)."""
    return BETTER.get(objective, "better")


def check_objective(objective: str) -> None:
    """Refuse an unknown objective with the choices."""
    if objective not in OBJECTIVES:
        raise ScenarioError(f"objective: choose from {', '.join(OBJECTIVES)} (got {objective!r})")


def row_value(row: Mapping[str, Any], objective: str) -> float:
    """The objective's figure of a run row; infinite where the run has none (no token completed)."""
    v = row.get(COLUMN[objective])
    if v is None:
        return math.inf
    v = float(v)
    return math.inf if v != v else v


def value_text(value: float, objective: str) -> str:
    """'$12.34/h', '$1.78 per M output tokens', '16 chips', '9.4 kW'."""
    if not math.isfinite(value):
        return "n/a"
    if objective == "usd_per_hour":
        return f"${value:,.2f}/h"
    if (
        objective == "usd_per_million_tokens"
    ):  # to the cent as the verdict's figures ('$1.6' beside $1.60: a review)
        return (
            f"${value:,.2f} per M output tokens"
            if abs(value) >= 0.1
            else f"${value:,.3g} per M output tokens"
        )
    if objective == "chips":
        return f"{value:,.0f} chip{'' if round(value) == 1 else 's'}"  # '+1 chips (+33%)': a browser pass
    return f"{value / 1e3:,.1f} kW"


def shown_value(value: float, objective: str) -> float:
    """`value` as `value_text` rounds it, so that a difference of two figures said adds up on the page:
    6,924 W and 7,167 W read 6.9 and 7.2 kW beside a premium of +0.2 kW (a review)."""
    if not math.isfinite(value):
        return value
    if objective == "power":
        return round(value / 100.0) * 100.0
    if objective == "chips":
        return float(round(value))
    if objective == "usd_per_million_tokens" and abs(value) < 0.1:
        return float(f"{value:.3g}")
    return round(value, 2)


def unit_weights(
    objective: str, rates: Mapping[Kind, InstanceRates], cat: Catalog, reqs: Requests
) -> dict[Kind, float]:
    """Per instance kind, the least an instance adds to the objective (see the module's docstring)."""
    if objective == "chips":
        return {k: float(k.chips) for k in rates}
    if objective == "power":
        return {k: float(k.chips) * cat.hardware[k.hardware].idle_w for k in rates}
    if objective == "usd_per_million_tokens":
        tokens = float(reqs.output_tokens.sum())
        last_s = float(reqs.arrival_s.max()) if len(reqs.arrival_s) else 0.0
        per_usd_h = last_s / 3600.0 / tokens * 1e6 if tokens > 0 else 0.0
        return {k: r.usd_per_hour * per_usd_h for k, r in rates.items()}
    return {k: r.usd_per_hour for k, r in rates.items()}


def bound_value(kinds: Iterable[Kind], counts: Iterable[int], weights: Mapping[Kind, float]) -> float:
    """The objective's lower bound of a deployment from its kinds and (lower-bound) counts."""
    return sum(n * weights[k] for k, n in zip(kinds, counts, strict=False))
