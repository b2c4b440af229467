"""The Planner's two Pareto charts: cost (by the plan's objective) against goodput, and goodput per chip
against tokens/s per user.

Every simulated run is a point labelled with its P:D split where the label fits, the chosen one
starred; the frontiers hold passing runs only (`engine.planning.frontier`): a run that misses an SLO
is a grey cross beside them, never a point of the trade-off. A click on a point loads that
deployment as the session's scenario (`ui.plan_verdict.load_run`). Moved out of `ui.planner` (596
lines) unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from engine.planning import OBJECTIVE_COLUMNS, OBJECTIVES, off_frontier_text, passing_frontiers
from ui import export, plan_state, state
from ui.plan_labels import label_sides
from ui.plan_verdict import band_text as _pm
from ui.plan_verdict import load_run as _load
from ui.text import plain

PICKED = "fg_plan_picked"
"""Each chart's selected run at the last rerun (`_picked`)."""
CHOSEN = "#c0392b"
MISSES = "#9e9e9e"


# --- charts ----------------------------------------------------------------------------------


LOG_SPAN = 8.0
"""The span of x (largest over smallest) past which a frontier chart's x axis is logarithmic: a MoE plan's
costs ran from $36 to $640/h and every candidate worth weighing sat in a few pixels at the left (a
planner's review)."""
LOG_AXIS = {"type": "log", "tickformat": ",~r", "dtick": "D2"}
"""That axis, labelled at 2 and 5 of each decade: every digit's label ran together ('80 90 100': a look)."""


def pareto_chart(
    runs: pd.DataFrame,
    x: str,
    y: str,
    frontier: str,
    *,
    title: str,
    x_title: str,
    y_title: str,
    height: int = 480,
) -> go.Figure:
    """Every run as a point, the frontier of passing runs as a line, the chosen run starred.

    Runs that meet every SLO are coloured by mode; runs that miss one are grey crosses, unlabelled
    and off the line (`runs[frontier]` is expected to hold passing runs only: `passing_frontiers`).
    A run on a chip without a profile fitted under the scenario's stack (`calibrated` false) is an
    open marker with its own legend entry; its hover names the chip, the basis and the error.
    """
    fig = go.Figure()
    rows = runs.replace([np.inf, -np.inf], np.nan).dropna(subset=[x, y])
    front = rows[rows[frontier]].sort_values(x)
    if len(front) > 1:  # one point draws no line: its legend entry stood for nothing drawn (a browser review)
        dotted = {"mode": "lines", "line": {"color": "gray", "dash": "dot"}, "hoverinfo": "skip"}
        fig.add_scatter(x=front[x], y=front[y], name="Pareto frontier", **dotted)
    hover = (
        "<b>%{customdata[1]}</b> %{customdata[2]}<br>$%{customdata[3]:,.2f}/h, "
        "goodput %{customdata[4]:,.2f} req/s<br>"
        + f"{x_title}: "
        + "%{x:,.3g}<br>"
        + f"{y_title}: "
        + "%{y:,.3g}<br>%{customdata[5]}<extra>run %{customdata[0]}</extra>"
    )
    if "calibrated" in rows:
        sure = rows["calibrated"].fillna(True).astype(bool)
        pairs = rows.reindex(columns=["throughput_fall", "throughput_rise"]).itertuples(index=False)
        said = (
            rows["calibration"].fillna("") + [_pm(tuple(p)) for p in pairs] if "calibration" in rows else ""
        )
    else:  # a plan from before calibration marks: every point as calibrated, nothing said
        sure, said = pd.Series(True, index=rows.index), ""
    rows = rows.assign(_sure=sure, _said=said)

    def data(sub: pd.DataFrame) -> np.ndarray:
        return np.stack(
            [sub["run"], sub["shape"], sub["split"], sub["usd_per_hour"], sub["goodput_rps"], sub["_said"]],
            axis=1,
        )

    passing = rows["passes"].astype(bool)
    labelled = rows[rows[frontier].astype(bool) | rows["chosen"].astype(bool)]
    log_x = _log_axis(rows[x])
    # the axes' extent: every point drawn; where the labels go judged on the axis as drawn
    sides = label_sides(_as_drawn(labelled, x, log_x), x, y, markers=_as_drawn(rows, x, log_x))

    def place(i: Any) -> str:
        return sides.get(i) or "top center"

    _misses(fig, rows[~passing], x, y, data, hover)  # first: under the passing points
    for mode, symbol, color in (("colocated", "circle", "#1f77b4"), ("disaggregated", "diamond", "#e67e22")):
        for calibrated in (True, False):
            sub = rows[(rows["mode"] == mode) & passing & (rows["_sure"] == calibrated)]
            if sub.empty:
                continue
            fig.add_trace(
                go.Scatter(
                    x=sub[x],
                    y=sub[y],
                    mode="markers+text",
                    text=sub["split"].where(_labelled(sub, sides), ""),
                    textposition=sub.index.map(place).tolist(),
                    name=f"{mode}, meets SLOs" + ("" if calibrated else ", uncalibrated chip"),
                    marker={
                        "symbol": symbol if calibrated else f"{symbol}-open",
                        "size": 11,
                        "color": color,
                        "line": {"width": 2},
                    },
                    customdata=data(sub),
                    hovertemplate=hover,
                    cliponaxis=False,  # a label above the highest point is drawn whole, not cut at the axis
                )
            )
    best = rows[rows["chosen"]]
    if len(best):
        fig.add_trace(_star(best, x, y, data(best), hover, sides))
    fig.update_xaxes(title=x_title, **(LOG_AXIS if log_x else {}))
    fig.update_yaxes(title=y_title, rangemode="tozero", **_headroom(rows[y]))
    fig.update_layout(
        title={"text": title, "x": 0, "font": {"size": 15}},
        height=height,
        hovermode="closest",
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        legend={"orientation": "h", "yanchor": "top", "y": -0.3, "x": 0},  # clears the x title, wrapped
    )
    return fig


