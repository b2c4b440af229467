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

from collections.abc import Hashable, Mapping, Sequence
from itertools import takewhile
from typing import Any

import numpy as np

from engine.serving.workload import Requests

HBM, HOST, POOLED = 0, 1, 2

TIERS = ("hbm", "host", "pooled")
_SLACK = 1024  # live entries a tier's log may hold past four times its blocks before it is compacted
_NOTHING: Mapping[Hashable, int] = {}  # stands in for an absent tier
# A block is typed `Hashable` here, not `int`: compiled, an `int` is unboxed to a C integer and
# boxed again as a new object for every dict operation, where a block should stay the one object
# `RequestBlocks` made for it (a dict finds a key it holds by identity before comparing values).


class LruBlocks:
    """A set of block hashes with a capacity in blocks, evicting the least recently used.

    Blocks used together (one prompt's) are ordered tail first, head last: of a prompt's blocks
    its first is the most recent, so under pressure a prompt loses its tail before its head and
    what stays is still a usable prefix. vLLM frees a finished request's blocks in that order
    for that reason (deeper blocks are evicted first); with head-first order the head went
    first and the blocks left behind could never be hit again.

    The recency order is a log of uses rather than a linked list: every use of a block appends it
    to `_log`, and `blocks` counts each held block's entries in the log. A block's last entry is
    its place in the order, so eviction reads the log from its oldest entry, skipping (and
    uncounting) entries a later use superseded, and evicts a block at its last entry: the least
    recently used first, exactly as an `OrderedDict` moved to its end at every use would. A use
    costs a dict update and an append, against the `OrderedDict`'s node lookups and relinking.

    Blocks that running requests read from this tier (an HBM prefix hit) are *pinned* (`pin`):
    shared by those requests rather than copied, never evicted while pinned, and held outside
    `capacity`, which bounds only the unpinned blocks (the memory they take is the requests',
    counted in the instance's reservation once per block, as vLLM's ref-counted blocks are).
    """

    __slots__ = ("_head", "_log", "blocks", "capacity", "pins")

    def __init__(self, capacity: int) -> None:
        self.capacity = max(0, int(capacity))
        self.blocks: dict[Hashable, int] = {}  # block -> its entries in the log from `_head` on
        self._log: list[Hashable] = []  # every use, oldest first; entries before `_head` are spent
        self._head = 0
        self.pins: dict[Hashable, int] = {}  # a held block -> the running requests reading it

    def __len__(self) -> int:
        return len(self.blocks)

    def __contains__(self, block: Hashable) -> bool:
        return block in self.blocks

    def touch(self, blocks: Sequence[Hashable]) -> None:
        """Mark the blocks of a prompt this tier holds as just used (the others are ignored)."""
        held, log = self.blocks, self._log
        for b in blocks[::-1]:  # (a slice, not `reversed`: compiled, a builtin is found by name at each call)
            n = held.get(b, 0)
            if n:
                held[b] = n + 1
                log.append(b)
        if len(log) - self._head > 4 * len(held) + _SLACK:
            self._compact()

    def insert(self, blocks: Sequence[Hashable]) -> int:
        """Add a prompt's blocks as just used; returns how many were evicted to make room."""
        held, log = self.blocks, self._log
        newest = blocks[::-1]
        for b in newest:
            held[b] = held.get(b, 0) + 1
        log.extend(newest)
        evicted = self.shrink(self.capacity) if len(held) - len(self.pins) > self.capacity else 0
        if len(self._log) - self._head > 4 * len(held) + _SLACK:
            self._compact()
        return evicted

    def shrink(self, capacity: int) -> int:
        """Evict least recently used unpinned blocks until at most `capacity` of them remain."""
        held, pins = self.blocks, self.pins
        excess = len(held) - len(pins) - (0 if capacity < 0 else capacity)  # max(capacity, 0), no builtin
        if excess <= 0:
            return 0
        if excess >= len(held):  # (nothing pinned)
            self.clear()
            return excess
        log, at, left = self._log, self._head, excess
        kept: list[Hashable] = []  # pinned blocks met at their last entry: used again now
        while left:
            b = log[at]
            at += 1
            n = held[b]
            if n != 1:
                held[b] = n - 1
            elif pins and b in pins:
                kept.append(b)
            else:  # its last use: the least recent of the unpinned blocks held
                del held[b]
                left -= 1
        if at > len(log) >> 1:  # drop the spent entries once they are half the log
            del log[:at]
            at = 0
        log.extend(kept)
        self._head = at
        return excess

    def pin(self, blocks: Sequence[Hashable]) -> int:
        """A running request reads these held blocks; returns how many were not pinned before."""
        pins = self.pins
        before = len(pins)
        for b in blocks:
            pins[b] = pins.get(b, 0) + 1
        return len(pins) - before

    def unpinned(self, blocks: Sequence[Hashable]) -> int:
        """How many of these blocks no request reads (what `pin` would return)."""
        pins, n = self.pins, 0
        for b in blocks:
            if b not in pins:
                n += 1
        return n

    def unpin(self, blocks: Sequence[Hashable]) -> int:
        """A request that read these blocks is done with them; returns how many no request reads now
        (they stay cached, counted in the capacity from the next `insert` or `shrink`)."""
        pins = self.pins
        before = len(pins)
        for b in blocks:
            n = pins.get(b, 0)
            if n > 1:
                pins[b] = n - 1
            elif n:
                del pins[b]
        return before - len(pins)

    def _compact(self) -> None:
        """Keep only each block's last entry (a tier that uses blocks again without evicting)."""
        held, kept = self.blocks, []
        for b in self._log[self._head :]:
            n = held[b]
            if n == 1:
                kept.append(b)
            else:
                held[b] = n - 1
        self._log, self._head = kept, 0

    def oldest_first(self) -> list[Hashable]:
        """The blocks held, the least recently used first."""
        order = []
        seen: set[Hashable] = set()
        for b in reversed(self._log[self._head :]):
            if b not in seen:
                seen.add(b)
                order.append(b)
        order.reverse()
        return order

    def clear(self) -> None:
        """Forget every unpinned block (a role switch; after `unpin_all`, an instance that failed)."""
        self.blocks.clear()
        self._log.clear()
        self._head = 0
        if self.pins:  # still read by running requests: kept
            self.blocks.update(dict.fromkeys(self.pins, 1))
            self._log.extend(self.pins)

    def unpin_all(self) -> None:
        """Forget every pin (an instance that lost every request it held)."""
        self.pins.clear()


