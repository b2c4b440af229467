"""Calibrating from benchmark results: points derived from each file, a profile fitted by the shipped
fitting code, each file left out in turn; a known profile is recovered from runs it produced."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from engine.calibration import trust
from engine.catalog.entries import load_catalog
from engine.core.errors import ScenarioError
from engine.observe import detect
from engine.observe.fit import concurrency, fit_files, points
from engine.observe.observation import Measured, Observation, from_rows
from engine.observe.playback import Deployment, replay

FIX = Path(__file__).parent / "fixtures"
H100 = Deployment(hardware="h100-sxm", model="llama-3.1-8b")


def test_points_from_a_closed_loop_and_an_open_loop() -> None:
    cat = load_catalog()
    closed = detect.read_path(FIX / "aiperf_profile_export_aiperf.json")
    kinds = {p.kind: p for p in points(closed, H100, cat)}
    assert set(kinds) == {"tpot", "ttft", "throughput"}
    assert kinds["tpot"].concurrency == 4 and kinds["tpot"].value == closed.measured.tpot.mean_ms
    opened = detect.read_path(FIX / "vllm_bench_detailed.json")
    m = opened.measured
    assert concurrency(opened) == round(m.request_rps * m.e2e.mean_ms / 1000.0)  # Little's law
    assert {p.kind for p in points(opened, H100, cat)} == {"tpot", "ttft"}  # an offered load is no figure
    # two instances share the clients
    assert points(closed, dataclasses.replace(H100, count=2), cat)[0].concurrency == 2


def test_fit_reports_each_file_held_out() -> None:
    files = [
        "vllm_bench_detailed.json",
        "vllm_bench_detailed_rate8.json",
        "aiperf_profile_export_aiperf.json",
    ]
    result = fit_files([detect.read_path(FIX / f) for f in files], H100, load_catalog())
    assert list(result.held_out["file"]) == files
    assert result.held_out["held_out_abs_error"].notna().all()
    assert result.held_out_median is not None
    assert result.profile.source.startswith("user's own")
    assert len(result.table) == 7
    assert result.thin_note is None  # seven points from three files: more than the three factors, held out


def test_a_fit_with_no_more_points_than_factors_says_it_is_thin() -> None:
    """Three factors through two points fit anything: the fit says so, where it once reported eta_F 0.271
    and a 0.0% error with no word of caution."""
    result = fit_files([detect.read_path(FIX / "vllm_bench_detailed.json")], H100, load_catalog())
    assert len(result.table) == 2
    assert result.thin_note is not None and result.thin_note.startswith(
        "A thin fit (2 points for 3 factors; one file, so no held-out error)"
    )


def test_one_file_has_no_held_out_error() -> None:
    result = fit_files([detect.read_path(FIX / "aiperf_profile_export_aiperf.json")], H100, load_catalog())
    assert result.held_out["held_out_abs_error"].isna().all() and result.held_out_median is None
    assert result.thin_note is not None and "one file, so no held-out error" in result.thin_note


def test_a_file_without_a_load_gives_nothing_to_fit() -> None:
    obs = detect.read_path(FIX / "vllm_metrics_t0.prom")  # one scrape: no rate
    with pytest.raises(ScenarioError, match="no file states a concurrency or rate"):
        fit_files([obs], H100, load_catalog())


def _measured_by_simulator(obs: Observation, dep: Deployment) -> Observation:
    """What `obs`'s benchmark would have measured had the server been the simulator on `dep`."""
    rep = replay(obs, dep)
    thr = rep.table.query("figure == 'output_tok_s'")["simulated"]
    measured = Measured(
        ttft=from_rows(rep.ttft_s),
        tpot=from_rows(rep.tpot_s),
        e2e=from_rows(rep.e2e_s),
        output_tok_s=float(thr.iloc[0]) if len(thr) else None,
    )
    return dataclasses.replace(obs, measured=measured, source=f"sim-{obs.setup.concurrency}")


