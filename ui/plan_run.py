"""A plan's run on the Planner page: its work before it starts, one at a time, progress, cancel.

- `work_line` draws the plan's estimated total work (`engine.planning.plan_work`) under the form,
  and `refused` the refusal, in the form's words, of a plan over the limit: nothing runs.
- `run_plan` runs a plan request (and its margin), refused when over the limit.
- `Running` draws the progress of the plan in progress (simulation n of at most N, what runs, the
  time spent and at most how long the rest of its budget would take) and a Cancel button. Streamlit
  runs one script at a time per session, so a click (Cancel, a new Plan, another page) stops the
  plan at its next progress report; the rerun that follows finds the plan's mark in session state
  and `interrupted` says it was cancelled or stopped. Nothing of it is kept: the plan is stored
  only when it finishes; the share link's scenario changes only when a finished plan's deployment is
  loaded, and its ``plan`` parameter only when a plan finishes (`ui.plan_link`).
- `executor` is the Dask cluster's executor when the app was started with
  ``FENGONG_DASK_SCHEDULER=tcp://HOST:PORT`` (docs/planner.md, "On a cluster"), else None.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import Executor
from typing import Any

import streamlit as st

from engine import plan
from engine.core import ScenarioError
from engine.planning import PLAN_FORM, Margin, Plan, PlanWork, Rule, SearchSpace, plan_margin
from engine.planning import plan_work_estimate as plan_work
from engine.scenario import Scenario
from ui import plan_verdict, state
from ui.text import plain

RUNNING = "fg_plan_running"
"""Session state: the plan in progress (simulations done, at most, when it started); absent when none."""
CANCEL = "fg_plan_cancel"
DASK_ENV = "FENGONG_DASK_SCHEDULER"
PAGE_LEVERS = {
    "target_rps": "Target load",
    "duration_s": "Planning window",
    "max_simulations": "Most simulations",
    "margin": "untick “Check the margin for the model's error”",
    "risk": "switch off “Risk-aware choice”",
    "lift": "the command line's --no-work-limit, for a trusted local run",
}
"""The plan work bound's levers in the form's words (engine.planning.plan_work.LEVERS)."""


def work_line(sc: Scenario, target: float, space: SearchSpace, margin: bool) -> PlanWork | None:
    """The plan's estimated work, as a caption (a warning when over the limit); None if it cannot be
    estimated (an input out of range, which the form reports when submitted)."""
    try:
        work = plan_work(sc, target, space, margin=margin, **_verdict_work())
    except ScenarioError:
        return None
    # of the values last submitted: the form's fields do not rerun the page, and the line stood unchanged
    # while a user narrowed the search (a browser review)
    text = f"Work, for the settings last submitted (Plan updates it): {plain(work.text())}."
    if work.over:
        st.warning(
            text + " Over the limit: lower the load, the window or the simulations.",
            icon=":material/timer_off:",
        )
    else:
        st.caption(text)
    if executor() is not None:
        st.caption(f"Simulations run on the Dask cluster at {os.environ[DASK_ENV]}.")
    return work


REFUSED_NOW = "fg_plan_refused_now"
"""Session state, within one run: a plan was just refused (its reason drawn), so the page's "press Plan"
prompt is not drawn under it (it read 'Not planned ...' then 'Set a target load ..., then press Plan':
a review)."""


def _verdict_work() -> dict[str, bool]:
    """The verdict's options that add work (the page always verifies its picks at full length)."""
    return {"risk_aware": plan_verdict.options()["risk_aware"], "verify": True}


def refused(sc: Scenario, target: float, space: SearchSpace, margin: bool) -> bool:
    """True (and the refusal drawn) when the plan is over the work limit: it is not run."""
    try:
        work = plan_work(sc, target, space, margin=margin, **_verdict_work())
    # the load named as the form names it (it read the scenario's field: a review)
    except ScenarioError as exc:
        said = str(exc).replace("workload.arrival.rate_rps", PLAN_FORM["rps"].label)
        st.error(f"Cannot plan this scenario: {plain(said)}")
        st.session_state[REFUSED_NOW] = True
        return True
    problem = work.problem(space, target, PAGE_LEVERS)
    if problem:
        st.error("Not planned. " + plain(problem) + ".", icon=":material/timer_off:")
        st.session_state[REFUSED_NOW] = True
    return problem is not None


