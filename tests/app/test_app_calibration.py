"""App tests of the calibration mark (issue 11, "no silent optimism"): every page that shows a number says how sure it is.

A scenario whose pools run on a chip with no profile fitted under its serving stack is marked
uncalibrated, with the pool, the chip and the rule, on the catalog table, the Results headline,
Compare, the Planner and the Advisor; a fitted one is marked calibrated and never uncalibrated.
Which chip is which comes from `engine.calibration.trust` (asserted first, as the catalog moves).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from engine.calibration import trust
from engine.calibration.trust import Calibration
from engine.catalog.entries import load_catalog
from engine.costmodel.stacks import SERVING_STACKS, STACK_NAMES
from engine.explain import confidence, run_bands
from engine.explain.margin import run_spread
from engine.scenario import codec as io
from engine.scenario.codec import DEFAULT_PRESET, to_link
from engine.serving.run import simulate
from tests.app.harness import APP, app, assert_clean, catalog, scenario_of, short, shown_cells, text_of
from ui.bound import UNSET

UNCALIBRATED = ("mi325x", "vllm")
CALIBRATED = ("h100-sxm", "trtllm")


def on(chip: str, stack: str, **over: Any) -> Any:
    """The default preset (two pools) on one chip under one stack, shortened."""
    return short(**{"deployment.stack": stack, "deployment.pools[0].hardware": chip,
                    "deployment.pools[1].hardware": chip, **over})  # fmt: skip


def calibration_of(chip: str, stack: str) -> Calibration:
    cat = load_catalog()
    return trust.calibration(cat.hardware[chip], stack, cat)[1]


def texts(block: Any) -> str:
    """Everything a keyed block shows as text (Markdown unescaped)."""
    parts = [m.value for m in block.markdown] + [c.value for c in block.caption]
    return text_of(" ".join(parts))


def test_the_chosen_chips_are_what_the_tests_say() -> None:
    assert not calibration_of(*UNCALIBRATED).fitted, "pick another uncalibrated chip for these tests"
    assert calibration_of(*CALIBRATED).fitted, "pick another calibrated chip for these tests"


def test_an_uncalibrated_pool_is_marked_on_results_with_error_bars_and_a_finding() -> None:
    chip, stack = UNCALIBRATED
    cal = calibration_of(chip, stack)
    at = app("results", on(chip, stack))
    assert_clean(at)
    mark = texts(at.get_by_key("fg-calibration"))
    assert "uncalibrated" in mark and f"pools prefill, decode on {chip}, by a rule" in mark
    # the rule said once, in the advisor below (a MoE rule's paragraph stood in both: a review)
    assert cal.rule not in mark and "The advisor below names each rule" in mark
    shown = {m.label: m.value for m in at.metric}
    bands = {m.label: m.proto.delta for m in at.metric}
    # each headline figure's band is its run's spread: the same requests with the chip at either edge
    # of its throughput band, the latencies never narrower than their kind's band
    sc = scenario_of(at)
    summary = simulate(sc).summary
    spread = run_spread(sc, summary)
    assert spread.slowdown == {chip: cal.edges()[0]} and spread.speedup == {chip: cal.edges()[1]}
    moves = spread.moves()
    for label, key, figure in (("TTFT p99", "ttft_p99_ms", "ttft"), ("TPOT p99", "tpot_p99_ms", "tpot"),
                               ("Goodput", "goodput_rps", "throughput"), ("$ / request", "usd_per_request", "throughput"),
                               ("SLO attainment", "slo_attainment", None)):  # fmt: skip
        own = cal.real_band(figure) if figure else None
        if key in run_bands.COSTS and own is not None:  # throughput's band turned round, cut by the bill
            own = (1.0 / (1.0 + own[1]) - 1.0, 1.0 / (1.0 + own[0]) - 1.0)
            own = confidence.cut(own, confidence.limits(summary, sc).get(key))
        cliff = (key == "slo_attainment" and run_bands.spans_all(moves[key])) or run_bands.falls_to_nothing(
            key, moves[key]
        )  # 0% to 100%, or from nothing to the figure: no band
        band = "" if cliff else run_bands.spread_band(key, own, moves[key])
        assert bands[label] == band, (label, shown[label], bands[label], band)  # under the figure
        if key in run_bands.LATENCIES and own is not None:
            assert band == run_bands.spread_band(
                key, None, (min(own[0], *moves[key]), max(own[1], *moves[key]))
            )
    assert shown["SLO attainment"].endswith("%")
    assert "%" not in shown["Energy per output token"]  # energy's band coverage is not measured: none shown
    assert "±" not in shown["Bill per hour"]
    captions = [text_of(c.value) for c in at.caption]
    # a band left off (a load on a cliff) is said as a warning under the bands' line, not in its small print
    cliffs = [
        text_of(w.value)
        for w in at.warning
        if "show no band" in text_of(w.value) or "shows no band" in text_of(w.value)
    ]
    if run_bands.spans_all(moves["slo_attainment"]):
        assert any("SLO attainment shows no band" in c for c in cliffs), cliffs
    else:
        assert "pts" in bands["SLO attainment"]
    if run_bands.falls_to_nothing("goodput_rps", moves["goodput_rps"]):  # and a count's from nothing
        assert any("Goodput and goodput per" in c and "show no band" in c for c in cliffs), cliffs
    assert not [c for c in captions if "show no band" in c or "shows no band" in c]
    lo, hi = (f"{e:+.0%}".replace("-", "\u2212") for e in cal.edges())  # with the bands' minus sign
    edges = f"{chip} {lo} / {hi}"
    assert any("Bands:" in c and edges in c for c in captions), captions
    assert any(confidence.BAND_MEANING in c for c in captions), captions
    advice = [text_of(w.value) for w in at.get_by_key("fg-advisor").warning]
    assert any(a.startswith(f"{chip} (pools prefill, decode) is uncalibrated") and "fengong calibrate" in a
               and cal.rule in a for a in advice), advice  # fmt: skip


def test_a_steep_slo_band_says_which_class_misses_at_the_slow_edge() -> None:
    """The colocated preset's SLO attainment falls steeply at the pessimistic edge (its TPOT p90 sits
    under the target): a warning under the bands' line names the class and what it misses there (it
    was the line's small print). At 13 req/s: at its 16 the fall spans everything since 2026-12-06
    (+32% time), a band left off and said by the line above."""
    sc = io.apply_overrides(io.load_preset("chat-colocated"), {"workload.arrival.rate_rps": 13.0})
    at = app("results", sc, preset="chat-colocated")
    assert_clean(at)
    note = run_spread(sc, simulate(sc).summary).slow_edge_note(sc)
    assert note is not None and "class chat misses its SLO" in note
    said = [text_of(w.value) for w in at.get_by_key("fg-cliff").warning]
    assert said == [note], said
    # Compare says it for both sides at once where they are the same run
    at.switch_page("app_pages/compare.py").run()
    at.selectbox(key="a").set_value("current").run()
    at.selectbox(key="b").set_value("current").run()
    assert_clean(at)
    said = [text_of(w.value) for w in at.get_by_key("fg-cliff").warning]
    assert said == [f"A and B: {note}"], said


def test_a_calibrated_run_is_marked_calibrated_and_nothing_says_uncalibrated() -> None:
    at = app("results", on(*CALIBRATED))
    assert_clean(at)
    mark = texts(at.get_by_key("fg-calibration"))
    assert "calibrated" in mark and "uncalibrated" not in mark.lower()
    assert not [w for w in at.get_by_key("fg-advisor").warning if "uncalibrated" in w.value]


def test_a_moe_model_on_a_fitted_chip_is_marked_partly_calibrated() -> None:
    """Results says 'partly calibrated' (not plain 'calibrated') beside the MoE error bars, the
    caption says only the dense layers are the chip's fit, and the advisor says why and how to fit
    the chip's own."""
    sc = short("moe-deepseek-h200", **{"deployment.stack": "trtllm"})
    at = app("results", sc, preset="moe-deepseek-h200")
    assert_clean(at)
    mark = texts(at.get_by_key("fg-calibration"))
    assert "partly calibrated" in mark and "uncalibrated" not in mark and "dense layers" in mark, mark
    assert "experts at" in mark
    notes = [text_of(i.value) for i in at.get_by_key("fg-advisor").info]
    assert any("is partly calibrated under TensorRT-LLM" in n and "fengong calibrate" in n for n in notes)
    at.switch_page("app_pages/strategy.py").run()
    assert_clean(at)
    assert "partly calibrated" in " ".join(m.value for m in at.markdown)


