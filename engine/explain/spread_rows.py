"""Compare's band column from each side's run spread, where the cards show one.

The Compare page's cards read each side's figures with the run's spread once it is known (every
chip at either edge of its throughput band, `engine.explain.margin.RunSpread.moves`), while its
table's band column read the kind's band: one run's cost per request read −2% to +3% on its card
and −6% to +29% in the column (a review). `spread_errors` gives the column the cards' bands for the
figures a spread moves, A's and B's together.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from engine.explain.confidence import COMPARED_BOUNDED, Limits, PoolMark, Range, signed_text
from engine.explain.run_bands import Moves, falls_to_nothing, spans_all, spread_band, spread_floor

SPREAD_ROWS: dict[str, str] = {
    **{f"{m.upper()} {p}": f"{m}_{p}_ms" for m in ("ttft", "tpot") for p in ("p50", "p90", "p99")},
    "E2E p50": "e2e_p50_ms",
    "E2E p99": "e2e_p99_ms",
    "SLO attainment": "slo_attainment",
    **COMPARED_BOUNDED,  # goodput, throughput (output tokens too: the same requests'), the costs
}
"""Compare-table figures that a run's spread moves (`margin.SPREAD_KEYS`, and the latencies' other
percentiles: `RunSpread.percentile_moves`): once each side's spread is known their band is the
spread's, as the cards read it (`spread_errors`)."""


def _spread_range(
    key: str, marks: Sequence[PoolMark], move: tuple[float, float], bounds: Limits | None = None
) -> Range | None:
    """One side's band of a figure from its run's spread, as `figure_band` gives its card (None: the
    card shows none: a share spanning nearly all, a count falling to nothing); a cost's kind's band
    cut by the side's `bounds` as its card's is."""
    if key == "slo_attainment":
        return None if spans_all(move) else (min(0.0, *move), max(0.0, *move))
    if falls_to_nothing(key, move):
        return None
    lo, hi = min(move), max(move)
    # a latency's and a cost's kind's band at least (a p50's or p90's: its p99's kind, as its column had it)
    r = spread_floor(marks, re.sub(r"_p(50|90)_ms$", "_p99_ms", key), bounds)
    return (min(lo, r[0]), max(hi, r[1])) if r is not None else (lo, hi)


def spread_errors(
    labels: Iterable[str],
    a: Sequence[PoolMark],
    b: Sequence[PoolMark],
    moves: tuple[Moves, Moves],
    kinds: Sequence[str | None],
    bounds: tuple[Limits | None, Limits | None] = (None, None),
) -> list[str | None]:
    """Compare's band column once each side's run spread is known: a figure of `SPREAD_ROWS` reads
    A's and B's spread bands together (the lower fall, the higher rise), as their cards read them,
    none where either card shows none (a side on a cliff, whose warning says how far it falls: the
    column read A's −3.8 to +0.3 pts beside B's 8% to 100%, a review); every other figure keeps its
    kind's band (`kinds`, `compared_errors`'s). The column and the cards gave one run's cost per
    request −6% to +29% and −2% to +3% (a review)."""
    out: list[str | None] = []
    for label, kind in zip(labels, kinds, strict=True):
        key = SPREAD_ROWS.get(label)
        sides = [
            (marks, mv[key], bd)
            for marks, mv, bd in zip((a, b), moves, bounds, strict=True)
            if key is not None and key in mv
        ]
        if not sides:
            out.append(kind)
            continue
        found = [
            r for marks, move, bd in sides if (r := _spread_range(str(key), marks, move, bd)) is not None
        ]
        if len(found) < len(sides):  # a side without one: together, no band can say it
            out.append(None)
            continue
        lo, hi = min(r[0] for r in found), max(r[1] for r in found)
        out.append(spread_band(key, None, (lo, hi)) if key == "slo_attainment" else signed_text(lo, hi))
    return out
