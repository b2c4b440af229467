"""The planner under a budget per hour: no deployment billed over it is chosen, passes or traced."""

from __future__ import annotations

import math
from typing import Any

from engine.planning.candidates import SearchSpace
from engine.planning.plan import plan
from engine.scenario import codec as io

NOMINAL: dict[str, Any] = {"risk_aware": False, "verify": False}


def _space(budget: float) -> SearchSpace:
    return SearchSpace(
        hardware=("h100-sxm",), modes=("colocated",), tp=(2,), duration_s=60.0, budget_usd_per_hour=budget
    )


def test_an_owned_deployment_billed_over_the_budget_is_not_chosen() -> None:
    """Owned chips are priced at idle power by the bounds; the run bills their energy too: five
    instances of two H100s bill $12.89/h, over a $12.50 budget the bounds let them under."""
    p = plan(io.load_preset("rent-vs-own"), 16.0, _space(12.5), **NOMINAL)
    over = p.runs[p.runs["usd_per_hour"] > 12.5]
    assert len(over) and not over["passes"].any() and over["over_budget"].all()
    assert p.best is None or p.runs.loc[p.best_run, "usd_per_hour"] <= 12.5
    assert not p.frontier_cost["usd_per_hour"].gt(12.5).any()
    assert any("billed over the budget of $12.50/h (the least $12.89/h)" in n for n in p.notes)


def test_the_frontier_traced_past_the_winner_stays_within_the_budget() -> None:
    """Rented: the winner's extra instances are traced only while they are within the budget."""
    p = plan(io.load_preset("chat-colocated"), 16.0, _space(26.0), **NOMINAL)
    assert p.best is not None
    assert p.runs["usd_per_hour"].max() <= 26.0


def test_a_simulation_budget_that_stops_past_every_shape_that_could_win_settles_the_choice() -> None:
    """The flagship plan (four chips, sixteen chip groups) read 'a cheaper deployment may exist' where
    every shape its simulation budget left had a cost-model bound above the choice (a note): such a
    choice is settled, the same as an unlimited search's, and said so; a budget that stops short of a
    shape that could win still says a cheaper one may exist."""
    sc = io.load_preset("chat-disaggregated")

    def at(n: int) -> Any:
        chips = ("h100-sxm", "b200", "mi300x")
        space = SearchSpace(hardware=chips, tp=(1, 2), pp=(1,), duration_s=30.0, max_simulations=n)
        return plan(sc, 16.0, space, **NOMINAL)

    full = at(200)
    assert full.exhaustive and full.settled and full.unsearched_from == math.inf
    cheapest = full.best_usd_per_hour
    seen = set()
    for n in (24, 32, 34, 38):
        p = at(n)
        assert not p.exhaustive
        seen.add(p.settled)
        said = " ".join(p.notes)
        if p.settled:  # nothing left could beat it: the unlimited search's choice
            assert p.best_usd_per_hour == cheapest and p.unsearched_from >= cheapest
            assert "which stands" in said and "may exist" not in said
        else:
            assert p.unsearched_from < (p.best_usd_per_hour or math.inf)
            assert "a cheaper deployment may exist" in said and "which stands" not in said
        assert p.to_json()["settled"] == p.settled
    assert seen == {True, False}  # both cases met
