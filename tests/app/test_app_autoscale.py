"""A pool's autoscaling on the Strategy page (ui/autoscale.py, issue 34): bound to the scenario and its link."""

from __future__ import annotations

import pytest

from engine.scenario.codec import from_link
from tests.app.test_app import app, assert_clean, scenario_of, short, text_of

PRESET = "chat-disaggregated"


def _decode(at: object) -> int:
    return next(i for i, p in enumerate(scenario_of(at).deployment.pools) if p.role == "decode")  # type: ignore[arg-type]


@pytest.mark.slow
def test_autoscaling_the_decode_pool_draws_the_day_on_results() -> None:
    at = app("strategy", short(PRESET), preset=PRESET)
    assert_clean(at)
    d = _decode(at)
    at.toggle(key=f"fg:deployment.pools[{d}].autoscale:on").set_value(True).run()
    assert_clean(at)
    auto = scenario_of(at).deployment.pools[d].autoscale
    assert auto is not None and auto.policy.name == "slo"
    at.selectbox(key=f"fg:deployment.pools[{d}].autoscale.policy.name").set_value("queue").run()
    at.number_input(key=f"fg:deployment.pools[{d}].autoscale.initial_instances").set_value(2).run()
    at.number_input(key=f"fg:deployment.pools[{d}].autoscale.interval_s").set_value(10.0).run()
    assert_clean(at)
    auto = scenario_of(at).deployment.pools[d].autoscale
    assert auto is not None
    assert (auto.policy.name, auto.min_instances, auto.initial_instances, auto.interval_s) == (
        "queue",
        1,
        2,
        10.0,
    )
    params = {k: at.query_params[k] for k in ("v", "p", "s")}
    assert from_link(params) == scenario_of(at)  # the share link carries it

    at.switch_page("app_pages/results.py").run()
    assert_clean(at)
    assert "Over the day: autoscaling" in [h.value for h in at.subheader]
    assert "Instance-hours" in [m.label for m in at.metric]

    at.switch_page("app_pages/strategy.py").run()
    at.toggle(key=f"fg:deployment.pools[{d}].autoscale:on").set_value(False).run()
    assert_clean(at)
    assert scenario_of(at) == short(PRESET)


@pytest.mark.slow
def test_a_bad_bound_keeps_the_scenario_and_says_the_engines_line() -> None:
    at = app("strategy", short(PRESET), preset=PRESET)
    d = _decode(at)
    at.toggle(key=f"fg:deployment.pools[{d}].autoscale:on").set_value(True).run()
    before = scenario_of(at)
    count = before.deployment.pools[d].count
    at.number_input(key=f"fg:deployment.pools[{d}].autoscale.min_instances").set_value(count + 5).run()
    assert not at.exception
    said = [text_of(w.value) for w in at.warning]
    line = f"deployment.pools[{d}].autoscale.min_instances: {count + 5} must be from 1 to count ({count})"
    assert any(line in s for s in said), said
    assert scenario_of(at) == before
