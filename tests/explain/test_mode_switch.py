"""Switching a scenario between colocated and disaggregated serving (`engine.explain.mode_switch.with_mode`)
and back."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "name", ["chat-hetero-h20", "premium-isolation", "chat-disaggregated", "failure-drill"]
)
def test_the_way_back_restores_the_deployment_switched_from(name: str) -> None:
    """Two chips' split and pinned classes' pools came back split or kept anew (chat-hetero-h20 read
    'decode-prefill 1, decode-decode 3' and 0.4% within SLO: a browser review): switching back with the
    scenario switched from restores its deployment, faults and pins; an edit in between does not."""
    from engine.explain.mode_switch import with_mode
    from engine.scenario.codec import apply_overrides, load_preset

    first = load_preset(name)
    other = "colocated" if first.deployment.mode == "disaggregated" else "disaggregated"
    there = with_mode(first, other)
    back = with_mode(there, first.deployment.mode, first)
    assert back == first
    edited = apply_overrides(there, {"deployment.pools[0].count": there.deployment.pools[0].count + 1})
    assert with_mode(edited, first.deployment.mode, first).deployment != first.deployment


def test_colocated_a_class_keeps_every_pool_it_could_use() -> None:
    """portfolio-chat-batch's classes are pinned to their decode pools and enter any prefill pool;
    colocated they came back pinned to their decode pools' mixed pools alone, and the four H100s of the
    former prefill pool took no request while billed as 56% of the bill (a browser review)."""
    from engine.explain.mode_switch import with_mode
    from engine.scenario.codec import apply_overrides, load_preset
    from engine.serving.run import simulate

    mixed = with_mode(load_preset("portfolio-chat-batch"), "colocated")
    assert [c.pools for c in mixed.workload.classes] == [
        ("decode-chat", "prefill"),
        ("decode-batch", "prefill"),
    ]
    busy = simulate(apply_overrides(mixed, {"duration_s": 60.0})).summary["utilization"]["prefill"]["busy"]
    assert busy > 0.5
    # a class that names a pool of each kind keeps those alone
    both = apply_overrides(
        load_preset("portfolio-chat-batch"), {"workload.classes[0].pools": ["prefill", "decode-chat"]}
    )
    assert with_mode(both, "colocated").workload.classes[0].pools == ("prefill", "decode-chat")


def test_a_switch_that_needs_more_chips_says_so() -> None:
    """edge-offload's one H100 instance split into a prefill and a decode pool of one each: Compare's
    'current, other mode' read +95% a request with the second H100 unsaid (a browser review)."""
    from engine.explain.mode_switch import chips_changed, with_mode
    from engine.scenario.codec import load_preset

    a = load_preset("edge-offload")
    said = chips_changed(a, with_mode(a, "disaggregated"))
    assert said.startswith("not the same chips (h100-sxm 1 -> 2)")
    b = load_preset("chat-colocated")
    assert chips_changed(b, with_mode(b, "disaggregated")) == ""
