"""Which of a comparison's calls rest on a change inside the model's own band.

A compare table calls a side better on any change past 0.5% (`compare_table.compare`). Where A and B run a
figure on the same chips under the same calibration, the model's error is shared: a change smaller than the
band can still be told apart. Where they run it on different chips (or profiles), each side's error is its
own, and a change inside the band of A and B together is one the model cannot promise: B's TPOT 11.9% over
A's, with a band of −44% to +64%, was called 'A' bare (a CLI review). `inside_band` names those figures;
`inside_band_note` says it once under the table; `--margin` reruns both sides at their bands' edges.
Latencies, and energy against its typical error: a cost's change is as much its prices' (known) as its
throughput's, which an open loop's arrivals bound on both sides. Energy has no band (its power rows are
fitted, one source), but the power model's median miss is known per calibration basis (17% on a fitted
chip): B's energy per token 1.0% over A's, on other chips, was called 'A' with no word (a hardware
strategist's review).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from engine.explain.confidence import COMPARED_SOURCES, PoolMark, Source, figure_range

LATENCIES = ("TTFT", "TPOT", "E2E")
"""The compared figures (`COMPARED_SOURCES`' labels) whose calls are checked against their band."""
ENERGY = ("Energy per output token", "Mean power")
"""The compared figures checked against the power model's typical error (`Calibration.error`: no band)."""


def _typical_energy_error(a: Sequence[PoolMark], b: Sequence[PoolMark]) -> float | None:
    """The larger median miss of the power model over both sides' pools (None where none is known)."""
    found = [e for m in (*a, *b) if (e := m.calibration.error("energy")) is not None]
    return max(found) if found else None


def _chips(marks: Sequence[PoolMark], source: Source) -> set[tuple[str, str]]:
    """The (chip, profile) pairs a figure of `source` runs on."""
    return {
        (m.hardware, m.calibration.profile_name)
        for _, roles in source
        for m in marks
        if roles is None or m.role in roles
    }


def inside_band(table: pd.DataFrame, a: Sequence[PoolMark], b: Sequence[PoolMark]) -> list[str]:
    """The figures called better ('A' or 'B') on a change inside A's and B's bands together, where the two
    sides run that figure on different chips or profiles, in the table's order."""
    out = []
    for _, r in table.iterrows():
        label, change = str(r["figure"]), r.get("change_pct")
        source = COMPARED_SOURCES.get(label)
        if r["better"] not in ("A", "B") or source is None or change is None or pd.isna(change):
            continue
        if not label.startswith((*LATENCIES, *ENERGY)):
            continue
        if _chips(a, source) == _chips(b, source):  # the same chips: their error is shared
            continue
        if label.startswith(ENERGY):
            typical = _typical_energy_error(a, b)
            if typical is not None and math.isfinite(change) and abs(change) / 100.0 < typical:
                out.append(label)
            continue
        found = [x for x in (figure_range(a, source), figure_range(b, source)) if x is not None]
        if not found:
            continue
        band = (min(x[0] for x in found), max(x[1] for x in found))
        lo, hi = band
        if math.isfinite(change) and abs(change) / 100.0 < max(-lo, hi):
            out.append(label)
    return out


def inside_band_note(figures: Sequence[str], check: str = "--margin reruns both") -> str | None:
    """One sentence for `inside_band`'s figures (None for none); `check` names the way to rerun both sides
    at their bands' edges where the note is read (the command's flag, the page's button)."""
    if not figures:
        return None
    banded = [f for f in figures if not f.startswith(ENERGY)]
    energy = [f for f in figures if f.startswith(ENERGY)]
    said = []
    if banded:
        named = ", ".join(banded[:-1]) + f" and {banded[-1]}" if len(banded) > 1 else banded[0]
        said.append(
            f"{named}: called better on a change inside their band, where A and B run them on different chips, "
            f"each with its own error: not a difference the model can promise ({check} with their chips at "
            "their bands' edges)."
        )
    if energy:
        said.append(
            f"{' and '.join(energy)}: called better on a change smaller than the power model's typical miss on "
            "these chips (its median error on measurements; energy shows no band), where A and B run on "
            "different chips: not a difference the model can promise."
        )
    return " ".join(said)
