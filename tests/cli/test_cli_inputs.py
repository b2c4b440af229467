"""The command line's loose ends from a newcomer's first hour and the hostile-input campaign.

Replications write their files and are bounded; destinations are checked before the work and
results survive a failed write; every number a flag takes has a range named in its refusal; the
planner's frontier holds passing deployments only; chips show their calibration; the module
entry outside the virtual environment says how to get in; `make run` takes a port.
"""

from __future__ import annotations

import errno
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from engine.cli import main as cli
from engine.cli import plan as cli_plan
from engine.cli import run as cli_run
from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.planning import plan as planning
from engine.planning import sweep as sweeping
from engine.planning.candidates import SearchSpace
from engine.planning.plan import plan
from engine.scenario import codec as io
from engine.scenario.model import Deployment
from engine.serving.run import replicate

ROOT = Path(__file__).resolve().parents[2]
SHORT = ["--set", "duration_s=5"]


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The CLI's message for `argv`, which must exit 2 (bad input) without a traceback."""
    assert cli.main(argv) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("n", ["0", "-3", "1000", str(10**23)])
def test_replications_outside_their_range_are_refused(n: str, capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(["run", "chat-colocated", *SHORT, "--replications", n], capsys)
    assert f"--replications: must be in [1, {bounds.MAX_REPLICATIONS}]" in err, err
    with pytest.raises(ScenarioError, match="replications: a whole number from 1 to"):
        replicate(io.load_preset("chat-colocated"), int(n))
    assert f"| replications | {bounds.MAX_REPLICATIONS} |" in (ROOT / "docs" / "bounds.md").read_text()


def test_run_with_replications_writes_each_replication_and_the_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "reps"
    assert cli.main(["run", "chat-colocated", *SHORT, "--replications", "2", "--out", str(out)]) == 0
    assert "replications.json" in capsys.readouterr().out
    for seed in (1, 2):
        files = {p.name for p in (out / f"seed-{seed}").iterdir()}
        assert files == {"requests.csv", "timeseries.csv", "summary.json", "scenario.toml"}
        assert json.loads((out / f"seed-{seed}" / "summary.json").read_text())["scenario"]["seed"] == seed
    doc = json.loads((out / "replications.json").read_text())
    assert doc["seeds"] == [1, 2] and doc["stats"]["slo_attainment"]["n"] == 2


def _no_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("ran before checking where its results go")

    monkeypatch.setattr(cli_run, "simulate", boom)
    monkeypatch.setattr(cli_run, "replicate", boom)
    monkeypatch.setattr(sweeping, "sweep", boom)
    monkeypatch.setattr(planning, "plan", boom)


def test_an_unwritable_destination_is_refused_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_runs(monkeypatch)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    sweep = [
        "sweep",
        "chat-colocated",
        "--vary",
        "workload.arrival.rate_rps=4,5",
        "--workers",
        "1",
        "--no-progress",
        "--out",
    ]
    assert "a-file is not an existing folder" in refused([*sweep, str(a_file / "out.parquet")], capsys)
    # a --set of a field --vary also sets ran the --vary's values, the --set dropped unsaid (a review)
    both = [*sweep, str(tmp_path / "out.parquet"), "--set", "workload.arrival.rate_rps=50"]
    assert "--set workload.arrival.rate_rps: overlaps --vary workload.arrival.rate_rps" in refused(
        both, capsys
    )
    # a table holding the varied field, and a --set emptying a table a --set before it changed (each dropped
    # the other's value, unsaid: a review)
    table = [
        *sweep,
        str(tmp_path / "out.parquet"),
        "--set",
        "workload.arrival={kind = 'poisson', rate_rps = 5.0}",
    ]
    assert "overlaps --vary workload.arrival.rate_rps" in refused(table, capsys)
    # two --vary of a table and a field in it were combined unsaid; 'pools[00]' and 'pools[0]' are one field
    twice = [
        *sweep,
        str(tmp_path / "out.parquet"),
        "--vary",
        "workload.arrival={kind = 'poisson', rate_rps = 5.0}",
    ]
    assert "--vary workload.arrival.rate_rps: overlaps --vary workload.arrival" in refused(twice, capsys)
    one = [
        "scenario",
        "chat-colocated",
        "--set",
        "deployment.pools[00].count=2",
        "--set",
        "deployment.pools[0].count=3",
    ]
    assert "given twice" in refused(one, capsys)
    emptied = [
        "scenario",
        "chat-colocated",
        "--set",
        "cost.usd_per_hour.h100-sxm=3",
        "--set",
        "cost.usd_per_hour={}",
    ]
    assert "--set cost.usd_per_hour: overlaps --set cost.usd_per_hour.h100-sxm" in refused(emptied, capsys)
    assert "is a folder; name a file" in refused([*sweep, str(tmp_path)], capsys)
    assert "is not an existing folder" in refused([*sweep, str(tmp_path / "no" / "out.csv")], capsys)
    for extra in ([], ["--replications", "2"]):
        assert "cannot write there" in refused(
            ["run", "chat-colocated", *extra, "--out", str(a_file / "d")], capsys
        )
    plan = ["plan", "chat-colocated", "--target-rps", "4", "--no-progress", "--out"]
    assert "is not an existing folder" in refused([*plan, str(a_file / "best.toml")], capsys)
    assert not list(tmp_path.glob("no*"))


def test_a_sweep_whose_write_fails_keeps_its_results_and_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = sweeping.write
    calls: list[str] = []

    def full_disk_once(frame: Any, path: str) -> None:
        calls.append(path)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(frame, path)

    monkeypatch.setattr(sweeping, "write", full_disk_once)
    out = tmp_path / "out.csv"
    err = refused(
        [
            "sweep",
            "chat-colocated",
            *SHORT,
            "--vary",
            "workload.arrival.rate_rps=4,5",
            "--workers",
            "1",
            "--no-progress",
            "--out",
            str(out),
        ],
        capsys,
    )
    assert "No space left on device" in err and "the results are kept in " in err, err
    kept = Path(err.split("the results are kept in ")[1].strip())
    try:
        assert kept.suffix == ".csv" and len(kept.read_text().splitlines()) == 3  # a header and two runs
    finally:
        kept.unlink()


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["capacity", "chat-colocated", "--duration-s", "5"], "--duration-s: must be in [10, 86400]"),
        (["capacity", "chat-colocated", "--duration-s", "nan"], "--duration-s"),
        (
            ["plan", "chat-colocated", "--target-rps", "10", "--budget-usd-per-hour", "inf"],
            "--budget-usd-per-hour",
        ),
        (
            ["plan", "chat-colocated", "--target-rps", "10", "--budget-usd-per-hour", "0"],
            "--budget-usd-per-hour",
        ),
        (["plan", "chat-colocated", "--target-rps", "inf"], "--target-rps"),
        # the scenario's own least rate (0.00005 passed, then was refused as workload.arrival.rate_rps)
        (["plan", "chat-colocated", "--target-rps", "0.00005"], "--target-rps: must be in [0.0001, 5000]"),
        (["plan", "chat-colocated", "--target-rps", "10", "--finalists", "-1"], "--finalists: must be in"),
        (["plan", "chat-colocated", "--target-rps", "10", "--duration-s", "1e-320"], "--duration-s"),
        (
            ["capacity", "chat-colocated", "--rule", "attainment", "--attainment", "nan"],
            "attainment: a share of requests in (0, 1]",
        ),
    ],
)
def test_planning_flags_outside_their_ranges_are_refused_naming_the_flag(
    argv: list[str], flag: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_runs(monkeypatch)
    assert flag in refused(argv, capsys)


def test_an_infinite_budget_is_no_budget_nowhere() -> None:
    with pytest.raises(
        ScenarioError, match=r"space\.budget_usd_per_hour: must be in \(0, 10,000,000\] \(got inf\)"
    ):
        SearchSpace(budget_usd_per_hour=float("inf"))
    # each field by itself, its value said ('space.finalists: must be in [0, 50]; space.frontier_extra in
    # [0, 10]' whichever was off, and '(got (0,))': a review)
    with pytest.raises(ScenarioError, match=r"^space\.finalists: must be in \[0, 50\] \(got -1\)$"):
        SearchSpace(finalists=-1)
    with pytest.raises(ScenarioError, match=r"^space\.frontier_extra: must be in \[0, 10\] \(got 11\)$"):
        SearchSpace(frontier_extra=11)
    with pytest.raises(ScenarioError, match=r"space\.tp: each must be in \[1, \d+\] \(got 0, 2\)$"):
        SearchSpace(tp=(0, 2))


def test_the_planners_frontier_leaves_failing_deployments_off(capsys: pytest.CaptureFixture[str]) -> None:
    s = io.apply_overrides(io.load_preset("chat-colocated"), {"duration_s": 60.0})
    space = SearchSpace(hardware=("h100-sxm",), tp=(2,), duration_s=30.0, finalists=1, frontier_extra=1)
    p = plan(s, 24.0, space)
    failing = p.frontier_cost[~p.frontier_cost["passes"].astype(bool)]
    assert len(failing), "the plan's own frontier (over every run) should hold a failing run to leave off"
    cli_plan.print_plan(p)
    text = capsys.readouterr().out
    frontier = text.split("cost against goodput")[1]
    for r in failing.itertuples():
        assert f" {r.split:>9} {r.usd_per_hour:9.2f} " not in frontier, (r.split, frontier)
    assert "False" not in frontier
    assert f"{p.runs.iloc[p.best_run]['usd_per_hour']:9.2f}" in frontier


def test_the_catalog_shows_each_chips_calibration(capsys: pytest.CaptureFixture[str]) -> None:
    from engine.cli.catalog import STACKS

    assert set(STACKS) == set(Deployment.model_fields["stack"].annotation.__args__)
    assert cli.main(["catalog"]) == 0
    lines = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines() if ln.strip()}
    assert "calibration under vLLM" in lines["hardware"]
    assert re.search(r"calibrated \(throughput −\d+% to \+\d+%, TPOT [^)]+\)$", lines["h100-sxm"].rstrip())
    assert "uncalibrated: " in lines["l40s"]
    assert cli.main(["catalog", "--json", "--stack", "trtllm"]) == 0
    chips = {h["id"]: h["calibration"] for h in json.loads(capsys.readouterr().out)["hardware"]}
    assert chips["h100-sxm"]["stack"] == "trtllm" and chips["h100-sxm"]["calibrated"] is True
    assert chips["mi300x"]["calibrated"] is False  # TensorRT-LLM runs NVIDIA GPUs only
    assert chips["h100-sxm"]["median_miss"]["throughput"] > 0 and "throughput" in chips["h100-sxm"]["bands"]


