"""The Results page's autoscaling panel (ui/timeline.py, issue 34): drawn from the run's timeline, only when it has one."""

from __future__ import annotations

import pytest

from engine.scenario.codec import apply_overrides, load_preset
from engine.serving.run import simulate
from tests.app.test_app import app, assert_clean, scenario_of
from ui import timeline


def _short_day() -> object:
    return apply_overrides(load_preset("day-autoscaled"), {"duration_s": 900.0})


def test_the_charts_draw_the_engines_timeline_and_mark_its_events() -> None:
    s = simulate(_short_day()).summary  # type: ignore[arg-type]
    auto = dict(s["autoscale"])
    fig = timeline.instances_chart(auto)
    lines = [t for t in fig.data if t.mode == "lines"]
    assert [t.name for t in lines] == ["prefill", "decode"]
    assert list(lines[0].y) == auto["timeline"]["instances"]["prefill"]
    marks = {t.name: len(t.x) for t in fig.data if t.mode == "markers"}
    ups = sum(1 for _, _, a in auto["events"] if a == "request")
    assert marks.get("scale-up requested", 0) == ups > 0
    slo = timeline.attainment_chart(auto)
    assert list(slo.data[0].y) == auto["timeline"]["slo_attainment"]
    labels = [label for label, _, _ in timeline.figures(auto)]
    assert labels == ["Instance-hours", "Scale-ups / downs", "Cold start", "Misses while starting"]


def test_the_axis_titles_fit_beside_the_plot() -> None:
    # a 320 px chart has about 250 px of plot: a longer y title ran into the chart's title (seen in Chromium)
    auto = {
        "timeline": {"t_s": [0.0, 60.0], "slo_attainment": [1.0, 0.9], "instances": {"prefill": [1.0, 2.0]}},
        "events": [(30.0, "prefill", "request")],
    }
    for fig in (timeline.attainment_chart(auto), timeline.instances_chart(auto)):
        assert len(fig.layout.yaxis.title.text) <= 20, fig.layout.yaxis.title.text


@pytest.mark.slow
def test_results_shows_the_panel_for_an_autoscaled_run_only() -> None:
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
    assert "Over the day: autoscaling" not in [h.value for h in fixed.subheader]


def test_the_workload_page_sets_the_hour_of_peak_of_a_daily_curve() -> None:
    at = app("workload", _short_day(), preset="day-autoscaled")  # type: ignore[arg-type]
    assert_clean(at)
    box = next(n for n in at.number_input if n.label == "Hour of peak")
    assert box.value == 14.0
    box.set_value(18.0).run()
    assert_clean(at)
    assert scenario_of(at).workload.arrival.peak_hour == 18.0
