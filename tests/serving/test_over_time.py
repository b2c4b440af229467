"""A run minute by minute, any deployment (`engine.serving.timeline.over_time`, issue 34's "Results over time").

A fixed deployment's timeline has its pools' counts all along and no scale events; its power adds
up to the summary's energy; an autoscaled run's instances and events are those of its summary's
`autoscale` section; a window under five minutes has none.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.scenario import codec as io
from engine.serving.run import SimResult, simulate
from engine.serving.timeline import MIN_BINS, bin_edges


@pytest.fixture(scope="module")
def static() -> SimResult:
    return simulate(io.apply_overrides(io.load_preset("day-static-peak"), {"duration_s": 600.0}))


@pytest.fixture(scope="module")
def scaled() -> SimResult:
    return simulate(io.apply_overrides(io.load_preset("day-autoscaled"), {"duration_s": 900.0}))


def test_a_fixed_deployment_has_its_counts_all_along_and_no_scale_events(static: SimResult) -> None:
    over = static.over_time
    assert over is not None
    counts = {p.name: p.count for p in static.scenario.deployment.pools}
    assert {k: set(v) for k, v in over["instances"].items()} == {k: {float(c)} for k, c in counts.items()}
    assert over["events"] == []
    hours = static.summary["drain_end_s"] / 3600.0
    assert over["instance_hours"] == pytest.approx({k: c * hours for k, c in counts.items()})
    assert sum(over["requests"]) == static.summary["requests"]["total"]
    assert len(over["t_s"]) == len(bin_edges(static.summary["drain_end_s"])) - 1
    assert over["target"] == pytest.approx(0.9)  # the one class's SLO percentile
    assert all(0.0 <= b <= 1.0 for v in over["busy"].values() for b in v)


def test_power_per_minute_adds_up_to_the_runs_energy(static: SimResult, scaled: SimResult) -> None:
    for run in (static, scaled):
        over = run.over_time
        assert over is not None
        widths = np.diff(bin_edges(run.summary["drain_end_s"]))
        joules = sum(float(np.dot(kw, widths)) * 1e3 for kw in over["power_kw"].values())
        # per minute, power is bounded by TDP minute by minute, the summary over the run: never more
        assert joules <= run.summary["energy"]["joules"] * (1 + 1e-9)
        assert joules == pytest.approx(run.summary["energy"]["joules"], rel=0.01)


def test_under_a_power_cap_each_pools_power_stays_under_its_cap_and_adds_up() -> None:
    """The per-minute power reads the cap's clock and limit as the summary's energy does: before, the
    capped site's pools showed about 3.2 kW a minute against their 3 kW shares of a 6 kW cap."""
    run = simulate(io.apply_overrides(io.load_preset("power-capped-site"), {"duration_s": 300.0}))
    over, cap = run.over_time, run.summary["power_cap"]
    assert over is not None and cap is not None
    widths = np.diff(bin_edges(run.summary["drain_end_s"]))
    joules = sum(float(np.dot(kw, widths)) * 1e3 for kw in over["power_kw"].values())
    assert joules == pytest.approx(run.summary["energy"]["joules"], rel=0.01)
    for name, pool in cap["pools"].items():
        assert max(over["power_kw"][name]) <= pool["cap_kw"] * (1 + 1e-9)
    site_kw = np.sum([np.asarray(kw) for kw in over["power_kw"].values()], axis=0)
    assert float(site_kw.max()) <= cap["site_cap_kw"] * (1 + 1e-9)


def test_an_autoscaled_runs_instances_and_events_are_its_summarys(scaled: SimResult) -> None:
    over = scaled.over_time
    auto = scaled.summary.get("autoscale")
    assert over is not None and auto is not None
    assert over["instances"] == auto["timeline"]["instances"]
    assert over["slo_attainment"] == auto["timeline"]["slo_attainment"]
    assert over["events"] == auto["events"] and over["events"]
    assert over["instance_hours"] == pytest.approx({k: p["instance_hours"] for k, p in auto["pools"].items()})


def test_a_window_of_a_few_minutes_has_no_timeline() -> None:
    short = simulate(
        io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 60.0 * MIN_BINS - 1})
    )
    assert short.over_time is None
    assert (
        simulate(
            io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 60.0 * MIN_BINS})
        ).over_time
        is not None
    )


@pytest.mark.parametrize("name", io.preset_names())
def test_every_presets_timeline_holds_its_runs_totals(name: str) -> None:
    """A preset added later (an edge site, a trace, a portfolio) is covered the moment it exists."""
    base = io.load_preset(name)
    long_enough = 60.0 * MIN_BINS + base.warmup_s
    run = simulate(
        io.apply_overrides(base, {"duration_s": long_enough}) if base.duration_s > long_enough else base
    )
    over = run.over_time
    if over is None:  # a whole-run load shorter than five minutes (the offline batch)
        assert run.summary["drain_end_s"] < 60.0 * MIN_BINS and "autoscale" not in run.summary
        return
    assert sum(over["requests"]) == run.summary["requests"]["total"]
    assert set(over["instances"]) == set(over["power_kw"]) == {p.name for p in run.scenario.deployment.pools}
    for pool in run.scenario.deployment.pools:
        if pool.autoscale is None:
            assert set(over["instances"][pool.name]) == {float(pool.count)}
    assert all(0.0 <= b <= 1.0 for v in over["busy"].values() for b in v)
    assert all(kw >= 0.0 for v in over["power_kw"].values() for kw in v)
    assert 0.5 <= over["target"] <= 0.9999


def test_every_arrival_is_counted_a_warm_ups_too() -> None:
    """The instances chart's 'requests arriving' read 0 through agentic-cache's warm-up while its
    instances were busy (a review): `arrived` counts every request, `requests` the measured window's."""
    res = simulate(io.apply_overrides(io.load_preset("agentic-cache"), {"duration_s": 660.0}))
    ot = res.over_time
    assert ot is not None
    warm = [i for i, t in enumerate(ot["t_s"]) if t + ot["bin_s"] <= res.scenario.warmup_s]
    assert warm and all(ot["requests"][i] == 0 for i in warm) and all(ot["arrived"][i] > 0 for i in warm)
    assert sum(ot["arrived"]) == len(res.requests)
    after = [i for i, t in enumerate(ot["t_s"]) if t >= res.scenario.warmup_s]
    assert all(ot["arrived"][i] == ot["requests"][i] for i in after)
