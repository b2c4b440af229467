"""The planner and the capacity search: pruning, exactness on a small space, frontiers, errors."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.catalog.entries import Catalog
from engine.cli.main import main
from engine.core.errors import ScenarioError
from engine.costmodel.perf import Instance
from engine.planning.candidates import SearchSpace, planning_scenario, with_deployment
from engine.planning.capacity import capacity
from engine.planning.frontier import TIE, pareto
from engine.planning.plan import plan
from engine.planning.sizing import Kind, Shape, demand, instance_rates, lower_bound
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.serving.run import simulate
from engine.serving.workload import generate
from tests.simhelp import h100_edges

NOMINAL: dict[str, Any] = {"risk_aware": False, "verify": False}
"""The search as modelled, its pick unchecked: what the exactness tests hold (tests/planning/test_verdict.py
holds the risk-aware, verified verdict)."""
SMALL = SearchSpace(hardware=("h100-sxm",), tp=(2,), duration_s=30.0, finalists=1, frontier_extra=1)


def chat(preset: str = "chat-colocated", **over: Any) -> Scenario:
    return io.apply_overrides(io.load_preset(preset), {"duration_s": 60.0, **over})


@pytest.fixture(scope="module")
def small_plan() -> Any:
    return plan(chat(), 24.0, SMALL, **NOMINAL)


def _demand(s: Scenario) -> Any:
    base = planning_scenario(s, s.workload.arrival.rate_rps, 30.0)
    return demand(base, generate(base))


# --- the cost model's rates ------------------------------------------------------------------


def test_weights_that_do_not_fit_are_pruned(catalog: Catalog) -> None:
    s = chat(**{"model.weights": "bf16"})
    inst = Instance(model=catalog.model("llama-3.1-70b"), hardware=catalog.chip("h100-sxm"), tp=1)
    r = instance_rates(inst, _demand(s))
    assert "weights do not fit" in r.prefill_problem and "weights do not fit" in r.decode_problem


def test_more_bandwidth_decodes_faster(catalog: Catalog) -> None:
    d = _demand(chat())
    m = catalog.model("llama-3.1-70b")
    h100 = instance_rates(Instance(model=m, hardware=catalog.chip("h100-sxm"), tp=2, weights="fp8"), d)
    h200 = instance_rates(Instance(model=m, hardware=catalog.chip("h200"), tp=2, weights="fp8"), d)
    assert h200.decode_tokens_per_s >= h100.decode_tokens_per_s
    assert h200.kv_capacity_tokens > h100.kv_capacity_tokens
    assert h100.prefill_s_per_request > 0 and h100.decode_batch >= 1


@pytest.mark.parametrize(
    ("chip", "tp", "weights", "prompt"),
    [("h100-sxm", 1, "fp8", 2048), ("h100-sxm", 4, "fp8", 256), ("h100-sxm", 4, "fp8", 64), ("b200", 2, "fp4", 64),
     ("h20", 2, "fp8", 512)],
)  # fmt: skip
def test_the_prefill_bound_never_exceeds_a_full_iterations_share(
    catalog: Catalog, chip: str, tp: int, weights: str, prompt: int
) -> None:
    """The planner's per-request prefill time is a lower bound: at most a prompt's share of an
    iteration that carries as many prompts as the token budget holds (weights read and all-reduce
    latencies paid once for all of them), compute and memory combined as the engine combines them."""
    from engine.costmodel.iteration import iteration_cost

    d = _demand(chat(**{"workload.classes[0].input": {"kind": "constant", "tokens": prompt}}))
    inst = Instance(model=catalog.model("llama-3.1-70b"), hardware=catalog.chip(chip), tp=tp, weights=weights)
    bound = instance_rates(inst, d).prefill_s_per_request
    share = max(1.0, d.limits_on(inst.hardware).token_budget // prompt)
    full = iteration_cost(
        inst, prefill_tokens=share * prompt, prefill_attn_pairs=share * prompt * prompt / 2.0
    )
    actual = float(full.time_s) / share
    assert 0.0 < bound <= actual * (1.0 + 1e-9)
    assert bound > 0.5 * actual  # and a useful one


def test_lower_bound_grows_with_load(catalog: Catalog) -> None:
    m = catalog.model("llama-3.1-70b")
    inst = Instance(model=m, hardware=catalog.chip("h100-sxm"), tp=2, weights="fp8", kv="fp8")
    shape = Shape("disaggregated", ("h100-sxm", 2), ("h100-sxm", 2))
    counts = []
    for rate in (5.0, 10.0, 20.0, 40.0):
        d = _demand(chat(**{"workload.arrival.rate_rps": rate}))
        rates = {Kind("h100-sxm", 2): instance_rates(inst, d)}
        counts.append(lower_bound(shape, rates, d, 64).counts)
    assert all(a[0] <= b[0] and a[1] <= b[1] for a, b in itertools.pairwise(counts))
    assert counts[-1][0] > counts[0][0]


# --- the search ------------------------------------------------------------------------------


def test_plan_finds_a_passing_deployment(small_plan: Any) -> None:
    p = small_plan
    assert p.best is not None and p.best_run is not None
    chosen = p.runs.iloc[p.best_run]
    assert bool(chosen["passes"])
    passing = p.runs[p.runs["passes"]]
    assert chosen["usd_per_hour"] == passing["usd_per_hour"].min()
    # the chosen scenario: the target load over the user's own window
    assert p.best.workload.arrival.rate_rps == 24.0
    assert p.best.duration_s == 60.0 and p.duration_s == 30.0
    assert p.simulated == len(p.runs) and p.feasible == int(p.runs["passes"].sum())
    assert p.pruned + p.bounded + (p.candidates["status"] == "simulated").sum() <= len(p.candidates)


def test_no_cheaper_deployment_passes(small_plan: Any) -> None:
    """Brute force over every count pair below the chosen cost: none meets the SLOs."""
    p = small_plan
    best_cost = p.best_usd_per_hour
    base = planning_scenario(chat(), 24.0, 30.0)
    reqs = generate(base)
    price = 2 * 2.49  # one h100-sxm tp2 instance
    checked = 0
    for shape in (
        Shape("colocated", ("h100-sxm", 2), ("h100-sxm", 2)),
        Shape("disaggregated", ("h100-sxm", 2), ("h100-sxm", 2)),
    ):
        for a in range(1, 8):
            for b in range(0 if shape.mode == "colocated" else 1, 8):
                if shape.mode == "colocated" and b:
                    continue
                if (a + b) * price >= best_cost - 1e-9:
                    continue
                res = simulate(with_deployment(base, shape, (a, b)), requests=reqs)
                assert not all(c["passes"] for c in res.summary["classes"].values()), (shape, a, b)
                checked += 1
    assert checked >= 5


def test_plan_is_deterministic(small_plan: Any) -> None:
    again = plan(chat(), 24.0, SMALL, **NOMINAL)
    pd.testing.assert_frame_equal(small_plan.runs, again.runs)
    assert small_plan.best == again.best


def test_frontiers_are_not_dominated(small_plan: Any) -> None:
    p = small_plan
    f = p.frontier_cost
    assert len(f) >= 1
    for r in f.itertuples():
        better = p.runs[(p.runs["usd_per_hour"] <= r.usd_per_hour) & (p.runs["goodput_rps"] >= r.goodput_rps)]
        strictly = better[(better["usd_per_hour"] < r.usd_per_hour) | (better["goodput_rps"] > r.goodput_rps)]
        assert strictly.empty
    assert {"tokens_per_s_per_user", "output_tokens_per_s_per_chip", "split"} <= set(p.frontier_throughput)
    assert p.runs["chosen"].sum() == 1
    assert all(":" in s or s.endswith(" mixed") for s in p.runs["split"])


def test_impossible_tpot_prunes_everything() -> None:
    s = chat(**{"workload.classes[0].slo.tpot_ms": 1.0})
    p = plan(s, 4.0, SMALL)
    assert p.best is None and p.simulated == 0
    assert p.pruned == len(p.candidates)
    assert p.candidates["status"].str.contains("TPOT").all()
    assert any(
        n.startswith("no deployment was simulated: the cost model pruned") for n in p.notes
    )  # said as such


def test_budget_prunes_by_lower_bound() -> None:
    p = plan(
        chat(), 12.0, SearchSpace(hardware=("h100-sxm",), tp=(2,), duration_s=30.0, budget_usd_per_hour=1.0)
    )
    assert p.simulated == 0 and p.candidates["status"].str.contains("over budget").all()


def test_simulation_budget_is_respected() -> None:
    space = SearchSpace(hardware=("h100-sxm", "h200"), tp=(1, 2), duration_s=30.0, max_simulations=3)
    p = plan(chat(), 12.0, space)
    assert p.simulated <= 3
    assert not p.exhaustive and any("budget" in n for n in p.notes)


def test_plan_input_errors_name_the_field() -> None:
    with pytest.raises(ScenarioError, match=r"target_rps"):
        plan(chat(), 0.0, SMALL)
    with pytest.raises(ScenarioError, match=r"space.hardware"):
        plan(chat(), 4.0, SearchSpace(hardware=("h1000",)))
    with pytest.raises(ScenarioError, match=r"workload.arrival.kind"):
        plan(chat(**{"workload.arrival.kind": "offline"}), 4.0, SMALL)
    with pytest.raises(ScenarioError, match=r"space.tp"):
        SearchSpace(tp=(0,))
    with pytest.raises(ScenarioError, match=r"space.duration_s"):
        SearchSpace(duration_s=1.0)


@given(st.lists(st.tuples(st.floats(0, 100), st.floats(0, 100)), min_size=1, max_size=30))
def test_pareto_keeps_exactly_the_undominated(points: list[tuple[float, float]]) -> None:
    frame = pd.DataFrame(points, columns=["cost", "value"])
    keep = pareto(frame, "cost", "value", maximize_x=False, maximize_y=True)
    c, v = frame["cost"].to_numpy(), frame["value"].to_numpy()
    for i in range(len(frame)):
        # beaten: as cheap and as good within the tie (a 0.1% difference is none), better by more on one
        tc, tv = TIE * abs(c[i]), TIE * abs(v[i])
        as_good = (c <= c[i] + tc) & (v >= v[i] - tv)
        dominated = bool((as_good & ((c < c[i] - tc) | (v > v[i] + tv))).any())
        assert keep.iloc[i] == (not dominated)
    assert keep.any()
    # two points a hair apart on one figure and far apart on the other: the better one alone
    near = pd.DataFrame({"cost": [10.0, 10.005], "value": [5.0, 9.0]})
    assert pareto(near, "cost", "value", maximize_x=False, maximize_y=True).tolist() == [False, True]


# --- capacity --------------------------------------------------------------------------------


def test_capacity_brackets_the_pass_fail_boundary() -> None:
    s = chat("chat-disaggregated", **{"duration_s": 40.0})
    cap = capacity(s, max_simulations=7)
    assert cap.simulations <= 7 and len(cap.runs) == cap.simulations
    assert cap.capacity_rps > 0 and cap.failed_rps is not None
    assert cap.capacity_rps < cap.failed_rps
    assert math.isfinite(cap.estimate_rps) and cap.estimate_rps > 0
    # every rate that passed is below every rate that failed (the search saw a clean boundary)
    runs = cap.runs
    assert runs.loc[runs["passes"], "rate_rps"].max() < runs.loc[~runs["passes"], "rate_rps"].min()
    again = capacity(s, max_simulations=7)
    assert again.capacity_rps == cap.capacity_rps


def test_more_instances_never_lower_capacity() -> None:
    s = chat("chat-disaggregated", **{"duration_s": 40.0})
    bigger = io.apply_overrides(s, {"deployment.pools[0].count": 4})
    assert capacity(bigger, max_simulations=6).capacity_rps >= capacity(s, max_simulations=6).capacity_rps


def test_capacity_stops_below_a_rate_the_deployment_cannot_sustain() -> None:
    """With targets no latency misses, only sustainability bounds the search: every rate past what
    twelve H100s sustain (about 30 req/s) builds a queue that grows through the window and fails."""
    loose = {"ttft_ms": 3_600_000, "tpot_ms": 60_000, "percentile": 50}
    s = chat("chat-disaggregated", **{"duration_s": 240.0, "workload.classes[0].slo": loose})
    cap = capacity(s, max_simulations=7, low_rps=16.0, high_rps=64.0)
    runs = cap.runs
    behind = runs["shortfall_rps"].notna()
    assert behind.any() and not runs.loc[behind, "passes"].any()
    assert runs.loc[behind, "classes_pass"].all()  # every class within its targets, yet failing
    assert 20.0 < cap.capacity_rps < 34.0
    assert cap.failed_rps is not None and cap.failed_rps < 40.0


def test_capacity_rejects_closed_loop() -> None:
    with pytest.raises(ScenarioError, match=r"workload.arrival.kind"):
        capacity(chat(**{"workload.arrival.kind": "closed_loop"}))


# --- CLI -------------------------------------------------------------------------------------


# a small plan from the command line: one chip kind, one TP degree, a 30 s window
SMALL_PLAN = [
    "plan",
    "chat-colocated",
    "--hardware",
    "h100-sxm",
    "--tp",
    "2",
    "--duration-s",
    "30",
    "--no-progress",
]


def test_cli_plan_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*SMALL_PLAN, "--target-rps", "8", "--finalists", "1", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["best"]["passes"] is True
    assert doc["counts"]["simulated"] >= 1 and doc["frontier_cost"]
    assert doc["best"]["deployment"]["pools"][0]["hardware"] == "h100-sxm"
    # the margin: the choice rerun, and the search repeated, with chips at their band's pessimistic edge
    m = doc["margin"]
    assert m["slowdown"] == {
        "h100-sxm": pytest.approx(doc["calibration"]["h100-sxm"]["band"]["throughput"][1] - 1)
    }
    assert isinstance(m["chosen_holds"], bool) and m["chosen_slowed"]["run"] == doc["best"]["run"]
    if m["chosen_holds"]:
        assert m["extra_usd_per_hour"] == 0.0
    elif m["slowed_best"] is not None:
        assert (
            m["slowed_best"]["usd_per_hour"] >= doc["best"]["usd_per_hour"]
        )  # another split may cost the same
    assert main([*SMALL_PLAN, "--target-rps", "8", "--finalists", "1", "--json", "--no-margin"]) == 0
    assert "margin" not in json.loads(capsys.readouterr().out)


def test_cli_plan_text_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "chat-colocated", "--target-rps", "-1", "--no-progress"]) == 2
    assert "--target-rps" in capsys.readouterr().err
    assert main(["plan", "chat-colocated", "--target-rps", "4", "--tp", "x", "--no-progress"]) == 2
    code = main([*SMALL_PLAN, "--target-rps", "6"])
    assert code == 0
    out = capsys.readouterr().out
    assert "chosen (on its 30 s planning run): " in out and "Pareto" in out  # the window it was judged on
    # the planning window's figures and the verdict's full-length ones read as two costs for one choice (a
    # review read $2.54 and $2.19 per M; labelled, a later one read $1.69 and $1.47): the verdict's only
    chosen = next(ln for ln in out.splitlines() if ln.startswith("chosen (on its"))
    assert (
        chosen.endswith("its latencies and costs below are its full-length run's") and "per M" not in chosen
    )
    assert "margin: with every chip at the pessimistic edge of its throughput band (h100-sxm +" in out
    assert "about two in three real deployments land inside" in out
    assert "the chosen deployment still passes" in out or "the chosen deployment no longer passes" in out
    # the rule it passes by, so a share within SLO under the attainment rule's 90% does not read as a fail
    if "still passes" in out:
        assert "still passes (every class within its TTFT and TPOT targets at its SLO percentile: " in out


def test_cli_plan_that_finds_nothing_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    """A plan with no deployment that meets the targets is an answer a script must not read as a pass:
    status 1 (2 stays bad input), text and JSON alike, the document still written."""
    none = [*SMALL_PLAN, "--target-rps", "4", "--set", "workload.classes[0].slo.tpot_ms=1"]
    assert main(none) == 1
    assert "no deployment" in capsys.readouterr().out
    assert main([*none, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["best"] is None
    assert main([*SMALL_PLAN, "--target-rps", "4", "--no-margin"]) == 0  # one that passes: 0


def test_cli_capacity_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "capacity",
            "chat-colocated",
            "--max-simulations",
            "4",
            "--duration-s",
            "30",
            "--json",
            "--no-progress",
        ]
    )
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["simulations"] == len(doc["runs"]) <= 4
    assert np.isfinite(doc["estimate_rps"])
    # the margin: the same search with the chips slower and faster; slower never serves more
    m = doc["margin"]
    slow, fast = h100_edges()
    assert m["slowdown"] == {"h100-sxm": slow} and m["speedup"] == {"h100-sxm": fast}
    assert m["slower_capacity_rps"] <= doc["capacity_rps"] <= m["faster_capacity_rps"]


@pytest.mark.slow  # three capacity searches over 120 s windows
def test_capacity_falls_with_slower_chips_more_than_their_error_when_a_target_binds() -> None:
    """chat-colocated's capacity is bound by its 30 ms TPOT target: 15% slower chips cost it more
    than 15% of its capacity, which is why the CLI searches again rather than printing ± 15%."""
    from engine.planning.capacity import capacity

    sc = io.load_preset("chat-colocated")
    base = capacity(sc, duration_s=120.0)
    slow = capacity(sc, duration_s=120.0, slowdown={"h100-sxm": 0.15})
    assert 0 < slow.capacity_rps < base.capacity_rps / 1.15
    assert capacity(sc, duration_s=120.0, slowdown={}).capacity_rps == base.capacity_rps


def test_hardware_choice_reads_lists_and_all() -> None:
    from engine.planning.candidates import hardware_choice

    s = io.load_preset("chat-disaggregated")
    assert hardware_choice(s, " h100-sxm, h200 ,") == ("h100-sxm", "h200")
    assert hardware_choice(s, "") == ()
    every = hardware_choice(s, "all")
    assert "h100-sxm" in every and "decode-asic" not in every  # illustrative chips stay out
    assert list(every) == sorted(every)


def test_every_candidate_and_run_says_whether_its_chips_are_calibrated(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Under vLLM the H100 is fitted and the MI325X is not: each row and frontier point says so."""
    from engine.calibration import trust
    from engine.catalog.entries import load_catalog
    from engine.cli.plan import print_plan

    cat = load_catalog()
    fitted = {h: trust.calibration(cat.hardware[h], "vllm", cat)[1].fitted for h in ("h100-sxm", "mi325x")}
    assert fitted == {"h100-sxm": True, "mi325x": False}, "pick chips that differ for this test"
    space = SearchSpace(hardware=("h100-sxm", "mi325x"), tp=(2,), duration_s=30.0, max_simulations=12)
    p = plan(chat(**{"deployment.stack": "vllm"}), 12.0, space)
    assert {c.hardware: c.fitted for c in p.calibration} == fitted
    cand_chips = p.candidates[["prefill_hardware", "decode_hardware"]].to_numpy().tolist()
    run_chips = [[h for h in r if isinstance(h, str)] for r in
                 p.runs[["prefill_hardware", "decode_hardware", "mixed_hardware"]].to_numpy().tolist()]  # fmt: skip
    for frame, chips in ((p.candidates, cand_chips), (p.runs, run_chips)):
        for (_, row), hws in zip(frame.iterrows(), chips, strict=True):
            sure = all(fitted[h] for h in hws)
            assert bool(row["calibrated"]) is sure
            assert (
                row["calibration"] == "calibrated"
                if sure
                else row["calibration"].startswith("uncalibrated: mi325x")
            )
    assert {"calibrated", "calibration", "throughput_error"} <= set(p.frontier_cost.columns)
    assert "tpot_error" in p.frontier_throughput.columns
    assert json.loads(json.dumps(p.to_json()["calibration"], default=str))["mi325x"]["fitted"] is False
    print_plan(p)
    out = capsys.readouterr().out
    assert (
        "calibration"
        in out.splitlines()[next(i for i, x in enumerate(out.splitlines()) if "Pareto" in x) + 1]
    )
    assert (
        "uncalibrated chips" in out
        and f"mi325x: {next(c.rule for c in p.calibration if not c.fitted)}" in out
    )