def _labelled(sub: pd.DataFrame, sides: dict[Any, str]) -> np.ndarray:
    """Which of `sub`'s points carry their label: those `label_sides` placed, but the chosen one, whose
    label its star carries."""
    placed = np.array([sides.get(i) is not None for i in sub.index], dtype=bool)
    return placed & ~sub["chosen"].astype(bool).to_numpy()


def _headroom(ys: pd.Series) -> dict[str, Any]:
    """A y axis from 0 with room above the highest point for its label: labels above it crowded the title
    and were cut (a browser review)."""
    top = float(ys.astype(float).max()) if len(ys) else 0.0
    return {"range": [0, top * 1.15]} if top > 0 and np.isfinite(top) else {}


def _log_axis(xs: pd.Series) -> bool:
    """Whether a frontier chart's x axis is logarithmic: its values span `LOG_SPAN` or more."""
    v = xs.astype(float)
    return bool(len(v)) and float(v.min()) > 0 and float(v.max()) >= LOG_SPAN * float(v.min())


def _as_drawn(f: pd.DataFrame, x: str, log_x: bool) -> pd.DataFrame:
    """`f` with its x column as the axis draws it (log10 on a log axis), for placing labels."""
    return f.assign(**{x: np.log10(f[x].astype(float))}) if log_x else f


def _misses(
    fig: go.Figure,
    misses: pd.DataFrame,
    x: str,
    y: str,
    data: Callable[[pd.DataFrame], np.ndarray],
    hover: str,
) -> None:
    """The runs that miss an SLO, drawn before the passing ones so that they lie under them: a grey
    cross drawn over a frontier point made it read as failing (a review)."""
    for calibrated in (True, False):
        sub = misses[misses["_sure"] == calibrated]
        if len(sub):
            fig.add_trace(
                go.Scatter(
                    x=sub[x],
                    y=sub[y],
                    mode="markers",
                    name="misses an SLO" + ("" if calibrated else ", uncalibrated chip"),
                    marker={"symbol": "x" if calibrated else "x-open", "size": 9, "color": MISSES},
                    customdata=data(sub),
                    hovertemplate=hover.replace("<extra>", "<br>misses an SLO<extra>"),
                    legendrank=900,  # listed after the passing points
                )
            )


