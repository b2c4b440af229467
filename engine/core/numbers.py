"""How a rate reads in a sentence, one rule for every page and command."""

from __future__ import annotations

import math


def rate2(x: float) -> str:
    """A rate in req/s to two significant figures, in whole numbers from 10 up: '3.4', '0.061', '123'
    ('short by 1.5e+02 req/s' stood in capacity's table and the planner's words: a review)."""
    return f"{x:,.0f}" if abs(x) >= 10 else f"{x:.2g}"


def _sig3(x: float, rounding: str) -> str:
    """`x` to three significant figures, rounded `rounding` ('down' or 'up'), as '.3g' writes it."""
    if x == 0 or not math.isfinite(x):
        return f"{x:.3g}"
    scale = 10.0 ** (math.floor(math.log10(abs(x))) - 2)
    n = x / scale
    # a hair's tolerance: 24.9 stored as 24.899999... is 24.9, not 24.8
    n = math.floor(n + 1e-9) if rounding == "down" else math.ceil(n - 1e-9)
    # by the rounded value: 999.1 rounded up is 1,000, which '.3g' writes '1e+03' (a review)
    return f"{n * scale:,.0f}" if abs(n * scale) >= 100 else f"{n * scale:.3g}"


def rate_down(x: float) -> str:
    """A rate that passed, to three significant figures, never above it: a capacity of 24.859 req/s read
    '24.9', and a run at 24.9 failed (a review); it reads '24.8'."""
    return _sig3(x, "down")


def rate_up(x: float) -> str:
    """A rate that failed, to three significant figures, never below it ('fails at 25.4' for 25.32)."""
    return _sig3(x, "up")


def count3(v: float) -> str:
    """A positive quantity to about three significant figures, with thousands separators: 2,380, 31.4,
    2.05 (the Results page's cards and `run --margin`'s goodput per $ alike)."""
    # by the value as rounded: 99.96 reads 100, not 100.0, and 9.996 reads 10.0, not 10.00 (a review)
    if v == 0 or abs(round(v, 1)) >= 100:
        return f"{v:,.0f}"
    return f"{v:,.1f}" if abs(round(v, 2)) >= 10 else f"{v:,.2f}"
