"""`fengong replay` and `fengong calibrate FILE...`: benchmark results on the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engine.catalog.specs import HardwareSpec
from engine.cli import main as cli
from engine.core import safeparse

FIX = Path(__file__).resolve().parents[1] / "observe" / "fixtures"


def test_replay_prints_measured_simulated_and_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["replay", str(FIX / "vllm_bench_detailed.json"), "--hardware", "h100-sxm"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "replayed on 1x h100-sxm tp1 vllm, model llama-3.1-8b" in out[0]
    assert out[1].split() == ["figure", "stat", "unit", "measured", "simulated", "error"]
    assert any(ln.split()[:2] == ["tpot", "mean"] and ln.rstrip().endswith("%") for ln in out)


def test_replay_json_is_one_document(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "replay",
        str(FIX / "sglang_bench.jsonl"),
        "--hardware",
        "h200",
        "--model",
        "llama-3.1-8b",
        "--json",
    ]
    assert cli.main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "sglang-bench-jsonl" and doc["setup"]["concurrency"] == 8
    assert doc["deployment"]["hardware"] == "h200" and "model" in doc["unknown"]
    assert {r["figure"] for r in doc["comparison"]} >= {"ttft", "tpot", "e2e", "output_tok_s"}


def test_replay_two_prometheus_scrapes(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "replay",
        str(FIX / "vllm_metrics_t60.prom"),
        "--earlier",
        str(FIX / "vllm_metrics_t0.prom"),
        "--window-s",
        "60",
        "--hardware",
        "h100-sxm",
        "--json",
    ]
    assert cli.main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["setup"]["rate_rps"] == pytest.approx(4.0)
    # the percentiles say they come from buckets (a p50 ITL of 5.01 ms read as measured: a review)
    assert any("interpolated inside the histograms' buckets" in n for n in doc["notes"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--hardware", "h100-sxm", "--count", "0"], "--count: must be in [1, 512]"),
        (["--hardware", "not-a-chip"], "unknown hardware 'not-a-chip'"),
        (["--hardware", "h100-sxm", "--window-s", "nan"], "--window-s"),
        # one scrape's flag without the other's blamed the file ('states neither a request rate': a review)
        (["--hardware", "h100-sxm", "--window-s", "60"], "--window-s: a Prometheus scrape's rates need two"),
        (["--hardware", "h100-sxm", "--earlier", str(FIX / "vllm_metrics_t0.prom")], "give --window-s too"),
    ],
)
def test_replay_refuses_bad_flags(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["replay", str(FIX / "vllm_bench.json"), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_replay_refuses_a_file_of_no_known_format(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_text("hello\n")
    assert cli.main(["replay", str(f), "--hardware", "h100-sxm"]) == 2
    assert "not a benchmark result; accepted" in capsys.readouterr().err


def test_calibrate_files_then_replay_with_the_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "mine.toml"
    files = [
        str(FIX / f)
        for f in (
            "vllm_bench_detailed.json",
            "vllm_bench_detailed_rate8.json",
            "aiperf_profile_export_aiperf.json",
        )
    ]
    assert cli.main(["calibrate", *files, "--hardware", "h100-sxm", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "vllm_bench_detailed.json: 2 points; held-out median |error|" in err
    # figures with their unit, and the table said to be each file's replay at the fitted profile (a review)
    assert re.search(r"vllm_bench_detailed\.json:tpot +tpot c2 1031/64 +ms +[\d.]+ +[\d.]+ +[+-]", err), err
    assert "predicted: the simulator replaying each file's own requests with the fitted profile" in err
    entry = HardwareSpec.model_validate(safeparse.loads_toml(out.read_text(), "mine.toml"))
    assert entry.id == "h100-sxm-mine" and entry.default_profile == "mine"
    assert entry.profiles["mine"].source.startswith("user's own")
    argv = ["replay", files[0], "--hardware", "h100-sxm", "--profile-from", str(out), "--json"]
    assert cli.main(argv) == 0
    rows = {(r["figure"], r["stat"]): r for r in json.loads(capsys.readouterr().out)["comparison"]}
    # the replay reads what the fit's table said of the file (it read +10.5% on TPOT where the table said 0.0%)
    said = re.search(r"vllm_bench_detailed\.json:tpot +tpot c2 1031/64 +ms +[\d.]+ +([\d.]+)", err)
    assert said and rows[("tpot", "mean")]["simulated"] == pytest.approx(float(said.group(1)), rel=1e-3)


def test_calibrate_refuses_an_unwritable_out_before_it_fits(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The fit's table printed in full, then the destination was refused (a review); the README says
    a destination that cannot be written is refused before anything runs."""
    argv = ["calibrate", str(FIX / "vllm_bench_detailed.json"), "--hardware", "h100-sxm"]
    assert cli.main([*argv, "--out", str(tmp_path / "no-such-folder" / "mine.toml")]) == 2
    err = capsys.readouterr().err
    assert "--out " in err and "is not an existing folder" in err, err
    assert "held-out" not in err and "eta_compute" not in err  # nothing was fitted first


