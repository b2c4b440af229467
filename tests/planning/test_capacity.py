"""The capacity search's edges: the bounds a caller gives, and the work bound on each run."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from engine.cli.main import main
from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.core.numbers import rate_down, rate_up
from engine.planning.capacity import MIN_BEYOND, capacity
from engine.scenario import codec as io
from engine.scenario.model import Scenario


def chat(**over: Any) -> Scenario:
    """The colocated chat preset over a short window (capacity about 19 req/s)."""
    return io.apply_overrides(io.load_preset("chat-colocated"), {"duration_s": 60.0, **over})


@pytest.mark.parametrize(("low", "high"), [(20.0, 10.0), (10.0, 10.0)])
def test_a_low_bound_at_or_above_the_high_one_is_refused(low: float, high: float) -> None:
    with pytest.raises(ScenarioError, match=r"low_rps \(.*\) must be below high_rps"):
        capacity(chat(), low_rps=low, high_rps=high)


def test_a_high_bound_that_passes_is_run_and_said_to_be_a_floor() -> None:
    """low 5, high 10 on a deployment that passes at 10: the answer is at least 10, having run it
    (found in review: 9.84 'none failed', 10 never run)."""
    cap = capacity(chat(), low_rps=5.0, high_rps=10.0, max_simulations=6)
    assert 10.0 in set(cap.runs["rate_rps"])
    assert cap.capacity_rps == 10.0 and cap.failed_rps is None
    assert "high_rps 10 req/s passed: the capacity is at least that" in cap.note


def test_a_low_bound_that_fails_is_searched_below() -> None:
    """low 25, high 40 where the capacity is about 19: both fail, and the search goes below 25
    (found in review: capacity 0, nothing below 25 tried)."""
    cap = capacity(chat(), low_rps=25.0, high_rps=40.0, max_simulations=8)
    rates = list(cap.runs["rate_rps"])
    assert rates[:2] == [40.0, 25.0] and not cap.runs["passes"][:2].any()
    assert 10.0 < cap.capacity_rps < 25.0
    assert "low_rps 25 req/s failed: the capacity is below it" in cap.note


def test_the_work_bound_caps_the_search_instead_of_refusing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the router-look bound lowered so that a minute's run is admitted only up to about 8
    req/s, the search stays below it and says so; it used to start at the cost model's estimate
    (about 57 req/s) and abort with the work bound's refusal of a rate the caller never set."""
    sc = chat()
    per_rps = 60.0 * sum(p.count for p in sc.deployment.pools)  # router looks a req/s brings in a minute
    monkeypatch.setattr(bounds, "MAX_ROUTER_LOOKS", int(8.0 * per_rps))
    cap = capacity(sc, max_simulations=4)
    assert cap.work_bound_rps is not None and 6.0 < cap.work_bound_rps < 8.5
    assert cap.runs["rate_rps"].max() <= cap.work_bound_rps
    # (the probe at the bound cut to six figures, `printed_rate`)
    assert cap.failed_rps is None and cap.capacity_rps == pytest.approx(cap.work_bound_rps, rel=1e-5)
    assert "the most the work bound lets a 60 s run simulate" in cap.note
    lifted = capacity(sc, max_simulations=2, check_work=False)  # no bound, no cap
    assert lifted.work_bound_rps is None and lifted.runs["rate_rps"].max() > 8.5


