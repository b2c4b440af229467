"""Pipelines with micro-batches, expert and data parallelism, speculative decoding (issue 13)."""

from __future__ import annotations

import pytest

from engine.catalog.entries import Catalog
from engine.core.errors import ScenarioError
from engine.costmodel.iteration import decode_cost, iteration_cost, prefill_cost
from engine.costmodel.perf import Instance, Speculation
from engine.costmodel.roofline import achieved_tflops_per_chip
from engine.costmodel.step import StepModel
from engine.scenario import codec as io
from engine.scenario.resolve import resolve
from engine.serving.run import simulate


def inst(catalog: Catalog, model: str = "llama-3.1-405b", **kw: object) -> Instance:
    return Instance(
        model=catalog.model(model), hardware=catalog.chip("h100-sxm"), weights="fp8", kv="fp8", **kw
    )  # type: ignore[arg-type]


def test_micro_batches_bring_a_pipeline_close_to_tensor_parallel(catalog: Catalog) -> None:
    """A big prefill-heavy iteration on tp4 x pp2 with enough micro-batches runs about as fast as
    on tp8 (minus the hand-off); with one micro-batch the stages run one after another."""
    pp = StepModel(inst(catalog, tp=4, pp=2))
    tp = StepModel(inst(catalog, tp=8))
    q = 16384.0
    pairs = q * 1024.0
    t_tp = tp.cost(q, pairs, 0, 64, 64 * 2048.0)[0]
    t_full = pp.cost(q, pairs, 0, 64, 64 * 2048.0, items=80)[0]
    t_one = pp.cost(q, pairs, 0, 0, 0.0, items=1)[0]
    assert t_full == pytest.approx(t_tp, rel=0.15)  # tp8's all-reduces over 8 chips vs pp's hand-off
    assert t_one > 1.7 * tp.cost(q, pairs, 0, 0, 0.0)[0]  # a bubble: one micro-batch, stages in turn
    # a request's latency through the pipe is the sum of the stages: batch-1 decode gains nothing
    one_tp4 = StepModel(inst(catalog, tp=4)).decode_run(1, 2048.0, 1)[0]
    assert pp.decode_run(1, 2048.0, 1)[0] >= one_tp4


def test_a_pipelines_stages_in_turn_are_not_link_time(catalog: Catalog) -> None:
    """A lone prompt on tp2 x pp4 runs its stages in turn: that time is `pipeline_s` (the other
    stages' compute), not `comm_s`, which is the all-reduces and hand-offs alone; the parts still
    add up to the step time, and the chips' achieved FLOP/s is a quarter of tp8's over the same work
    (found in review: 665 of 871 ms was reported as communication, at 748 TFLOP/s a chip)."""
    staged = inst(catalog, "llama-3.1-70b", tp=2, pp=4)
    flat = inst(catalog, "llama-3.1-70b", tp=8)
    c = prefill_cost(staged, 8192)
    both = float(c.time_s) - float(c.comm_s) - float(c.pipeline_s) - c.overhead_s
    assert float(c.pipeline_s) == pytest.approx(3 * both, rel=1e-9)
    assert float(c.comm_s) < 0.1 * float(c.time_s)
    assert float(c.comm_s) < float(prefill_cost(flat, 8192).comm_s)  # tp2 all-reduces, tp8's are wider
    assert achieved_tflops_per_chip(staged, c) < 0.3 * achieved_tflops_per_chip(
        flat, prefill_cost(flat, 8192)
    )
    # a decode batch of at least pp requests fills every stage: nothing waits its turn
    assert float(decode_cost(staged, 8, 2048).pipeline_s) == 0.0
    assert float(decode_cost(staged, 1, 2048).pipeline_s) > 0.0
    assert float(prefill_cost(flat, 8192).pipeline_s) == 0.0