def test_advises_roofline_table_shows_each_chips_calibration(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["advise", "chat-colocated", *SHORT, "--hardware", "h100-sxm,l40s"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.startswith(("h100-sxm ", "l40s "))]
    assert rows and all(("uncalibrated −" in r) == r.startswith("l40s") for r in rows), rows
    assert "calibration" in out.split("\n\n")[1].splitlines()[1]
    assert cli.main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["hardware"]: r["calibration"] for r in doc["roofline"]}["h100-sxm"].startswith("calibrated −")


def test_calibrate_prints_errors_as_percentages(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    csv = ROOT / "docs" / "examples" / "l40s-timings.csv"
    argv = ["calibrate", str(csv), "--hardware", "l40s", "--out", str(tmp_path / "x.toml")]
    assert cli.main(argv) == 0
    table = capsys.readouterr().err.splitlines()
    assert table[0].split()[-1] == "error"
    assert all(ln.split()[-1].endswith("%") for ln in table[1:-1]), table
    # written under another name than its id: where a catalog directory takes it (a review)
    entry_id = tomllib.loads((tmp_path / "x.toml").read_text())["id"]
    assert table[-1].endswith(
        f"x.toml (entry {entry_id}: in a FENGONG_CATALOG directory it goes as hardware/{entry_id}.toml)"
    ), table[-1]
    assert cli.main([*argv[:-1], str(tmp_path / f"{entry_id}.toml")]) == 0
    assert capsys.readouterr().err.splitlines()[-1].endswith(f"{entry_id}.toml")


def test_progress_bars_stay_off_a_stderr_that_is_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    """A plan's output sent to a log file got hundreds of kilobytes of redrawn progress bars."""
    from engine.cli.common import ProgressBar

    bar = ProgressBar(10, "planning", True)  # pytest's captured stderr is no terminal
    for i in range(10):
        bar.plan(i, 10, f"run {i}")
    bar.close()
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("ref", ["missing.toml", "nowhere/chat.toml", "gone.JSON"])
def test_a_missing_scenario_file_is_said_missing_not_an_unknown_preset(
    ref: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A typo in a path listed every preset's name, sending the user among presets (a review)."""
    assert not Path(ref).exists()
    err = refused(["run", ref, *SHORT], capsys)
    assert "cannot read (No such file or directory)" in err and "unknown preset" not in err, err
    err = refused(["run", "no-such-preset", *SHORT], capsys)
    assert "unknown preset 'no-such-preset'; known: " in err, err  # a bare name is still a preset's


@pytest.mark.parametrize("command", ["sweep", "plan"])
def test_a_dask_scheduler_that_does_not_answer_is_a_clear_refusal(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--dask` at a dead port or a malformed address ended in Dask's traceback (exit 1), where the
    README promises a message and exit 2 for bad input (a review of the CLI)."""
    monkeypatch.setattr(cli_plan, "DASK_TIMEOUT_S", 1)
    tail = (
        ["--vary", "workload.arrival.rate_rps=8", "--out", str(tmp_path / "s.csv")]
        if command == "sweep"
        else ["--target-rps", "8"]
    )
    err = refused([command, "chat-colocated", *SHORT, *tail, "--dask", "tcp://127.0.0.1:1"], capsys)
    assert "--dask 'tcp://127.0.0.1:1': no Dask scheduler answered there within 1 s" in err, err
    assert "Traceback" not in err
    err = refused([command, "chat-colocated", *SHORT, *tail, "--dask", "notanaddress"], capsys)
    assert "--dask 'notanaddress': not a scheduler's address (" in err and "tcp://HOST:PORT" in err, err


def test_a_table_format_without_a_destination_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """`run --format parquet` without --out printed the summary and wrote nothing, silently (a review)."""
    err = refused(["run", "chat-colocated", *SHORT, "--format", "parquet"], capsys)
    assert "--format parquet: applies to the tables --out writes; give --out DIR" in err, err


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (
            ["--tp", "3"],
            "--tp: 3 tensor-parallel ranks cannot share llama-3.1-70b's 64 attention heads evenly",
        ),
        (["--tp", "1000"], "--tp: must be in [1, 64] (got 1000)"),
        (["--pp", "0"], "--pp: must be in [1, 16] (got 0)"),
    ],
)
def test_roofline_refuses_the_layouts_a_run_refuses(
    flags: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`roofline --tp 3` printed figures for a split `run` refuses (a review)."""
    err = refused(["roofline", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", *flags], capsys)
    assert said in err, err


def test_every_flag_says_what_it_does_and_the_version_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    """`--set`, `--json`, roofline's and calibrate's precisions, plan's budget and others read bare in
    --help, and there was no --version though every JSON carries the engine's (a review)."""
    import argparse

    from engine.cli.main import main, parser
    from engine.serving.run import ENGINE_VERSION

    bare = [
        (name, a.option_strings)
        for action in parser()._actions
        if isinstance(action, argparse._SubParsersAction)
        for name, sp in action.choices.items()
        for a in sp._actions
        if a.option_strings and not a.help
    ]
    assert bare == []
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == f"fengong {ENGINE_VERSION}\n"


def test_a_sweep_table_names_its_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sweep --out x.txt` wrote Parquet into a .txt file, unsaid (a review): a .parquet or .csv name is asked."""
    argv = [
        "sweep",
        "chat-colocated",
        "--vary",
        "duration_s=30",
        "--no-progress",
        "--out",
        str(tmp_path / "x.txt"),
    ]
    assert cli.main(argv) == 2
    assert "name a .parquet or a .csv file" in capsys.readouterr().err and not (tmp_path / "x.txt").exists()


def test_sweeps_and_replications_say_which_runs_are_saturated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`sweep` printed only what it wrote, though at 40 req/s the split pool is unsustainable, its cost per
    request the cheapest of the table; `run --replications` printed the cost bare where a single run marks
    it "at saturation" (a review)."""
    out = tmp_path / "s.csv"
    argv = [
        "sweep",
        "chat-disaggregated",
        "--vary",
        "workload.arrival.rate_rps=16,40",
        "--set",
        "duration_s=60",
    ]
    assert cli.main([*argv, "--no-progress", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "of the 2 runs, 1 unsustainable (short by up to " in err and "runs' costs at saturation" in err
    run = ["run", "chat-disaggregated", "--set", "workload.arrival.rate_rps=40", "--set", "duration_s=60"]
    assert cli.main([*run, "--replications", "2"]) == 0
    cost = next(ln for ln in capsys.readouterr().out.splitlines() if "$ per 1k requests" in ln)
    assert cost.endswith("(at saturation in 2 of 2 seeds)"), cost
    from engine.explain.sustain import sweep_line

    assert sweep_line(pd.read_csv(out).iloc[:1]) is None  # 16 req/s: sustained, nothing said
    # a shortfall in req/s, not 1.2e+02; a run at capacity but sustained: its costs are not marked (a review)
    said = sweep_line(pd.DataFrame({"unsustainable.shortfall_rps": [123.4, None]}))
    assert said is not None and "short by up to 123.4 req/s" in said
    said = sweep_line(pd.DataFrame({"at_capacity.standing_requests": [3.0]}))
    assert said is not None and "1 at capacity" in said and "saturation" not in said


def test_a_field_a_trace_replay_never_reads_is_refused_where_it_is_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A sweep of azure-code-replay's rate ran the file's 63 requests at every rate and labelled the rows
    1 and 50 req/s; `run --set` took the rate unsaid too, and a field set twice kept its last value (a
    review). The ceiling on requests in flight is a trace's to take."""
    for argv, said in (
        (
            ["run", "azure-code-replay", "--set", "workload.arrival.rate_rps=50"],
            "workload.arrival.rate_rps: unused",
        ),
        (["run", "azure-code-replay", "--set", "workload.trace.block_tokens=64"], "in the azure format"),
        (
            [
                "sweep",
                "azure-code-replay",
                "--vary",
                "workload.arrival.rate_rps=1,50",
                "--out",
                str(tmp_path / "s.csv"),
            ],
            "vary workload.arrival.rate_rps: unused with a trace",
        ),
        (["run", "chat-colocated", "--set", "duration_s=30", "--set", "duration_s=40"], "given twice"),
        # a whole table's fields too (it slipped past the paths' check: a review)
        (
            ["run", "azure-code-replay", "--set", "workload.arrival={rate_rps=5}"],
            "workload.arrival.rate_rps: unused",
        ),
        # a class's lengths, share, prefix and sessions: the file's (a sweep of the prompt length on the
        # Mooncake trace wrote identical rows: a review)
        (
            ["run", "mooncake-replay", "--set", "workload.classes[0].input.mean=5000"],
            "lengths come from the file",
        ),
        (
            [
                "sweep",
                "mooncake-replay",
                "--vary",
                "workload.classes[0].output.tokens=100,5000",
                "--out",
                str(tmp_path / "x.csv"),
            ],
            "vary workload.classes[0].output.tokens: unused with a trace",
        ),
        (
            ["run", "azure-code-replay", "--set", "workload.classes[0].share=0.5"],
            "share: unused with a trace",
        ),
        (
            ["run", "azure-code-replay", "--set", "workload.classes[0].prefix.tokens=64"],
            "prefix.tokens: unused",
        ),
    ):
        assert said in refused(argv, capsys), argv
    assert not (tmp_path / "s.csv").exists()
    sc = io.load_preset("azure-code-replay")
    with pytest.raises(ScenarioError, match=r"vary workload\.arrival\.kind: unused with a trace"):
        sweeping.sweep(sc, {"workload.arrival.kind": ["gamma"]})
    assert (
        cli.main(
            [
                "run",
                "azure-code-replay",
                "--set",
                "duration_s=30",
                "--set",
                "workload.arrival.max_in_flight=8",
                "--set",
                "workload.classes[0].slo.ttft_ms=5000",
            ]
        )
        == 0
    )


def test_a_sweeps_values_and_workers_are_taken_as_given(capsys: pytest.CaptureFixture[str]) -> None:
    """'rate=5,,6' ran two values, the empty one dropped unsaid; --workers 0 ran on every core (a review)."""
    out = ["--out", "/tmp/never-written.csv"]
    said = refused(["sweep", "chat-colocated", "--vary", "workload.arrival.rate_rps=5,,6", *out], capsys)
    assert "--vary workload.arrival.rate_rps: an empty value in '5,,6'" in said
    said = refused(
        ["sweep", "chat-colocated", "--vary", "workload.arrival.rate_rps=5,6", "--workers", "0", *out], capsys
    )
    assert "--workers: must be in [1, 256] (got 0)" in said
    assert sweeping.parse_vary(["workload.arrival.rate_rps=[1,2],3"]) == {
        "workload.arrival.rate_rps": [[1, 2], 3]
    }


def test_run_margin_does_not_judge_a_class_without_a_request(capsys: pytest.CaptureFixture[str]) -> None:
    """A window with no request read 'no request in the window, not judged' and, under --margin, 'class
    chat: passes -> passes' (a review): the margin does not judge it either."""
    argv = [
        "run",
        "chat-colocated",
        "--margin",
        "--set",
        "workload.arrival.rate_rps=0.0001",
        "--set",
        "duration_s=10",
    ]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert (
        "passes -> passes" not in out and out.count("class chat: no request in the window, not judged") == 2
    )
    assert (
        "no request completed" in out and "energy: no output token" in out and "$-" not in out
    )  # ('$- per 1k')


def test_advise_refuses_a_window_without_a_request(capsys: pytest.CaptureFixture[str]) -> None:
    """With no request in the window the roofline said no chip holds the weights, and the specialisation
    test judged a prefill ASIC from no work (a review): refused, saying what to change."""
    err = refused(
        ["advise", "chat-colocated", "--set", "workload.arrival.rate_rps=0.0001", "--set", "duration_s=10"],
        capsys,
    )
    assert "no request arrived in the 10 s window" in err and "workload.arrival.rate_rps" in err


def test_scenario_lists_the_presets(capsys: pytest.CaptureFixture[str]) -> None:
    """No command listed the presets (only a wrong name's error did: a review): `scenario --list` does, each
    with its name, and `scenario` without one says so."""
    from engine.cli.main import main
    from engine.scenario.codec import load_preset, preset_names

    assert main(["scenario", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(preset_names())
    assert lines[0].endswith(load_preset(preset_names()[0]).name)
    assert main(["scenario"]) == 2
    assert "--list lists the presets" in capsys.readouterr().err


def test_plan_refuses_a_tensor_parallel_degree_the_model_cannot_take(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`plan --tp 3` searched and exited 1, 'no simulated deployment passed', where roofline refuses the same
    degree with exit 2 (a review): refused, naming the degrees the model takes."""
    from engine.cli.main import main

    assert main(["plan", "chat-disaggregated", "--target-rps", "16", "--tp", "3", "--no-progress"]) == 2
    assert (
        "--tp: 3 tensor-parallel ranks cannot share llama-3.1-70b's 64 attention heads"
        in capsys.readouterr().err
    )


def test_refusals_name_the_flag_and_a_tables_range(capsys: pytest.CaptureFixture[str]) -> None:
    """'--set =5' read "malformed field path ''" with no flag named, and a chip's rent of -1 read 'greater than
    0' with no top (a CLI review): the flag is named, and a table's value has its range."""
    from engine.cli.main import main

    assert main(["run", "chat-disaggregated", "--set", "=5"]) == 2
    assert "--set '=5': expected path=value" in capsys.readouterr().err
    assert main(["run", "chat-disaggregated", "--set", "cost.usd_per_hour.h100-sxm=-1"]) == 2
    assert "the allowed range is more than 0 to 10,000 (got -1)" in capsys.readouterr().err
