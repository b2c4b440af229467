"""What a preset teaches, shown where its results open, with one click to its counterpart.

Every shipped preset carries a `lesson` (what it demonstrates, with the figure that shows it)
and most a `counterpart` (the preset it is measured against: the same requests and seed, one
decision changed). The Results page opens with the lesson and a link to the Compare page with
A = the current scenario and B = the counterpart, through Compare's own URL parameters (`a`,
`b`), so the link can be opened in a new tab or shared. Lesson and counterpart may come from a
link or a file: both are shown as plain text, and a counterpart that is not a shipped preset
gets no link.
"""

from __future__ import annotations

import streamlit as st

from engine.scenario import Scenario, preset_names
from ui import state
from ui.text import plain

COMPARE_PAGE = "app_pages/compare.py"
PAIRED = "counterpart, this load"
"""Compare's choice of the counterpart preset serving the current scenario's load (`ex.with_load_of`)."""


def load_edited(sc: Scenario) -> bool:
    """Whether the scenario's load (workload, window, warm-up, seed) differs from its preset's."""
    base = state.preset(state.preset_name())
    return any(getattr(sc, f) != getattr(base, f) for f in ("workload", "duration_s", "warmup_s", "seed"))


def compare_params(counterpart: str, sc: Scenario | None = None) -> dict[str, str]:
    """Query parameters that open Compare with A = the session's scenario and B = `counterpart`, serving
    A's load where `sc` (A) changed it from its preset's: at the preset's own load the pair was unpaired (a
    review)."""
    b = PAIRED if sc is not None and load_edited(sc) else counterpart
    return {**state.link(), "a": "current", "b": b}


NAMED_PAGES = {
    "Strategy page": ("app_pages/strategy.py", "Open the Strategy page", ":material/call_split:"),
    "Planner": ("app_pages/planner.py", "Open the Planner", ":material/travel_explore:"),
}
"""Pages a lesson names by these words, linked under it."""


def banner(sc: Scenario) -> None:
    """The scenario's lesson (when it has one) and the link to compare it with its counterpart (whether or
    not it has one: an exported scenario drops the preset's lesson and keeps its counterpart, and the
    button went with the lesson: a round-trip review)."""
    preset = state.preset_name()
    if sc.lesson:
        _lesson(sc, preset)
    _compare_link(sc, preset)


def _lesson(sc: Scenario, preset: str) -> None:
    """The lesson, titled by whose it is, and the pages it names as links."""
    if sc.lesson != state.preset(preset).lesson:  # written in the scenario (or a link), not the preset's
        title = "This scenario's own lesson (as written in it; the figures below are your run's)"
    elif state.edited():
        title = (
            f"What the preset {plain(preset)} shows (before your changes; the figures below are your run's)"
        )
    else:
        title = "What this scenario shows"
    st.info(plain(sc.lesson), icon=":material/school:", title=title)
    for said, (page, label, icon) in NAMED_PAGES.items():  # a page the lesson sends you to, a click away
        if said in sc.lesson:  # (it read "the Strategy page's 'Compare fallbacks'" as plain text: a review)
            st.page_link(page, label=label, icon=icon)


def _compare_link(sc: Scenario, preset: str) -> None:
    """The button that opens Compare on the scenario and its counterpart preset, where it names one."""
    counterpart = sc.counterpart
    if counterpart and counterpart in preset_names() and counterpart != preset:
        st.page_link(
            COMPARE_PAGE,
            label=f"Compare with {plain(counterpart)}",
            icon=":material/compare_arrows:",
            query_params=compare_params(counterpart, sc),
            help="Opens Compare with A = this scenario and B = its counterpart preset, on the same requests (your "
            "workload, window and seed where you changed them).",
        )