def test_all_to_all_grows_with_tokens_and_shrinks_with_bandwidth(catalog: Catalog) -> None:
    m = catalog.model("deepseek-v3")
    hw = catalog.chip("h200")

    def a2a(tokens: float, hardware: object) -> float:
        with_ep = StepModel(Instance(model=m, hardware=hardware, tp=1, dp=8, ep=8, weights="fp8", kv="fp8"))  # type: ignore[arg-type]
        no_comm = hardware.model_copy(update={"scale_up_gb_s": 1e6, "allreduce_latency_us": 0.0})  # type: ignore[attr-defined]
        free = StepModel(Instance(model=m, hardware=no_comm, tp=1, dp=8, ep=8, weights="fp8", kv="fp8"))
        return (
            with_ep.cost(0, 0, 0, tokens, tokens * 1000.0)[0] - free.cost(0, 0, 0, tokens, tokens * 1000.0)[0]
        )

    # a fixed latency per layer plus a part proportional to the tokens routed
    small, mid, big = a2a(128, hw), a2a(512, hw), a2a(2048, hw)
    assert 0 < small < mid < big
    assert (big - mid) / (2048 - 512) == pytest.approx((mid - small) / (512 - 128), rel=0.01)
    slow = hw.model_copy(update={"scale_up_gb_s": hw.scale_up_gb_s / 4})
    assert a2a(2048, slow) - a2a(128, slow) == pytest.approx(4.0 * (big - small), rel=0.01)
    # beyond the scale-up domain the all-to-all crosses the (slower) scale-out network
    wide = StepModel(Instance(model=m, hardware=hw, tp=1, dp=16, ep=16, weights="fp8", kv="fp8"))
    near = StepModel(Instance(model=m, hardware=hw, tp=1, dp=8, ep=8, weights="fp8", kv="fp8"))
    assert wide.cost(0, 0, 0, 2048, 2048e3)[0] > near.cost(0, 0, 0, 2048, 2048e3)[0]


def test_routing_imbalance_lowers_moe_throughput(catalog: Catalog) -> None:
    m, hw = catalog.model("deepseek-v3"), catalog.chip("h200")
    # a prefill-sized iteration, where experts are compute-bound (at small decode batches every
    # expert is read anyway and the busiest rank's extra tokens cost nothing)
    times = [
        StepModel(
            Instance(model=m, hardware=hw, tp=1, dp=8, ep=8, imbalance=x, weights="fp8", kv="fp8")
        ).cost(32768, 32768 * 2048.0, 0, 0, 0.0)[0]
        for x in (1.0, 1.4, 2.0)
    ]
    assert times[0] < times[1] < times[2]
    # without expert parallelism every rank holds a slice of every expert: imbalance is moot
    flat = [
        StepModel(Instance(model=m, hardware=hw, tp=8, imbalance=x, weights="fp8", kv="fp8")).cost(
            0, 0, 0, 2048, 2048e3
        )[0]
        for x in (1.0, 2.0)
    ]
    assert flat[0] == flat[1]


def test_speculation_pays_only_when_drafts_are_accepted(catalog: Catalog) -> None:
    base = dict(
        model=catalog.model("llama-3.1-70b"), hardware=catalog.chip("h100-sxm"), tp=2, weights="fp8", kv="fp8"
    )
    plain = StepModel(Instance(**base)).decode_run(16, 16 * 2048.0, 100)[0]  # type: ignore[arg-type]
    draft = Instance(
        model=catalog.model("llama-3.1-8b"), hardware=catalog.chip("h100-sxm"), tp=2, weights="fp8", kv="fp8"
    )

    def spec(acceptance: float) -> float:
        s = Speculation(tokens=4, acceptance=acceptance, draft=draft)
        return StepModel(Instance(**base, speculation=s)).decode_run(16, 16 * 2048.0, 100)[0]  # type: ignore[arg-type]

    assert spec(0.0) > plain  # every step verifies and drafts for one token
    assert spec(0.8) < 0.7 * plain
    assert Speculation(tokens=4, acceptance=1.0).tokens_per_step == 5.0
    assert Speculation(tokens=1, acceptance=0.85).tokens_per_step == pytest.approx(1.85)


