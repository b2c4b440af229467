"""E2E's band measured (`engine.calibration.e2e_band`): a block's mean E2E predicted from its held-out
TTFT and TPOT, judged against the envelope of their bands."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from engine.calibration import e2e_band

HEAD = [*e2e_band.BLOCK, "id", "metric", "value"]


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=HEAD, restval="x")
        w.writeheader()
        w.writerows(rows)
    return path


def test_a_block_with_its_e2e_ttft_and_tpot_is_a_view(tmp_path: Path) -> None:
    rows = [
        {"id": "a1", "metric": "mean_ttft_ms", "value": "100"},
        {"id": "a2", "metric": "mean_tpot_ms", "value": "20"},
        {"id": "a3", "metric": "mean_e2e_latency_ms", "value": "2100"},
        {"id": "a4", "metric": "output_tokens_per_s", "value": "900"},
        # another block (another rate) with no TPOT: no view
        {"id": "b1", "metric": "mean_ttft_ms", "value": "100", "rate": "y"},
        {"id": "b3", "metric": "mean_e2e_latency_ms", "value": "2100", "rate": "y"},
        # an E2E under its TTFT cannot be split: no view
        {"id": "c1", "metric": "mean_ttft_ms", "value": "100", "rate": "z"},
        {"id": "c2", "metric": "mean_tpot_ms", "value": "20", "rate": "z"},
        {"id": "c3", "metric": "mean_e2e_latency_ms", "value": "90", "rate": "z"},
    ]
    found = e2e_band.views(_write(tmp_path / "m.csv", rows))
    assert found == [e2e_band.View("a3", "a1", "a2", 2100.0, 100.0)]
    assert e2e_band.views(tmp_path / "absent.csv") == []


def _checked(ttft: tuple[float, float, float], tpot: tuple[float, float, float]) -> pd.DataFrame:
    """Two held-out points (ratio, low, high) as `bands.coverage` gives them."""
    return pd.DataFrame(
        [
            {"id": "t", "source": "s1", "ratio": ttft[0], "low": ttft[1], "high": ttft[2]},
            {"id": "p", "source": "s1", "ratio": tpot[0], "low": tpot[1], "high": tpot[2]},
        ]
    )


def test_the_e2e_ratio_weighs_each_part_by_its_time_and_the_band_is_their_envelope() -> None:
    view = e2e_band.View("e", "t", "p", e2e_ms=1000.0, ttft_ms=250.0)
    # TTFT predicted 2x (band 0.5-1.5), decode time 0.8x (band 0.9-1.2): E2E 0.25*2 + 0.75*0.8 = 1.1
    out = e2e_band.check(_checked((2.0, 0.5, 1.5), (0.8, 0.9, 1.2)), [view])
    row = out.iloc[0]
    assert row["ratio"] == pytest.approx(1.1) and (row["low"], row["high"]) == (0.5, 1.5)
    assert bool(row["inside"]) and row["source"] == "s1"
    # the same parts with a decode 1.6x: E2E 0.5 + 1.2 = 1.7, above the envelope
    out = e2e_band.check(_checked((2.0, 0.5, 1.5), (1.6, 0.9, 1.2)), [view])
    assert not bool(out.iloc[0]["inside"])
    cov = e2e_band.coverage(out)
    assert cov == {"points": 1.0, "sources": 1.0, "coverage": 0.0}


def test_a_block_whose_parts_were_not_held_out_is_left_out() -> None:
    view = e2e_band.View("e", "t", "missing", e2e_ms=1000.0, ttft_ms=250.0)
    out = e2e_band.check(_checked((1.0, 0.5, 1.5), (1.0, 0.9, 1.2)), [view])
    assert out.empty and e2e_band.coverage(out) == {}


def test_a_part_predicted_twice_leaves_its_block_out_and_sources_are_counted_apart() -> None:
    """The chip-out family holds ids predicted by two schemes with different ratios: a block with
    such a part has no one E2E ratio (`.loc` would give two rows); each source's share is said too."""
    twice = pd.concat(
        [_checked((1.0, 0.5, 1.5), (1.0, 0.9, 1.2)), _checked((1.0, 0.5, 1.5), (2.0, 0.9, 1.2))]
    )
    view = e2e_band.View("e", "t", "p", e2e_ms=1000.0, ttft_ms=250.0)
    assert e2e_band.check(twice.iloc[[0, 1, 3]], [view]).empty  # 'p' twice: left out, no error
    rows = pd.DataFrame(
        {
            "id": ["a", "b", "c"],
            "source": ["x: one", "x: one", "y: two"],
            "ratio": [1.0] * 3,
            "low": [0.9] * 3,
            "high": [1.1] * 3,
            "inside": [True, True, False],
        }
    )
    assert e2e_band.by_source(rows) == [("x: one", 2, 2), ("y: two", 0, 1)]
    said = e2e_band.line(rows)
    assert "holds 66.7% of 3 held-out mean E2Es (60%-76%: met); by source: one 2 of 2, two 0 of 1" in said
