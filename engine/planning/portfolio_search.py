"""The planner's portfolios searched after its shapes: a decode pool of its own chip for each class
(`engine.planning.portfolio`), below the best cost found, and what became of them in one note."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from engine.planning.portfolio import (
    MAX_POOLS,
    Portfolio,
    PortfolioBound,
    class_demand,
    decode_choices,
    portfolio_bounds,
)
from engine.planning.search import Search
from engine.planning.sizing import Bound, Demand, Kind, Shape, instance_of, instance_rates


def search_portfolios(
    search: Search,
    d: Demand,
    kinds: Sequence[Kind],
    barred: set[str],
    live: Sequence[Bound],
    cap: float,
    status: dict[Shape | Portfolio, str],
    found: dict[Shape | Portfolio, int],
    best: dict[str, Any] | None,
) -> tuple[list[PortfolioBound], dict[str, Any] | None, list[str]]:
    """After the search: decode pools by class (`engine.planning.portfolio`), below the best cost.

    The prefill pool (kind and count) is the cheapest passing disaggregated run's, else the
    cheapest disaggregated bound's. Each class's decode kinds are sized on its own requests;
    candidate portfolios are searched cheapest bound first and bounded out, as shapes are, by the
    best deployment so far. Returns the candidates, the best run and notes.
    """
    classes = search.base.workload.classes
    space = search.space
    if len(classes) < 2 or "disaggregated" not in space.modes or len(classes) + 1 > MAX_POOLS:
        why = f"{len(classes)} request class{'es' if len(classes) != 1 else ''}"
        if "disaggregated" not in space.modes:
            why = "the disaggregated mode is not searched"
        elif len(classes) + 1 > MAX_POOLS:
            why = f"{len(classes)} classes need more than {MAX_POOLS} pools"
        return (
            [],
            best,
            [f"no portfolio tried: it needs two to {MAX_POOLS - 1} classes, disaggregated ({why})"],
        )
    passing = [
        (r["usd_per_hour"], k, c)
        for (k, c), i in search.index.items()
        if isinstance(k, Shape) and k.mode == "disaggregated" and (r := search.rows[i])["passes"]
    ]
    if passing:
        _, anchor, counts = min(passing, key=lambda x: x[0])
        prefill, n_p = anchor.prefill, counts[0]
    else:
        disagg = [b for b in live if b.shape.mode == "disaggregated"]
        if not disagg:
            return [], best, ["no portfolio tried: no disaggregated shape survived the cost model"]
        prefill, n_p = disagg[0].shape.prefill, disagg[0].counts[0]
    usable = [
        k
        for k in kinds
        if k.hardware not in barred and (space.mixed_hardware or k.hardware == prefill.hardware)
    ]
    choices = []
    for c in range(len(classes)):
        dc = class_demand(d, c)
        rates = {
            k: instance_rates(instance_of(search.base, search.cat, *k), dc, search.base.cost) for k in usable
        }
        choices.append(decode_choices(rates, dc, space.max_instances_per_pool))
    if not all(choices):
        return [], best, ["no portfolio tried: a class has no decode kind that can serve it alone"]
    bounds_ = portfolio_bounds(
        prefill, n_p, search.rates[prefill].usd_per_hour, [c.name for c in classes], choices
    )
    for b in bounds_:
        best_cost = search.value(best) if best else math.inf
        if b.usd_per_hour > cap:
            status[b.portfolio] = f"pruned: over budget (at least ${b.usd_per_hour:,.2f}/h)"
        elif (kw := search.kw(b.portfolio, b.counts)) > search.power_budget_kw:
            status[b.portfolio] = f"pruned: over the power budget (at least {kw:,.1f} kW at TDP)"
        elif search.out_of_budget:
            status[b.portfolio], search.cut[b.portfolio] = "unexplored", search.cost(b.portfolio, b.counts)
        elif search.cost(b.portfolio, b.counts) >= best_cost:
            status[b.portfolio] = "bounded"
        else:
            row = search.search_portfolio(b, best_cost)
            status[b.portfolio] = "simulated"
            if search.out_of_budget:
                search.cut[b.portfolio] = search.cost(b.portfolio, b.counts)
            if row is not None:
                found[b.portfolio] = int(row["run"])
                best = row if best is None or search.value(row) < best_cost else best
    return bounds_, best, [_portfolios_said(bounds_, status, found)]


def _portfolios_said(bounds_: Sequence[PortfolioBound], status: dict[Any, str], found: dict[Any, int]) -> str:
    """What became of the portfolios tried, in one note: the box 'Mix decode pools by class' changed only
    the count of shapes, the plan saying nothing of them (a review)."""
    n = len(bounds_)
    if not n:
        return "no portfolio tried: no decode pool per class to offer"
    passed = sum(1 for b in bounds_ if b.portfolio in found)
    states = [status.get(b.portfolio, "") for b in bounds_]
    bounded = sum(1 for s in states if s == "bounded")
    least = min(b.usd_per_hour for b in bounds_)
    what = f"{n} portfolio{'s' if n != 1 else ''} (a decode pool per class) offered"
    if passed:
        return f"{what}: {passed} passed (each a deployment of its own in the runs and frontiers)"
    if bounded == n:
        return f"{what}: each bounded out, its cost model's bound (from ${least:,.2f}/h) above the cheapest that passed"
    unrun = states.count("unexplored")
    if unrun == n:  # none simulated: "tried: none passed" read as portfolios failing here (a review)
        return (
            f"{what}: none simulated, the simulation budget spent before them (from ${least:,.2f}/h by the "
            "cost model; more simulations would try them)"
        )
    words = {"unexplored": "not run: the simulation budget was spent", "simulated": "run and failed"}
    told = ", ".join(f"{states.count(s)} {words.get(s, s)}" for s in dict.fromkeys(states))
    return f"{what}: none passed ({told})"
