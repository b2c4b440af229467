"""The command line: JSON output is one document, errors exit 2 naming the field."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest

from engine.cli.main import main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine", *args], capture_output=True, text=True, check=False
    )


def test_catalog_json_is_one_document() -> None:
    out = run("catalog", "--json")
    assert out.returncode == 0
    doc = json.loads(out.stdout)
    assert {"hardware", "models"} <= set(doc)
    assert any(h["id"] == "h100-sxm" for h in doc["hardware"])


def test_roofline_refuses_a_stack_its_chip_does_not_run(capsys: pytest.CaptureFixture[str]) -> None:
    """Found in review: TensorRT-LLM on an MI300X printed the vLLM figures labelled 'profile trtllm'."""
    assert main(["roofline", "--model", "qwen3-8b", "--hardware", "mi300x", "--stack", "trtllm"]) == 2
    assert "TensorRT-LLM runs on NVIDIA GPUs only; --hardware is 'mi300x'" in capsys.readouterr().err
    assert main(["roofline", "--model", "qwen3-8b", "--hardware", "h100-sxm", "--stack", "vllm-ascend"]) == 2
    assert "Huawei Ascend NPUs only" in capsys.readouterr().err


def test_roofline_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["roofline", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--tp", "4", "--json"]) == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert doc["kv_bytes_per_token"] == 327_680
    assert doc["kv_capacity_tokens"] > 0
    assert all(r["bound"] == "compute" for r in doc["prefill"] if r["prompt_tokens"] >= 2048)
    small = [r for r in doc["decode"] if r["batch"] == 1]
    assert small and all(r["bound"] == "bandwidth" for r in small)


def test_roofline_json_carries_the_calibration_its_text_prints(capsys: pytest.CaptureFixture[str]) -> None:
    """The text said 'uncalibrated under SGLang ... band: throughput −24% to +33%' where the JSON's only
    calibration was the profile's own stack and band, both null (a review)."""
    args = ["roofline", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--stack", "sglang"]
    assert main(args) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("calibration: "))
    assert main([*args, "--json"]) == 0
    cal = json.loads(capsys.readouterr().out)["calibration"]
    assert cal["stack"] == "sglang" and cal["calibrated"] is False and cal["mark"] == "uncalibrated"
    assert line == f"calibration: {cal['text']}"
    fall, rise = cal["bands"]["throughput"]
    assert f"throughput −{abs(fall):.0%} to +{rise:.0%}" in line


