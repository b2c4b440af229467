"""The failure drill on the Strategy page: the scenario's faults under each fallback policy.

A button runs `engine.explain.drill.fallback_drill` (every variant through the one cached simulate
wrapper, so a variant already simulated elsewhere is not run again; the table itself is cached by
the scenario's JSON) and draws SLO attainment per fallback, overall and per class, as grouped bars
above the table. The comparison stays on screen while the scenario is unchanged.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from engine.core import ScenarioError
from engine.explain import (
    class_attainment,
    degrade_note,
    drill_behind_lines,
    drill_ttft_text,
    fallback_drill,
    fault_notes,
    unchanged,
    unchanged_text,
)
from engine.scenario import Scenario
from ui import export, sim
from ui.charts import POOL_COLORS
from ui.tables import PERCENT_STEP, stepped
from ui.text import plain

SHOWN_KEY = "fg:drill"
"""Session key: the JSON of the scenario whose comparison is on screen."""

HELP = (
    "Runs this scenario on the same requests under each fallback that applies: none (what is lost is "
    "lost), colocated (decode instances serve whole requests while no prefill instance is up), degrade "
    "(shed lower classes and cap outputs while entry capacity is short: this scenario's settings if it "
    "enables them, else defaults), both, and spill (pinned classes overflow to every pool) where classes "
    "are pinned. docs/scheduling.md explains each."
)


@st.cache_data(max_entries=8, show_spinner=False)
def _drill(scenario_json: str) -> pd.DataFrame:
    return fallback_drill(Scenario.model_validate_json(scenario_json), run=sim.cached)


def attainment_bars(table: pd.DataFrame) -> go.Figure:
    """SLO attainment per fallback: all requests, then each class, as grouped bars."""
    long = class_attainment(table)
    fig = go.Figure(
        go.Bar(
            x=table["fallback"],
            y=table["slo_attainment"],
            name="all requests",
            marker={"color": "#555555"},
            hovertemplate="%{x}: %{y:.1%} of all requests met their SLO<extra></extra>",
        )
    )
    for i, (name, rows) in enumerate(long.groupby("class", sort=False)):
        fig.add_trace(
            go.Bar(
                x=rows["fallback"],
                y=rows["slo_attainment"],
                name=str(name),
                marker={"color": POOL_COLORS[i % len(POOL_COLORS)]},
                hovertemplate=f"%{{x}}: %{{y:.1%}} of {name} met its SLO<extra></extra>",
            )
        )
    fig.update_layout(
        barmode="group",
        height=300,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        title={"text": "SLO attainment by fallback", "x": 0, "xanchor": "left", "font": {"size": 15}},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1.0},
    )
    fig.update_yaxes(tickformat=".0%", range=[0, 1.02], title=None)
    return fig


def _columns(table: pd.DataFrame) -> dict[str, object]:
    cc = st.column_config
    config: dict[str, object] = {
        "fallback": cc.TextColumn("fallback"),
        "slo_attainment": cc.NumberColumn(
            "attainment",
            format="percent",
            step=PERCENT_STEP,
            help="Requests that met their SLO (rejected and failed ones miss).",
        ),
        "completed": cc.NumberColumn("completed", format="localized"),
        "rejected": cc.NumberColumn("rejected", format="localized"),
        "failed": cc.NumberColumn("failed", format="localized"),
        "ttft_p90_ms": cc.TextColumn(
            "TTFT p90 (ms)",
            help="Of completed requests; '≥ …, grows' where the variant falls behind its load: the figure grows "
            "with the run's length.",
        ),
        "usd_per_request": cc.NumberColumn(
            "$ / request", format="$%.6f", help="The whole bill over completed requests."
        ),
        "capped_requests": cc.NumberColumn(
            "capped", format="localized", help="Answers cut to degrade's max_output_tokens."
        ),
        "capped_tokens": cc.NumberColumn("tokens cut", format="localized"),
    }
    for col in table.columns:
        if col.startswith("slo_attainment."):
            name = col.removeprefix("slo_attainment.")
            config[col] = cc.NumberColumn(
                plain(name), format="percent", step=PERCENT_STEP, help=f"Attainment of class {plain(name)}."
            )
    return config


def fallback_comparison(scenario: Scenario) -> None:
    """A "Compare fallbacks" button; once pressed, the drill's bars and table for this scenario."""
    if not scenario.faults:
        st.caption("Add a fault to compare fallback policies on it.")
        return
    for note in fault_notes(scenario):  # a fault after the window, or more instances than its pool's
        st.warning(plain(note), icon=":material/warning:")
    key = scenario.model_dump_json()
    if st.button("Compare fallbacks", icon=":material/compare_arrows:", help=HELP, key="fg:drill:run"):
        st.session_state[SHOWN_KEY] = key
    if st.session_state.get(SHOWN_KEY) != key:
        return
    try:
        with st.spinner("Running each fallback on the same requests…", show_time=True):
            table = _drill(key)
    except ScenarioError as exc:
        st.error(f"The drill cannot run: {plain(exc)}", icon=":material/error:")
        return
    export.chart(attainment_bars(table), scenario, "fallbacks", title="Fallback policies under the fault")
    config = _columns(table)
    rows = table.to_dict("records")
    shown = table.assign(
        ttft_p90_ms=[drill_ttft_text(r) for r in rows],
        # the scenario's own row marked, as `drill` marks it: what every other page of it simulates
        fallback=[f"{r['fallback']} (as set)" if r.get("as_set") else r["fallback"] for r in rows],
    )
    # said under the table
    shown = shown.drop(columns=["ttft_grows", "shortfall_rps", "as_set"], errors="ignore")
    st.dataframe(stepped(shown, config), hide_index=True, column_config=config)  # type: ignore[arg-type]
    for line in drill_behind_lines(table):  # a TTFT set by the run's length, said (as `drill` says it)
        st.caption(plain(line[:1].upper() + line[1:]) + ".")
    same = unchanged(table)
    if same:
        st.caption(plain(unchanged_text(same)))
    if said := degrade_note(scenario, table["fallback"]):  # the form beside it reads degrade off (a review)
        st.caption(plain(said))
