"""The prefix cache: LRU tiers, block naming, reuse against the real traces, routing."""

from __future__ import annotations

from collections import OrderedDict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.scenario import codec as io
from engine.serving.cache import (
    LruBlocks,
    RequestBlocks,
    _generated_blocks,
    found_in,
    held_run,
    leading_run,
    lookup,
    replay_hit_rate,
    request_blocks,
    trace_reuse_ratio,
)
from engine.serving.run import simulate
from engine.serving.workload import generate
from tests.simhelp import check_invariants, records

BIG_POOL = {
    "enabled": True,
    "hbm": True,
    "pooled": {"enabled": True, "capacity_gb": 100_000, "bandwidth_gb_s": 50},
}


def test_lru_evicts_least_recently_used() -> None:
    c = LruBlocks(3)
    c.insert([1, 2, 3])  # oldest first: 3, 2, 1 (a prompt's tail is older than its head)
    c.touch([3])  # 2, 1, 3
    assert c.insert([4]) == 1
    assert 2 not in c and {1, 3, 4} <= set(c.blocks)
    c.shrink(1)
    assert list(c.blocks) == [4]


def test_under_pressure_a_prompt_keeps_its_head() -> None:
    c = LruBlocks(3)
    c.insert([1, 2, 3, 4, 5])  # two blocks too many: the tail goes, a usable prefix stays
    assert set(c.blocks) == {1, 2, 3}
    assert lookup([1, 2, 3, 4, 5], (c,)) == [3]


class _OrderedLru:
    """The tiers' LRU as it was, on an `OrderedDict` moved to its end at every use: the model."""

    def __init__(self, capacity: int) -> None:
        self.capacity, self.blocks = capacity, OrderedDict[int, None]()

    def touch(self, blocks: list[int]) -> None:
        for b in reversed(blocks):
            if b in self.blocks:
                self.blocks.move_to_end(b)

    def insert(self, blocks: list[int]) -> int:
        for b in reversed(blocks):
            self.blocks[b] = None
            self.blocks.move_to_end(b)
        return self.shrink(self.capacity)

    def shrink(self, capacity: int) -> int:
        excess = max(0, len(self.blocks) - max(capacity, 0))
        for _ in range(excess):
            self.blocks.popitem(last=False)
        return excess


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["insert", "touch", "shrink", "clear", "capacity"]),
        st.lists(st.integers(0, 30), max_size=12, unique=True),
        st.integers(-2, 25),
    ),
    max_size=60,
)


@given(st.integers(0, 20), _OPS)
def test_the_tiers_evict_as_an_ordered_dict_would(
    capacity: int, ops: list[tuple[str, list[int], int]]
) -> None:
    """The log of uses evicts the blocks an `OrderedDict` moved to its end at every use would, in
    the same order, and counts them the same."""
    tier, model = LruBlocks(capacity), _OrderedLru(capacity)
    for op, blocks, n in ops:
        if op == "insert":
            assert tier.insert(blocks) == model.insert(blocks)
        elif op == "touch":
            tier.touch(blocks)
            model.touch(blocks)
        elif op == "shrink":
            assert tier.shrink(n) == model.shrink(n)
        elif op == "clear":
            tier.clear()
            model.blocks.clear()
        else:
            tier.capacity = model.capacity = max(n, 0)
        assert tier.oldest_first() == list(model.blocks) and len(tier) == len(model.blocks)


def test_a_tier_that_never_evicts_keeps_its_log_short() -> None:
    tier, model = LruBlocks(100), _OrderedLru(100)
    for i in range(5_000):
        blocks = [i % 7, 7 + i % 50, 60 + i % 3]
        tier.insert(blocks)
        model.insert(blocks)
        tier.touch(blocks[:1])
        model.touch(blocks[:1])
    assert tier.oldest_first() == list(model.blocks)
    assert len(tier._log) <= 4 * len(tier) + 1024 + 3


def test_lookup_is_a_contiguous_prefix_across_tiers() -> None:
    hbm, host, pool = LruBlocks(10), LruBlocks(10), LruBlocks(10)
    hbm.insert([1])
    host.insert([2, 3])
    pool.insert([4, 6])
    assert lookup([1, 2, 3, 4, 5, 6], (hbm, host, pool)) == [1, 2, 1]
    assert lookup([9, 1], (hbm, host, pool)) == [0, 0, 0]
    assert lookup([1, 2], (None, host, pool)) == [0, 0, 0]