def test_roofline_gives_no_speed_for_a_batch_whose_kv_does_not_fit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """128 sequences of 16,384 tokens read 1,485 tok/s on an instance holding 714,419 tokens, 43 of them (a
    review): no times there, and how many fit."""
    args = ["roofline", "--model", "llama-3.1-70b", "--hardware", "h100-sxm", "--tp", "4", "--weights", "fp8"]
    assert main([*args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    cap = doc["kv_capacity_tokens"]
    for r in doc["decode"]:
        fits = r["batch"] * r["context_tokens"] <= cap
        assert r["kv_fits"] == fits and (r["tokens_per_s"] is None) == (not fits)
        assert fits or (r["time_ms"] is None and r["max_batch"] == cap // r["context_tokens"])
    assert not all(r["kv_fits"] for r in doc["decode"])  # the case this test is about
    assert main(args) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.split()[:2] == ["128", "16384"] and f"does not fit: {cap // 16384} at most" in last
    assert "." not in last.split("does not fit")[0]  # no figure before it


def test_roofline_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["roofline", "--model", "llama-3.1-8b", "--hardware", "h200"]) == 0
    out = capsys.readouterr().out
    assert "prefill" in out and "decode" in out and "KV capacity" in out
    # an instance that cannot hold its weights has no times ('compute'-bound prefills under 'the weights do
    # not fit': a review)
    assert main(["roofline", "--model", "llama-3.1-70b", "--hardware", "l4", "--weights", "bf16"]) == 0
    out = capsys.readouterr().out
    assert "the weights do not fit" in out and "no prefill or decode times" in out and "time ms" not in out


def test_roofline_text_counts_every_chip_of_a_pipeline(capsys: pytest.CaptureFixture[str]) -> None:
    """tp64 x pp9 is 576 LPUs, not 64 (found in review), and the stages' time in turn is its own column."""
    args = ["roofline", "--model", "llama-3.1-70b", "--hardware", "groq-lpu", "--tp", "64", "--pp", "9"]
    assert main([*args, "--weights", "fp8", "--kv", "fp8"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("Llama-3.1-70B on 576 x ") and "(tp64 x pp9)" in out
    assert "pipeline" in out.splitlines()[5]
    # how sure, as a run's pool line says it (it printed "profile vllm" alone, a name --profile refuses)
    assert (
        out.splitlines()[1].startswith("calibration: uncalibrated under ") and "band:" in out.splitlines()[1]
    )


def test_roofline_of_a_moe_model_runs_its_experts_factor_with_any_profile(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A profile named on the command line is the one a run with it uses: for a MoE model it
    carries the MoE terms of the serving stack (which runs the experts), so naming the stack's
    profile changes nothing, and another stack's profile keeps the named stack's MoE terms."""

    def decode(*extra: str) -> list[float]:
        args = ["roofline", "--model", "deepseek-v3", "--hardware", "h200", "--tp", "8", "--weights", "fp8"]
        assert main([*args, "--kv", "fp8", "--json", *extra]) == 0
        return [r["time_ms"] for r in json.loads(capsys.readouterr().out)["decode"]]

    by_stack = decode("--stack", "trtllm")
    assert decode("--stack", "trtllm", "--profile", "trtllm") == by_stack
    other = decode("--stack", "vllm", "--profile", "trtllm")  # trtllm's dense rates, vLLM's experts
    assert other != by_stack and len(other) == len(by_stack)


def test_unknown_hardware_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["roofline", "--model", "llama-3.1-70b", "--hardware", "h1000"]) == 2
    assert "unknown hardware 'h1000'" in capsys.readouterr().err


def test_scenario_set_error_names_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "chat-disaggregated", "--set", "workload.arrival.rate_rps=-1"]) == 2
    assert "workload.arrival.rate_rps" in capsys.readouterr().err


def test_scenario_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scenario", "chat-disaggregated", "--set", "seed=5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["seed"] == 5


def test_import_model(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    cfg = tmp_path / "config.json"
    cfg.write_text(
        json.dumps(
            {
                "num_hidden_layers": 2,
                "hidden_size": 64,
                "num_attention_heads": 4,
                "intermediate_size": 128,
                "vocab_size": 100,
            }
        )
    )
    out = tmp_path / "tiny.toml"
    assert main(["import-model", str(cfg), "--id", "tiny", "--out", str(out)]) == 0
    assert 'id = "tiny"' in out.read_text()
    assert "wrote" in capsys.readouterr().err
    # written under another name: where a catalog directory takes it, as for a chip (it said nothing)
    assert main(["import-model", str(cfg), "--id", "tiny", "--out", str(tmp_path / "mine.toml")]) == 0
    assert (
        "(entry tiny: in a FENGONG_CATALOG directory it goes as models/tiny.toml)" in capsys.readouterr().err
    )


def test_advise_default_matches_the_advisor() -> None:
    """The CLI keeps the advisor out of start-up, so it repeats the default: they must agree."""
    from engine.cli.plan_flags import STABLE_MONTHS_DEFAULT
    from engine.explain.advisor import STABLE_MONTHS

    assert STABLE_MONTHS_DEFAULT == STABLE_MONTHS


def test_the_parser_imports_no_command() -> None:
    """Building the CLI loads the scenario's classes and nothing a command loads when it runs: no
    simulation, no numpy, no planner, no calibration tables (docs/performance.md)."""
    import subprocess
    import sys

    code = (
        "import sys, engine.cli.main; engine.cli.main.parser(); "
        "print(','.join(m for m in ('numpy', 'simpy', 'engine.serving', 'engine.calibration', 'engine.explain', "
        "'engine.planning', 'engine.cli.run', 'engine.cli.catalog', 'engine.cli.plan', 'plotly', 'dask') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", out.stdout


def test_a_package_missing_when_a_command_loads_says_how_to_get_it() -> None:
    """The commands import their modules when they run, after the parser: a package missing then
    (numpy here) still gets the one-line advice, not a traceback."""
    code = (
        "import runpy, sys; sys.modules['numpy'] = None; "
        "sys.argv = ['engine', 'run', 'chat-colocated', '--json']; runpy.run_module('engine', run_name='__main__')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 1, out.stderr
    assert out.stderr.startswith("fengong: this Python lacks the package 'numpy'"), out.stderr


def test_calibrate_help_columns_match_calibration() -> None:
    """The CLI keeps calibration (and pandas) out of start-up, so it repeats the columns: they must agree."""
    from engine.calibration import measurements
    from engine.cli.main import MEASUREMENT_COLUMNS

    assert MEASUREMENT_COLUMNS == measurements.MEASUREMENT_COLUMNS


LOADED_ONLY_WHEN_ASKED = (
    "pandas",
    "pyarrow",
    "plotly",
    "scipy",
    "tqdm",
    "dask",
    "engine.planning",
    "engine.explain.confidence",
    "engine.explain.advisor",
    "engine.explain.presentation",
    "engine.calibration.calibrate",
    "engine.calibration.reference",
    "engine.calibration.bands",
    "engine.cli.run_text",
    "engine.cli.catalog",
    "engine.cli.plan",
    "engine.cli.entries",
    "engine.cli.validate",
    "engine.cli.lifetime",
    "engine.serving.tables",
    "engine.serving.traces",
    "numpy.ma",
    "tomli_w",
)
"""What a `run --json` process of a generated workload never needs: the planner, the trust tables, the
human report, pandas, the trace readers, numpy's masked arrays (which `np.percentile` and `np.unique`
would import; `engine.serving.stats.percentile`), a TOML writer. (Its `--set` values are TOML literals,
so tomllib is loaded here; without them it is not, `test_a_preset_run_parses_no_toml`.)"""


def test_run_json_loads_only_the_simulation() -> None:
    """A summary needs no table and no band: `run --json` simulates without loading pandas, the planner
    or the calibration tables (the whole process is timed by make bench; docs/performance.md)."""
    code = (
        "import sys; from engine.cli.main import main; "
        "main(['run', 'chat-disaggregated', '--json', '--set', 'duration_s=30']); "
        f"sys.stderr.write(','.join(m for m in sys.modules if m.split('.')[0] in {LOADED_ONLY_WHEN_ASKED!r} "
        f"or m in {LOADED_ONLY_WHEN_ASKED!r} or m.rsplit('.', 1)[0] in {LOADED_ONLY_WHEN_ASKED!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["requests"]["completed"] > 0
    assert out.stderr.strip() == "", out.stderr


def test_a_preset_run_parses_no_toml() -> None:
    """A shipped preset and the catalog are read from presets/parsed.json (`engine.catalog.parsed`):
    a run of a preset as it is never imports tomllib (20 M instructions; docs/performance.md)."""
    code = (
        "import sys; from engine.cli.main import main; "
        "main(['run', 'chat-disaggregated', '--json']); "
        "sys.stderr.write(','.join(m for m in sys.modules if m.startswith(('tomllib', 'tomli_w'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["requests"]["completed"] > 0
    assert out.stderr.strip() == "", out.stderr


def test_a_printed_run_loads_the_report_it_prints() -> None:
    """The other side of the lazy imports: a run printed as text does load the report and its bands,
    so the check above cannot pass by a module list that nothing ever loads."""
    code = (
        "import sys; from engine.cli.main import main; "
        "main(['run', 'chat-disaggregated', '--set', 'duration_s=30']); "
        "sys.stderr.write(','.join(m for m in ('engine.cli.run_text', 'engine.explain.confidence') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "requests:" in out.stdout
    assert out.stderr.strip() == "engine.cli.run_text,engine.explain.confidence", out.stderr


OVERLOADED = ["--set", "duration_s=120", "--set", "workload.arrival.rate_rps=48"]


def test_run_json_marks_an_unsustainable_run_and_only_that(capsys: pytest.CaptureFixture[str]) -> None:
    """`unsustainable` is null for a run that keeps up, `{shortfall_rps, ...}` for one whose queue
    grows through the window (chat-disaggregated at three times its load)."""
    assert main(["run", "chat-disaggregated", "--json", "--set", "duration_s=120"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "unsustainable" in doc and doc["unsustainable"] is None
    assert main(["run", "chat-disaggregated", "--json", *OVERLOADED]) == 0
    mark = json.loads(capsys.readouterr().out)["unsustainable"]
    assert set(mark) == {"shortfall_rps", "offered_rps", "sustained_rps", "rates_over_s", "steady"}
    # its queue is before the first token: the decode pace of its full batches stays level
    assert mark["steady"] == ["tpot", "max_tbt", "tbt"]
    assert mark["rates_over_s"] > 120.0  # its rates over the time its window's requests took
    assert 10.0 < mark["shortfall_rps"] < 30.0
    assert mark["sustained_rps"] == pytest.approx(mark["offered_rps"] - mark["shortfall_rps"])


def test_run_text_prints_no_bare_latency_for_an_unsustainable_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "chat-disaggregated", *OVERLOADED]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("Unsustainable: ") and "short by" in line for line in lines)
    latency = [line for line in lines if line.lstrip().startswith(("ttft", "tpot", "e2e", "class "))]
    assert len(latency) >= 4
    # each line marked: TTFT and E2E grow, the decode pace of full batches is said to be that
    assert all("grows with run length" in line or "at saturation" in line for line in latency), latency
    assert all(
        "grows with run length" in line for line in latency if line.lstrip().startswith(("ttft", "e2e"))
    )
    assert any(line.lstrip().startswith("tpot") and line.endswith("at saturation") for line in latency)
    assert any("Unsustainable" in line and "TPOT" in line and "stay level" in line for line in lines)
    # its costs are the bill over full batches served late, as Results marks them (a review read them bare)
    (cost,) = [line for line in lines if line.startswith("cost: ")]
    assert "per 1k requests" in cost and cost.count(", at saturation") == 2, cost
    # and its token rates, over the window and the drain, below what it sustains (a review read them as its capacity)
    (rates,) = [line for line in lines if line.startswith("throughput: ")]
    assert rates.endswith(
        ", at saturation: over the window and the drain, where the backlog's batches thin out"
    )
    assert main(["run", "chat-disaggregated", "--set", "duration_s=120"]) == 0
    out = capsys.readouterr().out
    assert "grows with run length" not in out and "at saturation" not in out


RISING = [
    *("--set", "deployment.pools[0].hardware=h200", "--set", "workload.arrival.rate_rps=30"),
    *("--set", "workload.classes[0].input.mean=2048", "--set", "workload.classes[0].input.p99=8000"),
    *("--set", "workload.classes[0].slo.tpot_ms=40", "--set", "duration_s=120"),
]
"""chat-colocated on H200s at 30 req/s of 2,048-token prompts over 120 s: a queue that rises through
the window's second half from within it, its batches still filling (180 s marks it unsustainable)."""


def test_run_says_a_queue_still_rising_at_the_windows_end(capsys: pytest.CaptureFixture[str]) -> None:
    """A queue that rises from within the window's second half to its end, too late in the window to
    be called unsustainable: its JSON carries `queue_rising`, its text one line before the figures,
    which stay as they are; a run that keeps up carries neither. (portfolio-decode-loss was the
    example until 2026-12-05, when the rule for a backlog the queue's onset misses marked it.)"""
    assert main(["run", "chat-colocated", *RISING, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["unsustainable"] is None and set(doc["queue_rising"]) == {
        "rise_rps",
        "risen_requests",
        "offered_rps",
    }
    assert doc["queue_rising"]["risen_requests"] == pytest.approx(doc["queue_rising"]["rise_rps"] * 60.0)
    assert main(["run", "chat-colocated", *RISING]) == 0
    lines = capsys.readouterr().out.splitlines()
    said = [i for i, line in enumerate(lines) if "was still rising at the window's end" in line]
    first_latency = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ttft"))
    assert len(said) == 1 and said[0] < first_latency
    assert "grows with run length" not in "\n".join(lines)
    # its TTFT and E2E: no steady figure, so no band beside them (it printed a bare p99: a review)
    ttft, e2e = (next(line for line in lines if line.lstrip().startswith(k)) for k in ("ttft", "e2e"))
    assert ttft.endswith(", no headroom: may grow with a longer run") and e2e.endswith("longer run")
    assert "%" not in ttft and "headroom" not in next(
        line for line in lines if line.lstrip().startswith("tpot")
    )
    assert main(["run", "chat-disaggregated", "--json", "--set", "duration_s=120"]) == 0
    assert "queue_rising" not in json.loads(capsys.readouterr().out)
    assert main(["run", "chat-colocated", *RISING, "--replications", "2"]) == 0  # (it was left out: a review)
    assert "queue still rising at the window's end in 1 of 2 seeds" in capsys.readouterr().out


def test_the_planners_margin_marks_a_choice_that_falls_behind(capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace

    from engine.cli.plan import print_margin
    from engine.planning.margin import Check

    def margin(shortfall: float | None, at_client: bool = False, level: bool = False) -> Any:
        chosen = Check(run=0, passes=False, slo_attainment=0.4, goodput_rps=9.0, ttft_ms_p90=61_000.0,
                       tpot_ms_p90=24.0, shortfall_rps=shortfall, grows_rps=None if at_client else shortfall,
                       tpot_grows_rps=None if at_client or level else shortfall,
                       ttft_grows_rps=None if at_client else shortfall)  # fmt: skip
        slowed = SimpleNamespace(best_run=None, simulated=6, slowdown={"h100-sxm": 0.15})
        return SimpleNamespace(chosen=chosen, holds=False, slowed=slowed, slowdown=slowed.slowdown,
                               nothing_text=lambda: "")  # fmt: skip

    print_margin(margin(3.2))
    out = capsys.readouterr().out
    assert "TTFT p90 61,000 ms, grows with run length; TPOT p90 24.0 ms, grows with run length" in out
    assert "unsustainable, short by 3.2 req/s" in out
    print_margin(margin(3.2, level=True))  # a TPOT that stays level while the queue grows
    assert (
        "TTFT p90 61,000 ms, grows with run length; TPOT p90 24.0 ms, at saturation"
        in capsys.readouterr().out
    )
    print_margin(margin(None))
    assert "grows with run length" not in capsys.readouterr().out
    print_margin(margin(3.2, at_client=True))  # the backlog waits at a client's ceiling: figures stay bounded
    out = capsys.readouterr().out
    assert "grows with run length" not in out and "unsustainable, short by 3.2 req/s" in out


def test_run_says_a_closed_loop_does_not_apply_a_ceiling_set_on_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    loop = ["--set", "workload.arrival.kind=closed_loop", "--set", "workload.arrival.clients=4",
            "--set", "workload.arrival.stop_after=40", "--set", "duration_s=30"]  # fmt: skip
    assert main(["run", "chat-colocated", *loop, "--set", "workload.arrival.max_in_flight=2"]) == 0
    assert (
        "max_in_flight (2) was not applied: a closed loop's 4 clients are its ceiling"
        in capsys.readouterr().out
    )
    assert main(["run", "chat-colocated", *loop]) == 0
    assert "was not applied" not in capsys.readouterr().out


def test_scenario_says_every_policys_knobs_and_json_reads_back_as_the_same(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A policy's knobs left at their defaults were said nowhere (`{"name": "queue_cap"}` where it runs
    with max_queued 256; a review): the text says them. `--json` holds what the scenario states, so it
    loads back as the same scenario (filled in, a preset read back as an edit of itself: a review)."""
    from engine.scenario import codec as io

    ask = ["scenario", "agentic-cache", "--set", 'scheduler.admission={name="queue_cap"}']
    assert main(ask) == 0
    text = capsys.readouterr().out
    assert "# scheduler.admission: queue_cap with max_queued 256, low_priority_share 0.5 (defaults)" in text
    assert "# scheduler.router: cache_aware with hit_weight 1.0 (defaults)" in text
    assert main([*ask, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scheduler"]["admission"] == {"name": "queue_cap"}
    assert main(["scenario", "agentic-cache", "--json"]) == 0
    assert io.from_data(json.loads(capsys.readouterr().out)) == io.load_preset("agentic-cache")
    # what stays unset the text says: each pool's batch limits and the stack's iteration scheduler
    assert main(["scenario", "chat-disaggregated"]) == 0
    text = capsys.readouterr().out
    assert "batches of at most 1,024 requests and 8,192 tokens" in text
    assert "# iteration: mixed (the stack's scheduler)" in text


def test_a_run_with_no_request_judges_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """A window with no request read "SLO attainment 0.0%" above "class chat: no request in the window,
    not judged", and printed bands beside latencies of "-" (a review)."""
    argv = [
        "run",
        "chat-disaggregated",
        "--set",
        "workload.arrival.rate_rps=0.0001",
        "--set",
        "duration_s=60",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "SLO attainment not judged (no request in the window);" in out
    assert "  class chat: no request in the window, not judged" in out
    tpot = next(ln for ln in out.splitlines() if ln.startswith("  tpot"))
    assert tpot.rstrip().endswith("p99 -"), tpot
    # the Results cards and the live strip read the headline: no figure, not 0%
    from engine import simulate
    from engine.explain.presentation import headline
    from engine.scenario import codec

    sc = codec.apply_overrides(codec.load_preset("chat-disaggregated"), {"workload.arrival.rate_rps": 0.0001})
    empty = simulate(sc).summary
    assert headline(empty)["slo_attainment"] is None
    assert headline(simulate(codec.load_preset("chat-disaggregated")).summary)["slo_attainment"] > 0.9
    # so does the summary itself, and the JSON: `slo_attainment` 0.0 read as every request missed
    assert empty["slo_attainment"] is None
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["slo_attainment"] is None
    from engine.planning.rules import attained, run_passes

    # nothing judged: no search counts it as passing, under either rule (capacity read 0.003 req/s for a
    # deployment that failed at every load that sent a request: a review)
    assert not run_passes(empty, "attainment", 0.99) and not run_passes(empty)
    assert attained(None) == "no request in the window, not judged"
    assert attained(0.973, 0) == "97% of requests within SLO"


def test_the_bills_shares_add_up_with_the_cache_tiers_said(capsys: pytest.CaptureFixture[str]) -> None:
    """mooncake-replay's pools read 59.4% and 35.7% of the bill, the cache's 4.9% unsaid (a review)."""
    assert main(["run", "mooncake-replay"]) == 0
    lines = capsys.readouterr().out.splitlines()
    shares = [
        float(re.search(r"([\d.]+)% of the bill", line).group(1)) for line in lines if "% of the bill" in line
    ]  # type: ignore[union-attr]
    assert any(line.startswith("the cache tiers (host, pooled): ") for line in lines)
    assert sum(shares) == pytest.approx(100.0, abs=0.15)
    assert main(["run", "chat-disaggregated", "--set", "duration_s=30"]) == 0
    assert "cache tiers" not in capsys.readouterr().out  # no tier: the pools' shares are the bill


def test_the_catalogs_columns_line_up_for_every_chip_and_model(capsys: pytest.CaptureFixture[str]) -> None:
    # fixed widths let cerebras-wse3's 21000.00 TB/s and qwen3-235b-a22b-2507 push their rows out of line
    assert main(["catalog"]) == 0
    chips, models = capsys.readouterr().out.split("\n\n")
    chip_rows = [ln for ln in chips.splitlines() if not ln.startswith("*")]
    starts = {re.search(r"\$/h +(\S)", chip_rows[0]).start(1)}  # type: ignore[union-attr]
    starts |= {re.search(r"\d\.\d\d[* ] +([a-z])", ln).start(1) for ln in chip_rows[1:]}  # type: ignore[union-attr]
    assert len(starts) == 1, starts
    wse3 = next(ln for ln in chip_rows if ln.startswith("cerebras-wse3 "))
    assert " 21,000.00 " in wse3 and "e+" not in chips
    ends = {models.index("B/token") + len("B/token")}
    ends |= {ln.rindex(",") + 4 for ln in models.splitlines()[1:] if ln.strip()}
    assert len(ends) == 1, ends  # the KV column's right edge, under its header's


def test_the_catalog_says_which_chips_a_stack_has_no_build_for(capsys: pytest.CaptureFixture[str]) -> None:
    """groq-lpu was listed under vLLM with its profile, as `plan` offers it, where `emit --stack vllm` refuses it
    (a CLI review): its row says so; a chip the stack runs says nothing of it."""
    assert main(["catalog"]) == 0
    rows = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines() if ln.strip()}
    said = "vLLM has no build for it (emit refuses it)"
    assert said in rows["groq-lpu"] and said not in rows["h100-sxm"] and said not in rows["ascend-910b"]
    assert main(["catalog", "--stack", "trtllm"]) == 0  # TensorRT-LLM's own mark says it: 'not run by'
    assert "has no build for it" not in capsys.readouterr().out


def test_the_catalog_stars_an_assumed_price(capsys: pytest.CaptureFixture[str]) -> None:
    # `catalog` listed the H200 at 3.20 $/h bare, where `run` and the Strategy page call it assumed (a review)
    assert main(["catalog"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^h200 .* 3\.20\* ", out, re.M) and re.search(r"^h100-sxm .* 2\.49  ", out, re.M)
    assert "* an assumed price, not a published one" in out
    assert main(["catalog", "--json"]) == 0
    chips = {h["id"]: h for h in json.loads(capsys.readouterr().out)["hardware"]}
    assert chips["h200"]["usd_per_hour_assumed"] and not chips["h100-sxm"]["usd_per_hour_assumed"]


def test_the_cost_line_says_the_bill_runs_to_the_drains_end(capsys: pytest.CaptureFixture[str]) -> None:
    """$29.88/h beside 4,158 output tokens/s is $2.00 per M over the window, where run printed $2.10 unexplained:
    its bill runs to the end of the drain after the window (a CLI review)."""
    assert main(["run", "chat-disaggregated", "--set", "duration_s=60", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    drain = doc["drain_end_s"] - doc["window_s"]
    assert drain >= 0.5 and doc["cost"]["usd_total"] == pytest.approx(
        doc["cost"]["usd_per_hour"] * doc["drain_end_s"] / 3600
    )
    assert main(["run", "chat-disaggregated", "--set", "duration_s=60"]) == 0
    cost = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("cost: "))
    window_alone = doc["cost"]["usd_per_hour"] / (doc["throughput_tokens_per_s"]["output"] * 3600) * 1e6
    assert (
        f"for the run, billed to its end: the {drain:,.0f} s drain after the window included; over the window "
        f"alone ${window_alone:.2f} per million output tokens, as a longer run nears)" in cost
    )  # a 60 s run's $3.08 per M beside an hour's $2.07, unexplained (a review): the window's own said
    assert main(["run", "chat-disaggregated", "--set", "duration_s=3600"]) == 0  # a drain under 5%: not
    cost = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("cost: "))
    assert "drain after the window included)" in cost and "window alone" not in cost
    # the drain counts from the window's end after a warm-up: agentic-cache's 300 s read as a 321 s drain
    assert main(["run", "agentic-cache", "--set", "duration_s=360", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    drain = doc["drain_end_s"] - 360.0
    assert main(["run", "agentic-cache", "--set", "duration_s=360"]) == 0
    cost = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("cost: "))
    assert 0.5 < drain < 60 and f"the {drain:,.0f} s drain after the window included" in cost


def test_a_passing_class_whose_band_reaches_past_its_target_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """chat-colocated's TPOT p90 28.21 ms against 30 read 'passes' bare, its band up to +11% (31.3 ms) and
    `advise` saying it misses at the band's edge (a CLI review); with room to spare nothing is added."""

    def class_line(*sets: str) -> str:
        assert main(["run", "chat-colocated", "--set", "duration_s=120", *sets]) == 0
        return next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("  class chat:"))

    line = class_line()
    tpot = float(re.search(r"TPOT ([\d.]+) ms \(target 30 ms\)", line)[1])  # type: ignore[index]
    top = float(re.search(r"at its band's top TPOT reads ([\d.]+) ms, over its target", line)[1])  # type: ignore[index]
    assert tpot < 30 < top and ": passes; " in line
    assert class_line("--set", "workload.classes[0].slo.tpot_ms=60").endswith(": passes")
