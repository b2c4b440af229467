"""The Results page's "Over time" panel (ui/timeline.py, issue 34): drawn from the run's `over_time`, for any run
of several minutes, fixed or autoscaled; a day's panel opens the page with the figures its lesson quotes."""

from __future__ import annotations

import json
from datetime import timedelta

import plotly.graph_objects as go
import pytest

from engine.scenario.codec import apply_overrides, load_preset
from engine.serving.run import simulate
from tests.app.harness import app, assert_clean, scenario_of, short
from ui import timeline


def _short_day() -> object:
    return apply_overrides(load_preset("day-autoscaled"), {"duration_s": 900.0})


def test_the_charts_draw_the_engines_timeline_and_mark_its_events() -> None:
    run = simulate(_short_day())  # type: ignore[arg-type]
    over = run.over_time
    assert over is not None
    fig = timeline.instances_chart(over)
    lines = [t for t in fig.data if t.mode == "lines" and t.yaxis != "y2"]
    assert [t.name for t in lines] == ["prefill", "decode"]
    kept = sum(1 for t in over["t_s"] if t < over["window_end_s"])
    assert over["window_end_s"] == 900.0 < over["end_s"] and kept == 15  # the drain's bin is not drawn
    assert list(lines[0].y) == [*over["instances"]["prefill"][:kept], over["instances"]["prefill"][kept - 1]]
    assert list(lines[0].x) == [*(t / 60.0 for t in over["t_s"][:kept]), 15.0]  # each step to its bin's end
    # the demand the instances follow, per minute on an axis of its own
    (demand,) = [t for t in fig.data if t.yaxis == "y2"]
    assert list(demand.y)[:kept] == pytest.approx([n * 60.0 / over["bin_s"] for n in over["requests"][:kept]])
    assert sum(demand.y[:kept]) * over["bin_s"] / 60.0 == pytest.approx(run.summary["requests"]["total"])
    # room above both: a fixed pool at the axis's top was cut in half under the arrivals' line, and the
    # second pool's line (dashed over the first's wider one) hid the first where they were equal (a review)
    most = max(max(v[:kept]) for v in over["instances"].values())
    assert fig.layout.yaxis.range[1] > most and fig.layout.yaxis2.range[1] > max(demand.y)
    assert lines[0].line.dash == "solid" and lines[1].line.dash == "dash"
    marks = {t.name: len(t.x) for t in fig.data if t.mode == "markers"}
    ups = sum(1 for _, _, a in over["events"] if a == "request")
    assert marks.get("scale-up requested", 0) == ups > 0
    slo = timeline.attainment_chart(over)
    assert list(slo.data[0].y)[:kept] == over["slo_attainment"][:kept]
    assert list(timeline.power_chart(over).data[1].y)[:kept] == over["power_kw"]["decode"][:kept]
    assert list(timeline.busy_chart(over).data[0].y)[:kept] == over["busy"]["prefill"][:kept]
    labels = [label for label, _, _ in timeline.figures(over, run.summary)]
    assert labels == [
        "Instance-hours",
        "Bill for the run",
        "Misses while starting",
        "Scale-ups / downs",
        "Cold start",
        "Worst minute, SLO",
        "Peak power",
    ]
    # the bill's help says its drain, so it is not read as the cost per hour times the window (a review)
    bill = next(h for label, _, h in timeline.figures(over, run.summary) if label == "Bill for the run")
    drain = timeline.drain_s(over)
    assert drain > 0.5 and f"to the window's end at 900 s and {drain:,.0f} s of drain after it" in bill, bill


def _over(values: list[float | None], target: float = 0.9) -> dict[str, object]:
    return {
        "t_s": [60.0 * i for i in range(len(values))],
        "slo_attainment": values,
        "target": target,
        "instances": {"prefill": [1.0] * len(values)},
        "power_kw": {"prefill": [1.0] * len(values)},
        "busy": {"prefill": [0.5] * len(values)},
        "events": [(30.0, "prefill", "request")],
        "bin_s": 60.0,
        "requests": [10] * len(values),
        "end_s": 60.0 * len(values),
        "window_end_s": 60.0 * len(values),
    }


