"""Plotly figures of the dashboard, built from the engine's presentation tables.

Figures carry no colours of their own where a theme can choose (Streamlit themes them for light
and dark when drawn with ``theme="streamlit"``); SLO targets are dashed lines in the app's
accent colour with a label, so a curve crossing one reads as a miss. Exports restyle a copy with
a print template (`ui.export`). Builders only draw: every number comes from `engine.explain.presentation`
or `engine.explain.previews`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engine.explain import ALL_CLASSES, OTHER_TARGETS, duration_text, usd_text
from ui.chart_axes import MS_LOG_AXIS, axis_unit, latency_axis, log_ticks, target_text
from ui.tables import changes

ACCENT = "#c0392b"
"""SLO lines and other targets (the theme's primary colour)."""

CATEGORY_COLORS = (
    "#0068c9",
    "#83c9ff",
    "#ff2b2b",
    "#ffabab",
    "#29b09d",
    "#7defa1",
    "#ff8700",
    "#ffd16a",
    "#6d3fc0",
    "#d5dae5",
)
"""Lines and bars without a colour of their own, in the app (`theme.chartCategoricalColors` in
.streamlit/config.toml, Streamlit's light default written down) and in exports (`ui.export`)."""

PAIR = ("#4e79a7", "#f28e2b")
ALL = ALL_CLASSES
"""Scenario A and B on the Compare page (distinguishable in light and dark, and for most colour blindness)."""

POOL_COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f")
"""Tableau 10 hues: one per pool, so a pool keeps its colour across its lines (light and dark themes)."""

METRIC_NAMES = {"ttft": "TTFT", "tpot": "TPOT", "max_tbt": "Largest gap (TBT)", "e2e": "E2E"}
METRIC_HELP = {
    "ttft": "Time to first token: arrival to the first output token, queueing and KV transfer included.",
    "tpot": "Time per output token: (completion − first token) / (output tokens − 1).",
    "max_tbt": "Each request's largest gap between two of its tokens: a decode step stalled by a prompt shows "
    "here, where the mean TPOT hides it (the TBT target Mooncake uses; docs/metrics.md).",
    "e2e": "End to end: arrival to completion.",
}


AXIS_BELOW_PX = 55
"""Room under a plot for its x tick labels and axis title, where a legend below it starts."""
LEGEND_ROW_PX = 22
"""Height of one row of a horizontal legend (11 px text)."""


def _layout(
    fig: go.Figure, title: str, height: int, legend: bool = True, legend_below: bool = False
) -> go.Figure:
    where = (
        {"yanchor": "top", "y": -0.25, "xanchor": "left", "x": 0.0}
        if legend_below
        else {"yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1.0}
    )
    fig.update_layout(
        title={"text": title, "x": 0, "xanchor": "left", "font": {"size": 15}},
        height=height,
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        showlegend=legend,
        legend={"orientation": "h", "title": None, "font": {"size": 11}, "traceorder": "normal", **where},
        hovermode="x unified",
    )
    fig.update_xaxes(dtick=1, selector={"type": "log"})
    fig.update_yaxes(dtick=1, selector={"type": "log"})
    return fig


SECONDS_HOVER = "at %{x:,.0f} s"
"""The unified hover's title on an axis of seconds ('at 3,640 s'; it read a bare 3640)."""


def _log_ok(values: pd.Series | np.ndarray) -> bool:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return len(v) > 1 and v.max() / v.min() > 30


LABEL_AXIS_PER_CHAR = 0.031
"""About how much of a half-page chart's x axis one character of an 11-pixel label covers on the
narrowest page the app is laid out for (1,100 px: about 5.5 px of a 180 px axis; 0.013, measured on a
wider page, let Compare's third-of-the-page TPOT chart cut 'A SLO 60 ms' at its right edge); a
third-of-the-page chart's axis is shorter by a third, so a character covers 1.5 times as much
(`cdf`'s `columns`). Wider pages only leave a label more room than it is given."""


LABEL_BACKGROUND = "rgba(240,240,240,0.95)"
"""A target label's background: the light grey the theme's white shows under a faint tint, but
opaque, so that where every place beside its line has a curve (`_label_place` found none clear)
the label reads over the curve instead of through it."""


def _label_place(
    curves: Sequence[tuple[np.ndarray, np.ndarray]],
    target: float,
    chars: int,
    lo: float | None,
    hi: float | None,
    log: bool,
    y0: float,
    columns: int = 2,
) -> tuple[float, str]:
    """Where a target's label goes so that no curve runs under it: (y, xanchor). Left of its line
    at the bottom first (where most curves have not started), then right of it, then higher up; where
    a curve runs under every place, on the side with room for it inside the axis (a label over a curve
    is read, one past the plot's edge is cut: Compare's 'A SLO 60 m')."""
    if lo is None or hi is None or not curves:
        return y0, "right"
    a, b = (math.log10(lo), math.log10(hi)) if log else (lo, hi)
    x = math.log10(target) if log else target
    width = chars * LABEL_AXIS_PER_CHAR * columns / 2 * (b - a)

    def inside(side: str) -> bool:
        return x - width >= a if side == "right" else x + width <= b

    def clear(y: float, side: str) -> bool:
        span = (x - width, x) if side == "right" else (x, x + width)
        if not inside(side):
            return False
        for frac, lat in curves:  # the curve's x over the label's height
            seg = np.interp([min(y, 1.0), min(y + 0.09, 1.0)], frac, lat)
            seg = np.log10(np.maximum(seg, 1e-9)) if log else seg
            if seg[1] >= span[0] and seg[0] <= span[1]:
                return False
        return True

    for y in (y0, y0 + 0.3, y0 + 0.6):
        for side in ("right", "left"):
            if clear(y, side):
                return y, side
    return y0, "right" if inside("right") or x - a >= b - x else "left"


def class_palette(names: Iterable[Any]) -> dict[str, str]:
    """One colour per class in turn (`POOL_COLORS`), all classes together in grey: the CDFs, their bands
    and the sidebar's small CDF colour a class alike."""
    classes = [str(n) for n in names if n != ALL]
    return {n: POOL_COLORS[i % len(POOL_COLORS)] for i, n in enumerate(classes)} | {ALL: "#8c8c8c"}


def cdf(
    frame: pd.DataFrame,
    metric: str,
    targets: pd.DataFrame | None = None,
    *,
    height: int = 320,
    title: str | None = None,
    legend: bool = True,
    series: str = "class",
    dashes: Mapping[str, str] | None = None,
    colors: Mapping[str, str] | None = None,
    columns: int = 2,
) -> go.Figure:
    """Latency CDF curves (one per `series` value) with each class's SLO target as a dashed line;
    `columns`: the charts side by side across the page (a narrower chart's target label covers more
    of its axis, and is kept off the curves by that)."""
    names = list(dict.fromkeys(frame[series])) if len(frame) else []
    palette = dict(colors or {})
    if not colors and len(names) > 1:  # several classes: each keeps one colour for its curve and its target
        palette = class_palette(names)
    fig = go.Figure()
    rows_t = targets[targets["metric"] == metric].to_dict("records") if targets is not None else []
    tops = [float(t["target_ms"]) for t in rows_t]
    unit, size = axis_unit(frame, rows_t)
    for name, rows in frame.groupby(series, sort=False):
        # each point's latency in the unit it reads in (a backlog's 1,237,887.1 ms as 20.6 min: a review)
        said = [duration_text(float(v)) for v in rows["latency_ms"]]
        fig.add_trace(
            go.Scatter(
                x=rows["latency_ms"] / size, y=rows["fraction"], name=str(name), mode="lines", line_shape="hv",
                line={"dash": (dashes or {}).get(str(name), "solid"), "color": palette.get(str(name)),
                      "width": 1.5 if name == ALL else 2},
                customdata=said, hovertemplate="%{y:.1%} by %{customdata}<extra>" + str(name) + "</extra>",
            )
        )  # fmt: skip
    vals = frame["latency_ms"].to_numpy(dtype=float) / size if len(frame) else np.zeros(0)
    log = _log_ok(vals)
    lo = hi = None
    if len(vals):  # fix the range: long target labels must not stretch it
        hi = max([float(vals.max()), *[float(t["target_ms"]) / size for t in rows_t]]) * 1.15
        lo = max(float(vals[vals > 0].min()) / 1.3, 1e-3) if log else 0.0
        fig.update_xaxes(range=[math.log10(lo), math.log10(hi)] if log else [lo, hi])
    curves = (
        [(g["fraction"].to_numpy(dtype=float), g["latency_ms"].to_numpy(dtype=float) / size)
         for _, g in frame.groupby(series, sort=False)]
        if len(frame)
        else []
    )  # fmt: skip
    for i, t in enumerate(rows_t):
        ms, pct = float(t["target_ms"]), float(t["percentile"])
        target = ms / size
        color = palette.get(str(t["class"]), ACCENT) if len(rows_t) > 1 else ACCENT
        fig.add_vline(x=target, line={"dash": "dash", "color": color, "width": 1.5})
        at = target_text(ms, size)
        mixed = len({float(r["percentile"]) for r in rows_t}) > 1  # A's p99 beside B's p90: each says its own
        label = (
            f"{t['class']} SLO {at}" + (f" @ p{pct:g}" if mixed else "")
            if len(rows_t) > 1
            else f"SLO {at} @ p{pct:g}"
        )
        y, side = _label_place(curves, target, len(label), lo, hi, log, 0.03 + 0.09 * i, columns)
        fig.add_annotation(
            x=math.log10(target) if log else target, y=y, text=label, showarrow=False,
            xanchor=side, yanchor="bottom", font={"color": color, "size": 11}, bgcolor=LABEL_BACKGROUND,
        )  # fmt: skip
    for pct in sorted({float(t["percentile"]) for t in rows_t}):
        fig.add_hline(y=pct / 100, line={"dash": "dot", "color": ACCENT, "width": 1})
    # the curves and targets, in the axis's unit
    drawn = np.append(vals, np.asarray(tops, dtype=float) / size)
    latency_axis(fig, f"{METRIC_NAMES.get(metric, metric)} ({unit})", (unit, size), log, drawn, columns >= 3)
    if columns >= 3:  # Compare's three a row: nine 1-2-5 ticks turned on their side (a browser review)
        _decades_only(fig)
    fig.update_yaxes(title="fraction of requests", range=[0, 1.02], tickformat=".0%")
    return _layout(
        fig, title if title is not None else f"{METRIC_NAMES.get(metric, metric)} CDF", height, legend
    )


def _rgba(color: str, alpha: float) -> str:
    """A ``#rrggbb`` colour with transparency."""
    r, g, b = (int(color.lstrip("#")[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def cdf_band(
    frame: pd.DataFrame,
    metric: str,
    targets: pd.DataFrame | None = None,
    *,
    seeds: int,
    height: int = 320,
    title: str | None = None,
    series: str = "class",
    dashes: Mapping[str, str] | None = None,
    colors: Mapping[str, str] | None = None,
    columns: int = 2,
) -> go.Figure:
    """`cdf` of the mean curves over seeds, each over its shaded min–max band (`engine.explain.replicas.cdf_band`)."""
    names = list(dict.fromkeys(frame[series])) if len(frame) else []
    palette = dict(colors or {})
    if not palette:  # as `cdf` colours classes, and the single curve too, so its band can match it
        palette = class_palette(names)
    name = METRIC_NAMES.get(metric, metric)
    fig = cdf(frame, metric, targets, height=height, series=series, dashes=dashes, colors=palette, columns=columns,
              title=title if title is not None else f"{name} CDF: mean of {seeds} seeds")  # fmt: skip
    lines = len(fig.data)
    size = float((fig.layout.meta or {}).get("ms_per_unit", 1.0))  # the axis's unit (`cdf`: ms or s)
    for i, (key, rows) in enumerate(frame.groupby(series, sort=False)):
        y = rows["fraction"].to_numpy(dtype=float)
        fig.add_trace(
            go.Scatter(
                x=np.concatenate([rows["low_ms"].to_numpy(dtype=float),
                                  rows["high_ms"].to_numpy(dtype=float)[::-1]]) / size,
                y=np.concatenate([y, y[::-1]]), fill="toself", mode="lines", line={"width": 0},
                fillcolor=_rgba(palette.get(str(key), POOL_COLORS[0]), 0.3), hoverinfo="skip",
                name=f"range of {seeds} seeds", legendgroup="band", showlegend=i == 0,
            )
        )  # fmt: skip
    fig.data = fig.data[lines:] + fig.data[:lines]  # bands behind the curves
    rng = fig.layout.xaxis.range
    if len(frame) and rng is not None:  # widen the range `cdf` fixed from the curves to hold the bands
        low, high = (
            frame["low_ms"].to_numpy(dtype=float) / size,
            frame["high_ms"].to_numpy(dtype=float) / size,
        )
        if fig.layout.xaxis.type == "log":
            pos = low[low > 0]
            lo = min(rng[0], math.log10(max(float(pos.min()) / 1.3, 1e-3))) if len(pos) else rng[0]
            fig.update_xaxes(range=[lo, max(rng[1], math.log10(float(high.max()) * 1.15))])
        else:
            fig.update_xaxes(range=[rng[0], max(rng[1], float(high.max()) * 1.15)])
    if columns >= 3:  # a third of the page: the band's entry and the curves' stacked over the title
        _decades_only(fig)
        plot_px = height - 40 - 10 - AXIS_BELOW_PX
        fig.update_layout(
            height=height + LEGEND_ROW_PX,
            legend={"yanchor": "top", "y": -AXIS_BELOW_PX / plot_px, "xanchor": "left", "x": 0.0},
        )
    return fig


THIRD_MAX_TICKS = 6
"""The most 1-2-5 ticks a third-of-the-page log axis keeps: nine (200 to 100,000 ms) turned their labels
upright and pushed the axis's title onto the legend below (Compare's E2E with three seeds: a review)."""


def _decades_only(fig: go.Figure) -> None:
    """A log x axis's ticks thinned to the powers of ten within its range where it has more than
    `THIRD_MAX_TICKS`."""
    ticks, rng = list(fig.layout.xaxis.tickvals or ()), fig.layout.xaxis.range
    if fig.layout.xaxis.type == "log" and len(ticks) > THIRD_MAX_TICKS and rng is not None:
        fig.update_xaxes(tickvals=[10.0**k for k in range(math.ceil(rng[0]), math.floor(rng[1]) + 1)])


def tail(frame: pd.DataFrame, metric: str, targets: pd.DataFrame, *, height: int = 340) -> go.Figure:
    """Latency by percentile on a tail axis, with targets: the tail breaks where a curve crosses its line."""

    def tx(p: np.ndarray | float) -> np.ndarray:
        return -np.log10(1.0 - np.minimum(np.asarray(p, dtype=float), 99.999) / 100.0)

    names = list(dict.fromkeys(frame["class"])) if len(frame) else []
    palette = {n: POOL_COLORS[i % len(POOL_COLORS)] for i, n in enumerate(names)}
    fig = go.Figure()
    for name, rows in frame.groupby("class", sort=False):
        lat = rows["latency_ms"].to_numpy(dtype=float)
        lat = np.where(np.isfinite(lat), lat, np.nan)
        fig.add_trace(
            go.Scatter(
                x=tx(rows["percentile"].to_numpy()), y=lat, name=str(name), mode="lines",
                line={"color": palette[str(name)] if len(names) > 1 else None, "width": 2},
                customdata=rows["percentile"], hovertemplate="p%{customdata:.3g}: %{y:,.1f} ms<extra>" + str(name) + "</extra>",
            )
        )  # fmt: skip
    rows_t = targets[targets["metric"] == metric].to_dict("records")
    # the targets count: a 60 s target beside curves under 2 s flattened them on a linear axis (a review)
    spread = np.concatenate(
        [frame["latency_ms"].to_numpy(dtype=float), [float(t["target_ms"]) for t in rows_t]]
    )
    log = _log_ok(spread)
    # one line and one label per target: two classes at 100 ms wrote their names over each other (a review)
    shared: dict[float, list[str]] = {}
    for t in rows_t:
        shared.setdefault(float(t["target_ms"]), []).append(str(t["class"]))
    for target, owners in shared.items():
        one = len(owners) == 1 and len(names) > 1
        color = palette.get(owners[0], ACCENT) if one else ACCENT
        fig.add_hline(y=target, line={"dash": "dash", "color": color, "width": 1.5})
        # named under its line, as the CDFs' targets are (a dashed line with no label or tick: a review);
        # placed by hand: plotly puts an hline's own label at the raw value on a log axis, off the plot
        said = f"{', '.join(owners)} SLO" if len(rows_t) > 1 else "SLO"
        place = {"x": 0.01, "xref": "paper", "y": math.log10(target) if log else target, "yref": "y"}
        words = {"text": f"{said} {duration_text(target)}", "font": {"color": color, "size": 11}}
        fig.add_annotation(**place, **words, xanchor="left", yanchor="top", showarrow=False)
    for pct in sorted({float(t["percentile"]) for t in rows_t}):
        # one class's percentile in its colour: premium's p99 and batch's p90 both read red (a review)
        owners = {str(t["class"]) for t in rows_t if float(t["percentile"]) == pct}
        color = palette.get(next(iter(owners)), ACCENT) if len(owners) == 1 and len(names) > 1 else ACCENT
        fig.add_vline(x=float(tx(pct)), line={"dash": "dot", "color": color, "width": 1})
    ticks = [50, 90, 99, 99.9, 99.99]
    fig.update_xaxes(
        title="percentile",
        tickvals=list(tx(np.array(ticks))),
        ticktext=[f"p{p:g}" for p in ticks],
        # its x is the tail's axis: the hover's title read '1.846155' (a review)
        unifiedhovertitle={"text": "by percentile"},
    )
    # thousands separated on a linear axis too ('1000, 2000': a review)
    fig.update_yaxes(
        title=f"{METRIC_NAMES.get(metric, metric)} (ms)", type="log" if log else "linear", tickformat=",~r"
    )
    if log:  # 1-2-5 ticks: a decade apart, 50 to 8,000 ms read only 100 and 1,000
        fig.update_yaxes(**MS_LOG_AXIS, tickmode="array", tickvals=log_ticks(spread))
    if len(names) < 2:
        return _layout(fig, f"{METRIC_NAMES.get(metric, metric)} by percentile", height)
    # several classes: their legend under the axis, two to a row (beside the title, three long names ran
    # over it and over the top tick in half a 1,100 px page: a review)
    rows = -(-len(names) // 2)
    plot_px = height - 40 - 10 - AXIS_BELOW_PX
    fig = _layout(
        fig,
        f"{METRIC_NAMES.get(metric, metric)} by percentile",
        height + rows * LEGEND_ROW_PX,
        legend_below=True,
    )
    return fig.update_layout(
        legend={"y": -AXIS_BELOW_PX / plot_px, "entrywidth": 0.5, "entrywidthmode": "fraction"}
    )


def timeseries(
    ts: pd.DataFrame,
    columns: Sequence[str],
    title: str,
    yaxis: str,
    *,
    percent: bool = False,
    height: int = 300,
    warmup_s: float = 0.0,
) -> go.Figure:
    """Per pool (one colour) and column (solid, dotted, dashed), one line over time, a warm-up shaded.

    With several columns every line has its own legend entry ("prefill busy"), drawn as it is (the
    pool's colour and the column's dash): a legend of colours for pools beside grey dashes for
    columns made the reader combine the two.
    """
    dashes = ["solid", "dot", "dash", "dashdot"]
    several = len(columns) > 1
    fig = go.Figure()
    for i, (pool, rows) in enumerate(ts.groupby("pool", sort=False)):
        color = POOL_COLORS[i % len(POOL_COLORS)]
        for j, col in enumerate(columns):
            what = col.replace("_util", "").replace("_", " ")
            fig.add_trace(
                go.Scatter(x=rows["t_s"], y=rows[col], name=f"{pool} {what}" if several else str(pool), mode="lines",
                           legendgroup=str(pool),
                           line={"dash": dashes[j % 4], "color": color, "width": 2 if j == 0 else 1.5},
                           showlegend=several or j == 0, line_shape="hv",
                           hovertemplate=f"{pool} {what}: " + ("%{y:.1%}" if percent else "%{y:,.4~r}") + "<extra></extra>")
            )  # fmt: skip
    shade_warmup(fig, warmup_s)
    fig.update_xaxes(
        title="time (s)", unifiedhovertitle={"text": SECONDS_HOVER}, tickformat=",~r"
    )  # 3,600, not 3600
    top = float(np.nanmax(ts[list(columns)].to_numpy(dtype=float))) if len(ts) else 1.0
    # whole percents would label ticks 0.5% apart "1%, 1%, 2%" on a pool that stays under 10%
    fig.update_yaxes(
        title=yaxis, tickformat=(".0%" if top >= 0.1 else ".1%") if percent else None, rangemode="tozero"
    )
    # below the plot: beside the title two pools' names wrapped onto it in a third of a 1,100 px page
    pools = ts["pool"].nunique()
    # The rows are made known, so the figure grows by them and the legend starts under the axis title:
    # at the shared -0.25 of the plot's height, six entries wrapping one a row in a third of the page
    # squeezed the plot until "time (s)" sat on them. Line styles ("prefill bandwidth": two do not fit a
    # third of the page) one a row; pool names, short, three a row.
    rows = pools * len(columns) if several else -(-pools // 3)
    plot_px = height - 40 - 10 - AXIS_BELOW_PX  # title, bottom margin, ticks and axis title
    fig = _layout(fig, title, height + rows * LEGEND_ROW_PX, legend_below=True)
    fig.update_layout(
        legend={"y": -AXIS_BELOW_PX / plot_px}
        | ({"orientation": "v"} if several else {"entrywidth": 90, "entrywidthmode": "pixels"})
    )
    return fig


def cost_parts(parts: pd.DataFrame, *, height: int = 260) -> go.Figure:
    """Dollars per request split by part, as one stacked horizontal bar per measure."""
    fig = go.Figure()
    for r in parts.to_dict("records"):
        usd, part = float(r["usd_per_request"] or 0.0), str(r["part"]).replace("_", " ")  # "kv transfer"
        # a part that costs nothing (no cache in the run) is no slice of the bar, nor a legend entry
        if usd <= 0:
            continue
        fig.add_trace(
            go.Bar(y=["per request"], x=[usd], name=part, orientation="h",
                   hovertemplate=f"{part}: {usd_text(usd)} per request ({float(r['share']):.1%})<extra></extra>")
        )  # fmt: skip
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title="$ per request", tickprefix="$", tickformat="~r")  # the headline's unit
    # one bar needs no label of its own (the axis says "$ per request"): the plot takes the width, and
    # the parts' legend goes under the axis, four to a row (beside the title it ran into it on half a page)
    fig.update_yaxes(showticklabels=False)
    rows = -(-len(fig.data) // 4)
    plot_px = height - 40 - 10 - AXIS_BELOW_PX
    fig = _layout(fig, "Cost per request by part", height + rows * LEGEND_ROW_PX, legend_below=True)
    fig.update_layout(legend={"y": -AXIS_BELOW_PX / plot_px, "entrywidth": 70, "entrywidthmode": "pixels"})
    return fig


def bars(
    frame: pd.DataFrame,
    x: str,
    y: str,
    title: str,
    *,
    percent: bool = False,
    height: int = 260,
    color: str | None = None,
) -> go.Figure:
    """A plain bar chart of one column against another."""
    fig = go.Figure(go.Bar(x=frame[x], y=frame[y], marker={"color": color} if color else None))
    fig.update_yaxes(tickformat=".0%" if percent else None, title=None, range=[0, 1.02] if percent else None)
    return _layout(fig, title, height, legend=False)


def length_histogram(hist: pd.DataFrame, title: str, *, height: int = 220, of: str = "draws") -> go.Figure:
    """A token-length histogram (bars over their bins), its axis the share `of` what was counted."""
    mid = (hist["tokens_low"] + hist["tokens_high"]) / 2
    width = hist["tokens_high"] - hist["tokens_low"]
    fig = go.Figure(
        go.Bar(x=mid, y=hist["fraction"], width=width, customdata=np.stack([hist["tokens_low"], hist["tokens_high"]], axis=1),
               hovertemplate="%{customdata[0]:,.0f}–%{customdata[1]:,.0f} tokens: %{y:.1%}<extra></extra>")
    )  # fmt: skip
    log = float(hist["tokens_high"].max()) / max(float(hist["tokens_low"].min()), 1.0) > 20
    fig.update_xaxes(title="tokens", type="log" if log else "linear")
    if float(width.max()) <= 1.0:  # one length (a constant): whole tokens, not 511.6 to 512.4 (a review)
        fig.update_xaxes(tickformat=",d", dtick=1)
    fig.update_yaxes(title=f"share of {of}", tickformat=".0%")  # (an untitled % axis: a browser review)
    fig.update_layout(bargap=0)
    return _layout(fig, title, height, legend=False)


def shade_warmup(fig: go.Figure, end: float, start: float = 0.0, *, said: bool = False) -> None:
    """Shade a time axis from `start` to `end` (a warm-up: simulated, not measured; nothing when it
    has none), with those words at its top where `said`."""
    if end <= start:
        return
    words = {"annotation_text": "warm-up: not measured", "annotation_position": "top left"} if said else {}
    fig.add_vrect(x0=start, x1=end, fillcolor="gray", opacity=0.12, line_width=0, **words)


RATE_HOVER = "rate: %{y:,.3~r} req/s<extra></extra>"


def rate(
    curve: pd.DataFrame,
    title: str,
    *,
    observed: pd.DataFrame | None = None,
    observed_name: str = "sent in this run",
    height: int = 240,
    warmup_s: float = 0.0,
) -> go.Figure:
    """The arrival rate over time: the scenario's curve and, when given, the observed arrivals; a
    warm-up shaded, as its requests are simulated but not measured."""
    fig = go.Figure()
    shade_warmup(fig, warmup_s, said=True)
    if observed is not None and len(observed):
        # each hover line names its figure and unit (it read "(12:36, 14.83333)" beside "rate : 15.54731")
        sent = f"{observed_name}: %{{y:,.3~r}} req/s<extra></extra>"
        starts = observed["t_s"].to_numpy(dtype=float)
        half = float(np.median(np.diff(starts))) / 2.0 if len(starts) > 1 else 0.0
        fig.add_trace(
            # each bar over its bin, not centred on its start (half a bin early: a review)
            go.Bar(
                x=starts + half,
                y=observed["rate_rps"],
                name=observed_name,
                opacity=0.45,
                hovertemplate=sent,
            )
        )
    if len(curve):
        fig.add_trace(
            go.Scatter(
                x=curve["t_s"],
                y=curve["rate_rps"],
                name="rate",
                mode="lines",
                # dark over the bars: the palette's second blue vanished into the first's (a browser review)
                line={"width": 2.5, "color": "#262730"},
                hovertemplate=RATE_HOVER,
            )
        )
    fig.update_xaxes(
        title="time (s)", unifiedhovertitle={"text": SECONDS_HOVER}, tickformat=",~r"
    )  # 3,600, not 3600
    fig.update_yaxes(title="requests/s", rangemode="tozero")
    fig.update_layout(bargap=0)
    return _layout(fig, title, height)


def compare_bars(
    table: pd.DataFrame, labels: tuple[str, str], *, height: int = 300, unbacked: Sequence[str] = ()
) -> go.Figure:
    """Change from A to B of each compared figure (green where B is better): relative, in percent,
    and for a share (SLO attainment, cache hit rate) in percentage points, named so. A figure of
    `unbacked` (called better on a change inside its band, `engine.explain.band_judged.inside_band`)
    is drawn pale: the table's caption says the model cannot promise it, and a bar as bold as the
    others read as a win (a review)."""
    change, in_points = changes(table)
    rows = table.assign(
        x=change, y=[f"{f} (points)" if p else f for f, p in zip(table["figure"], in_points, strict=True)]
    )
    # a figure counted against other targets on each side is no change: not drawn (its bar of +28,544%
    # squeezed every other to a hairline, a review)
    rows = rows[np.isfinite(rows["x"].to_numpy(dtype=float)) & (rows["better"] != OTHER_TARGETS)]
    colors = ["#2e8b57" if b == "B" else ("#c0392b" if b == "A" else "gray") for b in rows["better"]]
    pale = [0.35 if f in unbacked else 1.0 for f in rows["figure"]]
    fig = go.Figure(
        go.Bar(x=rows["x"], y=rows["y"], orientation="h", marker={"color": colors, "opacity": pale},
               hovertemplate="%{y}: %{x:+.1f}<extra></extra>")
    )  # fmt: skip
    fig.update_xaxes(title=f"change from {labels[0]} to {labels[1]} (%; shares in points)", zeroline=True)
    fig.update_yaxes(autorange="reversed", title=None)
    title = "What changes (green: B better, red: A better, grey: neither"
    title += ", pale: inside the band)" if any(f in unbacked for f in rows["figure"]) else ")"
    return _layout(fig, title, height, legend=False)


def finite_or_none(value: float | None) -> float | None:
    """A number for display, or None when missing or not finite."""
    return value if value is not None and math.isfinite(value) else None
