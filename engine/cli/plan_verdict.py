"""The plan's verdict as text: the choice, the nominal cheapest beside it, each chip's best.

`print_verdict(plan)` prints what `plan --json` carries under ``verdict``
(`engine.planning.verdict.Verdict`): latencies at each class's SLO percentile, cost per million
output tokens and per request, output tokens/s per chip, chips and power, each with its band
where the calibration shows one, and which run the figures are quoted from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.numbers import format_apart, ms_text, plain, target_of
from engine.planning.objective import BILLED, COLUMN, OBJECTIVES, value_text
from engine.planning.verdict_bands import (
    SAME_AT_EDGES,
    edge_premium_note,
    holds_note,
    holds_with_margin,
    reads_alike,
    rises_only,
)

if TYPE_CHECKING:
    from engine.planning.plan import Plan
    from engine.planning.verdict import Verdict


def pct_label(percentile: float) -> str:
    """'p99', 'p99.9', 'p90'."""
    return f"p{percentile:g}"


_ms = ms_text
LATENCY_COLUMNS = ("ttft_ms_at_slo", "tpot_ms_at_slo")
"""The per-chip table's latencies (their classes' key is the column's first seven characters: ttft_ms)."""


def _band(b: Any, fmt: str, figure: float | None = None, target: float | None = None) -> str:
    """' (0.91 to 1.40)', ' (up to 877)' where its low end reads as the `figure` (a latency band with no
    faster run and no band of its kind: '463 ms (463 to 877)' read as if it could not be faster), or '';
    an end that would read as the `target` without being it to more decimals ('(15.2 to 29.96)')."""
    if not b:
        return ""
    low, high = (format_apart(x, fmt, target) for x in b[:2])
    if rises_only(b, figure, fmt):
        return f" (up to {high})"
    return f" ({low} to {high})"


def latency_text(row: dict[str, Any], reruns: tuple[Any, ...] = ()) -> str:
    """Each class's TTFT and TPOT at its SLO percentile against its targets, with their bands (of a
    one-class choice, holding the margin's `reruns` of it, as the Planner page's: `class_bands`)."""
    from engine.planning.verdict_bands import class_bands

    parts = []
    many = len(row["classes_at_slo"]) > 1
    bands = class_bands(row, reruns)
    for name, c in row["classes_at_slo"].items():
        p = pct_label(c["percentile"])
        # a figure or an end that would read as its target says more
        aim = (c["ttft_target_ms"], c["tpot_target_ms"])
        ttft = f"TTFT {p} {_ms(c['ttft_ms'], aim[0])}{_band(bands[name][0], ',.0f', c['ttft_ms'], aim[0])}"
        tpot = f"TPOT {p} {_ms(c['tpot_ms'], aim[1])}{_band(bands[name][1], '.1f', c['tpot_ms'], aim[1])}"
        ttft += f" (target {plain(c['ttft_target_ms'])} ms)"
        tpot += f" (target {plain(c['tpot_target_ms'])} ms)"
        parts.append((f"{name}: " if many else "") + f"{ttft}, {tpot}")
    return "; ".join(parts)


def figures_text(row: dict[str, Any]) -> str:
    """Chips, $/h, $/M output tokens, $/request, tok/s per chip and power, with their bands."""
    from engine.explain.presentation import usd_decimals
    from engine.planning.prices import assumed_price_mark

    per_m = row["usd_per_million_output_tokens"]
    per_req = row["usd_per_request"]
    m_band = _band(row.get("usd_per_million_output_tokens_band"), ",.2f")
    places = usd_decimals(per_req) if per_req is not None else 4  # '$0.000324', as the page reads it
    r_band = _band(row.get("usd_per_request_band"), f",.{places}f")
    tokens = row.get("output_tokens_per_s_per_chip_band")
    t_band = SAME_AT_EDGES if reads_alike(tokens, ",.0f") else _band(tokens, ",.0f")
    out = [
        f"{int(row['chips'])} chips, ${row['usd_per_hour']:,.2f}/h" + assumed_price_mark(row),
        "n/a per M output tokens" if per_m is None else f"${per_m:,.2f}{m_band} per M output tokens",
        "n/a per request" if per_req is None else f"${per_req:,.{places}f}{r_band} per request",
        f"{row['output_tokens_per_s_per_chip']:,.0f}{t_band} output tok/s per chip",
        f"{row['power_w'] / 1e3:,.1f} kW",
    ]
    return ", ".join(out)


