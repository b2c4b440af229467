"""Calibration from a user's own timings: the fit recovers known factors, a CSV becomes a catalog entry,
a bad CSV names its line and column."""

from __future__ import annotations

import csv
import re
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


def test_bad_user_csv_names_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
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
    # a row given twice (or an id): six copies fitted one row six times, a band of +0.0% to +0.0% (a review)
    row = {"model": "llama-3.1-8b", "hardware": "l40s", "tp": 1, "kind": "decode", "value": 20}
    _write(p, [{**row, "id": "a"}, {**row, "id": "b"}])
    with pytest.raises(ScenarioError, match="line 3: the same measurement as line 2"):
        measurements.read_measurements(p)
    _write(p, [{**row, "id": "a"}, {**row, "id": "a", "value": 21}])
    with pytest.raises(ScenarioError, match="line 3: its id 'a' as line 2"):
        measurements.read_measurements(p)
    # a tp the model's heads cannot split over, as a scenario refuses it (tp 3 of an 8B was fitted: a review)
    from engine.catalog.entries import load_catalog
    from engine.explain import report

    text = "model,hardware,tp,kind,prompt_tokens,value\nllama-3.1-8b,l40s,3,prefill,256,31\n"
    with pytest.raises(ScenarioError, match="line 2: tp: 3 tensor-parallel ranks cannot share"):
        report.parse_measurements(text, "tp.csv", load_catalog())
    # a column named twice: DictReader kept the last copy, and a fit took every row at 5.0 (a review)
    p.write_text("model,hardware,tp,kind,value,value\nllama-3.1-8b,l40s,1,decode,20,5.0\n")
    with pytest.raises(ScenarioError, match="value named twice"):
        measurements.read_measurements(p)
    # a file over the limit is refused by its own size (it read the 1,048,577 bytes read of 5.6 MB: a review)
    from engine.cli.main import main
    from engine.explain.report import MAX_MEASUREMENT_BYTES

    p.write_bytes(b"x" * (3 * MAX_MEASUREMENT_BYTES))
    assert main(["calibrate", str(p), "--hardware", "l40s"]) == 2
    assert f"bad.csv: {3 * MAX_MEASUREMENT_BYTES:,} bytes; the limit is " in capsys.readouterr().err


def test_a_csv_fit_is_marked_the_users_own_under_its_stack(catalog: Catalog) -> None:
    from engine.calibration import trust
    from engine.explain import report

    points = report.parse_measurements(
        report.example_measurements_csv(catalog).encode(), "bench.csv", catalog
    )
    rec = report.recalibrate(points, catalog, "l40s", "mine", "bench.csv", stack="sglang")
    prof = rec.profile
    assert prof.source == "user's own: fitted to 9 measurements in bench.csv" and prof.stack == "sglang"
    # nine points held out one by one: three or more per figure give each its band, around the truth
    assert prof.band is not None and set(prof.band) == {"ttft", "tpot"}
    assert all(0.8 < lo <= hi < 1.2 for lo, hi in prof.band.values())
    cat = Catalog(hardware={**catalog.hardware, rec.entry.id: rec.entry}, models=catalog.models)
    _, under_it = trust.calibration(cat.chip("l40s-mine"), "sglang", cat, custom=True)
    assert under_it.basis == "own" and under_it.mark == "calibrated"
    assert under_it.band == {**trust.bands_for("l40s-mine", "sglang", "fitted"), **prof.band}
    _, other = trust.calibration(cat.chip("l40s-mine"), "vllm", cat, custom=True)
    assert other.basis == "other_stack" and other.mark == "uncalibrated"
    one = report.recalibrate(points[:1], catalog, "l40s", "mine", "bench.csv", stack="sglang")
    assert one.profile.band is None and one.profile.stack == "sglang"  # no held-out error at all


def test_the_cli_csv_fit_writes_the_own_mark(tmp_path: Path, catalog: Catalog) -> None:
    import tomllib

    from engine.explain import report

    csv_path = tmp_path / "mine.csv"
    csv_path.write_text(report.example_measurements_csv(catalog))
    out = tmp_path / "l40s-mine.toml"
    argv = ["calibrate", str(csv_path), "--hardware", "l40s", "--stack", "trtllm", "--out", str(out)]
    assert main(argv) == 0
    prof = tomllib.loads(out.read_text())["profiles"]["mine"]
    assert prof["source"].startswith("user's own: fitted to 9 measurements in mine.csv")
    assert prof["stack"] == "trtllm" and set(prof["band"]) == {"ttft", "tpot"}


