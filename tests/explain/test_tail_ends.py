"""Where the SLO page's latency-by-percentile curves stop (`engine.explain.tail_ends`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.explain.presentation import tail_curves
from engine.explain.tail_ends import tail_end_text
from engine.scenario.codec import load_preset
from engine.serving.run import simulate


def _curve(name: str, lat: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {"class": name, "percentile": [50.0, 90.0, 95.8754, 99.0][: len(lat)], "latency_ms": lat}
    )


def test_a_curve_that_runs_out_of_answers_is_said_where_it_stops() -> None:
    frame = pd.concat(
        [
            _curve("chat", [10.0, 20.0, 30.0, 40.0]),
            _curve("batch", [10.0, 20.0, 30.0, np.inf]),
            _curve("long", [np.inf] * 4),
        ],
        ignore_index=True,
    )
    said = tail_end_text(frame)
    assert said.startswith("Curves that stop early: batch at p95.9 and long before p50.")
    assert "rejected or never finished" in said
    assert tail_end_text(_curve("chat", [10.0, 20.0, 30.0, 40.0])) == ""


def test_a_preset_that_rejects_requests_says_its_curves_stop() -> None:
    sc = load_preset("enterprise-mixed")
    res = simulate(sc.model_copy(update={"duration_s": 300.0}))
    said = tail_end_text(tail_curves(sc, res.requests, "ttft"))
    rejected = res.summary["requests"]["rejected"]
    assert rejected > 0 and "batch at p" in said


def test_a_curve_stops_where_its_requests_stop_completing() -> None:
    """The curve's last point is the share that completed, so the caption says where it stops as the
    verdict's 'holds to' does (on the percentiles' grid alone: 'stops at p91.6' beside 'holds to p92.9',
    a review)."""
    sc = load_preset("enterprise-mixed")
    res = simulate(sc.model_copy(update={"duration_s": 300.0}))
    curves = tail_curves(sc, res.requests, "ttft")
    t = res.requests
    window = (t["arrival_s"] >= sc.warmup_s) & (t["arrival_s"] < sc.duration_s) & (t["class"] == "batch")
    done = 100.0 * float((t.loc[window, "outcome"] == "completed").mean())
    batch = curves[curves["class"] == "batch"]
    finite = batch[np.isfinite(batch["latency_ms"])]
    assert finite["percentile"].max() == np.float64(done)
    assert f"batch at p{round(done, 1):g}" in tail_end_text(curves)


def test_the_line_runs_on_to_where_its_requests_stop() -> None:
    """With 'higher', a grid percentile just under the share that completed falls on the first late
    request: the line broke there and its last point sat alone (93 of 100 answered: p92.98 infinite,
    p93 finite; a review). Every percentile under the stop has a latency."""
    import numpy as np
    import pandas as pd

    from engine.explain import presentation as pr

    sc = load_preset("chat-colocated")
    t = pd.DataFrame(
        {
            "class": "chat",
            "arrival_s": np.linspace(sc.warmup_s + 1, sc.duration_s - 1, 100),
            "outcome": ["completed"] * 93 + ["rejected"] * 7,
            "ttft_s": [0.1 + 0.001 * i for i in range(93)] + [np.nan] * 7,
        }
    )
    curves = pr.tail_curves(sc, t, "ttft", percentiles=(50.0, 90.0, 92.98, 99.0))
    below = curves[curves["percentile"] <= 93.0]
    assert np.isfinite(below["latency_ms"]).all() and below["percentile"].max() == 93.0
