"""App tests of the slider's preview: drawn first, marked, replaced by the full run; never exported or linked.

The scenario is the default preset on its whole window (about 9,700 requests: more than a preview's
`MIN_FULL_REQUESTS`), opened by share link as a user opens it.
"""

from __future__ import annotations

from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from engine import explain as ex
from engine.scenario.codec import DEFAULT_PRESET, from_link, load_preset, to_link
from tests.app.harness import APP, assert_clean, live, scenario_of
from ui import export, layout
from ui.text import plain


def _drawn(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, float, int]]:
    """Every live strip drawn, in order: ('preview' or 'full', its window, its requests)."""
    calls: list[tuple[str, float, int]] = []
    draw = layout.live_strip

    def recording(result: Any, slot: Any = None, preview: Any = None) -> None:
        calls.append(("preview" if preview else "full", result.scenario.duration_s, len(result.requests)))
        draw(result, slot, preview)

    monkeypatch.setattr(layout, "live_strip", recording)
    return calls


def _faster(at: AppTest) -> float:
    """Move the Workload page's rate slider one stop up; the new rate."""
    rate = scenario_of(at).workload.arrival.rate_rps
    slider = at.select_slider(key="fg:workload.arrival.rate_rps")
    faster = float(next(v for v in slider.options if float(v) > rate))
    slider.set_value(faster).run()
    return faster


def _workload() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update(to_link(load_preset(DEFAULT_PRESET), DEFAULT_PRESET))
    at.run()
    at.switch_page("app_pages/workload.py").run()
    return at


def test_a_slider_move_draws_the_preview_then_the_full_run(monkeypatch: pytest.MonkeyPatch) -> None:
    at = _workload()
    calls = _drawn(monkeypatch)
    rate = _faster(at)
    assert_clean(at)
    full = scenario_of(at)
    assert full.workload.arrival.rate_rps == rate
    assert [kind for kind, *_ in calls] == ["preview", "full"]  # the preview first, in the same slot
    (_, window, n), (_, duration, n_full) = calls
    assert window < duration == full.duration_s
    assert n == ex.PREVIEW_REQUESTS < n_full
    # what stays on screen is the full run: no preview mark, the figures' changes from the last run
    strip = live(at)
    assert "preview" not in strip and ("▲" in strip or "▼" in strip)
    assert not [m for m in at.sidebar.markdown if layout.PREVIEW_MARK in m.value]
    assert not [m for m in at.sidebar.markdown if "full run on its way" in m.value]


def test_a_simulated_scenario_shows_no_preview(monkeypatch: pytest.MonkeyPatch) -> None:
    at = _workload()
    _faster(at)
    calls = _drawn(monkeypatch)
    slider = at.select_slider(key="fg:workload.arrival.rate_rps")
    slider.set_value(float(load_preset(DEFAULT_PRESET).workload.arrival.rate_rps)).run()  # back: cached
    assert_clean(at)
    assert [kind for kind, *_ in calls] == ["full"]


def test_the_preview_is_marked_with_its_expected_error(monkeypatch: pytest.MonkeyPatch) -> None:
    at = _workload()
    full_run = layout.sim.result

    def no_full_run(
        scenario: Any, label: str = ""
    ) -> None:  # the full run never comes: what shows is the preview
        return None

    monkeypatch.setattr(layout.sim, "result", no_full_run)
    drawn = _drawn(monkeypatch)
    _faster(at)
    assert [kind for kind, *_ in drawn] == ["preview"]
    # without a full run the preview does not stay in its place (it is never the answer)
    assert not [m for m in at.sidebar.markdown if "TTFT p99" in m.value]
    monkeypatch.setattr(layout.sim, "result", full_run)
    # the mark and the error, as drawn: render the preview into a page of its own
    at2 = AppTest.from_string(
        "import streamlit as st\n"
        "from engine import explain as ex\n"
        "from engine.scenario.codec import DEFAULT_PRESET, load_preset\n"
        "from ui import layout\n"
        "pv = ex.preview_of(load_preset(DEFAULT_PRESET))\n"
        "layout.live_strip(pv.result, st.sidebar.empty(), pv)\n",
        default_timeout=60,
    ).run()
    assert_clean(at2)
    title = next(m for m in at2.sidebar.markdown if layout.PREVIEW_MARK in m.value)
    # one short line under the title (the strip keeps its height); the expected error in its help
    assert f"first {ex.PREVIEW_REQUESTS:,} of" in title.value and "expected error" not in title.value
    assert plain(ex.preview_error_text("steady")) in title.proto.help
    table = next(m.value for m in at2.sidebar.markdown if "| figure | preview |" in m.value)
    # a short window's cost per request lands high on every preset: the preview leaves it to the full run
    assert "| \\$ / request | **…**" in table and "| TTFT p99 | **…**" not in table


def test_links_and_exports_carry_the_full_run_never_the_preview(monkeypatch: pytest.MonkeyPatch) -> None:
    at = _workload()
    calls = _drawn(monkeypatch)
    _faster(at)
    assert calls[0][0] == "preview"
    full = scenario_of(at)
    # the share link is the full scenario's
    params = {k: at.query_params[k] for k in at.query_params}
    assert from_link(params) == full  # its window is the full one
    # the Results page exports the full run (its tables and its charts' scenario)
    exported: list[tuple[float, int]] = []
    charts: list[float] = []
    chart = export.chart
    monkeypatch.setattr(
        export,
        "table_buttons",
        lambda res, **kw: exported.append((res.scenario.duration_s, len(res.requests))),
    )

    def chart_recording(fig: Any, sc: Any, *a: Any, **kw: Any) -> None:
        charts.append(sc.duration_s)
        chart(fig, sc, *a, **kw)

    monkeypatch.setattr(export, "chart", chart_recording)
    at.switch_page("app_pages/results.py").run()
    assert_clean(at)
    assert exported and exported[0][0] == full.duration_s and exported[0][1] == calls[-1][2]
    assert charts and set(charts) == {full.duration_s}


def _strip_elements(preview: bool) -> list[str]:
    """The kinds of element, in order, of the live strip drawn from the default preset's preview
    (as the preview, or as if it were a full run)."""
    at = AppTest.from_string(
        "import streamlit as st\n"
        "from engine import explain as ex\n"
        "from engine.scenario.codec import DEFAULT_PRESET, load_preset\n"
        "from ui import layout\n"
        "pv = ex.preview_of(load_preset(DEFAULT_PRESET))\n"
        f"layout.live_strip(pv.result, st.sidebar.empty(), pv if {preview} else None)\n",
        default_timeout=60,
    ).run()
    assert_clean(at)
    return [str(getattr(c, "type", "")) for c in at.sidebar.children[0].children.values()]


def test_the_full_strip_replaces_every_element_of_the_preview() -> None:
    """The browser keeps a replaced block's extra children until the script run ends: a preview
    strip with more elements than the full one left its CDF drawn under the full run's."""
    assert _strip_elements(preview=True) == _strip_elements(preview=False)
