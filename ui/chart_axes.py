"""The latency charts' axes: in ms or in seconds (`axis_unit`), on a log scale with ticks a reader can
use (`log_ticks`, `MS_LOG_AXIS`), with the unified hover's title in the axis's unit (`latency_axis`).
Split from `ui.charts` at 600 lines."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engine.explain import duration_text

MS_LOG_AXIS = {"tickformat": ",~r", "hoverformat": ",.4~r"}
"""A latency axis in ms drawn on a log scale: ticks 100, 1,000, 10,000 (plotly's own read 1000 beside
10k; SI's "~s" would write 0.1 ms as 100m), hovers 3,741 and 12,350 as the tables ("~g" wrote 1.235e+4)."""


def log_ticks(values: np.ndarray) -> list[float]:
    """Ticks 1, 2, 5 times each power of ten across the finite positive `values` (and one step past each
    end), for a log axis spanning up to three decades; a tick a decade beyond."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    if not len(v):
        return []
    lo, hi = float(v.min()), float(v.max())
    marks = (1.0, 2.0, 5.0) if hi / lo <= 1_000 else (1.0,)  # wider: a tick a decade, as other log axes
    decades = range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1)
    steps = [m * 10.0**k for k in decades for m in marks]
    below = [x for x in steps if x <= lo][-1:]
    above = [x for x in steps if x >= hi][:1]
    return below + [x for x in steps if lo < x < hi] + above


def axis_unit(frame: pd.DataFrame, targets: Sequence[Mapping[str, Any]]) -> tuple[str, float]:
    """The unit a latency CDF's axis reads in and its size in ms: seconds where the curves or a target
    reach 100 s (a backlog's TTFTs read '1M' ms on the axis beside a card of '≥ 56.4 min'), else ms."""
    top = max(
        [float(frame["latency_ms"].max()) if len(frame) else 0.0, *(float(t["target_ms"]) for t in targets)]
    )
    return ("s", 1000.0) if math.isfinite(top) and top >= 100_000 else ("ms", 1.0)


def latency_axis(
    fig: go.Figure, title: str, unit: tuple[str, float], log: bool, drawn: np.ndarray, narrow: bool = False
) -> None:
    """A latency CDF's x axis in `unit` (its name and its size in ms): its title, its hover's title in that
    unit (a bare 110.7 over 'chat: 56.0% by 111 ms': a review), the size `cdf_band` divides its bands' ms by
    (layout meta), and on a log axis 1-2-5 ticks over the `drawn` values (14 to 945 ms read one tick, '100');
    `narrow` (a third of the page): its ticks level, where plotly turned a crowded row on its side (a log
    axis's thinned to its decades by `ui.charts`)."""
    name, size = unit
    fig.update_xaxes(
        title=title,
        type="log" if log else "linear",
        unifiedhovertitle={"text": f"%{{x:,.4~r}} {name}"},
        tickformat=",~r",  # 1,000 and 2,000 on a linear axis too (they read 1000, 2000)
    )
    fig.update_layout(meta={"ms_per_unit": size})
    if narrow:
        fig.update_xaxes(tickangle=0, nticks=5)
    if log:
        fig.update_xaxes(**MS_LOG_AXIS, tickmode="array", tickvals=log_ticks(drawn))


def target_text(ms: float, size: float) -> str:
    """A target's label on a latency axis of unit `size` ms: ms, ten seconds or more in their own unit
    (60.0 min, not 3,600,000 ms); on an axis in seconds, seconds ('SLO 1,000 ms' stood on an axis
    reading 1 s: a review)."""
    if ms >= 10_000:
        return duration_text(ms)
    return f"{ms:,.0f} ms" if size == 1.0 else f"{ms / 1000:,.3g} s"