def test_a_csv_states_its_units_and_the_entry_its_own_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A timing of 30 in 'seconds' was read as 30 ms; rows of other chips were dropped unsaid; --new-id
    h100-sxm wrote an L40S fit under the H100's name, and a bad --profile died in a traceback after the
    fit (a review)."""
    p = tmp_path / "units.csv"
    row = {"model": "llama-3.1-8b", "hardware": "l40s", "tp": 1, "kind": "prefill", "prompt_tokens": 512}
    _write(p, [{**row, "value": 0.04, "unit": "s"}, {**row, "value": 40, "unit": "ms", "prompt_tokens": 513},
               {**row, "value": 40, "prompt_tokens": 514}])  # fmt: skip
    assert [m.value for m in measurements.read_measurements(p)] == [40.0, 40.0, 40.0]
    assert {m.unit for m in measurements.read_measurements(p)} == {"ms"}
    _write(p, [{**row, "value": 30, "unit": "seconds"}])
    with pytest.raises(ScenarioError, match=r"line 2: unit: a prefill timing's is ms or s \(got 'seconds'\)"):
        measurements.read_measurements(p)
    _write(p, [{**row, "kind": "throughput", "output_tokens": 128, "value": 900, "unit": "req/s"}])
    with pytest.raises(ScenarioError, match=r"unit: a throughput's is tok/s"):
        measurements.read_measurements(p)
    from engine.catalog.entries import load_catalog
    from engine.explain import report

    mixed = tmp_path / "mixed.csv"
    text = report.example_measurements_csv(load_catalog())
    lines = text.splitlines()
    mixed.write_text("\n".join([*lines, lines[1].replace("l40s", "h100-sxm")]) + "\n")
    assert main(["calibrate", str(mixed), "--hardware", "l40s", "--out", str(tmp_path / "x.toml")]) == 0
    err = capsys.readouterr().err
    assert "set aside 1 row of other chips (h100-sxm)" in err
    # its band as a run prints it, where measured figures land around the model's (it printed the model's
    # miss, 'tpot -9.1% to -0.7%', where `run` read 'TPOT +1% to +10%' for the same profile: a review)
    import re
    import tomllib

    band = re.search(r"as a run shows it\): tpot ([+-][\d.]+)% to ([+-][\d.]+)%", err.replace("−", "-"))
    lo, hi = tomllib.loads((tmp_path / "x.toml").read_text())["profiles"]["mine"]["band"]["tpot"]
    assert band is not None, err
    assert (float(band.group(1)), float(band.group(2))) == (
        round(100 * (1 / hi - 1), 1),
        round(100 * (1 / lo - 1), 1),
    )
    for flags, said in (
        (["--new-id", "h100-sxm"], "--new-id: 'h100-sxm' is a shipped chip's id"),
        (["--profile", "bad name!"], "--profile: the entry's id 'l40s-bad name!' must be lowercase"),
    ):
        assert main(["calibrate", str(mixed), "--hardware", "l40s", *flags]) == 2
        assert said in capsys.readouterr().err
    assert main(["import-model", str(tmp_path / "none.json"), "--id", "llama-3.1-70b"]) == 2
    assert "--id: 'llama-3.1-70b' is a shipped model's id" in capsys.readouterr().err


def test_calibrates_table_reads_the_measured_as_given_and_signs_as_every_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """'1675.00' stood beside a predicted '1,605', and errors read '-3.8%' where every band reads '−' (a CLI
    review)."""
    from engine.cli.main import main

    csv = Path(__file__).resolve().parents[2] / "docs" / "examples" / "l40s-timings.csv"
    assert main(["calibrate", str(csv), "--hardware", "l40s", "--out", str(tmp_path / "x.toml")]) == 0
    err = capsys.readouterr().err
    row = next(ln for ln in err.splitlines() if "offline 1000/1000" in ln)
    assert re.search(r" 1,675 +1,6\d\d tok/s +[+−]\d", row), row
    table = err.split("l40s/mine:")[0]
    assert "−" in table and not re.search(r" -\d", table), table
