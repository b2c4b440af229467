"""The Planner page's bounded work: the estimate before the button, the refusal, progress and cancel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import StopException
from streamlit.testing.v1 import AppTest

from ui import plan_run
from ui.planner import PLAN

APP = str(Path(__file__).resolve().parents[2] / "app.py")

pytestmark = pytest.mark.slow


def planner() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("app_pages/planner.py")
    at.run()
    assert not at.exception
    return at


def small(at: AppTest) -> None:
    at.number_input(key="plan_target").set_value(20.0)
    at.multiselect(key="plan_hardware").set_value(["h100-sxm"])
    at.multiselect(key="plan_tp").set_value([2])
    at.selectbox(key="plan_window").set_value(60.0)
    at.checkbox(key="plan_margin").set_value(False)


def texts(elements: Any) -> list[str]:
    """Element texts as read: without the escapes `ui.text.plain` adds for Markdown."""
    return [str(e.value).replace("\\", "").replace("\u2060", "") for e in elements]


def test_the_estimate_is_shown_before_planning_and_a_plan_over_the_limit_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    at = planner()
    # before any plan: the default form's work, margin included
    lead = "Work, for the settings last submitted (Plan updates it): about"
    assert any(t.startswith(lead) and "of the limit" in t for t in texts(at.caption))
    calls: list[Any] = []
    monkeypatch.setattr("engine.planning.search.simulate", lambda *a, **k: calls.append(a))
    at.number_input(key="plan_target").set_value(600.0)
    at.selectbox(key="plan_window").set_value(300.0)
    at.number_input(key="plan_sims").set_value(400)
    at.button[0].click().run()
    assert not at.exception
    refusal = [t for t in texts(at.error) if "plan work:" in t]
    assert len(refusal) == 1 and refusal[0].startswith(
        "Not planned. plan work: about 1.8 billion simulated events"
    )
    # the search, the margin's and the risk-aware check's searches of 400 each, and the verdict's checks of
    # each of the 9 chip groups (h100-sxm, h200, b200 and their pairings), with the two other shapes each may
    # try where its pick moves up at the edge (18); at full length, 36 of them
    # as modelled and 36 at the bands' edge, the margin's two reruns of the choice, the nominal cheapest's and
    # the other shapes' checked where the would-be winner moves up (full-length runs: not counted here)
    assert "(1,254 runs at most of about 180,000 requests, the margin included" in refusal[0]
    assert "Target load to 9.94 req/s" in refusal[0]
    assert calls == [] and PLAN not in at.session_state  # nothing ran, nothing kept
    assert any("Over the limit" in t for t in texts(at.warning))  # the estimate says so too


def test_a_plan_reports_progress_and_a_cancelled_plan_keeps_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    at = planner()
    small(at)
    link = dict(at.query_params)
    real = plan_run.Running.report

    def interrupting(self: plan_run.Running, what: str, before: int = 0) -> Any:
        show = real(self, what, before)

        def report(done: int, total: int, note: str) -> None:
            show(done, total, note)
            if done == 2:  # what Streamlit does at a st call once a click asked for a rerun
                raise StopException()

        return report

    monkeypatch.setattr(plan_run.Running, "report", interrupting)
    at.button[0].click().run()
    assert not at.exception
    assert at.session_state[plan_run.RUNNING]["done"] == 2  # the plan was in progress
    bar = at.get("progress")[0].proto
    bar.text = bar.text.replace("\\", "").replace("\u2060", "")
    assert bar.text.startswith("Simulation 3 (at most 120): h100-sxm tp2") and "so far, at most" in bar.text
    assert at.button(key="fg-plan-cancel") is not None
    monkeypatch.setattr(plan_run.Running, "report", real)
    at.button(key="fg-plan-cancel").click().run()
    assert not at.exception
    assert any(
        "The plan in progress was cancelled after 2 of at most 120 simulations" in t
        for t in texts(at.warning)
    )
    assert PLAN not in at.session_state and plan_run.RUNNING not in at.session_state
    assert dict(at.query_params) == link  # nothing in the share link
    assert not any("Cheapest deployment" in t for t in texts(at.success))
    # planning again runs to the end: the plan is kept, no longer in progress, and says nothing of a stop
    at.button[0].click().run()
    assert not at.exception
    assert PLAN in at.session_state and plan_run.RUNNING not in at.session_state
    assert not any("cancelled" in t or "stopped" in t for t in texts(at.warning))
    # a finished plan leaves no progress bar and no Cancel button under its verdict
    assert not at.get("progress")
    assert not [b for b in at.button if b.key == "fg-plan-cancel"]


def test_the_progress_text_says_what_runs_and_the_time_left(monkeypatch: pytest.MonkeyPatch) -> None:
    texts_seen: list[str] = []

    class Bar:
        def progress(self, value: float, text: str) -> None:
            assert 0.0 <= value <= 1.0
            texts_seen.append(text.replace("\\", "").replace("\u2060", ""))

    state: dict[str, Any] = {}
    monkeypatch.setattr(plan_run.st, "session_state", state)
    running = object.__new__(plan_run.Running)
    running.bar = Bar()  # type: ignore[assignment]
    state[plan_run.RUNNING] = {"done": 0, "total": 40, "started": plan_run.time.monotonic() - 10.0}
    report = running.report("Margin: slowed simulation", before=10)
    report(0, 20, "h100-sxm tp2 3 mixed")
    assert state[plan_run.RUNNING]["done"] == 10
    text = texts_seen[-1]
    assert text.startswith("Margin: slowed simulation 1 (at most 20): h100-sxm tp2 3 mixed")
    # 10 simulations in about 10 s: at most 30 more, about 30 s
    assert "10 s so far, at most 30 s more" in text


def test_the_page_plans_on_the_dask_cluster_it_was_started_with(monkeypatch: pytest.MonkeyPatch) -> None:
    distributed = pytest.importorskip("distributed")

    def planned() -> Any:
        at = planner()
        small(at)
        at.button[0].click().run()
        assert not at.exception
        return at, at.session_state[PLAN][1]

    _, local = planned()
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", dashboard_address=None
    ) as cluster:
        monkeypatch.setenv(plan_run.DASK_ENV, cluster.scheduler_address)
        try:
            at, remote = planned()
        finally:
            plan_run._CLIENTS.pop(cluster.scheduler_address).close()
    assert any(f"Dask cluster at {cluster.scheduler_address}" in t for t in texts(at.caption))
    assert remote.best == local.best and remote.best_run == local.best_run
    pd.testing.assert_frame_equal(remote.runs, local.runs)
    pd.testing.assert_frame_equal(remote.candidates, local.candidates)


def test_a_load_past_the_scenario_s_bound_is_named_as_the_form_names_it() -> None:
    """A target load inside the form's range but past the scenario's rate bound read
    "workload.arrival.rate_rps: ...", a field not on the page (a browser review)."""
    at = planner()
    at.number_input(key="plan_target").set_value(5000.0)
    at.button[0].click().run()
    assert not at.exception
    said = [t for t in texts(at.error) if t.startswith("Cannot plan this scenario")]
    assert said and "Target load (req/s)" in said[0] and "workload.arrival.rate_rps" not in said[0]