def run_plan(
    sc: Scenario, target: float, space: SearchSpace, rule: Rule, attainment: float, with_margin: bool
) -> tuple[Plan, Margin | None] | None:
    """The plan, and its margin for the model's error when asked (`engine.planning.margin`); None when
    refused (over the work limit, `refused`) or failed. A click stops it (`Running`)."""
    if refused(sc, target, space, with_margin):
        return None
    running = Running(space.max_simulations * (2 if with_margin else 1))
    cluster = executor()
    try:
        report = running.report("Simulation")
        how = {"rule": rule, "attainment": attainment, "executor": cluster, **plan_verdict.options()}
        result = plan(sc, target, space, progress=report, **how)
    except ScenarioError as exc:
        running.finish()
        st.error(f"Cannot plan this scenario: {plain(exc)}")
        return None
    edge = None
    try:
        if with_margin:
            report = running.report("Margin: slowed simulation", result.simulated)
            edge = plan_margin(sc, result, space, progress=report, executor=cluster)
    except ScenarioError as exc:  # the plan stands; say why its margin is missing
        state.notify(f"The margin for the model's error could not be computed: {exc}")
    running.finish()
    return result, edge


def interrupted(earlier: bool = False) -> None:
    """Say so when the plan in progress in this session was stopped by this rerun (cancelled, or
    a new request, or the page left): nothing of it was kept; with `earlier`, that the plan shown is
    the last one that finished (the warning sat above a finished verdict, which then read as the one
    stopped: a review)."""
    was = st.session_state.pop(RUNNING, None)
    cancelled = st.session_state.pop(CANCEL, False)
    if was is None:
        return
    how = "cancelled" if cancelled else "stopped (a new request or another page interrupted it)"
    shown = (
        " The plan shown below is the last one that finished, for the inputs it was made with."
        if earlier
        else ""
    )
    st.warning(
        f"The plan in progress was {how} after {was['done']} of at most {was['total']} simulations; nothing of it was "
        f"kept.{shown}",
        icon=":material/cancel:",
    )


def _cancel() -> None:
    st.session_state[CANCEL] = True


class Running:
    """The plan in progress: its progress bar, its time left and its Cancel button."""

    def __init__(self, total_runs: int) -> None:
        st.session_state.pop(CANCEL, None)
        st.session_state[RUNNING] = {"done": 0, "total": total_runs, "started": time.monotonic()}
        # a placeholder, so that `finish` takes the bar and the button away (a container's .empty()
        # would only add an empty element to it, leaving both on screen under the finished plan)
        self.box = st.empty()
        shown = self.box.container()
        self.bar = shown.progress(0.0, text="Planning…")
        shown.button("Cancel the plan", key="fg-plan-cancel", on_click=_cancel, icon=":material/cancel:")

    def report(self, what: str, before: int = 0) -> Any:
        """A `Progress` callback for one phase (the search; the margin's slowed search, after
        `before` simulations of the search)."""

        def show(done: int, total: int, note: str) -> None:
            mark = st.session_state[RUNNING]
            mark["done"] = before + done
            elapsed = time.monotonic() - mark["started"]
            left = ""
            if mark["done"]:
                most = (mark["total"] - mark["done"]) * elapsed / mark["done"]
                left = f" · {elapsed:.0f} s so far, at most {_span(most)} more"
            text = f"{what} {done + 1} (at most {total}): {note}{left}"
            self.bar.progress(min(done / max(total, 1), 1.0), text=plain(text))

        return show

    def finish(self) -> None:
        """The plan ended (with an answer or an error): no longer in progress."""
        st.session_state.pop(RUNNING, None)
        self.box.empty()


def _span(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


_CLIENTS: dict[str, Any] = {}
"""One Dask client per scheduler address for the whole server (st.cache_resource refuses a Client:
it is awaitable)."""
_LOCK = threading.Lock()


def _client(address: str) -> Any:
    with _LOCK:
        if address not in _CLIENTS:
            from distributed import Client  # heavy, and only with a cluster

            _CLIENTS[address] = Client(address)  # type: ignore[no-untyped-call]
        return _CLIENTS[address]


def executor() -> Executor | None:
    """The Dask cluster's executor when the app was started with FENGONG_DASK_SCHEDULER, else None."""
    address = os.environ.get(DASK_ENV, "").strip()
    if not address:
        return None
    ex: Executor = _client(address).get_executor()
    return ex
