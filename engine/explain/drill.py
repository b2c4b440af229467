"""The failure drill: one scenario with faults, run under each fallback policy that applies.

A fault shows what breaks; the drill shows what each way of coping buys. The scenario (which must
schedule at least one fault) is run on the same requests (generation is separate from serving, so
the comparison is paired) under every variant that applies to it:

- ``none``: no fallback, no degrade and no spilling (classes that spill wait instead): what is
  lost is lost (arrivals with no entry instance up are rejected);
- ``colocated`` (disaggregated only): the decode instances serve whole requests while no prefill
  instance is up (`deployment.fallback`);
- ``degrade``: shed the lower classes and cap outputs while entry capacity is short
  (`deployment.degrade`: the scenario's own settings when it enables them, else `default_degrade`);
- ``colocated + degrade`` (disaggregated only): both;
- ``spill`` (only where a class is pinned to pools, entry or decode, beside which its role has
  another pool): pinned classes overflow to the other pools (`workload.classes[i].overflow =
  "spill"`), the other rows' classes wait. Without pinned classes there is nothing to add:
  routing already spreads over every live pool of a role.

Each row gives SLO attainment overall and per class, rejected and failed requests, p90 TTFT (of
completed requests, as every latency percentile), cost per request and what degrading did
(requests capped, tokens cut). Simulations run through the `run` callable, so a caller with a
cache (the dashboard) passes its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

from engine.core.errors import ScenarioError
from engine.core.numbers import rate2
from engine.scenario import codec
from engine.scenario.model import Degrade, Scenario
from engine.serving.run import SimResult, simulate
from engine.serving.summary import latency_shortfall, shortfall_rps

VARIANTS = ("none", "colocated", "degrade", "colocated + degrade", "spill")
"""Every variant the drill knows, in the order its rows come."""


def default_degrade(scenario: Scenario) -> Degrade:
    """Degrade settings for a scenario that sets none: trigger below 60% of entry capacity or above
    8 waiting requests per entry instance; cap outputs at 128 tokens; shed every class below the
    top priority (when classes differ in priority)."""
    priorities = {c.priority for c in scenario.workload.classes}
    return Degrade(
        enabled=True,
        below_capacity=0.6,
        above_backlog=8.0,
        max_output_tokens=128,
        shed_below_priority=max(priorities) if len(priorities) > 1 else 0,
    )


def degrade_note(scenario: Scenario, fallbacks: Iterable[str]) -> str:
    """The degrade settings the drill's degrade rows ran with where the scenario's own degrade is off ('' where
    it is on, or no such row ran): the rows capped 136 answers beside a form reading degrade off, the settings
    said in a tooltip alone (a browser review)."""
    if scenario.deployment.degrade.enabled or not any("degrade" in str(f) for f in fallbacks):
        return ""
    d = default_degrade(scenario)
    shed = f", every class below priority {d.shed_below_priority} shed" if d.shed_below_priority else ""
    return (
        "This scenario's degrade is off, so the degrade rows run the drill's own: triggered below "
        f"{d.below_capacity:.0%} of the entry capacity or above {d.above_backlog:g} requests waiting per entry "
        f"instance, answers capped at {d.max_output_tokens:,} tokens{shed}. A capped run may still cost more "
        "per request where it drains later."
    )


def fallback_variants(scenario: Scenario) -> dict[str, Scenario]:
    """The scenario under each fallback variant that applies to it, by name (see the module docstring)."""
    if not scenario.faults:
        raise ScenarioError("faults: the failure drill needs at least one fault; the scenario schedules none")
    dg = scenario.deployment.degrade if scenario.deployment.degrade.enabled else default_degrade(scenario)
    degrade = {f"deployment.degrade.{k}": v for k, v in dg.model_dump(mode="json").items()}
    spilling = {
        f"workload.classes[{i}].overflow": "wait"
        for i, c in enumerate(scenario.workload.classes)
        if c.overflow == "spill"
    }
    off = {"deployment.fallback": "none", "deployment.degrade.enabled": False, **spilling}
    disaggregated = scenario.deployment.mode == "disaggregated"
    changes: dict[str, dict[str, Any]] = {"none": off}
    if disaggregated:
        changes["colocated"] = {**off, "deployment.fallback": "colocated"}
    changes["degrade"] = {**off, **degrade}
    if disaggregated:
        changes["colocated + degrade"] = {**degrade, **spilling, "deployment.fallback": "colocated"}
    pinned = [i for i, c in enumerate(scenario.workload.classes) if _can_spill(scenario, c.pools)]
    if pinned:
        changes["spill"] = {**off, **{f"workload.classes[{i}].overflow": "spill" for i in pinned}}
    return {name: codec.apply_overrides(scenario, change, merge=False) for name, change in changes.items()}


def own_variant(scenario: Scenario, variants: Mapping[str, Scenario] | None = None) -> str | None:
    """The drill's row that is the scenario as written (its fallback, its degrade and each class's overflow),
    None where none is (one class of two spilling, degrade beside spilling): `drill` listed its rows with
    none marked as what `run` of the scenario simulates (a review); portfolio-decode-loss, which spills one
    class and lets the other wait, is none of them."""

    def policy(s: Scenario) -> tuple[object, ...]:
        dep = s.deployment
        return dep.fallback, dep.degrade, tuple(c.overflow for c in s.workload.classes)

    mine = policy(scenario)
    found = variants if variants is not None else fallback_variants(scenario)
    return next((name for name, v in found.items() if policy(v) == mine), None)


def _can_spill(scenario: Scenario, pins: tuple[str, ...]) -> bool:
    """Whether a class pinned to `pins` has somewhere to spill: a pool of a role it is pinned in
    (entry, that is mixed or prefill, or decode) that it is not pinned to."""

    def kind(role: str) -> str:
        return "decode" if role == "decode" else "entry"

    roles = {p.name: kind(p.role) for p in scenario.deployment.pools}
    pinned_kinds = {roles[n] for n in pins if n in roles}
    return any(k in pinned_kinds and n not in pins for n, k in roles.items())


def fallback_drill(scenario: Scenario, run: Callable[[Scenario], SimResult] | None = None) -> pd.DataFrame:
    """One row per applicable fallback variant: attainment (overall and per class), rejected, failed,
    p90 TTFT (of completed requests), cost per request, and what degrading capped.

    `run` simulates one scenario (default: `engine.serving.run.simulate`); every variant sees the
    same requests, drawn from the same workload and seed.
    """
    simulate_one = run or simulate
    rows = []
    variants = fallback_variants(scenario)
    own = own_variant(scenario, variants)
    for name, variant in variants.items():
        s = simulate_one(variant).summary
        req, sched, cost = s["requests"], s["scheduler"], s["cost"]
        row: dict[str, Any] = {
            "fallback": name,
            "slo_attainment": s["slo_attainment"],
            **{f"slo_attainment.{c}": v["slo_attainment"] for c, v in s["classes"].items()},
            "completed": req["completed"],
            "rejected": req["rejected"],
            "failed": req["failed"],
            "ttft_p90_ms": s["latency_ms"]["ttft"]["p90"],
            "usd_per_request": cost["usd_per_request"],
            "capped_requests": sched.get("capped_requests", 0),
            "capped_tokens": sched.get("capped_tokens", 0),
            # a variant that falls behind its load: its TTFT p90 is set by the run's length (a review found
            # the drill's spill row at 9,599 ms bare where `run` of the same scenario said Unsustainable)
            "shortfall_rps": shortfall_rps(s),
            "ttft_grows": latency_shortfall(s, "ttft") is not None,
            "as_set": name == own,  # the scenario as written: what `run` of it simulates
        }
        rows.append(row)
    return pd.DataFrame(rows)


def behind_lines(table: pd.DataFrame) -> list[str]:
    """One line per shortfall among the variants that cannot keep up with their load, those alike said
    together ('none, colocated and degrade: unsustainable, ...'; five lines alike filled the page: a
    browser pass), with whether their TTFT p90 grows with the run's length."""
    groups: dict[tuple[str, bool], list[str]] = {}
    for row in table.to_dict("records") if "shortfall_rps" in table else ():
        short = row["shortfall_rps"]
        if short is None or short != short:
            continue
        groups.setdefault((f"{rate2(short)}", bool(row["ttft_grows"])), []).append(str(row["fallback"]))
    out = []
    for (short, grows), names in groups.items():
        who = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        its = "its" if len(names) == 1 else "their"
        tail = f"; {its} TTFT p90 grows with the run's length (a longer window reads higher)" if grows else ""
        out.append(f"{who}: unsustainable, falling behind {its} load by {short} req/s{tail}")
    return out


