"""The Results page's "Over time" panel: any run whose window spans several minutes, minute by minute.

Four charts from the result's `over_time` (`engine.serving.timeline.OverTime`: the engine computes
every number; this module only draws): SLO attainment per minute (its axis zoomed to the data and
the target, with the attainment the classes' SLO percentiles ask for as a dashed line), instances
per pool, power per pool, and each pool's busy fraction; the autoscalers' decisions are marked on
the first two (a scale-up where an instance was requested, a scale-down where one began to drain),
and the scenario's faults on all four (a labelled vertical line each, `engine.explain.timeline_marks`),
which share one x-range.
Above them, the run's figures: instance-hours and the bill, then the autoscaling ones (scale
events, cold start, the requests that arrived while an instance was starting) or, for a fixed
deployment, its worst minute and its peak power.

A run that reads its window as a day (a diurnal load with an hour of peak) or autoscales is a day
of traffic: its panel opens the page, under the headline figures, since its lesson is there; any
other run's comes after the pools' utilisation over time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from engine.explain import FaultMark, fault_marks
from engine.scenario import Scenario
from ui import charts, export
from ui import minute_charts as mc
from ui import power_chart as power_lines

UP, DOWN = "#29b09d", "#ff8700"
"""Marks of scale-ups (an instance requested) and scale-downs (an instance draining)."""


def is_day(sc: Scenario) -> bool:
    """Whether a run's lesson lives in its timeline: its load follows a day, or a pool autoscales."""
    return sc.workload.arrival.peak_hour is not None or any(p.autoscale for p in sc.deployment.pools)


def _marks(fig: go.Figure, events: Sequence[Any], top: float) -> None:
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


def attainment_range(values: Sequence[float | None], target: float) -> tuple[float, float]:
    """The attainment axis's range: the data and the target with a margin, within 0 to 1 (plus room on
    top for the marks). A 0-100% axis flattened a minute at 92% into the line at 99%."""
    seen = [float(v) for v in values if v is not None] + [target]
    lo, hi = min(seen), min(max(seen), 1.0)
    pad = max(0.12 * (hi - lo), 0.004)
    return max(0.0, lo - pad), hi + pad


def quiet_from_s(over: Mapping[str, Any]) -> float | None:
    """Where the window's last minutes without a new arrival begin, s (None where the last drawn
    minute has arrivals): a trace that ends before the window (Mooncake's at 3,537 s of an hour's)
    dropped every chart in its last minute with nothing on them to say why."""
    kept = mc.kept(over)
    counts = list(over["requests"][:kept])
    if not counts or counts[-1] > 0:
        return None
    last = max((i for i, n in enumerate(counts) if n > 0), default=-1)
    return float(over["t_s"][last + 1])


def shade_span(fig: go.Figure, start: float, end: float, words: str) -> None:
    """Shade a time axis from `start` to `end` and name it (`words`, '' for none) above the plot, over
    the span's right end: inside the plot the name sat on the lines (a 100% busy line crossed 'drain',
    a review)."""
    if end <= start:
        return
    fig.add_vrect(x0=start, x1=end, fillcolor="gray", opacity=0.12, line_width=0)
    if not words:
        return
    fig.add_annotation(
        x=end,
        xref="x",
        y=1,
        yref="y domain",
        xanchor="right",
        yanchor="bottom",
        text=words,
        showarrow=False,
        font={"size": 10, "color": "#666"},
    )


def shade_ends(fig: go.Figure, over: Mapping[str, Any] | None, per_s: float = 1.0, said: bool = True) -> None:
    """Shade the window's last minutes without an arrival ('no arrivals': a trace that ends before the
    window) and the drain after an open loop's window ('drain': no request arrives any more) on a time
    axis of `per_s` units a second (1: the pools over time; 1/60: the minute charts, which end with the
    window); nothing where a run has neither. Mooncake's lines fell in its last minute, and every run's
    in its drain, with nothing on the charts to say why. `said` False: shaded only, where a legend
    beside the title has the room above the plot (the pools over time: `ends_caption` says it)."""
    if over is None:
        return
    window = float(over["window_end_s"])
    if (quiet := quiet_from_s(over)) is not None:
        shade_span(fig, quiet * per_s, window * per_s, "no arrivals" if said else "")
    if per_s == 1.0 and drain_s(over) > 0.0:
        shade_span(fig, window, float(over["end_s"]), "drain" if said else "")


