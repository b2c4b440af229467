"""Huawei Ascend 910B: a sourced catalog entry, a fit reproduced from its rows, a preset that runs."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from engine.calibration import calibrate, reference, reference_gpustack, trust
from engine.catalog.entries import Catalog
from engine.cli.main import main
from engine.explain import confidence

CHIP = "ascend-910b"


def test_the_entry_cites_the_910b2_figures_of_the_spec_sheet(catalog: Catalog) -> None:
    hw = catalog.chip(CHIP)
    assert (hw.vendor, hw.kind) == ("Huawei", "NPU")
    assert "910B2" in hw.name and "910B2" in hw.notes
    assert dict(hw.tflops) == {"bf16": 353.9}  # cube only; no INT8 figure is published
    assert (hw.memory_gb, hw.memory_tb_s) == (64, 1.6)
    for field in ("tflops", "memory_gb", "memory_tb_s", "pcie_gb_s", "tdp_w"):
        assert "ascend-spec.md" in hw.sources[field], field
    # where sources disagree, the entry says what it did not take
    assert "376" in hw.sources["tflops"] and "280" in hw.sources["tflops"]
    assert "1.2 TB/s" in hw.sources["memory_tb_s"] and "310 W" in hw.sources["tdp_w"]
    for guessed in ("scale_up_gb_s", "usd_per_hour", "capex_usd"):
        assert hw.sources[guessed].startswith("assumption"), guessed


@pytest.fixture(scope="module")
def rows(catalog: Catalog) -> list[reference.Row]:
    return reference_gpustack.read_gpustack_rows(catalog)


def test_rows_are_read_as_they_ran(rows: list[reference.Row]) -> None:
    by_id = {r.id: r for r in rows}
    assert len(rows) == 1027
    long = by_id["A973"].point  # 100 random prompts of 32,000 + 100 tokens, all at t = 0
    assert long is not None and long.static and long.batch == 100
    assert (long.prompt_tokens, long.output_tokens, long.stack) == (32000, 100, "vllm-ascend")
    # vLLM-Ascend 0.9.1 turns chunked prefill off for models without MLA (vllm_ascend/platform.py)
    assert (long.chunked, long.token_budget, long.max_batch) == (False, 40960, 256)
    # bursts the harness's stated figures cannot replay, as for the MoE file's GPUStack rows
    assert by_id["A928"].reason == by_id["A937"].reason == reference_gpustack.SHAREGPT_BURST
    assert by_id["A1000"].reason == reference_gpustack.SHORT_BURST  # 1,000 prompts of 128 + 4
    closed = by_id["A1015"].point  # max-concurrency 4, mean TPOT
    assert closed is not None and (closed.kind, closed.concurrency, closed.prompts) == ("tpot", 4, 100)
    assert "NPU count" in by_id["A712"].reason  # MindIE Qwen3-30B-A3B: world size unstated
    assert "Conclusion-table" in by_id["A1020"].reason
    assert "another view" in by_id["A929"].reason  # the total throughput of A928's block
    assert by_id["A001"].reason == reference_gpustack.A100_REASON


def test_only_vllm_ascend_091_on_a_model_without_mla_prefills_whole_prompts(
    rows: list[reference.Row], catalog: Catalog
) -> None:
    """The v0.9.1 platform hook forces prefill first on models without MLA only, and no other release."""
    row = next(r for r in rows if r.id == "A982")
    raw = {"framework": "vLLM-Ascend v0.9.1 (vllm serve with the vllm-ascend plugin)"}
    assert row.point is not None and not row.point.chunked
    as_chunked = replace(row.point, chunked=True, token_budget=2048)
    chunked = replace(row, point=as_chunked)
    mla = replace(row, point=replace(as_chunked, model="deepseek-v3"))
    assert reference_gpustack._prefill_first(mla, raw, catalog).point == mla.point
    rc = {"framework": "vLLM-Ascend v0.9.1rc1"}
    assert reference_gpustack._prefill_first(chunked, rc, catalog).point == chunked.point
    again = reference_gpustack._prefill_first(chunked, raw, catalog).point
    assert again is not None and (again.chunked, again.token_budget) == (False, 40960)


def test_the_910b_profile_is_a_fresh_fit_of_its_vllm_ascend_rows(catalog: Catalog) -> None:
    fits = calibrate.reference_fits(reference.usable_points(catalog), catalog)
    fit = fits[(CHIP, "vllm-ascend")]
    shipped = catalog.chip(CHIP).profiles["vllm-ascend"]
    assert shipped.eta_compute == pytest.approx(fit.profile.eta_compute, abs=0.002)
    assert shipped.eta_bandwidth == pytest.approx(fit.profile.eta_bandwidth, abs=0.002)
    assert shipped.overhead_ms == pytest.approx(fit.profile.overhead_ms, abs=0.02)
    assert sorted(fit.table["id"]) == sorted(["A1009", "A1012", "A1015"])
    assert fit.table["abs_error"].median() < 0.2
    # MindIE has no usable dense row (its one BF16 block is a ShareGPT burst): no fit
    assert (CHIP, "mindie") not in fits


def test_the_910b_shows_its_fitted_band_under_vllm(catalog: Catalog) -> None:
    hw = catalog.chip(CHIP)
    prof, cal = trust.calibration(hw, "vllm", catalog)
    assert cal.fitted and prof == hw.profiles["vllm-ascend"]
    assert cal.expected_error == trust.expected_errors("fitted")
    row = confidence.chip_rows(catalog, "vllm")[CHIP]
    assert row["calibrated"] and row["throughput_error"] == trust.expected_errors("fitted")["throughput"]
    _, mindie = trust.calibration(hw, "mindie", catalog)
    assert mindie.basis == "other_stack" and "vLLM-Ascend" in mindie.rule
    # under an Ascend stack the other chips show that it does not run on them, as TensorRT-LLM does
    assert confidence.chip_rows(catalog, "mindie")["h100-sxm"]["calibration"] == (
        "not run by MindIE (Huawei Ascend NPUs only)"
    )
    assert (
        confidence.chip_rows(catalog, "trtllm")[CHIP]["calibration"]
        == "not run by TensorRT-LLM (NVIDIA GPUs only)"
    )


def test_ascend_stacks_are_refused_on_other_chips(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "chat-colocated", "--set", "deployment.stack=mindie"]) == 2
    assert "runs on Huawei Ascend NPUs only" in capsys.readouterr().err
    args = ["run", "chat-ascend-910b", "--set", "deployment.stack=trtllm"]
    assert main(args) == 2
    assert "NVIDIA GPUs only" in capsys.readouterr().err


def test_the_preset_runs_the_910b_beside_an_h100(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "chat-ascend-910b", "--set", "duration_s=60", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    cal = doc["calibration"]
    assert set(cal) == {"ascend", "h100"}
    assert cal["ascend"]["fitted"] and cal["ascend"]["basis"] == "fitted"
    assert "vLLM-Ascend measurements" in cal["ascend"]["rule"]
    assert cal["ascend"]["expected_error"]["throughput"] == pytest.approx(0.15)
    assert cal["h100"]["fitted"]


def test_the_catalog_lists_the_910b_with_its_band(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalog"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(CHIP))
    # fitted, but its fit misses its own published results beyond the pooled band: partly calibrated
    # (a green 'calibrated' beside a throughput band to > +100% read more sure than it was: a review)
    assert "NPU" in line and "partly calibrated: its fit misses the chip's own published results" in line
    assert "uncalibrated" not in line
    assert main(["catalog", "--json"]) == 0
    chip = next(h for h in json.loads(capsys.readouterr().out)["hardware"] if h["id"] == CHIP)
    cal = chip["calibration"]
    assert cal["calibrated"] and "throughput −" in cal["bands"] and "TPOT −" in cal["bands"]
    assert cal["bands"] in line  # the table shows the same bands as the JSON


def test_the_results_page_marks_both_chips_fitted_with_their_band() -> None:
    from tests.app.harness import app, assert_clean, short

    at = app("results", short("chat-ascend-910b"), preset="chat-ascend-910b")
    assert_clean(at)
    captions = " ".join(c.value for c in at.caption).replace("\\", "")  # markdown escapes
    # vLLM on the 910B is vLLM-Ascend, which its fit measured: said so (it read "under vLLM", a review)
    assert "Every pool runs with a profile fitted to its chip under vLLM-Ascend and vLLM" in captions
    # the 910B's band is widened to its own results: the run's is the widest of its pools', said so
    assert (
        "fitted to its chip under vLLM-Ascend and vLLM; the widest of its pools' bands:⁠ throughput −"
        in captions
    )
    assert ", TPOT −" in captions and "so its band is widened to hold them" in captions
    assert "about two in three real deployments land inside" in captions


def test_the_910bs_band_holds_its_own_published_results(catalog: Catalog) -> None:
    """Found in review: the 910B showed the pooled dense band (throughput -22% to +30%, as an H100's)
    while its fitted profile predicts 0.28-0.82 of its own four measured throughputs."""
    from engine.calibration import band_lookup

    _, cal = trust.calibration(catalog.chip(CHIP), "vllm", catalog)
    point = {"model": "dense", "basis": "fitted", "stack": "vllm-ascend", "chip": CHIP}
    own = band_lookup.own_points(point, "throughput")
    assert own is not None and own[1] < 1.0  # the profile runs it slow on its own results
    lo, hi = cal.band["throughput"]
    assert lo <= own[0] < 0.5 and hi >= own[1]
    assert "so its band is widened to hold them" in cal.caveat and "0.28 to 0.82" in cal.rule
    assert cal.own_miss and cal.mark == "partly calibrated"  # not the green mark of a fit that holds
    # an H100 under vLLM, whose own results sit inside the pooled band, keeps that band
    _, h100 = trust.calibration(catalog.chip("h100-sxm"), "vllm", catalog)
    pooled = band_lookup.calibration_table()["band"]["source_out"]["dense:*:*:*:throughput"]
    assert "widened" not in h100.caveat and h100.band["throughput"] == tuple(pooled)


def test_sglang_on_the_910b_borrows_its_own_vllm_ascend_fit(catalog: Catalog) -> None:
    """Found in review: SGLang on a 910B took the transfer profile (compute 0.44 of peak against the
    chip's own fitted 0.13) and ran 2.7 times faster than the chip has been measured to."""
    hw = catalog.chip(CHIP)
    prof, cal = trust.calibration(hw, "sglang", catalog)
    own = hw.profiles["vllm-ascend"]
    assert cal.basis == "other_stack" and (prof.eta_compute, prof.eta_bandwidth) == (
        own.eta_compute,
        own.eta_bandwidth,
    )
    assert "vLLM-Ascend profile of ascend-910b used for SGLang" in cal.rule
    assert "so its band is widened to hold them" in cal.caveat  # the results that fit was made to
    _, fitted = trust.calibration(hw, "vllm", catalog)
    assert cal.band["throughput"][0] == fitted.band["throughput"][0]