def test_a_stack_that_cannot_run_a_chip_prunes_its_shapes() -> None:
    """TensorRT-LLM runs on NVIDIA GPUs only: shapes with an AMD chip are pruned, not simulated."""
    space = SearchSpace(hardware=("h100-sxm", "mi325x"), tp=(2,), duration_s=30.0, max_simulations=6)
    p = plan(chat(**{"deployment.stack": "trtllm"}), 12.0, space)
    amd = p.candidates[
        (p.candidates["prefill_hardware"] == "mi325x") | (p.candidates["decode_hardware"] == "mi325x")
    ]
    assert len(amd) and (amd["status"] == "pruned: TensorRT-LLM runs on NVIDIA GPUs only").all()
    assert not (p.runs[["prefill_hardware", "decode_hardware", "mixed_hardware"]] == "mi325x").any().any()


# --- layouts: pipelines, expert and data parallelism -------------------------------------------


def test_instance_kinds_add_pipelines_and_expert_layouts(catalog: Catalog) -> None:
    from engine.planning.candidates import instance_kinds

    space = SearchSpace(tp=(1, 2, 4, 8), pp=(1, 2), ep=(8, 16), ep_tp=(1, 2))
    dense = [k.layout() for k in instance_kinds(space, ("h100-sxm",), catalog.model("llama-3.1-70b"))]
    assert dense == ["tp1", "tp2", "tp4", "tp4 pp2", "tp8", "tp8 pp2"]  # pp only where tp fills half a node
    moe = [k.layout() for k in instance_kinds(space, ("h200",), catalog.model("deepseek-v3"))]
    assert {"tp1 dp8 ep8", "tp2 dp4 ep8", "tp1 dp16 ep16", "tp2 dp8 ep16"} <= set(moe)
    assert all(
        k.ep == k.tp * k.dp
        for k in instance_kinds(space, ("h200",), catalog.model("deepseek-v3"))
        if k.ep > 1
    )
    mixtral = [k.layout() for k in instance_kinds(space, ("h100-sxm",), catalog.model("mixtral-8x7b"))]
    assert "tp1 dp8 ep8" in mixtral and not any("ep16" in x for x in mixtral)  # 8 experts: no ep16
    plain = SearchSpace(tp=(2,), pp=(1,), ep=())
    assert instance_kinds(plain, ("h200",), catalog.model("deepseek-v3")) == [Kind("h200", 2)]
    with pytest.raises(ScenarioError, match=r"space.pp"):
        SearchSpace(pp=(0,))
    with pytest.raises(ScenarioError, match=r"space.ep"):
        SearchSpace(ep=(1,))


