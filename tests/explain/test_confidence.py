"""How sure the shown numbers are (engine.explain.confidence): marks per pool, bands per figure.

The catalog's calibrations move as profiles are fitted, so the scenarios are picked by what
`engine.calibration.trust` says today: a chip that is fitted under a stack, one that is not. The
bands are stubbed where a test needs known numbers.
"""

from __future__ import annotations

from typing import Any

import pytest

from engine.calibration import trust
from engine.calibration.trust import Calibration
from engine.catalog.entries import load_catalog
from engine.explain import confidence, run_bands
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


def cal(hw: str, fitted: bool, **band: tuple[float, float]) -> Calibration:
    """A calibration with stubbed bands: per kind, (low, high) ratio predicted / measured."""
    return Calibration(hw, "vllm", "vllm", "fitted" if fitted else "transfer", f"rule of {hw}", {}, band=band)


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


def test_each_figure_takes_the_widest_band_of_its_pools() -> None:
    """A figure's band spans the lowest fall and the highest rise of its pools' bands; a ratio
    band (low, high) predicted / measured reads as the real figure at 1/high to 1/low of the shown
    one, and a cost turns its throughput's band round."""
    marks = (
        PoolMark("p", "prefill", cal("a", True, throughput=(0.8, 1.25), ttft=(0.5, 1.0), tpot=(1.0, 1.25))),
        PoolMark("d", "decode", cal("b", False, throughput=(1.0, 2.0), tpot=(0.8, 1.0))),
    )
    assert confidence.headline_range(marks, "ttft_p99_ms") == pytest.approx((0.0, 1.0))  # the prefill pool's
    assert confidence.headline_range(marks, "tpot_p99_ms") == pytest.approx((0.0, 0.25))  # the decode pool's
    assert confidence.headline_range(marks, "goodput_rps") == pytest.approx((-0.5, 0.25))  # both pools'
    assert confidence.headline_range(marks, "usd_per_request") == pytest.approx((-0.2, 1.0))  # turned round
    assert confidence.headline_range(marks, "joules_per_output_token") is None  # no band measured
    assert confidence.with_figure_error("24 ms", marks, "tpot_p99_ms") == "24 ms (+0% to +25%)"
    assert confidence.with_figure_error("10 req/s", marks, "goodput_rps") == "10 req/s (−50% to +25%)"
    assert confidence.with_figure_error("–", marks, "tpot_p99_ms") == "–"  # no value, no band
    assert confidence.with_figure_error("0.00 req/s", marks, "goodput_rps") == "0.00 req/s"  # ± of nothing
    assert confidence.with_figure_error("99%", marks, "slo_attainment") == "99%"
    assert confidence.compared_errors(["E2E p99", "SLO attainment", "Cost per hour"], marks, marks) == [
        "+0% to +100%",
        None,
        None,
    ]


def test_e2e_has_a_band_only_where_its_ttft_and_tpot_have() -> None:
    """E2E's band is the envelope of its parts' where both are shown (where its coverage was measured): a
    dense run's E2E carried its TPOT band alone, with one-token answers a figure equal to its TTFT, which
    showed none (a review)."""
    dense = (PoolMark("m", "mixed", cal("a", True, throughput=(0.8, 1.25), tpot=(0.8, 1.0))),)
    assert confidence.headline_range(dense, "e2e_p99_ms") is None
    assert confidence.compared_errors(["E2E p99", "TPOT p99"], dense, dense) == [None, "+0% to +25%"]
    moe = (PoolMark("m", "mixed", cal("a", True, throughput=(0.8, 1.25), ttft=(0.5, 1.0), tpot=(0.8, 1.0))),)
    assert confidence.headline_range(moe, "e2e_p99_ms") == pytest.approx((0.0, 1.0))


def test_a_band_on_one_side_reads_so() -> None:
    """A model that runs high on every held-out row shows a band wholly below the figure."""
    marks = (PoolMark("m", "mixed", cal("a", True, throughput=(1.1, 1.5))),)
    assert confidence.with_figure_error("10 req/s", marks, "throughput_rps") == "10 req/s (−33% to −9%)"
    assert confidence.signed_text(-0.12, 0.12) == "± 12%"


