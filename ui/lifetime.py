"""The Planner page's specialisation-risk section: a lifetime's bill per period, GPU against ASIC.

Behind a toggle (the section costs a sizing of every period), it picks a shipped lifetime
(presets/lifetimes) and what becomes of a stranded dedicated fleet, runs it
(`engine.planning.run_lifetime`: the cost model's sizing per period, no simulation, cached) and
draws two charts (with the app's export menu): each period's bill per portfolio, stacked by part,
the capital written off in red; and the cost per million output tokens per period as grouped bars
(a period's figure holds for all its months), the lifetime's own as a dashed level. Periods are
named with their months. Above them, which portfolio is the cheaper over the life and by how much.
"""

from __future__ import annotations

import textwrap

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from engine.core import ScenarioError
from engine.planning import (
    LIFETIME_SIZING_NOTE,
    LifetimeResult,
    lifetime_assumed_price_notes,
    lifetime_headline,
    lifetime_names,
    lifetime_precision_notes,
    load_lifetime,
    run_lifetime,
)
from engine.scenario import load_preset
from ui import export, tables
from ui.text import plain, sentence

PART_STYLE = {  # part column: legend name, colour
    "prefill_usd": ("prefill chips", "#4e79a7"),
    "decode_usd": ("decode chips (flexible, fallback)", "#76b7b2"),
    "dedicated_capital_usd": ("dedicated capital (depreciation)", "#f28e2b"),
    "dedicated_running_usd": ("dedicated hosting and energy", "#edc948"),
    "written_off_usd": ("capital written off", "#c0392b"),
}
LINE_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1")


def period_labels(periods: pd.DataFrame, width: int | None = None) -> list[str]:
    """Each row's period named with its months: 'MoE 235B<br>months 12-24'; `width`: its name wrapped to
    lines of about that many characters (under a group of bars, where a long name was slanted and cut)."""
    out = [
        f"{p}<br>months {s:g}–{s + m:g}"
        for p, s, m in zip(periods["period"], periods["start_month"], periods["months"], strict=True)
    ]
    return (
        ["<br>".join(w for line in t.split("<br>") for w in textwrap.wrap(line, width)) for t in out]
        if width
        else out
    )


def bill_chart(res: LifetimeResult) -> go.Figure:
    """Each period's bill per portfolio (grouped under the period), stacked by part; the write-off in red."""
    p = res.periods
    # each period's name wrapped under its two bars and kept level: slanted, 'MoE 671B, FP4, long prompts'
    # ran past the chart and under the legend at 1,100 and 1,280 px (a review)
    # as wide as the periods leave room for: at ten characters a three-period bill's labels ran to five
    # lines (a browser review)
    x = [period_labels(p, width=max(10, 90 // max(p["period"].nunique(), 1))), list(p["portfolio"])]
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
        xaxis_tickangle=0,
        height=500,
        legend={"orientation": "h", "y": -0.6},
        margin={"t": 50, "b": 10},
    )
    return fig


def unit_cost_chart(res: LifetimeResult) -> go.Figure:
    """Cost per million output tokens per period, a bar per portfolio grouped under the period (the
    figure holds for the period's months, so no line slopes between them); the lifetime's as a dashed level."""
    fig = go.Figure()
    for i, (name, rows) in enumerate(res.periods.groupby("portfolio", sort=False)):
        colour = LINE_COLOURS[i % len(LINE_COLOURS)]
        x = period_labels(rows)
        fig.add_bar(
            x=x,
            y=rows["usd_per_million_tokens"],
            name=str(name),
            marker_color=colour,
            text=[f"${v:.2f}" for v in rows["usd_per_million_tokens"]],
            textposition="outside",
            hovertemplate="%{x}: $%{y:.3f} per M tokens<extra>" + str(name) + "</extra>",
        )
        total = float(res.totals.loc[res.totals["portfolio"] == name, "usd_per_million_tokens"].iloc[0])
        fig.add_scatter(  # the whole life's figure as a dashed level, named in the legend
            x=x,
            y=[total] * len(rows),
            name=f"{name}, whole life: ${total:.3f}",
            mode="lines",
            line={"color": colour, "dash": "dash", "shape": "hvh"},
            hovertemplate=f"{name}, whole life: ${total:.3f} per M tokens<extra></extra>",
        )
    fig.update_layout(
        barmode="group",
        title="Cost per million output tokens, per period",
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
    st.markdown(f"**{plain(lifetime_headline(res))}**")
    cols = st.columns(len(res.totals))
    for col, (_, t) in zip(cols, res.totals.iterrows(), strict=True):
        col.metric(
            f"{t['portfolio']}: $ per M output tokens, {lt.months:g} months",
            f"${t['usd_per_million_tokens']:.3f}",
        )
        col.caption(plain(_capital_line(res, t)))
    base = load_preset(lt.base)  # what an export's metadata names: the lifetime's base scenario
    left, right = st.columns(2)
    with left:
        export.chart(bill_chart(res), base, f"lifetime-{name}-bill", title="Bill per period, by part")
    with right:
        export.chart(
            unit_cost_chart(res), base, f"lifetime-{name}-unit-cost", title="Cost per million output tokens"
        )
    # (the run's summary sentence, `lifetime_summary`, is `lifetime`'s: here the bold headline and the two
    # cards above say it; under the charts it read a third time, a review)
    st.caption(
        LIFETIME_SIZING_NOTE
    )  # the engine's own text (not a user's): its `fengong plan` renders as code
    # a flexible chip's narrower weights through a wider path; the prices the catalog assumes
    for note in lifetime_precision_notes(res) + lifetime_assumed_price_notes(res):
        st.caption(plain(sentence(note)) + ".")
    with st.expander("Every period of every portfolio", icon=":material/table_rows:"):
        st.dataframe(
            _table(res.periods), hide_index=True, width="stretch", column_config=tables.LIFETIME_PERIODS
        )


def _capital_line(res: LifetimeResult, t: pd.Series) -> str:
    """What became of a portfolio's dedicated capital: written off (when, how much), or the book
    value left at the end (its chips kept idle or still serving); for a portfolio without dedicated
    chips, that it has none."""
    if t["written_off_usd"] > 0:
        rows = res.periods[
            (res.periods["portfolio"] == t["portfolio"]) & (res.periods["written_off_usd"] > 0)
        ]
        return f"${t['written_off_usd']:,.0f} of capital written off at month {rows['start_month'].iloc[0]:g}"
    if t["book_value_end_usd"] > 0:  # idle only where the last period's dedicated chips serve nothing
        last = res.periods.loc[res.periods["portfolio"] == t["portfolio"], "dedicated"].iloc[-1]
        state = "kept idle" if str(last).startswith("kept idle") else "still serving"
        return (
            f"${t['book_value_end_usd']:,.0f} of book value left at month {res.lifetime.months:g} ({state})"
        )
    if t["dedicated_capital_usd"] > 0:
        return "dedicated capital fully depreciated over the life"
    return "no dedicated chips: nothing to strand"


def _table(periods: pd.DataFrame) -> pd.DataFrame:
    """The periods as shown, in the order of `tables.LIFETIME_PERIODS` (its labels and formats)."""
    return periods[[c for c in tables.LIFETIME_PERIODS if c in periods]]
