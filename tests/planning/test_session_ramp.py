"""Multi-turn sessions ramp up from none: a planning run starts early enough for its window to
carry the load it plans for, and a user's run whose window holds the ramp is told so."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest

from engine.core.errors import ScenarioError
from engine.explain.advisor import findings
from engine.planning.candidates import SearchSpace, on_window, planning_scenario, session_lead_s
from engine.planning.capacity import capacity
from engine.planning.plan import plan
from engine.planning.plan_work import plan_work
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.serving.run import simulate
from engine.serving.work_load import RAMP_CAP_S, session_ramp
from engine.serving.workload import rate_factor

AGENT = "workload.classes[0]"


def sessions(**over: Any) -> Scenario:
    """agentic-cache with short sessions (4 turns, 2 s think, a 1 s TTFT and 30 ms TPOT target): mean
    sessions of m = 4 x (2 + 1 + 199 x 0.03) = 35.9 s, a ramp to 95% of m ln(20 x 3/4) = 98 s."""
    base = {
        "warmup_s": 0.0,  # the preset's warm-up covers its own ramp
        f"{AGENT}.multi_turn.think_time_s": 2.0,
        f"{AGENT}.multi_turn.turns_mean": 4.0,
        f"{AGENT}.slo.ttft_ms": 1000.0,
        f"{AGENT}.slo.tpot_ms": 30.0,
    }
    return io.apply_overrides(io.load_preset("agentic-cache"), {**base, **over})


def _ramp_s(turns: float, cycle_s: float, later_share: float = 1.0) -> float:
    """Seconds to 95% of the steady load: 1 - s (1 - 1/K) exp(-t / (K x cycle)) = 0.95."""
    return math.ceil(turns * cycle_s * math.log(20 * later_share * (1 - 1 / turns)))


def test_the_ramp_reaches_95_percent_of_the_load_with_turns_at_the_slo_latency() -> None:
    preset = io.load_preset("agentic-cache")
    ramp = session_ramp(preset)  # 8 turns, 6 s think, 2 s + 199 x 40 ms
    assert ramp.seconds == _ramp_s(8, 6 + 2 + 199 * 0.04) == 366
    assert session_lead_s(preset, None) == 366 - 300  # the preset's own warm-up covers part of it
    assert ramp.reached == pytest.approx(0.95, abs=0.001) and ramp.share_at(0.0) == pytest.approx(1 / 8)
    assert session_ramp(sessions()).seconds == _ramp_s(4, 2 + 1 + 199 * 0.03) == 98
    assert session_ramp(io.load_preset("chat-colocated")).seconds == 0.0  # no sessions, no ramp
    # an E2E deadline below the TTFT and TPOT budget is the turn's latency; a measured one replaces both
    assert session_ramp(sessions(**{f"{AGENT}.slo.e2e_ms": 3000.0})).seconds == _ramp_s(4, 2 + 3)
    assert session_ramp(sessions(), latency_s=0.5).seconds == _ramp_s(4, 2.5)
    # a class without sessions is steady from t = 0: half the sessions single-turn carry 1/5 of the load
    two = io.to_data(sessions())["workload"]["classes"] * 2
    two[1] = {**two[1], "name": "chat", "multi_turn": {"turns_mean": 1.0}}
    mixed = session_ramp(sessions(**{"workload.classes": two}))
    assert mixed.share_at(0.0) == pytest.approx(1 - 0.8 * 0.75)
    assert mixed.seconds == math.ceil(4 * (2 + 1 + 199 * 0.03) * math.log(20 * 0.8 * 0.75))
    slow = session_ramp(sessions(**{f"{AGENT}.multi_turn.think_time_s": 600.0}))
    assert slow.seconds == RAMP_CAP_S and slow.reached < 0.65  # capped, and says how far it got


def test_the_ramp_follows_a_simulated_run() -> None:
    """The load share predicted with the run's own mean latency, against the arrivals it drew."""
    run = simulate(io.apply_overrides(io.load_preset("agentic-cache"), {"warmup_s": 0.0}))
    t = run.requests["arrival_s"].to_numpy()
    steady = ((t >= 400) & (t < 600)).sum() / 200
    ramp = session_ramp(run.scenario, latency_s=run.summary["latency_ms"]["e2e"]["mean"] / 1000)
    for a, b in ((0, 60), (60, 180), (0, 600)):
        drawn = ((t >= a) & (t < b)).sum() / (b - a) / steady
        assert drawn == pytest.approx(ramp.load_share(a, b), abs=0.1), (a, b)


