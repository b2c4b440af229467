"""A figure and its target in one unit: 'E2E p90 = 10.1 s (target 5,000 ms)' mixed them (a review)."""

from __future__ import annotations

import pytest

from engine.scenario.codec import apply_overrides, load_preset
from tests.app.harness import app, text_of
from ui import layout


def test_a_target_reads_in_its_figures_unit() -> None:
    assert layout.fmt_target(5000.0, 10_123.0) == "5.0 s" and layout.fmt_target(5000.0, 4000.0) == "5,000 ms"
    assert layout.fmt_target(30.0, 19.4) == "30.0 ms" and layout.fmt_target(None, 1.0) == "–"
    sc = apply_overrides(load_preset("chat-disaggregated"), {"workload.classes[0].slo.e2e_ms": 5000.0})
    at = app("slo", sc)
    said = " ".join(text_of(e.value) for e in (*at.error, *at.success, *at.info))
    assert "E2E p90 = " in said and " s (target 5.0 s)" in said and "(target 5,000 ms)" not in said, said


def test_the_strips_uncalibrated_pools_read_in_the_badges_size() -> None:
    """'decode on h200' beside the strip's 'uncalibrated' badge was in a larger font than the strip (a review)."""
    from tests.app.harness import short

    at = app("slo", short("moe-deepseek-h200"), "moe-deepseek-h200")
    line = next(m.value for m in at.sidebar.markdown if "-badge[" in m.value and "uncalibrated" in m.value)
    assert ":small[" in line and "on h200" in line.split(":small[", 1)[1], line


def test_a_day_presets_shape_can_leave_diurnal() -> None:
    """On day-autoscaled, picking 'flat' was refused ('only a diurnal shape has an hour of peak') and the box
    snapped back, with no word of clearing the hour by hand (a review): the hour goes with the shape."""
    from tests.app.harness import scenario_of, short

    at = app("workload", short("day-autoscaled"), "day-autoscaled")
    assert scenario_of(at).workload.arrival.peak_hour is not None
    next(s for s in at.selectbox if s.label == "Shape").set_value("flat").run()
    assert not at.exception, [e.value for e in at.exception]
    arr = scenario_of(at).workload.arrival
    assert (arr.shape, arr.peak_hour) == ("flat", None)


def test_a_shared_prefix_is_said_beside_the_prompt_preview() -> None:
    """With a 4,000-token shared prefix the prompt preview still read 'mean 518' and Max 16384 with no word, and
    the prefix's Tokens help read 'Tokens of every request.' (a review)."""
    from engine.scenario.codec import apply_overrides
    from tests.app.harness import short

    sc = apply_overrides(short(), {"workload.classes[0].prefix.tokens": 4000})
    at = app("workload", sc)
    assert any("carries these 4,000 tokens before its own" in text_of(c.value) for c in at.caption)
    box = next(
        n for n in at.number_input if n.label.startswith("Tokens") and "shared prefix" in (n.help or "")
    )
    assert "on top of the prompt's own tokens" in box.help
    plain_run = app("workload", short())
    assert not any("tokens before its own" in text_of(c.value) for c in plain_run.caption)


def test_a_tiny_rate_reads_its_digits() -> None:
    """A 2-request trace's goodput of 0.0033 req/s read 'Goodput 0.00 req/s' (a review)."""
    assert layout.fmt_rps(0.0033) == "0.0033 req/s" and layout.fmt_rps(12.345) == "12.35 req/s"
    assert layout.fmt_rps(0.0314) == "0.0314 req/s"  # edge-npu: "0.03" rounded by more than its band
    assert layout.fmt_rps(0.0) == "0.00 req/s" and layout.fmt_rps(None) == "–"


def test_a_backlogs_cdf_reads_in_seconds_and_its_hover_in_the_unit_that_fits() -> None:
    """A backlog's TTFTs (minutes) read '1M' ms on the CDF's axis and '1,237,887.1 ms' in its hover beside a
    card of '≥ 56.4 min' (a review): past 100 s the axis is in seconds, each hover in its own unit."""
    import pandas as pd

    from ui import charts

    frame = pd.DataFrame(
        {"class": ["chat"] * 3, "latency_ms": [80.0, 9_000.0, 1_237_887.1], "fraction": [0.3, 0.6, 0.9]}
    )
    targets = pd.DataFrame([{"metric": "ttft", "class": "chat", "target_ms": 1000.0, "percentile": 90.0}])
    fig = charts.cdf(frame, "ttft", targets)
    assert fig.layout.xaxis.title.text.endswith("(s)")
    assert list(fig.data[0].x) == pytest.approx([0.08, 9.0, 1237.8871])
    assert list(fig.data[0].customdata) == ["80.0 ms", "9,000 ms", "20.6 min"]
    assert [s.x0 for s in fig.layout.shapes if s.line.dash == "dash"] == [1.0]  # the 1,000 ms target, at 1 s
    quick = charts.cdf(frame.assign(latency_ms=[80.0, 90.0, 95.0]), "ttft", targets)
    assert quick.layout.xaxis.title.text.endswith("(ms)") and list(quick.data[0].x) == [80.0, 90.0, 95.0]


def test_a_per_class_latency_of_ten_seconds_or_more_reads_in_seconds() -> None:
    """enterprise-mixed's batch read '22,387 ms / 30,000 ms' in the per-class table beside the advisor's and
    the SLO page's '22.4 s of 30.0 s' (a browser review): a TTFT or E2E pair that long reads in s."""
    import pandas as pd

    from ui import tables

    view = pd.DataFrame(
        {
            "class": ["interactive", "batch"],
            "ttft_at_percentile_ms": [812.0, 22387.0],
            "ttft_target_ms": [1500.0, 30000.0],
            "tpot_at_percentile_ms": [31.2, 180.0],
            "tpot_target_ms": [40.0, 200.0],
        }
    )
    out, cols = tables.in_seconds(view, tables.slo_tail_columns(set()))
    assert list(out["ttft_at_percentile_ms"]) == [0.812, 22.387] and list(out["ttft_target_ms"]) == [
        1.5,
        30.0,
    ]
    assert cols["ttft_target_ms"]["type_config"]["format"] == "%,.1f s"
    assert list(out["tpot_target_ms"]) == [40.0, 200.0]  # TPOT stays in ms
    assert cols["tpot_at_percentile_ms"]["type_config"]["format"] == "%.1f ms"
    short, kept = tables.in_seconds(view.head(1), tables.slo_tail_columns(set()))
    assert short.equals(view.head(1)) and kept["ttft_target_ms"]["type_config"]["format"] == "%,.0f ms"
    assert (
        tables.SLO_TAIL["ttft_target_ms"]["type_config"]["format"] == "%,.0f ms"
    )  # the shared config intact
