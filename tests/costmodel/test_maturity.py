"""Software maturity (engine.costmodel.maturity, engine.calibration.software) and its porting cost."""

from __future__ import annotations

from typing import Any

import pytest

from engine.catalog.entries import load_catalog
from engine.core.errors import ScenarioError
from engine.costmodel import maturity, ownership
from engine.costmodel.ownership import HOURS_PER_YEAR, CostBasis
from engine.explain.software import porting_lines
from engine.planning.calibrations import chip_calibrations
from engine.planning.candidates import with_deployment
from engine.planning.sizing import Kind, Shape, instance_of
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.run import simulate
from tests.simhelp import small

ASIC = "deployment.pools[1].maturity"  # decode-asic: the illustrative decode chip's pool


def asic(**over: Any) -> Scenario:
    return small("decode-asic", **{"duration_s": 30.0, **over})


def _decode(sc: Scenario) -> tuple[Any, Any]:
    pool = resolve(sc).pools[1]
    return pool.hardware.profiles[pool.instance.profile_name], pool.calibration


@pytest.mark.parametrize("level", ["vendor", "port"])
def test_a_level_derates_the_profile_and_widens_the_band_by_its_rule(level: str) -> None:
    prof0, cal0 = _decode(asic())
    prof, cal = _decode(asic(**{ASIC: level}))
    lv = maturity.LEVELS[level]
    assert prof.eta_compute == pytest.approx(prof0.eta_compute * lv.compute)
    assert prof.eta_bandwidth == pytest.approx(prof0.eta_bandwidth * lv.bandwidth)
    assert prof.overhead_ms == pytest.approx(prof0.overhead_ms * lv.overhead)
    assert cal0.band and set(cal.band) == set(cal0.band)
    for f, (lo, hi) in cal0.band.items():
        assert cal.band[f] == pytest.approx((lo / lv.widen, hi * lv.widen), abs=1e-3)
    assert f"software maturity '{level}'" in cal.rule and cal.basis == cal0.basis


def test_a_less_mature_stack_is_slower() -> None:
    tpot = {
        lvl: simulate(asic(**({ASIC: lvl} if lvl else {}))).summary["classes"]["chat"][
            "tpot_ms_at_percentile"
        ]
        for lvl in (None, "vendor", "port")
    }
    assert tpot[None] < tpot["vendor"] < tpot["port"]


def test_unset_and_measured_keep_todays_numbers() -> None:
    base = simulate(asic(**{"cost.mode": "own"})).summary
    measured = simulate(asic(**{ASIC: "measured", "cost.mode": "own"})).summary
    assert measured == base  # a measured stack: no factor, no porting, the same bill and the same rule
    assert _decode(asic())[0] == _decode(asic(**{ASIC: "measured"}))[0]
    assert "porting" not in base["cost"]["usd_by_kind"]


def test_porting_is_an_owned_bill_kind_amortised_over_the_years() -> None:
    over = {ASIC: "port", "cost.mode": "own"}
    s = simulate(asic(**over)).summary
    hours = s["drain_end_s"] / 3600.0
    months = maturity.LEVELS["port"].engineer_months
    per_hour = months * maturity.USD_PER_ENGINEER_MONTH / (5.0 * HOURS_PER_YEAR)
    cost = s["cost"]
    assert cost["usd_by_kind"]["porting"] == pytest.approx(per_hour * hours, rel=1e-9)
    assert sum(cost["usd_by_kind"].values()) == pytest.approx(cost["usd_total"], rel=1e-9)
    assert sum(cost["usd_by_part"].values()) == pytest.approx(cost["usd_total"], rel=1e-9)
    assert sum(cost["usd_by_pool"].values()) == pytest.approx(cost["usd_total"], rel=1e-9)
    # twice the years: half the porting per hour of the same run
    longer = simulate(asic(**over, **{"cost.amortisation_years": 10.0})).summary["cost"]["usd_by_kind"]
    assert longer["porting"] == pytest.approx(cost["usd_by_kind"]["porting"] / 2, rel=1e-9)


def test_the_basis_states_the_months_and_their_price() -> None:
    over = {"cost.mode": "own", "cost.porting_engineer_months": {"decode-asic": 3.0}}
    s = simulate(asic(**over, **{"cost.usd_per_engineer_month": 40_000.0})).summary
    hours = s["drain_end_s"] / 3600.0
    assert s["cost"]["usd_by_kind"]["porting"] == pytest.approx(3 * 40_000 / (5 * HOURS_PER_YEAR) * hours)
    basis = CostBasis(porting_engineer_months={"decode-asic": 3.0})
    assert ownership.porting_usd("decode-asic", "port", basis) == 3 * maturity.USD_PER_ENGINEER_MONTH
    assert ownership.porting_usd("h100-sxm", None, basis) == 0.0  # no level, no months: nothing to port


