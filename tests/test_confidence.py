"""How sure the shown numbers are (engine.explain.confidence): marks per pool, error bars per figure.

The catalog's calibrations move as profiles are fitted, so the scenarios are picked by what
`engine.costmodel.trust` says today: a chip that is fitted under a stack, one that is not. The
expected errors are stubbed where a test needs known numbers.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.catalog.entries import load_catalog
from engine.costmodel import trust
from engine.costmodel.trust import Calibration
from engine.explain import confidence
from engine.explain.confidence import PoolMark
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.serving.run import simulate

UNCALIBRATED = ("mi325x", "vllm")
CALIBRATED = ("h100-sxm", "trtllm")


def on(chip: str, stack: str, **over: Any) -> Scenario:
    """The disaggregated chat preset on one chip under one stack, on a short window."""
    changes = {"duration_s": 30.0, "deployment.stack": stack, "deployment.pools[0].hardware": chip,
               "deployment.pools[1].hardware": chip, **over}  # fmt: skip
    return io.apply_overrides(io.load_preset("chat-disaggregated"), changes)


def basis(chip: str, stack: str) -> str:
    cat = load_catalog()
    return trust.calibration(cat.hardware[chip], stack, cat)[1].basis


def cal(hw: str, fitted: bool, **errors: float) -> Calibration:
    return Calibration(hw, "vllm", "vllm", "fitted" if fitted else "transfer", f"rule of {hw}", errors)


def test_the_chosen_chips_are_what_the_tests_say() -> None:
    assert basis(*UNCALIBRATED) != "fitted", "pick another uncalibrated chip for these tests"
    assert basis(*CALIBRATED) == "fitted", "pick another calibrated chip for these tests"


def test_marks_come_from_the_run_and_match_resolving() -> None:
    sc = on(*UNCALIBRATED)
    res = simulate(sc)
    from_run = confidence.pool_marks(sc, res.summary)
    assert from_run == confidence.pool_marks(sc)  # the summary carries what resolving chose
    assert [m.pool for m in from_run] == ["prefill", "decode"] and all(
        m.hardware == "mi325x" for m in from_run
    )
    note = confidence.note(from_run)
    assert note and "pools prefill, decode on mi325x" in note and from_run[0].calibration.rule in note
    assert confidence.note(confidence.pool_marks(on(*CALIBRATED))) is None


def test_each_figure_takes_the_largest_error_of_its_pools() -> None:
    marks = (
        PoolMark("p", "prefill", cal("a", True, throughput=0.1, ttft=0.3, tpot=0.05, energy=0.2)),
        PoolMark("d", "decode", cal("b", False, throughput=0.2, ttft=0.1, tpot=0.15)),
    )
    errs = confidence.headline_errors(marks)
    assert errs["ttft_p99_ms"] == 0.3  # the prefill pool's
    assert errs["tpot_p99_ms"] == 0.15  # the decode pool's
    assert errs["goodput_rps"] == errs["usd_per_request"] == errs["usd_per_million_output_tokens"] == 0.2
    assert errs["joules_per_output_token"] == 0.2  # the only pool that has one
    assert "slo_attainment" not in errs
    assert confidence.with_figure_error("24 ms", marks, "tpot_p99_ms") == "24 ms ± 15%"
    assert confidence.with_figure_error("–", marks, "tpot_p99_ms") == "–"  # no value, no error bar
    assert confidence.with_figure_error("0.00 req/s", marks, "goodput_rps") == "0.00 req/s"  # ± of nothing
    assert confidence.with_figure_error("99%", marks, "slo_attainment") == "99%"
    assert confidence.compared_errors(["E2E p99", "SLO attainment", "Cost per hour"], marks, marks) == [
        0.3,
        None,
        None,
    ]


def test_unknown_errors_give_no_error_bar() -> None:
    marks = (PoolMark("m", "mixed", cal("a", False)),)
    assert confidence.headline_errors(marks)["ttft_p99_ms"] is None
    assert confidence.with_figure_error("24 ms", marks, "ttft_p99_ms") == "24 ms"
    assert confidence.errors_text({}) == "expected error not yet cross-validated"
    assert "uncalibrated under vLLM: rule of a" in confidence.describe(marks[0].calibration)


def test_catalog_rows_follow_the_stack() -> None:
    cat = load_catalog()
    chip, stack = UNCALIBRATED
    rows = confidence.chip_rows(cat, stack)
    assert set(rows) == set(cat.hardware)
    assert rows[chip]["calibration"].startswith("uncalibrated: ") and not rows[chip]["calibrated"]
    good = confidence.chip_rows(cat, CALIBRATED[1])[CALIBRATED[0]]
    assert good["calibration"] == "calibrated" and good["calibrated"]
    prof, c = trust.calibration(cat.hardware[CALIBRATED[0]], CALIBRATED[1], cat)
    assert good["eta_compute"] == prof.eta_compute and good["throughput_error"] == c.error("throughput")
    amd = confidence.chip_rows(cat, "trtllm")["mi300x"]  # TensorRT-LLM runs on NVIDIA GPUs only
    assert amd["calibration"].startswith("not run by TensorRT-LLM") and amd["eta_compute"] is None


@pytest.mark.parametrize("chip_stack", [UNCALIBRATED, CALIBRATED])
def test_cli_run_json_carries_the_calibration_and_the_text_shows_it(
    chip_stack: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from engine.cli.main import main

    chip, stack = chip_stack
    sets = ["--set", "duration_s=30", "--set", f"deployment.stack={stack}",
            "--set", f"deployment.pools[0].hardware={chip}", "--set", f"deployment.pools[1].hardware={chip}"]  # fmt: skip
    assert main(["run", "chat-disaggregated", "--json", *sets]) == 0
    block = json.loads(capsys.readouterr().out)["calibration"]
    fitted = chip_stack == CALIBRATED
    assert set(block) == {"prefill", "decode"}
    assert all(b["fitted"] is fitted and b["stack"] == stack and b["rule"] for b in block.values())
    assert main(["run", "chat-disaggregated", *sets]) == 0
    out = capsys.readouterr().out
    mark = "calibrated" if fitted else "uncalibrated"
    assert f"pool prefill on {chip}: {mark} under " in out and f"pool decode on {chip}: {mark} under " in out
    errors = block["decode"]["expected_error"]
    if "tpot" in errors:  # the TPOT line carries the decode pool's error
        tpot_line = next(line for line in out.splitlines() if line.strip().startswith("tpot"))
        assert tpot_line.endswith(f"± {errors['tpot']:.0%}")


def test_an_open_loop_bounds_the_error_bar_where_speed_cannot_move_the_figure() -> None:
    """A run that served all it was offered cannot serve more on faster chips: goodput and
    throughput are cut above at what arrived, the cost per request below at the bill over it, while
    slower chips keep the whole error; a closed loop, whose clients send more when served faster,
    keeps the whole bar both ways."""
    sc = on(*CALIBRATED, duration_s=300.0)  # a window long against the drain after it
    run = simulate(sc)
    s = run.summary
    req = s["requests"]
    bounds = confidence.limits(s, sc)
    assert bounds["throughput_rps"] == (float("inf"), pytest.approx(req["total"] / req["completed"] - 1.0))
    good = s["goodput_rps"] * s["window_s"]
    assert bounds["goodput_rps"][1] == pytest.approx(req["total"] / good - 1.0)
    floor = 1.0 - req["completed"] / req["total"] * sc.duration_s / s["drain_end_s"]
    assert bounds["usd_per_request"] == (pytest.approx(floor), float("inf"))
    assert "ttft_p99_ms" not in bounds and "joules_per_output_token" not in bounds
    marks = confidence.pool_marks(sc, s)
    err = confidence.figure_error(marks, confidence.THROUGHPUT)
    assert err is not None and err > 0.05
    if req["completed"] == req["total"]:  # the preset keeps up: nothing more to serve
        assert confidence.with_figure_error("9.90 req/s", marks, "throughput_rps", bounds) == (
            f"9.90 req/s (−{err:.0%} to +0%)"
        )
        assert 0 < floor < err  # the drain is short: cost can fall a little, not by the whole error
        assert confidence.with_figure_error("$0.002", marks, "usd_per_request", bounds) == (
            f"$0.002 (−{trust.error_text(floor)} to +{err:.0%})"
        )
    # unbounded keys, and no bounds at all, keep the symmetric bar
    assert confidence.with_figure_error("24 ms", marks, "ttft_p99_ms", bounds).endswith("%") and "±" in (
        confidence.with_figure_error("24 ms", marks, "ttft_p99_ms", bounds)
    )
    assert confidence.with_figure_error("9.90 req/s", marks, "throughput_rps") == f"9.90 req/s ± {err:.0%}"
    assert confidence.band(0.36, (float("inf"), 0.5)) == "± 36%"  # a bound wider than the error: no cut
    assert confidence.band(0.36, (float("inf"), 0.1)) == "−36% to +10%"
    closed = io.apply_overrides(
        sc,
        {"workload.arrival": {"kind": "closed_loop", "clients": 8, "think_time_s": 0.5}, "duration_s": 20.0},
    )
    assert confidence.limits(simulate(closed).summary, closed) == {}


def test_a_spread_band_takes_the_runs_moves_and_keeps_a_latencys_own_error() -> None:
    """Throughput-borne figures take their run's spread alone; a latency never narrower than its
    kind's error; SLO attainment in points; no '-0%'."""
    from engine.explain.confidence import spread_band

    assert spread_band("ttft_p99_ms", 0.09, (0.39, -0.22)) == "−22% to +39%"
    assert spread_band("ttft_p99_ms", 0.09, (0.02, -0.01)) == "± 9%"  # the kind's error, both sides
    assert spread_band("tpot_p99_ms", 0.07, (0.17, -0.03)) == "−7% to +17%"
    assert spread_band("goodput_rps", 0.15, (-0.01, 0.0)) == "−1% to +0%"  # served all it was sent
    assert spread_band("throughput_rps", 0.15, (-0.0, 0.0)) == "± 0%"
    assert spread_band("usd_per_request", 0.15, (0.02, -0.01)) == "−1% to +2%"
    assert spread_band("goodput_rps", 0.36, (-0.81, 3.5)) == "−81% to > +100%"
    assert spread_band("slo_attainment", None, (-0.367, 0.043)) == "−36.7 to +4.3 pts"
    assert spread_band("slo_attainment", None, (0.0, 0.0)) == "± 0 pts"
    assert spread_band("slo_attainment", None, (-0.0001, 0.02)) == "+0.0 to +2.0 pts"  # never −0.0
    assert spread_band("ttft_p99_ms", None, (0.1, -0.05)) == "−5% to +10%"  # no kind error known


def test_a_band_side_reads_as_a_change() -> None:
    """'−36%', '+39%', '> +100%' past a doubling, and '+0%' for nothing, never '−0%'."""
    from engine.explain.confidence import band, side_text

    assert [side_text(x) for x in (-0.36, 0.39, 1.5, -0.0, 0.0, 0.004)] == [
        "−36%", "+39%", "> +100%", "+0%", "+0%", "+0%"
    ]  # fmt: skip
    assert band(0.15, (0.0, float("inf"))) == "+0% to +15%"
    assert band(0.36, (float("inf"), 0.0)) == "−36% to +0%"
