"""A pool's autoscaling on the Strategy page (ui/autoscale.py, issue 34): bound to the scenario and its link."""

from __future__ import annotations

import pytest

from engine.scenario.codec import from_link
from tests.app.harness import app, assert_clean, scenario_of, short, text_of

PRESET = "chat-disaggregated"


def _decode(at: object) -> int:
    return next(i for i, p in enumerate(scenario_of(at).deployment.pools) if p.role == "decode")  # type: ignore[arg-type]


@pytest.mark.slow
def test_autoscaling_the_decode_pool_draws_its_timeline_on_results() -> None:
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
    assert "Over time: autoscaling" in [h.value for h in at.subheader]  # not a day: no hour of peak
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


DAY = "day-autoscaled"


def _day_strategy() -> object:
    return app("strategy", short(DAY), preset=DAY)


def _set(at: object, path: str, value: object) -> None:
    widgets = [*at.number_input, *at.selectbox]  # type: ignore[attr-defined]
    next(w for w in widgets if w.key == f"fg:{path}").set_value(value).run()


@pytest.mark.slow
def test_the_autoscalers_knobs_cooldowns_and_cold_start_round_trip_through_the_link() -> None:
    at = _day_strategy()
    assert_clean(at)
    at_ = "deployment.pools[1].autoscale"
    for path, value in (
        (f"{at_}.policy.headroom", 0.5),
        (f"{at_}.policy.predict", "trend"),
        (f"{at_}.up_cooldown_s", 45.0),
        (f"{at_}.down_cooldown_s", 200.0),
        (f"{at_}.cold_start.startup_s", 10.0),
        (f"{at_}.cold_start.storage", "nvme"),
        (f"{at_}.cold_start.load_gb_s", 5.0),
        (f"{at_}.cold_start.warmup_s", 15.0),
    ):
        _set(at, path, value)
        assert_clean(at)
    auto = scenario_of(at).deployment.pools[1].autoscale
    assert auto is not None
    assert auto.policy.as_dict() == {"name": "slo", "headroom": 0.5, "predict": "trend"}
    assert (auto.up_cooldown_s, auto.down_cooldown_s) == (45.0, 200.0)
    cold = auto.cold_start
    assert (cold.startup_s, cold.storage, cold.load_gb_s, cold.warmup_s) == (10.0, "nvme", 5.0, 15.0)
    params = {k: at.query_params[k] for k in ("v", "p", "s")}
    assert from_link(params) == scenario_of(at)  # the share link carries every one of them
    again = app("strategy", from_link(params), preset=DAY)  # and a fresh session shows them
    assert next(w for w in again.number_input if w.key == f"fg:{at_}.policy.headroom").value == 0.5
    assert next(w for w in again.selectbox if w.key == f"fg:{at_}.cold_start.storage").value == "nvme"

    # another autoscaler brings its own knobs, with their defaults
    _set(at, f"{at_}.policy.name", "queue")
    keys = {w.key for w in at.number_input}
    assert {f"fg:{at_}.policy.{k}" for k in ("up_above", "down_below", "busy_below")} <= keys
    assert f"fg:{at_}.policy.headroom" not in keys
    _set(at, f"{at_}.policy.up_above", 8.0)
    policy = scenario_of(at).deployment.pools[1].autoscale.policy  # type: ignore[union-attr]
    assert policy.as_dict() == {"name": "queue", "up_above": 8.0}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ("policy.headroom", 3.0, "the allowed range is 0.1 to 1"),
        ("down_cooldown_s", 100_000.0, "the allowed range is 0 to 86,400"),
        ("cold_start.warmup_s", -5.0, "the allowed range is 0 to 3,600"),
    ],
)
def test_an_out_of_range_knob_is_refused_naming_the_field_and_its_range(
    field: str, value: float, allowed: str
) -> None:
    at = _day_strategy()
    before = scenario_of(at)
    path = f"deployment.pools[0].autoscale.{field}"
    _set(at, path, value)
    assert not at.exception
    said = [text_of(w.value) for w in at.warning]
    assert any(path in s and allowed in s for s in said), said
    assert scenario_of(at) == before


@pytest.mark.slow
def test_a_fixed_pool_shows_no_autoscaler_settings() -> None:
    at = app("strategy", short(PRESET), preset=PRESET)
    keys = [w.key for w in [*at.number_input, *at.selectbox] if w.key]
    assert not [k for k in keys if ".autoscale." in k], keys
    assert not [e for e in at.expander if "autoscaler" in e.label]


def test_the_cold_start_is_said_as_the_total_the_run_waits() -> None:
    """The card's caption adds its parts up for the pool's own weights: the figure Results shows as the
    pool's cold start (a browser review: the parts alone left the reader to do the sum)."""
    from engine.serving.run import simulate

    at = _day_strategy()
    assert_clean(at)
    run = simulate(scenario_of(at))  # type: ignore[arg-type]
    cold = {name: p["cold_start_s"] for name, p in run.summary["autoscale"]["pools"].items()}
    captions = [text_of(c.value) for c in at.caption]  # type: ignore[attr-defined]
    for seconds in cold.values():
        assert any(f"= {seconds:,.0f} s for its " in c for c in captions), (cold, captions)