def test_the_catalog_table_marks_each_chip_under_the_stack() -> None:
    at = app("hardware", on(*UNCALIBRATED))
    assert_clean(at)
    table = catalog(at)
    assert table.loc[UNCALIBRATED[0], "calibration"].startswith("uncalibrated: ")
    assert "expected_error" in table.columns and table.loc[UNCALIBRATED[0], "calibration_rule"]
    # under TensorRT-LLM the H100 is fitted: the same table says so
    at = app("hardware", on(*CALIBRATED))
    table = catalog(at)
    assert table.loc[CALIBRATED[0], "calibration"] == "calibrated"
    band = calibration_of(*CALIBRATED).real_band("throughput")
    assert band is not None
    assert f"throughput {confidence.signed_text(*band)}" in table.loc[CALIBRATED[0], "expected_error"]


def test_compare_marks_each_side_and_its_error_bars() -> None:
    at = app("compare", on(*UNCALIBRATED))
    at.selectbox(key="a").set_value("current").run()
    at.selectbox(key="b").set_value("current").run()
    assert_clean(at)
    for side in "ab":
        assert "uncalibrated" in texts(at.get_by_key(f"fg-calibration-{side}"))
    cal = calibration_of(*UNCALIBRATED)
    heads = {m.label: m for m in at.metric}
    # each side's figure carries its run's spread, as on Results: the same band for A and B here
    sc = scenario_of(at)
    moves = run_spread(sc, simulate(sc).summary).moves()
    band = run_bands.spread_band("ttft_p99_ms", cal.real_band("ttft"), moves["ttft_p99_ms"])
    shown = heads["TTFT p99: B"]
    assert shown.value.endswith(band if band.startswith("±") else f"({band})"), (shown.value, band)
    assert f"({band})" in shown.help or band in shown.help
    captions = [text_of(c.value) for c in at.caption]
    assert any(c.startswith("Bands (A and B): how each figure moves") for c in captions), captions
    table = next(df.value for df in at.dataframe if "better" in df.value.columns).set_index("figure")
    assert "band" in table.columns
    # the table's band is the cards' once the spreads are known (A and B the same here): goodput's
    # falls to nothing with the chips slowed, so neither shows one (a line says why); TTFT reads as its card
    # a figure without a band is drawn '–', not an empty cell (nor the text 'nan': a review)
    assert pd.isna(table["band"]["SLO attainment"]) and pd.isna(table["band"]["Cost per hour"])
    drawn = shown_cells(next(df for df in at.dataframe if "better" in df.value.columns)).set_index("figure")
    assert drawn.loc["SLO attainment", "band"] == "–" and drawn.loc["Cost per hour ($/h)", "band"] == "–"
    assert "nan" not in drawn.to_numpy().astype(str), drawn
    assert run_bands.falls_to_nothing("goodput_rps", moves["goodput_rps"]) == pd.isna(
        table["band"]["Goodput"]
    )
    assert table["band"]["TTFT p99"] and table["band"]["TTFT p99"] in shown.value
    assert any(confidence.BAND_MEANING in c for c in captions)

    at = app("compare", on(*CALIBRATED))
    at.selectbox(key="b").set_value("current").run()
    assert "uncalibrated" not in texts(at.get_by_key("fg-calibration-b")).lower()