def ends_caption(over: Mapping[str, Any] | None) -> str:
    """What `shade_ends` shaded, in words under charts that do not name it ('' where nothing was)."""
    if over is None:
        return ""
    said = []
    if (quiet := quiet_from_s(over)) is not None:
        said.append(f"from {quiet:,.0f} s no request arrives (the trace ends before the window)")
    if drain_s(over) > 0.0:
        said.append(
            f"after the window's {float(over['window_end_s']):,.0f} s the run drains for {drain_s(over):,.0f} s "
            "(no new arrivals; the last requests finish)"
        )
    return f"Shaded at the end: {'; '.join(said)}, which is why the lines fall there." if said else ""


def drain_s(over: Mapping[str, Any]) -> float:
    """How long the run drains after its window, s (not drawn: `_kept`)."""
    return max(0.0, float(over["end_s"]) - float(over["window_end_s"]))


def attainment_chart(over: Mapping[str, Any]) -> go.Figure:
    """SLO attainment of the requests arriving in each minute (axis zoomed), target dashed, scale events marked."""
    values, target = over["slo_attainment"][: mc.kept(over)], float(over["target"])
    lo, hi = attainment_range(values, target)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=mc.minutes(over),
            y=mc.steps(over, values),
            name="SLO attainment",
            mode="lines",
            line={"color": charts.CATEGORY_COLORS[0], "width": 2},
            line_shape="hv",
            hovertemplate="%{y:.1%} met their SLO<extra></extra>",
        )
    )
    fig.add_hline(
        y=target,
        line={"dash": "dash", "color": charts.ACCENT, "width": 1.5},
        annotation={"text": f"target {target:.0%}", "font": {"size": 11, "color": charts.ACCENT}},
        annotation_position="bottom right",
    )
    top = min(max([float(v) for v in values if v is not None] + [target]), 1.0)
    _marks(fig, over["events"], (top + hi) / 2)  # in the margin above the data
    # short axis titles: a long one runs past the plot's top into the chart's title (the panel's help says more)
    # 'zoomed' only where the axis does not run from 0 (it read so over 0 to 100%: a review)
    fig = mc.style(
        fig, "SLO attainment per minute", "met SLO (zoomed)" if lo > 0 else "met SLO", percent=True
    )
    fig.update_yaxes(range=[lo, hi], rangemode="normal", tickformat=".1%" if hi - lo < 0.1 else ".0%")
    return fig


def instances_chart(over: Mapping[str, Any]) -> go.Figure:
    """Instances billed per pool (mean over each minute), with the scale events marked. Billed, not
    serving: an instance lost to a fault is still paid for, so a loss shows on Busy, not here."""
    fig = mc.per_pool(
        over,
        "instances",
        "Instances billed per pool",
        "instances billed<br>(minute mean)",
        "%{y:.2f} instances billed (mean over the minute)",
    )
    top = max([1.0, *(max(v[: mc.kept(over)], default=0.0) for v in over["instances"].values())])
    _marks(fig, over["events"], top + 0.5)
    _demand(fig, over)
    # room above the pools' lines: at the axis's top a fixed pool's line was cut in half and ran under the
    # arrivals', so two pools of three instances read as one (a browser review); the arrivals below it
    fig.update_yaxes(
        range=[0, max(top * 1.25 + 0.25, top + 0.75)], rangemode="normal"
    )  # (the marks at top + 0.5)
    fig.update_layout(yaxis2={"range": [0, max(_arrivals_per_min(over), default=0.0) * 1.6 or 1.0]})
    return fig


def _arrivals_per_min(over: Mapping[str, Any]) -> list[float]:
    """The requests arriving per minute in each interval (a warm-up's arrivals too; a summary kept from
    before `arrived`: the window's)."""
    ends = [*over["t_s"][1:], over["end_s"]]
    arrived = over.get("arrived", over["requests"])
    return [60.0 * n / max(b - a, 1e-9) for n, a, b in zip(arrived, over["t_s"], ends, strict=True)]


