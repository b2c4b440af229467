"""The Advisor panel of the Results page: findings from a run, the specialisation test and each
phase's place on each chip's roofline (moved from ui/planner.py, which had grown past its size)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from engine import explain as ex
from engine.scenario import Scenario
from engine.serving import SimResult
from ui import tables
from ui.text import opening, plain

SEVERITY_STYLE = {
    "critical": (st.error, ":material/error:"),
    "warning": (st.warning, ":material/warning:"),
    "info": (st.info, ":material/info:"),
}
MONTHS_RANGE = (1.0, 120.0)
"""Months between model changes the specialisation test accepts."""


@st.cache_data(max_entries=16, show_spinner=False)
def _roofline(scenario_json: str) -> pd.DataFrame:
    return ex.roofline_table(Scenario.model_validate_json(scenario_json))


def _failed(what: str, exc: Exception) -> None:
    """Show that one report could not be computed, keeping the rest of the page."""
    st.error(f"{what} could not be computed: {type(exc).__name__}: {plain(exc)}", icon=":material/error:")


def advisor_panel(result: SimResult) -> Any:
    """Findings from a run, the specialisation test and the roofline table, for the Results page.

    Everything is computed from the run's result (no simulation); the roofline table is cached
    per scenario. The findings show; the two longer reports are in expanders. A report that
    fails says so in its place instead of taking the page down. Returns the findings' slot, which
    `findings_at_the_edge` fills again once the run's spread is known.
    """
    with st.container(key="fg-advisor"):
        st.subheader(
            "Advisor", help="Statements that follow from this run's numbers, each with the figures behind it."
        )
        slot = st.empty()
        if not result.summary["requests"]["total"]:  # no work to judge (`fengong advise` refuses it too)
            slot.caption("No request arrived in the window: there is no work to advise on.")
            return slot
        try:
            found = ex.findings(result)
        except Exception as exc:  # the engine is the project's code: show the failure, keep the page
            _failed("The findings", exc)
            found = []
        with slot.container():
            _show(found, "")
        _more(result)
    return slot


def findings_at_the_edge(slot: Any, result: SimResult, slower: Any) -> None:
    """The findings again in their slot, each class that passes as modelled but not with every chip at
    its band's pessimistic edge (`slower`, the spread's slower run) a warning (`ex.at_the_edge`)."""
    if not result.summary["requests"]["total"]:  # said in its place already
        return
    try:
        found = ex.at_the_edge(
            ex.findings(result), slower, tops=ex.latency_tops(result.scenario, result.summary)
        )
    except Exception:  # the first drawing stands
        return
    with slot.container():
        _show(found, "-edge")


SAID_ABOVE = ("saturation",)
"""Findings' topics the Results page says at its top already: the unsustainable line stood twice, word for
word, as the red line over the figures and as the advisor's first finding (a browser review)."""


def _show(found: list[Any], suffix: str) -> None:
    """Each finding in its colour, with its numbers in a popover (`suffix`: keys of a second drawing), but
    those the page says above (`SAID_ABOVE`)."""
    for i, f in enumerate(x for x in found if x.topic not in SAID_ABOVE):
        show, icon = SEVERITY_STYLE[f.severity]
        # no wrap: a long finding keeps its Numbers button beside it, not under it
        with st.container(horizontal=True, gap="small", vertical_alignment="center", wrap=False):
            show(plain(opening(f.text)), icon=icon, width="stretch")
            if f.numbers:
                with st.popover(
                    "Numbers",
                    icon=":material/calculate:",
                    help="The figures behind it.",
                    key=f"fg:advisor-numbers-{i}{suffix}",
                ):
                    rows = pd.DataFrame(ex.number_rows(f.numbers), columns=["figure", "value"])
                    st.dataframe(rows, hide_index=True, width="stretch")
        if (
            "Strategy page" in f.text
        ):  # where the finding sends you, a click away (plain text before: a review)
            st.page_link(
                "app_pages/strategy.py", label="Open the Strategy page", icon=":material/call_split:"
            )


def _more(result: SimResult) -> None:
    """The specialisation test and the roofline table, in expanders."""
    with st.expander("Should a phase get its own chip?", icon=":material/developer_board:"):
        months = st.number_input(
            "Months between model changes",
            value=ex.STABLE_MONTHS,
            step=1.0,
            format="%g",  # '12', not '12.00' (a browser check)
            key="advisor_months",
            help="How long the served model's computation stays the same.",
        )
        lo, hi = MONTHS_RANGE
        if not lo <= months <= hi:
            st.warning(
                f"Months between model changes: {months:,g} is not allowed: the allowed range is "
                f"{lo:g} to {hi:g}; the test uses {ex.STABLE_MONTHS:g}.",
                icon=":material/warning:",
            )
            months = ex.STABLE_MONTHS
        try:
            spec = ex.specialisation(result, months)
        except Exception as exc:
            _failed("The specialisation test", exc)
        else:
            for row in spec.to_dict("records"):
                show = st.success if row["verdict"] == "worth considering" else st.info
                show(plain(row["text"]), icon=":material/developer_board:")
            st.dataframe(
                tables.stepped(spec, tables.SPECIALISATION),
                hide_index=True,
                width="stretch",
                column_config=tables.SPECIALISATION,
            )
    with st.expander("Where each phase sits on each chip's roofline", icon=":material/speed:"):
        st.caption(
            "Prefill of the mean prompt and decode at the largest batch that fits KV memory, the batch "
            "limit and the TPOT target, each on the tensor-parallel group (of 1, 2, 4, 8 chips that hold "
            "the weights) that serves it at the lowest cost per token without missing its SLO unloaded; a "
            "chip none of them holds the weights on, on the fewest chips with pipeline stages (PP)."
        )
        try:
            table = _roofline(result.scenario.model_dump_json())
            st.dataframe(table, hide_index=True, width="stretch", column_config=tables.ROOFLINE)
        except Exception as exc:
            _failed("The roofline table", exc)
