"""The verdict's risk-aware search: per group, the cheapest deployment that holds with its chips slowed.

Each chip runs as slowly as its calibrated throughput band's pessimistic edge (`slowdowns`); the
search starts each shape from its nominal pick (or its lower bound), raised to the cost model's
lower bound with the chips slowed, and climbs (`engine.planning.verdict`, step 1).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from engine.planning.calibrations import slowdowns
from engine.planning.pick_tie import TIE, better_held
from engine.planning.portfolio import Portfolio, PortfolioBound
from engine.planning.search import Search
from engine.planning.sizing import Bound, Shape, lower_bound, slowed_rates

CUT = "cut"
"""A group whose risk-aware check the simulation budget stopped before any deployment passed."""
ABOVE = "above"
"""A group whose risk-aware check went only up to the least objective that held in a group checked
before it (over the planning window): none held below that; it is not searched past it."""


def group_of(shape: Shape | Portfolio) -> str:
    """The group a shape is bounded in: its chip, ``prefill chip -> decode chip``, or ``portfolio``."""
    if isinstance(shape, Portfolio):
        return "portfolio"
    a, b = shape.prefill.hardware, shape.decode.hardware
    return a if a == b else f"{a} -> {b}"


def counts_of(search: Search, row: dict[str, Any]) -> tuple[Shape | Portfolio, tuple[int, ...]]:
    """The shape and counts of a run row of `search`."""
    return next(k for k, i in search.index.items() if i == int(row["run"]))


def slowed_search(search: Search) -> Search:
    """A search on the same requests with every chip at its band's pessimistic edge, its lower bounds
    and prunes the cost model's for chips that slow (`slowed_rates`)."""
    s = search
    slow = Search(
        s.base, s.full, s.rates, s.space, s.cat, None, s.check_work, s.rule, s.attainment, requests=s.reqs
    )
    if search.progress is not None:
        outer = search.progress

        def tell(done: int, total: int, note: str) -> None:
            outer(done, total, f"at the bands' edge: {note}")

        slow.progress = tell
    slow.calibrations, slow.slowdown = search.calibrations, slowdowns(search.calibrations.values())
    if search.demand is not None:
        slow.demand = search.demand
        slow.rates = slowed_rates(search.rates, search.base, search.cat, search.demand, slow.slowdown)
    slow.objective, slow.weights, slow.budget = search.objective, search.weights, search.budget
    if min(slow.slowdown.values(), default=0.0) >= 0:  # no chip faster: what failed as modelled fails
        slow.failed = search.failures()
    search.edge = slow  # its runs, for the margin's slowed search (`Search.ran`)
    return slow


def risk_picks(
    search: Search,
    slow: Search,
    groups: dict[str, dict[str, Any]],
    live: list[Bound] | Any,
    status: dict[Shape | Portfolio, str],
    found: dict[Shape | Portfolio, int],
    ties: dict[str, list[tuple[Shape | Portfolio, tuple[int, ...]]]] | None = None,
) -> dict[str, tuple[Shape | Portfolio, tuple[int, ...]] | str | None]:
    """Per group, the cheapest deployment that passes slowed: the nominal pick first, then the
    group's shapes by their lower bound (nominal best, or the cost model's bound), each searched
    upward from there, until the bound reaches the best that holds. The groups go cheapest nominal
    pick first, each only up to the least that held in a group before it. None where none passes,
    `CUT` where the simulation budget ran out before one did, `ABOVE` where none held under that cap.
    `ties` gets, per group, the deployments that held as cheaply as its pick (`better_held` broke the tie).
    """
    out: dict[str, tuple[Shape | Portfolio, tuple[int, ...]] | str | None] = {}
    overall = math.inf  # the least objective that holds in a group checked so far: no group past it can win
    for g, row in groups.items():
        shape, counts = counts_of(search, row)
        if isinstance(shape, Portfolio):  # its own pools, grown from its nominal counts
            got = slow.search_portfolio(PortfolioBound(shape, counts, row["usd_per_hour"]), math.inf)
            out[g] = (CUT if slow.out_of_budget else None) if got is None else counts_of(slow, got)
            continue
        best_nominal = search.value(row)
        if best_nominal > overall * TIE:  # a group checked before holds cheaper than this one's nominal pick
            out[g] = ABOVE
            continue
        cands = _candidates(search, slow, g, live, status, found, best_nominal)
        cands.sort(key=lambda c: (c[0], c[1].shape != shape))
        best: dict[str, Any] | None = None
        held: list[dict[str, Any]] = []
        for low, b, start in cands:  # a shape that may tie is searched too (`better_held` breaks the tie)
            cap = min(slow.value(best) if best is not None else math.inf, overall) * TIE
            if low > cap or slow.out_of_budget:
                break
            got = slow.search(replace(b, counts=start), cap)
            if got is not None:
                held.append(got)
                best = got if best is None or better_held(slow, got, best) else best
        if best is not None:
            overall = min(overall, slow.value(best))
            if ties is not None:  # as cheap as the pick, less headroom: the verdict's second choice
                ties[g] = [
                    counts_of(slow, r)
                    for r in held
                    if r is not best and slow.value(r) <= slow.value(best) * TIE
                ]
        stopped = CUT if slow.out_of_budget else ABOVE if math.isfinite(overall) else None
        out[g] = stopped if best is None else counts_of(slow, best)
    return out


