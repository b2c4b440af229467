"""Calibration: shipped profiles are reproducible from the reference data, and the fit works."""

from __future__ import annotations

import csv
import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.calibration import calibrate, crossval, measurements, predictor, reference, trust, validation
from engine.catalog.entries import Catalog, entry_to_toml, presets_dir
from engine.catalog.specs import CalibrationProfile
from engine.cli import validate as cli_validate
from engine.cli import validate_cache
from engine.costmodel.step import StepModel
from engine.scenario.model import Deployment

REF = calibrate.reference_csv() or Path("/nonexistent")


def test_reference_data_ships_with_the_project() -> None:
    """make validate and the refit need no folder outside the repository."""
    assert REF.is_file() and REF.is_relative_to(Path(calibrate.__file__).resolve().parents[2])


@pytest.fixture(scope="module")
def points() -> list[measurements.Measurement]:
    return measurements.read_reference_csv(REF)


def test_reference_file_read_unchanged(points: list[measurements.Measurement]) -> None:
    assert len(points) == 31
    kinds = {p.kind for p in points}
    assert kinds == {"prefill", "decode", "throughput"}
    h082 = next(p for p in points if p.id == "H082")
    assert (h082.kind, h082.batch, h082.context_tokens, h082.value) == ("decode", 1, 512, 29.76)


@pytest.fixture(scope="module")
def usable(catalog: Catalog) -> list[measurements.Measurement]:
    return reference.usable_points(catalog)


@pytest.fixture(scope="module")
def report() -> validation.Report:
    """`validation.report` of the shipped catalog, computed once a run by whichever test process
    asks first (the run's cache, tests/conftest.py) and read by the other and the README's validate."""
    return validate_cache.report()


@pytest.fixture(scope="module")
def simulated(report: validation.Report) -> tuple[Any, Any]:
    """The simulator's reruns with `report`'s fit: open-loop rows, fitted points (what `make
    validate` shows), computed once a run as `report` is."""
    return validate_cache.reruns(report)


def test_shipped_profiles_equal_a_fresh_fit(usable: list[measurements.Measurement], catalog: Catalog) -> None:
    fits = calibrate.reference_fits(usable, catalog)
    expected = {
        ("h100-sxm", "trtllm"), ("h100-sxm", "vllm"), ("h100-sxm", "vllm-v0"), ("h100-sxm", "splitwise"),
        ("a100-80g", "splitwise"), ("mi300x", "vllm"), ("mi300x", "vllm-v0"), ("b200", "vllm"), ("b200", "trtllm"),
    }  # fmt: skip
    assert expected <= set(fits)
    for (chip, stack), f in fits.items():
        shipped = catalog.chip(chip).profiles[stack]
        assert shipped.eta_compute == pytest.approx(f.profile.eta_compute, abs=0.002), (chip, stack)
        assert shipped.eta_bandwidth == pytest.approx(f.profile.eta_bandwidth, abs=0.002), (chip, stack)
        assert shipped.overhead_ms == pytest.approx(f.profile.overhead_ms, abs=0.02), (chip, stack)
        assert trust.is_fitted(shipped)


def test_expected_errors_equal_a_fresh_cross_validation(
    report: validation.Report, simulated: tuple[Any, Any]
) -> None:
    """presets/calibration.toml is what `calibrate --reference --write` would write today."""
    shipped = (presets_dir() / "calibration.toml").read_text(encoding="utf-8")
    e2e = simulated[0]
    assert shipped == cli_validate.expected_error_toml(report, e2e)
    # every basis the app can show has figures for each kind of headline number
    for basis in ("fitted", "same_silicon", "other_stack", "transfer", "moe"):
        assert set(trust.expected_errors(basis)) >= {"throughput", "ttft", "tpot", "energy"}, basis  # type: ignore[arg-type]