def test_the_charts_end_with_the_window_and_the_help_says_how_long_the_run_drains() -> None:
    """The drain after the window (no new arrivals; the last requests finish because the simulation
    stops) ended every chart with a cliff: its short last bin half busy, the demand at zero, and the
    SLO line a minute early (its last minute had no next point to step to)."""
    run = simulate(short("rent-vs-own", duration_s=300.0))
    over = run.over_time
    assert over is not None and over["window_end_s"] == 300.0 < over["end_s"]
    assert over["t_s"][-1] == 300.0  # the drain's own bin, short, in the engine's timeline
    drawn = [timeline.attainment_chart(over), timeline.instances_chart(over), timeline.busy_chart(over)]
    timeline.on_one_clock(drawn, over, [])
    for fig in drawn:
        assert tuple(fig.layout.xaxis.range) == (0.0, 5.0)
        for trace in (t for t in fig.data if t.mode == "lines"):
            assert max(trace.x) == 5.0 and trace.y[-1] == trace.y[-2] is not None  # the last minute held to 5
    busy = drawn[2].data[0].y
    assert min(busy) > 0.9  # no cliff: every drawn minute is the busy window's
    words = timeline._drain_help(over)
    assert f"drains for {timeline.drain_s(over):,.0f} s" in words and timeline.drain_s(over) > 0
    assert timeline._drain_help(_over([0.9, 0.95])) == ""  # a run that ends with its window: nothing to say


def test_the_axis_titles_fit_beside_the_plot() -> None:
    # a 320 px chart has about 250 px of plot: a longer y title ran into the chart's title (seen in Chromium)
    over = _over([1.0, 0.9])
    for chart in (
        timeline.attainment_chart,
        timeline.instances_chart,
        timeline.power_chart,
        timeline.busy_chart,
    ):
        fig = chart(over)
        lines = fig.layout.yaxis.title.text.split("<br>")  # a title of two short lines fits too
        assert len(lines) <= 2 and max(len(t) for t in lines) <= 20, fig.layout.yaxis.title.text


@pytest.mark.parametrize(
    ("values", "target"),
    [
        ([0.97, 0.995, None, 0.99], 0.9),
        ([0.995, 0.999, 1.0], 0.99),
        ([0.4, 0.8, 0.6], 0.9),
        ([None, None], 0.5),
    ],
)
def test_the_attainment_axis_follows_the_data_and_its_target(
    values: list[float | None], target: float
) -> None:
    fig = timeline.attainment_chart(_over(values, target))
    lo, hi = fig.layout.yaxis.range
    seen = [v for v in values if v is not None] + [target]
    assert lo < min(seen) and max(seen) < hi <= 1.1  # every point and the target inside, with a margin
    assert lo >= 0.0
    assert hi - lo < 1.5 * (max(seen) - min(seen)) + 0.02  # zoomed: not 0 to 100% whatever the data
    assert "zoomed" in fig.layout.yaxis.title.text
    assert [s.y0 for s in fig.layout.shapes] == [target]  # the target, dashed
    marks = [t for t in fig.data if t.mode == "markers"]
    assert all(max(seen) <= y <= hi for t in marks for y in t.y)  # the scale events above the data


@pytest.mark.slow
def test_results_shows_the_panel_for_fixed_and_autoscaled_runs_alike() -> None:
    at = app("results", _short_day(), preset="day-autoscaled")  # type: ignore[arg-type]
    assert_clean(at)
    assert "Over the day: autoscaling" in [h.value for h in at.subheader]
    assert "Instance-hours" in [m.label for m in at.metric]
    fixed = app(
        "results",
        apply_overrides(load_preset("day-static-peak"), {"duration_s": 900.0}),
        preset="day-static-peak",
    )
    assert_clean(fixed)
    heads = [h.value for h in fixed.subheader]
    assert "Over the day" in heads and "Over the day: autoscaling" not in heads
    shown = {m.label: m.value for m in fixed.metric}
    hours = float(shown["Instance-hours"].split()[0])
    assert 5 * 900 / 3600 <= hours < 5 * 960 / 3600  # five instances, billed to the end of the drain
    assert "Scale-ups / downs" not in shown
    plain = app("results", short("chat-disaggregated", duration_s=600.0), preset="chat-disaggregated")
    heads = [h.value for h in plain.subheader]
    assert "Over time" in heads and heads.index("Over time") > heads.index(
        "Latency"
    )  # not a day: further down
    too_short = app("results", short("chat-disaggregated"), preset="chat-disaggregated")
    assert not [h for h in too_short.subheader if h.value.startswith("Over")]


