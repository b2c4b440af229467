"""Open-loop reference rows rerun end to end by the simulator (engine/explain/end_to_end.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from engine.calibration import calibrate, crossval, measurements, predictor, reference, trust
from engine.catalog.entries import Catalog
from engine.explain import end_to_end


@pytest.fixture(scope="module")
def rows(catalog: Catalog) -> list[reference.OpenLoop]:
    return reference.open_loop_rows(catalog)


def test_open_loop_rows_with_stated_means_are_rerun_and_the_rest_stay_aside(
    rows: list[reference.OpenLoop], catalog: Catalog
) -> None:
    """dstack's twelve rows state the mean prompt (215.2) and the token totals; SGLang's ShareGPT
    rows state neither, so they stay set aside for their lengths."""
    assert len(rows) == 12
    by_id = {r.id: r for r in rows}
    h100, mi300x = by_id["X070"], by_id["X076"]
    assert h100.mean_input == pytest.approx(215.2) and h100.mean_output == pytest.approx(120.689)
    assert (h100.prompts, h100.rate_rps, h100.figure) == (1000, 16.0, "throughput")
    assert (h100.max_batch, h100.token_budget, h100.chunked, h100.kv) == (512, 512, True, "bf16")
    assert (mi300x.max_batch, mi300x.chunked, mi300x.kv) == (1024, False, "fp8")
    assert "multi-step" in mi300x.note and "multi-step" not in h100.note
    assert by_id["X073"].rate_rps == 1000.0  # 'request rate 1000 (effectively all at once)'
    reasons = {r.id: r.reason for r in reference.reference_rows(catalog) if not r.usable}
    assert all(reasons[i] == reference.OPEN_LOOP_REASON for i in by_id)
    assert reasons["X139"] == "prompt or output lengths are not stated as numbers"  # SGLang, ShareGPT


def test_a_rerun_runs_the_rows_settings(rows: list[reference.OpenLoop]) -> None:
    row = next(r for r in rows if r.id == "X070")
    s = end_to_end.scenario_of(row)
    assert s.duration_s == pytest.approx(1000 / 16.0)
    assert s.workload.arrival.rate_rps == 16.0
    cls = s.workload.classes[0]
    assert (cls.input.tokens, cls.output.tokens) == (215, 121)
    b = s.deployment.batching
    assert (b.max_batch, b.token_budget, b.chunked_prefill) == (512, 512, True)
    assert s.deployment.stack == "vllm-v0" and s.scheduler.preemption == "recompute"
    pool = s.deployment.pools[0]
    assert (pool.hardware, pool.tp, pool.count, pool.profile) == ("h100-sxm", 8, 1, end_to_end.PROFILE)
    assert s.model.weights == "fp8" and s.model.kv == "bf16"


def test_a_rerun_sends_exactly_the_stated_prompts_at_the_stated_rate(rows: list[reference.OpenLoop]) -> None:
    row = next(r for r in rows if r.id == "X070")
    reqs = end_to_end.requests_of(row)
    assert len(reqs) == row.prompts == 1000 and reqs.arrival_s[0] == 0.0
    gaps = np.diff(reqs.arrival_s)
    assert (gaps >= 0).all() and np.mean(gaps) == pytest.approx(1 / 16.0, rel=0.1)
    assert set(reqs.prompt_tokens) == {215} and set(reqs.output_tokens) == {121}


def test_figures_are_measured_as_benchmark_serving_measures_them() -> None:
    t = pd.DataFrame(
        {
            "arrival_s": [0.0, 1.0, 2.0],
            "first_token_s": [0.5, 1.2, np.nan],
            "completion_s": [2.5, 4.2, np.nan],
            "output_tokens": [5, 4, 7],
            "outcome": ["completed", "completed", "rejected"],
        }
    )
    f = end_to_end.figures(t)
    assert f["throughput"] == pytest.approx(9 / 4.2)  # completed output over first arrival to last answer
    assert f["ttft"] == pytest.approx(350.0)
    assert f["tpot"] == pytest.approx((2.0 / 4 + 3.0 / 3) / 2 * 1000.0)


def test_a_faster_profile_serves_the_same_row_faster(
    rows: list[reference.OpenLoop], catalog: Catalog
) -> None:
    """The profile a rerun is given is the one it runs with: more bandwidth and compute, more tokens."""
    row = next(r for r in rows if r.id == "X076")
    base = catalog.chip("mi300x").profiles["vllm-v0"]
    fast = base.model_copy(
        update={
            "eta_compute": min(0.85, base.eta_compute * 2),
            "eta_bandwidth": min(0.92, base.eta_bandwidth * 1.5),
        }
    )
    slow = end_to_end.run_row(row, base, catalog)
    quick = end_to_end.run_row(row, fast, catalog)
    assert quick["tpot"] < slow["tpot"] and quick["ttft"] < slow["ttft"]
    assert quick["throughput"] >= slow["throughput"]


def test_checks_use_the_shipped_profile_and_a_refit_without_the_source(catalog: Catalog) -> None:
    points = reference.usable_points(catalog)
    fits = calibrate.reference_fits(points, catalog)
    found = end_to_end.checks(catalog, reference.open_loop_rows(catalog), points, fits)
    assert len(found) == 12
    h100 = [c for c in found if c.row.hardware == "h100-sxm"]
    # dstack's are the only H100 vLLM V0 rows: left out, the chip borrows another stack's profile
    assert {c.basis for c in h100} == {"other_stack"}
    assert {c.basis for c in found if c.row.hardware == "mi300x"} == {"fitted"}
    # with the shipped profile the H100 rerun equals a run with the chip's own vllm-v0 entry
    row = h100[0].row
    shipped = catalog.chip("h100-sxm").profiles["vllm-v0"]
    assert h100[0].fit == pytest.approx(end_to_end.run_row(row, shipped, catalog)[row.figure])
    assert all(np.isfinite([c.fit, c.held_out]).all() for c in found)
    assert fits[("h100-sxm", "vllm-v0")].profile.eta_compute == shipped.eta_compute


def test_a_profile_that_missed_online_serving_shows_the_miss(catalog: Catalog) -> None:
    """The reruns' error of a fit widens the error bar of every pool that runs with that fit (its
    chip, the same silicon, a pool naming the profile, an illustrative chip borrowing it), and the
    caveat says why; other fits keep their basis' bar."""
    h100 = catalog.chip("h100-sxm")
    pools = {
        "own": trust.calibration(h100, "vllm-v0", catalog)[1],
        "same silicon": trust.calibration(catalog.chip("h200"), "vllm-v0", catalog)[1],
        "named": trust.calibration(h100, "vllm", catalog, profile_name="vllm-v0")[1],
        "illustrative": trust.calibration(catalog.chip("decode-asic"), "vllm-v0", catalog)[1],
    }
    _, h100_v1 = trust.calibration(h100, "vllm", catalog)
    online = trust.online_errors("h100-sxm", "vllm-v0")
    fitted = trust.expected_errors("fitted")
    assert (
        online["throughput"] > 2 * fitted["throughput"] and online["ttft"] > 2 * fitted["ttft"]
    )  # well beyond
    assert online.pop("reruns") == 6
    for name, cal in pools.items():
        # the reruns' TTFT miss is larger than any basis' error: it is what each of them shows
        assert cal.expected_error["ttft"] == online["ttft"] > trust.expected_errors(cal.basis)["ttft"], name
        assert cal.caveat.startswith("serving at a rate, this h100-sxm vLLM V0") and cal.caveat in cal.rule, (
            name
        )
    assert pools["own"].fitted and pools["same silicon"].basis == "same_silicon"
    assert pools["illustrative"].basis == "illustrative"
    assert h100_v1.expected_error == trust.expected_errors("fitted")
    assert h100_v1.caveat == "" and "serving at a rate" not in h100_v1.rule
    assert trust.with_error("24 ms", 0.56) == "24 ms ± 56%"
    assert trust.with_error("24 ms", 1.37) == "24 ms ± >100%"
    assert trust.with_error("24 ms", 0.19) == "24 ms ± 19%"


