"""The "Over time" panel's power chart: each pool's mean draw per minute, with the limits it is held to.

A site cap, a pool's own cap and an edge site's budget are drawn as dashed lines, and under a site cap
over several data-centre pools the sum it holds: power-capped-site's chart showed its pools' lines and
no 6 kW, and edge-offload's edge site sat at 0.04 kW at the foot of a kW axis with no 60 W budget (a
browser review). The chart reads in W where all it draws is under 1 kW; where the data centre draws
kilowatts, the edge site's pools and budget take a right-hand axis in W. A limit more than `FAR` times
what it holds is named above the chart instead of drawn (a 20 kW cap over 0.2 kW flattened the lines).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import plotly.graph_objects as go

from engine.scenario import Scenario
from ui import charts
from ui import minute_charts as mc


class Limit(NamedTuple):
    """A limit the run's chips are held to, as the chart draws it."""

    label: str
    kw: float
    color: str
    drawn_kw: float  # the most its pools drew together in a minute
    on_edge: bool  # the edge site's: on its axis where it has one
    note: str = ""  # said after the label on the chart


FAR = 3.0
"""A limit past this many times the most its pools drew is said, not drawn."""
GREY = "#5f6368"


def _edge_pools(over: Mapping[str, Any], sc: Scenario | None) -> set[str]:
    """The pools of the run that sit at the edge site (their power is the edge budget's, not a site cap's)."""
    if sc is None:
        return set()
    return {p.name for p in sc.deployment.pools if p.tier == "edge"} & set(over["power_kw"])


def _peak(over: Mapping[str, Any], names: set[str] | list[str]) -> float:
    """The most the pools `names` drew together in one drawn minute, kW."""
    series = [over["power_kw"][n][: mc.kept(over)] for n in names]
    return max((sum(v) for v in zip(*series, strict=True)), default=0.0)


def _limits(over: Mapping[str, Any], sc: Scenario, edge: set[str]) -> list[Limit]:
    """Each limit the run's chips are held to: the site's cap over the data-centre pools, each pool's own,
    the edge site's budget."""
    dep, names = sc.deployment, list(over["power_kw"])
    out = []
    if dep.power_cap_kw is not None:
        dc = [n for n in names if n not in edge]
        # a minute's mean under a cap is no headroom: each chip's clock holds it to its share while busy
        # (power-capped-site's 4.8 kW under its 6 kW read as 1.2 kW unused: a browser review)
        busy = ", each chip's share while busy"
        cap = float(dep.power_cap_kw)
        out.append(Limit(f"site cap {cap:,.4g} kW", cap, GREY, _peak(over, dc), False, busy))
    for p in dep.pools:
        if p.power_cap_kw is not None and p.name in over["power_kw"]:
            color = charts.POOL_COLORS[names.index(p.name) % len(charts.POOL_COLORS)]
            cap = float(p.power_cap_kw)
            out.append(Limit(f"{p.name} cap {cap:,.4g} kW", cap, color, _peak(over, [p.name]), False))
    if dep.edge is not None and edge:
        budget = dep.edge.power_budget_w
        out.append(Limit(f"edge budget {budget:,.4g} W", budget / 1e3, GREY, _peak(over, edge), True))
    return out


def _draw_limits(fig: go.Figure, limits: list[Limit], split: bool, scale: float) -> None:
    """Each limit a dashed line with its label, the edge site's on its own axis where it has one."""
    for lim in limits:
        y2 = split and lim.on_edge
        fig.add_hline(
            y=lim.kw * (1e3 if y2 else scale),
            yref="y2" if y2 else "y",
            line={"dash": "dash", "color": lim.color, "width": 1.25},
            annotation={"text": lim.label + lim.note, "font": {"size": 10, "color": lim.color}},
            annotation_position="top left",
        )


def power_chart(over: Mapping[str, Any], sc: Scenario | None = None) -> go.Figure:
    """Mean power each pool's chips drew per minute, with the limits they are held to (module doc)."""
    edge = _edge_pools(over, sc)
    every = _limits(over, sc, edge) if sc is not None else []
    limits = [lim for lim in every if lim.kw <= FAR * max(lim.drawn_kw, 1e-9)]
    far = [lim.label for lim in every if lim not in limits]
    main = [n for n in over["power_kw"] if n not in edge]
    top = max([_peak(over, main), *(lim.kw for lim in limits if not lim.on_edge)], default=0.0)
    split = bool(edge) and bool(main) and top >= 1.0  # kilowatts beside an edge site's watts: two axes
    watts = 0.0 < max(top, _peak(over, edge) if not split else 0.0) < 1.0
    scale, unit = (1e3, "W") if watts else (1.0, "kW")
    shown = {
        **over,
        "power_kw": {
            p: [v * (1e3 if p in edge and split else scale) for v in vals]
            for p, vals in over["power_kw"].items()
        },
    }
    fig = mc.per_pool(
        shown,
        "power_kw",
        "Power per minute",
        unit,
        f"%{{y:,.{0 if watts else 2}f}} {unit} (mean over the minute)",
    )
    for trace in fig.data:
        if split and trace.name in edge:
            trace.update(
                yaxis="y2", hovertemplate=f"{trace.name}: %{{y:,.0f}} W (mean over the minute)<extra></extra>"
            )
    dc = [t for t in fig.data if t.name in main]
    if sc is not None and sc.deployment.power_cap_kw is not None and len(dc) > 1:
        # what the site's cap holds: the data-centre pools together (their lines share one x, step for step)
        summed = [sum(ys) for ys in zip(*(list(t.y) for t in dc), strict=True)]
        fig.add_trace(
            go.Scatter(
                x=list(dc[0].x),
                y=summed,
                name="data-centre pools",
                mode="lines",
                line_shape="hv",
                line={"color": GREY, "width": 1.25},
                hovertemplate=f"data-centre pools: %{{y:,.{0 if watts else 2}f}} {unit}<extra></extra>",
            )
        )
    _draw_limits(fig, limits, split, scale)
    if split:  # the budget in view on its own axis (autorange left it on the top edge)
        hi = 1.15e3 * max([_peak(over, edge), *(lim.kw for lim in limits if lim.on_edge)])
        fig.update_layout(
            yaxis2={
                "title": "edge site (W)",
                "range": [0, hi],
                "overlaying": "y",
                "side": "right",
                "rangemode": "tozero",
                "showgrid": False,
                "tickformat": ",.0f",
            },
            margin={"r": 50},
        )
    if far:  # said, not drawn: a line far above flattens every pool's
        fig.update_layout(
            title={
                "text": "Power per minute<br><sup>"
                + ", ".join(f"{label} (far above)" for label in far)
                + "</sup>"
            }
        )
    return fig


__all__ = ["power_chart"]
