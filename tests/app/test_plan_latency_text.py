"""How the planner writes a latency and its band: in the figure's unit, and held apart from its target."""

from __future__ import annotations


def test_a_verdict_latency_band_reads_in_its_figures_unit() -> None:
    """'TTFT p99 12.0 s (9,000 to 15,000)' mixed seconds and bare milliseconds."""
    from ui.plan_verdict import _ms_band

    assert _ms_band([9000.0, 15000.0], 12000.0) == " (9.0 to 15.0)"
    assert (
        _ms_band([230.4, 500.2], 332.0) == " (230 to 500)"
        and _ms_band([30.61, 64.8], 42.9) == " (30.6 to 64.8)"
    )
    assert _ms_band(None, 12.0) == "" and _ms_band([1.0, 2.0], None) == ""


def test_a_latency_that_would_read_as_its_target_says_which_side_it_is_on() -> None:
    """'TPOT p90 21.2 ms (15.2 to 30.0) (target 30.0 ms)' and the margin's 'TPOT p90 30.0 ms' read as a
    pass and a fail alike, where the slowed run's TPOT was 29.96 ms (a browser review): a figure or a
    band's end that rounds to its target without being it takes more decimals, in every place it is said."""
    from engine.cli.plan_verdict import _band, _ms
    from engine.core.numbers import places_apart
    from engine.planning.margin import Check
    from ui.plan_verdict import _apart, _ms_band

    assert [places_apart(v, 30.0, 1) for v in (29.96, 30.04, 30.0, 21.2)] == [2, 2, 1, 1]
    assert places_apart(999.6, 1000.0, 0) == 1 and places_apart(29.96, None, 1) == 1
    assert _ms_band([15.2, 29.96], 21.2, 30.0) == " (15.2 to 29.96)" and _apart(29.96, 30.0) == "29.96 ms"
    assert _ms_band([15.2, 29.96], 21.2) == " (15.2 to 30.0)"  # no target known: as before
    assert _band([15.2, 29.96], ".1f", 21.2, 30.0) == " (15.2 to 29.96)" and _ms(29.96, 30.0) == "29.96 ms"
    assert _ms(1000.4, 1000.0) == "1,000.4 ms" and _ms(30.0, 30.0) == "30.0 ms"
    assert _ms(29.99956, 30.0) == "29.9996 ms"  # at three decimals it still read '30.000' (a browser check)
    from engine.core import format_apart, target_of

    assert format_apart(29.99956, ",.1f", 30.0) == "29.9996" and format_apart(1234.4, ",.0f", None) == "1,234"
    per = {"chat": {"tpot_ms": 29.96, "tpot_target_ms": 30.0, "ttft_ms": 700.0, "ttft_target_ms": 1000.0}}
    assert target_of(per, "tpot_ms", 29.96) == 30.0 and target_of(per, "ttft_ms", 29.96) is None
    one = {"chat": {"ttft_ms": 444.0, "ttft_target_ms": 1000.0, "tpot_ms": 29.96, "tpot_target_ms": 30.0}}
    check = Check(
        run=0, passes=True, slo_attainment=0.865, goodput_rps=19.1, ttft_ms_p90=444.0, tpot_ms_p90=29.96,
        ttft_ms_at_slo=444.0, tpot_ms_at_slo=29.96, classes=one,
    )  # fmt: skip
    assert check.latency_text() == "TTFT p90 444 ms, TPOT p90 29.96 ms"
