"""Multi-turn sessions: a later turn is sent a think time after the turn before it ended."""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.explain.run_preview import PREVIEW_REQUESTS, head, preview_of
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.ledger import COMPLETED, Records
from engine.serving.run import result_of
from engine.serving.sim import Simulation
from engine.serving.workload import Requests, generate


def sessions(rate: float = 2.0, **more: Any) -> Scenario:
    """agentic-cache over 120 s: sessions of 8 turns on average, 6 s of thought between them."""
    return io.apply_overrides(
        io.load_preset("agentic-cache"),
        {"duration_s": 120.0, "warmup_s": 0.0, "workload.arrival.rate_rps": rate, **more},
    )


def run(sc: Scenario, reqs: Requests | None = None) -> tuple[Requests, Records]:
    reqs = generate(sc) if reqs is None else reqs
    return reqs, Simulation(resolve(sc), reqs).run()


def turns(reqs: Requests, rec: Records) -> list[tuple[int, int]]:
    """(turn, the session's next turn) pairs among the requests sent, as record rows."""
    assert rec.kept is not None
    session = reqs.session[rec.kept]
    last: dict[int, int] = {}
    pairs = []
    for row, s in enumerate(session.tolist()):
        if s in last:
            pairs.append((last[s], row))
        last[s] = row
    return pairs


def test_a_later_turn_is_sent_a_think_time_after_the_one_before_ends() -> None:
    sc = sessions()
    reqs, rec = run(sc)
    assert reqs.turn_gap_s is not None and rec.kept is not None
    gap = reqs.turn_gap_s[rec.kept]
    pairs = turns(reqs, rec)
    assert len(pairs) > 50
    for prev, nxt in pairs:
        assert rec.outcome[prev] == COMPLETED
        assert rec.arrival_s[nxt] == rec.completion_s[prev] + gap[nxt]
    # a session's first turn comes at its drawn time
    first = np.ones(len(rec.kept), bool)
    first[[n for _, n in pairs]] = False
    assert np.array_equal(rec.arrival_s[first], reqs.arrival_s[rec.kept][first])
    # nothing is sent after the window, and the turns that would have been are left out
    assert rec.arrival_s.max() < sc.duration_s
    assert len(rec.kept) < len(reqs)
    assert np.all(np.isfinite(rec.arrival_s))


def test_a_session_ends_with_a_turn_that_was_not_served() -> None:
    # one instance behind a queue cap of two sheds turns: their sessions send nothing more
    sc = sessions(
        rate=6.0,
        **{"deployment.pools[0].count": 1, "scheduler.admission": {"name": "queue_cap", "max_queued": 2}},
    )
    reqs, rec = run(sc)
    shed = np.flatnonzero(rec.outcome != COMPLETED)
    assert len(shed) > 0
    assert rec.kept is not None
    session = reqs.session[rec.kept]
    for row in shed.tolist():
        later = np.flatnonzero((session == session[row]) & (np.arange(len(session)) > row))
        assert len(later) == 0, "a turn after one that was not served was sent"
    # and the sessions that were served go on
    assert len(turns(reqs, rec)) > 20


def test_the_run_table_holds_the_times_turns_were_sent() -> None:
    sc = sessions()
    reqs = generate(sc)
    rec = Simulation(resolve(sc), reqs).run()
    res = result_of(resolve(sc), reqs, rec, 0.0)
    assert res.summary["requests"]["total"] == len(rec.outcome) < len(reqs)
    assert np.array_equal(res.tables.requests()["arrival_s"].to_numpy(), rec.arrival_s)


def test_a_window_of_the_requests_keeps_its_sessions() -> None:
    # the slider's preview runs the first requests of the same table: its later turns wait as well
    sc = sessions()
    reqs = generate(sc)
    short = head(reqs, 100)
    assert short.turn_gap_s is not None and len(short.turn_gap_s) == 100
    _, rec = run(io.apply_overrides(sc, {"duration_s": float(reqs.arrival_s[100])}), short)
    assert rec.kept is not None and len(turns(short, rec)) > 5


def test_one_turn_workloads_and_traces_are_sent_as_drawn() -> None:
    assert generate(io.load_preset("chat-colocated")).turn_gap_s is None
    reqs, rec = run(io.apply_overrides(io.load_preset("chat-colocated"), {"duration_s": 30.0}))
    assert rec.kept is None and np.array_equal(rec.arrival_s, reqs.arrival_s)


def test_an_autoscaled_pool_sizes_for_the_turns_as_they_are_sent() -> None:
    # the SLO-driven autoscaler sizes from the arrivals it counted: one instance to start, six allowed
    scale = {"min_instances": 1, "interval_s": 10.0, "up_cooldown_s": 10.0, "cold_start": {"startup_s": 5.0}}
    sc = sessions(rate=6.0, **{"deployment.pools[0].autoscale": scale})
    res = result_of(resolve(sc), *run(sc), 0.0)
    assert res.summary["autoscale"]["pools"]["mixed"]["peak_instances"] > 1


def test_a_preview_counts_the_turns_it_sent() -> None:
    p = preview_of(io.apply_overrides(io.load_preset("agentic-cache"), {"warmup_s": 0.0}))
    assert p is not None and p.requests == len(p.result.requests) < PREVIEW_REQUESTS
    assert f"first {p.requests:,} of the {p.full_requests:,} requests drawn" in p.text()


def test_a_capped_answer_leaves_that_much_less_context_in_the_later_turns() -> None:
    # degrading caps answers at 64 tokens under a backlog: the next turns' prompts hold what was said
    sc = io.apply_overrides(
        io.load_preset("chat-disaggregated"),
        {
            "duration_s": 120.0,
            "workload.classes[0].multi_turn": {"turns_mean": 4.0, "think_time_s": 3.0},
            "deployment.degrade": {"enabled": True, "above_backlog": 2.0, "max_output_tokens": 64},
        },
    )
    reqs, rec = run(sc)
    assert rec.kept is not None and rec.prompt_tokens is not None
    cut = reqs.output_tokens[rec.kept] - rec.output_tokens
    before, seen = np.zeros(len(cut), dtype=np.int64), {}
    for row, s in enumerate(reqs.session[rec.kept].tolist()):
        before[row] = seen.get(s, 0)
        seen[s] = before[row] + cut[row]
    assert (before > 0).sum() > 20
    assert np.array_equal(rec.prompt_tokens, np.maximum(1, reqs.prompt_tokens[rec.kept] - before))
    table = result_of(resolve(sc), reqs, rec, 0.0).tables.requests()
    assert np.array_equal(table["prompt_tokens"].to_numpy(), rec.prompt_tokens)
