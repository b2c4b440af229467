"""The Compare page's table: two summaries side by side, figure by figure, with their bands.

`compare` lines up the figures of `COMPARED` (the change from A to B and which side does better,
a growing latency a floor, `engine.explain.sustain`); `with_expected_error` adds A's and B's
calibration bands together (`engine.explain.confidence.compared_errors`). Split from
`engine.explain.presentation` (599 lines) with no change of behaviour.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pandas as pd

from engine.explain.confidence import Limits, PoolMark, compared_errors
from engine.explain.sustain import GROWS, LEVEL, saturated
from engine.serving.summary import latency_shortfall

Better = Literal["lower", "higher", "neither"]

COMPARED: tuple[tuple[str, str, str, Better], ...] = (
    ("TTFT p50", "latency_ms.ttft.p50", "ms", "lower"),
    ("TTFT p90", "latency_ms.ttft.p90", "ms", "lower"),
    ("TTFT p99", "latency_ms.ttft.p99", "ms", "lower"),
    ("TPOT p50", "latency_ms.tpot.p50", "ms", "lower"),
    ("TPOT p90", "latency_ms.tpot.p90", "ms", "lower"),
    ("TPOT p99", "latency_ms.tpot.p99", "ms", "lower"),
    ("E2E p50", "latency_ms.e2e.p50", "ms", "lower"),
    ("E2E p99", "latency_ms.e2e.p99", "ms", "lower"),
    ("SLO attainment", "slo_attainment", "fraction", "higher"),
    ("Goodput", "goodput_rps", "req/s", "higher"),
    ("Throughput", "throughput_rps", "req/s", "higher"),
    ("Output tokens/s", "throughput_tokens_per_s.output", "tokens/s", "higher"),
    ("Cost per hour", "cost.usd_per_hour", "$/h", "lower"),
    ("Cost per request", "cost.usd_per_request", "$", "lower"),
    ("Cost per 1M output tokens", "cost.usd_per_million_output_tokens", "$", "lower"),
    ("Energy per output token", "energy.joules_per_output_token", "J", "lower"),
    ("Mean power, all chips", "energy.mean_kw", "kW", "lower"),
    # an edge site's: more served locally saves the cloud and its network, but not without its power and latency
    ("Served at the edge", "edge.local_share", "fraction", "neither"),
    ("Offloaded for power", "edge.offloaded_by_reason.power", "requests", "neither"),
    ("Edge TTFT p90", "edge.ttft_ms.edge.p90", "ms", "lower"),
    ("Peak edge site power", "edge.peak_site_power_w", "W", "neither"),
    ("Rejected", "requests.rejected", "requests", "lower"),
    ("Failed", "requests.failed", "requests", "lower"),
    ("Cache hit rate", "cache.hit_rate", "fraction", "higher"),
    ("Preemptions", "scheduler.preemptions", "events", "lower"),
    ("Retried after a fault", "scheduler.retried", "requests", "lower"),
)
"""The figures the Compare page lines up: label, summary path, unit, and which way is better ("neither": a
trade, both figures and the change shown, no verdict)."""

TRADE = "a trade"
"""The better column of a figure that is a trade ("neither" way), where the two sides differ."""

ONLY_WHEN_USED = frozenset({"Cache hit rate", "Preemptions", "Retried after a fault"})
"""Figures `compare` leaves out when they are zero or missing on both sides (feature not in play)."""

SATURABLE = frozenset({"cost.usd_per_request", "cost.usd_per_million_output_tokens"})
"""The costs a run at saturation reads over full batches (`engine.explain.sustain.saturated`)."""

ONLY_WITH_EDGE = frozenset(label for label, path, _unit, _way in COMPARED if path.startswith("edge."))
"""Figures `compare` leaves out where neither side has an edge site (Compare had no edge rows: a read-through)."""


def _lookup(doc: Mapping[str, Any], path: str) -> float | None:
    cur: Any = doc
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return None
        cur = cur[part]
    if isinstance(cur, bool) or not isinstance(cur, int | float):
        return None
    return float(cur)


def _misses_moved(
    path: str, va: float | None, vb: float | None, a: Mapping[str, Any], b: Mapping[str, Any]
) -> bool:
    """Whether SLO attainments within 0.5% of each other differ in their misses by more than chance: by more
    than twice the standard deviation of the difference of two Poisson counts. 99.67% against 99.19% within
    SLO read 'same' where the misses went from 118 to 287 of 35,650 requests (a review); a few requests
    either way are still the same. Without the runs' request counts: never."""
    na, nb = (_lookup(s, "requests.total") for s in (a, b))
    if path != "slo_attainment" or va is None or vb is None or not na or not nb:
        return False
    ma, mb = (1.0 - va) * na, (1.0 - vb) * nb
    return abs(ma - mb) > 2.0 * math.sqrt(ma + mb)