def test_fit_quality_is_what_the_docs_state(report: validation.Report) -> None:
    fit = report.predictions[report.predictions["scheme"] == "fit"]
    assert fit["abs_error"].median() < 0.12
    assert fit["abs_error"].quantile(0.9) < 0.30
    thr = fit[(fit["stack"] == "trtllm") & (fit["figure"] == "throughput")]
    assert thr["abs_error"].median() < 0.12
    # MoE rows fit their experts' factor alone; held out with their source, their throughput
    # misses by far less than with the experts as fast as the dense layers (145%), and by the
    # median the app's MoE error bar states
    moe = report.predictions[
        (report.predictions["scheme"] == "moe_loso") & (report.predictions["figure"] == "throughput")
    ]
    assert len(moe) >= 10 and moe["abs_error"].median() < 0.5
    assert round(float(moe["abs_error"].median()), 2) == report.expected_error["moe"]["throughput"]
    split = fit[fit["stack"] == "splitwise"]
    assert split["abs_error"].median() < 0.25
    # held out, the model misses by more than it does in sample: the error bars say so
    assert report.headline["loso"]["median"] > report.headline["fit"]["median"]


def test_moe_experts_run_slower_than_the_dense_layers(report: validation.Report, catalog: Catalog) -> None:
    """The MoE rows' factor: with experts as fast as the dense layers (eta_experts 1) the model
    over-predicts most MoE throughputs, from every source; the fitted factor is well below 1, is
    what the app runs MoE models with, and a refit without any one source moves it little."""
    ef = report.experts
    assert ef is not None and 0.15 < ef.eta_experts < 0.6
    assert trust.experts_factor() == ef.eta_experts
    points = reference.usable_points(catalog)
    fits = calibrate.reference_fits(points, catalog)
    moe = [m for m in points if calibrate.is_moe(m, catalog) and m.figure == "throughput"]
    sources = {m.source_key for m in moe}
    assert len(sources) >= 3
    for src in sources:
        rows = [m for m in moe if m.source_key == src]
        as_dense = [
            predictor.predict(
                m, catalog, crossval.rule_profile(m.hardware, measurements.stack_of(m), fits)[0]
            )
            / m.value
            for m in rows
        ]
        assert np.median(as_dense) > 1.25, src
        refit = report.fold_experts[src]  # refitted without src, as its held-out points were predicted
        assert refit.ids and not {m.id for m in rows} & set(refit.ids), src
        # 0.15: since Qwen3's 4 KV heads are held twice at TP8 (2026-12-06) the SGLang cookbook's Qwen
        # rows move it by 0.15 (0.1 before); every other source by 0.1 or less
        assert abs(refit.eta_experts - ef.eta_experts) <= 0.15 + 1e-9, src
    # the fit is what the points say: a point's prediction slows as eta_experts falls
    m = moe[0]
    prof = crossval.rule_profile(m.hardware, measurements.stack_of(m), fits)[0]
    values = [
        predictor.predict(m, catalog, prof.model_copy(update={"eta_experts": e})) for e in (1.0, 0.6, 0.3)
    ]
    assert values[0] > values[1] > values[2]


def test_every_reference_row_is_used_or_set_aside_with_a_reason(report: validation.Report) -> None:
    assert len(report.rows) == 31 + 231 + 1027 + 1026  # calibration.csv, -extra, -a100-ascend, -moe
    for r in report.rows:
        assert r.usable or len(r.reason) > 10, r.id
    assert report.usable >= 130
    by_id = {r.id: r for r in report.rows}
    # unstated settings are not guessed: output-or-total throughput, unknown lengths, EP
    assert not by_id["X114"].usable and "not stated" in by_id["X114"].reason
    assert not by_id["X147"].usable and "lengths" in by_id["X147"].reason
    assert not by_id["X139"].usable and "lengths" in by_id["X139"].reason  # ShareGPT at a rate
    assert not by_id["X070"].usable and by_id["X070"].reason == reference.OPEN_LOOP_REASON  # rerun whole
    assert (
        not by_id["X224"].usable and "lengths" in by_id["X224"].reason
    )  # "ISL 1K (dataset prepared by user)"
    # what a row states is read: static batch, units, concurrency, KV precision, stack and version
    x009 = by_id["X009"].point
    assert x009 is not None and (x009.kind, x009.batch, x009.static, x009.stack) == (
        "batch_latency",
        1,
        True,
        "vllm-v0",
    )
    x043 = by_id["X043"].point
    assert x043 is not None and x043.value == pytest.approx(3530.0)  # seconds read as ms
    x125 = by_id["X125"].point
    assert x125 is not None and (x125.kind, x125.concurrency, x125.stack, x125.prompt_tokens) == (
        "ttft",
        8,
        "vllm",
        20000,
    )
    x128 = by_id["X128"].point
    assert x128 is not None and x128.kv == "fp8"
    x001 = by_id["X001"].point
    assert x001 is not None and x001.kv == "bf16" and "stack's default" in x001.note
    x054 = by_id["X054"].point
    assert x054 is not None and x054.count_input and x054.static and x054.batch == 4