@given(
    st.lists(st.integers(0, 20), max_size=12),
    st.lists(st.sets(st.integers(0, 20), max_size=15), min_size=3, max_size=3),
    st.lists(st.booleans(), min_size=3, max_size=3),
)
def test_the_simulators_lookups_equal_the_general_one(
    blocks: list[int], held: list[set[int]], present: list[bool]
) -> None:
    """`found_in` (three tiers, any absent) and `held_run` (one tier) count what `lookup` counts,
    holes and blocks held by several tiers included."""
    tiers = []
    for blocks_held, on in zip(held, present, strict=True):
        tier = LruBlocks(100)
        tier.insert(sorted(blocks_held))
        tiers.append(tier if on else None)
    hbm, host, pooled = tiers
    assert list(found_in(blocks, hbm, host, pooled)) == lookup(blocks, tiers)
    for tier in tiers:
        if tier is not None:
            assert held_run(blocks, tier) == lookup(blocks, (tier,))[0]


@given(
    st.lists(st.integers(0, 30), max_size=12, unique=True),
    st.integers(0, 12),
    st.integers(0, 12),
    st.booleans(),
)
def test_routing_estimate_is_exact_when_the_tiers_hold_a_prefix(
    blocks: list[int], in_hbm: int, in_host: int, host_on: bool
) -> None:
    hbm, host = LruBlocks(100), LruBlocks(100)
    hbm.insert(blocks[:in_hbm])
    host.insert(blocks[:in_host] if host_on else [])
    tiers = (hbm, host if host_on else None)
    assert leading_run(blocks, tiers) == sum(lookup(blocks, tiers))


def test_routing_estimate_checks_both_ends() -> None:
    hbm = LruBlocks(100)
    hbm.insert([2, 3, 4, 5])  # everything but the first block
    assert leading_run([1, 2, 3, 4, 5], (hbm, None)) == 0
    hbm.clear()
    hbm.insert([1, 2, 3, 4, 5])  # oldest first: 5, 4, 3, 2, 1
    hbm.touch([5])  # 4, 3, 2, 1, 5
    hbm.shrink(4)  # block 4 ages out: a hole
    assert lookup([1, 2, 3, 4, 5], (hbm,)) == [3]
    assert leading_run([1, 2, 3, 4, 5], (hbm,)) == 5  # the last block is held: an estimate


def _agentic(**over: object) -> object:
    base = io.apply_overrides(
        io.load_preset("chat-colocated"),
        {
            "duration_s": 120.0,
            "workload.arrival.rate_rps": 4.0,
            "workload.classes[0].multi_turn": {"turns_mean": 6, "think_time_s": 3},
            "workload.classes[0].prefix": {"tokens": 2048, "groups": 2},
            "workload.classes[0].input": {"kind": "lognormal", "mean": 400, "p99": 2000, "max_tokens": 4000},
            "workload.classes[0].output": {"kind": "lognormal", "mean": 150, "p99": 600, "max_tokens": 2000},
            "cache": {"enabled": True, "block_tokens": 64},
        },
    )
    return io.apply_overrides(base, over) if over else base  # type: ignore[arg-type]


def test_generated_blocks_are_shared_by_prefix_groups_and_sessions() -> None:
    reqs = generate(_agentic())  # type: ignore[arg-type]
    by_session: dict[int, list[int]] = {}
    for rid in range(len(reqs)):
        by_session.setdefault(int(reqs.session[rid]), []).append(rid)
    multi = next(rids for rids in by_session.values() if len(rids) >= 2)
    a, b = request_blocks(reqs, multi[0]), request_blocks(reqs, multi[1])
    assert b[: len(a)] == a  # the next turn starts with the whole previous prompt
    other = next(
        rids[0]
        for s, rids in by_session.items()
        if reqs.prefix_group[rids[0]] == reqs.prefix_group[multi[0]] and s != reqs.session[multi[0]]
    )
    shared = 2048 // 64
    assert request_blocks(reqs, other)[:shared] == a[:shared]


def test_the_simulators_block_names_match_request_blocks() -> None:
    reqs = generate(_agentic())  # type: ignore[arg-type]
    names = RequestBlocks(reqs)
    for rid in range(0, len(reqs), 7):
        assert names.prompt_blocks(rid) == request_blocks(reqs, rid)
        full = int(reqs.prompt_tokens[rid] + reqs.output_tokens[rid])
        assert names.full_blocks(rid) == request_blocks(reqs, rid, full)
        assert all(0 <= b < 2**63 for b in names.full_blocks(rid))  # one machine word each