def _star(
    best: pd.DataFrame, x: str, y: str, data: np.ndarray, hover: str, sides: dict[Any, str] | None = None
) -> go.Scatter:
    """The chosen run's star, with its label where `sides` (`label_sides`) placed one, set off by the star's
    size: the point's own label, beneath it, was hidden by it (a browser review). It answers hover and click
    itself: with `hoverinfo="skip"` a click went through it to whatever lay beneath, a failing colocated run
    at the same cost and goodput, which was then loaded as "the choice" (a walkthrough)."""
    sides = sides or {}
    text = [str(best.at[i, "split"]) if sides.get(i) else "" for i in best.index]
    return go.Scatter(
        x=best[x],
        y=best[y],
        mode="markers+text" if any(text) else "markers",
        text=text if any(text) else None,
        textposition=[sides.get(i) or "top center" for i in best.index],
        cliponaxis=False,
        # risk-aware, the choice is the cheapest that still passes with slower chips, not the cheapest
        # passing point on the chart (the legend's "cheapest passing" sat beside cheaper passing runs)
        name="chosen (the verdict's)",
        marker={"symbol": "star", "size": 20, "color": CHOSEN},
        customdata=data,
        hovertemplate=hover.replace("<extra>", "<br><b>chosen</b><extra>"),
    )


def _picked(events: list[Any]) -> int | None:
    """The run the user just clicked on either chart: of the charts' selections, one that changed
    since the last rerun. A chart keeps its selection, so the first chart's older click had shadowed
    every later click on the second (a walkthrough: a click there loaded nothing)."""
    now = [selected_run(e) for e in events]
    before = st.session_state.get(PICKED) or [None] * len(now)
    st.session_state[PICKED] = now
    return next((r for r, b in zip(now, before, strict=False) if r is not None and r != b), None)


def selected_run(event: Any) -> int | None:
    """The run number of the point a chart selection event picked, if any: of points picked together
    (drawn one over another), the one drawn on top, the last trace's (the chosen star over a run at the
    same cost and goodput)."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for p in sorted(points, key=lambda q: -int(q.get("curve_number", 0) or 0)):
        data = p.get("customdata")
        if data:
            return int(float(data[0]))
    return None


X_TITLES = {
    "usd_per_hour": "cost ($/h)",
    "usd_per_million_tokens": "cost ($ per million output tokens)",
    "chips": "chips",
    "power": "mean power (kW)",
}
"""The cost frontier's x axis per objective."""
CHART_NAMES = {
    "usd_per_hour": "Cost per hour",
    "usd_per_million_tokens": "Cost per million output tokens",
    "chips": "Chips",
    "power": "Mean power",
}
"""The cost frontier's title per objective: what it plots ('Lowest power against goodput' read as the form's
choice: a browser pass)."""


def _window_text(seconds: float | None) -> str:
    """Which runs the points are: the planning window's, where the verdict quotes full-length runs ('can differ
    a little' stood beside a choice at $1.49 per M on its point and $1.26 in the verdict: a browser review)."""
    if seconds is None or not math.isfinite(seconds):
        return ""
    return (
        f" Each point is a run over the planning window ({seconds:,.0f} s measured); the verdict above quotes "
        "each pick's full-length run, so its figures differ from its point's, a cost per token most: a short "
        "window bills the drain after it over fewer tokens."
    )