def test_the_pages_and_the_cli_show_the_online_caveat_of_a_fitted_pool() -> None:
    from engine.explain import confidence
    from engine.scenario.codec import apply_overrides, load_preset

    s = apply_overrides(load_preset("chat-colocated"), {"deployment.stack": "vllm-v0"})
    marks = confidence.pool_marks(s)
    assert not confidence.uncalibrated(marks)  # fitted: the badge still says calibrated ...
    (text,) = confidence.caveats(marks)  # ... and the caption says what the reruns showed
    online = trust.online_errors("h100-sxm", "vllm-v0")
    worst = max(("throughput", "ttft", "tpot"), key=lambda f: online[f])  # the caption names the largest miss
    name = {"throughput": "throughput", "ttft": "TTFT", "tpot": "TPOT"}[worst]
    assert text.startswith("serving at a rate") and f"{name} by a median {online[worst]:.0%}" in text
    assert marks[0].calibration.expected_error["ttft"] == online["ttft"]  # the median miss, in the run's JSON
    plain = apply_overrides(load_preset("chat-colocated"), {"deployment.stack": "vllm"})
    assert confidence.caveats(confidence.pool_marks(plain)) == []


def test_the_cli_json_carries_the_caveat(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from engine.cli.main import main

    args = ["run", "chat-colocated", "--set", "duration_s=20", "--set", "deployment.stack=vllm-v0", "--json"]
    assert main(args) == 0
    (pool,) = json.loads(capsys.readouterr().out)["calibration"].values()
    assert pool["fitted"] and pool["caveat"].startswith("serving at a rate")
    assert pool["expected_error"]["ttft"] > 0.5


def test_the_simulator_reproduces_the_predictor_where_both_model_the_same_run(catalog: Catalog) -> None:
    """A static batch that fits in KV memory runs the same iterations in both: the same figure. One
    that does not (dstack's 256 prompts of 2,048 + 2,048 tokens on eight H100s, whose KV room is
    what is left beside the bf16 attention of Meta's checkpoint and a 91,680-token forward pass)
    runs in waves in the predictor and preempts in the simulator, which packs the batch tighter
    than the predictor's whole waves: faster, both within a fifth of the measured 1,196 tokens/s."""
    points = {m.id: m for m in reference.usable_points(catalog)}
    prof = catalog.chip("mi300x").profiles["vllm-v0"]
    fits = points["X020"]  # 70B on 8 MI300X, 8 prompts of 2,048 + 2,048 tokens at once
    assert end_to_end.rerun_point(fits, prof, catalog) == pytest.approx(
        predictor.predict(fits, catalog, prof), rel=0.002
    )
    h100 = catalog.chip("h100-sxm").profiles["vllm-v0"]
    over = points["X058"]
    inst = predictor.measured_instance(over, catalog)
    assert over.batch * (over.prompt_tokens + over.output_tokens) > inst.kv_capacity_tokens
    assert over.batch * (over.prompt_tokens + over.output_tokens) > 8 * inst.kv_capacity_tokens
    simulated, predicted = end_to_end.rerun_point(over, h100, catalog), predictor.predict(over, catalog, h100)
    assert predicted < simulated < 1.2 * over.value
    assert predicted == pytest.approx(over.value, rel=0.2)


def test_a_concurrency_is_rerun_as_staggered_closed_loop_clients(catalog: Catalog) -> None:
    """The vLLM project's 8 clients of 20,000-token prompts: simulated TTFT near the predictor's
    steady state (clients started together would prefill in lock step and wait on each other)."""
    points = {m.id: m for m in reference.usable_points(catalog)}
    m = points["X128"]
    assert m.kind == "ttft" and m.concurrency == 8
    prof = catalog.chip("h100-sxm").profiles["vllm"]
    assert end_to_end.rerun_point(m, prof, catalog) == pytest.approx(
        predictor.predict(m, catalog, prof), rel=0.2
    )


def test_the_reruns_cover_the_runs_a_simulation_can_reproduce(catalog: Catalog) -> None:
    points = reference.usable_points(catalog)
    df = end_to_end.point_reruns(catalog, points, calibrate.reference_fits(points, catalog))
    assert set(df["kind"]) == {"throughput", "tpot", "ttft", "batch_latency"}
    assert len(df) >= 80 and df["simulated"].gt(0).all()
    h = end_to_end.rerun_headline(df)
    # the simulator's error on the fitted points stays near the predictor's (docs/validation.md)
    assert h["simulated_median"] < h["predicted_median"] + 0.05
    assert not df["moe"].any()


def test_moe_points_rerun_with_the_experts_factor(catalog: Catalog) -> None:
    """The tensor-parallel MoE points rerun by the simulator run their experts at the given rate:
    slower experts, lower simulated throughput; no dense point among them."""
    points = reference.usable_points(catalog)
    fits = calibrate.reference_fits(points, catalog)
    moe = [m for m in points if calibrate.is_moe(m, catalog) and m.id in ("X110", "X112", "H119")]
    slow = end_to_end.point_reruns(
        catalog, moe + points[:3], fits, lambda st, vd: {"eta_experts": 0.31}
    ).set_index("id")
    fast = end_to_end.point_reruns(catalog, moe, fits, lambda st, vd: {"eta_experts": 1.0}).set_index("id")
    assert set(slow.index) == {"X110", "X112", "H119"} and slow["moe"].all()
    assert (slow["simulated"] < fast["simulated"]).all()
    assert (slow["predicted"] < fast["predicted"]).all()


def test_a_lockstep_concurrency_is_rerun_as_its_benchmark_ran(catalog: Catalog) -> None:
    """dstack's DeepSeek-R1 runs: 128 clients started together, 500 identical requests (random
    dataset at range ratio 1). The rerun starts every client at t = 0 and measures the 500: each
    round's prompts queue behind each other, so the mean TTFT is seconds, as the predictor's
    round gives it, where clients staggered as in a steady state wait a fraction of a second."""
    points = {m.id: m for m in reference.usable_points(catalog)}
    m = points["X084"]
    assert m.lockstep and m.concurrency == 128 and m.prompts == 500
    prof = catalog.chip("mi300x").profiles["vllm-v0"].model_copy(update={"eta_experts": 0.32})
    lock = end_to_end.rerun_point(m, prof, catalog)
    predicted = predictor.predict(m, catalog, prof)
    staggered = end_to_end.rerun_point(dataclasses.replace(m, lockstep=False), prof, catalog)
    assert lock == pytest.approx(predicted, rel=0.15)
    assert lock > 10 * staggered


def test_a_one_client_moe_ttft_reruns_as_the_validation_predicts_it(
    catalog: Catalog, reference_fit: tuple
) -> None:
    """A one-client MoE TTFT: the validation predicts the step model's prefill plus the first-token
    latency fitted for its stack (as the About page's table does); the rerun simulates it with that latency on the way in (as every
    MoE run of the app pays the shipped figure, the same as a fresh fit's) and lands on the same
    figure, within the lockstep reruns' tolerance; without the latency it reads low by exactly it."""
    points, fits, ef = reference_fit
    ft = crossval.fit_first_token(points, catalog, fits, ef)
    assert ef is not None and ft.ids
    m = next(p for p in points if p.id in ft.ids and p.dp == 1 and p.speculation is None)
    stack = measurements.stack_of(m)
    shipped = trust.first_token_ms(stack)
    assert shipped is not None and shipped[0] == ft.ms(stack) > 0
    row = end_to_end.point_reruns(catalog, [m], fits, ef.terms, ft.ms).iloc[0]
    (validated,) = crossval._predict([m], fits, catalog, ef, ft)
    assert row["predicted"] == pytest.approx(validated.predicted)
    # the About page's table (`calibrate.table` of the shipped profiles) predicts it so too
    assert calibrate.table([m], catalog)["predicted"].iloc[0] == pytest.approx(validated.predicted)
    assert row["simulated"] == pytest.approx(row["predicted"], rel=0.15)
    prof = crossval.rule_profile(m.hardware, stack, fits)[0].model_copy(
        update=ef.terms(stack, calibrate.vendor_of(m, catalog))
    )
    assert row["simulated"] - end_to_end.rerun_point(m, prof, catalog) == pytest.approx(ft.ms(stack))
