"""Which scenario the plan on the Planner page belongs to, and what it was made with.

A plan is kept in the session while the user moves on: to another preset, an edited target. Its figures
and its choice are then another scenario's, and a deployment loaded from it would put that scenario back
over the change (a browser review); the page says so and loads nothing from it (`stale_plan`).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui import state

OWNED = "fg_plan_owned"
"""The scenarios (as JSON) the plan on the page belongs to: the one planned, and each loaded from it."""


def own_plan(scenario_json: str, fresh: bool = False) -> None:
    """Mark `scenario_json` as one the plan on the page belongs to (`fresh`: a new plan, only it)."""
    owned = st.session_state.get(OWNED)
    if fresh or not isinstance(owned, set):
        owned = st.session_state[OWNED] = set()
    owned.add(scenario_json)


def stale_plan() -> bool:
    """Whether the scenario changed since the plan on the page (another preset, an edited target): its
    figures, its choice and its loads are then another scenario's (a browser review read a chat plan's
    verdict under enterprise-mixed, and its Load undid a TPOT target typed since, unsaid)."""
    owned = st.session_state.get(OWNED)
    return isinstance(owned, set) and state.scenario().model_dump_json() not in owned


STALE_TEXT = (
    "**This plan is for the scenario as it was when you pressed Plan**: the scenario has changed since "
    "(another preset, or an edit). Its figures and its choice are that scenario's, and its deployments "
    "cannot be loaded over yours; press **Plan** to plan this one."
)


def _margin_said(margin: bool, chosen: bool) -> str:
    """Whether the margin was checked: with no choice there was nothing to check (it read 'not checked'
    beside a ticked box: a review)."""
    return "checked" if margin else "not checked" if chosen else "not checked: nothing was chosen"


def planned_with(key: tuple[Any, ...], margin: bool, objectives: dict[str, str], chosen: bool = True) -> str:
    """What the plan below was made with (`key`: the scenario, target, space, rule, attainment, objective,
    risk-aware switch; `objectives`: their names): the form's fields apply only when Plan is pressed, so a
    toggle switched since read off above a verdict made with it on (a browser review)."""
    target, rule, attainment, objective, risk = key[1], key[3], key[4], key[5], key[6]
    passes = (
        f"{attainment:.0%} of requests within their SLO"
        if rule == "attainment"
        else "every class at its percentile"
    )
    return (
        f"This plan: {target:g} req/s, {passes}, chosen by {objectives[objective].lower()}, risk-aware "
        f"{'on' if risk else 'off'}, margin {_margin_said(margin, chosen)}. The form's changes apply when you "
        "press Plan."
    )
