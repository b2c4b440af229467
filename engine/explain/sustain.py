"""How an unsustainable run is said: its shortfall in one line, and its latency figures marked.

A run whose queue grows through its window (`engine.serving.saturation`) has latency percentiles
set by how long it ran, so no page, table or command prints one of them bare: each carries
`GROWS` (``"26,317 ms, grows with run length"``; in a headline tile ``"≥ 26.3 s"`` over it).
Throughput, cost and attainment stay as they are: they describe the run that was simulated.
The shortfall itself is read with `engine.serving.summary.shortfall_rps`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

GROWS = "grows with run length"
"""What an unsustainable run's latency percentile says instead of standing alone."""


def latency(text: str, shortfall: float | None) -> str:
    """A latency figure's text, marked when its run is unsustainable: '26,317 ms, grows with run length'."""
    return text if shortfall is None else f"{text}, {GROWS}"


def at_least(text: str, shortfall: float | None) -> str:
    """A headline tile's value: '≥ 26.3 s' when its run is unsustainable (the figure only grows)."""
    return text if shortfall is None or text in ("", "—", "n/a") else f"≥ {text}"


def line(summary: Mapping[str, Any]) -> str | None:
    """One sentence on an unsustainable run (None for one that keeps up)."""
    mark = summary.get("unsustainable")
    if not mark:
        return None
    return (
        f"Unsustainable: {mark['offered_rps']:,.3g} req/s offered, about {mark['sustained_rps']:,.3g} sustained "
        f"(short by {mark['shortfall_rps']:,.2g} req/s; both over the window's second half, where the arrivals "
        "drawn may differ a little from the rate set). The queue grows through the window, so its latency "
        "percentiles grow with the run's length, and no plan or capacity search counts this run as passing."
    )