def test_calibrate_files_needs_the_hardware(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["calibrate", str(FIX / "vllm_bench.json")]) == 2
    assert "give --hardware" in capsys.readouterr().err


def test_a_file_without_its_load_takes_it_from_a_flag(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "replay",
        str(FIX / "aiperf_profile_export_aiperf.csv"),
        "--hardware",
        "h100-sxm",
        "--model",
        "llama-3.1-8b",
    ]
    assert cli.main(argv) == 2
    assert "give the one it ran at" in capsys.readouterr().err
    assert cli.main([*argv, "--concurrency", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["setup"]["concurrency"] == 4


def test_a_replay_refuses_a_load_its_file_states_and_says_the_one_it_was_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`replay vllm_bench.json --rate 10` replayed the file's two clients and said nothing; a load given
    to a file without one was said to be 'given with the file' (a review)."""
    base = ["replay", "--hardware", "h100-sxm"]
    assert cli.main([*base, str(FIX / "vllm_bench.json"), "--rate", "10"]) == 2
    assert "--rate: " in capsys.readouterr().err
    assert cli.main([*base, str(FIX / "vllm_metrics_t60.prom"), "--rate", "4"]) == 0
    said = capsys.readouterr()
    assert "note: the load replayed is the one given (4 req/s): the file states none" in said.out + said.err


def test_calibrate_from_benchmark_files_checks_the_entry_as_a_csv_does(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A shipped id and a bad name passed a benchmark file's fit (a CSV's were refused), and its bands were
    printed as the model's miss, the other way round from run's (a review)."""
    base = ["calibrate", str(FIX / "vllm_bench_detailed.json"), "--hardware", "h100-sxm"]
    assert cli.main([*base, "--new-id", "h100-sxm", "--out", str(tmp_path / "x.toml")]) == 2
    assert "--new-id: 'h100-sxm' is a shipped chip's id" in capsys.readouterr().err
    assert not (tmp_path / "x.toml").exists()
    assert cli.main([*base, "--profile", "bad name!"]) == 2
    assert "--profile: the entry's id 'h100-sxm-bad name!' must be lowercase" in capsys.readouterr().err
    from engine.cli.entries import landing

    assert landing(0.909, 0.993) == "+0.7% to +10.0%"  # the model 9.1% to 0.7% low: measured lands above


def test_a_files_stack_is_the_one_it_names_unless_stack_says_otherwise(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An SGLang benchmark was fitted and replayed as vLLM unless --stack said otherwise, and its profile
    stored as vLLM's (a review): a vLLM or SGLang file's own stack is the default, an AIPerf file's (any
    server) vLLM, said, and files from two stacks need --stack."""
    from engine.cli.main import main

    sglang = str(FIX / "sglang_bench_printed.txt")
    assert main(["replay", sglang, "--hardware", "h100-sxm"]) == 0
    assert "replayed on 1x h100-sxm tp1 sglang" in capsys.readouterr().out
    assert main(["replay", sglang, "--hardware", "h100-sxm", "--stack", "vllm"]) == 0
    assert "replayed on 1x h100-sxm tp1 vllm" in capsys.readouterr().out
    assert main(["replay", str(FIX / "aiperf_profile_export_aiperf.json"), "--hardware", "h100-sxm"]) == 0
    assert "the file names no serving stack: vLLM taken (give --stack)" in capsys.readouterr().err
    both = ["calibrate", sglang, str(FIX / "vllm_bench_detailed.json"), "--hardware", "h100-sxm"]
    assert main(both) == 2
    assert "--stack: the files come from sglang and vllm" in capsys.readouterr().err
