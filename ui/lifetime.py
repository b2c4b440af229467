"""The Planner page's specialisation-risk section: a lifetime's bill per period, GPU against ASIC.

Behind a toggle (the section costs a sizing of every period), it picks a shipped lifetime
(presets/lifetimes) and what becomes of a stranded dedicated fleet, runs it
(`engine.planning.run_lifetime`: the cost model's sizing per period, no simulation, cached) and
draws two charts: each period's bill per portfolio, stacked by part, the capital written off
in red; and the cost per million output tokens per period, the lifetime's own as a dashed line.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from engine.core import ScenarioError
from engine.planning import LifetimeResult, lifetime_names, lifetime_summary, load_lifetime, run_lifetime
from ui.text import plain

PART_STYLE = {  # part column: legend name, colour
    "prefill_usd": ("prefill chips", "#4e79a7"),
    "decode_usd": ("decode chips (flexible, fallback)", "#76b7b2"),
    "dedicated_capital_usd": ("dedicated capital (depreciation)", "#f28e2b"),
    "dedicated_running_usd": ("dedicated hosting and energy", "#edc948"),
    "written_off_usd": ("capital written off", "#c0392b"),
}
LINE_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1")


def bill_chart(res: LifetimeResult) -> go.Figure:
    """Each period's bill per portfolio (grouped under the period), stacked by part; the write-off in red."""
    p = res.periods
    x = [list(p["period"]), list(p["portfolio"])]
    fig = go.Figure()
    for col, (name, colour) in PART_STYLE.items():
        if not (p[col] > 0).any():
            continue
        fig.add_bar(
            x=x,
            y=p[col],
            name=name,
            marker_color=colour,
            hovertemplate="%{x}<br>" + name + ": $%{y:,.0f}<extra></extra>",
        )
    fig.update_layout(
        barmode="stack",
        title="Bill per period, by part",
        yaxis_title="USD per period",
        height=420,
        legend={"orientation": "h", "y": -0.25},
        margin={"t": 50, "b": 10},
    )
    return fig


def unit_cost_chart(res: LifetimeResult) -> go.Figure:
    """Cost per million output tokens per period for each portfolio; the lifetime's as a dashed line."""
    fig = go.Figure()
    for i, (name, rows) in enumerate(res.periods.groupby("portfolio", sort=False)):
        colour = LINE_COLOURS[i % len(LINE_COLOURS)]
        fig.add_scatter(
            x=rows["period"],
            y=rows["usd_per_million_tokens"],
            name=str(name),
            mode="lines+markers",
            line={"color": colour},
            hovertemplate="%{x}: $%{y:.3f} per M tokens<extra>" + str(name) + "</extra>",
        )
        total = float(res.totals.loc[res.totals["portfolio"] == name, "usd_per_million_tokens"].iloc[0])
        fig.add_scatter(  # the whole life's figure as a dashed level, named in the legend
            x=rows["period"],
            y=[total] * len(rows),
            name=f"{name}, whole life: ${total:.3f}",
            mode="lines",
            line={"color": colour, "dash": "dash"},
            hovertemplate=f"{name}, whole life: ${total:.3f} per M tokens<extra></extra>",
        )
    fig.update_layout(
        title="Cost per million output tokens",
        yaxis_rangemode="tozero",
        yaxis_title="USD per million output tokens",
        height=420,
        legend={"orientation": "h", "y": -0.25},
        margin={"t": 50, "b": 10},
    )
    return fig


@st.cache_data(max_entries=8, show_spinner="Sizing every period...")
def _run(name: str, stranded: str) -> LifetimeResult:
    lt = load_lifetime(name)
    return run_lifetime(lt.model_copy(update={"stranded": stranded}))


def section() -> None:
    """The specialisation-risk section: pick a lifetime, see its bill per period and its write-off.

    Drawn when its toggle is on: a lifetime sizes every period (about a second of CPU), which a Planner
    page opened for a plan should not wait for.
    """
    st.subheader("Specialisation risk over time", anchor="lifetime")
    shown = st.toggle(
        "Show how a portfolio with a chip designed for one model fares as the model changes",
        key="fg-lifetime-on",
        help="A schedule of model changes over months (docs/lifetime.md): GPUs re-sized every period "
        "against a portfolio that owns an ASIC bought for the first model, and the capital written off.",
    )
    if not shown:
        return
    names = lifetime_names()
    if not names:
        st.info("No lifetime presets are shipped.", icon=":material/info:")
        return
    c1, c2 = st.columns([3, 2])
    name = c1.selectbox("Lifetime", names, key="fg-lifetime")
    stranded = c2.segmented_control(
        "A dedicated fleet that serves nothing",
        ["write-off", "keep"],
        default="write-off",
        key="fg-lifetime-stranded",
        help="write-off: its remaining book value is charged at once, then it is gone; "
        "keep: kept idle, paying capital and hosting, in case a later model fits again",
    )
    try:
        res = _run(str(name), str(stranded or "write-off"))
    except ScenarioError as exc:
        st.error(f"Cannot run that lifetime: {plain(exc)}")
        return
    lt = res.lifetime
    st.caption(plain(lt.description))
    if lt.lesson:
        st.info(plain(lt.lesson), icon=":material/school:", title="What this lifetime shows")
    cols = st.columns(len(res.totals))
    for col, (_, t) in zip(cols, res.totals.iterrows(), strict=True):
        col.metric(
            f"{t['portfolio']}: $ per M output tokens, {lt.months:g} months",
            f"${t['usd_per_million_tokens']:.3f}",
            f"${t['written_off_usd']:,.0f} written off" if t["written_off_usd"] > 0 else None,
            delta_color="inverse",
        )
    left, right = st.columns(2)
    left.plotly_chart(bill_chart(res), key="fg-lifetime-bill")
    right.plotly_chart(unit_cost_chart(res), key="fg-lifetime-unit")
    st.markdown(plain(lifetime_summary(res)))
    with st.expander("Every period of every portfolio", icon=":material/table_rows:"):
        st.dataframe(_table(res.periods), hide_index=True, width="stretch")


def _table(periods: pd.DataFrame) -> pd.DataFrame:
    """The periods as shown: money rounded to dollars."""
    money = [c for c in periods if c.endswith("_usd")]
    return periods.assign(**{c: periods[c].round(0) for c in money})
