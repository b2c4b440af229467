"""The Planner page's specialisation-risk section (streamlit.testing AppTest): it runs the shipped
lifetime, charts the bill with the write-off, and a switch to keeping the fleet idle removes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.planning import load_lifetime, run_lifetime
from ui.lifetime import PART_STYLE, bill_chart, unit_cost_chart

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_the_planner_page_charts_a_lifetime_and_its_write_off() -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("app_pages/planner.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(s.value == "Specialisation risk over time" for s in at.subheader)
    assert not at.get("plotly_chart") and not at.metric  # off until asked: the planner's page stays as it was
    at.toggle(key="fg-lifetime-on").set_value(True).run()
    assert at.selectbox(key="fg-lifetime").value == "asic-model-churn"
    metrics = {m.label: m for m in at.metric}
    asic = next(m for label, m in metrics.items() if label.startswith("ASIC"))
    assert asic.value.startswith("$") and "written off" in str(asic.delta)
    assert not at.warning, [w.value for w in at.warning]
    bill = next(c for c in at.get("plotly_chart") if "Bill per period" in c.proto.spec)
    assert "capital written off" in bill.proto.spec
    # kept idle instead: nothing is written off, the fleet's idle months are billed
    at.segmented_control(key="fg-lifetime-stranded").set_value("keep").run()
    assert not at.exception, [e.value for e in at.exception]
    bill = next(c for c in at.get("plotly_chart") if "Bill per period" in c.proto.spec)
    assert "capital written off" not in bill.proto.spec
    assert not any("written off" in str(m.delta) for m in at.metric)


def test_the_charts_carry_the_engines_figures() -> None:
    """The bill's bars are the periods' parts (the write-off its own red trace, in the period it
    happens), and the unit-cost chart's dashed levels are the totals."""
    res = run_lifetime(load_lifetime("asic-model-churn"))
    traces = {t.name: t for t in bill_chart(res).data}
    written = traces[PART_STYLE["written_off_usd"][0]]
    assert list(written.y) == list(res.periods["written_off_usd"]) and written.marker.color == "#c0392b"
    assert sum(sum(t.y) for t in traces.values()) == pytest.approx(sum(res.periods["total_usd"]))
    levels = {t.name: t.y[0] for t in unit_cost_chart(res).data if "whole life" in t.name}
    assert sorted(levels.values()) == sorted(res.totals["usd_per_million_tokens"])