def _drain_said(over: Mapping[str, Any]) -> str:
    """': the 3,600 s window and 32 s of drain, so it is more than the cost per hour times the window'
    ('' without a drain): a day's '$24.99 for this hour-long day' beside its $24.90/h read as two bills
    for one thing (a browser review)."""
    if (drain := drain_s(over)) < 0.5:
        return ""
    return (  # (the window's end: after a warm-up it is not the window's length)
        f": to the window's end at {float(over['window_end_s']):,.0f} s and {drain:,.0f} s of drain after it, so it "
        "is more than the cost per hour times the window"
    )


def _demand(fig: go.Figure, over: Mapping[str, Any]) -> None:
    """The requests arriving per minute, on an axis of their own: the capacity against the demand it follows
    (a warm-up's arrivals too; a summary kept from before `arrived`: the window's)."""
    per_min = _arrivals_per_min(over)
    fig.add_trace(
        go.Scatter(
            x=mc.minutes(over),
            y=mc.steps(over, per_min),
            name="requests arriving",
            mode="lines",
            line={"color": "#9aa0a6", "width": 1.5},  # solid: the dotted lines are the faults
            line_shape="hv",
            yaxis="y2",
            hovertemplate="%{y:,.0f} requests / min arriving<extra></extra>",
        )
    )
    fig.update_layout(
        yaxis2={
            "title": "requests / min",
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "showgrid": False,
            "tickmode": "auto",
            "nticks": 5,
            "tickformat": ",.0f",
        },
        margin={"r": 50},
    )


def power_chart(over: Mapping[str, Any], sc: Scenario | None = None) -> go.Figure:
    """Mean power each pool's chips drew per minute, with the limits they are held to (`ui.power_chart`)."""
    return power_lines.power_chart(over, sc)


def busy_chart(over: Mapping[str, Any]) -> go.Figure:
    """Each pool's busy fraction per minute (of its instances' time on)."""
    return mc.per_pool(
        over, "busy", "Busy per minute", "busy", "%{y:.1%} of its instances' time iterating", percent=True
    )