def plan_facts(p: Any, key: tuple[Any, ...]) -> str:
    """A plan's request and choice in a line, for its charts' exports: 'plan: 16 req/s; chips h100-sxm, h200,
    b200; rule percentile; by cost per hour; chose b200 tp1 -> b200 tp1 3P:1D' (an exported frontier named
    the preset alone, so it could not be tied to its inputs: a review)."""
    space = key[2] if len(key) > 2 else None
    chips = ", ".join(getattr(space, "hardware", None) or ()) or "the scenario's"
    rule = key[3] if len(key) > 3 else "percentile"
    said = f"plan: {getattr(p, 'target_rps', 0):g} req/s; chips {chips}; rule {rule}"
    said += f"; by {OBJECTIVES.get(getattr(p, 'objective', ''), 'cost per hour')}"
    c = p.verdict.chosen if getattr(p, "verdict", None) is not None else None
    return said + (f"; chose {c['shape']} {c['split']}" if c else "; nothing chosen")


def frontier_charts(p: Any, key: tuple[Any, ...]) -> pd.DataFrame:
    """The plan's two frontiers (a click on a point, or the button, loads that deployment); the runs
    they drew."""
    st.caption(
        "Click a point to load that deployment as the current scenario. Coloured markers meet every SLO and "
        "the frontier joins the best of them; grey crosses miss an SLO. Open markers: a chip with no profile fitted "
        "under the scenario's serving stack (uncalibrated; hover for the basis and the band). Labels give "
        "the frontier points' P:D splits where they fit beside the chosen run's (mixed: a colocated pool; hover any "
        "point for its own). Goodput per chip counts the output tokens of "
        "requests within their SLO." + _window_text(getattr(p, "duration_s", None))
        # the chart's star sat at about 970 tokens/s per chip beside the table's 1,039 (a browser review)
    )
    objective = getattr(p, "objective", "usd_per_hour")  # the cost frontier follows the objective
    runs = passing_frontiers(p.runs, objective)
    cost = "power_kw" if objective == "power" else OBJECTIVE_COLUMNS[objective]  # kW, as the verdict
    runs = runs.assign(power_kw=runs["power_w"] / 1e3) if objective == "power" else runs
    frontiers = (  # x, y, frontier flag, title, axis titles, widget key
        (cost, "goodput_rps", "on_cost_frontier", f"{CHART_NAMES[objective]} against "
         "goodput", X_TITLES[objective], "goodput (req/s within SLO)", "plan_cost_frontier"),
        ("tokens_per_s_per_user", "goodput_tokens_per_s_per_chip", "on_throughput_frontier",
         "Goodput per chip against interactivity", "tokens/s per user (1 / mean TPOT)",
         "goodput tokens/s per chip", "plan_goodput_frontier"),
    )  # fmt: skip
    if off := off_frontier_text(runs, getattr(p, "risk_aware", True)):  # as the command line says it
        st.caption(plain(f"{off[0].upper()}{off[1:]}."))
    stale = plan_state.stale_plan()
    if p.best_run is not None and st.button(  # a star among close points is hard to hit: one click
        "Load the chosen deployment", key="fg-plan-load-choice", icon=":material/download:", disabled=stale
    ):
        _load(p, p.best_run, (*key, "chosen"))
    events = []
    # our export menu (the scenario, seed and version in the file) where the plan is the scenario's own
    sc = None if stale else state.scenario()
    facts = {"plan": plan_facts(p, key)}
    for col, (x, y, flag, title, x_title, y_title, chart_key) in zip(st.columns(2), frontiers, strict=True):
        with col:
            fig = pareto_chart(runs, x, y, flag, title=title, x_title=x_title, y_title=y_title)
            named = f"{title} at {getattr(p, 'target_rps', 0):g} req/s"
            events.append(
                export.chart(
                    fig, sc, chart_key, title=named, facts=facts, on_select="rerun", selection_mode="points"
                )
            )
    run = _picked(events)
    if run is not None and 0 <= run < len(p.runs) and not stale:
        _load(p, run, key)
    return runs