def test_sizing_builds_instances_with_the_layout_and_speculation(catalog: Catalog) -> None:
    from engine.planning.sizing import instance_of

    s = planning_scenario(io.load_preset("moe-deepseek-h200"), 4.0, 30.0)
    d = demand(s, generate(s))
    ep = instance_of(s, catalog, "h200", 1, 1, 8, 8)
    assert (ep.chips, ep.dp, ep.ep, ep.imbalance) == (8, 8, 8, s.deployment.expert_imbalance)
    assert (
        instance_of(s, catalog, "h200", 8).imbalance == 1.0
        and instance_of(s, catalog, "h200", 8).speculation is None
    )
    spec = io.apply_overrides(s, {"deployment.speculative": {"method": "mtp"}})
    fast = instance_of(spec, catalog, "h200", 8)
    assert fast.speculation is not None and fast.speculation.tokens == 1
    plain, sped = instance_rates(instance_of(s, catalog, "h200", 8), d), instance_rates(fast, d)
    assert sped.prefill_s_per_request == pytest.approx(plain.prefill_s_per_request)  # prompts never speculate
    assert sped.decode_step_s != plain.decode_step_s
    # a full pipeline: the prefill bound counts its stages working at once
    dense = chat(**{"model.id": "llama-3.1-70b"})
    dd = _demand(dense)
    one = instance_rates(instance_of(dense, catalog, "h100-sxm", 4), dd)
    two = instance_rates(instance_of(dense, catalog, "h100-sxm", 4, 2), dd)
    assert two.chips == 8 and two.pp == 2
    assert two.prefill_s_per_request < 0.6 * one.prefill_s_per_request
    assert two.decode_tokens_per_s > one.decode_tokens_per_s


