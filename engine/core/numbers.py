"""How a rate reads in a sentence, one rule for every page and command."""

from __future__ import annotations

import math
from typing import Any


def rate2(x: float) -> str:
    """A rate in req/s to two significant figures, in whole numbers from 10 up: '3.4', '0.061', '123'
    ('short by 1.5e+02 req/s' stood in capacity's table and the planner's words: a review)."""
    return f"{x:,.0f}" if abs(x) >= 10 else f"{x:.2g}"


def directed(x: float, figures: int, up: bool) -> float:
    """`x` rounded to `figures` significant figures up (`up`) or down, so that a figure offered as a
    least or a most works as said ('the least cap is 6 kW' stood over a refusal of 6.0018 kW: a review).
    One rule for every such figure (three were written by hand: a read-through). A hair's tolerance: 24.9
    stored as 24.899999... is 24.9, not 24.8; zero and non-finite values as they are."""
    if x == 0 or not math.isfinite(x):
        return x
    scale = 10.0 ** (math.floor(math.log10(abs(x))) - (figures - 1))
    n = x / scale
    return (math.ceil(n - 1e-9) if up else math.floor(n + 1e-9)) * scale


def round_down(rate_rps: float) -> float:
    """A rate cut to three significant figures, never above the input (so still within a cap); as '.3g'
    writes it, so that no float's tail shows (24.800000000000001)."""
    if rate_rps <= 0:
        return rate_rps
    down = float(f"{directed(rate_rps, 3, up=False):.3g}")
    if down > rate_rps:  # the hair's tolerance took it over
        down = float(f"{down - 10.0 ** (math.floor(math.log10(rate_rps)) - 2):.3g}")
    return down


def figures(x: float, n: int) -> str:
    """`x` to `n` significant figures, trailing zeros kept, never in exponent form, thousands separated:
    '0.0309', '0.0000982', '1.70', '1,234' at three ('kv_transfer 9.82e-05' and '$0.03 per 1k' for 0.0309
    read badly: a review). Places by the value as rounded (99.96 at three reads '100', not '100.0')."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    exp = math.floor(math.log10(abs(x)))
    places = max(0, n - 1 - exp)
    if places and abs(round(x, places)) >= 10.0 ** (exp + 1):  # rounded up into the next power of ten
        places -= 1
    return f"{x:,.{places}f}"


def _sig3(x: float, rounding: str) -> str:
    """`x` to three significant figures, rounded `rounding` ('down' or 'up'), as '.3g' writes it."""
    if x == 0 or not math.isfinite(x):
        return f"{x:.3g}"
    v = directed(x, 3, rounding == "up")
    # by the rounded value: 999.1 rounded up is 1,000, which '.3g' writes '1e+03' (a review)
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


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


def places_apart(v: float | None, target: float | None, places: int, most: int = 6) -> int:
    """The decimals to write `v` with so that it does not read as its `target` unless it is the target:
    `places`, or more up to `most` ('TPOT p90 30.0 ms' against a target of 30.0 ms read as a pass and a
    fail alike, where it was 29.96: a browser review; at three, 29.99956 still read '30.000')."""
    if v is None or target is None or v == target or not (math.isfinite(v) and math.isfinite(target)):
        return places
    while places < most and f"{v:,.{places}f}" == f"{target:,.{places}f}":
        places += 1
    return places


def ms_text(v: Any, target: float | None = None) -> str:
    """A latency in ms as the planner writes it, '13.2 ms' or '444 ms' ('n/a' for none), to more decimals where
    it would read as its `target` without being it (`places_apart`): the margin's, the verdict's and the notes'."""
    if v is None or not math.isfinite(float(v)):
        return "n/a"
    return f"{format_apart(float(v), ',.0f' if v >= 100 else ',.1f', target)} ms"


def format_apart(x: float, fmt: str, target: float | None) -> str:
    """`format(x, fmt)` for a fixed-point `fmt` (',.0f', '.1f'), to more decimals where it would read as its
    `target` without being it (`places_apart`)."""
    places = int(fmt.rstrip("f").rsplit(".", 1)[-1])
    return f"{x:{',' if ',' in fmt else ''}.{places_apart(x, target, places)}f}"


def target_of(per_class: Any, key: str, value: float | None) -> float | None:
    """The target of the class whose `key` (ttft_ms, tpot_ms) figure is `value` in a row's `classes_at_slo`
    (None where none is, or unknown): the figure a latency that rounds onto it is held apart from."""
    if not isinstance(per_class, dict) or value is None:
        return None
    for c in per_class.values():
        if isinstance(c, dict) and c.get(key) == value:
            return c.get(f"{key.removesuffix('_ms')}_target_ms")
    return None


def plain(x: float) -> str:
    """A number as ',g' writes it, but never with an exponent above a million: '30', '1,000', '0.5',
    '3,600,000' (a one-hour TTFT target read '3.6e+06 ms': a CLI review)."""
    text = f"{x:,g}"
    return f"{x:,.0f}" if "e+" in text else text


def json_plain(obj: Any) -> Any:
    """Plain JSON data: NaN and infinities become None, numpy scalars plain numbers, tuples lists (what
    every `to_json` and `--json` gives: `Plan.to_json()` kept an infinite bound that `json.dumps(...,
    allow_nan=False)` refused, where the CLI printed null: a review)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): json_plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_plain(v) for v in obj]
    if hasattr(obj, "item"):  # numpy scalars
        return json_plain(obj.item())
    return obj
