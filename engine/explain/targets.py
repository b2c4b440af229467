"""Whether two runs are judged against the same SLO targets (the Compare page).

SLO attainment and goodput count the requests that met their class's targets: between two runs whose
classes carry different targets they measure different things. A user who set chat's TPOT target to
19 ms on A and compared it with a preset at 30 ms read "SLO attainment: B 94.6%, +74.1 pts vs A,
better: B", where B's p90 TPOT of 28.2 ms would have failed A's target (a review). Where a class of
the same name carries other targets on the two sides, the page says which, and calls neither side
better on those two figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from engine.core.numbers import plain
from engine.explain.sustain import LEVEL
from engine.scenario.model import Scenario
from engine.serving.summary import classes_pass

if TYPE_CHECKING:
    from engine.scenario.resolve import Resolved

OTHER_TARGETS = "other targets"
"""A Compare row's `better` where the two sides are judged against different SLO targets."""
TARGET_JUDGED = ("SLO attainment", "Goodput")
"""The Compare figures that count requests within their targets."""
FIELDS = (
    ("ttft_ms", "TTFT", "ms"),
    ("tpot_ms", "TPOT", "ms"),
    ("e2e_ms", "E2E", "ms"),
    ("tbt_ms", "TBT", "ms"),
)


def _target(value: float | None, unit: str) -> str:
    return "none" if value is None else f"{value:,.4g} {unit}"


def target_differences(a: Scenario, b: Scenario) -> list[str]:
    """Per class of the same name on both sides whose targets differ: 'chat: TPOT 19 ms in A, 30 ms in
    B' (each target that differs, and the percentile)."""
    theirs = {c.name: c.slo for c in b.workload.classes}
    out = []
    for c in a.workload.classes:
        other = theirs.get(c.name)
        if other is None or other == c.slo:
            continue
        said = [
            f"{label} {_target(getattr(c.slo, f), unit)} in A, {_target(getattr(other, f), unit)} in B"
            for f, label, unit in FIELDS
            if getattr(c.slo, f) != getattr(other, f)
        ]
        if c.slo.percentile != other.percentile:
            said.append(f"at p{c.slo.percentile:g} in A, p{other.percentile:g} in B")
        if said:  # a difference the fields above do not show is none a reader can act on ("chat: ")
            out.append(f"{c.name}: {'; '.join(said)}")
    return out


def targets_note(found: list[str]) -> str:
    """The page's line where the targets differ ('' where they do not)."""
    if not found:
        return ""
    return (
        f"A and B are judged against different SLO targets ({'; '.join(found)}): their SLO attainment and "
        "goodput count different things, so neither side is called better on them."
    )


def judged_apart(table: pd.DataFrame, found: list[str]) -> pd.DataFrame:
    """A compare table with no side called better on `TARGET_JUDGED` where the targets differ (`found`)."""
    if not found or "better" not in table:
        return table
    rows = table["figure"].isin(TARGET_JUDGED) & (table["better"] != "")
    return table.assign(better=table["better"].where(~rows, OTHER_TARGETS))


COST_FIGURES = ("Cost per hour", "Cost per request", "Cost per 1M output tokens")
"""The Compare figures of a bill (`compare_table.COMPARED` labels)."""
ENERGY_FIGURE = "Energy per output token"