def test_parallel_layouts_are_read_as_the_rows_ran(report: validation.Report, catalog: Catalog) -> None:
    """Attention DP, expert parallelism and MTP rows become points where the row says enough."""
    by_id = {r.id: r for r in report.rows}
    # SGLang 0.4 --tp 8 --enable-dp-attention: attention DP 8, MoE tensor-parallel (balanced ranks),
    # each rank with half the default chunked prefill size
    x089 = by_id["X089"].point
    assert x089 is not None and (x089.tp, x089.dp, x089.ep, x089.imbalance) == (1, 8, 8, 1.0)
    assert x089.token_budget == 8 * 8192 // 2 and "SGLang DP attention" in x089.note
    # TensorRT-LLM attention DP with EP 8: per-rank max_batch_size and max_num_tokens times the ranks
    x225 = by_id["X225"].point
    assert x225 is not None and (x225.tp, x225.dp, x225.ep) == (1, 8, 8)
    assert (x225.max_batch, x225.token_budget, x225.kv) == (8 * 384, 8 * 1536, "bf16")
    assert x225.imbalance == reference.DEFAULT_EXPERT_IMBALANCE == Deployment().expert_imbalance
    assert calibrate.is_moe(x225, catalog) and not x225.plain
    # MTP without a stated acceptance rate is set aside, never guessed
    for rid in ("X223", "X226"):
        assert not by_id[rid].usable and "acceptance rate is not stated" in by_id[rid].reason
    text = REF.with_name(reference.EXTRA_FILE).read_text(encoding="utf-8")
    rows = {r["id"]: r for r in csv.DictReader(text.splitlines())}
    lay = reference._layout(rows["X226"], "trtllm")
    assert isinstance(lay, reference.Layout) and (lay.tp, lay.dp, lay.ep) == (8, 1, 4)
    # ML.ENERGY stores tp 1 for vLLM's expert parallelism on 8 GPUs: attention TP is the GPU count
    lay = reference._layout(rows["X161"], "vllm")
    assert isinstance(lay, reference.Layout) and (lay.tp, lay.dp, lay.ep) == (8, 1, 8)
    assert not by_id["X161"].usable and "lengths" in by_id["X161"].reason
    stated = {**rows["X226"], "notes": "speculative decoding (MTP); acceptance rate 62%"}
    assert reference._speculation(stated) == (3, 0.62)
    assert reference._speculation(rows["X225"]) is None


def test_parallel_points_are_timed_by_the_step_model(catalog: Catalog) -> None:
    """A data- or expert-parallel point is predicted with the engine's step model at the profile."""
    prof = CalibrationProfile(eta_compute=0.5, eta_bandwidth=0.7, overhead_ms=2.0, source="test")
    m = measurements.Measurement(
        id="t", model="deepseek-v3", hardware="h200", tp=1, dp=8, ep=8, imbalance=1.4, weights="fp8",
        kv="fp8", kind="decode", batch=256, context_tokens=3000, value=1.0, unit="ms",
    )  # fmt: skip
    inst = predictor._with_profile(predictor.measured_instance(m, catalog), prof)
    step = StepModel(inst).decode_run(256, 256 * 3000.0, 1)[0] * 1000.0
    assert predictor.predict(m, catalog, prof) == pytest.approx(step, rel=1e-9)
    # speculation amortises the step over the tokens it yields, overhead included
    spec = measurements.Measurement(**{**m.__dict__, "speculation": (1, 0.85)})
    assert predictor.predict(spec, catalog, prof) < predictor.predict(m, catalog, prof)
    assert "tp1 dp8 ep8, MTP 1 at 85%" in calibrate.table([spec], catalog, prof)["setup"][0]