def _layouts(frame: pd.DataFrame) -> set[str]:
    cols = [c for c in ("prefill_layout", "decode_layout", "mixed_layout") if c in frame]
    return {x for c in cols for x in frame[c].dropna()}


def test_a_moe_plan_considers_expert_parallel_layouts() -> None:
    """DeepSeek-V3 in fp8 does not fit eight H100s: only a pipeline or an ep16 layout over 16 chips does."""
    s = chat("moe-deepseek-h200", **{"duration_s": 30.0})
    space = SearchSpace(
        hardware=("h100-sxm",), duration_s=30.0, max_simulations=10, finalists=3, frontier_extra=0
    )
    p = plan(s, 2.0, space)
    cand = p.candidates.set_index("shape")
    for fits in ("h100-sxm tp1 dp16 ep16", "h100-sxm tp2 dp8 ep16", "h100-sxm tp8 pp2"):
        assert not cand.loc[fits, "status"].startswith("pruned"), cand.loc[fits, "status"]
    for too_small in ("h100-sxm tp8", "h100-sxm tp1 dp8 ep8"):
        assert "weights do not fit" in cand.loc[too_small, "status"]
    assert {"tp1 dp16 ep16", "tp2 dp8 ep16"} & _layouts(p.runs)  # an ep16 layout simulated, not only listed
    assert p.best is not None and p.best_run is not None
    best = p.runs.iloc[p.best_run]
    pool = p.best.deployment.pools[0]
    assert best["chips"] == pool.count * pool.chips_per_instance == 16 * pool.count
    layout = best["mixed_layout"] if best["mode"] == "colocated" else best["decode_layout"]
    assert layout in {"tp8 pp2", "tp1 dp16 ep16", "tp2 dp8 ep16"} and layout in best["shape"]


