"""Multi-turn sessions ramp up from none: a planning run starts early enough for its window to
carry the load it plans for, and a user's run whose window holds the ramp is told so."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from engine.explain.advisor import findings
from engine.planning.candidates import SearchSpace, planning_scenario, session_lead_s
from engine.planning.plan import plan
from engine.planning.plan_work import plan_work
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.serving.run import simulate
from engine.serving.work_load import RAMP_CAP_S, session_ramp

AGENT = "workload.classes[0]"


def sessions(**over: Any) -> Scenario:
    """agentic-cache with short sessions (4 turns, 2 s think, a 1 s TTFT and 30 ms TPOT target): a ramp
    of 3 x 4 x (2 + 1 + 199 x 0.03) = 108 s."""
    base = {
        f"{AGENT}.multi_turn.think_time_s": 2.0,
        f"{AGENT}.multi_turn.turns_mean": 4.0,
        f"{AGENT}.slo.ttft_ms": 1000.0,
        f"{AGENT}.slo.tpot_ms": 30.0,
    }
    return io.apply_overrides(io.load_preset("agentic-cache"), {**base, **over})


def test_the_ramp_is_three_mean_sessions_at_the_slo_latency() -> None:
    ramp = session_ramp(io.load_preset("agentic-cache"))  # 8 turns, 6 s think, 2 s + 199 x 40 ms
    assert ramp.seconds == math.ceil(3 * 8 * (6 + 2 + 199 * 0.04))
    assert ramp.reached == pytest.approx(1 - math.exp(-3), abs=0.01)
    assert session_ramp(sessions()).seconds == 108.0
    assert session_ramp(io.load_preset("chat-colocated")).seconds == 0.0  # no sessions, no ramp
    # an E2E deadline below the TTFT and TPOT budget is the turn's latency
    assert session_ramp(sessions(**{f"{AGENT}.slo.e2e_ms": 3000.0})).seconds == 3 * 4 * (2 + 3)
    slow = session_ramp(sessions(**{f"{AGENT}.multi_turn.think_time_s": 600.0}))
    assert slow.seconds == RAMP_CAP_S and slow.reached < 0.6  # capped, and says how far it got


def test_a_planning_run_measures_its_window_at_the_target_load() -> None:
    """Before, the 30 s window began with the sessions: it served half the load asked for."""
    sc = sessions()
    run = planning_scenario(sc, 6.0, 30.0)
    assert (run.duration_s, run.warmup_s) == (138.0, 108.0)  # the window, 108 s later
    served = simulate(run).summary["throughput_rps"]
    cold = simulate(io.apply_overrides(sc, {"duration_s": 30.0, "workload.arrival.rate_rps": 6.0}))
    assert served >= 0.85 * 6.0 and cold.summary["throughput_rps"] <= 0.6 * 6.0
    # the full-length run keeps the user's window, started as early; a warm-up already longer adds nothing
    full = planning_scenario(sc, 6.0, None)
    assert (full.duration_s, full.warmup_s) == (600.0 + 108.0, 108.0)
    assert planning_scenario(full, 6.0, None) == full
    warm = io.apply_overrides(sc, {"warmup_s": 200.0})
    assert session_lead_s(warm, None) == 0.0 and planning_scenario(warm, 6.0, None).duration_s == 600.0
    # a window's own warm-up (at most a quarter of it) counts towards the ramp
    assert session_lead_s(warm, 40.0) == 108.0 - 10.0
    # no sessions: as before
    chat = io.load_preset("chat-colocated")
    assert session_lead_s(chat, 30.0) == 0.0 and planning_scenario(chat, 10.0, 30.0).duration_s == 30.0


def test_the_plan_says_its_window_and_the_lead_before_it() -> None:
    space = SearchSpace(hardware=("h100-sxm",), tp=(2,), duration_s=30.0, finalists=1, frontier_extra=0)
    p = plan(sessions(**{"duration_s": 60.0}), 6.0, space, risk_aware=False, verify=True)
    assert p.duration_s == 30.0 and p.session_lead_s == 108.0
    assert any(n.startswith("multi-turn sessions: each run starts 108 s before its window") for n in p.notes)
    assert p.to_json()["session_lead_s"] == 108.0
    assert p.best is not None and p.best.warmup_s == 108.0  # the chosen scenario reproduces its quoted run
    c = p.verdict.chosen if p.verdict is not None else None
    assert c is not None and c["verified_by"] == (
        "full-length run (60 s measured after a 108 s warm-up for the sessions' ramp, seed 1)"
    )


def test_the_work_bounds_window_lever_allows_for_the_lead() -> None:
    """The events scale with the window and the lead together: a window cut as if alone would not do."""
    sc = sessions()
    space = SearchSpace(duration_s=300.0, max_simulations=200)
    w = plan_work(sc, 30.0, space, margin=True)
    assert w.lead_s == 108.0 and w.over
    msg = w.problem(space, 30.0) or ""
    got = re.search(r"duration_s \(the planning window\) to (\d+) s", msg)
    assert got is not None, msg
    window = float(got[1])
    assert not plan_work(sc, 30.0, SearchSpace(duration_s=window, max_simulations=200), margin=True).over
    assert window < 300.0 * w.limit / w.events  # less than the old rule offered, which would not suffice


def test_a_run_measured_during_the_ramp_is_told_so() -> None:
    sc = sessions(**{"duration_s": 120.0})
    said = [f for f in findings(simulate(sc)) if f.topic == "sessions"]
    assert len(said) == 1 and said[0].severity == "warning"
    assert "take about 108 s to send their steady rate" in said[0].text
    assert "set warmup_s to 108" in said[0].text and said[0].numbers["load_share"] < 0.9
    steady = io.apply_overrides(sc, {"warmup_s": 108.0, "duration_s": 228.0})
    assert not [f for f in findings(simulate(steady)) if f.topic == "sessions"]
