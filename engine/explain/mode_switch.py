"""Switching a scenario between colocated and disaggregated serving, keeping its chips
(`with_mode`): the Strategy page's deployment switch and Compare's counterpart of a scenario."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.scenario.codec import apply_overrides, to_data
from engine.scenario.faults import Fault
from engine.scenario.model import Pool, Scenario


def with_mode(scenario: Scenario, mode: str, before: Scenario | None = None) -> Scenario:
    """The scenario served colocated or disaggregated, keeping its chips and instance shapes.

    One kind of instance (one chip and layout) and no class pinned: colocated to disaggregated
    splits its instances, a third (at least one) to a prefill pool and the rest to a decode pool,
    or restores `before`'s pools and faults where `before` (the scenario as it was disaggregated)
    split the same instances (`_earlier_split`); back, one mixed pool holds them all. Several kinds, or
    classes pinned to pools (a portfolio, traffic isolation): colocated, every pool becomes a mixed
    pool of its own chip and count under its name; disaggregated, every mixed pool of two or more
    instances splits into its own prefill and decode pools and a pool of one instance decodes. Edge
    pools stay as they are. Class pins follow their pools; faults that name a pool still there stay
    (link faults only on a prefill pool); elastic roles and the prefill fallback, which need a
    disaggregated deployment, are switched off when colocated. More than eight pools raises.
    """
    dep = scenario.deployment
    if dep.mode == mode:
        return scenario
    if mode not in ("colocated", "disaggregated"):
        raise ValueError(f"mode: {mode!r} is not colocated or disaggregated")
    if (back := _round_trip(scenario, mode, before)) is not None:
        return back
    edge = [p.model_dump(exclude_none=True) for p in dep.pools if p.tier == "edge"]
    dc = [p for p in dep.pools if p.tier != "edge"]
    kinds = {_kind(p) for p in dc}
    renamed: dict[str, list[str]] = {}  # old pool name -> the pools that take its place

    def pool(p: Pool, **changes: Any) -> dict[str, Any]:
        return {**p.model_dump(exclude_none=True), "sends_to": [], **changes}

    pools: list[dict[str, Any]] = []
    pinned = any(c.pools for c in scenario.workload.classes)
    restored = None
    if len(kinds) == 1 and not pinned:
        base, total = dc[0], sum(p.count for p in dc)
        if mode == "disaggregated":
            n_pre = max(1, round(total / 3)) if total > 1 else 1
            pools = restored = _earlier_split(before, _kind(base), total) or [
                pool(base, name="prefill", role="prefill", count=n_pre),
                pool(base, name="decode", role="decode", count=max(1, total - n_pre)),
            ]
        else:
            pools = [pool(base, name="mixed", role="mixed", count=total)]
        renamed = {p.name: [q["name"] for q in pools] for p in dc}
    elif mode == "colocated":
        pools = [pool(p, role="mixed") for p in dc]
        renamed = {p.name: [p.name] for p in dc}
    else:
        for p in dc:
            if p.count >= 2:
                n_pre = max(1, round(p.count / 3))
                pools += [
                    pool(p, name=f"{p.name}-prefill", role="prefill", count=n_pre),
                    pool(p, name=f"{p.name}-decode", role="decode", count=p.count - n_pre),
                ]
            else:
                pools.append(pool(p, role="decode"))
            renamed[p.name] = [q["name"] for q in pools[-2 if p.count >= 2 else -1 :]]
        if not any(q["role"] == "prefill" for q in pools):
            pools[0]["role"] = "prefill"
    if len(pools) + len(edge) > bounds.MAX_POOLS:
        raise ScenarioError(
            f"deployment.pools: {mode} would need {len(pools) + len(edge)} pools; the limit is "
            f"{bounds.MAX_POOLS}: remove a pool first"
        )
    roles = {q["name"]: q["role"] for q in pools} | {q["name"]: "mixed" for q in edge}
    had = before.faults if restored and before is not None else scenario.faults  # a restored split's own
    faults = [f.model_dump(exclude_none=True) for f in had if _kept(f, roles)]
    changes: dict[str, Any] = {"deployment.mode": mode, "deployment.pools": pools + edge, "faults": faults}
    for i, c in enumerate(scenario.workload.classes):  # pins follow their pools
        if c.pools:
            changes[f"workload.classes[{i}].pools"] = _pins(c.pools, dc, renamed, mode)
    data = to_data(scenario)
    if mode == "colocated":
        if data.get("scheduler", {}).get("elastic", {}).get("enabled"):
            changes["scheduler.elastic.enabled"] = False
        if dep.fallback != "none":
            changes["deployment.fallback"] = "none"
    return apply_overrides(scenario, changes, merge=False)


def _round_trip(scenario: Scenario, mode: str, before: Scenario | None) -> Scenario | None:
    """`scenario` with `before`'s deployment, faults, class pins and elastic roles, where `before` is in
    `mode` and switching it gives `scenario`'s own (nothing of them edited since): the way back. With two
    chips (chat-hetero-h20's 3 H100 prefill and 4 H20 decode) or pinned classes (premium-isolation's two
    mixed pools) the switch back split or kept every pool anew, 'decode-prefill 1, decode-decode 3', and
    the run fell from 99.6% to 0.4% within SLO (a browser review). None where it is not that way back."""
    if before is None or before.deployment.mode != mode:
        return None
    if [c.name for c in before.workload.classes] != [c.name for c in scenario.workload.classes]:
        return None
    try:
        there = with_mode(before, scenario.deployment.mode)
    except (ScenarioError, ValueError):
        return None
    pins = [c.pools for c in scenario.workload.classes]
    if there.deployment != scenario.deployment or there.faults != scenario.faults:
        return None
    if [c.pools for c in there.workload.classes] != pins:
        return None
    data = to_data(before)
    changes: dict[str, Any] = {
        "deployment": data["deployment"],
        "faults": data.get("faults", []),
        "scheduler.elastic": data.get("scheduler", {}).get("elastic", {}),
    }
    for i, c in enumerate(before.workload.classes):
        changes[f"workload.classes[{i}].pools"] = list(c.pools)
    return apply_overrides(scenario, changes, merge=False)


def _pins(pins: tuple[str, ...], dc: list[Pool], renamed: Mapping[str, list[str]], mode: str) -> list[str]:
    """A class's pins over the switched pools: those its pools became and, colocated, every pool it could
    enter or decode on before: a class that named none of a kind (its decode pool alone) used every pool of
    that kind, so their mixed pools stay its. portfolio-chat-batch's classes, pinned to their decode pools,
    came back pinned to those alone, and its four H100s' pool, a prefill pool before, took no request while
    billed as 56% of the colocated bill (a browser review)."""
    out = [n for old in pins for n in renamed.get(old, [])]
    if mode == "colocated":
        roles = {p.name: p.role for p in dc}
        for kind in (("prefill", "mixed"), ("decode", "mixed")):
            if not any(roles.get(old) in kind for old in pins):
                out += [n for p in dc if p.role in kind for n in renamed.get(p.name, [])]
    return list(dict.fromkeys(out))


def chips_changed(a: Scenario, b: Scenario) -> str:
    """How `b`, `a` switched (`with_mode`), differs from it in data-centre chips ('' where it has the same):
    one instance cannot be both a prefill and a decode pool, so its split takes one more (edge-offload's one
    H100 read as disaggregated at +95% a request, the second H100 unsaid: a browser review)."""

    def chips(s: Scenario) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in s.deployment.pools:
            if p.tier != "edge":
                out[p.hardware] = out.get(p.hardware, 0) + p.chips
        return out

    ca, cb = chips(a), chips(b)
    if ca == cb:
        return ""
    moved = ", ".join(
        f"{hw} {ca.get(hw, 0)} -> {cb.get(hw, 0)}" for hw in sorted({*ca, *cb}) if ca.get(hw) != cb.get(hw)
    )
    return f"not the same chips ({moved}): one instance cannot be split into a prefill and a decode pool"


def split_text(a: Scenario, b: Scenario) -> str:
    """How `b`, `a` served disaggregated (`with_mode`), split one kind of instance ('' otherwise): 'its 12
    instances split 4 prefill : 8 decode, a third to prefill, a starting split, not a tuned one'. A 4:8 split
    stood in Compare unexplained, read as a recommendation (a review)."""
    if a.deployment.mode != "colocated" or b.deployment.mode != "disaggregated":
        return ""
    dc = [p for p in b.deployment.pools if p.tier != "edge"]
    if len({_kind(p) for p in dc}) != 1 or {p.role for p in dc} != {"prefill", "decode"}:
        return ""
    pre = sum(p.count for p in dc if p.role == "prefill")
    dec = sum(p.count for p in dc if p.role == "decode")
    each = f" ({dc[0].chips_per_instance} chips each)" if dc[0].chips_per_instance > 1 else ""
    return (
        f"its {pre + dec} instances{each} split {pre} prefill : {dec} decode, a third to prefill: a starting split, "
        "not a tuned one (the planner searches the splits)"
    )


def _kind(p: Pool) -> tuple[Any, ...]:
    """What makes two pools' instances alike: chip, layout and calibration profile."""
    return (p.hardware, p.tp, p.pp, p.dp, p.ep, p.profile)