def figures(over: Mapping[str, Any], summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """The run's figures over time: (label, value, help). Those a day's lesson quotes come first: the
    instance-hours and the bill, then for an autoscaled run the misses while instances start, the scale
    events and the cold start; the worst minute and the peak power last."""
    hours = over["instance_hours"]
    worst = min((v for v in over["slo_attainment"] if v is not None), default=None)
    peak = max((sum(kw) for kw in zip(*over["power_kw"].values(), strict=True)), default=0.0)
    out = [
        (
            "Instance-hours",
            f"{sum(hours.values()):,.2f} h",
            "Instances billed, each from its request (a fixed pool: the start) to its stop or the end of the drain: "
            + ", ".join(f"{name} {h:,.2f} h" for name, h in hours.items()),
        ),
        (
            "Bill for the run",
            f"${summary['cost']['usd_total']:,.2f}",
            "Every chip from t = 0 (an autoscaled one from its request) to the end of the drain, idle or not "
            "(cache tiers included)" + _drain_said(over) + ".",
        ),
    ]
    auto = summary.get("autoscale")
    if auto:
        cold = max((p["cold_start_s"] for p in auto["pools"].values()), default=0.0)
        during, missed = auto["requests_during_cold_start"], auto["misses_during_cold_start"]
        total = summary["requests"]["total"]  # the window's misses: its requests not within SLO
        misses = total - round((summary["slo_attainment"] or 0.0) * total)  # None: no request
        out += [
            (
                "Misses while starting",
                f"{missed:,} of {misses:,}",
                f"Of the run's {misses:,} requests that missed their SLO, those that arrived while an instance of "
                f"an autoscaled pool was starting ({during:,} requests arrived then).",
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
        ]
    return [
        *out,
        (
            "Worst minute, SLO",  # what of it ('Worst minute 75.1%': a browser review)
            "–" if worst is None else f"{worst:.1%}",
            "The lowest SLO attainment of the requests arriving in one minute.",
        ),
        (
            # every pool's: an edge site's banner said 54.9 W of its 60 W budget beside this card's 352 W,
            # the data centre's chips included (a browser review)
            "Peak power, all chips" if summary.get("edge") else "Peak power",
            f"{peak:,.1f} kW" if peak >= 1.0 else f"{peak * 1e3:,.0f} W",  # an edge device draws watts
            "The most every pool's chips drew together, averaged over a minute"
            + (
                ", the data centre's with the edge site's (its own peak against its budget is in the edge line)."
                if summary.get("edge")
                else "."
            ),
        ),
    ]


FAULT = "#7f7f7f"
"""The colour of a fault's line on the charts."""


def on_one_clock(
    figs: Sequence[go.Figure], over: Mapping[str, Any], marks: Sequence[FaultMark], warmup_s: float = 0.0
) -> None:
    """Give the panel's charts one x-range (the window: the SLO chart's axis ran shorter when the others
    drew the drain too), the warm-up shaded (its requests are not measured), and a dotted
    vertical line at each fault's moment on each, numbered at its top; `fault_key` says what each
    number is (a label in words covered the data near the top, and two faults a minute apart cut each
    other's words off)."""
    minutes = mc.minutes(over)
    span = [min(minutes, default=0.0), max(minutes, default=1.0)]
    for fig in figs:
        fig.update_xaxes(range=span, autorange=False)
        charts.shade_warmup(fig, warmup_s / 60.0, span[0])
        shade_ends(fig, over, 1.0 / 60.0)
        for i, m in enumerate(marks, start=1):
            fig.add_vline(
                x=m.minute,
                line={"dash": "dot", "color": FAULT, "width": 1.5},
                annotation={"text": str(i), "font": {"size": 11, "color": FAULT}, "hovertext": m.label},
                # odd numbers left of their line, even right: two faults close together read '34' (a review)
                annotation_position="top left" if i % 2 else "top right",
            )


def fault_key(marks: Sequence[FaultMark], day_minutes: float | None = None) -> str:
    """What each numbered dotted line is: '1 at minute 5.0: prefill: 3 instances lost; 2 at ...'; on a
    window read as one day of `day_minutes` minutes, at the hour its line is drawn ('1 at 8:00', where
    it read 'at minute 5.0' beside a line at 08:00: a review)."""

    def when(minute: float) -> str:
        if not day_minutes:
            return f"minute {minute:.1f}"
        whole = round(minute / day_minutes * 24 * 60)
        return f"{whole // 60}:{whole % 60:02d}"

    return "Faults (dotted lines): " + "; ".join(
        f"**{i}** at {when(m.minute)}: {m.label}" for i, m in enumerate(marks, start=1)
    )


DAY_START = datetime(2000, 1, 1)
"""The day a window read as one day is drawn on (a date axis: its hovers read the hour, 14:30)."""


def _clock(value: Any, hours_per_unit: float, last: bool = False) -> Any:
    """One x value of a day's chart as its moment of the day (None and NaN as they are); `last`: a
    point's, held just short of midnight so that its hover reads 23:59, not 00:00 of the next day."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return value
    hours = float(value) * hours_per_unit
    return DAY_START + timedelta(hours=min(hours, 24.0 - 1.0 / 3600) if last else hours)


def _on_the_day(fig: go.Figure, hours_per_unit: float) -> None:
    """Every x of `fig` (its traces, shapes and annotations on the x axis, and its range) moved from the
    window's units to the moment of the day they stand for."""
    for trace in fig.data:
        if getattr(trace, "x", None) is not None:
            trace.x = [_clock(v, hours_per_unit, last=True) for v in trace.x]
    for item in (*fig.layout.shapes, *fig.layout.annotations):
        if item.xref in (None, "x"):
            for key in ("x0", "x1", "x"):
                if getattr(item, key, None) is not None:
                    item[key] = _clock(item[key], hours_per_unit)
    if fig.layout.xaxis.range is not None:
        fig.update_xaxes(range=[_clock(v, hours_per_unit) for v in fig.layout.xaxis.range])


def hour_ticks(figs: Sequence[go.Figure], window_s: float, unit_s: float = 60.0) -> None:
    """Read a day's window as the day its rate follows (`Arrival.peak_hour`: 24 hours of shape over the
    window): the x axis is the hour of the day, ticked every sixth hour, level (seven ticks ran together
    beside a right-hand axis at 1,100 px), so the lesson's "peak at 14:00" is found on the axis, and a
    hover reads its moment of the day (14:30; it read the window's minute, 870, under ticks in hours).
    `unit_s`: seconds of one unit of the figures' x axes (a minute here; a second on the Workload page's
    arrival chart)."""
    hours_per_unit = 24.0 / (window_s / unit_s)
    hours = range(0, 25, 6)
    for fig in figs:
        _on_the_day(fig, hours_per_unit)
        if (
            fig.layout.xaxis.range is None
        ):  # the whole day: the arrival chart's axis ended at 18:00 (a review)
            fig.update_xaxes(range=[DAY_START, DAY_START + timedelta(hours=24)])
        if (fig.layout.margin.r or 0) < 24:  # room for the last tick's '24:00', half past the plot's edge
            fig.update_layout(margin_r=24)
        fig.update_xaxes(  # level and short: turned upright in a third of 1,100 px they pushed the axis's
            type="date",  # title into the legend (a review)
            tickvals=[DAY_START + timedelta(hours=h) for h in hours],
            ticktext=[f"{h}:00" for h in hours],
            tickangle=0,
            hoverformat="%-H:%M",  # 8:00 as the ticks write it (it read 08:00)
            unifiedhovertitle={"text": ""},  # the hour, by hoverformat: not the minute's or second's title
            title="hour of the day (the window read as one day)",
        )


HELP = (
    "Per minute of the run: SLO attainment of the requests arriving in it (its axis zoomed to the data; dashed: "
    "the attainment the classes' SLO percentiles ask for), each pool's instances (billed ones: starting instances "
    "count, as they are paid for), the power its chips drew and the share of its instances' time spent iterating."
)
FAULTS_HELP = (
    " A dotted grey line marks each fault (a pool's instances lost or back, a KV link slowed or down), numbered;"
    " the line under the charts says what each number is."
)


QUIET_HELP = (
    " Shaded at the end: minutes in which no request arrived (a trace that ends before the window), so"
    " the pools fall idle there."
)


def _drain_help(over: Mapping[str, Any]) -> str:
    """What the charts leave out after the window, when the run drains (nothing otherwise)."""
    drain = drain_s(over)
    if drain <= 0.0:
        return ""
    return (
        f" The charts end with the window: the run then drains for {drain:,.0f} s (no new arrivals; the last "
        "requests finish, as only the simulation's end makes them), billed and counted in the figures above."
    )


def panel(result: Any, sc: Scenario, drawn: list[tuple[str, Any]]) -> None:
    """The panel, when the run spans several minutes (nothing otherwise); its charts join `drawn`."""
    over = result.over_time
    if over is None:
        return
    summary = result.summary
    title = "Over the day" if sc.workload.arrival.peak_hour is not None else "Over time"
    marks = (
        " Triangles mark the autoscalers' decisions: up where an instance was requested, down where one began "
        "to drain."
    )
    st.subheader(
        f"{title}: autoscaling" if summary.get("autoscale") else title,
        help=HELP
        + (marks if over["events"] else "")
        + (FAULTS_HELP if sc.faults else "")
        + (" Shaded: the warm-up, whose requests are simulated and not measured." if sc.warmup_s > 0 else "")
        + (QUIET_HELP if quiet_from_s(over) is not None else "")
        + _drain_help(over),
    )
    with st.container(horizontal=True, gap="small"):
        for label, value, help_ in figures(over, summary):
            st.metric(label, value, help=help_, border=True, width="content")
    charts_ = (
        ("SLO attainment per minute", attainment_chart(over), "slo_per_minute"),
        ("Instances billed per pool", instances_chart(over), "instances_per_minute"),
        ("Power per minute", power_chart(over, sc), "power_per_minute"),
        ("Busy per minute", busy_chart(over), "busy_per_minute"),
    )
    faults = fault_marks(sc.faults)
    on_one_clock([fig for _, fig, _ in charts_], over, faults, sc.warmup_s)
    if sc.workload.arrival.peak_hour is not None:
        hour_ticks([fig for _, fig, _ in charts_], sc.duration_s)
    for col, (name, fig, what) in zip([*st.columns(2), *st.columns(2)], charts_, strict=True):
        drawn.append((name, fig))
        with col:
            export.chart(fig, sc, what)
    if faults:
        st.caption(
            fault_key(faults, sc.duration_s / 60.0 if sc.workload.arrival.peak_hour is not None else None)
        )
