"""Calibration from a user's own timings: the fit recovers known factors, a CSV becomes a catalog entry,
a bad CSV names its line and column."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from engine.calibration import calibrate, measurements, predictor
from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile
from engine.cli.main import main
from engine.core.errors import ScenarioError


def test_fit_recovers_known_factors(catalog: Catalog) -> None:
    truth = CalibrationProfile(eta_compute=0.55, eta_bandwidth=0.7, overhead_ms=4.0, source="truth")
    setups = [dict(kind="prefill", prompt_tokens=q) for q in (256, 1024, 4096, 16384)] + [
        dict(kind="decode", batch=b, context_tokens=c) for b in (1, 32, 256) for c in (512, 8192)
    ]
    pts = []
    for i, s in enumerate(setups):
        m = measurements.Measurement(
            id=f"p{i}",
            model="llama-3.1-8b",
            hardware="h100-sxm",
            tp=1,
            weights="bf16",
            kv="bf16",
            value=1.0,
            unit="ms",
            **s,
        )  # type: ignore[arg-type]
        pts.append(measurements.Measurement(**{**m.__dict__, "value": predictor.predict(m, catalog, truth)}))
    f = calibrate.fit(pts, catalog, "test fit")
    assert f.profile.eta_compute == pytest.approx(0.55, rel=0.03)
    assert f.profile.eta_bandwidth == pytest.approx(0.7, rel=0.03)
    assert f.profile.overhead_ms == pytest.approx(4.0, abs=0.3)
    assert f.worst_abs_error < 0.01


def _write(path: Path, rows: list[dict[str, object]]) -> None:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(measurements.MEASUREMENT_COLUMNS))
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in measurements.MEASUREMENT_COLUMNS})


def test_user_csv_to_catalog_entry(tmp_path: Path, catalog: Catalog) -> None:
    rows: list[dict[str, object]] = [
        {
            "model": "llama-3.1-8b",
            "hardware": "l40s",
            "tp": 1,
            "kind": "prefill",
            "prompt_tokens": q,
            "value": v,
        }
        for q, v in ((512, 40), (2048, 150), (8192, 700))
    ] + [
        {
            "model": "llama-3.1-8b",
            "hardware": "l40s",
            "tp": 1,
            "kind": "decode",
            "batch": b,
            "context_tokens": 1024,
            "value": v,
        }
        for b, v in ((1, 45), (16, 48), (64, 60))
    ]
    csv_path = tmp_path / "mine.csv"
    _write(csv_path, rows)
    out = tmp_path / "l40s-mine.toml"
    assert (
        main(["calibrate", str(csv_path), "--hardware", "l40s", "--profile", "mine", "--out", str(out)]) == 0
    )
    text = out.read_text()
    assert 'id = "l40s-mine"' in text and 'default_profile = "mine"' in text


def test_bad_user_csv_names_line_and_column(tmp_path: Path) -> None:
    p = tmp_path / "bad.csv"
    _write(p, [{"model": "llama-3.1-8b", "hardware": "l40s", "tp": 1, "kind": "decode", "value": "fast"}])
    with pytest.raises(ScenarioError, match=r"line 2: .*fast"):
        measurements.read_measurements(p)
    _write(p, [{"model": "m", "hardware": "l40s", "tp": 1, "kind": "warmup", "value": 3}])
    with pytest.raises(ScenarioError, match=r"line 2: kind: 'warmup'"):
        measurements.read_measurements(p)
    p.write_text("a,b\n1,2\n")
    with pytest.raises(ScenarioError, match="missing column"):
        measurements.read_measurements(p)