def test_a_dense_405b_plan_considers_pipelines(capsys: pytest.CaptureFixture[str]) -> None:
    """Llama-3.1-405B in bf16 needs more than eight H100s: the plan pipelines two eight-chip stages."""
    over = {"model.id": "llama-3.1-405b", "model.weights": "bf16", "deployment.pools[0].tp": 8,
            "deployment.pools[0].pp": 2, "deployment.pools[0].count": 1,
            "workload.classes[0].slo.ttft_ms": 3000.0, "workload.classes[0].slo.tpot_ms": 100.0}  # fmt: skip
    s = chat(**over)
    p = plan(
        s, 1.0, SearchSpace(hardware=("h100-sxm",), tp=(4, 8), duration_s=30.0, finalists=1, frontier_extra=0)
    )
    assert "tp8 pp2" in _layouts(p.candidates) and "tp4 pp2" in _layouts(p.candidates)
    assert p.best is not None and p.best_run is not None
    assert (p.best.deployment.pools[0].tp, p.best.deployment.pools[0].pp) == (8, 2)
    assert p.runs.iloc[p.best_run]["shape"].startswith("h100-sxm tp8 pp2")
    from engine.cli.plan import print_plan

    print_plan(p)
    assert "h100-sxm tp8 pp2" in capsys.readouterr().out