def ttft_text(row: Mapping[Any, Any]) -> str:
    """A drill row's TTFT p90 as a cell: '703', '≥ 9,599, grows' where it grows with the run's length, '-'."""
    v = row["ttft_p90_ms"]
    if v is None or v != v:
        return "-"
    return f"≥ {v:,.0f}, grows" if row.get("ttft_grows") else f"{v:,.0f}"


def class_attainment(table: pd.DataFrame) -> pd.DataFrame:
    """The drill table's per-class attainment in long form: fallback, class, slo_attainment."""
    cols = [c for c in table.columns if c.startswith("slo_attainment.")]
    long = table[["fallback", *cols]].melt(id_vars="fallback", var_name="class", value_name="slo_attainment")
    long["class"] = long["class"].str.removeprefix("slo_attainment.")
    return long


__all__ = [
    "VARIANTS",
    "behind_lines",
    "class_attainment",
    "default_degrade",
    "fallback_drill",
    "fallback_variants",
    "ttft_text",
]


WHY_UNCHANGED = {
    "colocated": "the colocated fallback serves only while every prefill instance is down",
    "degrade": "degrade acts only on arrivals that reach an entry instance while entry capacity is short or its "
    "backlog long (deployment.degrade's thresholds)",
    "colocated + degrade": "neither acts on these faults",
    "spill": "no pinned class found its own pools full",
}
"""Why a variant can end exactly as `none` did (`unchanged`), said once beside it: the page said
degrade's reason, that only the colocated fallback serves, for a colocated row that never acted (a
review)."""


