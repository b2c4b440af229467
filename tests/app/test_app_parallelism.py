"""The Strategy page's parallelism widgets (streamlit.testing AppTest) and the engine helpers behind them.

Per pool TP, PP, DP and, for a MoE model, EP (only divisors of tp x dp), what the split gives per
chip, a refused split said under the pool's widgets, speculative decoding on and off, and the
expert imbalance of a MoE model.
"""

from __future__ import annotations

import json
from typing import Any

from engine.catalog.entries import Catalog
from engine.explain import roofline_chips as rc
from engine.explain.previews import default_speculation, draft_models, pool_memory, pool_summary
from engine.scenario.codec import apply_overrides, load_preset
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve, scenario_catalog
from tests.app.harness import app, assert_clean, scenario_of, short, text_of

MOE = "moe-deepseek-h200"


def moe(**changes: Any) -> Scenario:
    """The MoE preset on a one-minute window."""
    return apply_overrides(load_preset(MOE), {"duration_s": 60.0, **changes})


def captions(at: Any) -> list[str]:
    return [text_of(c.value) for c in at.caption]


def warnings(at: Any) -> list[str]:
    return [text_of(w.value) for w in at.warning]


# --- the engine helpers ------------------------------------------------------------------------


def test_pool_memory_follows_the_split(catalog: Catalog) -> None:
    sc = moe()
    (pre, dec) = pool_memory(sc)
    assert pre.layout == "tp8" and pre.pool == "prefill"
    assert (dec.layout, dec.chips_per_instance, dec.dp) == ("tp8", 8, 1)
    inst = resolve(sc).pools[1].instance
    assert dec.weights_gb_per_chip == inst.weight_bytes / 8 / 1e9
    assert dec.kv_capacity_tokens == inst.kv_capacity_tokens == dec.kv_tokens_per_rank
    wide = pool_memory(moe(**{"deployment.pools[1].dp": 2, "deployment.pools[1].ep": 16}))[1]
    assert (wide.layout, wide.chips_per_instance, wide.dp) == ("tp8 dp2 ep16", 16, 2)
    assert wide.weights_gb_per_chip < dec.weights_gb_per_chip  # experts spread over twice the chips
    assert wide.kv_tokens_per_rank == wide.kv_capacity_tokens // 2
    assert pool_summary(moe(**{"deployment.pools[1].dp": 2}).deployment.pools[1], catalog).startswith(
        "2 × 16 × h200 = 32 chips"
    )


def test_draft_models_and_the_default_speculation(catalog: Catalog) -> None:
    drafts = draft_models(catalog, "llama-3.1-70b")
    assert drafts[0] == "llama-3.1-8b" and "llama-2-70b" not in drafts  # same family first; small only
    assert default_speculation(catalog, "llama-3.1-70b") == {"method": "draft", "draft_model": "llama-3.1-8b"}
    assert default_speculation(catalog, "deepseek-v3") == {"method": "mtp"}  # no smaller kin: its MTP head


# --- the Strategy page -------------------------------------------------------------------------


def test_moe_pools_offer_dp_and_ep_and_say_what_a_chip_holds() -> None:
    at = app("strategy", moe(), MOE)
    assert_clean(at)
    ep = at.selectbox(key="fg:deployment.pools[1].ep")
    # divisors of tp x dp = 8 that its chips hold: ep 2 and 4 keep 4 and 2 copies of the experts
    assert [int(o) for o in ep.options] == [1, 8]
    assert at.number_input(key="fg:deployment.expert_imbalance").value == 1.4
    assert any(c.startswith("tp8: 8 chips per instance; weights") for c in captions(at))
    at.selectbox(key="fg:deployment.pools[1].dp").set_value(2).run()
    assert_clean(at)
    assert [int(o) for o in at.selectbox(key="fg:deployment.pools[1].ep").options] == [1, 8, 16]
    at.selectbox(key="fg:deployment.pools[1].ep").set_value(16).run()
    assert_clean(at)
    pool = scenario_of(at).deployment.pools[1]
    assert (pool.tp, pool.dp, pool.ep, pool.chips_per_instance) == (8, 2, 16, 16)
    assert any("tp8 dp2 ep16: 16 chips per instance" in c and "per DP rank" in c for c in captions(at))
    assert any("Applies to the pools with EP above 1: decode" in c for c in captions(at))
    at.number_input(key="fg:deployment.expert_imbalance").set_value(1.8).run()
    assert_clean(at)
    assert scenario_of(at).deployment.expert_imbalance == 1.8


def test_an_impossible_split_is_refused_beside_the_pool() -> None:
    start = moe(**{"deployment.pools[1].dp": 2, "deployment.pools[1].ep": 16})
    at = app("strategy", start, MOE)
    assert_clean(at)
    at.selectbox(key="fg:deployment.pools[1].dp").set_value(1).run()  # ep 16 no longer divides 8
    assert not at.exception
    said = warnings(at)
    assert any(
        w.startswith("DP 1 is not possible: deployment.pools[1].ep: 16 must divide") and "tp x dp = 8" in w
        for w in said
    ), said
    assert scenario_of(at) == start
    assert at.selectbox(key="fg:deployment.pools[1].dp").value == 2  # snapped back
    at.selectbox(key="fg:deployment.pools[0].tp").set_value(1).run()  # the weights no longer fit
    assert not at.exception
    assert any(w.startswith("TP 1 is not possible: deployment.pools[0].tp:") for w in warnings(at)), warnings(
        at
    )
    at.selectbox(key="fg:deployment.pools[1].ep").set_value(8).run()  # an accepted change clears them
    assert_clean(at)
    assert scenario_of(at).deployment.pools[1].ep == 8