def print_verdict(p: Plan, reruns: tuple[Any, ...] = ()) -> None:
    """The verdict block of `plan` (nothing when the plan has none); `reruns`: the margin's checks of
    the choice, slowed and faster, that its latency ranges hold (as the Planner page's)."""
    v = p.verdict
    if v is None or v.chosen is None:
        return
    c = v.chosen
    what = OBJECTIVES[v.objective]
    how = (
        f"the lowest {what} that still meets every SLO with every chip at the pessimistic edge of its throughput band"
        if v.risk_aware and c.get("holds_slowed") is True
        # the fallback where none holds slowed: said, not the risk-aware headline (a review read it "held")
        else f"the lowest {what} that meets every SLO as modelled; NO passing deployment within the budget holds "
        "with every chip at the pessimistic edge of its throughput band"
        if v.risk_aware
        else f"the lowest {what} that meets every SLO as modelled"
    )
    # the headline says "of those checked" where the search was cut short
    unsure = v.unsure_text(p.settled)
    print(
        f"\nchosen ({how}{', of those checked' if unsure else ''}): {c['shape']} {c['split']} ({c['group']})"
    )
    print(f"  {figures_text(c)}")
    print(f"  {latency_text(c, reruns)}")
    if (
        v.risk_aware
    ):  # a latency band wider than the slowed rerun it holds, past its target (as the page says)
        from engine.planning.verdict_bands import PAST_TARGET_WHY, past_target

        for name, kind, high, target in past_target(c, reruns):
            print(
                f"  {name}: its {kind} band reaches {high:,.1f} ms against {target:,.1f} ms: {PAST_TARGET_WHY}"
            )
    checked = c["verified"] or str(c["verified_by"]).startswith("planning")  # --no-verify: not rerun
    print(f"  quoted run: {c['verified_by']}; {BILLED}" + ("" if checked else "; it FAILS there"))
    if v.risk_aware and c["run"] != v.nominal_run:
        r = p.runs.iloc[v.nominal_run] if v.nominal_run is not None else None
        premium = v.premium_text()
        if r is not None:
            where = v.nominal_text(p.duration_s) or value_text(float(r[COLUMN[v.objective]]), v.objective)
            print(
                f"  {v.nominal_name().removeprefix('the ')}: {r['shape']} {r['split']}, {where}"
                + (f"; the choice {v.premium_verb()} {premium}" if premium else "")
            )
    if v.risk_text():
        print(f"  {v.risk_text()}")
    if v.prices_text():
        print(f"  {v.prices_text()}")
    from engine.scenario.crossing import vendor_crossing_text  # (its pools and chips alone)

    if p.best is not None and (crossing := vendor_crossing_text(p.best)):
        print(f"  {crossing}")
    if unsure:
        print(f"  of what was checked: {unsure}")
    print_per_chip(v, reruns)


def print_per_chip(v: Verdict, reruns: tuple[Any, ...] = ()) -> None:
    """One line per chip (or pairing): its best deployment and figures; * marks the choice (its 'holds
    slowed' from the margin's rerun where no risk-aware check reached it)."""
    rows = holds_with_margin(v.table, reruns).to_dict(orient="records")
    pct = pct_label(rows[0]["slo_percentile"]) if rows else "p99"
    print(
        "\nbest deployment per chip (* = chosen; figures from each one's quoted run; objective: "
        f"{OBJECTIVES[v.objective]})"
    )
    print(
        f"  {'chip':18} {'deployment':34} {'split':>9} {'chips':>5} {'$/h':>9} {'$/M tok':>8} "
        f"{'tok/s/chip':>10} {'kW':>6} {'TTFT ' + pct:>10} {'TPOT ' + pct:>10}  {'holds slowed':14}  verified"
    )
    for r in rows:
        # the page's words: 'yes over 120 s' where only the planning window was checked so
        holds = "NO" if r["holds_text"] == "no" else r["holds_text"]
        per_m = r["usd_per_million_output_tokens"]
        # each latency held apart from its class's target, as the page's table (a review: '30.0 ms' here)
        ttft, tpot = (_ms(r[k], target_of(r.get("classes_at_slo"), k[:7], r[k])) for k in LATENCY_COLUMNS)
        print(
            f"{'*' if r['winner'] else ' '} {r['group']:18} {r['shape']:34} {r['split']:>9} {int(r['chips']):5d} "
            f"{r['usd_per_hour']:9.2f} {'n/a' if per_m is None else format(per_m, '8.2f'):>8} "
            f"{r['output_tokens_per_s_per_chip']:10.0f} {r['power_w'] / 1e3:6.1f} {ttft:>10} "
            f"{tpot:>10}  {holds:14}  {'yes' if r['verified'] else 'no'}"
        )
    if said := holds_note((r["holds_text"] for r in rows), v.risk_aware):
        print(f"  {said}")
    if said := edge_premium_note(v.table, v.objective, v.nominal_run if v.premium_text() else None):
        print(f"  {said}")
