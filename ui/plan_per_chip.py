"""The Planner verdict's per-chip table: one row per chip (or pairing), the choice starred, each figure
with its band as the page shows it (`per_chip_frame`), and its columns' formats (`PER_CHIP`). Split
from `ui.plan_verdict` at 600 lines."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from engine.core import format_apart, target_of
from engine.planning import (
    band_take_in,
    holds_with_margin,
    reads_alike,
    rises_only,
    steady_reruns,
    tokens_band,
    with_rerun_bands,
)


def range_text(b: Any, fmt: str, to: str = " to ", target: float | None = None) -> str:
    """' (786 to 1,039)': a band's two ends in `fmt` (an end that would read as the `target` without being it
    to more decimals), '' for none."""
    return "" if not b else f" ({format_apart(b[0], fmt, target)}{to}{format_apart(b[1], fmt, target)})"


PER_CHIP = {
    # the star, the chip and the layout stay in view while a narrow screen scrolls to the last columns
    "": st.column_config.TextColumn(  # the winner's star; a cross where the row's quoted run fails
        width=32,
        pinned=True,
        help="★ the choice; ✗ its quoted run misses a target (the last column says which run).",
    ),
    "chip": st.column_config.TextColumn(pinned=True),
    "layout": st.column_config.TextColumn(pinned=True),
    "chips": st.column_config.NumberColumn(width=52),
    "$/h": st.column_config.NumberColumn(format="%.2f", width=64),  # to the cent ("18" beside "19.44")
    "holds at the band's edge": st.column_config.TextColumn(
        "holds slowed",
        width=116,  # (104 cut it to 'holds slowe⋮' beside the column's menu: a review)
        help="Whether it still meets its SLO with every chip at the pessimistic edge of its throughput band: "
        "over the run its figures are quoted from, or 'over 120 s' where only the planning window's run "
        "was checked so (the full-length check runs on the would-be choice; a row that reads so may fail "
        "over the full length: plan with that chip alone to have it checked).",
    ),
    "$/M output tokens": st.column_config.TextColumn(
        "$/M out tokens", help="$ per million output tokens (band)."
    ),
    "output tok/s per chip": st.column_config.TextColumn(
        "out tok/s/chip", help="Output tokens per second per chip (band)."
    ),
    "kW": st.column_config.NumberColumn(format="%.1f", width=48),
}
"""The verdict table's formats and headers: short headers (the full words in their help) and the
short columns narrowed, so that at 1400 pixels every column of a plain plan shows without a scroll
(the run each row quotes, where it is the same for all, is said under the table); where long
layouts (expert parallelism) still push the last columns out of view, the row's chip and layout stay
pinned while the table scrolls to them."""


def _spread(b: Any, fmt: str, figure: float | None = None, target: float | None = None) -> str:
    """A table cell's band ' (786–1,039)', none where both ends read alike ('1,039 (1,039–1,039)'), and
    ' (up to 1,333)' where its low end reads as the `figure`, as the verdict's sentence says it (a latency
    with no faster run and no band of its kind: '431 (431–1,333)' read as if it could not be lower)."""
    if reads_alike(b, fmt):
        return ""
    if rises_only(b, figure, fmt):
        return f" (up to {format_apart(b[1], fmt, target)})"
    return range_text(b, fmt, "–", target)


def per_chip_frame(t: pd.DataFrame, reruns: tuple[Any, ...] = ()) -> pd.DataFrame:
    """The verdict's table as the page shows it: one row per chip (or pairing), the winner starred,
    its latency ranges holding the margin's reruns of it (`reruns`) as the sentence above the table
    does (they read 15.2 to 45.3 ms there and 18.3-45.3 in the table: a walkthrough), and its 'holds
    slowed' from the margin's rerun where no risk-aware check reached it (`holds_with_margin`)."""
    # each class's bands holding the margin's reruns, as the verdict's sentence reads them (the table's
    # 'batch p90: 498 (498–979)' stood under the sentence's 'batch: TTFT p90 498 ms (323 to 979)': a review)
    t = with_rerun_bands(holds_with_margin(t, reruns), reruns)
    # the winner's as the verdict reads it (`tokens_band`: its row read '1,039 (786–1,039)' under '1,039 (the
    # same at its chips' band edges)': a review)
    if len(t) and "output_tokens_per_s_per_chip_band" in t:
        t = t.copy()
        t["output_tokens_per_s_per_chip_band"] = [
            tokens_band(r, reruns) if r["winner"] else r["output_tokens_per_s_per_chip_band"]
            for r in t.to_dict(orient="records")
        ]
    pct = f"p{t['slo_percentile'].iloc[0]:g}" if len(t) else "p99"
    if len(t) and (steady_reruns(reruns, "ttft") or steady_reruns(reruns, "tpot")):
        t = t.copy()
        for col in ("ttft_ms_at_slo", "tpot_ms_at_slo"):
            seen = steady_reruns(reruns, col[:4])  # a TPOT that stays level is taken in (`steady`)
            t[f"{col}_band"] = [
                band_take_in(b, *(getattr(r, col, None) for r in seen)) if won else b
                for b, won in zip(t[f"{col}_band"], t["winner"], strict=True)
            ]

    def banded(col: str, fmt: str) -> list[str]:
        key = col.removesuffix("_at_slo")
        who = _whose(t, key) if col.endswith("_at_slo") else [("", None)] * len(t)
        per = t["classes_at_slo"] if "classes_at_slo" in t and col.endswith("_at_slo") else [None] * len(t)
        aims = [
            target_of(c, key, v) for c, v in zip(per, t[col], strict=True)
        ]  # (held apart from its target)
        return [
            "n/a"
            if v is None or v != v
            # a named class's figure takes that class's band, as the sentence above says it (the column's
            # band, of every class, read 15.1-31.3 beside the sentence's batch 16.2 to 31.3: a review)
            else f"{w}{format_apart(v, fmt, aim)}{_spread(own if own is not None else b, fmt, v, aim)}"
            for v, b, (w, own), aim in zip(t[col], t[f"{col}_band"], who, aims, strict=True)
        ]

    fails = ~t["verified"].astype(bool) & ~t["verified_by"].str.startswith("planning")
    return pd.DataFrame(
        {
            # a row whose quoted run misses a target says so where the eye starts, not only at the end of
            # the last column, cut off at 1,600 px and scrolled to at 1,100 (a browser review)
            "": np.where(t["winner"], "★", np.where(fails, "✗", "")),
            # the verdict's arrow, a character narrower twice a row: at 1400 pixels a plan of chip pairs
            # pushed its last column (kW) out of view
            "chip": t["group"].str.replace(" -> ", " → ", regex=False),
            "layout": [
                f"{_without_chips(shape, group)} {split}".replace(" -> ", " → ")
                for shape, group, split in zip(t["shape"], t["group"], t["split"], strict=True)
            ],
            "chips": t["chips"].astype(int),
            "$/h": t["usd_per_hour"].round(2),
            # narrow, beside the price: last, it read '5' of 5.4 at 1,440 pixels, cut by the banded columns'
            # width (a browser review)
            "kW": (t["power_w"] / 1e3).round(1),
            # beside the price it qualifies: at 1400 pixels the table's last columns are scrolled to
            "holds at the band's edge": t["holds_text"],
            "$/M output tokens": banded("usd_per_million_output_tokens", ",.2f"),
            # the latencies before the throughput and power: at 1400 pixels the last columns are scrolled to
            f"TTFT {pct} (ms)": banded("ttft_ms_at_slo", ",.0f"),
            f"TPOT {pct} (ms)": banded("tpot_ms_at_slo", ",.1f"),
            "output tok/s per chip": banded("output_tokens_per_s_per_chip", ",.0f"),
            "quoted run": np.where(fails, t["verified_by"] + " (fails)", t["verified_by"]),
        }
    )


def _whose(t: pd.DataFrame, key: str) -> list[tuple[str, Any]]:
    """Per row, ('batch p99: ', that class's band or None) where its latency (`key`: ttft_ms, tpot_ms) is
    the worst of several classes', which the column shows (('', None) with one class): 13,938 ms of TTFT
    read unnamed where the interactive class was at 977 ms (a browser review)."""
    out: list[tuple[str, Any]] = []
    for per, v in zip(t.get("classes_at_slo", pd.Series([None] * len(t))), t[f"{key}_at_slo"], strict=True):
        name = None
        if isinstance(per, dict) and len(per) > 1 and v == v:
            name = next((c for c, d in per.items() if d.get(key) is not None and float(d[key]) == v), None)
        if name is None:
            out.append(("", None))
            continue
        band = per[name].get(f"{key.removesuffix('_ms')}_band")
        out.append((f"{name} p{per[name]['percentile']:g}: ", band or None))
    return out


def _without_chips(shape: str, group: str) -> str:
    """A deployment's shape without the chip names its row's chip column gives, in the same order
    ('b200 tp1 -> b200 tp1' beside 'b200' reads 'tp1 -> tp1'): the table is twelve columns, and at
    1400 pixels its last two (whether the choice holds at the band's edge, the run it quotes) were
    cut off. Kept whole where a chip of the group is not in it."""
    chips = [c.strip() for c in re.split(r"->|\+|,", group) if c.strip()]
    out = shape
    for chip in chips:
        if not re.search(rf"(?<![\w-]){re.escape(chip)}(?![\w-])", out):
            return shape
        out = re.sub(rf"(?<![\w-]){re.escape(chip)}\s+", "", out)
    return out