def test_fitting_runs_of_a_slower_chip_moves_the_replay_towards_them() -> None:
    cat = load_catalog()
    shipped = trust.calibration(cat.chip("h100-sxm"), "vllm", cat)[0]
    slow = shipped.model_copy(update={"eta_bandwidth": round(shipped.eta_bandwidth * 0.6, 3)})
    base = detect.read_path(FIX / "aiperf_profile_export_aiperf.json")
    runs = [
        _measured_by_simulator(
            dataclasses.replace(base, setup=dataclasses.replace(base.setup, concurrency=c)),
            dataclasses.replace(H100, profile=slow),
        )
        for c in (2, 16)
    ]
    fitted = fit_files(runs, H100, cat).profile
    assert fitted.eta_bandwidth < shipped.eta_bandwidth  # it found the chip slower at streaming
    before = abs(replay(runs[1], H100).error("tpot"))
    after = abs(replay(runs[1], dataclasses.replace(H100, profile=fitted)).error("tpot"))
    assert after < before / 2


def test_bands_are_the_held_out_percentiles_and_their_coverage_is_out_of_sample() -> None:
    import pandas as pd

    from engine.observe.fit import held_out_bands

    errors = pd.DataFrame(
        [(f"f{i}", "tpot", e) for i, e in enumerate([-0.2, -0.1, 0.0, 0.1, 0.2])] + [("f0", "ttft", 0.5)],
        columns=["file", "figure", "error"],
    )
    bands = held_out_bands(errors)
    assert list(bands["figure"]) == ["tpot"]  # one TTFT point carries no band
    row = bands.iloc[0]
    assert row["low"] == pytest.approx(-0.136) and row["high"] == pytest.approx(0.136)
    # each file against the others' band: the middle three fall inside, the extremes outside
    assert row["coverage"] == pytest.approx(3 / 5)


def test_four_files_give_bands_on_the_cli_and_the_fit() -> None:
    files = [
        "vllm_bench_detailed.json",
        "vllm_bench_detailed_rate8.json",
        "aiperf_profile_export_aiperf.json",
    ]
    obs = [detect.read_path(FIX / f) for f in files] + [detect.read_path(FIX / "sglang_bench.jsonl")]
    result = fit_files(obs, H100, load_catalog())
    assert set(result.bands["figure"]) == {"tpot", "ttft"}
    assert ((result.bands["low"] <= result.bands["high"]) & result.bands["coverage"].between(0, 1)).all()


def test_the_fitted_chip_travels_in_a_share_link_and_runs() -> None:
    from engine.explain.previews import with_custom_chip
    from engine.observe.fit import entry_with
    from engine.scenario.codec import DEFAULT_PRESET, from_link, load_preset, to_link
    from engine.serving.run import simulate

    cat = load_catalog()
    fitted = fit_files([detect.read_path(FIX / "aiperf_profile_export_aiperf.json")], H100, cat).profile
    entry = entry_with(cat.chip("h100-sxm"), fitted, "mine")
    sc = with_custom_chip(load_preset(DEFAULT_PRESET), entry)
    pools = tuple(p.model_copy(update={"hardware": entry.id, "profile": None}) for p in sc.deployment.pools)
    sc = sc.model_copy(
        update={"deployment": sc.deployment.model_copy(update={"pools": pools}), "duration_s": 20.0}
    )
    back = from_link(to_link(sc, DEFAULT_PRESET))
    assert back.custom_hardware[0].profiles["mine"] == fitted
    assert {p.hardware for p in back.deployment.pools} == {"h100-sxm-mine"}
    assert simulate(back).summary["requests"]["completed"] > 0


def test_two_files_of_one_name_are_both_fitted(tmp_path: Path) -> None:
    """runA/result.json and runB/result.json: both files' points are fitted and each is held out
    (the second had stood in for the first, silently)."""
    for run, name in (("a", "vllm_bench_detailed.json"), ("b", "vllm_bench_detailed_rate8.json")):
        (tmp_path / run).mkdir()
        (tmp_path / run / "result.json").write_bytes((FIX / name).read_bytes())
    obs = [detect.read_path(tmp_path / run / "result.json") for run in ("a", "b")]
    result = fit_files(obs, H100, load_catalog())
    assert list(result.held_out["file"]) == ["result.json", "result.json (2)"]
    assert list(result.held_out["points"]) == [2, 2] and len(result.table) == 4
    assert result.held_out["held_out_abs_error"].notna().all()


