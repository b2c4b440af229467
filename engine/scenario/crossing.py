"""Where a split deployment's KV cache crosses chip vendors: a hand-off the simulation prices by the link
alone, whether or not a stack's KV connector runs between the two (`emit`, `run`, `plan` and the Results
page say it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.scenario.model import Scenario


def crossing_text(pools: list[tuple[str, str, str]]) -> str:
    """Where a split deployment's prefill and decode pools run on chips of different vendors, that the KV
    cache crosses between them ('' otherwise), over (role, vendor, chip id) per data-centre pool."""
    sides = {
        role: sorted({(vendor, hw) for r, vendor, hw in pools if r == role}) for role in ("prefill", "decode")
    }
    vendors = {role: {v for v, _ in pairs} for role, pairs in sides.items()}
    if not vendors["prefill"] or not vendors["decode"] or vendors["prefill"] == vendors["decode"]:
        return ""

    def named(role: str) -> str:
        return ", ".join(f"{v} ({hw})" for v, hw in sides[role])

    return (
        f"the KV cache crosses vendors: prefill on {named('prefill')}, decode on {named('decode')}. The "
        "simulation prices the hand-off by the link alone; check that your stack's KV connector moves the "
        "cache between these chips before you buy"
    )


def vendor_crossing_text(scenario: Scenario) -> str:
    """`crossing_text` of a scenario's deployment (a plan's choice, a run's), from its pools and chips alone:
    the emit's whole `facts` draw the workload for its longest request, on every rerun of the Planner page."""
    dep = scenario.deployment
    if dep.mode != "disaggregated":
        return ""
    pools: list[tuple[str, str, str]] = []
    for p in dep.pools:
        if p.tier == "datacenter":
            chip = scenario.chip(p.hardware)
            pools.append((p.role, chip.vendor if chip is not None else "unknown", p.hardware))
    return crossing_text(pools)


def vendor_crossing_note(scenario: Scenario) -> str:
    """`vendor_crossing_text` as a sentence of its own ('' where none): what a run's notes and the Results,
    Strategy and Planner pages say."""
    text = vendor_crossing_text(scenario)
    return f"{text[:1].upper()}{text[1:]}." if text else ""
