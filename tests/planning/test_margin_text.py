"""The margin's check in words: its latencies at the SLO's percentile, and with several classes the class
each figure is of. Split from tests/planning/test_verdict.py at 600 lines."""

from __future__ import annotations

from dataclasses import replace


def test_the_margins_check_speaks_the_slos_percentile() -> None:
    from engine.planning.margin import Check

    c = Check(run=0, passes=False, slo_attainment=0.5, goodput_rps=1.0, ttft_ms_p90=800.0, tpot_ms_p90=30.0,
              slo_percentile=99.0, ttft_ms_at_slo=1200.0, tpot_ms_at_slo=41.0)  # fmt: skip
    assert c.latency_text() == "TTFT p99 1,200 ms, TPOT p99 41.0 ms"
    old = Check(run=0, passes=True, slo_attainment=1.0, goodput_rps=1.0, ttft_ms_p90=80.0, tpot_ms_p90=30.0)
    assert old.latency_text() == "TTFT p90 80.0 ms, TPOT p90 30.0 ms"  # a check made before it knew the SLO's


def test_the_margins_check_names_the_class_its_figures_are_of() -> None:
    """A multi-class run's 'TTFT p90' was the highest class's without naming it (a review)."""
    from engine.explain.sustain import latency
    from engine.planning.margin import Check, highest

    per = {"chat": {"ttft_ms": 300.0, "tpot_ms": 41.0}, "batch": {"ttft_ms": 9000.0, "tpot_ms": 25.0}}
    assert (highest(per, "ttft_ms"), highest(per, "tpot_ms")) == ("batch", "chat")
    assert highest({"chat": per["chat"]}, "ttft_ms") is None  # one class: nothing to name
    assert highest({**per, "late": {"ttft_ms": None, "tpot_ms": None}}, "ttft_ms") == "late"  # never served
    c = Check(run=0, passes=False, slo_attainment=0.5, goodput_rps=1.0, ttft_ms_p90=800.0, tpot_ms_p90=30.0,
              ttft_ms_at_slo=9000.0, tpot_ms_at_slo=41.0, ttft_class="batch", tpot_class="chat")  # fmt: skip
    assert c.latency_text() == (
        "TTFT p90 9,000 ms (batch, the highest of the classes), TPOT p90 41.0 ms (chat, the highest of the classes)"
    )
    # with each class's targets known, the class nearest its target is named: batch's 9,000 ms is far
    # under its 30 s, chat's 862 ms near its 1,000 (a browser review)
    per = {
        "chat": {
            "percentile": 90.0,
            "ttft_ms": 862.0,
            "tpot_ms": 12.9,
            "ttft_target_ms": 1000.0,
            "tpot_target_ms": 30.0,
        },
        "batch": {
            "percentile": 99.0,
            "ttft_ms": 9000.0,
            "tpot_ms": 25.0,
            "ttft_target_ms": 30000.0,
            "tpot_target_ms": 50.0,
        },
    }
    c = replace(c, classes=per)
    assert c.latency_text() == (
        "TTFT p90 862 ms (chat, of the classes the nearest to its target), "
        "TPOT p99 25.0 ms (batch, of the classes the nearest to its target)"
    )
    # the requests decoding pile up while the first token keeps its pace: TTFT level, TPOT growing
    decoding = Check(run=0, passes=False, slo_attainment=0.5, goodput_rps=1.0, ttft_ms_p90=80.0, tpot_ms_p90=90.0,
                     shortfall_rps=3.0, grows_rps=3.0, tpot_grows_rps=3.0, ttft_grows_rps=None)  # fmt: skip
    assert decoding.latency_text(latency) == (
        "TTFT p90 80.0 ms, at saturation; TPOT p90 90.0 ms, grows with run length"
    )