def test_unknown_bands_give_no_band() -> None:
    marks = (PoolMark("m", "mixed", cal("a", False)),)
    assert confidence.headline_range(marks, "ttft_p99_ms") is None
    assert confidence.with_figure_error("24 ms", marks, "ttft_p99_ms") == "24 ms"
    assert confidence.errors_text({}) == "no band with a measured coverage"
    assert "uncalibrated under vLLM: rule of a" in confidence.describe(marks[0].calibration)
    assert "two in three" in confidence.BAND_NOTE


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
    band = block["decode"]["band"]
    if "tpot" in band:  # the TPOT line carries the decode pool's band, and the line saying what it is
        low, high = band["tpot"]
        tpot_line = next(line for line in out.splitlines() if line.strip().startswith("tpot"))
        assert tpot_line.endswith(confidence.band_text("", (1 / high - 1, 1 / low - 1)))
        assert confidence.BAND_NOTE in out
        # E2E carries a band, and the line on its measured coverage, where that was measured: with a TTFT
        # band in its envelope (MoE pools), not a dense run's TPOT band alone (its TTFT shows none: a review)
        ttft_band = any("ttft" in b["band"] for b in block.values())
        assert next(x for x in out.splitlines() if x.strip().startswith("e2e")).endswith("%)") == ttft_band
        assert (confidence.e2e_band_note() in out) == ttft_band


def test_e2e_band_says_its_measured_coverage_and_on_which_side_it_misses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The shipped coverage of E2E's band (`calibrate --reference --write`, `e2e_band`) in words."""
    from engine.calibration.band_lookup import e2e_coverage

    cov = e2e_coverage()
    assert cov is not None and cov[1] >= 20
    note = confidence.e2e_band_note()
    assert f"it held {cov[0]:.0%} of {cov[1]} published mean E2Es" in note
    assert ("more than it says" in note) == (cov[0] > 0.76) and ("fewer" in note) == (cov[0] < 0.60)
    from engine.cli.main import main

    # a MoE run on a chip with its own MoE data: its E2E envelope holds a TTFT band, and `run` says
    # the note under its bands; on the H200 (same silicon as the H100, no MoE rows of its own) too, since
    # its TTFT band is the MoE rows' and its throughput band's turned round (it showed none: a review)
    on = ["--set", "duration_s=20", "--set", "deployment.pools[0].hardware=b200"]
    assert main(["run", "moe-deepseek-h200", *on, "--set", "deployment.pools[1].hardware=b200"]) == 0
    assert note in capsys.readouterr().out
    assert main(["run", "moe-deepseek-h200", "--set", "duration_s=20"]) == 0
    assert note in capsys.readouterr().out
    assert main(["run", "chat-colocated", "--set", "duration_s=20"]) == 0  # dense: no TTFT band, no note
    assert note not in capsys.readouterr().out


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
    # met requests over the bill: both more of them and the drain gone, at best
    rise = req["total"] / good * s["drain_end_s"] / sc.duration_s - 1.0
    assert bounds["goodput_per_usd"] == (float("inf"), pytest.approx(rise))
    assert "ttft_p99_ms" not in bounds and "joules_per_output_token" not in bounds
    marks = confidence.pool_marks(sc, s)
    r = confidence.headline_range(marks, "throughput_rps")
    assert r is not None and r[0] < -0.05 and r[1] > 0.05
    if req["completed"] == req["total"]:  # the preset keeps up: nothing more to serve
        assert confidence.with_figure_error("9.90 req/s", marks, "throughput_rps", bounds) == (
            f"9.90 req/s ({confidence.side_text(r[0])} to +0%)"
        )
        cost = confidence.headline_range(marks, "usd_per_request")
        assert cost is not None and 0 < floor < -cost[0]  # the drain is short: cost can fall a little
        assert confidence.with_figure_error("$0.002", marks, "usd_per_request", bounds) == (
            f"$0.002 (−{trust.error_text(floor)} to {confidence.side_text(cost[1])})"
        )
    # no bounds at all keep the whole band
    assert confidence.with_figure_error("9.90 req/s", marks, "throughput_rps") == confidence.band_text(
        "9.90 req/s", r
    )
    assert (
        confidence.band((-0.36, 0.36), (float("inf"), 0.5)) == "± 36%"
    )  # a bound wider than the band: no cut
    assert confidence.band((-0.36, 0.36), (float("inf"), 0.1)) == "−36% to +10%"
    assert confidence.band((0.05, 0.3), (float("inf"), 0.0)) == "± 0%"  # a rise cut to nothing
    closed = io.apply_overrides(
        sc,
        {"workload.arrival": {"kind": "closed_loop", "clients": 8, "think_time_s": 0.5}, "duration_s": 20.0},
    )
    assert confidence.limits(simulate(closed).summary, closed) == {}
    # an autoscaled pool bills fewer instances on faster chips: its costs have no floor, its goodput its cap
    # (day-autoscaled read '$0.51 per 1k requests (+0% to +32%)' where its faster rerun bills 21% less: a review)
    day = io.apply_overrides(io.load_preset("day-autoscaled"), {"duration_s": 600.0})
    scaled = confidence.limits(simulate(day).summary, day)
    assert "usd_per_request" not in scaled and "usd_per_million_output_tokens" not in scaled
    assert "goodput_per_usd" not in scaled  # over a bill that falls on faster chips: no cap either
    assert "goodput_rps" in scaled and "throughput_rps" in scaled
    assert "goodput_per_usd" in bounds and "usd_per_request" in bounds  # a fixed fleet keeps both
    # Compare's table cuts each side's band as its card does (it once read −22% to +30% beside the
    # cards' −22% to +0%); a side without bounds keeps its whole band, and the two are taken together
    labels = ["Throughput", "Cost per request", "TTFT p99"]
    cut = confidence.compared_errors(labels, marks, marks, (bounds, bounds))
    whole = confidence.compared_errors(labels, marks, marks)
    assert cut[2] == whole[2]  # a latency: no bound
    assert req["completed"] == req["total"]  # the preset keeps up: nothing more to serve
    assert cut[0] == f"{confidence.side_text(r[0])} to +0%" != whole[0]
    cost = confidence.headline_range(marks, "usd_per_request")
    assert cost is not None and cut[1] == confidence.band(cost, bounds["usd_per_request"])
    assert confidence.compared_errors(labels, marks, marks, (bounds, {}))[0] == whole[0]