def test_a_planning_run_measures_its_window_at_the_target_load() -> None:
    """Before, the 30 s window began with the sessions: it served half the load asked for."""
    sc = sessions()
    run = planning_scenario(sc, 6.0, 30.0)
    assert (run.duration_s, run.warmup_s) == (128.0, 98.0)  # the window, 98 s later
    served, cold = [], []  # over three seeds: sessions make a 30 s window's load vary by 10-15%
    for seed in (1, 2, 3):
        served.append(simulate(planning_scenario(sessions(seed=seed), 6.0, 30.0)).summary["throughput_rps"])
        alone = io.apply_overrides(sc, {"seed": seed, "duration_s": 30.0, "workload.arrival.rate_rps": 6.0})
        cold.append(simulate(alone).summary["throughput_rps"])
    assert np.mean(served) >= 0.85 * 6.0 and np.mean(cold) <= 0.6 * 6.0
    # the full-length run keeps the user's window, started as early; a warm-up already longer adds nothing
    full = planning_scenario(sc, 6.0, None)
    assert (full.duration_s, full.warmup_s) == (600.0 + 98.0, 98.0)
    assert planning_scenario(full, 6.0, None) == full
    warm = io.apply_overrides(sc, {"warmup_s": 200.0})
    assert session_lead_s(warm, None) == 0.0 and planning_scenario(warm, 6.0, None).duration_s == 600.0
    # a window's own warm-up (at most a quarter of it) counts towards the ramp
    assert session_lead_s(warm, 40.0) == 98.0 - 10.0
    # a planned run put back on the search's window is the search's run (the margin's checks)
    assert on_window(sc, full, 6.0, 30.0) == run
    assert (
        planning_scenario(full, 6.0, 30.0) != run
    )  # planning it again would not do: its warm-up holds a lead
    # no sessions: as before
    chat = io.load_preset("chat-colocated")
    assert session_lead_s(chat, 30.0) == 0.0 and planning_scenario(chat, 10.0, 30.0).duration_s == 30.0


@pytest.mark.parametrize("shape", ["peak", "ramp", "diurnal"])
def test_a_rate_shape_stays_on_the_window_after_the_lead(shape: str) -> None:
    """Spread over the lead and the window, a peak fell in the lead: the window saw 71% of the rate."""
    sc = sessions(**{"workload.arrival.shape": shape, "workload.arrival.peak_factor": 3.0})
    run = planning_scenario(sc, 6.0, 60.0)
    arr = run.workload.arrival
    window = np.linspace(run.warmup_s, run.duration_s, 4001)
    asked = rate_factor(sc.workload.arrival, 60.0, np.linspace(0.0, 60.0, 4001))
    got = rate_factor(arr, run.duration_s, window)
    assert float(got.mean()) == pytest.approx(1.0, abs=0.01) and float(np.abs(got - asked).mean()) < 0.02
    lead = rate_factor(arr, run.duration_s, np.linspace(0.0, run.warmup_s, 100))
    assert np.allclose(lead, asked[0])  # the sessions ramp up at the window's first rate


def test_the_plan_says_its_window_and_the_lead_before_it() -> None:
    space = SearchSpace(hardware=("h100-sxm",), tp=(2,), duration_s=30.0, finalists=1, frontier_extra=0)
    p = plan(sessions(**{"duration_s": 60.0}), 6.0, space, risk_aware=False, verify=True)
    assert p.duration_s == 30.0 and p.session_lead_s == 98.0
    said = [
        n for n in p.method if n.startswith("multi-turn sessions: each run starts 98 s before its window")
    ]
    assert said and "capped" not in said[0]
    assert not any(n.startswith("multi-turn sessions") for n in p.notes)  # information, not a warning
    assert p.to_json()["session_lead_s"] == 98.0 and p.to_json()["method"] == list(p.method)
    assert p.best is not None and (p.best.duration_s, p.best.warmup_s) == (
        60.0 + 98.0,
        98.0,
    )  # its quoted run
    c = p.verdict.chosen if p.verdict is not None else None
    assert c is not None and c["verified_by"] == (
        "full-length run (60 s after a 98 s lead for the sessions' ramp, seed 1)"
    )


def test_a_capped_lead_says_the_window_is_below_the_load() -> None:
    sc = sessions(**{f"{AGENT}.multi_turn.think_time_s": 600.0, "workload.arrival.rate_rps": 0.5})
    space = SearchSpace(hardware=("h100-sxm",), tp=(2,), duration_s=30.0, finalists=0, frontier_extra=0)
    p = plan(sc, 0.5, space, risk_aware=False, verify=False, check_work=False)
    said = [n for n in p.method if n.startswith("multi-turn sessions")]
    assert said and "capped at 1,800 s: they send about 64% of it by then" in said[0]