def test_an_mtp_head_pays_its_layers_share_of_the_fixed_overhead(catalog: Catalog) -> None:
    """A drafted token through an MTP head runs one layer: it pays 1/L of a step's per-layer
    launches as well as 1/L of its work. Per token, a step of k drafts at acceptance a costs the
    verification's overhead plus k shares of it, over the tokens the step yields."""
    from engine.catalog.specs import CalibrationProfile

    model = catalog.model("deepseek-v3")

    def per_token(overhead_ms: float, spec: Speculation | None) -> float:
        prof = CalibrationProfile(
            eta_compute=0.6, eta_bandwidth=0.7, overhead_ms=overhead_ms, source="test profile"
        )
        hw = catalog.chip("h200").model_copy(update={"profiles": {"t": prof}, "default_profile": "t"})
        i = Instance(model=model, hardware=hw, tp=8, weights="fp8", kv="fp8", speculation=spec)
        return StepModel(i).decode_run(32, 32 * 2048.0, 1)[0]

    s = Speculation(tokens=2, acceptance=0.8, draft_share=1.0 / model.layers)
    extra = per_token(8.0, s) - per_token(0.0, s)
    fixed = 8.0 / 80 * model.layers / 1000.0  # the profile's overhead for this model's layers
    assert extra == pytest.approx(fixed * (1.0 + 2.0 / model.layers) / s.tokens_per_step, rel=1e-9)
    assert per_token(8.0, None) - per_token(0.0, None) == pytest.approx(fixed, rel=1e-9)


def test_a_prompt_runs_on_one_data_parallel_rank(catalog: Catalog) -> None:
    """With attention DP the busiest rank sets the attention phase: a lone prompt's chunk is all on
    one rank (slower than an even spread), many prompts spread out (the same as even), and a
    plain instance, which has no ranks, ignores the hint."""
    m = catalog.model("deepseek-v3")
    dp = StepModel(
        Instance(model=m, hardware=catalog.chip("h200"), tp=1, dp=8, ep=8, weights="fp8", kv="fp8")
    )
    q = 4096.0
    pairs = q * q / 2.0
    even = dp.cost(q, pairs, 0, 0, 0.0)[0]
    lone = dp.cost(q, pairs, 0, 0, 0.0, 1, q)[0]
    assert lone > 1.5 * even
    assert dp.cost(q, pairs, 0, 0, 0.0, 8, q / 8)[0] == even  # eight equal prompts: one a rank
    assert dp.cost(q, pairs, 0, 0, 0.0, 2, q / 2)[0] < lone  # two prompts: half the work each
    # the vectorised cost gives the same, and FLOPs and bytes are what the chips do either way
    ic = iteration_cost(dp._inst, prefill_tokens=q, prefill_attn_pairs=pairs, prefill_largest=q)
    assert float(ic.time_s) == pytest.approx(lone, rel=1e-12)
    assert dp.cost(q, pairs, 0, 0, 0.0, 1, q)[1:] == dp.cost(q, pairs, 0, 0, 0.0)[1:]
    tp = StepModel(Instance(model=m, hardware=catalog.chip("h200"), tp=8, weights="fp8", kv="fp8"))
    assert tp.cost(q, pairs, 0, 0, 0.0, 1, q) == tp.cost(q, pairs, 0, 0, 0.0)


def test_the_busiest_rank_applies_to_data_parallel_ranks_only(catalog: Catalog) -> None:
    """Expert parallelism without attention DP has one rank of attention: a largest-chunk hint
    changes nothing, to the last bit; the rates an instance advertises to the routers count its
    ranks, each with a rank's budget; a chunk never exceeds a rank's budget; and admission's TTFT
    estimate on an idle DP prefill instance is at least the prompt's own iterations on its rank."""
    from engine.serving.instance import throughput
    from engine.serving.sim import Simulation
    from engine.serving.workload import generate

    m = catalog.model("deepseek-v3")
    ep = StepModel(Instance(model=m, hardware=catalog.chip("h200"), tp=8, ep=8, weights="fp8", kv="fp8"))
    for q, d in ((512.0, 64.0), (4096.0, 0.0), (100.0, 300.0)):
        assert ep.cost(q, q * q / 2, 0, d, d * 1000.0, 0, 4 * q) == ep.cost(q, q * q / 2, 0, d, d * 1000.0)
    dp = StepModel(
        Instance(model=m, hardware=catalog.chip("h200"), tp=1, dp=8, ep=8, weights="fp8", kv="fp8")
    )
    tb = 2048.0
    rate = throughput(dp, 2048, 256, 8)[0]
    assert rate == pytest.approx(8 * tb / dp.cost(8 * tb, 8 * tb * tb / 2, 0, 0, 0.0, 8, tb)[0], rel=1e-12)
    assert rate > 1.3 * throughput(dp, 8 * 2048, 8 * 256)[0]  # not one 16k-token prompt on one rank
    sc = io.apply_overrides(
        io.load_preset("moe-deepseek-dp-ep"),
        {"duration_s": 5.0, "deployment.batching": {"token_budget": 2048, "chunk_tokens": 2048}},
    )
    sim = Simulation(resolve(sc), generate(sc))
    prefill = next(s for s in sim.servers if s.role == "prefill")
    assert prefill.chunk_cap == 2048 and prefill.token_budget == 8 * 2048
    for rid in range(20):  # any prompt takes at least one chunk's iteration on its own rank
        c = min(float(sim.prompt[rid]), 2048.0)
        assert (
            sim.front.predicted_ttft(prefill, rid)[0] >= prefill.step.cost(c, c * c / 2, 0, 0, 0.0, 1, c)[0]
        )


