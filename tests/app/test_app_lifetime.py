"""The Planner page's specialisation-risk section (streamlit.testing AppTest): it runs the shipped
lifetime, charts the bill with the write-off, and a switch to keeping the fleet idle removes it."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

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
