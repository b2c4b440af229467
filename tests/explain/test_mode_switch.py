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