def unchanged_text(same: list[str]) -> str:
    """'Colocated: the same as none on these faults: it never acted (...).' for the `unchanged` variants."""
    whys = "; ".join(
        f"{v}: {WHY_UNCHANGED[v]}" if len(same) > 1 else WHY_UNCHANGED[v] for v in same if v in WHY_UNCHANGED
    )
    who = ", ".join(same)
    return f"{who[:1].upper()}{who[1:]}: the same as none on these faults: " + (
        f"{'they' if len(same) > 1 else 'it'} never acted ({whys})." if whys else "it never acted."
    )


def unchanged(table: pd.DataFrame) -> list[str]:
    """The variants whose run ended exactly as `none`'s did (same completed, rejected and failed
    requests and attainment): they did not act on these faults. Degrade, for one, never acts while
    no entry instance is up, since no arrival then reaches its check."""
    rows = table.set_index("fallback")
    if "none" not in rows.index:
        return []
    # what degrade does without changing the counts (answers capped) counts too: failure-drill's degrade
    # capped 8 answers and was said to have never acted (a review)
    keys = ["completed", "rejected", "failed", "slo_attainment"]
    keys += [k for k in ("capped_requests", "capped_tokens", "usd_per_request") if k in rows.columns]
    base = rows.loc["none", keys]
    return [str(v) for v in rows.index if v != "none" and rows.loc[v, keys].equals(base)]