@pytest.mark.parametrize("warmup", [0.0, 60.0])
def test_the_work_bounds_window_lever_allows_for_the_lead(warmup: float) -> None:
    """A run's events scale with its window and the lead together, and the lead grows as the window's
    own warm-up (a quarter of it at most) shrinks: a window cut as if alone would not do."""
    sc = sessions(**{"warmup_s": warmup})
    space = SearchSpace(duration_s=300.0, max_simulations=200)
    w = plan_work(sc, 30.0, space, margin=True)
    assert w.ramp_s == 98.0 and w.over
    msg = w.problem(space, 30.0) or ""
    got = re.search(r"duration_s \(the planning window\) to (\d+) s", msg)
    assert got is not None, msg
    window = float(got[1])
    assert not plan_work(sc, 30.0, SearchSpace(duration_s=window, max_simulations=200), margin=True).over
    alone = math.floor(300.0 * w.limit / w.events)  # the window cut as if the runs were the window alone
    assert plan_work(sc, 30.0, SearchSpace(duration_s=alone, max_simulations=200), margin=True).over


def test_a_run_measured_during_the_ramp_is_told_so() -> None:
    sc = sessions(**{"duration_s": 120.0})
    run = simulate(sc)
    said = [f for f in findings(run) if f.topic == "sessions"]
    assert len(said) == 1 and said[0].severity == "warning"
    latency = run.summary["latency_ms"]["e2e"]["mean"] / 1000
    wanted = session_ramp(sc, latency_s=latency).wanted_s
    assert f"take about {wanted:,.0f} s to send 95% of their steady load" in said[0].text
    assert (
        f"set warmup_s to {wanted:g} and lengthen duration_s by {wanted:g} s, to {wanted + 120:g}"
        in said[0].text
    )
    assert said[0].numbers["load_share"] < 0.9
    warm = simulate(io.apply_overrides(sc, {"warmup_s": 20.0}))  # a warm-up already: lengthen by the rest
    told = [f.text for f in findings(warm) if f.topic == "sessions"]
    more = session_ramp(sc, latency_s=warm.summary["latency_ms"]["e2e"]["mean"] / 1000).wanted_s
    assert told and f"lengthen duration_s by {more - 20:g} s, to {100 + more:g}" in told[0]
    steady = io.apply_overrides(sc, {"warmup_s": wanted, "duration_s": wanted + 120.0})
    assert not [f for f in findings(simulate(steady)) if f.topic == "sessions"]


def test_a_load_too_large_for_the_lead_says_where_its_duration_comes_from() -> None:
    with pytest.raises(ScenarioError) as err:
        planning_scenario(sessions(), 5000.0, 300.0)  # 1.5M requests over the window alone: within the cap
    msg = str(err.value)
    assert msg.startswith("workload.arrival.rate_rps: 5,000 req/s over duration_s 398 means up to")
    # and what the window allows (the Planner refused a 5,000 req/s target in these words alone: a review)
    assert "(at most about " in msg and " req/s over this window; the work bound" in msg
    assert "the 300 s planning window and the 98 s before it that its multi-turn sessions take" in msg


def test_capacity_says_its_runs_start_early() -> None:
    c = capacity(sessions(), max_simulations=2, duration_s=30.0)
    assert c.note.startswith("multi-turn sessions: each run starts 98 s before its window")
    assert (
        "multi-turn"
        not in capacity(io.load_preset("chat-colocated"), max_simulations=2, duration_s=30.0).note
    )


def test_the_command_line_says_a_window_measured_during_the_ramp(capsys: pytest.CaptureFixture[str]) -> None:
    from engine.cli.main import main

    short = ["--set", "duration_s=120", "--set", "warmup_s=0"]
    assert main(["run", "agentic-cache", *short]) == 0
    assert "Multi-turn sessions start from none at t = 0" in capsys.readouterr().out
    assert main(["run", "agentic-cache", "--set", "duration_s=420"]) == 0  # its own 300 s warm-up
    assert "Multi-turn sessions" not in capsys.readouterr().out


def test_a_capacity_searchs_faults_move_with_the_session_lead() -> None:
    """A capacity search keeps the faults its window meets (a plan leaves them out): with sessions that
    start 98 s before a 30 s window, a loss 10 s into the window comes 108 s into the run, and one past
    the window is left out (`unmet_faults` says it)."""
    pool = io.load_preset("agentic-cache").deployment.pools[0].name
    sc = sessions(faults=[{"at_s": 10.0, "pool": pool}, {"at_s": 45.0, "pool": pool}])
    kept = planning_scenario(sc, 6.0, 30.0, keep_faults=True)
    assert [f.at_s for f in kept.faults] == [108.0] and kept.warmup_s == 98.0
    assert planning_scenario(sc, 6.0, 30.0).faults == ()  # a plan's: none
