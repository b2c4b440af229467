"""What the "Over time" panel's charts share: the drawn bins (the window's, not the drain's), each as a
step to its bin's end, a line per pool, and the charts' look. Split from `ui.timeline` so that its power
chart (`ui.power_chart`) draws with them too."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go

from ui import charts


def style(fig: go.Figure, title: str, yaxis: str, *, percent: bool) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0, "xanchor": "left", "font": {"size": 15}},
        height=320,
        # room on the right for the last tick's label: a day's "24:00" was dropped on the charts
        # without a right-hand axis, which then seemed to end at 20:00 (a review)
        margin={"l": 10, "r": 30, "t": 40, "b": 10},
        legend={
            "orientation": "h",
            "title": None,
            "font": {"size": 11},
            "yanchor": "top",
            "y": -0.36,  # under the x axis's title: at -0.25 'prefill' sat over a day's 'hour of the day' (a review)
            "x": 0.0,
        },
        hovermode="x unified",
    )
    fig.update_xaxes(title="minute of the run", unifiedhovertitle={"text": "minute %{x:,.1f}"})
    fig.update_yaxes(title=yaxis, tickformat=".0%" if percent else None, rangemode="tozero")
    return fig


def kept(over: Mapping[str, Any]) -> int:
    """How many bins the charts draw: those that start inside the window. The drain after it (no new
    arrivals, the last requests finishing: the simulation's end, not the load's) ended each chart with
    a cliff, its short last bin half busy, and the SLO line a minute early."""
    return max(1, sum(1 for t in over["t_s"] if t < over["window_end_s"]))


def minutes(over: Mapping[str, Any]) -> list[float]:
    """The drawn bins' starts and, last, where the window ends (each step holds to its bin's end), minutes."""
    return [t / 60.0 for t in over["t_s"][: kept(over)]] + [over["window_end_s"] / 60.0]


def steps(over: Mapping[str, Any], values: Sequence[Any]) -> list[Any]:
    """The drawn bins' values, the last repeated at the window's end (`minutes`)."""
    drawn = list(values[: kept(over)])
    return [*drawn, drawn[-1]]


def per_pool(
    over: Mapping[str, Any], key: str, title: str, yaxis: str, hover: str, *, percent: bool = False
) -> go.Figure:
    fig = go.Figure()
    several = len(over[key]) > 1
    for i, (pool, values) in enumerate(over[key].items()):
        fig.add_trace(
            go.Scatter(
                x=minutes(over),
                y=steps(over, values),
                name=str(pool),
                mode="lines",
                # the first pool's line wider, under the others': two pools of two instances each drew
                # one line, the second hiding the first (a review)
                line={
                    "color": charts.POOL_COLORS[i % len(charts.POOL_COLORS)],
                    "width": (3.5 if i == 0 else 1.75) if several else 2,
                    # and dashed over it: a solid orange line on the blue one still hid it (a browser review)
                    "dash": "solid" if i == 0 else "dash",
                },
                line_shape="hv",
                hovertemplate=f"{pool}: {hover}<extra></extra>",
            )
        )
    return style(fig, title, yaxis, percent=percent)


__all__ = ["kept", "minutes", "per_pool", "steps", "style"]
