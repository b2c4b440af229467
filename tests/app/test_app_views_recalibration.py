"""Recalibration from a user's measurements (the About page): the example file fits back to its
profile, bad files name their line and column, and what cannot be fitted is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.calibration import measurements
from engine.catalog.entries import Catalog
from engine.core.errors import ScenarioError
from engine.explain import report


def test_example_measurements_fit_back_to_their_profile(catalog: Catalog, tmp_path: Path) -> None:
    import tomllib

    from engine.catalog.specs import HardwareSpec
    from engine.cli.main import main

    assert list(report.MEASUREMENT_COLUMN_HELP) == list(measurements.MEASUREMENT_COLUMNS)
    text = report.example_measurements_csv(catalog)
    assert text.splitlines()[0] == ",".join(measurements.MEASUREMENT_COLUMNS)
    points = report.parse_measurements(text.encode(), "bench.csv", catalog)
    assert {m.kind for m in points} == {"prefill", "decode", "throughput"}
    assert {m.hardware for m in points} == {"l40s"} and {m.model for m in points} == {"llama-3.1-8b"}
    rec = report.recalibrate(points, catalog, "l40s", "vllm", "bench.csv")
    truth = report.EXAMPLE_PROFILE
    assert rec.profile.eta_compute == pytest.approx(truth.eta_compute, abs=0.05)
    assert rec.profile.eta_bandwidth == pytest.approx(truth.eta_bandwidth, abs=0.08)
    # the overhead is stated per 80 layers: what this 32-layer model pays is within 3 ms of the truth
    scale = catalog.model("llama-3.1-8b").layers / 80
    assert rec.profile.overhead_ms * scale == pytest.approx(truth.overhead_ms * scale, abs=3.0)
    assert rec.fit.worst_abs_error < 0.06
    assert list(rec.fit.table["measured"]) == [m.value for m in points]
    # the entry: the chip under a new id, the fitted profile its default, the old profiles kept
    assert rec.entry.id == "l40s-vllm" and rec.entry.default_profile == "vllm"
    assert rec.entry.profiles["vllm"] == rec.profile
    assert set(catalog.chip("l40s").profiles) < set(rec.entry.profiles)
    assert HardwareSpec.model_validate(tomllib.loads(rec.toml)) == rec.entry
    # ... exactly what `python -m engine calibrate` writes for the same file
    src, out = tmp_path / "bench.csv", tmp_path / "out.toml"
    src.write_text(text, encoding="utf-8")
    assert main(["calibrate", str(src), "--hardware", "l40s", "--profile", "vllm", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == rec.toml


HEADER = "id,model,hardware,tp,kind,prompt_tokens,output_tokens,batch,context_tokens,value\n"
OK_ROW = "p1,llama-3.1-8b,l40s,1,prefill,512,,,,40\n"


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (HEADER + OK_ROW + "p2,llama-3.1-8b,l40s,one,decode,,,8,2048,30\n", "line 3: tp: 'one' is not a whole number"),
        (HEADER + "p1,llama-3.1-8b,l40s,1,decode,,,8,2048,fast\n", "line 2: value: 'fast' is not a number"),
        (HEADER + "p1,llama-3.1-8b,l40s,1,decode,,,8,2048,-3\n", "line 2: value: must be above 0 and at most 1,000,000,000"),
        (HEADER + "p1,llama-3.1-8b,l40s,1,decoding,,,8,2048,3\n", "line 2: kind: 'decoding' is not prefill"),
        (HEADER + "p1,llama-3.1-8b,l40s,1,prefill,,,,,40\n", "line 2: prompt_tokens: a prefill point needs it"),
        (HEADER + "p1,llama-3.1-8b,l40s,1,throughput,1000,,,,900\n", "line 2: output_tokens: a throughput point needs it"),
        (HEADER + "p1,llama-3.1-8b,l40s,0,prefill,512,,,,40\n", "line 2: tp: must be from 1"),
        (HEADER + "p1,llama-3.1-8b,l40s\n", "line 2: tp: missing"),
        (HEADER + OK_ROW.rstrip() + ",extra\n", "line 2: more fields than columns"),
        (HEADER + "p1,llama-9,l40s,1,prefill,512,,,,40\n", "line 2: model: 'llama-9' is not in the catalog"),
        (HEADER + "p1,llama-3.1-8b,warp-core,1,prefill,512,,,,40\n", "line 2: hardware: 'warp-core' is not in the catalog"),
        (HEADER.replace("context_tokens", "contxt_tokens") + OK_ROW, "line 1: unknown column(s) 'contxt_tokens'"),
        ("model,hardware,tp,value\n", "missing column(s) kind"),
        ("", "empty"),
        (b"\xff\xfe\x00\x01", "not UTF-8"),
        (b"x" * (report.MAX_MEASUREMENT_BYTES + 1), "the limit is"),
    ],
)  # fmt: skip
def test_bad_measurements_name_the_line_and_column(
    catalog: Catalog, content: str | bytes, words: str
) -> None:
    with pytest.raises(ScenarioError) as err:
        report.parse_measurements(
            content.encode() if isinstance(content, str) else content, "mine.csv", catalog
        )
    message = str(err.value)
    assert message.startswith("mine.csv") and words in message, message
    assert "fengong-measurements" not in message  # the upload's name, not the temporary file's


def test_recalibrate_refuses_what_it_cannot_fit(catalog: Catalog) -> None:
    points = report.parse_measurements(report.example_measurements_csv(catalog), "bench.csv", catalog)
    assert all(m.source.startswith("example:") for m in points)
    with pytest.raises(ScenarioError, match="profile: 'My Stack'"):
        report.recalibrate(points, catalog, "l40s", "My Stack")
    with pytest.raises(ScenarioError, match=r"no measurements of 'h100-sxm' in bench.csv \(it has: l40s\)"):
        report.recalibrate(points, catalog, "h100-sxm", "mine", "bench.csv")
    many = (points * 8)[: report.MAX_FIT_POINTS + 1]
    with pytest.raises(ScenarioError, match=f"at most {report.MAX_FIT_POINTS}"):
        report.recalibrate(many, catalog, "l40s", "mine")
    unnamed = report.parse_measurements(HEADER + OK_ROW.replace("p1,", ",", 1), "x.csv")
    assert unnamed[0].id == "line2" and unnamed[0].source == "x.csv"
