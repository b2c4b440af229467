"""A chip under a power limit: the clock the relation gives, what slows, and the energy it bounds."""

from __future__ import annotations

import dataclasses

import pytest

from engine.catalog.entries import load_catalog
from engine.costmodel import power, power_cap
from engine.costmodel.iteration import decode_cost, prefill_cost
from engine.costmodel.perf import Instance

CATALOG = load_catalog()
H100 = CATALOG.chip("h100-sxm")


@pytest.mark.parametrize("limit_w", [700.0, 800.0, 10_000.0])
def test_no_slowdown_at_or_above_the_tdp(limit_w: float) -> None:
    assert power_cap.clock_at_limit(H100, limit_w) == 1.0


@pytest.mark.parametrize("chip", ["h100-sxm", "b200", "mi300x", "h20"])
def test_the_clock_solves_the_documented_relation(chip: str) -> None:
    """(limit - idle) / (tdp - idle) = fixed share + (1 - fixed share) * g(f), g = f^3 above the voltage
    floor, f_v^2 * f below it: the limit the clock gives back is the limit asked for."""
    hw = CATALOG.chip(chip)
    for share in (0.95, 0.8, 0.6, 0.45):
        limit = hw.idle_w + share * (hw.tdp_w - hw.idle_w)
        f = power_cap.clock_at_limit(hw, limit)
        assert 0.0 < f < 1.0
        assert power_cap.limit_for_clock(hw, f) == pytest.approx(limit, rel=1e-9)
    # above the floor the core's power goes as f^3
    f = power_cap.clock_at_limit(hw, hw.idle_w + 0.8 * (hw.tdp_w - hw.idle_w))
    assert f == pytest.approx(((0.8 - power_cap.FIXED_SHARE) / (1 - power_cap.FIXED_SHARE)) ** (1 / 3))


def test_a_lower_limit_never_gives_a_higher_clock() -> None:
    clocks = [power_cap.clock_at_limit(H100, w) for w in range(250, 701, 10)]
    assert clocks == sorted(clocks)
    assert power_cap.clock_at_limit(H100, H100.idle_w) == 0.0  # nothing left for the cores


def test_the_fitted_relation_against_the_rtx_3090_sweep() -> None:
    """The module's fit: an RTX 3090 (350 W TDP, ~30 W idle) ran prefill at 0.94/0.85/0.60/0.26 of its
    speed at 300/250/200/150 W; the relation gives the clocks its docstring states, within 0.1 of each."""
    rtx = H100.model_copy(update={"tdp_w": 350.0, "idle_w": 30.0})
    measured = {300: 0.943, 250: 0.853, 200: 0.600, 150: 0.258}
    for watts, speed in measured.items():
        assert power_cap.clock_at_limit(rtx, float(watts)) == pytest.approx(speed, abs=0.1)


def _capped(inst: Instance, clock: float) -> Instance:
    return dataclasses.replace(inst, clock=clock, bandwidth_scale=power_cap.bandwidth_factor(clock))


def test_compute_bound_prefill_slows_with_the_clock_and_memory_bound_decode_hardly() -> None:
    inst = Instance(model=CATALOG.model("llama-3.1-70b"), hardware=H100, tp=2, weights="fp8", kv="fp8")
    slow = _capped(inst, 0.8)
    assert slow.bytes_per_s == inst.bytes_per_s  # HBM holds down to half the clock
    pre, pre_slow = prefill_cost(inst, 4096), prefill_cost(slow, 4096)
    assert float(pre_slow.compute_s) == pytest.approx(float(pre.compute_s) / 0.8, rel=1e-9)
    assert float(pre_slow.time_s) / float(pre.time_s) > 1.15  # prefill: nearly 1 / 0.8
    dec, dec_slow = decode_cost(inst, 8, 2048), decode_cost(slow, 8, 2048)
    assert float(dec_slow.time_s) / float(dec.time_s) < 1.05  # decode: bandwidth-bound


def test_below_the_knee_bandwidth_falls_with_the_clock() -> None:
    assert power_cap.bandwidth_factor(0.5) == 1.0
    assert power_cap.bandwidth_factor(0.4) == pytest.approx(0.8)


def test_energy_under_a_limit_is_bounded_by_it_and_unchanged_without_one() -> None:
    work = {"chips": 2, "span_s": 100.0, "busy_chip_s": 200.0, "bytes_moved": 5e15, "flops": 5e17}
    full = power.run_energy_j(H100, **work)
    assert power.run_energy_j(H100, **work, clock=1.0, limit_w=None) == full
    capped = power.run_energy_j(H100, **work, clock=0.6, limit_w=400.0)
    assert capped < full
    assert capped <= 400.0 * 2 * 100.0 + 1e-6  # never above the limit on average
    assert power_cap.energy_scale(1.0) == (1.0, 1.0)