def test_the_planner_keeps_the_activation_room_the_candidate_chip_will_keep() -> None:
    """A candidate is sized with its own chip's default token budget (an L40S under vLLM: 2,048),
    as the run that puts it first will: the same KV room as resolve gives."""
    from engine.catalog.entries import load_catalog
    from engine.planning.sizing import instance_of
    from engine.scenario.resolve import resolve

    cat = load_catalog()
    base = io.load_preset("chat-colocated")  # H100 pools: an 8,192-token budget
    planned = instance_of(base, cat, "l40s", 4)
    on_l40s = io.apply_overrides(base, {"deployment.pools[0].hardware": "l40s", "deployment.pools[0].tp": 4})
    run = resolve(on_l40s).pools[0].instance
    assert planned.activation_tokens == run.activation_tokens == 2048 < base.activation_tokens()
    assert planned.kv_capacity_tokens == run.kv_capacity_tokens


def test_goodput_per_chip_counts_only_the_tokens_within_their_slo(small_plan: Any) -> None:
    """An open loop that falls behind still completes every offered request, so its output tokens/s
    is the offered load; goodput per chip, the throughput frontier's axis, counts only the tokens
    of requests within their SLO: at most the output rate, and nothing where none is within it."""
    r = small_plan.runs
    ratio = r["goodput_tokens_per_s_per_chip"] / r["output_tokens_per_s_per_chip"]
    assert (ratio <= 1.0 + 1e-9).all()
    assert ((ratio > 0) == (r["slo_attainment"] > 0)).all()
    assert (ratio < 1.0 - 1e-9).any() and (ratio > 0).any()  # the plan has runs that miss some, and meet some
    assert "goodput_tokens_per_s_per_chip" in small_plan.frontier_throughput


def test_a_layout_pruned_for_its_tpot_names_the_target_field() -> None:
    """'one decode step at batch 1 takes 30.6 ms > TPOT 1 ms' named no field (a review): the tightest
    class's target is named by its path."""
    from engine.planning.sizing import _decode_problem

    said = _decode_problem(0.0, 0.01, 0.0306, (0.05, 0.001))
    assert said == "one decode step at batch 1 takes 30.6 ms > TPOT 1 ms (workload.classes[1].slo.tpot_ms)"
    assert _decode_problem(0.0, 0.01, 0.0306, (0.05, 0.04)) == ""
    assert _decode_problem(0.2, 0.01, 0.0306, (0.05,)) == "20% of requests never fit in KV memory"
