"""The risk-aware search's start: the cost model's bound with the chips slowed (`slowed_rates`,
`risk_search.slowed_start`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from engine.catalog.entries import Catalog
from engine.planning.candidates import planning_scenario
from engine.planning.risk_search import slowed_start
from engine.planning.sizing import Kind, Shape, demand, instance_of, instance_rates, lower_bound, slowed_rates
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.serving.workload import generate

KIND = Kind("h100-sxm", 2)
SHAPE = Shape("disaggregated", KIND, KIND)


def _setup(tpot_ms: float = 40.0) -> tuple[Scenario, Any]:
    s = io.apply_overrides(io.load_preset("chat-colocated"), {"workload.classes[0].slo.tpot_ms": tpot_ms})
    base = planning_scenario(s, 16.0, 30.0)
    return base, demand(base, generate(base))


def test_slowed_rates_are_every_iteration_longer_by_the_slowdown(catalog: Catalog) -> None:
    base, d = _setup()
    nominal = {KIND: instance_rates(instance_of(base, catalog, *KIND), d, base.cost)}
    slow = slowed_rates(nominal, base, catalog, d, {"h100-sxm": 0.5})[KIND]
    r = nominal[KIND]
    assert slow.decode_floor_s == pytest.approx(1.5 * r.decode_floor_s, rel=1e-9)
    assert slow.prefill_s_per_request == pytest.approx(1.5 * r.prefill_s_per_request, rel=1e-9)
    assert slow.usd_per_hour == r.usd_per_hour and slow.decode_batch <= r.decode_batch
    # a chip not slowed keeps its own (the very same rates)
    assert slowed_rates(nominal, base, catalog, d, {"h200": 0.5})[KIND] is r


def _slow(base: Scenario, d: Any, catalog: Catalog, e: float) -> Any:
    rates = slowed_rates({KIND: instance_rates(instance_of(base, catalog, *KIND), d, base.cost)}, base, catalog, d,
                         {"h100-sxm": e})  # fmt: skip
    space = SimpleNamespace(max_instances_per_pool=64)
    return SimpleNamespace(demand=d, rates=rates, space=space, affordable=lambda shape, counts: True)


def test_the_slowed_search_starts_at_the_slowed_bound_and_skips_a_shape_it_prunes(catalog: Catalog) -> None:
    base, d = _setup()
    nominal = lower_bound(
        SHAPE, {KIND: instance_rates(instance_of(base, catalog, *KIND), d, base.cost)}, d, 64
    )
    slow = _slow(base, d, catalog, 0.75)
    bound = lower_bound(SHAPE, slow.rates, d, 64)
    assert bound.counts[1] > nominal.counts[1]  # decode's batch under the TPOT target shrinks once slowed
    assert slowed_start(slow, SHAPE, nominal.counts) == bound.counts
    assert slowed_start(slow, SHAPE, (9, 1)) == (9, bound.counts[1])  # each pool raised, never lowered
    # a TPOT target between the batch-1 step as modelled and slowed: no count of the shape can pass slowed
    floor_ms = instance_rates(instance_of(base, catalog, *KIND), d, base.cost).decode_floor_s * 1e3
    base, d = _setup(tpot_ms=round(floor_ms * 1.5, 1))
    assert not lower_bound(
        SHAPE, {KIND: instance_rates(instance_of(base, catalog, *KIND), d, base.cost)}, d, 64
    ).pruned
    slow = _slow(base, d, catalog, 1.0)
    assert "one decode step at batch 1" in lower_bound(SHAPE, slow.rates, d, 64).pruned
    assert slowed_start(slow, SHAPE, (1, 1)) is None
    # without a demand (a search made by hand) the start is the one given
    assert slowed_start(SimpleNamespace(demand=None), SHAPE, (2, 3)) == (2, 3)  # type: ignore[arg-type]


def test_a_start_past_the_budget_or_the_power_budget_is_skipped(catalog: Catalog) -> None:
    """The slowed bound raised power-capped-site's 5P:1D (4.9 kW) to 12 H100s (8.4 kW) under its 6 kW
    cap and chose it (a review): a start past a budget is skipped, as more instances only draw more."""
    base, d = _setup()
    slow = _slow(base, d, catalog, 0.75)
    bound = lower_bound(SHAPE, slow.rates, d, 64)
    slow.affordable = lambda shape, counts: sum(counts) < sum(bound.counts)
    assert slowed_start(slow, SHAPE, (1, 1)) is None
    slow.affordable = lambda shape, counts: True
    assert slowed_start(slow, SHAPE, (1, 1)) == bound.counts
