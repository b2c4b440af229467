"""The planner under a budget per hour: no deployment billed over it is chosen, passes or traced."""

from __future__ import annotations

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