def _metric_values(at: object) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["day-autoscaled", "day-static-peak"])
def test_the_day_presets_teach_their_lesson_on_the_first_screen(preset: str) -> None:
    """The figures the lesson quotes are on the page, in the panel that follows the headline."""
    at = app("results", load_preset(preset), preset=preset)
    assert_clean(at)
    lesson = load_preset(preset).lesson.replace("\n", " ")
    heads = [h.value for h in at.subheader]
    day = next(h for h in heads if h.startswith("Over the day"))
    assert heads.index(day) < heads.index(
        "Latency"
    )  # before the CDFs: on the first screen, under the headline
    shown = _metric_values(at)
    assert shown["SLO attainment"] in lesson
    assert shown["Bill for the run"] in lesson
    assert f"{float(shown['Instance-hours'].split()[0]):.1f}" in lesson
    if preset == "day-autoscaled":
        missed, of = shown["Misses while starting"].split(" of ")
        assert f"Its {of} misses" in lesson and f"{missed} while a new instance loads its weights" in lesson
        assert f"{shown['Scale-ups / downs'].split(' / ')[0]} scale-ups of {shown['Cold start']}" in lesson


def test_the_workload_page_sets_the_hour_of_peak_of_a_daily_curve() -> None:
    at = app("workload", _short_day(), preset="day-autoscaled")  # type: ignore[arg-type]
    assert_clean(at)
    box = next(n for n in at.number_input if n.label == "Hour of peak")
    assert box.value == 14.0
    box.set_value(18.0).run()
    assert_clean(at)
    assert scenario_of(at).workload.arrival.peak_hour == 18.0


def test_a_days_charts_read_the_window_as_the_day_its_rate_follows() -> None:
    """A compressed day's lesson names hours ("a peak at 14:00"): the axes tick hours where the rate's
    curve puts them (`rate_factor`: the window is 24 hours of shape), the busiest minute under its hour."""
    sc = load_preset("day-autoscaled")
    assert sc.workload.arrival.peak_hour is not None
    run = simulate(apply_overrides(sc, {"duration_s": 1800.0}))
    over = run.over_time
    assert over is not None
    fig = timeline.instances_chart(over)
    timeline.hour_ticks([fig], 1800.0)
    day = timeline.DAY_START
    ticks = dict(zip(fig.layout.xaxis.ticktext, fig.layout.xaxis.tickvals, strict=True))
    assert ticks["0:00"] == day and ticks["24:00"] == day + timedelta(hours=24)
    assert fig.layout.xaxis.tickangle == 0  # level: upright, they pushed the axis title into the legend
    busiest = max(range(len(over["requests"])), key=lambda i: over["requests"][i])
    # the busiest minute is drawn at the peak hour, and its hover reads that hour (it read minute 870)
    drawn = fig.data[0].x[busiest]
    hours = (drawn - day).total_seconds() / 3600.0
    assert abs(hours - sc.workload.arrival.peak_hour) <= 3.0 * 24.0 / 30.0
    assert hours == pytest.approx(over["t_s"][busiest] / 1800.0 * 24.0)
    assert fig.layout.xaxis.type == "date" and fig.layout.xaxis.hoverformat == "%-H:%M"
    # the window's end moved with the data: its last point just short of midnight, whose hover read 00:00
    assert over["window_end_s"] == 1800.0 and fig.data[0].x[-1] == day + timedelta(hours=24) - timedelta(
        seconds=1
    )