def test_a_spread_band_takes_the_runs_moves_and_keeps_a_latencys_own_error() -> None:
    """Throughput-borne figures take their run's spread alone; a latency and a cost never narrower
    than their kind's error; SLO attainment in points; no '-0%'."""
    from engine.explain.run_bands import spread_band

    assert spread_band("ttft_p99_ms", (-0.09, 0.09), (0.39, -0.22)) == "−22% to +39%"
    assert spread_band("ttft_p99_ms", (-0.09, 0.09), (0.02, -0.01)) == "± 9%"  # the kind's band, both sides
    assert spread_band("tpot_p99_ms", (-0.07, 0.12), (0.17, -0.03)) == "−7% to +17%"
    assert spread_band("goodput_rps", (-0.15, 0.15), (-0.01, 0.0)) == "−1% to +0%"  # served all it was sent
    assert spread_band("throughput_rps", (-0.15, 0.15), (-0.0, 0.0)) == "± 0%"
    # a cost at the run's fixed load barely moves ('−1% to +2%' read as certain): its kind's band holds
    assert spread_band("usd_per_request", (-0.15, 0.15), (0.02, -0.01)) == "± 15%"
    assert spread_band("usd_per_million_output_tokens", (-0.05, 0.29), (0.4, -0.01)) == "−5% to +40%"
    # goodput per $ keeps throughput's band as the costs keep it turned round: a cost per request of
    # -5% to +29% sat beside goodput per $ of -7% to +3% (a review)
    assert spread_band("goodput_per_usd", (-0.22, 0.03), (-0.07, 0.03)) == "−22% to +3%"
    assert spread_band("goodput_rps", (-0.36, 0.36), (-0.81, 3.5)) == "−81% to > +100%"
    # both edges slower: the band still holds the modelled figure (kv-link-fault's goodput read '−4% to −1%',
    # a band without the likeliest outcome in it: a review)
    assert spread_band("goodput_rps", None, (-0.3, -0.05)) == "−30% to +0%"
    assert spread_band("e2e_p99_ms", None, (0.34, 0.30)) == "+0% to +34%"
    assert spread_band("slo_attainment", None, (-0.367, 0.043)) == "−36.7 to +4.3 pts"
    assert spread_band("slo_attainment", None, (0.0, 0.0)) == "± 0 pts"
    assert spread_band("slo_attainment", None, (-0.0001, 0.02)) == "+0.0 to +2.0 pts"  # never −0.0
    # moves that round to nothing both ways read as none ('+0.0 to +0.0 pts' beside '± 0%': a browser review)
    assert spread_band("slo_attainment", None, (-0.0001, 0.0002)) == "± 0 pts"
    assert spread_band("ttft_p99_ms", None, (0.1, -0.05)) == "−5% to +10%"  # no kind error known


