"""An HBM prefix hit is shared, not copied: pinned blocks, reservations without the hit, memory counted once."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.cache import LruBlocks
from engine.serving.ledger import SEGMENT_COLUMNS, Records
from engine.serving.run import simulate
from engine.serving.sim import Simulation
from engine.serving.workload import generate
from tests.simhelp import check_invariants

PREFIX = 16_384
"""A long system prompt every request shares (one prefix group), much longer than its own part."""


def _shared(rate_rps: float) -> dict[str, Any]:
    """The workload both builders share: a 16k-token system prompt and about 200 tokens of its own,
    200-token answers, Llama-3.1-70B in FP8, the HBM prefix cache on, one minute at `rate_rps`."""
    short = {"kind": "lognormal", "mean": 200, "p99": 600, "max_tokens": 1000}
    return {
        "duration_s": 60.0,
        "model.id": "llama-3.1-70b",
        "model.weights": "fp8",
        "model.kv": "fp8",
        "workload.classes[0].input": short,
        "workload.classes[0].output": short,
        "workload.classes[0].prefix": {"tokens": PREFIX, "groups": 1},
        "workload.arrival.rate_rps": rate_rps,
        "cache": {"enabled": True, "block_tokens": 256, "hbm": True},
    }


def shared_prompt(rate_rps: float, **over: Any) -> Scenario:
    """`_shared` on one H100 TP2 instance (about 488k tokens of KV)."""
    pool = {
        "deployment.pools[0].hardware": "h100-sxm",
        "deployment.pools[0].tp": 2,
        "deployment.pools[0].count": 1,
    }
    return io.apply_overrides(io.load_preset("chat-colocated"), {**_shared(rate_rps), **pool, **over})


def run_to_the_end(sc: Scenario) -> Records:
    """Run `sc` and check that every instance ends holding nothing: no reservation, no pin."""
    sim = Simulation(resolve(sc), generate(sc))
    rec = sim.run()
    for srv in sim.servers:
        assert srv.kv_reserved == 0 and srv.kv_shared == 0 and not srv.pins
        assert srv.hbm is not None and not srv.hbm.pins
    return rec


def test_pinned_blocks_are_never_evicted_and_sit_outside_the_capacity() -> None:
    c = LruBlocks(2)
    c.insert([1, 2, 3])  # one too many: 3, the tail, goes
    assert set(c.blocks) == {1, 2}
    assert c.pin([1, 2]) == 2
    assert c.pin([1]) == 0  # already read by a request
    c.insert([4, 5])  # the capacity bounds the unpinned blocks only
    assert set(c.blocks) == {1, 2, 4, 5}
    c.shrink(0)
    assert set(c.blocks) == {1, 2}
    c.clear()  # a role switch drops the cache, not what running requests read
    assert set(c.blocks) == {1, 2} and 1 in c.pins
    assert c.unpin([1, 2]) == 1  # 1 is still read by the second request
    assert c.unpin([1]) == 1
    c.shrink(0)
    assert not c.blocks and not c.pins


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["insert", "touch", "pin", "unpin", "shrink"]),
            st.lists(st.integers(0, 12), max_size=5, unique=True),
            st.integers(0, 8),
        ),
        max_size=60,
    )
)
def test_a_tier_with_pins_keeps_its_invariants(ops: list[tuple[str, list[int], int]]) -> None:
    """Pinned blocks are always held, and after an insert or a shrink the unpinned ones never
    outnumber the capacity (an unpinned block stays cached: its memory, which the request held, is
    free again, and the next insert or shrink counts it)."""
    c = LruBlocks(4)
    readers: dict[int, int] = {}
    for op, blocks, cap in ops:
        if op == "insert":
            c.insert(blocks)
        elif op == "touch":
            c.touch(blocks)
        elif op == "pin":
            held = [b for b in blocks if b in c.blocks]
            new = c.pin(held)
            assert new == sum(1 for b in held if not readers.get(b))
            for b in held:
                readers[b] = readers.get(b, 0) + 1
        elif op == "unpin":
            mine = [b for b in blocks if readers.get(b)]
            freed = c.unpin(mine)
            for b in mine:
                readers[b] -= 1
            assert freed == sum(1 for b in mine if not readers[b])
        else:
            c.capacity = cap
            c.shrink(cap)
        assert set(c.pins) == {b for b, n in readers.items() if n}
        assert set(c.pins) <= set(c.blocks)
        if op in ("insert", "shrink"):
            assert len(c.blocks) - len(c.pins) <= c.capacity


def test_a_shared_system_prompt_is_held_once() -> None:
    """Requests reading the same cached prefix reserve only their own blocks: far more of them run
    at once than KV memory could hold with a copy each."""
    rec = run_to_the_end(shared_prompt(3.0))
    cap = float(rec.kv_capacity[0])
    batch = rec.segments[:, SEGMENT_COLUMNS.index("batch")]
    assert batch.max() * PREFIX > cap  # with a copy of the prefix each, memory would hold fewer
    assert rec.kv_peak[0] < 0.5 * cap
    # the prefix stays in HBM: every request after the first reads it from there
    hbm_hits = rec.cache_hit_tokens[:, 0]
    assert np.mean(hbm_hits >= PREFIX - 256) > 0.95
    kv_held = rec.segments[:, SEGMENT_COLUMNS.index("kv_tokens")]
    assert kv_held.min() >= 0 and kv_held.max() <= cap


def test_a_shared_prefix_run_keeps_the_invariants_and_sustains_its_load() -> None:
    result = simulate(shared_prompt(3.0))
    rec = run_to_the_end(shared_prompt(3.0))
    check_invariants(result, rec)
    assert result.summary["unsustainable"] is None
    assert result.summary["utilization"]["mixed"]["kv_memory"] < 0.5


def test_preemption_gives_back_the_pins() -> None:
    """With preemption (a reservation that grows a token a step), a run whose answers outgrow memory
    preempts, and every pin taken is given back: the run ends with no request holding memory."""
    sc = shared_prompt(
        6.0,
        **{
            "scheduler.preemption": "recompute",
            "workload.classes[0].output": {
                "kind": "lognormal",
                "mean": 3000,
                "p99": 6000,
                "max_tokens": 8000,
            },
        },
    )
    rec = run_to_the_end(sc)
    assert rec.counters["preemptions"] > 0
    result = simulate(sc)
    check_invariants(result, rec)


def shared_prompt_disaggregated(rate_rps: float, **over: Any) -> Scenario:
    """`_shared` on one prefill and one decode instance (chat-disaggregated's H100 TP2 pools)."""
    pools = {"deployment.pools[0].count": 1, "deployment.pools[1].count": 1}
    return io.apply_overrides(io.load_preset("chat-disaggregated"), {**_shared(rate_rps), **pools, **over})


def test_a_decode_instance_holds_a_shared_prefix_once() -> None:
    """The decode side reads the prefix it already holds: it is neither sent again nor reserved again
    for each request, so the decode instance runs more requests than copies of it would fit."""
    sc = shared_prompt_disaggregated(6.0)
    rec = run_to_the_end(sc)
    decode = [i for i, (pool, _, _) in enumerate(rec.servers) if pool == 1]
    cap = float(rec.kv_capacity[decode[0]])
    seg = rec.segments
    on_decode = seg[:, SEGMENT_COLUMNS.index("server")] == decode[0]
    assert seg[on_decode, SEGMENT_COLUMNS.index("batch")].max() * PREFIX > cap
    assert rec.kv_peak[decode[0]] < 0.5 * cap
    # after the first requests, a hand-off sends only the prompt's own blocks
    assert rec.counters["transfer_tokens_saved"] > 0.9 * PREFIX * len(rec.arrival_s)
    result = simulate(sc)
    check_invariants(result, rec)
    assert result.summary["unsustainable"] is None


def test_a_fault_on_the_decode_side_leaves_no_pin_behind() -> None:
    sc = shared_prompt_disaggregated(
        6.0,
        faults=[{"at_s": 20.0, "pool": "decode", "instances": 1, "duration_s": 10.0, "in_flight": "retry"}],
    )
    rec = run_to_the_end(sc)
    assert rec.retries.sum() > 0


def test_a_prefill_instance_switched_to_decode_hands_off_to_itself_cleanly() -> None:
    """Under elastic roles a prefill instance switched to decode may hand a prompt it holds to
    itself: its prefill side's pin and the decode side's reservation must not overwrite each other
    (found by review: the instance ended with a negative reservation and blocks pinned for good)."""
    sc = io.apply_overrides(
        io.load_preset("chat-disaggregated"),
        {
            "duration_s": 90.0,
            "cache": {"enabled": True, "block_tokens": 256, "hbm": True},
            "workload.classes[0].prefix": {"tokens": 8192, "groups": 4},
            "scheduler.elastic": {
                "enabled": True,
                "threshold": 2.0,
                "switch_s": 2.0,
                "check_s": 1.0,
                "sustain_s": 3.0,
                "restore_after_s": 5.0,
            },
            "workload.arrival.rate_rps": 25.0,
        },
    )
    rec = run_to_the_end(sc)
    assert rec.counters["role_switches"] > 0
    assert np.all(rec.kv_peak <= rec.kv_capacity)


def test_a_kv_bound_pool_is_judged_so_when_its_requests_share_a_prefix() -> None:
    """The advisor's KV-bound test compares the memory held with what reservations allow; a request
    reserves its answer and its own prompt, not the prefix it shares, so the test reads the prompt
    less its HBM hit. Here the 2,000-token answers fill memory (the run cannot keep up) and the pool
    is found KV-bound, where the whole prompts' ratio (0.99) would ask for 89% of the memory held."""
    from engine.explain.advisor import kv_bound_share
    from engine.explain.asic import hold_ratio

    out = {"kind": "lognormal", "mean": 2000, "p99": 6000, "max_tokens": 8000}
    result = simulate(shared_prompt(8.0, **{"duration_s": 240.0, "workload.classes[0].output": out}))
    assert result.summary["unsustainable"] is not None
    assert hold_ratio(result) < 0.6
    assert kv_bound_share(result, "mixed") > 0.3


def test_the_cost_model_counts_a_shared_prefix_once_in_its_decode_batch() -> None:
    """The planner's bounds are lower bounds: its decode batch must be no smaller than what the
    simulator runs. A request sharing a cached prefix holds only the rest of its prompt, so the cost
    model's batch is larger than KV memory over whole prompts; with the HBM tier off it is not."""
    from engine.catalog.entries import load_catalog
    from engine.planning.sizing import demand, instance_of, instance_rates

    cat = load_catalog()
    sc = shared_prompt(
        3.0, **{"workload.classes[0].slo": {"ttft_ms": 5000, "tpot_ms": 1000, "percentile": 90}}
    )
    reqs = generate(sc)
    rates = instance_rates(instance_of(sc, cat, "h100-sxm", 2), demand(sc, reqs))
    whole = rates.kv_capacity_tokens / float((reqs.prompt_tokens + reqs.output_tokens).mean())
    assert rates.decode_batch > 2 * whole
    copied = io.apply_overrides(sc, {"cache.hbm": False})
    assert instance_rates(instance_of(copied, cat, "h100-sxm", 2), demand(copied, reqs)).decode_batch <= whole
