"""Saturation among the requests decoding: a decode pool whose memory holds every request batches
them all, each step slows as the batch grows, and no queue forms before the first token, so the
queue's rule never marked it (decode-asic pushed past its capacity read a TPOT p90 of 169 ms over
120 s and 1,013 ms over 1,200 s, `unsustainable` null: a review, 2026-12-05)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.cli.main import main
from engine.explain import sustain
from engine.serving.run import SimResult, simulate
from tests.simhelp import small

OVER = 24.0  # decode-asic's 16 req/s one and a half times: its four ASICs keep up with about 20.5


def _run(preset: str = "decode-asic", **over: Any) -> SimResult:
    return simulate(small(preset, **{"duration_s": 600.0, **over}))


@pytest.fixture(scope="module")
def overloaded() -> SimResult:
    return _run(**{"workload.arrival.rate_rps": OVER})


def test_batches_that_fall_behind_without_a_queue_are_marked(overloaded: SimResult) -> None:
    s = overloaded.summary
    mark = s["unsustainable"]
    assert mark is not None and mark.get("backlog") == "decoding", mark
    # the shortfall is what piles up: arrivals less completions per second over the second half
    t = overloaded.requests
    lo, hi = 300.0, 600.0
    offered = float(((t["arrival_s"] >= lo) & (t["arrival_s"] < hi)).sum()) / (hi - lo)
    completed = float(((t["completion_s"] >= lo) & (t["completion_s"] < hi)).sum()) / (hi - lo)
    assert mark["offered_rps"] == pytest.approx(offered)
    assert mark["shortfall_rps"] == pytest.approx(offered - completed, rel=0.2)
    assert 19.0 < mark["sustained_rps"] < 22.0
    # no queue before the first token: the backlog is among the requests decoding, whose pace slows
    assert "queue_rising" not in s
    late = t[t["arrival_s"] >= 500.0]["tpot_s"].median()
    early = t[(t["arrival_s"] >= 200.0) & (t["arrival_s"] < 300.0)]["tpot_s"].median()
    assert late > 1.5 * early, (late, early)
    assert "tpot" not in mark.get("steady", [])
    line = sustain.line(s)
    assert line is not None and "The requests decoding pile up through the window" in line, line
    assert "TPOT" in line.split("grow with the run's length")[0], line


def test_batches_that_keep_up_or_still_fill_are_not_marked() -> None:
    """At 18 and 20 req/s the ASICs keep up (20 req/s holds level over 2,400 s, though its 600 s
    window's second half gains requests decoding); the portfolio's long batch answers fill their
    batches for minutes and its heavy-tailed answers offer 7% more tokens in the half window than
    over 1,200 s: neither is a backlog."""
    for rate in (18.0, 20.0):
        s = _run(**{"workload.arrival.rate_rps": rate}).summary
        assert s["unsustainable"] is None and "queue_rising" not in s, (rate, s["unsustainable"])
    s = _run("portfolio-chat-batch").summary
    assert s["unsustainable"] is None and "queue_rising" not in s, s["unsustainable"]


def test_a_queue_that_rises_is_judged_by_the_queues_rule() -> None:
    """portfolio-decode-loss loses its chat decode pool at 300 s: requests in the system pile up, but
    the backlog is its queue for decode memory, which began rising in the half window: too late to
    tell from a burst, so it is said as rising, not marked by the rule for batches."""
    s = _run("portfolio-decode-loss").summary
    assert s["unsustainable"] is None and s.get("queue_rising") is not None


def test_the_cli_says_where_the_backlog_grows(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", "decode-asic", "--set", f"workload.arrival.rate_rps={OVER}", "--set", "duration_s=300"]
    assert main([*args, "--json"]) == 0
    mark = json.loads(capsys.readouterr().out)["unsustainable"]
    assert mark["backlog"] == "decoding" and mark["shortfall_rps"] > 1.0, mark
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "The requests decoding pile up through the window" in out
    tpot = next(line for line in out.splitlines() if line.lstrip().startswith("tpot"))
    assert "grows with run length" in tpot, tpot