def test_a_rate_with_a_concurrency_ceiling_is_an_open_loop() -> None:
    """`--request-rate 8 --max-concurrency 64`: the ceiling is not what was in flight; Little's law
    is, and an offered load gives no throughput point."""
    obs = detect.read_path(FIX / "vllm_bench_detailed_rate8.json")
    capped = dataclasses.replace(obs, setup=dataclasses.replace(obs.setup, concurrency=64))
    m = obs.measured
    little = round(m.request_rps * m.e2e.mean_ms / 1000.0)
    assert little < 64 and concurrency(capped) == little
    assert {p.kind for p in points(capped, H100, load_catalog())} == {"tpot", "ttft"}
    tight = dataclasses.replace(obs, setup=dataclasses.replace(obs.setup, concurrency=2))
    assert concurrency(tight) == min(2, little)


def test_a_rate_run_without_its_e2e_takes_it_from_ttft_and_tpot() -> None:
    """vLLM's `--save-result` keeps TTFT, TPOT and ITL unless asked for E2E: Little's law then uses
    TTFT + TPOT x (output - 1), so such a file still gives its points."""
    obs = detect.read_path(FIX / "vllm_bench.json")
    m, out = obs.measured, obs.setup.output_tokens
    assert m.e2e is None and obs.setup.rate_rps
    e2e = m.ttft.mean_ms + m.tpot.mean_ms * (out - 1)
    assert concurrency(obs) == max(1, round(m.request_rps * e2e / 1000.0))
    assert {p.kind for p in points(obs, H100, load_catalog())} == {"tpot", "ttft"}


def test_the_cli_gives_a_load_only_to_the_files_that_state_none(capsys: pytest.CaptureFixture[str]) -> None:
    """`calibrate --concurrency 4` is for files that do not say: a file that states its own
    concurrency keeps it, as the dashboard does."""
    from engine.cli.main import main

    closed = str(FIX / "aiperf_profile_export_aiperf.json")  # states concurrency 4... of its own
    assert main(["calibrate", closed, str(FIX / "vllm_bench_detailed.json"), "--hardware", "h100-sxm",
                 "--model", "llama-3.1-8b", "--concurrency", "9"]) == 0  # fmt: skip
    err = capsys.readouterr().err
    assert " c4 " in err and " c9 " not in err, err


def test_a_fit_that_misses_its_own_files_says_so_not_that_it_matches(tmp_path: Path) -> None:
    """A vllm benchmark whose TTFTs read 0.1 ms was fitted, its TTFT missed by +22,825%, under a warning
    that the thin fit 'matches these runs' (a review): the fit is said not to be used as it stands, as a
    CSV's is (`calibrate.Fit.problem`)."""
    import json

    doc = json.loads((FIX / "vllm_bench_detailed.json").read_text())
    doc["ttfts"] = [1e-4] * len(doc["ttfts"])
    for k in ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms"):
        doc[k] = 0.1
    (tmp_path / "fast.json").write_text(json.dumps(doc))
    result = fit_files([detect.read_path(tmp_path / "fast.json")], H100, load_catalog())
    said = result.problem()
    assert "% (ttft " in said and "% (tpot " in said and "median" not in said  # each of its two points named
    assert result.thin_note is not None and "matches these runs" not in result.thin_note
    honest = fit_files([detect.read_path(FIX / "vllm_bench_detailed.json")], H100, load_catalog())
    assert honest.problem() == "" and "matches these runs" in str(honest.thin_note)


FIGURES = ("ttft", "tpot", "e2e")
"""The mean figures a replay compares."""


def _replay_errors(obs: Observation, dep: Deployment) -> dict[str, float]:
    """Each figure's mean as `obs`'s replay on `dep` misses it (simulated / measured - 1)."""
    rep = replay(obs, dep)
    return {f: float(rep.error(f) or 0.0) for f in FIGURES}