def test_block_ids_are_unique_and_spread_over_dict_slots() -> None:
    # a dict finds an int key by the low bits of hash(key) (the int itself, mod 2^61 - 1): ids
    # that differ only in high bits pile into a few slots and every cache lookup slows down
    ids = [b for session in range(500) for b in _generated_blocks(24, 4, session % 7, session)]
    assert len(set(ids)) == 500 * 20 + 7 * 4  # each session's own blocks, each group's prefix
    assert len({hash(b) & 4095 for b in ids}) > 3000  # of 4096 slots, for 10,028 keys


def test_trace_block_names_are_the_traces_hash_ids() -> None:
    s = io.apply_overrides(io.load_preset("mooncake-replay"), {"workload.trace.max_requests": 300})
    reqs = generate(s)
    names = RequestBlocks(reqs)
    for rid in range(len(reqs)):
        assert names.prompt_blocks(rid) == request_blocks(reqs, rid)
        assert names.full_blocks(rid) == names.prompt_blocks(rid)  # traces name prompt blocks only


@given(st.lists(st.integers(0, 400), min_size=2, max_size=5, unique=True))
def test_a_larger_cache_never_lowers_the_hit_rate(sizes: list[int]) -> None:
    reqs = generate(_agentic())  # type: ignore[arg-type]
    rates = [replay_hit_rate(reqs, s) for s in sorted(sizes)]
    assert rates == sorted(rates)


def test_cache_cuts_prefill_and_ttft_on_multi_turn() -> None:
    on = simulate(_agentic())  # type: ignore[arg-type]
    off = simulate(_agentic(**{"cache.enabled": False}))  # type: ignore[arg-type]
    assert on.summary["cache"]["hit_rate"] > 0.4
    assert off.summary["cache"]["hit_rate"] == 0.0
    assert on.summary["cache"]["prefill_flops_saved"] > 0
    assert on.summary["latency_ms"]["ttft"]["p50"] < 0.7 * off.summary["latency_ms"]["ttft"]["p50"]
    check_invariants(on, records(_agentic())[0])  # type: ignore[arg-type]


def test_cache_aware_routing_finds_more_hits_than_round_robin() -> None:
    rr = simulate(_agentic(**{"scheduler.router": {"name": "round_robin"}}))  # type: ignore[arg-type]
    aware = simulate(_agentic(**{"scheduler.router": {"name": "cache_aware"}}))  # type: ignore[arg-type]
    assert aware.summary["cache"]["hit_rate"] > rr.summary["cache"]["hit_rate"] + 0.1


def test_host_tier_catches_what_hbm_drops() -> None:
    small_hbm = _agentic(
        **{
            "deployment.mem_fraction": 0.6,
            "cache.hbm": False,
            "cache.host": {"enabled": True, "capacity_gb": 200, "bandwidth_gb_s": 25},
        }
    )
    res = simulate(small_hbm)  # type: ignore[arg-type]
    tiers = res.summary["cache"]["hit_rate_by_tier"]
    assert tiers["hbm"] == 0.0 and tiers["host"] > 0.3
    assert res.summary["cache"]["load_ms_mean"] > 0
    assert res.summary["cache"]["bytes_by_tier"]["host"] > 0


def test_disaggregated_moves_only_missing_blocks() -> None:
    s = io.apply_overrides(
        _agentic(), {"deployment": io.to_data(io.load_preset("chat-disaggregated"))["deployment"]}
    )
    res = simulate(s)
    assert res.summary["cache"]["kv_transfer_tokens_saved"] > 0


@pytest.mark.parametrize(("name", "expected"), [("conversation_trace", 0.37), ("synthetic_trace", 0.65)])
def test_mooncake_reuse_matches_what_the_trace_implies(name: str, expected: float) -> None:
    s = io.apply_overrides(
        io.load_preset("mooncake-replay"),
        {
            "workload.trace.path": f"data:traces/mooncake/{name}.jsonl",
            "duration_s": 86400.0,
            "cache": BIG_POOL,
        },
    )
    full = generate(s)
    assert trace_reuse_ratio(full) == pytest.approx(expected, abs=0.01)
    part = io.apply_overrides(s, {"workload.trace.max_requests": 2500})
    res = simulate(part)
    implied = trace_reuse_ratio(generate(part))
    # blocks enter the cache when a prefill ends, so a request arriving just before can miss
    assert implied - 0.03 <= res.summary["cache"]["hit_rate"] <= implied + 1e-9
