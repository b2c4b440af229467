"""App tests of power budgets: the Results line of a capped run, the caps on Strategy, the Planner's budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from engine.scenario.codec import load_preset
from tests.app.harness import app, assert_clean, scenario_of

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _texts(at: AppTest) -> list[str]:
    elements: list[Any] = [*at.caption, *at.info, *at.warning, *at.markdown, *at.error, *at.success]
    return [str(e.value).replace("\\", "") for e in elements]


def test_results_of_a_capped_site_say_the_cap_the_clock_and_the_draw() -> None:
    at = app("results", load_preset("power-capped-site"), preset="power-capped-site")
    assert_clean(at)
    line = next(t for t in _texts(at) if t.startswith("Power cap:"))
    assert "site cap 6 kW" in line and "clock 81%" in line and "500 W a chip" in line


def test_the_strategy_page_sets_a_site_cap() -> None:
    at = app("strategy", load_preset("chat-disaggregated"), preset="chat-disaggregated")
    assert_clean(at)
    box = at.number_input(key="fg:deployment.power_cap_kw")
    assert box.value is None and box.proto.placeholder == "no cap"  # what an empty box means, not "default"
    box.set_value(6.0).run()
    assert_clean(at)
    assert scenario_of(at).deployment.power_cap_kw == 6.0


def test_the_planner_leaves_out_what_the_power_budget_cannot_power() -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("app_pages/planner.py")
    at.run()
    at.number_input(key="plan_target").set_value(8.0)
    at.multiselect(key="plan_hardware").set_value(["h100-sxm"])
    at.multiselect(key="plan_tp").set_value([2])
    at.multiselect(key="plan_modes").set_value(["colocated"])
    at.selectbox(key="plan_window").set_value(60.0)
    at.number_input(key="plan_power_budget").set_value(1.0)
    at.button[0].click().run()
    assert not at.exception
    assert any("power budget of 1 kW" in t and "1.4 kW" in t for t in _texts(at)), _texts(at)
