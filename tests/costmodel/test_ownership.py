"""Ownership cost (engine.costmodel.ownership and the bill in engine.serving.metrics): rent or own."""

from __future__ import annotations

from typing import Any

import pytest

from engine.catalog.entries import list_priced, load_catalog
from engine.catalog.specs import HardwareSpec
from engine.core.errors import ScenarioError
from engine.costmodel import ownership
from engine.costmodel.ownership import CostBasis
from engine.planning.candidates import SearchSpace
from engine.planning.plan import plan
from engine.scenario import codec as io
from engine.serving.run import simulate
from tests.simhelp import small

# a colocated pool, split pools (KV transfer billed) and cache tiers (billed per GB-hour)
PRESETS = ("chat-colocated", "chat-disaggregated", "agentic-cache", "rent-vs-own")
QUICK = {"duration_s": 30.0}


def _cost(preset: str, **over: Any) -> dict[str, Any]:
    return simulate(small(preset, **{**QUICK, **over})).summary["cost"]


def _adds_up(cost: dict[str, Any]) -> None:
    total = cost["usd_total"]
    assert total > 0
    assert sum(cost["usd_by_part"].values()) == pytest.approx(total, rel=1e-9)
    assert all(v >= 0 for v in cost["usd_by_part"].values())
    if cost["mode"] == "own":
        assert sum(cost["usd_by_kind"].values()) == pytest.approx(total, rel=1e-9)
        assert all(v >= 0 for v in cost["usd_by_kind"].values())
        assert set(cost["usd_by_kind"]) == {"capital", "energy", "hosting", "cache"}
    else:
        assert "usd_by_kind" not in cost  # a rented bill keeps its keys (golden results, exports)


@pytest.mark.parametrize("mode", ["rent", "own"])
@pytest.mark.parametrize("preset", PRESETS)
def test_parts_add_up_to_the_bill(preset: str, mode: str) -> None:
    cost = _cost(preset, **{"cost.mode": mode})
    assert cost["mode"] == mode
    _adds_up(cost)


def test_disaggregated_owned_bill_charges_the_kv_transfer() -> None:
    cost = _cost("chat-disaggregated", **{"cost.mode": "own"})
    assert cost["usd_by_part"]["kv_transfer"] > 0


def test_rent_mode_is_the_default_and_unchanged() -> None:
    s = small("chat-colocated", **QUICK)
    assert s.cost == CostBasis() and s.cost.mode == "rent"
    explicit = simulate(io.apply_overrides(s, {"cost.mode": "rent"})).summary["cost"]
    cost = simulate(s).summary["cost"]
    assert cost == explicit
    hours = simulate(s).summary["drain_end_s"] / 3600.0
    assert cost["usd_total"] == pytest.approx(12 * 2.49 * hours, rel=1e-12)  # twelve H100s at list


def test_owned_bill_is_capital_hosting_and_energy() -> None:
    """Each kind from its formula: capex over the years, kW-months of provisioned power, kWh x PUE."""
    s = small("chat-colocated", **QUICK, **{"cost.mode": "own"})
    res = simulate(s)
    cost, hours = res.summary["cost"], res.summary["drain_end_s"] / 3600.0
    chips = 12
    kinds = cost["usd_by_kind"]
    assert kinds["capital"] == pytest.approx(chips * (27_500 + 12_000) / (5 * 8760) * hours)
    assert kinds["hosting"] == pytest.approx(chips * 0.7 * 1.8 * 184 * 12 / 8760 * hours)
    assert kinds["energy"] == pytest.approx(res.summary["energy"]["joules"] / 3.6e6 * 1.58 * 0.08)
    assert cost["usd_per_hour"] == pytest.approx(cost["usd_total"] / hours)


KNOB_RUNS = {
    "base": {},
    "kwh": {"cost.usd_per_kwh": 0.16},
    "years": {"cost.amortisation_years": 10.0},
    "pue": {"cost.pue": 1.2},
    "hosting": {"cost.hosting_usd_per_kw_month": 368.0},
    "capex": {"cost.capex_usd": {"h100-sxm": 55_000.0}, "cost.server_capex_usd": {"h100-sxm": 24_000.0}},
}


@pytest.fixture(scope="module")
def knobs() -> dict[str, dict[str, float]]:
    return {
        k: _cost("chat-colocated", **{"cost.mode": "own", **v})["usd_by_kind"] for k, v in KNOB_RUNS.items()
    }


def test_each_knob_moves_only_its_part(knobs: dict[str, dict[str, float]]) -> None:
    base = knobs["base"]
    same = pytest.approx

    def only(run: str, part: str, factor: float) -> None:
        for k, v in knobs[run].items():
            assert v == same(base[k] * (factor if k == part else 1.0)), (run, k)

    only("kwh", "energy", 2.0)  # doubling the price of a kWh doubles energy alone
    only("years", "capital", 0.5)  # twice the life halves capital
    only("pue", "energy", 1.2 / 1.58)  # PUE scales energy
    only("hosting", "hosting", 2.0)
    only("capex", "capital", 2.0)