def test_strategy_shows_each_pools_mark_and_the_stack_defaults() -> None:
    chip, stack = UNCALIBRATED
    at = app("strategy", on(chip, stack))
    assert_clean(at)
    badges = [m.value for m in at.markdown if "-badge[" in m.value and "uncalibrated" in m.value]
    assert len(badges) >= 2  # one per pool (the live strip in the sidebar has its own)
    assert any(calibration_of(chip, stack).rule in text_of(c.value) for c in at.caption)

    # a fitted pool whose profile missed online serving says so under the pool, not only in the badge
    fitted = calibration_of("h100-sxm", "vllm-v0")
    assert fitted.fitted and fitted.caveat
    at = app("strategy", on("h100-sxm", "vllm-v0"))
    assert_clean(at)
    pools = [text_of(c.value) for c in at.caption if text_of(c.value).startswith("fitted to measurements")]
    assert len(pools) == 2 and all(fitted.caveat in c for c in pools)

    # the stack: TensorRT-LLM on the H100 makes the pools calibrated
    sc = on(*CALIBRATED, **{"deployment.stack": "vllm"})
    at = app("strategy", sc)
    box = at.selectbox(key="fg:deployment.stack")
    assert {"vLLM", "SGLang", "TensorRT-LLM"} <= set(box.options) == {STACK_NAMES[s] for s in SERVING_STACKS}
    box.set_value("trtllm").run()
    assert_clean(at)
    assert scenario_of(at).deployment.stack == "trtllm"

    # batching: empty boxes show the stack's defaults; a typed value overrides, the button goes back
    limits = scenario_of(at).batching()
    field = at.number_input(key="fg:deployment.batching.max_batch")
    assert field.value is None and f"{limits.max_batch:,}" in field.proto.placeholder
    field.set_value(64).run()
    assert_clean(at)
    assert scenario_of(at).deployment.batching.max_batch == 64 and scenario_of(at).batching().max_batch == 64
    _box(at, "fg:deployment.batching.chunked_prefill").set_value(False).run()
    assert scenario_of(at).deployment.batching.chunked_prefill is False
    next(b for b in at.button if b.key == "fg:defaults:deployment.batching").click().run()
    assert_clean(at)
    assert scenario_of(at).deployment.batching.max_batch is None
    assert scenario_of(at).deployment.batching.chunked_prefill is None


