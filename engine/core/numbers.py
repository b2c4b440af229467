"""How a rate reads in a sentence, one rule for every page and command."""

from __future__ import annotations


def rate2(x: float) -> str:
    """A rate in req/s to two significant figures, in whole numbers from 10 up: '3.4', '0.061', '123'
    ('short by 1.5e+02 req/s' stood in capacity's table and the planner's words: a review)."""
    return f"{x:,.0f}" if abs(x) >= 10 else f"{x:.2g}"
