"""The live strip's small TTFT CDF in the sidebar (`ui.layout`), beside the headline figures."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ui.charts import ACCENT, LEGEND_ROW_PX, POOL_COLORS, _log_ok, class_palette


def _short_ms(ms: float) -> str:
    """A decade tick's duration in few characters: '100 ms', '1 s', '1000 s'."""
    return f"{ms:g} ms" if ms < 1000 else f"{ms / 1000:g} s"


def strip_cdf(frame: pd.DataFrame, target_ms: float | None, percentile: float | None) -> go.Figure:
    """The live strip's small TTFT CDF; several classes in Results' colours, named in a legend under it
    (three unnamed curves, one red as the SLO lines are, read as nothing: a review)."""
    fig = go.Figure()
    names = [str(n) for n in dict.fromkeys(frame["class"])] if len(frame) else []
    several = len(names) > 1
    palette = class_palette(names)
    for name, rows in frame.groupby("class", sort=False):
        fig.add_trace(
            go.Scatter(
                x=rows["latency_ms"],
                y=rows["fraction"],
                name=str(name),
                mode="lines",
                line_shape="hv",
                line={"color": palette.get(str(name), POOL_COLORS[0])},
            )
        )
    if target_ms:
        fig.add_vline(x=target_ms, line={"dash": "dash", "color": ACCENT, "width": 1.5})
        # an unseen point at the target, so the axis reaches it (a 1,000 ms target sat on the edge of
        # an axis ending at 800 ms, where it read as 800: a review)
        fig.add_trace(
            go.Scatter(
                x=[target_ms],
                y=[0.0],
                mode="markers",
                marker={"opacity": 0},
                showlegend=False,
                hoverinfo="skip",
            )
        )
    if percentile:
        fig.add_hline(y=percentile / 100, line={"dash": "dot", "color": ACCENT, "width": 1})
    log = _log_ok(frame["latency_ms"])
    # a linear axis's thousands separated ('1,000 ms', it read '1000 ms': a review)
    fig.update_xaxes(
        title=None,
        type="log" if log else "linear",
        ticksuffix="" if log else " ms",
        tickfont={"size": 10},
        tickformat="" if log else ",~r",
    )
    if log:  # decades in the unit that reads shortest: 100 ms, 1 s, 10 s (a sidebar is narrow)
        v = np.append(
            frame["latency_ms"].to_numpy(dtype=float), target_ms or np.nan
        )  # (the target's decade too)
        v = v[np.isfinite(v) & (v > 0)]
        ticks = [10.0**k for k in range(math.floor(math.log10(v.min())), math.ceil(math.log10(v.max())) + 1)]
        fig.update_xaxes(tickvals=ticks, ticktext=[_short_ms(t) for t in ticks])
    fig.update_yaxes(title=None, range=[0, 1.02], tickformat=".0%", tickfont={"size": 10})
    # the sidebar holds one legend entry a row: a row each under the tick labels, anchored to the canvas's
    # foot (placed under the plot at two rows for four entries, it covered '100 ms' and '1 s': a review)
    legend_px = LEGEND_ROW_PX * len(names) if several else 0
    fig.update_layout(
        height=170 + legend_px,
        margin={"l": 0, "r": 0, "t": 22, "b": legend_px + (18 if several else 0)},
        showlegend=several,
        # the dashed lines named: a reader took the p90 line for p99 beside 'TTFT p99' (a review)
        title={
            "text": "TTFT CDF"
            + (
                f" · dashed: SLO {_short_ms(target_ms)} @ p{percentile:g}" if target_ms and percentile else ""
            ),
            "font": {"size": 12},
            "x": 0,
        },
        legend={"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "font": {"size": 10}},
    )
    return fig
