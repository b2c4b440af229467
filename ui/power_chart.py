"""The "Over time" panel's power chart: each pool's mean draw per minute, with the limits it is held to.

A site cap, a pool's own cap and an edge site's budget are drawn as dashed lines (and, under a site
cap over several pools, the pools' sum it holds): power-capped-site's chart showed its pools' lines
and no 6 kW, and edge-offload's edge site sat at 0.04 kW at the foot of a kW axis with no 60 W
budget (a browser review). Under 1 kW at its highest the chart reads in W.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import plotly.graph_objects as go

from engine.scenario import Scenario
from ui import charts


def _limits(sc: Scenario) -> list[tuple[str, float, str]]:
    """(label, kW, colour) of each limit a run's chips are held to: the site's cap, each pool's own, the
    edge site's budget."""
    dep = sc.deployment
    out = []
    if dep.power_cap_kw is not None:
        out.append((f"site cap {dep.power_cap_kw:,.4g} kW", float(dep.power_cap_kw), "#5f6368"))
    for i, p in enumerate(dep.pools):
        if p.power_cap_kw is not None:
            color = charts.POOL_COLORS[i % len(charts.POOL_COLORS)]
            out.append((f"{p.name} cap {p.power_cap_kw:,.4g} kW", float(p.power_cap_kw), color))
    if dep.edge is not None:
        out.append(
            (f"edge budget {dep.edge.power_budget_w:,.4g} W", dep.edge.power_budget_w / 1e3, "#5f6368")
        )
    return out


def power_chart(over: Mapping[str, Any], sc: Scenario | None = None, *, per_pool: Any = None) -> go.Figure:
    """Mean power each pool's chips drew per minute (kW, or W where everything drawn is under 1 kW), with
    the scenario's limits (`_limits`) as dashed lines; `per_pool` draws the pools' lines
    (`ui.timeline._per_pool`, passed in: this module sits beside it)."""
    limits = _limits(sc) if sc is not None else []
    pools = over["power_kw"]
    total = [sum(kw) for kw in zip(*pools.values(), strict=True)]
    top = max([*total, *(kw for _, kw, _ in limits)], default=0.0)
    watts = 0.0 < top < 1.0
    scale, unit = (1e3, "W") if watts else (1.0, "kW")
    shown = {**over, "power_kw": {p: [v * scale for v in vals] for p, vals in pools.items()}}
    hover = f"%{{y:,.{0 if watts else 2}f}} {unit} (mean over the minute)"
    fig = per_pool(shown, "power_kw", "Power per minute", unit, hover)
    if sc is not None and sc.deployment.power_cap_kw is not None and len(pools) > 1:
        # what the site's cap holds: the pools together (their lines share one x, step for step)
        summed = [sum(ys) for ys in zip(*(list(t.y) for t in fig.data[: len(pools)]), strict=True)]
        fig.add_trace(
            go.Scatter(
                x=list(fig.data[0].x),
                y=summed,
                name="all pools",
                mode="lines",
                line_shape="hv",
                line={"color": "#5f6368", "width": 1.25},
                hovertemplate=f"all pools: {hover}<extra></extra>",
            )
        )
    for label, kw, color in limits:
        fig.add_hline(
            y=kw * scale,
            line={"dash": "dash", "color": color, "width": 1.25},
            annotation={"text": label, "font": {"size": 10, "color": color}},
            annotation_position="top left",
        )
    return fig


__all__ = ["power_chart"]
