"""The Strategy page edits a list of pools: add and remove pools, hand-off routes, class pins."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.app.harness import app, assert_clean, scenario_of, short, text_of


def test_pools_are_added_routed_pinned_and_removed_on_the_strategy_page() -> None:
    at = app("strategy", short("chat-disaggregated"))
    at.button(key="fg:add-pool:decode").click().run()
    assert_clean(at)
    sc = scenario_of(at)
    assert [(p.name, p.role) for p in sc.deployment.pools] == [
        ("prefill", "prefill"),
        ("decode", "decode"),
        ("decode-2", "decode"),
    ]
    # the new pool's chip is edited like any other; the prefill pool now picks its decode pools
    at.selectbox(key="fg:deployment.pools[2].hardware").set_value("h20").run()
    assert_clean(at)
    at.multiselect(key="fg:deployment.pools[0].sends_to").set_value(["decode-2"]).run()
    assert_clean(at)
    sc = scenario_of(at)
    assert sc.deployment.pools[2].hardware == "h20" and sc.deployment.pools[0].sends_to == ("decode-2",)
    # a second prefill pool brings the traffic-isolation pins; a class can name decode pools too
    at.button(key="fg:add-pool:prefill").click().run()
    assert_clean(at)
    at.multiselect(key="fg:workload.classes[0].pools").set_value(["prefill-2"]).run()
    assert_clean(at)
    assert scenario_of(at).workload.classes[0].pools == ("prefill-2",)
    # removing a pool drops what names it; the only pool of a role cannot be removed
    at.button(key="fg:rm-pool:3").click().run()
    assert_clean(at)
    assert any("pin to it" in i.value for i in at.info)  # said, not silent
    sc = scenario_of(at)
    assert [p.name for p in sc.deployment.pools] == ["prefill", "decode", "decode-2"]
    assert sc.workload.classes[0].pools == ()
    assert at.button(key="fg:rm-pool:0").disabled
    # and the Results page runs the portfolio
    at.switch_page("app_pages/results.py").run()
    assert_clean(at)


def test_mode_switch_and_edge_site_on_the_strategy_page() -> None:
    # an edge site stays through a mode switch (the switch once raised on it)
    at = app("strategy", short("edge-offload"))
    at.segmented_control(key="fg:mode").set_value("disaggregated").run()
    assert_clean(at)
    sc = scenario_of(at)
    assert sc.deployment.mode == "disaggregated" and sc.deployment.edge is not None
    at.button(key="fg:rm-edge").click().run()
    assert_clean(at)
    assert scenario_of(at).deployment.edge is None
    assert all(p.tier == "datacenter" for p in scenario_of(at).deployment.pools)
    # a portfolio switched to colocated keeps every pool's chips
    at = app("strategy", short("portfolio-chat-batch"))
    at.segmented_control(key="fg:mode").set_value("colocated").run()
    assert_clean(at)
    chips = [(p.hardware, p.count) for p in scenario_of(at).deployment.pools]
    assert chips == [("h100-sxm", 4), ("h20", 3), ("mi300x", 2)]


def test_a_fault_card_shows_the_fields_of_its_kind() -> None:
    """An instance fault's card has no link fields and a link fault's no instance count: each set
    the other kind's fields to no effect (an instance fault refuses a link factor)."""
    at = app(
        "strategy", short(faults=[{"at_s": 30.0, "pool": "prefill", "instances": 2, "duration_s": 20.0}])
    )
    assert_clean(at)
    keys = {w.key for w in at.number_input} | {w.key for w in at.selectbox}
    assert "fg:faults[0].instances" in keys and "fg:faults[0].link_factor" not in keys
    assert "Fault 1: 2 × prefill lost at 30 s" in headings(at)
    at.segmented_control(key="fg:faults[0].kind").set_value("link").run()
    assert_clean(at)
    keys = {w.key for w in at.number_input} | {w.key for w in at.selectbox}
    assert "fg:faults[0].link_factor" in keys and "fg:faults[0].instances" not in keys
    assert scenario_of(at).faults[0].kind == "link"
    assert "Fault 1: prefill's KV link at 10% at 30 s" in headings(at)
    # back to instances with a factor set: the hidden link fields go back to their defaults (the switch
    # was refused: "link_factor applies only to a fault with kind = link", a review)
    at.number_input(key="fg:faults[0].link_factor").set_value(0.5).run()
    at.segmented_control(key="fg:faults[0].kind").set_value("instances").run()
    assert_clean(at)
    f = scenario_of(at).faults[0]
    assert f.kind == "instances" and f.link_factor == 0.1


def test_a_fault_on_a_decode_pool_made_a_link_fault_moves_to_a_prefill_pool() -> None:
    """A new fault names the last pool (decode); making it a link fault was refused ("'decode' is not one
    (choose from ['prefill'])", a review): it moves onto the prefill pool's link, said."""
    at = app("strategy", short(faults=[{"at_s": 30.0, "pool": "decode", "instances": 1, "duration_s": 20.0}]))
    at.segmented_control(key="fg:faults[0].kind").set_value("link").run()
    assert_clean(at)
    f = scenario_of(at).faults[0]
    assert (f.kind, f.pool) == ("link", "prefill")
    assert any("only a prefill pool sends KV" in text_of(m.value) for m in at.info)
    assert any(
        "only a prefill pool sends KV" in text_of(t.proto.body) for t in at.get("toast")
    )  # by the card
    # and back: on the pool it had (a decode-loss drill became a prefill-loss one, unsaid: a review)
    at.segmented_control(key="fg:faults[0].kind").set_value("instances").run()
    assert_clean(at)
    f = scenario_of(at).faults[0]
    assert (f.kind, f.pool) == ("instances", "decode")
    assert any("back on decode, the pool it had" in text_of(m.value) for m in at.info)


def headings(at: AppTest) -> list[str]:
    """The page's bold Markdown lines as text (`ui.text.plain` escapes and joins them)."""
    return [m.value.strip("*").replace("\u2060", "").replace("\\", "") for m in at.markdown]


def test_the_ep_picker_offers_only_the_degrees_the_pool_holds() -> None:
    """moe-deepseek-dp-ep's prefill (tp 1 x dp 8 H200s) offered ep 1, 2 and 4, each refused for its memory
    (every group keeps a whole copy of the experts: a review); it offers what the pool holds."""
    from engine.explain import fitting_eps

    at = app("strategy", short("moe-deepseek-dp-ep"), preset="moe-deepseek-dp-ep")
    assert_clean(at)
    offered = at.selectbox(key="fg:deployment.pools[0].ep").options
    assert [int(o) for o in offered] == fitting_eps(short("moe-deepseek-dp-ep"), 0, [1, 2, 4, 8]) == [8]