def _earlier_split(before: Scenario | None, kind: tuple[Any, ...], total: int) -> list[dict[str, Any]] | None:
    """`before`'s data-centre pools where `before` is disaggregated and they are `total` instances of one
    `kind` (a split came back as the default third to prefill, 3 + 3 as 2 + 4: a review); else None."""
    if before is None or before.deployment.mode != "disaggregated":
        return None
    dc = [p for p in before.deployment.pools if p.tier != "edge"]
    if sum(p.count for p in dc) != total or {_kind(p) for p in dc} != {kind}:
        return None
    return [p.model_dump(exclude_none=True) for p in dc]


def _kept(fault: Fault, roles: Mapping[str, str]) -> bool:
    """Whether a fault stays over the new pools: its pool is there (a link fault's, a prefill pool)."""
    return fault.pool in roles and (fault.kind != "link" or roles[fault.pool] == "prefill")


LOAD_FIELDS = ("workload", "duration_s", "warmup_s", "seed")
"""What makes two runs see the same requests (`engine.explain.unpaired`): the load, its window and seed."""


def with_load_of(base: Scenario, load: Scenario) -> Scenario:
    """`base` (a counterpart preset) serving `load`'s requests: its workload, window, warm-up and seed, so a
    comparison with `load` is paired. 'Compare with chat-colocated' after raising the rate to 60 req/s put
    the preset at its own 16 against it, the pair unpaired (a review). Validated: a class pinned to a pool
    the counterpart lacks is refused with the field."""
    from engine.scenario.codec import apply_overrides, to_data

    data = to_data(load)
    return apply_overrides(base, {k: data[k] for k in LOAD_FIELDS if k in data}, merge=False)


UNSHARED_FIELDS = (
    *("model", "cost", "cache", "network", "scheduler", "control_plane"),
    *("faults", "custom_hardware", "custom_models"),
)
"""A scenario's fields besides its load and deployment that a counterpart preset keeps its own of."""


def unshared_edits(own: Scenario, edited: Scenario) -> list[str]:
    """The fields (`UNSHARED_FIELDS`) `edited` changed from its preset `own` that its counterpart serving its
    load (`with_load_of`) does not take: `compare chat-colocated --set model.id=llama-3.1-8b` set the 8B
    model against the counterpart's 70B, and `--set cost.mode=own` an owned bill against a rented one, each
    pair printed as paired with nothing said (a review)."""
    return [f for f in UNSHARED_FIELDS if getattr(edited, f) != getattr(own, f)]
