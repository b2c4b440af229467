"""Calibration: shipped profiles are reproducible from the reference data, and the fit works."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile
from engine.cli.main import main
from engine.core.errors import ScenarioError
from engine.costmodel import calibrate

REF = calibrate.reference_csv() or Path("/nonexistent")


def test_reference_data_ships_with_the_project() -> None:
    """make validate and the refit need no folder outside the repository."""
    assert REF.is_file() and REF.is_relative_to(Path(calibrate.__file__).resolve().parents[2])


@pytest.fixture(scope="module")
def points() -> list[calibrate.Measurement]:
    return calibrate.read_reference_csv(REF)


def test_reference_file_read_unchanged(points: list[calibrate.Measurement]) -> None:
    assert len(points) == 31
    kinds = {p.kind for p in points}
    assert kinds == {"prefill", "decode", "throughput"}
    h082 = next(p for p in points if p.id == "H082")
    assert (h082.kind, h082.batch, h082.context_tokens, h082.value) == ("decode", 1, 512, 29.76)


def test_shipped_profiles_equal_a_fresh_fit(points: list[calibrate.Measurement], catalog: Catalog) -> None:
    fits = calibrate.reference_fits(points, catalog)
    assert {("h100-sxm", "trtllm"), ("h100-sxm", "splitwise"), ("a100-80g", "splitwise")} <= set(fits)
    for (chip, stack), f in fits.items():
        shipped = catalog.chip(chip).profiles[stack]
        assert shipped.eta_compute == pytest.approx(f.profile.eta_compute, abs=0.002), (chip, stack)
        assert shipped.eta_bandwidth == pytest.approx(f.profile.eta_bandwidth, abs=0.002), (chip, stack)
        assert shipped.overhead_ms == pytest.approx(f.profile.overhead_ms, abs=0.02), (chip, stack)


def test_fit_quality_is_what_the_docs_state(points: list[calibrate.Measurement], catalog: Catalog) -> None:
    tab = calibrate.table(points, catalog)
    thr = tab[(tab["kind"] == "throughput") & (tab["profile"] == "trtllm")]
    assert thr["abs_error"].median() < 0.12
    dense = thr[~thr["setup"].str.startswith("qwen3")]
    assert dense["abs_error"].max() < 0.30
    # MoE is known to be optimistic (expert imbalance and all-to-all are not modelled)
    moe = thr[thr["setup"].str.startswith("qwen3")]
    assert (moe["error"] > 0).all()
    split = tab[tab["profile"] == "splitwise"]
    assert split["abs_error"].median() < 0.25


def test_fit_recovers_known_factors(catalog: Catalog) -> None:
    truth = CalibrationProfile(eta_compute=0.55, eta_bandwidth=0.7, overhead_ms=4.0, source="truth")
    setups = [dict(kind="prefill", prompt_tokens=q) for q in (256, 1024, 4096, 16384)] + [
        dict(kind="decode", batch=b, context_tokens=c) for b in (1, 32, 256) for c in (512, 8192)
    ]
    pts = []
    for i, s in enumerate(setups):
        m = calibrate.Measurement(
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
        pts.append(calibrate.Measurement(**{**m.__dict__, "value": calibrate.predict(m, catalog, truth)}))
    f = calibrate.fit(pts, catalog, "test fit")
    assert f.profile.eta_compute == pytest.approx(0.55, rel=0.03)
    assert f.profile.eta_bandwidth == pytest.approx(0.7, rel=0.03)
    assert f.profile.overhead_ms == pytest.approx(4.0, abs=0.3)
    assert f.worst_abs_error < 0.01


def _write(path: Path, rows: list[dict[str, object]]) -> None:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(calibrate.MEASUREMENT_COLUMNS))
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in calibrate.MEASUREMENT_COLUMNS})


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
        calibrate.read_measurements(p)
    _write(p, [{"model": "m", "hardware": "l40s", "tp": 1, "kind": "warmup", "value": 3}])
    with pytest.raises(ScenarioError, match=r"line 2: kind: 'warmup'"):
        calibrate.read_measurements(p)
    p.write_text("a,b\n1,2\n")
    with pytest.raises(ScenarioError, match="missing column"):
        calibrate.read_measurements(p)