def test_a_days_faults_and_warmup_move_with_its_hours() -> None:
    """A fault's dotted line and number, and the warm-up's shading, sit at their moment of the day once
    the window is read as one day (they stayed at their minute, far left of a date axis)."""
    fig = go.Figure(go.Scatter(x=[0.0, 1.0, 2.0, 3.0], y=[1, 1, 1, 1]))
    fig.update_xaxes(range=[0.0, 3.0])
    fig.add_vline(x=1.5, annotation={"text": "1"}, annotation_position="top right")
    fig.add_vrect(x0=0.0, x1=0.5)
    timeline.hour_ticks([fig], 180.0)
    day = timeline.DAY_START
    at = {h: day + timedelta(hours=h) for h in (0, 4, 12, 24)}
    assert [s.x0 for s in fig.layout.shapes] == [at[12], at[0]]
    assert [s.x1 for s in fig.layout.shapes] == [at[12], at[4]]
    assert [a.x for a in fig.layout.annotations] == [at[12]]
    assert list(fig.layout.xaxis.range) == [at[0], at[24]]  # three minutes read as a day: 8 hours each
    # a chart without a range of its own (the Workload page's arrivals) spans the whole day: it ended at 18:00
    bare = go.Figure(go.Scatter(x=[0.0, 2.5], y=[1, 1]))
    timeline.hour_ticks([bare], 180.0)
    assert list(bare.layout.xaxis.range) == [at[0], at[24]] and bare.layout.margin.r >= 24  # room for '24:00'


def test_a_fault_is_a_numbered_dotted_line_on_every_chart_and_the_key_says_what() -> None:
    run = simulate(_short_day())  # type: ignore[arg-type]
    over = run.over_time
    assert over is not None
    figs = [timeline.instances_chart(over), timeline.attainment_chart(over)]
    marks = [timeline.FaultMark(minute=5.0, label="prefill: 3 instances lost"),
             timeline.FaultMark(minute=6.5, label="prefill: 3 instances back")]  # fmt: skip
    timeline.on_one_clock(figs, over, marks)
    for fig in figs:
        lines = [s for s in fig.layout.shapes if s.line.dash == "dot"]
        assert [(s.x0, s.x1) for s in lines] == [(5.0, 5.0), (6.5, 6.5)]
        notes = [a for a in fig.layout.annotations if a.hovertext in {m.label for m in marks}]
        assert [a.text for a in notes] == ["1", "2"]  # a number at the top, not words across the data
        # on either side of their lines: faults 3 and 4 at 14:52 and 15:16 read '34' (a review)
        assert [a.xanchor for a in notes] == ["right", "left"]
    key = timeline.fault_key(marks)
    assert "**1** at minute 5.0: prefill: 3 instances lost" in key and "**2** at minute 6.5" in key
    # a window of 15 minutes read as one day: each at the hour its line is drawn (it read 'at minute 5.0')
    day = timeline.fault_key(marks, 15.0)
    assert "**1** at 8:00: prefill: 3 instances lost" in day and "**2** at 10:24" in day


def test_a_pool_whose_line_coincides_with_anothers_stays_visible() -> None:
    """Two pools of two instances each drew one line, the second over the first (a review): the first
    pool's line is wider, so both colours show where they coincide."""
    over = {**_over([0.9, 0.95]), "instances": {"prefill": [2.0, 2.0], "decode": [2.0, 2.0]}}
    lines = [t for t in timeline.instances_chart(over).data if t.mode == "lines" and t.yaxis != "y2"]
    assert [t.line.width for t in lines] == [3.5, 1.75]
    assert timeline.busy_chart(_over([0.9])).data[0].line.width == 2  # one pool: no wider line


def test_a_window_that_ends_inside_a_minute_ends_its_last_step_there() -> None:
    """A window of 5.5 minutes drew its last half-minute's arrivals spread over a bin that ran into
    the drain (562 requests a minute beside about 970, a review): the bins split where the window ends."""
    run = simulate(short("rent-vs-own", duration_s=330.0))
    over = run.over_time
    assert over is not None and over["window_end_s"] == 330.0 and 330.0 in over["t_s"]
    assert over["bin_s"] == 60.0
    (demand,) = [t for t in timeline.instances_chart(over).data if t.yaxis == "y2"]
    assert list(demand.x)[-2:] == [5.0, 5.5]
    last, before = demand.y[-1], demand.y[-3]
    assert abs(last / before - 1.0) < 0.2  # the half-minute's rate, not half of it
    assert min(timeline.busy_chart(over).data[0].y) > 0.9


