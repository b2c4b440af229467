"""End-to-end latency's band, measured on held-out data.

A run's E2E figures carry no band of their own: their band is the envelope of the TTFT band of
the pools that prefill and the TPOT band of those that decode (the lowest fall and the highest
rise, `engine.explain.confidence.COMPARED_SOURCES`). The validation fits no E2E, so that envelope
is checked here on the reference's mean E2Es: each result block of the MoE file that states a mean
E2E beside the mean TTFT and mean TPOT the validation predicts (`reference_moe`'s views) gives
E2E's held-out prediction from its parts', E2E = TTFT + decode time with each part scaled by its
held-out ratio predicted / measured, and the block counts as inside when that ratio lands within
the envelope of the two parts' bands, each fitted without the block's source (`bands.coverage`).
A mean E2E is the mean TTFT plus the mean decode time, so the decode time is E2E - TTFT.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from engine.calibration import bands

E2E_METRIC = "mean_e2e_latency_ms"
PARTS = ("mean_ttft_ms", "mean_tpot_ms")
BLOCK = (
    *("source", "model", "hardware", "n_gpus", "tp", "precision"),
    *("framework", "scenario", "input_len", "output_len", "rate"),
)
"""The columns that name one result block (its rows differ only in the metric)."""


@dataclass(frozen=True)
class View:
    """A block's mean E2E and the ids of its mean TTFT and mean TPOT rows."""

    e2e_id: str
    ttft_id: str
    tpot_id: str
    e2e_ms: float
    ttft_ms: float


def views(path: Path) -> list[View]:
    """Every block of a reference file (the MoE one) that states a mean E2E, TTFT and TPOT."""
    if not path.is_file():
        return []
    blocks: dict[tuple[str, ...], dict[str, dict[str, str]]] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            blocks.setdefault(tuple(r[k] for k in BLOCK), {})[r["metric"]] = r
    out = []
    for b in blocks.values():
        if E2E_METRIC in b and all(p in b for p in PARTS):
            e, t, p = b[E2E_METRIC], b[PARTS[0]], b[PARTS[1]]
            try:
                e2e, ttft = float(e["value"]), float(t["value"])
            except ValueError:
                continue
            if e2e > ttft > 0:
                out.append(View(e["id"], t["id"], p["id"], e2e, ttft))
    return out


def check(checked: pd.DataFrame, found: list[View]) -> pd.DataFrame:
    """Each view whose TTFT and TPOT points `checked` holds (`bands.coverage`'s frame): its E2E's
    held-out ratio, the envelope of the parts' bands, and whether the ratio lands inside. A part
    predicted twice with different results (two held-out schemes, as the chip-out family has) has no
    one ratio: its block is left out."""
    once = checked.drop_duplicates("id", keep=False) if not checked.empty else checked
    by_id = once.set_index("id") if not once.empty else once
    rows: list[dict[str, object]] = []
    for v in found:
        if v.ttft_id not in by_id.index or v.tpot_id not in by_id.index:
            continue
        t, p = by_id.loc[v.ttft_id], by_id.loc[v.tpot_id]
        if pd.isna(t["low"]) or pd.isna(p["low"]):
            continue
        ratio = (float(t["ratio"]) * v.ttft_ms + float(p["ratio"]) * (v.e2e_ms - v.ttft_ms)) / v.e2e_ms
        low, high = min(float(t["low"]), float(p["low"])), max(float(t["high"]), float(p["high"]))
        rows.append(
            {
                "id": v.e2e_id,
                "source": t["source"],
                "ratio": ratio,
                "low": low,
                "high": high,
                "inside": low <= ratio <= high,
            }
        )
    return pd.DataFrame(rows, columns=["id", "source", "ratio", "low", "high", "inside"])


def coverage(e2e: pd.DataFrame) -> dict[str, float]:
    """Points, sources and the share inside (empty when no block was checked)."""
    if e2e.empty:
        return {}
    return {
        "points": float(len(e2e)),
        "sources": float(e2e["source"].nunique()),
        "coverage": float(e2e["inside"].mean()),
    }


def by_source(e2e: pd.DataFrame) -> list[tuple[str, int, int]]:
    """(source, points inside, points) per source, most points first: one source's bias can carry the
    pooled share (TKE's 24 of 24 inside beside the SGLang cookbook's Qwen 1 of 9)."""
    if e2e.empty:
        return []
    g = (
        e2e.groupby("source")["inside"]
        .agg(["sum", "size"])
        .sort_values("size", ascending=False, kind="stable")
    )
    return [(str(s), int(r["sum"]), int(r["size"])) for s, r in g.iterrows()]


def line(e2e: pd.DataFrame) -> str:
    """`make validate`'s E2E line: how much of the held-out mean E2Es the envelope holds, against the
    target, and per source (one source's bias can carry the pooled share)."""
    c = coverage(e2e)
    lo, hi = bands.COVERAGE_RANGE
    verdict = (
        "met"
        if bands.within_target(c)
        else "NOT met, too wide"
        if c["coverage"] > hi
        else "NOT met, too narrow"
    )
    each = ", ".join(f"{s.split(':')[-1].strip()} {i} of {n}" for s, i, n in by_source(e2e))
    return (
        f"the envelope of its TTFT and TPOT bands (no band of its own) holds {c['coverage']:.1%} of "
        f"{int(c['points'])} held-out mean E2Es ({lo:.0%}-{hi:.0%}: {verdict}); by source: {each}"
    )