@pytest.mark.parametrize(
    "name",
    ["vllm_bench_detailed.json", "vllm_bench_detailed_rate8.json", "aiperf_profile_export_aiperf.json"],
)
def test_a_file_replays_with_its_own_fit_at_least_as_well_as_with_the_shipped_profile(name: str) -> None:
    """The fit priced a file at its steady state, where its replay prefills each prompt in a step of
    its own beside the running decodes and sends the file's own arrivals: the profile fitted to
    vllm_bench_detailed.json replayed it at TPOT +10.5%, TTFT +9.7%, E2E +10.5%, where the shipped vLLM
    profile replayed it at +0.4%, -4.7% and +0.0% (a review). Refined against the replay, a file's own
    fit replays it within 2%, and no worse than the shipped profile (to a point)."""
    cat = load_catalog()
    obs = detect.read_path(FIX / name)
    fitted = fit_files([obs], H100, cat).profile
    shipped = _replay_errors(obs, H100)
    own = _replay_errors(obs, dataclasses.replace(H100, profile=fitted))
    for figure in FIGURES:
        assert abs(own[figure]) <= 0.02, (figure, own, shipped)
        assert abs(own[figure]) <= abs(shipped[figure]) + 0.01, (figure, own, shipped)


def test_two_runs_fitted_together_replay_closer_than_the_shipped_profile() -> None:
    """Both vLLM runs (4 and 8 req/s): the steady-state fit replayed them at TTFT +12.1% and +11.3%,
    TPOT +10.7% and +8.3%; the shipped profile at TTFT -4.7% and -9.4%."""
    import math

    cat = load_catalog()
    runs = [detect.read_path(FIX / f) for f in ("vllm_bench_detailed.json", "vllm_bench_detailed_rate8.json")]
    fitted = fit_files(runs, H100, cat).profile
    loss = {"own": 0.0, "shipped": 0.0}
    for obs in runs:
        own = _replay_errors(obs, dataclasses.replace(H100, profile=fitted))
        shipped = _replay_errors(obs, H100)
        assert abs(own["ttft"]) <= 0.05 and abs(own["tpot"]) <= 0.05, (obs.source, own)
        loss["own"] += sum(math.log1p(own[f]) ** 2 for f in ("ttft", "tpot"))
        loss["shipped"] += sum(math.log1p(shipped[f]) ** 2 for f in ("ttft", "tpot"))
    assert loss["own"] < loss["shipped"], loss


def test_the_fit_table_is_the_replay_and_the_fit_is_repeatable() -> None:
    """The table's predicted figures are the file's replay at the fitted profile (what `replay
    --profile-from` prints; they were the steady state's, 10% off it), and a second fit is the same."""
    cat = load_catalog()
    obs = detect.read_path(FIX / "vllm_bench_detailed_rate8.json")
    result = fit_files([obs], H100, cat)
    assert fit_files([obs], H100, cat).profile == result.profile
    rep = replay(obs, dataclasses.replace(H100, profile=result.profile))
    by_kind = dict(zip(result.table["kind"], result.table["predicted"], strict=True))
    for kind in ("tpot", "ttft"):
        simulated = rep.table.query(f"figure == '{kind}' and stat == 'mean'")["simulated"].iloc[0]
        assert by_kind[kind] == pytest.approx(simulated)
    assert result.notes == ()


def test_a_file_the_simulator_cannot_replay_is_fitted_by_its_steady_state() -> None:
    """A file whose load is a measured request rate only (no stated rate or concurrency) gives points
    by Little's law but no replay: it is fitted as before, and the fit says so."""
    obs = detect.read_path(FIX / "vllm_bench_detailed.json")
    unsent = dataclasses.replace(obs, setup=dataclasses.replace(obs.setup, rate_rps=None))
    with pytest.raises(ScenarioError):
        replay(unsent, H100)
    result = fit_files([unsent], H100, load_catalog())
    assert len(result.notes) == 1 and result.notes[0].startswith("vllm_bench_detailed.json: not replayed (")
    assert result.notes[0].endswith("fitted by its steady state")
    assert (result.table["abs_error"] < 0.01).all()  # two points, three factors: the steady state meets both