def missing_side(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    """'A' or 'B': the side whose run misses its SLO where the other's meets it; '' otherwise."""
    met_a, met_b = classes_pass(a), classes_pass(b)
    return "" if met_a == met_b else ("B" if met_a else "A")


def misses_slo(side: str) -> str:
    """A Compare row's `better` on a bill where the cheaper side misses its SLO and the other meets it."""
    return f"{side} misses its SLO"


BOTH_MISS = "both miss their SLO"
"""A Compare row's `better` on a bill or an energy where neither side meets its SLO: each bill buys
requests that miss (two overloaded runs: B's 31% cheaper per request read green, 'better: B', a review)."""


def both_miss(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether neither run meets its SLO (every class at its percentile)."""
    return not classes_pass(a) and not classes_pass(b)


def cost_judged(table: pd.DataFrame, a: Mapping[str, Any], b: Mapping[str, Any]) -> pd.DataFrame:
    """A compare table whose bills are not called better on the side that misses its SLO where the
    other meets it: its requests buy less service for the money (a review read an MI300X side "24%
    cheaper, better: B" at 62.9% of requests within their SLO against A's 94.6%), nor is its energy per
    token. The row reads 'B misses its SLO'; a cheaper side that meets its SLO keeps its win. Where both miss, neither
    side's bill nor energy is better (`BOTH_MISS`)."""
    if "better" not in table:
        return table
    if both_miss(a, b):
        # (a cost at saturation too: both missing says more, `compare_table`'s LEVEL)
        rows = table["figure"].isin((*COST_FIGURES, ENERGY_FIGURE)) & table["better"].isin(("A", "B", LEVEL))
        return table.assign(better=table["better"].where(~rows, BOTH_MISS))
    side = missing_side(a, b)
    if not side:
        return table
    # the energy too: sram-decode-groq's B read 'better' at 4 J a token against 114 where it served none
    # of its requests within their SLO (a review); where both miss it was already said so
    # (its cost at saturation too: that it misses its SLO says more)
    full = table.get(f"{side.lower()}_full", pd.Series(False, index=table.index)).fillna(False).astype(bool)
    rows = table["figure"].isin((*COST_FIGURES, ENERGY_FIGURE)) & (
        (table["better"] == side) | ((table["better"] == LEVEL) & full)
    )
    return table.assign(better=table["better"].where(~rows, misses_slo(side)))


NOT_PAIRED = "not paired"
"""A Compare row's `better` where A and B see different requests (`pairing.unpaired`)."""


def verdicts(
    table: pd.DataFrame, a: Scenario, b: Scenario, judged_a: Mapping[str, Any], judged_b: Mapping[str, Any]
) -> pd.DataFrame:
    """A compare table's `better` column as the Compare page and `fengong compare` give it: no side
    better where A and B see different requests (`NOT_PAIRED`: a side that does better on other
    requests has not won), but on a fixed bill, which no request moves (cost per hour read 'not
    paired': a review); none on SLO attainment and goodput where a class's targets differ
    (`judged_apart`); no cheaper bill for a side that misses its SLO (`cost_judged`, on `judged_a` and
    `judged_b`: the runs' summaries, or with seeds their means)."""
    from engine.explain.pairing import unpaired  # (presentation's tables: only where a pair is judged)

    if unpaired(a, b) and "better" in table:
        fixed = not any(p.autoscale for s in (a, b) for p in s.deployment.pools)
        moved = table["figure"] != "Cost per hour" if fixed else table["figure"] == table["figure"]
        table = table.copy()
        table.loc[moved, "better"] = table.loc[moved, "better"].replace({"A": NOT_PAIRED, "B": NOT_PAIRED})
    return cost_judged(judged_apart(table, target_differences(a, b)), judged_a, judged_b)


def under_first_token(scenario: Scenario, resolved: Resolved | None = None) -> dict[int, str]:
    """Per class (by index) whose TTFT target no request can meet: at or under the latency every first token
    pays beyond the iterations (a MoE model's, fitted to its stack's one-client TTFTs, or the scenario's
    `deployment.first_token_ms`). A target of 25 ms on moe-deepseek-h200 read 'holds to p0' with nothing
    saying each first token takes 70.9 ms there (a browser review). `resolved`: the scenario's resolution
    where the caller has it (the advisor), else resolved here."""
    from engine.scenario.resolve import resolve  # (the catalog: only where a page asks)

    floor_ms = (resolved or resolve(scenario)).first_token_s * 1000.0
    return {
        i: (
            f"class {c.name}: its TTFT target of {plain(c.slo.ttft_ms)} ms is at or under the {floor_ms:,.1f} ms "
            "every first token takes here before any queue, prefill or network (deployment.first_token_ms, on "
            "Strategy; for a MoE model fitted to its stack's one-client TTFTs): no request can meet it"
        )
        for i, c in enumerate(scenario.workload.classes)
        if floor_ms > 0 and c.slo.ttft_ms <= floor_ms
    }


__all__ = [
    "BOTH_MISS",
    "COST_FIGURES",
    "NOT_PAIRED",
    "OTHER_TARGETS",
    "TARGET_JUDGED",
    "both_miss",
    "cost_judged",
    "judged_apart",
    "misses_slo",
    "missing_side",
    "target_differences",
    "targets_note",
    "under_first_token",
    "verdicts",
]