def test_a_probe_still_rising_at_its_windows_end_is_not_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found in review: a probe whose queue was still rising (too late in its window to be marked
    unsustainable) passed, and the search reported 29.5 req/s for H200s a 240 s run marks short."""
    from engine.planning import capacity as cap_mod

    real = cap_mod.simulate

    def rising_above_12(scenario: Scenario, *args: Any, **kwargs: Any) -> Any:
        res = real(scenario, *args, **kwargs)
        if scenario.workload.arrival.rate_rps > 12.0:  # as if its queue rose at the window's end
            res.summary["queue_rising"] = {"rise_rps": 1.0, "risen_requests": 30.0, "offered_rps": 13.0}
        return res

    monkeypatch.setattr(cap_mod, "simulate", rising_above_12)
    cap = capacity(chat(), max_simulations=12)
    assert cap.capacity_rps <= 12.0  # every probe above 12 req/s not counted, though its classes pass
    rising = cap.runs[cap.runs["rising_rps"].notna()]
    assert len(rising) and not rising["passes"].any() and rising["classes_pass"].any()


def test_a_deployment_that_fails_every_judged_load_has_no_capacity(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 2 ms TPOT target no H100 meets: the search halves its rate until the windows hold no request,
    and those passed (a class with no request has nothing to miss), so it read 'capacity 0.00261 req/s'
    (a review). Nothing judged passes nothing, and the lowest failure is the lowest judged one."""
    from engine.cli.main import main

    sc = chat(**{"workload.classes[0].slo.tpot_ms": 2.0})
    cap = capacity(sc, duration_s=30.0, max_simulations=10)
    assert cap.capacity_rps == 0.0 and not cap.ran_out  # it reached windows with no request: 0, not 'below'
    empty = cap.runs["slo_attainment"].isna()
    assert empty.any() and not cap.runs.loc[empty, "passes"].any()
    assert cap.failed_rps == cap.runs.loc[~empty, "rate_rps"].min()
    argv = ["capacity", "chat-colocated", "--duration-s", "30", "--no-margin", "--no-progress"]
    assert main([*argv, "--set", "workload.classes[0].slo.tpot_ms=2"]) == 0
    out = capsys.readouterr().out.splitlines()
    head = out[:2]
    assert "capacity 0 req/s over a 30 s window (every class" in head[0], head  # no "can read lower"
    empty = [ln for ln in out if "not judged" in ln]
    assert empty and not any("FAILS" in ln for ln in empty), empty  # ('FAILS' beside 'not judged': a review)
    assert not any("about two in three" in ln for ln in head), head  # no band beside no capacity
    # a search the work bound stopped reads its answer as a floor (it printed the bound's rate as the capacity)
    monkeypatch.setattr(
        bounds, "MAX_ROUTER_LOOKS", int(8.0 * 30.0 * sum(p.count for p in sc.deployment.pools))
    )
    assert main([*argv, "--max-simulations", "3"]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert "capacity at least " in head and "none failed" in head, head


def test_a_search_that_ran_out_before_any_rate_passed_says_below_not_zero() -> None:
    """Two simulations, both failing, read 'capacity 0 req/s' (a review): the capacity is below the lowest
    rate that failed, said so, where more simulations would have searched lower."""
    from engine.cli.capacity import _capacity_text

    cap = capacity(io.load_preset("chat-colocated"), max_simulations=2, duration_s=10.0)
    assert cap.capacity_rps == 0 and cap.failed_rps is not None and cap.ran_out
    assert f"below {cap.failed_rps:.3g} req/s, not 0" in cap.note
    assert _capacity_text(cap, [], {}, {}, {}) == f"below {cap.failed_rps:.3g} req/s (no rate tried passed)"
    # a slow edge out of simulations read '(0 to 30.6 ...)', then '(below 15.3 to 30.6 ...)' (reviews)
    from types import SimpleNamespace

    found = {"slower": cap, "faster": SimpleNamespace(capacity_rps=30.6, ran_out=False)}
    shown = SimpleNamespace(capacity_rps=15.3, failed_rps=None, ran_out=False)
    text = _capacity_text(shown, [], found, {"h100-sxm": 0.32}, {"h100-sxm": -0.25})
    assert text.startswith("at least 15.3 req/s (30.6 with every chip at the optimistic edge") and (
        f"below {cap.failed_rps:.3g} at the pessimistic edge, where no rate tried passed" in text
    )


def test_a_capacity_reads_no_higher_than_the_rate_that_passed(capsys: pytest.CaptureFixture[str]) -> None:
    # chat-disaggregated's search passed 24.859 req/s and failed 25.32: the headline read "24.9", and a run
    # at 24.9 failed (a review); a passed rate rounds down, a failed one up
    assert (rate_down(24.859), rate_up(25.32), rate_down(17.5), rate_up(1234.5)) == (
        "24.8",
        "25.4",
        "17.5",
        "1,240",
    )
    assert (rate_up(999.1), rate_down(999.9)) == ("1,000", "999")  # rounded up to 1,000: not 1e+03
    args = ["capacity", "chat-disaggregated", "--set", "duration_s=120", "--no-margin", "--no-progress"]
    assert main(args) == 0
    head = capsys.readouterr().out.splitlines()[0]
    said = re.search(r"capacity ([\d.]+) req/s.*fails at ([\d.]+) req/s", head)
    assert said is not None
    assert main([*args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # the capacity rounded down; the failure at the rate its run was made at ('fails at 25.4' named a run never
    # made, where 25.3196 failed and 25.4 passes: a review)
    assert float(said.group(1)) <= doc["capacity_rps"]
    assert float(said.group(2)) == pytest.approx(doc["failed_rps"], rel=1e-5)


def test_each_probe_runs_at_the_rate_it_prints() -> None:
    """'15.768 req/s passes ... 89.6%' reran at 90.6%: only 15.767507899958868 gave 89.6% (a review). A probe
    runs at its rate cut to six figures, the figure `capacity` prints whole, never above the rate asked."""
    from engine.planning.capacity import PROBE_FIGURES, printed_rate

    for rate in (15.767507899958868, 7.762387850387022, 0.00131234567, 44.8498, 5.0):
        cut = printed_rate(rate)
        assert cut <= rate and float(f"{cut:.{PROBE_FIGURES}g}") == cut and (rate - cut) / rate < 1e-5
    # a short decimal as it is (floored in binary, 8.2 read 8.19999: a review)
    assert [printed_rate(r) for r in (8.2, 4.35, 2.01, 9.95)] == [8.2, 4.35, 2.01, 9.95]


def test_a_capacity_on_a_handful_of_requests_is_called_chance_with_the_target_missed_idle() -> None:
    """H20s read 'capacity 0.0533 req/s' from six requests in a 120 s window, all within target, where
    the TTFT target is missed nearly idle (an infrastructure engineer's review): the note says the pass
    is chance and what the cost model finds missed at any load; a healthy capacity says neither."""
    h20 = {"deployment.pools[0].hardware": "h20", "deployment.pools[1].hardware": "h20"}
    c = capacity(io.apply_overrides(io.load_preset("chat-disaggregated"), h20), duration_s=60)
    held = int(c.runs.loc[c.runs["rate_rps"] == c.capacity_rps, "requests"].iloc[0])
    assert c.capacity_rps > 0 and held * 0.10 < MIN_BEYOND  # p90: a pass may miss 10% of them
    assert f"rests on {held} requests in its 60 s window" in c.note and "its pass is chance" in c.note
    assert "the cost model finds a target missed at any load (prefill: p90 prompt alone takes" in c.note
    healthy = capacity(io.load_preset("chat-disaggregated"), duration_s=60)
    assert healthy.capacity_rps > 10 and "chance" not in healthy.note and "any load" not in healthy.note


def test_a_capacity_over_seeds_passes_in_each_and_the_one_seed_line_holds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """chat-disaggregated's one-seed capacity over 120 s (26.8 req/s) passed in 3 of 10 seeds, and nothing
    said capacity was one seed's (an infrastructure engineer's review): `seeds` asks each of them to pass,
    and docs/planner.md quotes these figures, so they must hold (the line under a one-seed capacity quotes
    none: printed under every scenario's capacity, the chat preset's figures read as the search's own)."""
    from engine.cli.capacity import ONE_SEED
    from engine.planning.rules import run_passes
    from engine.serving.run import simulate

    sc = io.load_preset("chat-disaggregated")
    one, five = capacity(sc, duration_s=120), capacity(sc, duration_s=120, seeds=5)
    assert (rate_down(one.capacity_rps), rate_down(five.capacity_rps)) == ("26.8", "23.2")
    assert "by the draw of its requests" in ONE_SEED and "req/s" not in ONE_SEED  # no other search's figure
    at = io.apply_overrides(sc, {"duration_s": 120, "workload.arrival.rate_rps": 26.8})
    passed = [run_passes(simulate(io.apply_overrides(at, {"seed": at.seed + k})).summary) for k in range(10)]
    assert sum(passed) == 3
    rows = five.runs.to_dict(orient="records")
    assert all(r["seeds_passed"] == 5 for r in rows if r["passes"])  # a pass is every seed's
    assert all(r["seeds_passed"] < 5 for r in rows if not r["passes"])
    assert five.simulations == sum(r["seeds_passed"] + (not r["passes"]) for r in rows) > len(rows)
    with pytest.raises(ScenarioError, match=r"seeds: a whole number from 1 to 100"):
        capacity(sc, seeds=0)
    assert (
        main(
            [
                "capacity",
                "chat-disaggregated",
                "--duration-s",
                "60",
                "--seeds",
                "2",
                "--no-margin",
                "--no-progress",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "at its SLO percentile in each of 2 seeds" in out
        and "(2 seeds passed)" in out
        and ONE_SEED not in out
    )