def test_kv_precision_can_be_left_to_the_stack() -> None:
    at = app("hardware", on(*CALIBRATED, **{"model.weights": "fp8", "model.kv": None}))
    assert_clean(at)
    kv = at.selectbox(key="fg:model.kv")
    assert (
        kv.value == UNSET and "fp8 (TensorRT-LLM default)" in kv.options
    )  # its value first: a narrow box cut it
    kv.set_value("bf16").run()
    assert scenario_of(at).model.kv == "bf16" and scenario_of(at).kv_precision() == "bf16"
    at.selectbox(key="fg:model.kv").set_value(UNSET).run()
    assert scenario_of(at).model.kv is None and scenario_of(at).kv_precision() == "fp8"


@pytest.mark.parametrize("chip_stack", [UNCALIBRATED, CALIBRATED])
def test_the_planner_marks_its_rows_and_points(chip_stack: tuple[str, str]) -> None:
    chip, stack = chip_stack
    fitted = calibration_of(chip, stack).fitted
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params.update(to_link(on(chip, stack), DEFAULT_PRESET))
    at.run()
    at.switch_page("app_pages/planner.py").run()
    at.number_input(key="plan_target").set_value(12.0)
    at.multiselect(key="plan_hardware").set_value([chip])
    at.multiselect(key="plan_tp").set_value([2])
    at.selectbox(key="plan_window").set_value(60.0)
    at.number_input(key="plan_sims").set_value(12)
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    frames = [df.value for df in at.dataframe if "calibration" in df.value.columns]
    assert len(frames) == 2  # every simulated run, and every shape
    for frame in frames:
        assert (frame["calibrated"] == fitted).all()
        assert frame["calibration"].str.startswith("calibrated" if fitted else f"uncalibrated: {chip}").all()
    names = {t["name"]: t for c in at.get("plotly_chart") for t in json.loads(c.proto.spec)["data"]}
    open_traces = [t for n, t in names.items() if n.endswith("uncalibrated chip")]
    if fitted:
        assert not open_traces
    else:
        assert open_traces and all(re.search(r"-open$", t["marker"]["symbol"]) for t in open_traces)
    if any("Cheapest deployment" in s.value for s in at.success):
        mark = texts(at.get_by_key("fg-plan-calibration"))
        assert ("uncalibrated" in mark) is not fitted


def _box(at: Any, key: str) -> Any:
    """The select box of a field whose first label names the stack: keyed by it too (`ui.bound.select`)."""
    return next(s for s in at.selectbox if s.key == key or (s.key or "").startswith(f"{key}:"))


def test_the_iteration_scheduler_is_the_stacks_until_chosen() -> None:
    at = app("strategy", on(*CALIBRATED, **{"deployment.stack": "sglang"}))
    assert_clean(at)
    box = _box(at, "fg:scheduler.iteration.name")
    assert box.value == "(the stack's)" and "prefill_first" in box.format_func(box.value)
    box.set_value("mixed").run()
    assert_clean(at)
    assert scenario_of(at).iteration_scheduler().name == "mixed"
    _box(at, "fg:scheduler.iteration.name").set_value("(the stack's)").run()
    assert scenario_of(at).scheduler.iteration is None
    assert scenario_of(at).iteration_scheduler().name == "prefill_first"


def test_the_kinds_bands_are_said_provisional_until_the_runs_spread_replaces_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cards' first bands are their kinds'; the run's spread replaced them seconds later with no word
    (a browser review): a caption says so while the spread runs, on Results and Compare, and the
    spread's caption takes its place."""
    from ui import margin

    for page in ("results", "compare"):
        at = app(page)
        assert_clean(at)
        captions = [text_of(c.value) for c in at.caption]
        assert margin.PROVISIONAL not in captions, (page, captions)  # replaced at the end
        assert any("pessimistic" in c for c in captions), (page, captions)

    def stopped(*_: object) -> None:  # the page as it stands while the spread runs
        raise RuntimeError("the spread, still running")

    monkeypatch.setattr(margin, "_run_spread", stopped)
    for page in ("results", "compare"):
        at = app(page)
        assert margin.PROVISIONAL in [text_of(c.value) for c in at.caption], page
