"""The Planner's table of every run says what each run's queue did beside its figures."""

from __future__ import annotations

import math

import pandas as pd

from engine.planning import queue_words


def test_a_run_that_falls_behind_or_stands_at_capacity_is_said_beside_its_figures() -> None:
    """A run at capacity printed TTFT p90 6,957 ms and the table's lowest $/M bare (a browser review)."""
    runs = pd.DataFrame(
        {"shortfall_rps": [None, 3.14, math.nan, None], "standing_requests": [None, None, 35.0, math.nan]}
    )
    assert queue_words(runs) == ["", "grows, short by 3.1 req/s", "no headroom", ""]
    assert queue_words(pd.DataFrame({"run": [1, 2]})) == ["", ""]  # a plan kept from before the columns
    assert queue_words(pd.DataFrame({"shortfall_rps": [123.4]})) == [
        "grows, short by 123 req/s"
    ]  # not 1.2e+02


def test_the_planners_table_carries_the_queue_column() -> None:
    from ui import tables

    assert "queue" in tables.PLAN_RUNS and "no headroom" in tables.PLAN_RUNS["queue"]["help"]
