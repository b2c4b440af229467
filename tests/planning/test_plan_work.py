"""A plan's total work: estimated before any simulation, refused beyond the limit with the fix."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from engine.core import bounds
from engine.planning.candidates import SearchSpace, planning_scenario, with_deployment
from engine.planning.plan import plan
from engine.planning.plan_work import (
    CHEAPER_TRIES,
    MARGIN_RERUNS,
    MAX_GROUPS,
    VERIFY_TRIES,
    PlanWorkError,
    check_plan_work,
    plan_work,
    verdict_groups,
)
from engine.planning.sizing import Kind, Shape
from engine.scenario import codec as io
from engine.scenario.codec import load_preset
from engine.scenario.model import Scenario
from engine.serving import work_bound

# the issue's example: 600 req/s over a 300 s window, 400 simulations, the margin on
HUGE = SearchSpace(duration_s=300.0, max_simulations=400)


def chat(preset: str = "chat-colocated", **over: Any) -> Scenario:
    return io.apply_overrides(io.load_preset(preset), over)


def test_the_estimate_is_the_sum_of_the_runs_work_bounds() -> None:
    sc = chat()
    space = SearchSpace(hardware=("h100-sxm",), duration_s=60.0, max_simulations=30)
    w = plan_work(sc, 20.0, space)
    base = planning_scenario(sc, 20.0, 60.0)
    kind = Kind("h100-sxm", 1)
    runs = [
        work_bound.estimate(with_deployment(base, Shape(m, kind, kind), c)).events
        for m, c in (("colocated", (1, 0)), ("disaggregated", (1, 1)))
    ]
    assert w.events_per_run == max(runs)  # the heaviest mode the search allows
    assert w.requests == pytest.approx(20.0 * 60.0)
    assert w.runs == 30 and w.events == pytest.approx(30 * max(runs))
    with_margin = plan_work(sc, 20.0, space, margin=True)
    assert with_margin.runs == 2 * 30 + MARGIN_RERUNS
    # the estimate scales with what drives the work: the rate and the window
    assert plan_work(sc, 40.0, space).events == pytest.approx(2 * w.events, rel=0.01)
    assert plan_work(sc, 20.0, SearchSpace(duration_s=120.0, max_simulations=30)).events == pytest.approx(
        2 * w.events, rel=0.01
    )
    # verification runs at the scenario's own length count at that length
    full = plan_work(sc, 20.0, space, full_runs=2)
    assert full.events_per_full_run == pytest.approx(w.events_per_run * sc.duration_s / 60.0, rel=0.01)
    assert full.events == pytest.approx(w.events + 2 * full.events_per_full_run)


def test_a_default_plan_of_a_preset_is_within_the_limit() -> None:
    w = plan_work(chat(), 16.0, SearchSpace(), margin=True)
    assert not w.over and w.problem(SearchSpace(), 16.0) is None
    assert re.search(
        r"about [\d.]+ million simulated events \(242 runs at most of about 1,920 requests", w.text()
    )
    assert "% of the limit" in w.text()


def test_the_issues_example_is_refused_with_the_figure_and_the_fix() -> None:
    with pytest.raises(PlanWorkError) as err:
        check_plan_work(chat(), 600.0, HUGE, margin=True)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("plan work: about 1 billion simulated events (802 runs")
    assert "x the limit (30 million)" in msg
    # each lever offered brings the plan within the limit alone
    rate = float(re.search(r"target_rps to ([\d.]+) req/s", msg)[1])  # type: ignore[index]
    assert not plan_work(chat(), rate, HUGE, margin=True).over
    assert plan_work(chat(), rate * 1.05, HUGE, margin=True).over
    sims = int(re.search(r"max_simulations to (\d+)", msg)[1])  # type: ignore[index]
    assert not plan_work(chat(), 600.0, SearchSpace(duration_s=300.0, max_simulations=sims), margin=True).over
    assert "check_work=False" in msg


def test_window_and_margin_are_offered_only_when_they_suffice() -> None:
    sc = chat()
    space = SearchSpace(duration_s=300.0, max_simulations=200)
    w = plan_work(sc, 60.0, space, margin=True)
    assert 1 < w.events / w.limit < 2
    msg = w.problem(space, 60.0, {"margin": "--no-margin", "duration_s": "--duration-s"})
    assert msg is not None and "--no-margin" in msg
    window = float(re.search(r"--duration-s to (\d+) s", msg)[1])  # type: ignore[index]
    assert not plan_work(sc, 60.0, SearchSpace(duration_s=window, max_simulations=200), margin=True).over
    far = plan_work(sc, 600.0, HUGE, margin=True).problem(HUGE, 600.0)
    assert far is not None and "without the margin" not in far and "duration_s" not in far  # 9 s is no window


def test_the_window_offered_holds_where_full_length_runs_take_part_of_the_limit() -> None:
    """A verified, risk-aware plan's full-length runs keep the scenario's window: scaling all the work by the
    window offered '--duration-s to 106 s', then 98, 95, 92 as each was refused (a CLI review). The window
    is sized on the planning runs alone, and the share near 1 reads with two decimals ('1.0x' read within)."""
    sc = load_preset("chat-disaggregated")  # a 600 s window
    kw = {"margin": True, "risk_aware": True, "verify": True}
    chips = ("h100-sxm", "h200", "mi300x")

    def space(window: float) -> SearchSpace:
        return SearchSpace(hardware=chips, duration_s=window)

    rate = next(r for r in range(10, 200) if plan_work(sc, r, space(120.0), **kw).over)
    w = plan_work(sc, rate, space(120.0), **kw)
    assert w.events_per_full_run * w.full_runs > 0.4 * w.events  # the full-length runs weigh
    msg = w.problem(space(120.0), rate, {"duration_s": "--duration-s"})
    assert msg is not None and re.search(r"\d\.\d\dx the limit", msg)
    window = float(re.search(r"--duration-s to (\d+) s", msg)[1])  # type: ignore[index]
    assert not plan_work(sc, rate, space(window), **kw).over
    assert plan_work(sc, rate, space(window + 3), **kw).over


def test_plan_refuses_before_any_simulation_and_check_work_lifts_it(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    monkeypatch.setattr("engine.planning.search.simulate", lambda *a, **k: calls.append(a))
    with pytest.raises(PlanWorkError, match="plan work: "):
        plan(chat(duration_s=300.0), 600.0, HUGE)  # the full-length scenario within the request bound
    assert calls == []
    # the limit is a documented bound, in the table of bounds
    assert ("plan or sweep work", bounds.MAX_PLAN_EVENTS) in [(n, v) for n, v, _ in bounds.TABLE]


def test_lifting_the_limit_plans_a_search_over_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # a tiny limit: a small plan is refused, and check_work=False runs it
    monkeypatch.setattr(bounds, "MAX_PLAN_EVENTS", 10)
    space = SearchSpace(hardware=("h100-sxm",), tp=(2,), duration_s=20.0, max_simulations=3, finalists=1)
    with pytest.raises(PlanWorkError):
        plan(chat(), 8.0, space)
    p = plan(chat(), 8.0, space, check_work=False)
    # the verdict may add planning runs per chip group past the budget: its pick's, and each move up
    # of a pick that fails (issue 32; `VERIFY_TRIES`)
    assert p.verdict is not None and 1 <= p.simulated <= 3 + len(p.verdict.table) * (VERIFY_TRIES + 1)


def test_the_verdicts_runs_are_counted_as_plan_makes_them() -> None:
    """Risk-aware: a slowed search as long as the plan's; each chip group checked: its pick's runs in the
    planning window and, verified, as many at the scenario's own length, twice (as modelled and at the
    bands' edge); and the nominal cheapest once at that length, for its premium over the choice's window."""
    sc = chat()
    space = SearchSpace(hardware=("h100-sxm", "mi300x"), duration_s=60.0, max_simulations=30)
    base = plan_work(sc, 20.0, space)
    groups = verdict_groups(sc, space)
    assert groups == 2 + 2  # two chips, and each prefill -> decode pairing of the two
    assert verdict_groups(sc, replace(space, mixed_hardware=False)) == 2
    assert verdict_groups(sc, replace(space, hardware=tuple(f"c{i}" for i in range(9)))) == MAX_GROUPS
    risk = plan_work(sc, 20.0, space, risk_aware=True)
    # (risk-aware, each group's planning runs also the other shapes tried where its pick moved up at the edge)
    assert risk.runs == 2 * 30 + groups * (VERIFY_TRIES + 1 + CHEAPER_TRIES) and risk.full_runs == 0
    assert base.runs == 30  # neither risk-aware nor verified: no verdict's runs
    assert plan_work(sc, 20.0, space, verify=True).runs == 30 + groups * (VERIFY_TRIES + 1)
    checked = plan_work(sc, 20.0, space, risk_aware=True, verify=True)
    # each pick's full-length runs as modelled and at the bands' edge, the nominal cheapest's once (its premium)
    # and the other shapes checked where the would-be winner moved up to hold at the edge
    assert checked.full_runs == 2 * groups * (VERIFY_TRIES + 1) + 1 + CHEAPER_TRIES * 2 * (VERIFY_TRIES + 1)
    assert plan_work(sc, 20.0, space, verify=True).full_runs == groups * (VERIFY_TRIES + 1)  # nominal: once
    assert checked.events == pytest.approx(risk.events + checked.full_runs * checked.events_per_full_run)
    assert checked.events_per_full_run == pytest.approx(base.events_per_run * sc.duration_s / 60.0, rel=0.01)


def test_a_risk_aware_plan_over_the_limit_offers_the_nominal_plan_when_it_suffices() -> None:
    sc = chat()
    space = SearchSpace(duration_s=300.0, max_simulations=200)
    nominal = plan_work(sc, 60.0, space)
    risk = plan_work(sc, 60.0, space, risk_aware=True)
    assert not nominal.over and risk.over, (nominal.events / nominal.limit, risk.events / risk.limit)
    msg = risk.problem(space, 60.0, {"risk": "--nominal"})
    assert msg is not None and "--nominal" in msg
    # a plan the nominal search alone would not fit is not told to drop the risk check
    big = plan_work(sc, 60.0, replace(space, max_simulations=400), risk_aware=True)
    assert "--nominal" not in (
        big.problem(replace(space, max_simulations=400), 60.0, {"risk": "--nominal"}) or ""
    )


def test_a_plan_names_the_chips_its_stack_has_no_build_for() -> None:
    """`plan --hardware all` offered groq-lpu under vLLM, whose export is refused (a CLI review): a note names
    such chips; chips the stack runs, and what-if chips (illustrative, said so), get none."""
    from engine.planning.plan_notes import no_build_note

    groq = io.load_preset("sram-decode-groq")
    (note,) = no_build_note(groq, ["groq-lpu", "h100-sxm", "decode-asic"])
    assert note.startswith("groq-lpu: vLLM has no build for it, so emit refuses it;")
    assert no_build_note(groq, ["h100-sxm", "mi300x", "ascend-910b"]) == []
    trt = io.apply_overrides(io.load_preset("chat-colocated"), {"deployment.stack": "trtllm"})
    assert no_build_note(trt, ["groq-lpu"]) == []  # TensorRT-LLM's own mark says 'not run by'
