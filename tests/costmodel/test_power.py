"""The power model: its fit to ML.ENERGY's measurements, its bounds, and the energy of a run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.catalog.entries import load_catalog
from engine.costmodel import power
from engine.serving.run import simulate
from tests.simhelp import small

CATALOG = load_catalog()
CHIPS = sorted(CATALOG.hardware)


def test_constants_equal_a_fresh_fit() -> None:
    fresh = power.fit_reference(CATALOG)
    assert fresh == power.FITTED
    assert (fresh.active_fraction, fresh.pj_per_byte, fresh.pj_per_flop) == (
        power.ACTIVE_FRACTION,
        power.PJ_PER_BYTE,
        power.PJ_PER_FLOP,
    )


def test_reference_configurations_and_what_the_fit_leaves_out() -> None:
    points = power.read_power_points()
    assert len(points) == 16
    ids = {p.power_id for p in points} | {p.energy_id for p in points}
    assert len(ids) == 32 and all(159 <= int(i[1:]) <= 222 for i in ids)
    left_out = {p.power_id for p in points if not p.fitted}
    assert left_out == {"X160", "X164", "X208"}  # DeepSeek-V3.1 with EP, 8B on B200 host-bound
    for p in points:
        # energy per token is power over throughput in the data itself
        assert p.joules_per_token == pytest.approx(p.power_w / p.tokens_per_s, rel=1e-3)


@pytest.mark.parametrize("chip", CHIPS)
def test_idle_at_zero_activity_and_never_above_tdp(chip: str) -> None:
    hw = CATALOG.chip(chip)
    assert power.chip_power_w(hw, busy=0.0, u_bandwidth=1.0, u_compute=1.0) == pytest.approx(hw.idle_w)
    grid = np.linspace(0.0, 1.0, 11)
    busy, u_bw, u_c = np.meshgrid(grid, grid, grid)
    watts = power.chip_power_w(hw, busy=busy, u_bandwidth=u_bw, u_compute=u_c)
    assert (watts >= hw.idle_w - 1e-9).all()
    assert (watts <= hw.tdp_w + 1e-9).all()


@pytest.mark.parametrize("chip", CHIPS)
def test_more_utilisation_never_less_power(chip: str) -> None:
    hw = CATALOG.chip(chip)
    grid = np.linspace(0.0, 1.0, 21)
    for other in (0.0, 0.3):
        by_bw = power.chip_power_w(hw, u_bandwidth=grid, u_compute=other)
        by_c = power.chip_power_w(hw, u_bandwidth=other, u_compute=grid)
        assert (np.diff(by_bw) >= 0).all() and (np.diff(by_c) >= 0).all()


def test_more_utilisation_more_power_below_tdp() -> None:
    h100 = CATALOG.chip("h100-sxm")
    p = power.chip_power_w
    assert p(h100, u_bandwidth=0.4) > p(h100, u_bandwidth=0.2)
    assert p(h100, u_compute=0.2) > p(h100, u_compute=0.1)
    assert p(h100, busy=1.0) > p(h100, busy=0.5) > h100.idle_w


def test_run_energy_is_the_integral_of_steady_power() -> None:
    hw = CATALOG.chip("b200")
    u_bw, u_c, busy, span_s = 0.5, 0.1, 0.6, 100.0
    bytes_moved = u_bw * hw.memory_tb_s * 1e12 * busy * span_s
    flops = u_c * hw.peak_flops("bf16") * busy * span_s
    joules = power.run_energy_j(
        hw, chips=1, span_s=span_s, busy_chip_s=busy * span_s, bytes_moved=bytes_moved, flops=flops
    )
    watts = power.chip_power_w(hw, busy=busy, u_bandwidth=u_bw, u_compute=u_c)
    assert joules == pytest.approx(float(watts) * span_s)
    # bounded by TDP on every busy chip-second however much work is claimed
    capped = power.run_energy_j(hw, chips=2, span_s=10.0, busy_chip_s=5.0, bytes_moved=1e18, flops=1e20)
    assert capped == pytest.approx(hw.idle_w * 20.0 + (hw.tdp_w - hw.idle_w) * 5.0)


def test_energy_validation_within_25_percent() -> None:
    table = power.energy_validation(CATALOG)
    assert len(table) == 32
    assert set(table["kind"]) == {"power", "energy"}
    for kind in ("power", "energy"):
        rows = table[table["kind"] == kind]
        assert rows["abs_error"].median() <= 0.25, kind
        assert rows[rows["fitted"]]["abs_error"].median() <= 0.25, kind
    # energy per token is predicted from the same power: the same error, row for row
    by_kind = table.pivot(index="setup", columns="kind", values="error")
    np.testing.assert_allclose(by_kind["energy"], by_kind["power"], atol=2e-3)


def test_busy_h100_run_draws_a_loaded_chips_power() -> None:
    s = small("chat-colocated", seed=7)
    res = simulate(s)
    pool = s.deployment.pools[0]
    assert pool.hardware == "h100-sxm" and res.summary["utilization"][pool.name]["busy"] > 0.9
    chips = pool.tp * pool.pp * pool.count
    watts_per_chip = res.summary["energy"]["joules"] / (chips * res.summary["drain_end_s"])
    assert 400.0 <= watts_per_chip <= 700.0


@pytest.mark.parametrize("name", ["chat-colocated", "chat-disaggregated"])
def test_run_energy_between_idle_and_tdp(name: str) -> None:
    s = small(name, seed=3)
    res = simulate(s)
    hw = {p.hardware for p in s.deployment.pools}
    assert hw == {"h100-sxm"}
    chip = CATALOG.chip("h100-sxm")
    chip_s = sum(p.tp * p.pp * p.count for p in s.deployment.pools) * res.summary["drain_end_s"]
    assert chip.idle_w * chip_s < res.summary["energy"]["joules"] <= chip.tdp_w * chip_s


def test_the_doc_charges_an_iteration_to_every_chip_of_its_instance_as_the_run_does() -> None:
    """docs/cost-model.md said an iteration keeps one pipeline stage (tp chips) busy; the run
    charges busy instance-seconds times the instance's chips (tp x pp x dp) since 2026-11-30."""
    text = " ".join((Path(__file__).parents[2] / "docs" / "cost-model.md").read_text().split())
    assert "one pipeline stage (tp chips) busy" not in text
    assert "An iteration is charged to every chip of its instance (tp·pp·dp" in text
    src = (Path(__file__).parents[2] / "engine" / "serving" / "metrics.py").read_text()
    assert 'busy_chip_s=float(ca["busy"][1]) * inst.chips' in src