def test_each_data_parallel_rank_has_its_own_batch_cap_and_token_budget(catalog: Catalog) -> None:
    """As the stacks schedule attention DP (and as the fit reads the reference rows), a dp-rank
    instance admits dp x the batch cap and runs dp x the token budget per iteration, and keeps
    activation memory for one forward pass of the budget on every rank; a plain one is unchanged."""
    from engine.planning.sizing import instance_of
    from engine.serving.sim import Simulation
    from engine.serving.workload import generate

    sc = io.apply_overrides(io.load_preset("moe-deepseek-dp-ep"), {"duration_s": 5.0})
    b = sc.batching()
    res = resolve(sc)
    sim = Simulation(res, generate(sc))
    for srv in sim.servers:
        dp = srv.pool.instance.dp
        assert dp > 1 and (srv.max_batch, srv.token_budget) == (b.max_batch * dp, b.token_budget * dp)
        assert srv.pool.instance.activation_tokens == sc.activation_tokens() * dp
    assert instance_of(sc, catalog, "h200", 1, 1, 8, 8).activation_tokens == sc.activation_tokens() * 8
    tp = io.load_preset("moe-deepseek-h200")
    plain = Simulation(resolve(tp), generate(io.apply_overrides(tp, {"duration_s": 5.0})))
    assert {(s.max_batch, s.token_budget) for s in plain.servers} == {
        (tp.batching().max_batch, tp.batching().token_budget)
    }


def test_speculation_in_a_run_lowers_tpot_and_keeps_every_token() -> None:
    base = io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 60.0})
    mtp = io.apply_overrides(base, {"deployment.speculative": {"method": "mtp"}})
    a, b = simulate(base), simulate(mtp)
    assert b.summary["latency_ms"]["tpot"]["p50"] < 0.7 * a.summary["latency_ms"]["tpot"]["p50"]
    assert b.requests["output_tokens"].sum() == a.requests["output_tokens"].sum()