def test_chip_hour_rate_matches_the_run() -> None:
    """The planner's rate (idle power) is a lower bound of the simulated own bill, and close to it."""
    hw = load_catalog().chip("h100-sxm")
    basis = CostBasis(mode="own")
    res = simulate(small("chat-colocated", **QUICK, **{"cost.mode": "own"}))
    per_chip_hour = res.summary["cost"]["usd_per_hour"] / 12
    assert ownership.chip_hour_usd(hw, basis) <= per_chip_hour <= ownership.chip_hour_usd(hw, basis, hw.tdp_w)
    assert ownership.chip_hour_usd(hw, CostBasis()) == hw.usd_per_hour


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"cost.mode": "buy"}, r"cost\.mode: .*'rent' or 'own'"),
        (
            {"cost.pue": 0.9},
            r"cost\.pue: .*greater than or equal to 1; the allowed range is 1 to 3 \(got 0\.9\)",
        ),
        ({"cost.pue": 5}, r"cost\.pue: .*less than or equal to 3; the allowed range is 1 to 3 \(got 5\)"),
        ({"cost.amortisation_years": 0}, r"cost\.amortisation_years: .*greater than or equal to 0\.5"),
        (
            {"cost.usd_per_kwh": -1},
            r"cost\.usd_per_kwh: .*greater than or equal to 0; the allowed range is 0 to 2 \(got -1\)",
        ),
        (
            {"cost.hosting_usd_per_kw_month": 1e6},
            r"cost\.hosting_usd_per_kw_month: .*less than or equal to 5000",
        ),
        ({"cost.capex_usd": {"h100-sxm": 0}}, r"cost\.capex_usd\.h100-sxm: .*greater than 0"),
        ({"cost.capex_usd": {"H100!": 1}}, r"cost\.capex_usd\.H100!"),
        ({"cost.rent": 1}, r"cost\.rent: unknown field"),
        # as high as a chip's own price may be (it allowed $1,000 where a custom chip's allows $10,000: a review)
        (
            {"cost.usd_per_hour": {"h100-sxm": 10_001}},
            r"cost\.usd_per_hour\.h100-sxm: .*the allowed range is more than 0 to 10,000 \(got 10001\)",
        ),
    ],
)
def test_bad_values_name_the_field_and_range(override: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        io.apply_overrides(io.load_preset("chat-colocated"), override)


def test_owned_chip_without_a_price_is_refused_before_the_run() -> None:
    cat = load_catalog()
    base = cat.chip("h100-sxm").model_dump(by_alias=True)
    base.update(id="my-chip", capex_usd=None, server_capex_usd=None)
    chip = HardwareSpec.model_validate(base)
    s = io.apply_overrides(
        small("chat-colocated", **QUICK),
        {
            "custom_hardware": [chip.model_dump(by_alias=True, exclude_none=True)],
            "deployment.pools[0].hardware": "my-chip",
        },
    )
    simulate(s)  # renting needs no purchase price
    with pytest.raises(ScenarioError, match=r"cost\.capex_usd\.my-chip: .*no purchase price"):
        simulate(io.apply_overrides(s, {"cost.mode": "own"}))
    owned = simulate(io.apply_overrides(s, {"cost.mode": "own", "cost.capex_usd": {"my-chip": 20_000.0}}))
    _adds_up(owned.summary["cost"])


def test_catalog_prices_carry_sources() -> None:
    for hw in load_catalog().hardware.values():
        assert hw.capex_usd is not None and hw.capex_usd > 0, hw.id
        assert hw.sources.get("capex_usd") and hw.sources.get("server_capex_usd"), hw.id
    bad = load_catalog().chip("h100-sxm").model_dump(by_alias=True)
    bad["sources"].pop("capex_usd")
    with pytest.raises(ValueError, match="capex_usd"):
        HardwareSpec.model_validate(bad)


def test_planner_ranks_with_the_mode() -> None:
    """Owned H100s made dear: the owned plan moves to H200s, the rented one keeps H100s (the modelled
    chips: whether a choice also holds at its band's pessimistic edge is tests/planning's)."""
    space = SearchSpace(
        hardware=("h100-sxm", "h200"),
        tp=(2,),
        pp=(1,),
        modes=("colocated",),
        duration_s=20.0,
        finalists=1,
        frontier_extra=0,
    )
    dear = {"cost.capex_usd": {"h100-sxm": 400_000.0}}
    s = io.apply_overrides(io.load_preset("chat-colocated"), {"duration_s": 20.0, **dear})
    rented = plan(s, 3.0, space, risk_aware=False)
    owned = plan(io.apply_overrides(s, {"cost.mode": "own"}), 3.0, space, risk_aware=False)
    assert rented.best is not None and owned.best is not None
    assert rented.best.deployment.pools[0].hardware == "h100-sxm"
    assert owned.best.deployment.pools[0].hardware == "h200"
    # the analytic bound never exceeds what the run bills, in either mode
    for p in (rented, owned):
        done = p.candidates[p.candidates["status"] == "simulated"]
        assert len(done)
        best = float(p.runs["usd_per_hour"].iloc[p.best_run])
        assert float(done["lower_bound_usd_per_hour"].min()) <= best + 1e-9


def test_slo_page_switches_to_owning_and_results_say_so() -> None:
    """The SLO page's Cost basis section: own mode, a knob and a chip's price; Results names the basis."""
    from tests.app.harness import app, assert_clean, scenario_of  # the app harness (imports Streamlit)

    at = app("slo")
    at.button_group(key="fg:cost.mode").set_value("own").run()
    assert_clean(at)
    assert scenario_of(at).cost.mode == "own"
    at.number_input(key="fg:cost.usd_per_kwh").set_value(0.16).run()
    assert scenario_of(at).cost.usd_per_kwh == 0.16
    at.number_input(key="fg:cost.capex_usd:h100-sxm").set_value(30_000.0).run()
    assert_clean(at)
    assert scenario_of(at).cost.capex_usd == {"h100-sxm": 30_000.0}
    # a price out of range is refused at once, with the field and the range, and the box goes back
    at.number_input(key="fg:cost.capex_usd:h100-sxm").set_value(-5.0).run()
    refusal = [w.value.replace("\\", "") for w in at.warning]  # (escaped by plain())
    assert any("cost.capex_usd.h100-sxm" in w and "above 0" in w for w in refusal), refusal
    assert scenario_of(at).cost.capex_usd == {"h100-sxm": 30_000.0}
    assert at.number_input(key="fg:cost.capex_usd:h100-sxm").value == 30_000.0
    next(b for b in at.button if b.key and b.key.startswith("fg:dismiss:")).click().run()
    at.switch_page("app_pages/results.py").run()
    assert_clean(at)
    basis = [c.value for c in at.caption if c.value.startswith("Cost basis")]
    assert basis and "own" in basis[0] and r"0\.16" in basis[0] and r"PUE 1\.58" in basis[0], (
        basis
    )  # escaped by plain()


def test_a_bill_at_a_price_the_catalog_assumes_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """Found in review: a Python user compared H200 with H100 at $2.64 against $2.10 per million
    tokens and nothing but the planner said that the H200's $3.20/h is the catalog's assumption."""
    from engine.cli.main import main
    from engine.explain.bill import cost_basis

    h100 = _cost("chat-colocated")
    assert "assumed_prices" not in h100  # the H100's rent is cited
    h200 = _cost("chat-colocated", **{"deployment.pools[0].hardware": "h200"})
    hw = load_catalog().hardware["h200"]
    assert h200["assumed_prices"] == {"h200": f"${hw.usd_per_hour:,.2f}/h"}
    assert cost_basis({"cost": h200}).endswith(
        f"a price the catalog assumes, not a published rate: h200 ${hw.usd_per_hour:,.2f}/h"
    )
    # owned: its purchase price, unless the scenario gives one (then the price is the user's)
    own = {"deployment.pools[0].hardware": "h200", "cost.mode": "own"}
    owned = _cost("chat-colocated", **own)
    assert owned["assumed_prices"] == {
        "h200": f"${hw.capex_usd:,.0f} a chip and ${hw.server_capex_usd:,.0f} its server share"
    }
    assert "a purchase price the catalog assumes" in cost_basis({"cost": owned})
    # its server share is assumed too: given the chip's price alone, the bill still rests on an assumption
    # (an owned H100's assumed $12,000 server share, a fifth of its bill, went unflagged: a review)
    assert "h200" in _cost("chat-colocated", **own, **{"cost.capex_usd": {"h200": 31000.0}})["assumed_prices"]
    both = {"cost.capex_usd": {"h200": 31000.0}, "cost.server_capex_usd": {"h200": 9000.0}}
    assert "assumed_prices" not in _cost("chat-colocated", **own, **both)
    # only the parts assumed: the H100's cited purchase price is not called assumed beside its server share
    h100 = load_catalog().hardware["h100-sxm"]
    assert _cost("chat-colocated", **{"cost.mode": "own"})["assumed_prices"] == {
        "h100-sxm": f"${h100.server_capex_usd:,.0f} a server share"
    }
    mine = _cost("chat-colocated", **own, **{"cost.capex_usd": {"h200": 31000.0}})["assumed_prices"]["h200"]
    assert mine == f"${hw.server_capex_usd:,.0f} a server share"  # the user's $31,000 is not called assumed
    assert main(["run", "chat-hetero-h20", "--set", "duration_s=30"]) == 0
    h20 = load_catalog().hardware["h20"].usd_per_hour
    assert (
        f"  billed at a price the catalog assumes, not a published rate: h20 ${h20:,.2f}/h"
        in capsys.readouterr().out
    )


def test_a_list_price_is_said_beside_the_bill(capsys: pytest.CaptureFixture[str]) -> None:
    """A TPU's or an Inferentia2's rent is its cloud's list price where the GPUs are on the neocloud basis,
    about a fifth of their own list, and nothing said so (a catalog review)."""
    from engine.cli.main import main
    from engine.explain.bill import cost_basis

    assert "list_prices" not in _cost("chat-colocated")  # the H100: the neocloud basis
    tpu = {"deployment.pools[0].hardware": "tpu-v6e", "deployment.pools[0].tp": 8}
    rented = _cost("chat-colocated", **tpu)
    assert rented["list_prices"] == {"tpu-v6e": "$2.70/h"}
    assert "; billed at a list price: tpu-v6e $2.70/h (its cloud's list price, where the GPUs" in cost_basis(
        {"cost": rented}
    )
    assert "list_prices" not in _cost("chat-colocated", **tpu, **{"cost.usd_per_hour": {"tpu-v6e": 1.0}})
    assert "list_prices" not in _cost(
        "chat-colocated", **tpu, **{"cost.mode": "own", "cost.capex_usd": {"tpu-v6e": 9e3}}
    )
    # every chip whose rent is its cloud's list (Inferentia2's source says so at a sentence's start: missed)
    listed = {h for h, spec in load_catalog().hardware.items() if list_priced(spec)}
    assert {"inferentia2", "tpu-v5e", "tpu-v5p", "tpu-v6e"} <= listed and "h100-sxm" not in listed
    argv = ["run", "chat-colocated", "--set", "duration_s=30"]
    assert (
        main([*argv, "--set", "deployment.pools[0].hardware=tpu-v6e", "--set", "deployment.pools[0].tp=8"])
        == 0
    )
    assert "  billed at a list price: tpu-v6e $2.70/h (" in capsys.readouterr().out


def test_a_rent_of_your_own_bills_the_run_and_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    """cost.usd_per_hour: a chip-hour at your quote, not the catalog's (24 of whose 30 rents are
    assumptions): the run's bill, its basis, no 'assumed price' line, and the planner's prices."""
    from engine.cli.main import main
    from engine.scenario.resolve import scenario_catalog

    h200 = {"deployment.pools[0].hardware": "h200"}
    yours = _cost("chat-colocated", **h200, **{"cost.usd_per_hour": {"h200": 2.9}})
    chips = io.load_preset("chat-colocated").deployment.pools[0].count * 2  # tp 2
    assert yours["usd_per_hour"] == pytest.approx(chips * 2.9)
    assert "assumed_prices" not in yours and yours["basis"].endswith("; yours for h200 $2.90")
    sc = io.apply_overrides(small("chat-colocated", **QUICK), {**h200, "cost.usd_per_hour": {"h200": 2.9}})
    assert (
        ownership.chip_hour_usd(scenario_catalog(sc).hardware["h200"], sc.cost) == 2.9
    )  # as the planner prices
    with pytest.raises(ScenarioError, match=r"cost\.usd_per_hour\.h300: unknown hardware 'h300'"):
        simulate(io.apply_overrides(sc, {"cost.usd_per_hour": {"h300": 2.9}}))
    with pytest.raises(ScenarioError, match="usd_per_hour"):
        io.apply_overrides(sc, {"cost.usd_per_hour": {"h200": 0.0}})
    assert (
        main(["run", "chat-colocated", "--set", "duration_s=30", "--set", "cost.usd_per_hour={h100-sxm=1.5}"])
        == 0
    )
    assert "cost: $18.00/h" in capsys.readouterr().out  # twelve H100s at $1.50


def test_slo_page_takes_your_rent_for_each_chip() -> None:
    from tests.app.harness import app, assert_clean, scenario_of

    at = app("slo")
    at.number_input(key="fg:cost.usd_per_hour:h100-sxm").set_value(1.75).run()
    assert_clean(at)
    assert scenario_of(at).cost.usd_per_hour == {"h100-sxm": 1.75}
    assert at.number_input(key="fg:cost.usd_per_hour:h100-sxm").value == 1.75
    at.number_input(key="fg:cost.usd_per_hour:h100-sxm").set_value(0.0).run()  # refused, the box goes back
    assert any("cost.usd_per_hour.h100-sxm" in w.value.replace("\\", "") for w in at.warning)
    assert scenario_of(at).cost.usd_per_hour == {"h100-sxm": 1.75}
