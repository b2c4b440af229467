"""engine.planning.frontier: the planner's Pareto frontiers hold passing runs only."""

from __future__ import annotations

import pandas as pd

from engine.planning.frontier import pareto, passing_frontier, passing_frontiers


def runs(passes: list[bool]) -> pd.DataFrame:
    """Four runs: a cheap one with little goodput, a good one, a dominated one, a dear fast one."""
    return pd.DataFrame(
        {
            "run": [0, 1, 2, 3],
            "passes": passes,
            "usd_per_hour": [10.0, 20.0, 30.0, 40.0],
            "goodput_rps": [0.5, 10.0, 9.0, 15.0],
            "tokens_per_s_per_user": [5.0, 40.0, 30.0, 20.0],
            "goodput_tokens_per_s_per_chip": [900.0, 500.0, 400.0, 600.0],
            "on_cost_frontier": [True, True, False, True],
            "on_throughput_frontier": [True, True, False, True],
        }
    )


def test_a_cheap_failing_run_is_on_the_plain_frontier_but_not_on_the_passing_one() -> None:
    frame = runs([False, True, True, True])
    assert pareto(frame, "usd_per_hour", "goodput_rps", maximize_x=False, maximize_y=True)[0]
    flags = passing_frontier(frame, "usd_per_hour", "goodput_rps", maximize_x=False, maximize_y=True)
    assert flags.tolist() == [False, True, False, True]


def test_both_flags_are_recomputed_and_nothing_else_changes() -> None:
    frame = runs([False, True, True, True])
    out = passing_frontiers(frame)
    assert out["on_cost_frontier"].tolist() == [False, True, False, True]
    assert out["on_throughput_frontier"].tolist() == [False, True, False, True]
    assert not (out["on_cost_frontier"] & ~out["passes"]).any()
    rest = [c for c in frame if not c.startswith("on_")]
    pd.testing.assert_frame_equal(out[rest], frame[rest])
    assert frame["on_cost_frontier"][0]  # the input is left as it was


def test_no_passing_run_means_no_frontier() -> None:
    out = passing_frontiers(runs([False] * 4))
    assert not out["on_cost_frontier"].any() and not out["on_throughput_frontier"].any()


def test_no_runs_is_unchanged() -> None:
    empty = pd.DataFrame()
    assert passing_frontiers(empty).empty


def test_the_cost_frontier_follows_the_objective() -> None:
    """A power plan's frontier is power against goodput: two passing runs at the same $/h, one
    drawing less power and one serving more, are both on it; on $/h only the one serving more."""
    runs = pd.DataFrame(
        {
            "passes": [True, True],
            "power_w": [2773.0, 2790.0],
            "usd_per_hour": [12.80, 12.80],
            "goodput_rps": [7.67, 8.13],
            "tokens_per_s_per_user": [40.0, 40.0],
            "goodput_tokens_per_s_per_chip": [100.0, 100.0],
        }
    )
    assert passing_frontiers(runs, "power")["on_cost_frontier"].tolist() == [True, True]
    assert passing_frontiers(runs)["on_cost_frontier"].tolist() == [False, True]
