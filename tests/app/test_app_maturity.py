"""App tests: a pool's software maturity (Strategy), its porting cost (SLO page's cost basis, Results)."""

from __future__ import annotations

from tests.app.harness import app, assert_clean, scenario_of, short, text_of

ASIC = "deployment.pools[1].maturity"


def test_strategy_sets_a_pools_software_maturity_and_its_mark_says_so() -> None:
    at = app("strategy", short("decode-asic"), preset="decode-asic")
    box = at.selectbox(key=f"fg:{ASIC}")
    assert box.label == "Software maturity" and "engineer-months" in (box.help or "")
    box.set_value("port").run()
    assert_clean(at)
    assert scenario_of(at).deployment.pools[1].maturity == "port"
    shown = " ".join(text_of(m.value) for m in at.markdown) + " ".join(text_of(c.value) for c in at.caption)
    assert "software maturity 'port'" in shown


def test_the_cost_basis_sets_a_chips_porting_months_and_refuses_too_many() -> None:
    sc = short("decode-asic", **{ASIC: "vendor", "cost.mode": "own"})
    at = app("slo", sc, preset="decode-asic")
    key = "fg:cost.porting_engineer_months:decode-asic"
    assert at.number_input(key=key).value == 6.0  # the vendor level's default
    at.number_input(key=key).set_value(3.0).run()
    assert_clean(at)
    assert scenario_of(at).cost.porting_engineer_months == {"decode-asic": 3.0}
    at.number_input(key=key).set_value(20_000.0).run()
    said = [text_of(w.value) for w in at.warning]
    assert any("cost.porting_engineer_months.decode-asic" in s and "up to 10,000" in s for s in said), said
    assert scenario_of(at).cost.porting_engineer_months == {"decode-asic": 3.0}


def test_the_cost_basis_sets_a_chips_purchase_price_and_refuses_none() -> None:
    """The per-chip price boxes beside the porting months: the catalog's price shown, a typed one applied,
    a zero refused naming the field and its range, the scenario's value shown again."""
    at = app("slo", short("decode-asic", **{"cost.mode": "own"}), preset="decode-asic")
    key = "fg:cost.capex_usd:decode-asic"
    assert at.number_input(key=key).value == 15_000.0  # the catalog's
    at.number_input(key=key).set_value(12_000.0).run()
    assert_clean(at)
    assert scenario_of(at).cost.capex_usd == {"decode-asic": 12_000.0}
    at.number_input(key=key).set_value(0.0).run()
    said = [text_of(w.value) for w in at.warning]
    assert any("cost.capex_usd.decode-asic" in s and "above 0, up to 10,000,000" in s for s in said), said
    assert scenario_of(at).cost.capex_usd == {"decode-asic": 12_000.0}
    assert at.number_input(key=key).value == 12_000.0


def test_results_show_the_porting_and_the_software_question() -> None:
    sc = short("decode-asic", **{ASIC: "port", "cost.mode": "own"})
    at = app("results", sc, preset="decode-asic")
    assert not at.exception, [e.value for e in at.exception]
    captions = [text_of(c.value) for c in at.caption]
    assert any(c.startswith("Porting: decode-asic under vLLM, a new port") for c in captions), captions
    texts = [text_of(x.value) for x in (*at.info, *at.success)]
    assert any("software not ready" in t for t in texts), texts
