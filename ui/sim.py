"""The one way the dashboard runs a simulation: cached by the scenario's JSON.

`result(scenario)` returns the `SimResult` of a scenario, simulating it only the first time a
server sees that exact scenario (`st.cache_data` keys on the JSON text, and a SimResult is plain
data frames and numbers, so it pickles). Big runs show a status box while they simulate; every
run is bounded by `engine.core.bounds`, which validation enforced when the scenario was built.

`preview(scenario)` is what a page draws while a scenario it has not simulated yet runs: the
same requests over a shorter window (`engine.explain.run_preview`), cached apart, so a preview's
result is never the answer `result` gives, and nothing that exports or links reads it.
"""

from __future__ import annotations

import streamlit as st

from engine import explain as ex
from engine.core import MAX_REQUESTS, ScenarioError
from engine.scenario import Scenario
from engine.serving import SimResult, simulate
from ui import state
from ui.text import plain

BIG_RUN_REQUESTS = 30_000
"""Expected requests above which a run shows a status box instead of a quiet spinner."""


@st.cache_data(max_entries=48, show_spinner=False)
def _simulate(scenario_json: str) -> SimResult:
    return simulate(Scenario.model_validate_json(scenario_json))


@st.cache_data(max_entries=16, show_spinner=False)
def _preview(scenario_json: str) -> ex.RunPreview | None:
    return ex.preview_of(Scenario.model_validate_json(scenario_json))


def preview(scenario: Scenario) -> ex.RunPreview | None:
    """The preview of a scenario this session has not simulated yet; None where the full run is
    already at hand, the scenario has no preview, or the preview cannot run (the full run then
    says why)."""
    key = scenario.model_dump_json()
    if key in st.session_state.get("fg_simulated", ()):
        return None
    try:
        return _preview(key)
    except Exception:  # the full run that follows shows the failure, with its reason
        return None


def cached(scenario: Scenario) -> SimResult:
    """The scenario's result through the same cache, quietly: safe off the script thread (no elements)."""
    return _simulate(scenario.model_dump_json())


def expected_requests(scenario: Scenario) -> float:
    """A rough count of the requests a scenario will generate (for the progress message)."""
    wl = scenario.workload
    if wl.trace is not None:
        return float(wl.trace.max_requests or MAX_REQUESTS)
    arr = wl.arrival
    if arr.kind == "offline":
        return float(arr.requests)
    if arr.kind == "closed_loop":
        return float(arr.clients * 64)
    return arr.rate_rps * scenario.duration_s


def result(scenario: Scenario, label: str = "") -> SimResult | None:
    """The scenario's result, or None after showing why it could not be simulated."""
    key = scenario.model_dump_json()
    seen: set[str] = st.session_state.setdefault("fg_simulated", set())
    # One container in the same place whatever the run shows (nothing for a cache hit, a spinner or
    # a status box): the page's later elements keep their places, so a focused slider keeps its focus
    # when a move crosses BIG_RUN_REQUESTS or returns to a cached scenario.
    with st.container(key=f"fg-run-{'-'.join(label.split()) or 'main'}"):
        return _run_in_place(scenario, key, label, seen)


def _run_in_place(scenario: Scenario, key: str, label: str, seen: set[str]) -> SimResult | None:
    try:
        if key in seen:  # already simulated in this session: a cache hit, nothing to announce
            return _simulate(key)
        # the name the sidebar shows: an edited preset's, not the preset's (a review)
        name = plain(label or state.named(scenario).name)
        if scenario.workload.trace is not None or expected_requests(scenario) > BIG_RUN_REQUESTS:
            with st.status(f"Simulating {name}…", expanded=False) as box:
                try:
                    res = _simulate(key)
                except Exception:  # said below; the box must not keep saying it is simulating
                    box.update(label=f"Not simulated: {name}", state="error")
                    raise
                # whose run, named: Compare showed two alike (a review); the name leads, since a title
                # inside the sentence read "Simulated A day of chat, autoscaled: ..." (a browser review)
                # a wall time in seconds from one second (a latency's rule, ms below ten, read '7,610 ms' beside
                # '14.2 s': a browser review); in ms below ("in 35 ms": a trace's short run read "in 0.0 s")
                took = ex.duration_text(res.wall_s * 1e3) if res.wall_s < 1 else f"{res.wall_s:,.1f} s"
                box.update(
                    label=f"{name}: {len(res.requests):,} requests simulated in {took}", state="complete"
                )
        else:
            with st.spinner(f"Simulating {name}…", show_time=True):
                res = _simulate(key)
        seen.add(key)
        return res
    except ScenarioError as exc:
        st.error(f"This scenario cannot run: {plain(exc)}")
    except Exception as exc:  # the engine is the project's code; show the failure, keep the page
        st.error(f"The simulation failed: {type(exc).__name__}: {plain(exc)}")
    return None