def test_a_band_side_reads_as_a_change() -> None:
    """'−36%', '+39%', '> +100%' past a doubling, and '+0%' for nothing, never '−0%'."""
    from engine.explain.confidence import band, side_text

    assert [side_text(x) for x in (-0.36, 0.39, 1.5, -0.0, 0.0, 0.004)] == [
        "−36%", "+39%", "> +100%", "+0%", "+0%", "+0%"
    ]  # fmt: skip
    assert band((-0.15, 0.15), (0.0, float("inf"))) == "+0% to +15%"
    assert band((-0.36, 0.36), (float("inf"), 0.0)) == "−36% to +0%"


def test_an_slo_band_that_spans_nearly_everything_is_left_off_and_said() -> None:
    """A 2.4% attainment moving −2.4 to +97.6 pts reads 'anywhere from 0% to 100%': no band, and a
    line saying why; a band narrower than nine tenths of the range is shown and has no such line."""
    from engine.explain.run_bands import figure_band, slo_band_note

    cliff, narrow = {"slo_attainment": (-0.024, 0.976)}, {"slo_attainment": (-0.367, 0.043)}
    assert figure_band("2.4%", [], "slo_attainment", cliff) is None
    assert figure_band("95.7%", [], "slo_attainment", narrow) == "−36.7 to +4.3 pts"
    note = slo_band_note(cliff, 0.024)
    assert note is not None and "from 0% to 100%" in note
    assert slo_band_note(narrow, 0.957) is None
    assert slo_band_note(None, 0.5) is None


def test_a_count_whose_band_falls_to_nothing_is_left_off_and_said() -> None:
    """Goodput moving −100% to +0% reads 'from nothing to this': no band, and a line saying why
    (shorter after SLO attainment's, which has said the load sits on a cliff); a fall short of nine
    tenths keeps its band, and a cost, which has no floor, keeps any band."""
    from engine.explain.run_bands import cliff_notes, falls_to_nothing, figure_band, floor_band_note

    cliff = {
        "goodput_rps": (-1.0, 0.0025),
        "goodput_per_usd": (-1.0, 0.0025),
        "usd_per_request": (0.32, -0.14),
    }
    assert falls_to_nothing("goodput_rps", cliff["goodput_rps"])
    assert not falls_to_nothing("goodput_rps", (-0.89, 0.1)) and not falls_to_nothing(
        "usd_per_request", (-0.95, 0.0)
    )
    assert figure_band("9.95 req/s", [], "goodput_rps", cliff) is None
    assert figure_band("$0.0031", [], "usd_per_request", cliff) == "−14% to +32%"
    assert figure_band("9.95 req/s", [], "goodput_rps", {"goodput_rps": (-0.5, 0.1)}) == "−50% to +10%"
    note = floor_band_note(cliff)
    assert note is not None and note.startswith("Goodput and goodput per $ show no band") and "100%" in note
    assert floor_band_note({"goodput_rps": (-0.5, 0.1)}) is None and floor_band_note(None) is None
    both = cliff_notes({**cliff, "slo_attainment": (-0.997, 0.002)}, 0.997)
    assert len(both) == 2 and both[0].startswith("SLO attainment shows no band") and "either" in both[1]
    assert cliff_notes({"goodput_rps": (-0.2, 0.1)}, 0.9) == []


