"""A figure and its target in one unit: 'E2E p90 = 10.1 s (target 5,000 ms)' mixed them (a review)."""

from __future__ import annotations

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
    assert layout.fmt_rps(0.0) == "0.00 req/s" and layout.fmt_rps(None) == "–"
