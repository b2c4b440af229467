"""How a rate reads in a sentence, one rule for every page and command."""

from __future__ import annotations


def rate2(x: float) -> str:
    """A rate in req/s to two significant figures, in whole numbers from 10 up: '3.4', '0.061', '123'
    ('short by 1.5e+02 req/s' stood in capacity's table and the planner's words: a review)."""
    return f"{x:,.0f}" if abs(x) >= 10 else f"{x:.2g}"


def _sig3(x: float, rounding: str) -> str:
    """`x` to three significant figures, rounded `rounding` ('down' or 'up'), as '.3g' writes it."""
    import math

    if x == 0 or not math.isfinite(x):
        return f"{x:.3g}"
    scale = 10.0 ** (math.floor(math.log10(abs(x))) - 2)
    n = x / scale
    # a hair's tolerance: 24.9 stored as 24.899999... is 24.9, not 24.8
    n = math.floor(n + 1e-9) if rounding == "down" else math.ceil(n - 1e-9)
    return f"{n * scale:,.0f}" if abs(x) >= 1000 else f"{n * scale:.3g}"


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
    if v == 0 or abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:,.1f}" if abs(v) >= 10 else f"{v:,.2f}"
