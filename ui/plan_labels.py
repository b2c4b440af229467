"""Where the planner's frontier charts put each labelled point's P:D split: above or below it, clear
of the labels already placed and of every marker the chart draws, or nowhere (its hover names it)."""

from __future__ import annotations

from typing import Any

import pandas as pd

MARKER_LABEL_AXIS_PER_CHAR = 0.017
"""About how much of a half-page chart's x axis one character of a marker's label covers."""
MARKER_LABEL_HEIGHT = 0.08
"""About how much of the y axis a marker's label (with its gap to the marker) covers."""


MARKER_HALF = (0.015, 0.03)
"""About how much of the x and y axes half a marker covers (a 10-pixel marker on a half-page chart)."""
STAR_SCALE = 20 / 11
"""The chosen run's star against a run's marker (sizes 20 and 11, `ui.planner`): a label placed clear
of a marker's size beside the star was half under it ('2M', now '2 mixed', beside a 2P:1D star)."""


def label_sides(
    labelled: pd.DataFrame,
    x: str,
    y: str,
    x_range: tuple[float, float] | None = None,
    y_top: float | None = None,
    markers: pd.DataFrame | None = None,
) -> dict[Any, str | None]:
    """Where each labelled point's P:D split goes ('top center', 'bottom center'), or None where
    both places would overlap a label already placed: the chosen run first, then the frontier in
    x order, each first on the side its x-order neighbour did not take. `x_range` and `y_top`: the
    extent of every point the chart draws (the axes'; unset: the extent of `markers`). Frontier
    points sit close where every passing deployment serves the whole load (the cost chart's goodput is the same for
    all): labelled above and below in turn, five of them still ran into each other ('2P:1D3P:1D').
    `markers`: every point the chart draws (its `x` and `y`), which a label may not cover either;
    the chosen run keeps its label even where both places would. A point whose split a label already
    placed over the same x names goes unlabelled: three frontier points of one split a hair apart (a MoE
    plan's 1P:1D at 24 tokens/s per user) stacked '1P:1D' twice under the star's own."""
    if labelled.empty:
        return {}
    xs = labelled[x].astype(float)
    ys = labelled[y].astype(float)
    drawn = labelled if markers is None else markers
    if x_range is None:
        x_range = (float(drawn[x].min()), float(drawn[x].max()))
    if y_top is None:
        y_top = float(drawn[y].max())
    x_span = (x_range[1] - x_range[0]) or 1.0
    y_top = max(y_top, 0.0) or 1.0
    dots = [] if markers is None else _dots(markers, x, y, x_range[0], x_span, y_top)
    order = sorted(labelled.index, key=lambda i: (not bool(labelled.at[i, "chosen"]), float(xs[i])))
    by_x = {i: n for n, i in enumerate(xs.sort_values().index)}
    placed: list[tuple[float, float, float]] = []  # (x, y, half width) on the axes' 0-1 scale
    names: list[tuple[str, float, float]] = []  # (split, x, half width) of each label placed
    sides: dict[Any, str | None] = {}
    for i in order:
        px = (float(xs[i]) - x_range[0]) / x_span * 0.9  # plotly pads the range about 5% a side
        split = str(labelled.at[i, "split"])
        half = len(split) * MARKER_LABEL_AXIS_PER_CHAR / 2
        sides[i] = None
        if any(s == split and abs(px - qx) < half + qh for s, qx, qh in names):
            continue  # (said already, above or below it)
        first = "bottom center" if by_x[i] % 2 else "top center"
        second = "top center" if first == "bottom center" else "bottom center"
        for side in (first, second):
            py = float(ys[i]) / y_top + (
                MARKER_LABEL_HEIGHT if side == "top center" else -MARKER_LABEL_HEIGHT
            )
            clear = all(
                abs(px - qx) >= half + qh or abs(py - qy) >= MARKER_LABEL_HEIGHT for qx, qy, qh in placed
            )
            if clear and all(
                abs(px - mx) >= half + MARKER_HALF[0] * k
                or abs(py - my) >= MARKER_LABEL_HEIGHT / 2 + MARKER_HALF[1] * k
                for j, mx, my, k in dots
                if j != i  # (its own marker: plotly sets the label off it by its size)
            ):
                placed.append((px, py, half))
                sides[i] = side
                break
        if sides[i] is None and bool(labelled.at[i, "chosen"]):  # the choice is always named
            placed.append((px, float(ys[i]) / y_top + MARKER_LABEL_HEIGHT, half))
            sides[i] = "top center"
        if sides[i] is not None:
            names.append((split, px, half))
    return sides


def _dots(
    markers: pd.DataFrame, x: str, y: str, x0: float, x_span: float, y_top: float
) -> list[tuple[Any, float, float, float]]:
    """Every drawn marker (its index) on the axes' 0-1 scale, with its size against a run's (the star
    is larger)."""
    chosen = markers["chosen"].astype(bool) if "chosen" in markers else pd.Series(False, index=markers.index)
    return [
        (j, (float(mx) - x0) / x_span * 0.9, float(my) / y_top, STAR_SCALE if star else 1.0)
        for j, mx, my, star in zip(markers.index, markers[x], markers[y], chosen, strict=True)
        if mx == mx and my == my  # (NaN: not drawn)
    ]


__all__ = ["MARKER_HALF", "MARKER_LABEL_AXIS_PER_CHAR", "MARKER_LABEL_HEIGHT", "STAR_SCALE", "label_sides"]
