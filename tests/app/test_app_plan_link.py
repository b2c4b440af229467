"""The Planner's share link (`ui.plan_link`): a link with a plan fills the form and waits for a click
on Plan (a URL never starts minutes of work unasked), the address then carries the plan shown, a
hostile link is said and dropped, and every field of the form travels in the link."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from engine.planning import PLAN_FORM, plan_link_decode, plan_link_encode
from tests.app.harness import APP
from ui.plan_link import KEYS

SMALL = {"rps": 8.0, "hw": ["h100-sxm"], "modes": ["colocated"], "tp": [2], "window": 60.0, "margin": False}
"""A plan that takes a second or two: one chip, one layout, a one-minute window."""
WIDGETS = ("number_input", "multiselect", "selectbox", "checkbox", "toggle", "radio", "slider", "text_input")


def _planner(plan: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.switch_page("app_pages/planner.py")
    if plan is not None:
        at.query_params["plan"] = plan
    return at.run()


def _texts(at: AppTest) -> list[str]:
    shown = [*at.markdown, *at.caption, *at.info, *at.success, *at.warning]
    return [str(m.value).replace("\\", "").replace("\u2060", "") for m in shown]  # (markdown escapes)


def test_a_link_with_a_plan_fills_the_form_and_plan_shows_that_plan() -> None:
    link = plan_link_encode(SMALL)
    at = _planner(link)
    assert not at.exception
    assert at.multiselect(key="plan_hardware").value == ["h100-sxm"]
    assert at.multiselect(key="plan_tp").value == [2]
    assert at.number_input(key="plan_target").value == 8.0
    assert at.selectbox(key="plan_window").value == 60.0
    assert at.checkbox(key="plan_margin").value is False
    # nothing ran yet: the link's request waits for a click, and the address keeps it
    assert any("The form holds a shared plan's request: press **Plan**" in t for t in _texts(at))
    assert not any("Cheapest deployment" in t for t in _texts(at))
    assert at.query_params["plan"] == link
    at.button[0].click().run()
    assert not at.exception
    assert any("Cheapest deployment" in t and "h100-sxm" in t for t in _texts(at)), _texts(at)
    assert not any("shared plan's request" in t for t in _texts(at))
    # the address now carries the whole form the shown plan was made from, the link's values in it
    carried = plan_link_decode(str(at.query_params["plan"]), ["h100-sxm", "h200", "b200"])
    assert {k: carried[k] for k in SMALL} == SMALL and carried["sims"] == 120
    # and so does the Share box, drawn in the sidebar before the plan ran (redrawn at the run's end)
    shared = [str(c.value) for c in at.code if "/planner?" in str(c.value)]
    assert len(shared) == 1 and "&plan=" in shared[0] and "sims%3A120" in shared[0], shared


def test_a_plan_link_is_left_on_the_planner() -> None:
    at = _planner(plan_link_encode(SMALL))
    at.button[0].click().run()
    assert "plan" in at.query_params
    at.switch_page("app_pages/results.py").run()
    assert not at.exception and "plan" not in at.query_params and at.query_params["p"]


def test_a_link_whose_plan_is_not_allowed_is_said_and_dropped() -> None:
    at = _planner("rps:8;tp:3")
    assert not at.exception
    said = [str(w.value).replace("\\", "").replace("\u2060", "") for w in at.warning]
    assert any("plan.tp (Tensor parallel): '3' is not allowed: any of 1, 2, 4, 8" in s for s in said), said
    assert "plan" not in at.query_params
    assert at.multiselect(key="plan_tp").value == [1, 2, 4, 8]  # the form keeps its own values
    assert any("then press **Plan**" in str(i.value) for i in at.info)


def test_every_field_of_the_form_travels_in_the_link() -> None:
    at = _planner()
    keys = {w.key for kind in WIDGETS for w in getattr(at, kind) if w.key and w.key.startswith("plan_")}
    assert keys == set(KEYS.values())
    assert set(KEYS) == set(PLAN_FORM)  # each field of the engine's table has its widget


def test_an_empty_plan_parameter_is_none_and_a_refused_scenario_is_said() -> None:
    at = _planner(";;")
    assert not at.exception and "plan" not in at.query_params
    assert any("then press **Plan**" in str(i.value) for i in at.info)
    at = AppTest.from_file(APP, default_timeout=180)
    at.switch_page("app_pages/planner.py")
    at.query_params["p"] = "no-such-preset"
    at.query_params["plan"] = plan_link_encode(SMALL)
    at.run()
    assert not at.exception
    said = " ".join(_texts(at))
    assert "The share link could not be used" in said or any(
        "could not be used" in str(w.value) for w in at.warning
    )
    assert "The link's scenario could not be used (said above): the plan would be the preset's." in said


def test_the_command_lines_link_plans_the_same_search_on_the_page() -> None:
    """`plan --link` writes the form from the flags (`engine.cli.links`) and the page builds its search
    from the form (`ui.planner._asked`): two mappings, held together here by the search they give."""
    import dataclasses
    from urllib.parse import parse_qsl, urlsplit

    from engine.cli.common import load_scenario
    from engine.cli.links import plan_address
    from engine.cli.main import parser
    from engine.cli.plan import _space
    from engine.cli.plan_flags import attainment_of

    flags = [
        "plan",
        "chat-disaggregated",
        "--target-rps",
        "9",
        "--hardware",
        "h100-sxm,h200",
        "--modes",
        "disaggregated",
        "--tp",
        "1,2",
        "--pp",
        "1",
        "--duration-s",
        "60",
        "--max-simulations",
        "5",
        "--budget-usd-per-hour",
        "500",
        "--objective",
        "chips",
        "--no-mixed-hardware",
        "--no-margin",
        "--rule",
        "attainment",
        "--attainment",
        "0.85",
        "--link",
    ]
    args = parser().parse_args(flags)
    scen = load_scenario(args.scenario, args.set)
    space = _space(args, scen)
    query = dict(parse_qsl(urlsplit(plan_address(args, scen, space, attainment_of(args))).query))
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update(query)
    at.switch_page("app_pages/planner.py").run()
    at.button[0].click().run()
    assert not at.exception
    key = at.session_state["fg_plan"][0]  # (scenario, target, space, rule, attainment, objective, risk)
    dense = dataclasses.replace(space, ep=())  # the CLI's default --ep 8,16, which a dense model never uses
    assert key[1:5] == (9.0, dense, "attainment", pytest.approx(0.85))
    assert key[5:] == ("chips", True)


def test_a_link_fills_the_form_without_the_widgets_giving_a_value_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A widget given an initial value whose key the link had set in the session made Streamlit log a
    warning with a stack trace on the server, once per process (`plan_link.initial`)."""
    from streamlit.elements.lib import policies

    said: list[str] = []
    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    monkeypatch.setattr(policies._LOGGER, "warning", lambda msg, *args, **_: said.append(msg % args))
    full = plan_link_encode({**SMALL, "sims": 40, "by": "usd_per_million_tokens", "risk": False})
    at = _planner(full)
    assert not at.exception and at.number_input(key="plan_sims").value == 40
    assert not [s for s in said if "default value" in s], said