@pytest.mark.parametrize(
    ("over", "message"),
    [
        (
            {"deployment.pools[1].ep": 3},
            r"pools\[1\]\.ep: 3 must divide the chips of a pipeline stage, tp x dp = 2",
        ),
        ({"deployment.pools[1].ep": 2}, r"deployment\.pools\[1\]\.ep: llama-3\.1-70b has no experts"),
        (
            {"deployment.speculative": {"method": "draft"}},
            r"draft_model: a draft model's catalog id is needed",
        ),
        (
            {"deployment.speculative": {"method": "draft", "draft_model": "nope"}},
            r"deployment\.speculative\.draft_model: unknown model 'nope'",
        ),
    ],
)
def test_impossible_splits_are_refused(over: dict[str, object], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        resolve(io.apply_overrides(io.load_preset("chat-disaggregated"), over))


def test_attention_dp_and_ep_hold_memory_as_deployed(catalog: Catalog) -> None:
    """DP ranks each hold attention and dense weights; EP spreads one copy of the experts."""
    m, hw = catalog.model("deepseek-v3"), catalog.chip("h200")
    tp8 = Instance(model=m, hardware=hw, tp=8, weights="fp8", kv="fp8")
    dp8 = Instance(model=m, hardware=hw, tp=1, dp=8, ep=8, weights="fp8", kv="fp8")
    assert dp8.chips == tp8.chips == 8
    assert dp8.weight_bytes == pytest.approx(tp8.weight_bytes + 7 * (tp8.weight_bytes - tp8.expert_bytes))
    # MLA's latent KV is shared by all heads: tensor parallelism keeps it whole on every rank, data
    # parallelism once per request; DP holds far more KV despite its replicated dense weights
    assert tp8.kv_copies == 8 and dp8.kv_copies == 1
    assert dp8.kv_capacity_tokens > 4 * tp8.kv_capacity_tokens


def test_a_tensor_parallel_degree_must_share_the_heads_evenly(catalog: Catalog) -> None:
    """vLLM refuses to start a model whose attention heads the tensor-parallel ranks cannot share
    evenly, and splits or replicates its KV heads over them: so does the engine, naming the field and
    the degrees that work (a share link once ran Llama-3.1-70B's 64 heads on three ranks)."""
    from engine.costmodel.stacks import tp_split_problem
    from engine.planning import SearchSpace
    from engine.planning.plan import plan

    llama = catalog.models["llama-3.1-70b"]
    assert tp_split_problem(llama, 8) == "" and tp_split_problem(llama, 16) == ""  # 16 ranks: KV replicated
    assert tp_split_problem(llama, 3) == (
        "3 tensor-parallel ranks cannot share llama-3.1-70b's 64 attention heads evenly "
        "(tp can be 1, 2, 4, 8, 16, 32 or 64)"
    )
    assert tp_split_problem(catalog.models["opt-66b"], 16).endswith(
        "(tp can be 1, 2, 3, 4, 6, 8, 9, 12, 18, 24 or 36)"
    )
    odd = llama.model_copy(update={"heads": 48, "kv_heads": 12})  # 8 ranks take 6 heads each, 1.5 KV heads
    assert "cannot split or replicate llama-3.1-70b's 12 KV heads evenly" in tp_split_problem(odd, 8)
    assert (
        tp_split_problem(odd, 4) == "" and tp_split_problem(odd, 24) == "" and tp_split_problem(odd, 16) != ""
    )
    # the Hardware page's fitting layouts never propose one (bloom-176b's 112 heads on L4s were put on 32)
    from engine.explain.roofline_chips import fitting_layout

    bloom = catalog.models["bloom-176b"]
    tp, pp = fitting_layout(bloom, catalog.chip("l4"), "bf16", "bf16") or (0, 0)
    assert tp and bloom.heads % tp == 0 and pp > 1
    sc = io.apply_overrides(io.load_preset("chat-colocated"), {"deployment.pools[0].tp": 3})
    with pytest.raises(
        ScenarioError,
        match=r"deployment\.pools\[0\]\.tp: 3 tensor-parallel ranks cannot share llama-3\.1-70b",
    ):
        resolve(sc)
    # the planner prunes such a kind with the same reason instead of simulating it
    space = SearchSpace(hardware=("h100-sxm",), tp=(3, 4), pp=(1,), duration_s=30.0, max_simulations=4)
    p = plan(
        io.apply_overrides(sc, {"duration_s": 30.0, "deployment.pools[0].tp": 4}), 4.0, space, verify=False
    )
    threes = p.candidates[p.candidates["shape"].str.contains("tp3")]
    assert len(threes) and all(tp_split_problem(llama, 3) in s for s in threes["status"]), threes["status"]
    assert not p.runs["shape"].str.contains("tp3").any()  # none simulated
    alone = plan(io.apply_overrides(sc, {"duration_s": 30.0, "deployment.pools[0].tp": 4}), 4.0,
                 SearchSpace(hardware=("h100-sxm",), tp=(3,), pp=(1,), duration_s=30.0), verify=False)  # fmt: skip
    assert alone.runs.empty and alone.notes[0].startswith(
        "no deployment was simulated: the cost model pruned"
    )
    # the note names each shape's reason: it pointed at a candidates table the text never prints (a review)
    assert tp_split_problem(llama, 3) in alone.notes[0]