def test_a_chip_its_vendors_compiler_places_is_not_said_to_run_under_the_stack() -> None:
    """Groq's LPU (and SambaNova's SN40L, an FPGA) run the vendor's compiler and runtime, not vLLM:
    the calibration says so in its line, the note and the summary (the stack still gives the pool its
    scheduler's defaults); a GPU's says the stack, and its summary has no such key."""
    sc = io.apply_overrides(io.load_preset("sram-decode-groq"), {"duration_s": 10.0})
    res = simulate(sc)
    (mark,) = confidence.pool_marks(sc, res.summary)
    assert mark.calibration.software == "Groq's compiler and runtime" and mark.calibration.stack == "vllm"
    assert res.summary["calibration"]["lpu"]["software"] == "Groq's compiler and runtime"
    assert confidence.describe(mark.calibration).startswith(
        "uncalibrated under Groq's compiler and runtime: "
    )
    note = confidence.note((mark,)) or ""
    assert note.startswith("Uncalibrated: pool lpu on groq-lpu under Groq's compiler and runtime: ")
    from engine.explain.software import software_answer
    from engine.scenario.resolve import resolve

    said = software_answer(res, resolve(sc), "decode").text  # the specialisation test's software answer
    assert "numbers come by rule under Groq's compiler and runtime" in said
    from engine.explain.advisor import calibration_findings

    # the advice to calibrate it says the benchmark is of the vendor's software, the stack only files it
    (advice,) = calibration_findings(res)
    assert "--stack vllm only files the fit" in advice.text and "the benchmark is of Groq's" in advice.text
    gpu = simulate(on(*UNCALIBRATED))
    marks = confidence.pool_marks(gpu.scenario, gpu.summary)
    assert all(m.calibration.software == "" and m.calibration.under == "vLLM" for m in marks)
    assert "software" not in next(iter(gpu.summary["calibration"].values()))
    assert (confidence.note(marks) or "").startswith("Uncalibrated under vLLM: ")
    assert all("only files the fit" not in f.text for f in calibration_findings(gpu))


def test_goodput_per_dollar_carries_the_band_of_the_two_it_is_the_ratio_of() -> None:
    """kv-link-fault read goodput −3% to −1% and cost per request −5% to +29% beside goodput per $ of
    −22% to +17% (throughput's band alone, cut by its own bound): the ratio allows −25% to +4% (a review)."""
    marks = confidence.pool_marks(io.load_preset("kv-link-fault"))
    moves = {
        "goodput_rps": (-0.03, -0.01),
        "usd_per_request": (0.01, -0.02),
        "goodput_per_usd": (-0.04, 0.02),
    }
    bounds = {"usd_per_request": (0.05, float("inf")), "goodput_per_usd": (float("inf"), 0.17)}
    cost = run_bands.figure_band("$0.00054", marks, "usd_per_request", moves, bounds)
    assert cost == "−5% to +32%"  # (+29% until the refit of 2026-12-06)
    said = run_bands.figure_band("1,664", marks, "goodput_per_usd", moves, bounds)
    assert said == f"−{(1 - 0.97 / 1.32) * 100:.0f}% to +{(0.99 / 0.95 - 1) * 100:.0f}%" == "−27% to +4%"


def test_goodput_is_banded_by_its_runs_spread_alone() -> None:
    # a goodput read "15.28 req/s (−24% to +6%)", the throughput band, where its spread fell by 92% (a review)
    marks = (PoolMark("m", "mixed", cal("a", True, throughput=(0.8, 1.25), tpot=(1.0, 1.25))),)
    assert run_bands.figure_band("15.28 req/s", marks, "goodput_rps") is None
    assert run_bands.figure_band("27.7", marks, "goodput_per_usd") is None
    assert run_bands.figure_band("15.28 req/s", marks, "throughput_rps") == "−20% to +25%"
    spread = {"goodput_rps": (-0.3, 0.05)}
    assert run_bands.figure_band("15.28 req/s", marks, "goodput_rps", spread) == "−30% to +5%"
