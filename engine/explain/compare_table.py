"""The Compare page's table: two summaries side by side, figure by figure, with their bands.

`compare` lines up the figures of `COMPARED` (the change from A to B and which side does better,
a growing latency a floor, `engine.explain.sustain`); `with_expected_error` adds A's and B's
calibration bands together (`engine.explain.confidence.compared_errors`). Split from
`engine.explain.presentation` (599 lines) with no change of behaviour.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pandas as pd

from engine.explain.confidence import Limits, PoolMark, compared_errors
from engine.explain.sustain import GROWS
from engine.serving.summary import latency_shortfall

Better = Literal["lower", "higher"]

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
    ("Rejected", "requests.rejected", "requests", "lower"),
    ("Failed", "requests.failed", "requests", "lower"),
    ("Cache hit rate", "cache.hit_rate", "fraction", "higher"),
    ("Preemptions", "scheduler.preemptions", "events", "lower"),
    ("Retried after a fault", "scheduler.retried", "requests", "lower"),
)
"""The figures the Compare page lines up: label, summary path, unit, and which way is better."""

ONLY_WHEN_USED = frozenset({"Cache hit rate", "Preemptions", "Retried after a fault"})
"""Figures `compare` leaves out when they are zero or missing on both sides (feature not in play)."""


def _lookup(doc: Mapping[str, Any], path: str) -> float | None:
    cur: Any = doc
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return None
        cur = cur[part]
    if isinstance(cur, bool) or not isinstance(cur, int | float):
        return None
    return float(cur)


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> pd.DataFrame:
    """Two summaries side by side: each figure, its change from A to B, and which one is better.

    ``better`` is ``A``, ``B`` or ``same`` (a relative change under 0.5% counts as the same).
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

    for label, path, unit, way in COMPARED:
        va, vb = _lookup(a, path), _lookup(b, path)
        if label in ONLY_WHEN_USED and not va and not vb:
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
        elif (rel is not None and abs(rel) < 0.005) or change == 0:
            better = "same"
        else:
            better = "B" if (change < 0) == (way == "lower") else "A"
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
