"""The Hardware and About pages' charts: the roofline of a model on the catalog's chips, and the cost
model's predictions against the reference measurements. Moved out of `ui.charts` (599 lines)
unchanged; the shared layout is `ui.charts._layout`.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ui.charts import _layout

TIER_DASH = {"sram": "dot", "ddr": "dashdot"}
"""The dash of each memory tier's roof on the roofline (the main roof is solid, or dashed where
uncalibrated): each tier its own, so two tiers of one chip, in its colour, stay apart."""


ROOF_COLOURS = "#1f77b4 #e67e22 #2ca02c #9467bd #8c564b #e377c2 #17becf #bcbd22 #7f7f7f #d62728".split()  # noqa: SIM905
"""One colour per chip on the roofline, in turn."""


def roofline(
    curves: pd.DataFrame,
    points: pd.DataFrame,
    *,
    height: int = 460,
    uncalibrated: Collection[str] = (),
    partly: Collection[str] = (),
) -> go.Figure:
    """Each chip's achievable roofline, with the model's prefill (circles) and decode (diamonds) points;
    an `uncalibrated` chip's ceiling is dashed and named so in the legend (its fractions come by rule),
    a `partly` calibrated one's named so (a MoE model's experts at a shared factor).
    A chip with SRAM or DDR tiers draws a roof per tier (`TIER_DASH`), its main one named the HBM roof."""
    fig = go.Figure()
    for i, (chip, rows) in enumerate(curves.groupby("chip", sort=False)):
        color = ROOF_COLOURS[i % len(ROOF_COLOURS)]
        loose = chip in uncalibrated
        tiers = rows["roof"] if "roof" in rows else pd.Series(np.nan, index=rows.index)
        main = rows[tiers.isna()]
        # where the chip has SRAM or DDR tiers, its main roof is named for the memory it is
        name = f"{chip} HBM roof" if tiers.notna().any() else str(chip)
        fig.add_trace(
            go.Scatter(x=main["intensity_flops_per_byte"], y=main["attainable_tflops"], mode="lines",
                       name=f"{name} (uncalibrated)" if loose else f"{name} (partly calibrated)"
                       if chip in partly else name,
                       line={"color": color, "dash": "dash" if loose else "solid"}, legendgroup=str(chip),
                       hoverinfo="skip")
        )  # fmt: skip
        for tier, roof in rows[tiers.notna()].groupby(tiers[tiers.notna()], sort=False):  # SRAM, DDR roofs
            line = {"color": color, "dash": TIER_DASH.get(str(tier), "longdashdot"), "width": 1.5}
            x, y = roof["intensity_flops_per_byte"], roof["attainable_tflops"]
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=y,
                    mode="lines",
                    name=f"{chip} {str(tier).upper()} roof",
                    line=line,
                    legendgroup=str(chip),
                    hoverinfo="skip",
                )
            )
        pts = points[points["chip"] == chip]
        for phase, symbol in (("prefill", "circle"), ("decode", "diamond")):
            sub = pts[pts["phase"] == phase]
            fig.add_trace(
                go.Scatter(
                    x=sub["intensity_flops_per_byte"], y=sub["achieved_tflops"], mode="markers", name=f"{chip} {phase}",
                    marker={"symbol": symbol, "size": 10, "color": color, "line": {"width": 1, "color": "white"}},
                    legendgroup=str(chip), showlegend=False,
                    customdata=np.stack([sub["label"], sub["bound"], sub["time_ms"], sub["tokens_per_s"],
                                         sub["attainable_tflops"]], axis=1),
                    hovertemplate=f"<b>{chip}</b><br>" + "%{customdata[0]}<br>%{x:,.1f} FLOP/byte, %{y:,.0f} TFLOP/s per chip "
                    "(ceiling %{customdata[4]:,.0f})"
                    "<br>%{customdata[1]}-bound, %{customdata[2]:,.1f} ms, %{customdata[3]:,.0f} tokens/s<extra></extra>",
                )
            )  # fmt: skip
    fig.update_xaxes(title="arithmetic intensity (FLOP per byte of memory traffic)", type="log")
    # the line is the achievable roof, said under the chart: a longer title ran past the axis (a screenshot)
    fig.update_yaxes(title="TFLOP/s per chip (line: roof, ● ◆: reached)", type="log")  # (fits 1,100 px)
    # below the plot: eight chips' names in a row above it ran into the title
    fig = _layout(fig, "Roofline: prefill (●) and decode (◆) of the model", height, legend_below=True)
    # after the shared layout, which set both back ('closest' was overridden to 'x unified'); '×2' is the
    # chips of one instance, which the legend did not say (a browser review)
    return fig.update_layout(hovermode="closest", legend_title_text="chip × chips an instance:")


def validation(tab: pd.DataFrame, *, height: int = 460) -> go.Figure:
    """Predicted against measured, one point per reference measurement, with y = x and ±20% bands."""
    fig = go.Figure()
    tab = tab[(tab["measured"] > 0) & (tab["predicted"] > 0)]
    for kind, rows in tab.groupby("kind", sort=True):
        fig.add_trace(
            go.Scatter(
                x=rows["measured"], y=rows["predicted"], mode="markers", name=str(kind), marker={"size": 9},
                customdata=np.stack([rows["id"], rows["setup"], rows["point"], rows["error"], rows["unit"]], axis=1),
                hovertemplate="%{customdata[0]} %{customdata[1]}<br>%{customdata[2]}<br>measured %{x:,.1f}, predicted %{y:,.1f} %{customdata[4]}"
                "<br>error %{customdata[3]:+.1%}<extra></extra>",
            )
        )  # fmt: skip
    lo = float(min(tab["measured"].min(), tab["predicted"].min())) / 1.5 if len(tab) else 1.0
    hi = float(max(tab["measured"].max(), tab["predicted"].max())) * 1.5 if len(tab) else 10.0
    line = np.geomspace(lo, hi, 50)
    for f, dash, name in ((1.0, "solid", "y = x"), (1.2, "dot", "±20%"), (1 / 1.2, "dot", None)):
        fig.add_trace(go.Scatter(x=line, y=line * f, mode="lines", name=name or "", showlegend=name is not None,
                                 line={"dash": dash, "color": "gray", "width": 1}, hoverinfo="skip"))  # fmt: skip
    fig.update_xaxes(title="measured (ms or tokens/s)", type="log")
    fig.update_yaxes(title="predicted", type="log")
    fig.update_layout(hovermode="closest")
    # eight entries: beside the title they wrapped over it at 1,100 px (a review)
    return _layout(fig, "Cost model: predicted against measured", height, legend_below=True)