def test_minutes_without_arrivals_at_the_end_are_shaded_and_said() -> None:
    """Mooncake's trace ends at 3,537 s of an hour's window: every chart fell in its last minute with
    nothing on it to say why. The trailing minutes without an arrival are shaded, named once."""
    over = _over([0.9, 0.95, None, None])
    over["requests"] = [10, 12, 0, 0]
    assert timeline.quiet_from_s(over) == 120.0
    figs = [timeline.attainment_chart(over), timeline.busy_chart(over)]
    timeline.on_one_clock(figs, over, [])
    for fig in figs:  # named on each chart, above the plot (inside it, the lines ran over the words)
        (shade,) = [s for s in fig.layout.shapes if s.type == "rect"]
        assert (shade.x0, shade.x1) == (2.0, 4.0)
        (said,) = [a for a in fig.layout.annotations if a.text == "no arrivals"]
        assert said.yref == "y domain" and said.y == 1 and said.yanchor == "bottom"
    lull = _over([0.9, None, 0.95])
    lull["requests"] = [10, 0, 12]
    assert timeline.quiet_from_s(lull) is None  # a quiet minute inside the window is the load's, not an end


def test_the_drain_after_the_window_is_shaded_on_the_pools_charts() -> None:
    """The pools-over-time charts draw the run to its end: after an open loop's window every line fell
    with nothing on the chart to say why (the help said it). The drain is shaded and named."""
    import plotly.graph_objects as go

    run = simulate(short("rent-vs-own", duration_s=300.0))
    over = run.over_time
    assert over is not None and timeline.drain_s(over) > 0
    fig = go.Figure()
    timeline.shade_ends(fig, over)
    (shade,) = fig.layout.shapes
    assert (shade.x0, shade.x1) == (300.0, over["end_s"])
    assert [a.text for a in fig.layout.annotations] == ["drain"]
    flat = go.Figure()
    timeline.shade_ends(flat, _over([0.9, 0.95]))  # a run that ends with its window
    assert not flat.layout.shapes
    # a trace that ends before the window: its quiet last minute, in seconds, on these charts too
    quiet = _over([0.9, 0.95, None])
    quiet["requests"] = [10, 12, 0]
    seconds = go.Figure()
    timeline.shade_ends(seconds, quiet)
    assert [(s.x0, s.x1) for s in seconds.layout.shapes] == [(120.0, 180.0)]
    assert [a.text for a in seconds.layout.annotations] == ["no arrivals"]
    # beside a legend (the pools over time): shaded only, and a caption under the charts says it
    quietly = go.Figure()
    timeline.shade_ends(quietly, over, said=False)
    assert len(quietly.layout.shapes) == 1 and not quietly.layout.annotations
    said = timeline.ends_caption(over)
    assert f"drains for {timeline.drain_s(over):,.0f} s" in said and said.startswith("Shaded at the end: ")
    assert (
        "from 120 s no request arrives" in timeline.ends_caption(quiet) and timeline.ends_caption(None) == ""
    )


def test_a_days_arrival_chart_reads_its_hours_as_the_day_panel_does() -> None:
    # the Workload page drew a day's rate over seconds (0 to 3,500) beside an "Hour of peak" of 14 and a
    # Results panel in hours: its axis ticks the same hours now
    at = app("workload", _short_day(), preset="day-autoscaled")  # type: ignore[arg-type]
    assert_clean(at)
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    (rate,) = [s for s in specs if "Arrival rate" in json.dumps(s["layout"].get("title", ""))]
    axis = rate["layout"]["xaxis"]
    assert axis["ticktext"] == ["0:00", "6:00", "12:00", "18:00", "24:00"]
    # a 900 s day: its seconds 0, 225, ... drawn at the hours they stand for, the rate's curve with them
    assert axis["tickvals"] == [f"2000-01-0{1 + h // 24}T{h % 24:02d}:00:00" for h in (0, 6, 12, 18, 24)]
    curve = next(t for t in rate["data"] if t.get("name") == "rate")
    assert curve["x"][0].startswith("2000-01-01T00:00") and axis["hoverformat"] == "%-H:%M"
    assert curve["line"]["color"] == "#262730"  # dark over the bars (light blue on blue vanished: a review)
    assert axis["title"]["text"] == "hour of the day (the window read as one day)"


