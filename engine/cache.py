"""Prefix (KV-cache) reuse over hashed token blocks, in tiers with LRU eviction.

A prompt is cut into blocks of `block_tokens` tokens; a block's hash names its content and
everything before it (as vLLM's and Mooncake's block hashes do), so two prompts share a block
only if they share the whole prefix up to it. A lookup walks the prompt's blocks from the start
and stops at the first block no tier holds: only a contiguous prefix is reusable.

Tiers, each optional: the instance's HBM (shared with the live KV cache: it may only use memory
no running request has reserved, and shrinks when admissions need room), the instance's host
DRAM, and a pooled store shared by all instances (DRAM or SSD, Mooncake's design). A hit of m
tokens skips their prefill compute and costs m x KV bytes per token read from the tier that held
them, at that tier's bandwidth (HBM hits cost nothing extra: the cache is already in place).

Generated workloads name their blocks from the shared system prompt (class, prefix group, block
index) and from the multi-turn session (session, block index); traces that carry block hashes
(Mooncake's `hash_ids`) are used as they are.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

from engine.workload import Requests

HBM, HOST, POOLED = 0, 1, 2
TIERS = ("hbm", "host", "pooled")


class LruBlocks:
    """A set of block hashes with a capacity in blocks, evicting the least recently used."""

    __slots__ = ("blocks", "capacity")

    def __init__(self, capacity: int) -> None:
        self.capacity = max(0, int(capacity))
        self.blocks: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self.blocks)

    def __contains__(self, block: int) -> bool:
        return block in self.blocks

    def touch(self, blocks: Iterable[int]) -> None:
        """Mark blocks as just used."""
        od = self.blocks
        for b in blocks:
            if b in od:
                od.move_to_end(b)

    def insert(self, blocks: Iterable[int]) -> int:
        """Add blocks (most recent last); returns how many were evicted to make room."""
        od = self.blocks
        to_end = od.move_to_end
        for b in blocks:
            if b in od:
                to_end(b)
            else:
                od[b] = None
        return self.shrink(self.capacity) if len(od) > self.capacity else 0

    def shrink(self, capacity: int) -> int:
        """Evict least recently used blocks until at most `capacity` remain."""
        od = self.blocks
        if len(od) <= capacity:
            return 0
        evicted = 0
        while len(od) > max(capacity, 0):
            od.popitem(last=False)
            evicted += 1
        return evicted

    def clear(self) -> None:
        """Forget everything (an instance that failed)."""
        self.blocks.clear()


_TAG_SHIFT = 62
_ID_SHIFT = 24


def _block_id(tag: int, owner: int, index: int) -> int:
    """A unique integer naming block `index` of a prefix group (tag 1) or a session (tag 2).

    Owners below 2^38 and indices below 2^24 never collide; generated workloads stay far below.
    """
    return (tag << _TAG_SHIFT) | (owner << _ID_SHIFT) | index


def request_blocks(reqs: Requests, rid: int, tokens: int | None = None) -> Sequence[int]:
    """Hashes of the full blocks of a request's first `tokens` tokens (default: its prompt)."""
    bt = reqs.block_tokens
    n_tok = int(reqs.prompt_tokens[rid]) if tokens is None else tokens
    trace = reqs.blocks(rid)
    if trace is not None:
        return [int(h) for h in trace[: n_tok // bt]]
    n = n_tok // bt
    prefix_blocks = min(int(reqs.prefix_tokens[rid]) // bt, n)
    group = _block_id(1, int(reqs.prefix_group[rid]) & ((1 << 38) - 1), 0)
    session = _block_id(2, int(reqs.session[rid]), 0)
    return [*range(group, group + prefix_blocks), *range(session + prefix_blocks, session + n)]


def lookup(blocks: Sequence[int], tiers: Sequence[LruBlocks | None]) -> list[int]:
    """Leading blocks found, per tier (the first tier holding each block serves it)."""
    found = [0] * len(tiers)
    maps = [(t, tier.blocks) for t, tier in enumerate(tiers) if tier is not None and tier.blocks]
    if not maps:
        return found
    if len(maps) == 1:  # one tier: count the leading run directly
        t, od = maps[0]
        m = 0
        for b in blocks:
            if b not in od:
                break
            m += 1
        found[t] = m
        return found
    for b in blocks:
        for t, od in maps:
            if b in od:
                found[t] += 1
                break
        else:
            break
    return found


def leading_run(blocks: Sequence[int], tiers: Sequence[LruBlocks | None]) -> int:
    """Leading blocks held by any of the tiers, found by bisection: a routing estimate.

    Exact when what the tiers hold of a prompt is a prefix of it (its blocks age together, so
    this is the common case); where exactness matters, `lookup` walks block by block.
    """
    maps = [t.blocks for t in tiers if t is not None and t.blocks]
    if not maps or not blocks:
        return 0
    lo, hi = 0, len(blocks)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        b = blocks[mid - 1]
        if any(b in od for od in maps):
            lo = mid
        else:
            hi = mid - 1
    return lo


def replay_hit_rate(reqs: Requests, capacity_blocks: int) -> float:
    """Hit rate (of prompt tokens) of one LRU tier replaying the requests in arrival order.

    Each request looks its prompt up, then inserts its blocks: the same access order for any
    capacity, so LRU's inclusion property says a larger cache never hits less.
    """
    tier = LruBlocks(capacity_blocks)
    hit = 0
    for rid in range(len(reqs)):
        blocks = request_blocks(reqs, rid)
        m = lookup(blocks, (tier,))[0]
        hit += min(m * reqs.block_tokens, int(reqs.prompt_tokens[rid]))
        tier.touch(blocks[:m])
        tier.insert(blocks)
    total = int(np.sum(reqs.prompt_tokens))
    return hit / total if total else 0.0


def trace_reuse_ratio(reqs: Requests) -> float:
    """Fraction of prompt tokens in leading blocks that an earlier request already had.

    What an unbounded cache could reuse on this request order: the yardstick the simulated hit
    rate is checked against.
    """
    seen: set[int] = set()
    hit = 0
    total = int(np.sum(reqs.prompt_tokens))
    for rid in range(len(reqs)):
        blocks = request_blocks(reqs, rid)
        m = 0
        for b in blocks:
            if b in seen:
                m += 1
            else:
                break
        hit += min(m * reqs.block_tokens, int(reqs.prompt_tokens[rid]))
        seen.update(blocks)
    return hit / total if total else 0.0
