"""Where the SLO page's latency-by-percentile curves end, in words.

A class's curve (`presentation.tail_curves`) counts the requests that never got an answer
(rejected, failed, unfinished) as late: they have no latency, so the curve leaves the chart at the
last percentile its answered requests reach, and a reader saw a curve stop at p92 with nothing
saying why (a review). `tail_end_text` says where each curve that stops early ends.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def _pct(p: float) -> str:
    """95.8754 as '95.9', 97.0 as '97'."""
    return f"{p:.1f}".removesuffix(".0")


def tail_end_text(curves: pd.DataFrame) -> str:
    """'Curves that stop early: chat at p97 and batch at p91.6. Past that point ...' ('' when every
    class's curve reaches its last percentile)."""
    ends = []
    for name, rows in curves.groupby("class", sort=False):
        finite = np.isfinite(rows["latency_ms"].to_numpy(dtype=float))
        if finite.all():
            continue
        last = rows["percentile"].to_numpy(dtype=float)[finite]
        ends.append(
            f"{name} at p{_pct(last.max())}"
            if len(last)
            else f"{name} before p{_pct(rows['percentile'].min())}"
        )
    if not ends:
        return ""
    listed = ", ".join(ends[:-1]) + (" and " if len(ends) > 1 else "") + ends[-1]
    return (
        f"Curves that stop early: {listed}. Past that point a class's requests were rejected or never finished: "
        "they have no latency, and each counts as a miss."
    )