def test_a_dense_model_gets_pipelines_but_no_experts() -> None:
    at = app("strategy")
    assert_clean(at)
    keys = {w.key for w in at.selectbox} | {w.key for w in at.number_input}
    assert "fg:deployment.pools[0].pp" in keys and "fg:deployment.pools[0].dp" in keys
    assert not any(k.endswith(".ep") for k in keys) and "fg:deployment.expert_imbalance" not in keys
    at.selectbox(key="fg:deployment.pools[0].pp").set_value(2).run()
    assert_clean(at)
    assert scenario_of(at).deployment.pools[0].pp == 2
    tp = short().deployment.pools[0].tp
    assert any(c.startswith(f"tp{tp} pp2: {2 * tp} chips per instance") for c in captions(at))


def test_speculative_decoding_round_trips() -> None:
    at = app("strategy")
    assert at.toggle(key="fg:deployment.speculative").value is False
    at.toggle(key="fg:deployment.speculative").set_value(True).run()
    assert_clean(at)
    spec = scenario_of(at).deployment.speculative
    assert spec is not None and (spec.method, spec.draft_model) == ("draft", "llama-3.1-8b")
    assert at.number_input(key="fg:deployment.speculative.tokens").placeholder == "4 (default)"
    at.number_input(key="fg:deployment.speculative.tokens").set_value(3).run()
    at.number_input(key="fg:deployment.speculative.acceptance").set_value(0.6).run()
    assert_clean(at)
    assert scenario_of(at).deployment.speculative.resolved() == (3, 0.6)  # type: ignore[union-attr]
    assert any("drafts 3 tokens and yields 2.18 on average" in c for c in captions(at))
    at.selectbox(key="fg:deployment.speculative.method").set_value("mtp").run()
    assert_clean(at)
    spec = scenario_of(at).deployment.speculative
    assert spec is not None and (spec.method, spec.tokens, spec.draft_model) == ("mtp", None, None)
    at.toggle(key="fg:deployment.speculative").set_value(False).run()
    assert_clean(at)
    assert scenario_of(at) == short()


def test_a_moe_model_speculates_with_its_mtp_head() -> None:
    at = app("strategy", moe(), MOE)
    at.toggle(key="fg:deployment.speculative").set_value(True).run()
    assert_clean(at)
    spec = scenario_of(at).deployment.speculative
    assert spec is not None and spec.method == "mtp" and spec.resolved() == (1, 0.85)
    cat = scenario_catalog(scenario_of(at))
    assert resolve(scenario_of(at), cat).pools[1].instance.speculation is not None


def test_the_planner_form_searches_layouts() -> None:
    at = app("planner", moe(), MOE)
    assert not at.exception
    ep = at.multiselect(key="plan_ep")
    assert not ep.disabled and ep.value == [8, 16]
    assert at.multiselect(key="plan_pp").value == [1, 2]
    at.multiselect(key="plan_hardware").set_value(["h200"])
    at.selectbox(key="plan_window").set_value(60.0)
    at.number_input(key="plan_sims").set_value(8)
    at.button[0].click().run()
    assert not at.exception
    p = at.session_state["fg_plan"][1]
    assert {"tp1 dp8 ep8", "tp4 pp2"} <= set(p.candidates["prefill_layout"])
    assert any(" ep" in shape for shape in p.runs["shape"])  # an expert-parallel layout was simulated
    dense = app("planner")
    assert dense.multiselect(key="plan_ep").disabled and dense.multiselect(key="plan_ep").value == []


def test_the_hardware_roofline_draws_a_dp_ep_pool_at_its_layout() -> None:
    # DeepSeek-V3's pools of tp1 x dp8 x ep8 H200s were drawn as 'h200 ×1': an instance of one H200 (which
    # cannot hold the model's 671 GB) without its ranks; each is drawn at its own layout now
    sc = apply_overrides(load_preset("moe-deepseek-dp-ep"), {"duration_s": 60.0})
    assert rc.pool_chips(sc) == [("h200", 1, 1, 8, 8), ("h200", 1, 1, 16, 16)]
    at = app("hardware", sc, preset="moe-deepseek-dp-ep")
    assert_clean(at)
    names = {t.get("name") for c in at.get("plotly_chart") for t in json.loads(c.proto.spec)["data"]}
    assert {"h200 ×8 (tp1 dp8 ep8) (uncalibrated)", "h200 ×16 (tp1 dp16 ep16) (uncalibrated)"} <= names
    assert not any(str(n).startswith("h200 ×1 ") for n in names)
    cat = scenario_catalog(sc)
    model, h200 = cat.model(sc.model.id), cat.chip("h200")
    _, points = rc.roofline(model, [(h200, 1, 1, 8, 8)], "fp8", "fp8")
    one = rc.roofline(model, [(h200, 1)], "fp8", "fp8")[1]
    # eight ranks split a batch of 128: each chip's decode step reads its own experts and attention weights
    assert points["time_ms"].iloc[-1] != one["time_ms"].iloc[-1]
