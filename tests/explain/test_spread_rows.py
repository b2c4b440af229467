"""Compare's band column from each side's run spread (`engine.explain.spread_rows`)."""

from __future__ import annotations

from engine.explain.spread_rows import spread_errors

KINDS = ["−22% to +30%", "−26% to +10%", None, "−22% to +6%", "−6% to +29%", "−20% to +5%"]
LABELS = [
    "Throughput",
    "TPOT p99",
    "SLO attainment",
    "Goodput",
    "Cost per request",
    "Energy per output token",
]


def test_the_column_reads_the_spreads_together_where_they_move_a_figure() -> None:
    a = {
        "throughput_rps": (0.0, 0.0),
        "tpot_p99_ms": (0.05, -0.02),
        "slo_attainment": (-0.02, 0.001),
        "goodput_rps": (-0.95, 0.02),
        "usd_per_request": (0.03, -0.02),
    }
    b = {
        "throughput_rps": (-0.01, 0.0),
        "tpot_p99_ms": (0.2, -0.1),
        "slo_attainment": (-0.05, 0.0),
        "goodput_rps": (-0.5, 0.03),
        "usd_per_request": (0.07, -0.05),
    }
    out = spread_errors(LABELS, [], [], (a, b), KINDS)
    assert out[0] == "−1% to +0%"  # the spreads, not the kind's −22% to +30%
    assert out[1] == "−10% to +20%"  # no pool marks: no kind's band to keep at least
    assert out[2] == "−5.0 to +0.1 pts"
    # A's goodput falls to nothing (no band on its card): no band says both (B's alone read as A's and
    # B's together understated A's fall: a review saw "−3.8 to +0.3 pts" beside B's cliff)
    assert out[3] is None
    assert out[4] == "−5% to +7%"
    assert out[5] == "−20% to +5%"  # energy: no spread, its kind's band stays


def test_a_figure_no_card_bands_reads_none_and_no_spread_keeps_the_kinds() -> None:
    gone = {"goodput_rps": (-0.95, 0.0), "slo_attainment": (-0.97, 0.0)}
    out = spread_errors(["Goodput", "SLO attainment", "TTFT p99"], [], [], (gone, gone), ["x", None, "y"])
    assert out == [None, None, "y"]  # as the cards: no band where it falls to nothing or spans all


def test_a_latencys_middle_percentiles_read_their_spread_as_its_p99_does() -> None:
    a = {"ttft_p50_ms": (0.1, -0.05), "ttft_p90_ms": (0.3, -0.1), "e2e_p50_ms": (0.02, -0.01)}
    b = {"ttft_p50_ms": (0.2, -0.02), "ttft_p90_ms": (0.5, -0.2), "e2e_p50_ms": (0.04, -0.03)}
    out = spread_errors(
        ["TTFT p50", "TTFT p90", "E2E p50", "TPOT p50"], [], [], (a, b), [None, None, "k", "t"]
    )
    # no spread of TPOT p50: its kind's
    assert out == ["−5% to +20%", "−20% to +50%", "−3% to +4%", "t"]