def test_the_attainment_axis_says_zoomed_only_when_it_is() -> None:
    # a collapse to 0% draws the axis from 0 to 100%, and it still read 'met SLO (zoomed)' (a review)
    def over(values: list[float]) -> dict[str, object]:
        n = len(values)
        return {"slo_attainment": values, "target": 0.9, "t_s": [60.0 * i for i in range(n)],
                "window_end_s": 60.0 * n, "events": []}  # fmt: skip

    fell = timeline.attainment_chart(over([0.99, 0.4, 0.0]))
    held = timeline.attainment_chart(over([0.99, 0.95, 0.97]))
    assert fell.layout.yaxis.title.text == "met SLO" and fell.layout.yaxis.range[0] == 0.0
    assert held.layout.yaxis.title.text == "met SLO (zoomed)" and held.layout.yaxis.range[0] > 0.0


@pytest.mark.parametrize(
    ("preset", "unit", "limit", "label"),
    [
        ("power-capped-site", "kW", 6.0, "site cap 6 kW, each chip's share while busy"),
        ("edge-offload", "W", 60.0, "edge budget 60 W"),
    ],
)
def test_the_power_chart_draws_the_limits_its_chips_are_held_to(
    preset: str, unit: str, limit: float, label: str
) -> None:
    """power-capped-site's chart showed its pools and no 6 kW; edge-offload's site sat at 0.04 on a kW axis
    with no 60 W budget (a browser review): each limit is a dashed line, the pools' sum under a site cap,
    and a chart under 1 kW reads in W."""
    from engine.scenario.codec import load_preset
    from engine.serving.run import simulate

    sc = load_preset(preset)
    over = simulate(sc).over_time
    assert over is not None
    fig = timeline.power_chart(over, sc)
    assert fig.layout.yaxis.title.text == unit
    assert [(s.y0, s.line.dash) for s in fig.layout.shapes] == [(limit, "dash")]
    assert [a.text for a in fig.layout.annotations] == [label]
    scale = 1e3 if unit == "W" else 1.0
    pools = list(over["power_kw"])
    lines = {t.name: list(t.y) for t in fig.data}
    assert lines[pools[0]][0] == pytest.approx(over["power_kw"][pools[0]][0] * scale)
    if preset == "power-capped-site":  # what the site's cap holds: the pools together, under it
        together = lines["data-centre pools"]
        assert together[0] == pytest.approx(sum(over["power_kw"][p][0] for p in pools))
        assert max(together) <= limit


def test_the_power_chart_keeps_the_edge_site_apart_and_a_far_cap_off_the_chart() -> None:
    """A site cap's sum took in the edge site's pools, which its budget holds instead; a 20 kW cap over
    0.2 kW flattened every line; an edge budget beside kilowatts of data centre sat at 0.06 on a kW axis
    (a review): the sum is the data-centre pools', a far limit is named in the title, and the edge site's
    pools and budget take a right-hand axis in W."""
    from engine.scenario.codec import apply_overrides, load_preset
    from engine.serving.run import simulate

    far = apply_overrides(load_preset("edge-offload"), {"deployment.power_cap_kw": 20})
    fig = timeline.power_chart(simulate(far).over_time, far)
    assert "site cap 20 kW (far above)" in fig.layout.title.text
    assert [a.text for a in fig.layout.annotations] == ["edge budget 60 W"]
    assert "data-centre pools" not in {t.name for t in fig.data}  # one data-centre pool: no sum to draw
    busy = apply_overrides(load_preset("edge-offload"), {"deployment.pools[0].count": 8})
    over = simulate(busy).over_time
    assert over is not None
    fig = timeline.power_chart(over, busy)
    assert fig.layout.yaxis.title.text == "kW" and fig.layout["yaxis2"].title.text == "edge site (W)"
    site = next(t for t in fig.data if t.name == "site")
    assert site.yaxis == "y2" and site.y[0] == pytest.approx(over["power_kw"]["site"][0] * 1e3)
    assert [(s.y0, s.yref) for s in fig.layout.shapes] == [(60.0, "y2")]
