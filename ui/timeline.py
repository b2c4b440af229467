"""The Results page's "Over the day" panel: a run with autoscaled pools, minute by minute.

Two charts from the summary's `autoscale.timeline` (the engine computes every number; this
module only draws): SLO attainment per minute, and instances per pool per minute, both with the
autoscalers' decisions marked (a scale-up where an instance was requested, a scale-down where one
began to drain). Above them, the run's figures: instance-hours, scale events, cold start, and the
requests that arrived while an instance was starting.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from engine.scenario import Scenario
from ui import charts, export

UP, DOWN = "#29b09d", "#ff8700"
"""Marks of scale-ups (an instance requested) and scale-downs (an instance draining)."""


def _marks(fig: go.Figure, events: list[Any], top: float) -> None:
    """A tick at the top of the plot for each scale event (colour: up or down), hover naming it."""
    for action, color, label in (
        ("request", UP, "scale-up requested"),
        ("drain", DOWN, "scale-down: draining"),
    ):
        rows = [(t, pool) for t, pool, a in events if a == action]
        if rows:
            fig.add_trace(
                go.Scatter(
                    x=[t / 60.0 for t, _ in rows],
                    y=[top] * len(rows),
                    mode="markers",
                    marker={
                        "symbol": "triangle-up" if action == "request" else "triangle-down",
                        "color": color,
                        "size": 9,
                    },
                    name=label,
                    customdata=[p for _, p in rows],
                    hovertemplate="%{customdata}: " + label + "<extra></extra>",
                )
            )


def _style(fig: go.Figure, title: str, yaxis: str, *, percent: bool) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0, "xanchor": "left", "font": {"size": 15}},
        height=320,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        legend={
            "orientation": "h",
            "title": None,
            "font": {"size": 11},
            "yanchor": "top",
            "y": -0.25,
            "x": 0.0,
        },
        hovermode="x unified",
    )
    fig.update_xaxes(title="minute of the run")
    fig.update_yaxes(title=yaxis, tickformat=".0%" if percent else None, rangemode="tozero")
    return fig


def attainment_chart(auto: dict[str, Any]) -> go.Figure:
    """SLO attainment of the requests arriving in each minute, with the scale events marked."""
    tl = auto["timeline"]
    minutes = [t / 60.0 for t in tl["t_s"]]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=minutes,
            y=tl["slo_attainment"],
            name="SLO attainment",
            mode="lines",
            line={"color": charts.CATEGORY_COLORS[0], "width": 2},
            line_shape="hv",
            hovertemplate="%{y:.1%} met their SLO<extra></extra>",
        )
    )
    _marks(fig, auto["events"], 1.04)
    # short axis titles: a long one runs past the plot's top into the chart's title (the panel's help says more)
    return _style(fig, "SLO attainment per minute", "met their SLO", percent=True)


def instances_chart(auto: dict[str, Any]) -> go.Figure:
    """Instances billed per pool (mean over each minute), with the scale events marked."""
    tl = auto["timeline"]
    minutes = [t / 60.0 for t in tl["t_s"]]
    fig = go.Figure()
    top = 1.0
    for i, (pool, values) in enumerate(tl["instances"].items()):
        top = max(top, max(values, default=0.0))
        fig.add_trace(
            go.Scatter(
                x=minutes,
                y=values,
                name=str(pool),
                mode="lines",
                line={"color": charts.POOL_COLORS[i % len(charts.POOL_COLORS)], "width": 2},
                line_shape="hv",
                hovertemplate=f"{pool}: " + "%{y:.2f} instances billed (mean over the minute)<extra></extra>",
            )
        )
    _marks(fig, auto["events"], top + 0.5)
    return _style(fig, "Instances per pool", "instances billed", percent=False)


def figures(auto: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The run's autoscaling figures: (label, value, help)."""
    pools = auto["pools"]
    hours = sum(p["instance_hours"] for p in pools.values())
    cold = max((p["cold_start_s"] for p in pools.values()), default=0.0)
    during, missed = auto["requests_during_cold_start"], auto["misses_during_cold_start"]
    return [
        (
            "Instance-hours",
            f"{hours:,.2f} h",
            "Autoscaled pools' instances billed, each from its request to its stop: "
            + ", ".join(
                f"{name} {p['instance_hours']:,.2f} h (peak {p['peak_instances']})"
                for name, p in pools.items()
            ),
        ),
        (
            "Scale-ups / downs",
            f"{auto['scale_ups']} / {auto['scale_downs']}",
            "Instances requested (or taken back while draining) / drained or cancelled.",
        ),
        (
            "Cold start",
            f"{cold:,.0f} s",
            "From request to serving: start-up + weights / load bandwidth + warm-up.",
        ),
        (
            "Misses while starting",
            f"{missed:,} of {during:,}",
            "Requests that missed their SLO, of those that arrived while an instance of an autoscaled pool "
            "was starting.",
        ),
    ]


def panel(summary: dict[str, Any], sc: Scenario, drawn: list[tuple[str, Any]]) -> None:
    """The panel, when the run has autoscaled pools (nothing otherwise); its charts join `drawn`."""
    auto = summary.get("autoscale")
    if not auto:
        return
    st.subheader(
        "Over the day: autoscaling",
        help="Per minute of the run: SLO attainment of the requests arriving in it, and each pool's instances "
        "(billed ones: starting instances count, as they are paid for). Triangles mark the autoscalers' "
        "decisions: up where an instance was requested, down where one began to drain.",
    )
    with st.container(horizontal=True, gap="small"):
        for label, value, help_ in figures(auto):
            st.metric(label, value, help=help_, border=True, width="content")
    c1, c2 = st.columns(2)
    for col, (title, fig, what) in zip(
        (c1, c2),
        (
            ("SLO attainment per minute", attainment_chart(auto), "slo_per_minute"),
            ("Instances per pool", instances_chart(auto), "instances_per_minute"),
        ),
        strict=True,
    ):
        drawn.append((title, fig))
        with col:
            export.chart(fig, sc, what)