_TAG_SHIFT = 61
_SPREAD = 0x9E3779B1  # odd, about 2^31.3: Knuth's multiplicative-hashing constant
_OWNER_BITS = 29


def _block_id(tag: int, owner: int, index: int) -> int:
    """A unique integer naming block `index` of a prefix group (tag 1) or a session (tag 2).

    The id is ``tag * 2^61 + owner * _SPREAD + index``: unique for owners below 2^29 and indices
    below 2^24 (generated workloads stay far below), and below 2^63, so building a prompt's
    block list with `range` stays on CPython's fast path. A Python dict finds an int key by
    its low bits: with the owner in high bits (as an earlier layout had it) every session's
    block i shared one slot and lookups crawled; multiplying by an odd constant gives each
    owner's run of ids its own, scattered start.
    """
    return (tag << _TAG_SHIFT) | (owner * _SPREAD + index)


def request_blocks(reqs: Requests, rid: int, tokens: int | None = None) -> Sequence[int]:
    """Hashes of the full blocks of a request's first `tokens` tokens (default: its prompt)."""
    bt = reqs.block_tokens
    n_tok = int(reqs.prompt_tokens[rid]) if tokens is None else tokens
    trace = reqs.blocks(rid)
    if trace is not None:
        return trace[: n_tok // bt].tolist()
    return _generated_blocks(
        n_tok // bt, int(reqs.prefix_tokens[rid]) // bt, int(reqs.prefix_group[rid]), int(reqs.session[rid])
    )


def _first_ids(group: int, session: int) -> tuple[int, int]:
    """Ids of block 0 of a prefix group's chain and of a session's (block i is that id + i)."""
    mask = (1 << _OWNER_BITS) - 1
    return _block_id(1, group & mask, 0), _block_id(2, session & mask, 0)


def _generated_blocks(n: int, prefix_blocks: int, group: int, session: int) -> list[int]:
    """The first `n` blocks of a generated prompt: its prefix group's, then its session's."""
    prefix_blocks = min(prefix_blocks, n)
    g, s = _first_ids(group, session)
    return [*range(g, g + prefix_blocks), *range(s + prefix_blocks, s + n)]


class RequestBlocks:
    """`request_blocks` of every request of a run, computed on first use and kept until dropped.

    The simulator asks for a request's blocks several times (routing, lookup, hand-off, insert);
    this reads its inputs from Python lists once instead of numpy scalars each time. Every block
    id is one shared int object for the whole run (a session's next turn and every prompt of a
    prefix group reuse the objects of the first): a dict compares a key it holds with the one
    looked up by identity before by value, so cache lookups stay on that fast path.
    """

    __slots__ = (
        "_chains",
        "_full",
        "_interned",
        "_prompt",
        "_reqs",
        "bt",
        "groups",
        "hashes",
        "offsets",
        "output",
        "prefix",
        "prompt",
        "sessions",
    )

    def __init__(self, reqs: Requests) -> None:
        self.bt = reqs.block_tokens
        traced = reqs.block_offsets is not None and reqs.block_hashes is not None
        self.hashes: np.ndarray | None = reqs.block_hashes if traced else None
        too_big = 0 if traced or not len(reqs) else int(max(reqs.prefix_group.max(), reqs.session.max()))
        if too_big >= 1 << _OWNER_BITS:
            raise ValueError(
                f"prefix group or session id {too_big} is past 2^{_OWNER_BITS}: block ids would collide"
            )
        # the per-request lists are read from `reqs` on first use: a run without a cache or
        # cache-aware routing never asks for a block (a million requests' lists cost 150 MB)
        self._reqs: Requests | None = reqs
        self.prompt: list[int] = []
        self.output: list[int] = []
        self.offsets: list[int] | None = None
        self.prefix: list[int] = []
        self.groups: list[int] = []
        self.sessions: list[int] = []
        self._prompt: list[list[int] | None] = []
        self._full: list[list[int] | None] = []
        self._chains: dict[int, list[int]] = {}  # first id of a group's or session's blocks -> its ids
        # a trace's hash -> the one object for it (the values typed Any: compiled, an `int` would be
        # unboxed and boxed again as a new object, the identity this dict is for lost)
        self._interned: dict[int, Any] = {}

    def _load(self) -> None:
        """Read the per-request inputs into Python lists (once, at the first block asked for)."""
        reqs, self._reqs = self._reqs, None
        assert reqs is not None
        n = len(reqs)
        self.prompt = reqs.prompt_tokens.tolist()
        self.output = reqs.output_tokens.tolist()
        if self.hashes is not None and reqs.block_offsets is not None:
            self.offsets = reqs.block_offsets.tolist()
        else:
            self.prefix = reqs.prefix_tokens.tolist()
            self.groups = reqs.prefix_group.tolist()
            self.sessions = reqs.session.tolist()
        self._prompt = [None] * n
        self._full = [None] * n

    def _chain(self, first: int, n: int) -> list[int]:
        """The ids first, first + 1, ... (at least n of them), the same objects on every call."""
        chain = self._chains.get(first)
        if chain is None:
            chain = self._chains[first] = list(range(first, first + n))
        elif len(chain) < n:
            chain.extend(range(first + len(chain), first + n))
        return chain

    def _make(self, rid: int, tokens: int) -> list[int]:
        bt = self.bt
        if self.offsets is not None and self.hashes is not None:
            start = self.offsets[rid]
            stop = min(self.offsets[rid + 1], start + self.prompt[rid] // bt)
            interned = self._interned
            return [interned.setdefault(h, h) for h in self.hashes[start:stop].tolist()]  # prompt blocks only
        n = tokens // bt
        p = min(self.prefix[rid] // bt, n)
        g, s = _first_ids(self.groups[rid], self.sessions[rid])
        group, session = self._chain(g, p), self._chain(s, n)
        return group[:p] + session[p:n]

    def prompt_blocks(self, rid: int) -> list[int]:
        """Blocks of the request's prompt."""
        if self._reqs is not None:
            self._load()
        got = self._prompt[rid]
        if got is None:
            got = self._prompt[rid] = self._make(rid, self.prompt[rid])
        return got

    def full_blocks(self, rid: int) -> list[int]:
        """Blocks of the prompt and the answer (what the next turn of a conversation reuses)."""
        if self._reqs is not None:
            self._load()
        got = self._full[rid]
        if got is None:
            if self.offsets is not None and self.hashes is not None:  # a trace's: its prompt's, the same list
                got = self._full[rid] = self.prompt_blocks(rid)
            else:
                got = self._full[rid] = self._make(rid, self.prompt[rid] + self.output[rid])
        return got

    def cap_output(self, rid: int, tokens: int) -> None:
        """The request delivers only `tokens` of its answer (degrade's cap): its full blocks stop
        there, so the next turn of its conversation finds only what was generated."""
        if self._reqs is not None:
            self._load()
        self.output[rid] = tokens
        self._full[rid] = None

    def set_prompt(self, rid: int, tokens: int) -> None:
        """A session's later turn is sent with `tokens` of prompt (an earlier answer was capped)."""
        if self._reqs is not None:
            self._load()
        self.prompt[rid] = tokens
        self._prompt[rid] = None
        self._full[rid] = None

    def drop(self, rid: int) -> None:
        """Forget a finished request's block lists (the id objects, one per block of the run, stay)."""
        if self._reqs is not None:  # none were made
            return
        self._prompt[rid] = None
        self._full[rid] = None


def found_in(
    blocks: Sequence[Hashable], hbm: LruBlocks | None, host: LruBlocks | None, pooled: LruBlocks | None
) -> tuple[int, int, int]:
    """`lookup` over an instance's three tiers (any may be absent): the simulator's case, one test
    a block and no lists."""
    a = _NOTHING if hbm is None else hbm.blocks
    b = _NOTHING if host is None else host.blocks
    c = _NOTHING if pooled is None else pooled.blocks
    n_a = n_b = n_c = 0
    for block in blocks:
        if block in a:
            n_a += 1
        elif block in b:
            n_b += 1
        elif block in c:
            n_c += 1
        else:
            break
    return n_a, n_b, n_c


def held_run(blocks: Sequence[Hashable], tier: LruBlocks) -> int:
    """Leading blocks one tier holds (`lookup` of that tier alone), counted in C."""
    return len(list(takewhile(tier.blocks.__contains__, blocks)))


def lookup(blocks: Sequence[Hashable], tiers: Sequence[LruBlocks | None]) -> list[int]:
    """Leading blocks found, per tier (the first tier holding each block serves it)."""
    found = [0] * len(tiers)
    live = [(t, tier) for t, tier in enumerate(tiers) if tier is not None and tier.blocks]
    if not live:
        return found
    if len(live) == 1:  # one tier: count the leading run directly
        t, tier = live[0]
        found[t] = held_run(blocks, tier)
        return found
    maps = [(t, tier.blocks) for t, tier in live]
    for b in blocks:
        for t, od in maps:
            if b in od:
                found[t] += 1
                break
        else:
            break
    return found


def leading_run(blocks: Sequence[Hashable], tiers: Sequence[LruBlocks | None]) -> int:
    """Leading blocks held by any of the tiers, found by bisection: a routing estimate.

    Exact when what the tiers hold of a prompt is a prefix of it (its blocks age together, so
    this is the common case); where exactness matters, `lookup` walks block by block. The ends
    are always checked: nothing when the first block is missing, everything when the last is held.
    """
    return leading_run_in(blocks, [t.blocks for t in tiers if t is not None])


def leading_run_in(blocks: Sequence[Hashable], maps: Sequence[Mapping[Hashable, int]]) -> int:
    """`leading_run` over the tiers' block maps themselves (the simulator keeps them at hand)."""
    if not blocks:
        return 0
    if len(maps) == 2:  # an instance's HBM and host tiers: the routing case, kept free of lists
        a, c = maps
        if not a:
            a, c = c, _NOTHING
        return _run_in_two(blocks, a, c) if a else 0
    live = [m for m in maps if m]
    if not live:
        return 0
    if len(live) <= 2:
        return _run_in_two(blocks, live[0], live[1] if len(live) == 2 else _NOTHING)
    return _run_in_many(blocks, live)


def _run_in_two(blocks: Sequence[Hashable], a: Mapping[Hashable, int], c: Mapping[Hashable, int]) -> int:
    """The leading run held by `a` or `c` (`c` may be the empty map): end checks, then bisection."""
    n = len(blocks)
    b = blocks[0]
    if b not in a and b not in c:
        return 0
    b = blocks[-1]
    if b in a or b in c:
        return n
    lo, hi = 1, n - 1  # blocks[lo - 1] is held, blocks[hi] is not
    while lo < hi:
        mid = (lo + hi + 1) // 2
        b = blocks[mid - 1]
        if b in a or b in c:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _run_in_many(blocks: Sequence[Hashable], maps: Sequence[Mapping[Hashable, int]]) -> int:
    """`_run_in_two` for three or more maps."""
    n = len(blocks)
    if not any(blocks[0] in m for m in maps):
        return 0
    if any(blocks[-1] in m for m in maps):
        return n
    lo, hi = 1, n - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if any(blocks[mid - 1] in m for m in maps):
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
        m = held_run(blocks, tier)
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
