"""The highest rate and the longest window whose run the work bound admits (`runnable_rate_rps`,
`runnable_duration_s`), which the Workload page's boxes stop at."""

from __future__ import annotations

import pytest

from engine import apply_overrides, load_preset
from engine.core import bounds
from engine.explain.rate_scale import runnable_duration_s, runnable_rate_rps
from engine.serving.work_bound import estimate


def test_the_bound_runs_and_a_tenth_more_does_not() -> None:
    sc = load_preset("chat-disaggregated")
    rate, window = runnable_rate_rps(sc), runnable_duration_s(sc)
    assert rate is not None and window is not None
    assert not estimate(apply_overrides(sc, {"workload.arrival.rate_rps": rate})).problems()
    assert estimate(apply_overrides(sc, {"workload.arrival.rate_rps": 1.1 * rate})).problems()
    assert not estimate(apply_overrides(sc, {"duration_s": window})).problems()
    assert estimate(apply_overrides(sc, {"duration_s": 1.1 * window})).problems()


def test_a_short_window_reaches_the_documented_bounds_and_a_trace_has_none() -> None:
    short = apply_overrides(load_preset("chat-disaggregated"), {"duration_s": 10.0})
    assert runnable_rate_rps(short) == bounds.MAX_RATE_RPS
    assert runnable_duration_s(load_preset("rag-long-context")) == bounds.MAX_DURATION_S
    assert runnable_rate_rps(load_preset("mooncake-replay")) is None  # a trace: its rows are the load
    assert runnable_duration_s(load_preset("mooncake-replay")) is None


def test_a_bound_no_window_meets_reads_the_shortest_window_and_never_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A work bound lowered (in a test) made the window 0.89 s, under the shortest allowed: the page then
    failed to build the scenario to estimate it."""
    monkeypatch.setattr(bounds, "MAX_EVENTS", 100)
    sc = load_preset("chat-disaggregated")
    assert runnable_duration_s(sc) == bounds.MIN_DURATION_S
    rate = runnable_rate_rps(sc)
    assert rate is not None and 0 < rate < 1