DRAIN_COSTS = frozenset({"cost.usd_per_request", "cost.usd_per_million_output_tokens"})
"""Costs that bill every chip to the run's end, the drain after the window included (`objective.BILLED`)."""


def _drain_only(path: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether a cost's change is its runs' drains alone: both bill the same per hour (within 0.5%) and
    complete the same requests and output tokens, so only how long each ran past its window moves the
    cost per request. Compare called A better on '+1.0%' beside 'Cost per hour $29.88 / $29.88, same'
    and 'Throughput same' (a browser review and a CLI review): a steady service bills neither drain."""
    if path not in DRAIN_COSTS:
        return False
    for key in ("cost.usd_per_hour", "requests.completed", "throughput_tokens_per_s.output"):
        va, vb = _lookup(a, key), _lookup(b, key)
        if va is None or vb is None or abs(vb - va) > 0.005 * max(abs(va), 1e-12):
            return False
    return _lookup(a, "drain_end_s") != _lookup(b, "drain_end_s")


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> pd.DataFrame:
    """Two summaries side by side: each figure, its change from A to B, and which one is better.

    ``better`` is ``A``, ``B`` or ``same`` (a relative change under 0.5% counts as the same; an SLO
    attainment's only where its misses differ by no more than chance, `_misses_moved`).
    A share (unit ``fraction``: SLO attainment, cache hit rate) changes by ``change_points``
    (percentage points), not by a relative ``change_pct``: 0.8% to 99.6% is +98.8 points, where
    a relative change would read +12,450%. A latency of an unsustainable run (either side) that
    grows with run length (E2E; TTFT, a TPOT or token gap unless it stays level,
    `Shortfall.steady`): its row keeps both figures but no change, and no verdict (``better`` is
    ``GROWS``, `engine.explain.sustain`) unless only one side's grows and its figure, a floor, is
    already the worse: then the other side is better whatever the run's length.
    """
    rows = []

    def behind(s: Mapping[str, Any], path: str) -> bool:
        kind = path.split(".")[1] if path.startswith("latency_ms.") else None
        return kind is not None and latency_shortfall(s, kind) is not None  # type: ignore[arg-type]

    sat_a, sat_b = saturated(a), saturated(b)  # once: each cost row asks
    for label, path, unit, way in COMPARED:
        va, vb = _lookup(a, path), _lookup(b, path)
        if (label in ONLY_WHEN_USED and not va and not vb) or (label in ONLY_WITH_EDGE and va is vb is None):
            continue
        change = vb - va if va is not None and vb is not None else None
        grow_a, grow_b = behind(a, path), behind(b, path)
        grows = grow_a or grow_b
        rel = change / abs(va) if change is not None and va and not grows else None
        # one side's figure grows with its run: a floor. Where it is already the worse the other side is
        # better whatever the run's length (A's level TPOT 22.6 ms against B's growing 346.6 read 'grows
        # with run length' in the better column: a browser pass)
        floor_worse = (
            change is not None
            and change != 0
            and grow_a != grow_b
            and ((change > 0) == grow_b) == (way == "lower")
        )
        if grows and floor_worse:
            better, change = ("A" if grow_b else "B"), None
        elif grows:
            better, change = GROWS, None
        elif change is None:
            better = ""
        elif (
            (rel is not None and abs(rel) < 0.005 and not _misses_moved(path, va, vb, a, b))
            or change == 0
            or _drain_only(path, a, b)
        ):
            better = "same"
        elif (
            way == "neither"
        ):  # a trade: the change is shown, no side called better (a blank read as missing)
            better = TRADE
        else:
            better = "B" if (change < 0) == (way == "lower") else "A"
        # a cost over batches a backlog keeps full is no steady figure: cheaper per request and no better
        # (B at 40 req/s read 46% cheaper, unmarked, where `run` marks it: a review)
        full_a, full_b = path in SATURABLE and sat_a, path in SATURABLE and sat_b
        if (full_a or full_b) and change is not None and change != 0 and better in ("A", "B"):
            cheaper_full = (better == "A" and full_a) or (better == "B" and full_b)
            better = LEVEL if cheaper_full else better
        share = unit == "fraction"
        rows.append(
            {
                "figure": label,
                "unit": unit,
                "a": va,
                "b": vb,
                "change": change,
                "change_pct": rel * 100 if rel is not None and not share else None,
                "change_points": change * 100 if change is not None and share else None,
                "better": better,
                "a_grows": grow_a,  # its figure a floor, shown '≥' (a table cell read 587,271 bare: a review)
                "b_grows": grow_b,
                "a_full": full_a,  # its cost at saturation, said in its cell
                "b_full": full_b,
            }
        )
    return pd.DataFrame(rows)


def with_expected_error(
    table: pd.DataFrame,
    a: Sequence[PoolMark],
    b: Sequence[PoolMark],
    bounds: tuple[Limits, Limits] = ({}, {}),
) -> pd.DataFrame:
    """A `compare` table with ``band``: per figure, A's and B's bands together as text ('−30% to
    +17%': the lower fall and the higher rise), '' where neither side shows one
    (`engine.explain.confidence`), each side's cut by its run's `bounds` (`limits`: an open loop's
    throughput cannot rise above what arrived). Two runs on the same chips share their
    calibration's bias, so a change smaller than this is not necessarily noise; it says where each
    side's absolute figure may land.
    """
    bands = compared_errors(table["figure"], a, b, bounds)
    return table.assign(band=pd.Series([b or "" for b in bands], index=table.index, dtype=object))


def with_unit(figure: str, unit: str) -> str:
    """A compared figure's name with its unit ('TTFT p50 (ms)'); a share (its figures read '99.58%'), a
    count and a name that says its unit ('Output tokens/s') as they are."""
    if unit in ("%", "fraction", "requests", "events") or figure.endswith(unit):
        return figure
    return f"{figure} ({unit})"


# --- how the table reads: the Compare page's and `fengong compare`'s text (from ui.tables) --------


def change_text(pct: float | None, points: float | None) -> str | None:
    """A change from A to B: a share's '+98.8 pts', others' '-41.8%' or from 10× '+87,005% (871×)'; None unknown."""
    if points is not None and pd.notna(points):
        return f"{points:+.1f} pts"
    if pct is None or pd.isna(pct):
        return None
    return f"{pct:+,.0f}% ({1 + pct / 100:,.3g}×)" if pct >= 900 else f"{pct:+.1f}%"


def minus(text: str) -> str:
    """A table's signed figure with a minus sign ('−13.4%'), as the bands beside it write theirs. (A
    Compare card's delta is written so too, its arrow and colour set by hand: `st.metric` reads a fall
    from a hyphen only, `app_pages/compare.py` `_signed_card`.)"""
    return "−" + text[1:] if text.startswith("-") else text


def compare_view(table: pd.DataFrame) -> pd.DataFrame:
    """A compare table's text (what `compare_styled` shows over the numbers): one change column, a
    relative change in percent or, for a share,
    its change in percentage points (`change_points`), so neither column is mostly empty; the figures
    as the cards read them (`cell_text`: 23,130 not 23130, a share 99.58% not 0.9958)."""
    text = [
        None if (t := change_text(c, p)) is None else minus(t)
        for c, p in zip(table["change_pct"], table.get("change_points", [None] * len(table)), strict=True)
    ]
    out = table.assign(change_pct=pd.Series(text, index=table.index, dtype=object)).drop(
        columns=["change_points", "a_grows", "b_grows", "a_full", "b_full"], errors="ignore"
    )
    share = out["unit"] == "fraction"
    for col in ("a", "b", "change", "a_ci95", "b_ci95"):
        if col in out:
            signed = col == "change"  # a share's change is the next column's, in points: not said twice
            out[col] = [
                None if signed and s else cell_text(v, s, signed)
                for v, s in zip(out[col], share, strict=True)
            ]
    for col in ("a", "b"):  # a side whose figure grows with its run: a floor, as its card reads it
        grows = table.get(f"{col}_grows", pd.Series(False, index=table.index)).fillna(False).astype(bool)
        full = table.get(f"{col}_full", pd.Series(False, index=table.index)).fillna(False).astype(bool)
        out[col] = [
            f"≥ {t}"
            if g and isinstance(t, str) and t != "–"
            else f"{t}, {LEVEL}"
            if f and isinstance(t, str)
            else t
            for t, g, f in zip(out[col], grows, full, strict=True)
        ]
    return out.assign(unit=out["unit"].where(~share, "%"))


def cell_text(value: Any, share: bool = False, signed: bool = False) -> str | None:
    """A compare table's figure to four significant figures with thousands separated (23,130; 0.0005415;
    1.887), a share in percent (99.58%) or, as a change, in points (−5.00 pts); None for no figure."""
    if value is None or pd.isna(value):
        return None
    v = float(value) * (100.0 if share else 1.0) + 0.0  # (+ 0.0: -0.0 reads 0)
    if not math.isfinite(v):
        return "∞" if v > 0 else "−∞"
    places = 2 if share else (max(0, 3 - math.floor(math.log10(abs(v)))) if v else 0)
    text = f"{v:+,.{places}f}" if signed else f"{v:,.{places}f}"
    # a whole number reads whole (200, not 200.0); any other keeps its four figures ('2.1' beside '2.124' read
    # as a figure short: a CLI review)
    if "." in text and not share and v == round(v):
        text = text.rstrip("0").rstrip(".")
    return minus(text) + (" pts" if share and signed else "%" if share else "")
