"""The Planner's part of the share link: ``plan=...`` carries the form a shown plan was made from.

- `take` (before the page's notices are drawn): a ``plan`` parameter the session has not seen yet fills the
  form, and `pending` then asks for a click on Plan (the same request gives the same plan). A link
  does not start the plan itself: a plan may take up to the work limit (minutes of a core), and a
  URL that anyone can send should not spend that on a shared server unasked (a review). A
  parameter that is not allowed is said, naming the field and what it may hold, and dropped from
  the address, the form keeping its values; an empty one is no parameter.
- `remember` (when a plan finishes): the form it was made from, as the parameter.
- `show` (after): the address carries a link's parameter while its values wait in the form, else
  the shown plan's while that plan is the current scenario's, else none (a plan made for another
  scenario is not what the link would make).

The parameter's format and checks are the engine's (`engine.planning.plan_link`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import streamlit as st

from engine.core import ScenarioError
from engine.planning import plan_link_decode, plan_link_encode
from ui import state

PARAM = "plan"
TAKEN = "fg_plan_link_taken"
"""Session state: the last ``plan`` parameter read or written (a link is applied once)."""
MADE = "fg_plan_link_made"
"""Session state: the parameter of the form the stored plan was made from."""
PENDING = "fg_plan_link_pending"
"""Session state: the parameter a link filled the form with, until a plan is made (kept in the address)."""
KEYS = {
    "rps": "plan_target",
    "hw": "plan_hardware",
    "modes": "plan_modes",
    "tp": "plan_tp",
    "pp": "plan_pp",
    "ep": "plan_ep",
    "budget": "plan_budget",
    "power": "plan_power_budget",
    "window": "plan_window",
    "sims": "plan_sims",
    "rule": "plan_rule",
    "within": "plan_attainment",
    "mixed": "plan_mixed",
    "portfolio": "plan_portfolio",
    "by": "plan_objective",
    "risk": "plan_risk",
    "margin": "plan_margin",
}
"""Each field of the link (`engine.planning.plan_link.FIELDS`) and the form's widget key."""


FORM_FOR = "fg_plan_form_for"
"""The (preset, model) the form's scenario-dependent fields were filled for (`ui.planner._follow_scenario`)."""


def initial(key: str, **first: Any) -> dict[str, Any]:
    """A form widget's initial value (`value=`, `default=` or `index=`), given only while the session
    holds none for `key`: a link's values (`take`) are set in the session first, and a widget given both
    made Streamlit log a warning with a stack trace on the server ("created with a default value but
    also had its value set via the Session State API")."""
    return {} if key in st.session_state else first


def take(chips: Callable[[], Collection[str]]) -> None:
    """A new ``plan`` parameter into the form (`pending` says it waits for a click on Plan); `chips`
    gives the ids its hardware field may name (asked only when a new parameter is there: every
    rerun of the page comes through here)."""
    ss, qp = st.session_state, st.query_params
    text = str(qp[PARAM]) if PARAM in qp else None
    if text is None or text == ss.get(TAKEN):
        return
    ss[TAKEN] = text
    if not text.strip(";"):  # `?plan=`: no field, nothing to fill in
        del qp[PARAM]
        return
    try:
        values = plan_link_decode(text, chips())
    except ScenarioError as exc:
        state.notify(f"The link's plan could not be used: {exc}. The form keeps its values.", key="link:plan")
        del qp[PARAM]
        return
    for name, value in values.items():
        ss[KEYS[name]] = value
    ss[PENDING] = text
    ss.pop(FORM_FOR, None)  # the link's values are the form's now, whatever preset it was filled for


def pending() -> None:
    """Under the form, while a link's values wait in it: what they are and that Plan runs them."""
    if st.session_state.get(PENDING) is None:
        return
    refused = " The link's scenario could not be used (said above): the plan would be the preset's." * bool(
        st.session_state.get(state.LINK_REFUSED)
    )
    st.info(
        "The form holds a shared plan's request: press **Plan** to run it (the Work line above says how much "
        "it may take)." + refused,
        icon=":material/link:",
    )


def remember() -> None:
    """The submitted form (the values the plan now made was made from) as the link's parameter."""
    ss = st.session_state
    ss[MADE] = plan_link_encode({name: ss[key] for name, key in KEYS.items() if key in ss})
    ss.pop(PENDING, None)


def show(current: bool) -> None:
    """The address carries the stored plan's parameter when `current` (that plan is the current
    scenario's), else a link's parameter still waiting in the form (`PENDING`), else none."""
    ss, qp = st.session_state, st.query_params
    made: Any = ss.get(MADE)
    want = made if current and isinstance(made, str) and ss.get(PENDING) is None else ss.get(PENDING)
    if isinstance(want, str):
        if qp.get(PARAM) != want:
            qp[PARAM] = want
        ss[TAKEN] = want
    elif PARAM in qp:
        del qp[PARAM]