def _candidates(
    search: Search,
    slow: Search,
    g: str,
    live: list[Bound] | Any,
    status: dict[Shape | Portfolio, str],
    found: dict[Shape | Portfolio, int],
    best_nominal: float,
) -> list[tuple[float, Any, tuple[int, ...]]]:
    """The group's shapes as (the least objective they may hold at, their bound, where their slowed search
    starts): from each one's nominal best, else its cost model's bound, raised to its slowed bound."""
    cands = []
    for b in live:
        if group_of(b.shape) != g:
            continue
        if b.shape in found:
            r = search.rows[found[b.shape]]
            low, start = search.value(r), counts_of(search, r)[1]
        else:
            bound = search.cost(b.shape, b.counts)
            low = max(bound, best_nominal) if status.get(b.shape) == "simulated" else bound
            start = b.counts
        if (begin := slowed_start(slow, b.shape, start)) is not None:
            cands.append((max(low, slow.cost(b.shape, begin)), b, begin))
    return cands


def held_below(
    search: Search,
    slow: Search,
    g: str,
    state: tuple[list[Bound] | Any, dict[Shape | Portfolio, str], dict[Shape | Portfolio, int]],
    best_nominal: float,
    below: float,
    skip: set[Shape | Portfolio],
) -> tuple[Shape | Portfolio, tuple[int, ...]] | None:
    """The group's cheapest deployment of a shape not in `skip` that holds with its chips slowed over
    the planning window for less than `below` (None: none, or the budget ran out). The verdict asks where
    its pick held there but moved up to hold over its full-length run: the shapes bounded out by the pick's
    planning-window price were never tried up to the moved pick's (chat-disaggregated at 12 req/s chose tp8
    2 mixed at $39.84/h, moved up from 1 mixed, where tp1 -> tp4 5P:1D holds at $22.41/h: a review)."""
    cands = [c for c in _candidates(search, slow, g, *state, best_nominal) if c[1].shape not in skip]
    cands.sort(key=lambda c: c[0])
    best: dict[str, Any] | None = None
    for low, b, start in cands:
        cap = min(slow.value(best) if best is not None else math.inf, below / TIE)
        if low > cap or slow.out_of_budget:
            break
        got = slow.search(replace(b, counts=start), cap)
        if got is not None and slow.value(got) * TIE < below:
            best = got if best is None or better_held(slow, got, best) else best
    return None if best is None else counts_of(slow, best)


def slowed_start(slow: Search, shape: Shape, start: tuple[int, ...]) -> tuple[int, ...] | None:
    """Where the slowed search of `shape` starts: `start` (its nominal pick, or its lower bound),
    raised pool by pool to the cost model's lower bound with the chips slowed; None where that bound
    prunes it (one decode step at batch 1 past the TPOT target once slowed, a prompt alone past the
    TTFT target, or more instances than a pool may hold) or puts past the budget or the power budget:
    no count of it can pass slowed within them. (Grown one instance at a time from the nominal counts,
    twelve disaggregated shapes of DeepSeek over H200s spent 108 of the checks' 120 runs without
    reaching a count that held.)"""
    if slow.demand is None:
        return start
    b = lower_bound(shape, slow.rates, slow.demand, slow.space.max_instances_per_pool)
    if b.pruned:
        return None
    raised = tuple(max(a, c) for a, c in zip(start, b.counts, strict=True))
    # more instances only bill and draw more: past a budget (per hour or power) at its start, it stays past
    return raised if slow.affordable(shape, raised) else None