def test_power_and_energy_rows_are_checked(report: validation.Report) -> None:
    e = report.energy_headline()
    assert e["energy_median"] <= validation.TARGETS["energy_median"]


def test_validation_page_is_current(report: validation.Report, simulated: tuple[Any, Any]) -> None:
    """docs/validation.md's generated half is what `python -m engine validate --markdown` prints today."""
    doc = (Path(calibrate.__file__).resolve().parents[2] / "docs" / "validation.md").read_text(
        encoding="utf-8"
    )
    marker = "a test keeps it current. -->\n\n"
    assert marker in doc
    e2e, reruns = simulated
    assert doc.split(marker, 1)[1].rstrip("\n") == cli_validate.markdown(report, e2e, reruns).rstrip("\n")


def _readme_validation_rows() -> dict[str, tuple[str, str]]:
    """README's validation table: row label -> (median cell, p90 cell)."""
    text = (Path(calibrate.__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    table = text.split("| | median error | p90 |\n|---|---:|---:|\n", 1)[1].split("\n\n", 1)[0]
    rows = [line.strip("|").rsplit("|", 2) for line in table.splitlines()]
    return {label.strip(): (med.strip(), p90.strip()) for label, med, p90 in rows}


def _as_printed(cell: str, value: float) -> str:
    """`value` (a fraction) printed as the README cell prints it: '13.3%' or '7%'."""
    decimals = len(cell.rstrip("%").partition(".")[2])
    return f"{value * 100:.{decimals}f}%"


def test_the_readme_states_the_validation_figures_as_measured(
    report: validation.Report, simulated: tuple[Any, Any]
) -> None:
    """Every figure of README's validation table is what make validate measures today, and each row
    names the points it counts: a README that keeps old figures after a model change fails."""
    from engine.explain import end_to_end

    e2e, reruns = simulated
    h, energy = report.headline, report.energy_headline()
    sim, online = end_to_end.rerun_headline(cli_validate.dense_reruns(reruns)), end_to_end.headline(e2e)
    moe_sim = end_to_end.rerun_headline(cli_validate.moe_reruns(reruns))
    expected = {
        "fitted profiles": (h["fit"]["median"], h["fit"]["p90"], h["fit"]["n"]),
        "each source left out": (h["loso"]["median"], h["loso"]["p90"], None),
        "the same, serving stacks only": (
            report.serving_headline["loso"]["median"], report.serving_headline["loso"]["p90"],
            report.serving_headline["loso"]["n"],
        ),
        "every usable row held out": (
            report.all_usable_headline["median"], report.all_usable_headline["p90"], report.all_usable_headline["n"],
        ),
        "each chip left out": (h["loco"]["median"], h["loco"]["p90"], None),
        "MoE rows": (h["moe"]["median"], h["moe"]["p90"], h["moe"]["n"]),
        "95 of the 119 dense points": (sim["simulated_median"], sim["simulated_p90"], sim["n"]),
        "tensor-parallel MoE points": (moe_sim["simulated_median"], moe_sim["simulated_p90"], moe_sim["n"]),
        "open-loop rows rerun end to end": (online["fit_median"], online["fit_p90"], online["n"]),
        "energy per output token": (energy["energy_median"], energy["energy_p90"], energy["energy_n"]),
    }  # fmt: skip
    rows = _readme_validation_rows()
    assert len(rows) == len(expected)
    for prefix, (median, p90, n) in expected.items():
        label = next(k for k in rows if k.startswith(prefix))
        med_cell, p90_cell = rows[label]
        assert (med_cell, p90_cell) == (_as_printed(med_cell, median), _as_printed(p90_cell, p90)), label
        if n is not None:
            assert re.search(rf"\b{int(n)}\b", label), (label, n)


def test_the_held_out_miss_is_shown_per_source(report: validation.Report) -> None:
    """Each publication left out in turn: its points, the rule they fell back on, and the error,
    largest first; the medians are those of the leave-source-out predictions themselves."""
    table = crossval.by_source(report.predictions)
    loso = report.predictions[report.predictions["scheme"] == "loso"]
    assert table["n"].sum() == len(loso)
    assert list(table["median"]) == sorted(table["median"], reverse=True)
    top = table.iloc[0]
    mine = loso[(loso["source"] == top["source"]) & (loso["basis"] == top["basis"])]
    assert top["median"] == pytest.approx(mine["abs_error"].median())
    assert set(table["basis"]) <= {"fitted", "same_silicon", "other_stack", "transfer"}
    assert report.as_dict()["sources"][0]["source"] == top["source"]
    # the MoE points get their own table, every one of them counted once
    moe = crossval.by_source(report.predictions, "moe_loso")
    assert moe["n"].sum() == (report.predictions["scheme"] == "moe_loso").sum() > 0
    assert any("Deepseek-R1" in s for s in moe["source"]) and not any(
        "Deepseek-R1" in s for s in table["source"]
    )


def test_the_serving_stacks_figure_leaves_only_the_research_harness_aside(report: validation.Report) -> None:
    """Shown beside the target, never instead: the same held-out predictions, Splitwise's points
    (a research harness, no serving stack) left out of the medians."""
    loso = report.predictions[report.predictions["scheme"] == "loso"]
    serving = loso[loso["stack"] != "splitwise"]
    got = report.serving_headline["loso"]
    assert got["n"] == len(serving) == len(loso) - int((loso["stack"] == "splitwise").sum()) > 0
    assert got["median"] == pytest.approx(serving["abs_error"].median())
    assert got["p90"] == pytest.approx(np.quantile(serving["abs_error"], 0.9))
    assert report.headline["loso"]["n"] == len(loso)  # the target's figure still counts every point
    # every usable row held out, MoE included: the issue's own wording, shown beside the target
    moe = report.predictions[report.predictions["scheme"] == "moe_loso"]
    assert set(moe["id"]) == set(report.predictions.loc[report.predictions["scheme"] == "moe", "id"])
    every = report.all_usable_headline
    harness = loso["stack"].isin(validation.SET_APART)  # Splitwise's research harness, counted apart
    assert harness.any() and not moe["stack"].isin(validation.SET_APART).any()
    assert every["n"] == len(loso) - harness.sum() + len(moe) == report.usable - harness.sum()
    both = np.concatenate([loso.loc[~harness, "abs_error"].to_numpy(), moe["abs_error"].to_numpy()])
    assert every["median"] == pytest.approx(np.median(both))
    lines = cli_validate.headline_lines(report)
    assert any(line.startswith("serving stacks") for line in lines)
    assert any(line.startswith("every usable row") for line in lines)
    assert any(line.startswith("target (leave source out") for line in lines)


def test_what_holds_the_p90_counts_the_misses_the_target_cannot_allow(report: validation.Report) -> None:
    """The held-out points beyond the p90 target, per source, and how many the target allows: no
    more than that many may miss while the p90 stays within it, and one more can break it."""
    bound = validation.TARGETS["loso_p90"]
    p = report.predictions
    held = p[p["scheme"].isin(["loso", "moe_loso"]) & ~p["stack"].isin(validation.SET_APART)]
    n, over, allowed, counts = crossval.beyond(held, bound)
    assert n == len(held) == report.all_usable_headline["n"] < report.usable  # Splitwise's rows apart
    assert over == int((held["abs_error"] > bound).sum()) == counts.sum()
    assert list(counts) == sorted(counts, reverse=True)
    if over <= allowed:  # the guarantee: that few misses cannot hold the p90 above the bound
        assert report.all_usable_headline["p90"] <= bound
    for size in (10, 11, 101, 149, 150):
        k = (size - 1) - int(np.ceil(0.9 * (size - 1) - 1e-9))
        fits = np.r_[np.full(size - k, bound), np.full(k, 1e6)]
        assert np.quantile(fits, 0.9) <= bound  # `allowed` misses keep the p90 within the bound
        breaks = np.r_[np.zeros(size - k - 1), np.full(k + 1, 1e6)]
        assert np.quantile(breaks, 0.9) > bound  # and one more can take it over
        frame = pd.DataFrame({"scheme": "loso", "source": "s", "abs_error": fits})
        assert crossval.beyond(frame, bound)[2] == k
    lines = cli_validate.headline_lines(report)
    holds = [line for line in lines if line.startswith("what holds the p90")]
    assert len(holds) == (1 if over > allowed else 0)
    if holds:
        assert f"{over} of {n} points" in holds[0] and f"allows {allowed}" in holds[0]
        assert all(f"{src} {k}" in holds[0] for src, k in counts.items())
    assert report.as_dict()["beyond_p90_target"]["beyond"] == over


def test_a_rows_stated_eager_mode_and_checkpoint_reach_its_point(
    usable: list[measurements.Measurement],
) -> None:
    """dstack's MI300X batches state --enforce-eager; its H100 rows ran Meta's FP8 checkpoint,
    whose attention stays in bf16, with a benchmark command that prefills whole prompts."""
    by_id = {m.id: m for m in usable}
    assert by_id["X062"].eager and not by_id["X058"].eager and not by_id["X001"].eager
    assert by_id["X058"].attention_weights == "bf16" and by_id["X062"].attention_weights is None
    assert not by_id["X058"].chunked and by_id["X058"].token_budget == 91680


def test_moe_models_run_with_the_fitted_experts_factor(catalog: Catalog) -> None:
    """The app's MoE scenarios run their experts at the shipped terms of their stack; dense models,
    and a profile that states its own eta_experts (a user's, or a refit of MoE measurements), are
    left as they are."""
    factor = trust.experts_factor("trtllm")
    assert factor is not None and factor < 1.0
    h200 = catalog.chip("h200")
    moe_prof, _ = trust.calibration(h200, "trtllm", catalog, moe=True)
    dense_prof, _ = trust.calibration(h200, "trtllm", catalog)
    assert moe_prof.eta_experts == factor and dense_prof.eta_experts is None
    assert moe_prof.moe_layer_ms == trust.experts_terms("trtllm")["moe_layer_ms"]
    assert dense_prof.moe_layer_ms is None
    # the calibration says so wherever a mark is shown: the caveat, a rule's text, the JSON
    factor = trust.experts_factor("vllm")
    _, moe_cal = trust.calibration(h200, "vllm", catalog, moe=True)
    _, dense_cal = trust.calibration(h200, "vllm", catalog)
    assert moe_cal.experts == factor and f"experts at {factor:.0%}" in moe_cal.caveat
    assert not moe_cal.fitted and "experts at" in moe_cal.rule
    assert dense_cal.experts is None and "experts" not in dense_cal.rule + dense_cal.caveat
    assert moe_cal.as_dict()["eta_experts"] == factor and "eta_experts" not in dense_cal.as_dict()
    from engine.explain.confidence import _from_dict

    assert _from_dict("h200", moe_cal.as_dict()) == moe_cal
    assert (moe_prof.eta_compute, moe_prof.eta_bandwidth) == (
        dense_prof.eta_compute,
        dense_prof.eta_bandwidth,
    )
    own = dense_prof.model_copy(update={"eta_experts": 0.8})
    assert trust.with_experts(own).eta_experts == 0.8
    # a fit to MoE measurements holds their experts' slowness in its fractions, and says so
    moe_points = [m for m in reference.usable_points(catalog) if calibrate.is_moe(m, catalog)]
    h200_moe = [m for m in moe_points if m.hardware == "h200" and m.plain and m.figure == "tpot"]
    assert len(h200_moe) >= 2
    refit = calibrate.fit(h200_moe, catalog, "fitted to MoE rows (test)")
    assert refit.profile.eta_experts == 1.0
    assert "eta_experts = 1.0" in calibrate.profile_toml("mine", refit.profile)
    assert trust.with_experts(refit.profile).eta_experts == 1.0
    # an unset factor is not written out, so a shipped or exported profile keeps taking the fit's
    assert "eta_experts" not in calibrate.profile_toml("trtllm", dense_prof)
    assert "eta_experts" not in entry_to_toml(h200)


def test_a_fit_times_moe_points_with_their_experts_as_fast_as_dense(catalog: Catalog) -> None:
    """`fit` stamps eta_experts 1.0 on a MoE fit, so it must decompose the points that way too,
    whatever the chip's default profile says about experts."""
    rows = [
        m for m in reference.usable_points(catalog) if calibrate.is_moe(m, catalog) and m.hardware == "mi300x"
    ]
    rows = [m for m in rows if m.plain and m.figure in ("tpot", "throughput")]
    assert len(rows) >= 3
    plain_fit = calibrate.fit(rows, catalog, "fitted to MoE rows (test)")
    chip = catalog.chip("mi300x")
    odd = chip.profile(None).model_copy(update={"eta_experts": 0.5})
    profiles = {**chip.profiles, chip.default_profile: odd}
    hardware = {**catalog.hardware, "mi300x": chip.model_copy(update={"profiles": profiles})}
    other = dataclasses.replace(catalog, hardware=hardware)
    odd_fit = calibrate.fit(rows, other, "fitted to MoE rows (test)")
    assert odd_fit.profile == plain_fit.profile
    # and a prediction at a profile that leaves the factor unset runs the experts as dense, plain or not
    prof = plain_fit.profile.model_copy(update={"eta_experts": None})
    m = rows[0]
    assert predictor.predict(m, other, prof) == predictor.predict(m, catalog, prof)


def test_a_lockstep_rounds_prompts_wait_for_each_other(catalog: Catalog) -> None:
    """Clients started together with identical requests stay in step: each round's prompts arrive
    at once and prefill a pass at a time, so a prompt's first token comes on average with the
    ((passes + 1) / 2)-th pass. With whole prompts one per pass, 7 clients wait 4 prefills; one
    client, alone, waits for its own, as in the steady state."""
    prof = catalog.chip("h100-sxm").profiles["vllm-v0"]
    base = measurements.Measurement(
        id="t", model="llama-3.1-8b", hardware="h100-sxm", tp=1, weights="bf16", kv="bf16",
        kind="ttft", prompt_tokens=2048, output_tokens=256, chunked=False, token_budget=2048,
        concurrency=7, lockstep=True, value=1.0, unit="ms",
    )  # fmt: skip
    alone = predictor.predict(dataclasses.replace(base, kind="prefill"), catalog, prof)
    assert predictor.predict(base, catalog, prof) == pytest.approx(4 * alone, rel=1e-9)
    one = dataclasses.replace(base, concurrency=1)
    assert predictor.predict(one, catalog, prof) == pytest.approx(
        predictor.predict(dataclasses.replace(one, lockstep=False), catalog, prof), rel=1e-9
    )
    assert predictor.predict(dataclasses.replace(base, lockstep=False), catalog, prof) < 2 * alone


def test_lockstep_is_read_only_where_the_row_states_it(usable: list[measurements.Measurement]) -> None:
    """dstack's DeepSeek-R1 concurrencies state the random dataset at range ratio 1 (identical
    requests) and 500 prompts, Tencent's harness its default range ratio with --ignore-eos (the
    TKE rows, `reference_moe`); the vLLM project's rows vary their lengths by 15%, so their
    clients drift apart as in a steady state."""
    by_id = {m.id: m for m in usable}
    conc = [m for m in usable if m.concurrency]
    tke = {m.id for m in conc if "tke-ai-playbook" in m.source_key}
    assert len(tke) == 72
    assert {m.id for m in conc if m.lockstep} == {f"X{i:03d}" for i in range(82, 110)} | tke
    assert all(by_id[i].prompts == 500 for i in ("X084", "X095", "X109"))
    assert not by_id["X125"].lockstep and by_id["X125"].prompts == 150


def test_a_lockstep_round_is_no_faster_than_the_steady_state(usable: list[measurements.Measurement]) -> None:
    """One client alone waits for its own prompt whether or not it is 'in step', chunked or not; and
    for dstack's 3,200-token prompts a round never comes sooner than one prompt in the steady state,
    attention DP included (a prompt runs whole on one rank, so the busiest rank holds one however
    many ranks idle). With prompts of a few tokens it can: a prompt arriving in step finds no decode
    iteration running, where a steady arrival waits for half of one."""
    from engine.catalog.entries import load_catalog

    catalog = load_catalog()
    by_id = {m.id: m for m in usable}
    for i in ("X109", "X097", "X095", "X084"):
        m = by_id[i]
        prof = crossval.rule_profile(
            m.hardware, measurements.stack_of(m), calibrate.reference_fits(usable, catalog)
        )[0]
        prof = prof.model_copy(update={"eta_experts": 0.32})
        one = dataclasses.replace(m, concurrency=1)
        assert predictor.predict(one, catalog, prof) == pytest.approx(
            predictor.predict(dataclasses.replace(one, lockstep=False), catalog, prof), rel=1e-9
        ), i
        assert predictor.predict(m, catalog, prof) >= predictor.predict(
            dataclasses.replace(m, lockstep=False), catalog, prof
        ), i


@settings(max_examples=60, deadline=None)
@given(
    isl=st.integers(16, 32_768), osl=st.integers(2, 4_096), budget=st.integers(256, 65_536),
    chunked=st.booleans(), clients=st.integers(1, 512), cap=st.integers(1, 1_024),
)  # fmt: skip
def test_any_lockstep_ttft_is_finite_and_one_client_waits_as_in_the_steady_state(
    isl: int, osl: int, budget: int, chunked: bool, clients: int, cap: int
) -> None:
    from engine.catalog.entries import load_catalog

    catalog = load_catalog()
    prof = catalog.chip("h100-sxm").profiles["vllm-v0"]
    m = measurements.Measurement(
        id="t", model="llama-3.1-8b", hardware="h100-sxm", tp=1, weights="bf16", kv="bf16", kind="ttft",
        prompt_tokens=isl, output_tokens=osl, chunked=chunked, token_budget=budget, max_batch=cap,
        concurrency=clients, lockstep=True, value=1.0, unit="ms",
    )  # fmt: skip
    t = predictor.predict(m, catalog, prof)
    assert math.isfinite(t) and t > 0
    one = dataclasses.replace(m, concurrency=1)
    assert predictor.predict(one, catalog, prof) == pytest.approx(
        predictor.predict(dataclasses.replace(one, lockstep=False), catalog, prof), rel=1e-9
    )


def test_validate_prints_each_kinds_band_coverage_measured_out_of_sample(report: validation.Report) -> None:
    """`make validate` prints, per kind, the share of held-out points inside the band fitted without
    their source, with the target; the JSON carries the same; every kind shown has 20 points."""
    cov = report.band_coverage()["source_out"]
    lines = cli_validate.band_lines(report)
    line = next(x for x in lines if x.startswith("band coverage, rows with data"))
    for f in ("throughput", "tpot"):
        assert cov[f]["points"] >= 20
        assert (
            f"{trust.FIGURE_NAMES[f]} {cov[f]['coverage']:.1%} of {int(cov[f]['points'])} points (60%-76%"
            in line
        )
    doc = report.as_dict()["bands"]["source_out"]
    assert doc["coverage"] == cov and doc["groups"]
    checked = report.band_checks["source_out"]
    assert len(checked) == sum(int(c["points"]) for c in cov.values())
    assert 0.0 < checked["inside"].mean() < 1.0
    # E2E, which has no band of its own, is measured too: its envelope of TTFT and TPOT bands
    e2e = report.e2e_coverage()["source_out"]
    assert e2e["points"] >= 20 and e2e["sources"] >= 2
    e2e_line = next(x for x in lines if x.lstrip().startswith("E2E"))
    assert f"holds {e2e['coverage']:.1%} of {int(e2e['points'])} held-out mean E2Es" in e2e_line
    assert "; by source: " in e2e_line  # one source's bias can carry the pooled share
    assert doc["e2e_coverage"] == e2e
