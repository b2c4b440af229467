"""The Planner's counters: the shapes the search considered, pruned, bounded out, simulated and left
unexplored, and the runs that passed."""

from __future__ import annotations

import streamlit as st

from engine.planning import DEFAULT_ATTAINMENT, Plan, rule_text


def counters(p: Plan) -> None:
    """The search's counters: shapes considered, pruned, bounded out and simulated, and passing runs."""
    # each label whole: five columns read 'Shapes consi…' and '30 of …' at 1,100 px (a review)
    box = st.container(horizontal=True, gap="medium")
    status = p.candidates["status"].astype(str) if "status" in p.candidates else None
    shapes_run = int((status == "simulated").sum()) if status is not None else p.simulated
    left = int((status == "unexplored").sum()) if status is not None else 0
    box.metric(
        "Shapes considered",
        f"{len(p.candidates):,}",
        help="Pruned + bounded out + simulated"
        + (f" + {left:,} left unexplored when the simulation budget ran out." if left else "."),
        width="content",
    )
    box.metric(
        "Pruned by the cost model",
        f"{p.pruned:,}",
        help="Weights do not fit, TPOT or TTFT out of reach "
        "even unloaded, requests too long for KV memory, or over budget.",
        width="content",
    )
    box.metric(
        "Bounded out",
        f"{p.bounded:,}",
        help="Their lower-bound cost is not below a passing deployment's.",
        width="content",
    )
    box.metric(
        "Shapes simulated",
        f"{shapes_run:,}",
        help=(
            f"Shapes simulated, in {p.simulated:,} runs: a shape is tried at several instance counts."
            if status is not None
            else "Runs simulated (a plan kept from before shapes were counted)."
        ),
        width="content",
    )
    if left:  # (the tiles did not add up where the budget stopped the search: 342 = 19 + 0 + 64, unsaid)
        box.metric(
            "Left unexplored",
            f"{left:,}",
            help="Shapes the search never reached: the simulation budget ran out first (more simulations "
            "search further).",
            width="content",
        )
    rule = getattr(p, "rule", "percentile")  # a plan kept from before pass rules
    attainment = getattr(p, "attainment", DEFAULT_ATTAINMENT)
    box.metric(
        "Runs that met every SLO" if rule == "percentile" else f"Runs with {attainment:.0%} within SLO",
        f"{p.feasible:,} of {p.simulated:,}",  # runs, not shapes: a shape runs at several counts
        help=f"Of the {p.simulated:,} runs (deployments) simulated, those that passed: {rule_text(rule, attainment)}.",
        width="content",
    )