def test_a_chip_is_ported_once_per_deployment_however_many_pools() -> None:
    sc = small(
        "chat-disaggregated",
        **{"duration_s": 30.0, "cost.mode": "own", "deployment.pools[0].maturity": "vendor"},
    )
    s = simulate(sc).summary
    hours = s["drain_end_s"] / 3600.0
    one = maturity.LEVELS["vendor"].engineer_months * maturity.USD_PER_ENGINEER_MONTH / (5 * HOURS_PER_YEAR)
    assert s["cost"]["usd_by_kind"]["porting"] == pytest.approx(one * hours, rel=1e-9)  # both pools: H100s
    assert len(porting_lines(sc)) == 1


def test_a_rented_bill_leaves_porting_out_and_says_so() -> None:
    sc = asic(**{ASIC: "port"})
    cost = simulate(sc).summary["cost"]
    assert "usd_by_kind" not in cost
    (line,) = porting_lines(sc)
    assert "decode-asic" in line and "$600,000" in line and "not in a rented bill" in line
    assert porting_lines(asic()) == []


@pytest.mark.parametrize(
    ("path", "value", "says"),
    [
        (ASIC, "beta", "deployment.pools[1].maturity: Input should be 'measured', 'vendor' or 'port'"),
        (
            "cost.usd_per_engineer_month",
            -1.0,
            "cost.usd_per_engineer_month: Input should be greater than or equal",
        ),
        (
            "cost.porting_engineer_months",
            {"decode-asic": 2e4},
            "cost.porting_engineer_months.decode-asic: Input",
        ),
    ],
)
def test_bad_values_are_refused_naming_the_field(path: str, value: Any, says: str) -> None:
    with pytest.raises(ScenarioError, match=r"^" + says.replace("[", r"\[").replace("]", r"\]")):
        asic(**{path: value})


def test_the_planner_runs_a_chip_at_its_stated_maturity() -> None:
    sc = asic(**{ASIC: "port"})
    cat = load_catalog()
    shape = Shape("disaggregated", Kind("h100-sxm", 2), Kind("decode-asic", 1))
    planned = with_deployment(sc, shape, (2, 3))
    assert [p.maturity for p in planned.deployment.pools] == [None, "port"]
    slow, fast = (instance_of(s, cat, "decode-asic", 1) for s in (sc, asic()))
    eta = [i.hardware.profiles[i.profile_name].eta_bandwidth for i in (slow, fast)]
    assert eta[0] == pytest.approx(eta[1] * maturity.LEVELS["port"].bandwidth)
    band = chip_calibrations(sc, cat, ["decode-asic"])["decode-asic"].band
    assert band == _decode(sc)[1].band


@pytest.mark.parametrize("level", ["vendor", "port"])
def test_a_fitted_chip_derated_by_maturity_is_marked_partly_calibrated(level: str) -> None:
    """A browser review found a pool set to 'port' still badged *calibrated*, 'fitted to measurements',
    while its band had widened and its SLO attainment fallen: a fit the stack no longer reaches is only
    partly the chip's own, and the mark, the summary and the pages say why."""
    from engine.explain.confidence import pool_marks, short_mark

    prefill = "deployment.pools[0].maturity"  # h100-sxm, fitted under vLLM
    _, cal0 = _prefill(asic())
    _, cal = _prefill(asic(**{prefill: level}))
    assert cal0.fitted and cal0.mark == "calibrated" and cal0.maturity is None
    assert cal.fitted and cal.mark == "partly calibrated" and cal.maturity == level
    assert f"software maturity '{level}'" in cal.partial_text and "maturity" not in cal0.as_dict()
    run = simulate(asic(**{prefill: level}))
    marks = pool_marks(run.scenario, run.summary)  # read back from the summary, as the pages do
    assert marks[0].calibration.maturity == level
    assert short_mark(marks[0].calibration) == f"partly calibrated: {cal.partial_text}"


def _prefill(sc: Scenario) -> tuple[Any, Any]:
    pool = resolve(sc).pools[0]
    return pool.hardware.profiles[pool.instance.profile_name], pool.calibration
