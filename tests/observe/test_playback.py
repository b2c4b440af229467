"""Replay: a benchmark result becomes the workload it sent, simulated on a stated deployment."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from engine.calibration import trust
from engine.catalog.entries import load_catalog
from engine.core.errors import ScenarioError
from engine.observe import detect
from engine.observe.playback import Deployment, gamma_arrivals, guess_model, replay

FIX = Path(__file__).parent / "fixtures"
H100 = Deployment(hardware="h100-sxm")


def test_model_names_are_recognised() -> None:
    cat = load_catalog()
    assert guess_model("meta-llama/Llama-3.1-8B-Instruct", cat) == "llama-3.1-8b"
    assert guess_model("Qwen/Qwen3-8B", cat) == "qwen3-8b"
    # a release's date and a tuning suffix do not change the architecture (the real fixtures' names)
    assert guess_model("Qwen/Qwen3-235B-A22B-Thinking-2507", cat) == "qwen3-235b-a22b-2507"
    # a release with an entry of its own is that entry: the 2507 update serves 262,144 tokens where
    # the first release's config says 40,960
    assert guess_model("Qwen/Qwen3-235B-A22B-Instruct-2507", cat) == "qwen3-235b-a22b-2507"
    assert guess_model("Qwen/Qwen3-235B-A22B", cat) == "qwen3-235b-a22b"
    assert cat.model("qwen3-235b-a22b-2507").max_context == 262_144
    assert cat.model("qwen3-235b-a22b").max_context == 40_960
    assert guess_model("deepseek-ai/DeepSeek-R1-0528", cat) == "deepseek-r1"
    assert guess_model("Qwen/Qwen3-32B", cat) is None  # not in the catalog
    assert guess_model("my-org/unknown-model", cat) is None


def test_detailed_result_replays_each_request_with_its_lengths() -> None:
    obs = detect.read_path(FIX / "vllm_bench_detailed.json")
    rep = replay(obs, H100)
    assert obs.rows is not None
    assert rep.scenario.workload.arrival.kind == "poisson"
    assert len(rep.ttft_s) == 100  # every request completed, one simulated per measured
    figures = set(rep.table["figure"])
    assert {"ttft", "tpot", "itl", "e2e", "output_tok_s", "request_rps"} <= figures
    # the error column is what it says
    row = rep.table.iloc[0]
    assert row["error"] == pytest.approx(row["simulated"] / row["measured"] - 1.0)
    # a light load on one H100 for an 8B model: within a factor of two of the file's figures
    assert abs(rep.error("tpot")) < 1.0 and abs(rep.error("output_tok_s")) < 0.5


def test_a_concurrency_is_replayed_as_closed_loop_clients() -> None:
    obs = detect.read_path(FIX / "sglang_bench.jsonl")
    rep = replay(obs, dataclasses.replace(H100, model="llama-3.1-8b"))
    arr = rep.scenario.workload.arrival
    assert arr.kind == "closed_loop" and arr.clients == 8 and arr.stop_after == 80 and arr.ramp_s == 0.0
    assert len(rep.e2e_s) == 80


def test_the_deployment_and_profile_change_the_replay() -> None:
    obs = detect.read_path(FIX / "vllm_bench.json")
    base = replay(obs, H100)
    faster = replay(obs, dataclasses.replace(H100, hardware="h200"))
    shipped = trust.calibration(load_catalog().chip("h100-sxm"), "vllm", load_catalog())[0]
    slow = replay(
        obs,
        dataclasses.replace(
            H100, profile=shipped.model_copy(update={"eta_bandwidth": shipped.eta_bandwidth / 2})
        ),
    )
    tpot = lambda r: float(r.table.query("figure == 'tpot' and stat == 'mean'")["simulated"].iloc[0])  # noqa: E731
    assert tpot(faster) < tpot(base) < tpot(slow)


def test_gamma_arrivals_follow_the_rate_and_burstiness() -> None:
    t = gamma_arrivals(2000, 5.0, 1.0, seed=1)
    assert t[0] == 0.0 and np.all(np.diff(t) >= 0)
    assert np.mean(np.diff(t)) == pytest.approx(1 / 5.0, rel=0.02)
    cv = lambda b: float(np.std(np.diff(gamma_arrivals(2000, 5.0, b, 1))) * 5.0)  # noqa: E731
    assert cv(0.25) > 1.5 > cv(1.0) > 0.7 > cv(4.0)


def test_missing_model_or_load_is_refused() -> None:
    obs = detect.read_path(FIX / "sglang_bench.jsonl")
    with pytest.raises(ScenarioError, match="does not name the model; give the model"):
        replay(obs, H100)
    aggregated = detect.read_path(FIX / "vllm_bench.json")
    bare = dataclasses.replace(aggregated, setup=dataclasses.replace(aggregated.setup, rate_rps=None))
    with pytest.raises(ScenarioError, match="neither a request rate nor a concurrency"):
        replay(bare, H100)
    with pytest.raises(ScenarioError, match="unknown model"):
        replay(aggregated, dataclasses.replace(H100, model="not-a-model"))


def test_recorded_send_times_are_replayed_as_they_were() -> None:
    obs = detect.read_path(FIX / "aiperf_profile_export.jsonl")
    rep = replay(obs, dataclasses.replace(H100, model="llama-3.1-8b"))
    assert obs.rows is not None and obs.rows.start_s is not None
    assert rep.scenario.duration_s == pytest.approx(float(obs.rows.start_s.max()) + 1e-6)
    assert len(rep.ttft_s) == len(obs.rows.ttft_s)


def test_vllm_start_times_are_replayed_as_they_were(tmp_path: Path) -> None:
    """vLLM's --save-detailed result carries each request's send time (`start_times`, on the
    client's perf_counter clock) in its newer versions: a rate run is replayed at those times, not at
    a fresh draw of its rate; a failed request's time goes with it; a broken list is refused."""
    doc = json.loads((FIX / "vllm_bench_detailed_rate8.json").read_text())
    n = len(doc["input_lens"])
    sent = [1000.0 + 0.5 * i for i in range(n)]  # one every 0.5 s: not what a rate of 8 draws
    sent[3], sent[4] = sent[4], sent[3]  # out of order, as tasks may finish starting
    doc["start_times"], doc["errors"] = sent, ["" if i else "boom" for i in range(n)]
    path = tmp_path / "detailed.json"
    path.write_text(json.dumps(doc))
    obs = detect.read_path(path)
    assert obs.rows is not None and obs.rows.start_s is not None
    assert sorted(obs.rows.start_s) == pytest.approx([0.5 * i for i in range(n - 1)])
    rep = replay(obs, H100)
    assert rep.scenario.duration_s == pytest.approx(0.5 * (n - 2) + 1e-6)  # 60 s, not 120 / 8 = 15 s
    drawn = replay(detect.read_path(FIX / "vllm_bench_detailed_rate8.json"), H100)
    assert drawn.scenario.duration_s < 20.0
    doc["start_times"] = [*sent[:-1], 1e11]  # an outlier: a window past the longest a run may have
    path.write_text(json.dumps(doc))
    with pytest.raises(ScenarioError, match="start_times: the requests were sent over"):
        detect.read_path(path)
    doc["start_times"] = 7
    path.write_text(json.dumps(doc))
    with pytest.raises(ScenarioError, match="start_times: expected a list"):
        detect.read_path(path)
    doc["start_times"] = sent[:-1]
    path.write_text(json.dumps(doc))
    with pytest.raises(ScenarioError, match="differ in length"):
        detect.read_path(path)


def test_a_single_request_is_replayed_in_a_window_of_at_least_a_second() -> None:
    obs = detect.read_path(FIX / "vllm_bench.json")
    one = dataclasses.replace(obs, setup=dataclasses.replace(obs.setup, requests=1))
    rep = replay(one, H100)
    assert len(rep.e2e_s) == 1 and rep.scenario.duration_s >= 1.0


def test_a_rate_beside_a_concurrency_is_replayed_under_a_ceiling() -> None:
    """`--request-rate R --max-concurrency C`: the rate's schedule, never more than C in flight (it
    was replayed as C closed-loop clients sending as fast as they could)."""
    obs = detect.read_path(FIX / "vllm_bench_detailed.json")
    assert obs.setup.rate_rps and not obs.setup.concurrency
    capped = dataclasses.replace(obs, setup=dataclasses.replace(obs.setup, concurrency=2))
    rep = replay(capped, H100)
    arr = rep.scenario.workload.arrival
    assert arr.kind == "poisson" and arr.rate_rps == obs.setup.rate_rps and arr.max_in_flight == 2
    assert not [n for n in rep.notes if "concurrency alone" in n]
    free = replay(obs, H100)
    assert len(rep.e2e_s) == len(free.e2e_s) == 100
    # two in flight at a time holds requests back: the run takes longer than the open loop's

    def simulated(r: object, figure: str) -> float:
        t = r.table  # type: ignore[attr-defined]
        return float(t[(t["figure"] == figure) & (t["stat"] == "mean")]["simulated"].iloc[0])

    assert simulated(rep, "request_rps") < simulated(free, "request_rps")


def test_a_replays_itl_is_the_runs_token_gaps_or_said_to_be_tpot() -> None:
    """The simulated ITL was each request's TPOT weighted by its tokens, so its tail matched a measured ITL's
    by +1.3% by construction (a review): a run measured whole gives its token gaps (`latency_ms.tbt`); an
    open loop, whose gaps are measured up to its last send, keeps the TPOT form and says so."""
    from engine.observe.playback import ITL_FROM_TPOT, _token_gaps
    from engine.scenario.codec import apply_overrides, load_preset
    from engine.serving.run import simulate

    rep = replay(detect.read_path(FIX / "vllm_bench_detailed.json"), H100)  # a rate: an open loop
    assert ITL_FROM_TPOT in rep.notes
    closed = apply_overrides(
        load_preset("chat-colocated"),
        {"workload.arrival": {"kind": "closed_loop", "clients": 8, "stop_after": 40}, "duration_s": 60.0},
    )
    notes: list[str] = []
    res = simulate(closed)
    gaps = _token_gaps(res.summary, closed, notes)
    tbt = res.summary["latency_ms"]["tbt"]
    assert gaps is not None and not notes
    assert gaps.percentiles_ms[99.0] == tbt["p99"] and gaps.mean_ms == tbt["mean"]
