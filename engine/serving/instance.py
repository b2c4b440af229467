"""One serving instance: continuous batching as a small state machine, and its KV memory.

An instance is idle, running one iteration (prefill chunks, maybe with decode steps), or running
one decode jump (a run of decode-only steps with an unchanging batch, timed in closed form by
`step.StepModel.decode_run`). Each ends with a timed call on the simulation's clock that applies
the work and forms the next batch; `token` bumps whenever a scheduled end is superseded (a jump
cut short by a joining request, a fault), so a stale call does nothing.

The instance keeps its waiting queue (ordered by the queue policy), the prompts it is
prefilling, its decode batch (with a heap of the step at which each request finishes), KV
reservations (admission never overcommits; with preemption a victim leaves when memory runs
out), its own cache tiers (HBM, host DRAM) and what a fault or a role switch takes away
(batch formation in `engine.serving.batching`, faults in `engine.serving.outage`). What
happens to a request between instances (routing, hand-off, completion) is the simulation's
business; this module reports to it through the calls `engine.serving.host.Host` declares and
never imports the simulation module.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from engine import policies
from engine.costmodel import ownership
from engine.costmodel.step import StepModel
from engine.scenario.resolve import ResolvedPool
from engine.serving.batching import BatchFormation
from engine.serving.cache import LruBlocks
from engine.serving.outage import Outage

if TYPE_CHECKING:
    from engine.serving.host import Host

# (Final: the compiled build keeps them in C statics, not read from the module's dict at every call)
_new_view: Final = tuple.__new__
_INSTANCE_VIEW: Final = policies.InstanceView
_UNBUILT: Final = policies.InstanceView(-1, 0, 0, 0, 0)
"""A kept view at no position: nothing it would carry has changed since `least_loaded` computed its
terms, but the view itself was not built (the default router needs only the terms). Every other
reader of a kept view builds it again, as at a position that moved; a write of a field it carries
sets it to None, as it does a built view."""
_NO_CHUNKS: Final[list[tuple[int, int, int]]] = []  # a decode instance's prefill work (never appended to)
_heappush: Final = heapq.heappush
_heappop: Final = heapq.heappop


def throughput(step: StepModel, token_budget: int, max_batch: int, ranks: int = 1) -> tuple[float, float]:
    """(prompt tokens/s, decode tokens/s) of an instance: a full token budget of one prompt at
    a time, and a full batch (at most 64 requests) of 2,048-token contexts decoding, on each of
    its `ranks` attention data-parallel ranks (`token_budget` and `max_batch` are a rank's)."""
    one = float(token_budget)
    q = one * ranks
    t = step.cost(q, one * one / 2.0 * ranks, 0.0, 0.0, 0.0, ranks, one)[0]
    b = float(min(max_batch, 64) * ranks)
    t_dec = step.cost(0.0, 0.0, 0.0, b, b * 2048.0)[0]
    return (q / t if t > 0 else 0.0, b / t_dec if t_dec > 0 else 0.0)


def views_of(
    servers: list[Server], cached: list[int] | None = None, step_s: list[float] | None = None
) -> list[policies.InstanceView]:
    """What a router sees of each of `servers`, at its position in that list (`cached`: each one's
    cached prefix tokens, `step_s`: each one's next decode step with the request; default 0),
    each view built afresh."""
    return [
        _view(s, i, 0 if cached is None else cached[i], 0.0 if step_s is None else step_s[i])
        for i, s in enumerate(servers)
    ]


def current_views(servers: list[Server]) -> list[policies.InstanceView]:
    """`views_of(servers)`, reusing each instance's view from an earlier route where nothing it
    carries has changed since (`Server.view`) and its position in `servers` is the same."""
    out: list[policies.InstanceView] = []
    append = out.append
    for i, s in enumerate(servers):
        v = s.view
        if v is None or v[0] != i:
            v = s.view = _view(s, i, 0, 0.0)
            s.rank_kept = False  # (built after a write least_loaded may not have seen)
        append(v)
    return out


def least_ranked(servers: list[Server], rank: Callable[[policies.InstanceView], tuple[Any, ...]]) -> int:
    """Position in `servers` of the one whose view has the least `rank` (the earlier on a tie), each
    instance's rank kept with its view (`current_views`) and computed again only with it."""
    for i, s in enumerate(servers):
        v = s.view
        if v is None or v[0] != i:
            # `_view(s, i, 0, 0.0)`, inlined: most routes rebuild a view or two
            k = 1 if s.role == "decode" else 0
            v = s.view = _new_view(
                _INSTANCE_VIEW,
                (
                    i,
                    len(s.waiting) + len(s.incoming),
                    s.waiting_tokens,
                    len(s.running) + len(s.prefilling),
                    s.kv_cap - s.kv_reserved,
                    0,
                    s.up,
                    s.role,
                    s.speeds[k],
                    s.rates[k],
                    s.prices[k],
                    s.kv_cap,
                    0.0,
                ),
            )
            # (flat: nested tuples compare slower; `tuple(...) + (i,)`, not `(*rank(v), i)`, which
            # compiled builds through a list)
            s.rank = tuple(rank(v)) + (i,)  # noqa: RUF005
            s.rank_kept = False
    # `min(map(attrgetter("rank"), servers))[-1]` written out: compiled, each rank is read from its
    # slot rather than by name, and min and map are not looked up in builtins at every route
    best = servers[0].rank
    for s in servers:
        if s.rank < best:
            best = s.rank
    return best[-1]  # type: ignore[no-any-return]


def least_loaded(servers: list[Server]) -> int:
    """`least_ranked(servers, LeastLoaded.rank)` from two floats kept with each view: the position of
    the instance with the fewest queued prompt tokens over its speed, then the fewest running
    requests over its speed, the earlier on a tie (`policies.LeastLoaded`, the default router).

    The same divisions of the same numbers and the same order: a rank tuple's comparison goes to
    the first term that differs, so comparing the terms in turn agrees with it (neither term is ever
    NaN: a speed is positive). Compiled, the terms are C doubles in the instance's slots: the tuples
    cost about 400 instructions a comparison, 40 a route over 40 instances, and a Python call to
    `rank` for each view rebuilt. The terms are computed again after a write resets the view, or
    after another reader of kept views built it (`rank_kept`); a view reset is left unbuilt
    (`_UNBUILT`). Neither depends on the instance's position in `servers`."""
    best = -1
    best_tokens = best_running = 0.0
    for i, s in enumerate(servers):
        if s.view is None or not s.rank_kept:
            if s.view is None:
                s.view = _UNBUILT
            s.rank_kept = True
            speed = s.speeds[1 if s.role == "decode" else 0]
            s.rank_tokens = s.waiting_tokens / speed
            s.rank_running = (len(s.running) + len(s.prefilling)) / speed
        tokens = s.rank_tokens
        if best < 0 or tokens < best_tokens or (tokens == best_tokens and s.rank_running < best_running):
            best, best_tokens, best_running = i, tokens, s.rank_running
    return best


def _view(s: Server, i: int, cached: int, step_s: float) -> policies.InstanceView:
    """The view of one instance at position `i` (built as a plain tuple: routers ask for a view of
    every candidate of every request)."""
    k = 1 if s.role == "decode" else 0
    return _new_view(
        _INSTANCE_VIEW,
        (
            i,
            len(s.waiting) + len(s.incoming),
            s.waiting_tokens,
            len(s.running) + len(s.prefilling),
            s.kv_cap - s.kv_reserved,
            cached,
            s.up,
            s.role,
            s.speeds[k],
            s.rates[k],
            s.prices[k],
            s.kv_cap,
            step_s,
        ),
    )


RECONFIG_COUNTER = "reconfig_j"
"""Prefix of the run counters that hold each pool's reconfiguration energy, J (`Server.reconfigure`)."""


class Server(BatchFormation, Outage):
    """One instance: its queues, KV bookkeeping, cache tiers and batch-forming state machine."""

    __slots__ = (
        "idx", "local", "pool", "role", "step", "kv_cap", "kv_reserved", "kv_used", "waiting",
        "waiting_tokens", "tokens_by_priority", "prefilling", "running", "incoming", "busy", "jump", "token",
        "kick_pending", "up", "nic_free_s", "sim", "finish", "finish_of", "steps_done", "ctx_sum", "kv_peak",
        "hbm", "host", "swapped", "loading", "generation", "busy_switching", "ready", "jump_growth",
        "own_blocks", "kv_bytes", "restores", "future_role", "inbound", "last_decode", "draining", "rates",
        "speeds", "prices", "max_batch", "token_budget", "chunked", "ranks", "chunk_cap", "view", "rank",
        "rank_tokens", "rank_running", "rank_kept", "kick_call", "iteration_call", "jump_call", "pool_index",
        "pins", "kv_shared",
    )  # fmt: skip

    def __init__(self, sim: Host[Server], idx: int, local: int, pool: ResolvedPool) -> None:
        self.sim = sim
        self.idx = idx
        self.local = local
        self.pool = pool
        self.pool_index: int = pool.index  # (a slot: compiled, `pool.index` is a read by name)
        self.role: str = pool.spec.role
        self.step = StepModel(pool.instance)
        # the pool's limits (its chip's stack defaults where unset); every attention data-parallel rank
        # schedules its own batch: the cap and the token budget count once per rank (docs/cost-model.md)
        b, self.ranks = pool.limits, pool.instance.dp  # a prompt runs on one rank
        self.max_batch, self.token_budget = b.max_batch * self.ranks, b.token_budget * self.ranks
        self.chunked: bool = b.chunked_prefill
        # a chunk runs on one rank: at most a rank's budget (one instance's, without ranks)
        self.chunk_cap = min(b.chunk_tokens, b.token_budget) if self.ranks > 1 else b.chunk_tokens
        self.kv_cap = pool.instance.kv_capacity_tokens
        self.kv_reserved = self.kv_peak = self.kv_used = self.kv_shared = 0
        self.pins = {}  # (`Outage`'s field: `KvLedger.share`)
        self.waiting: list[tuple[tuple[float, ...], int]] = []
        self.waiting_tokens = 0
        self.tokens_by_priority: dict[int, int] = {}  # prompt tokens still to prefill, per class priority
        self.prefilling: list[int] = []
        self.running: dict[int, int] = {}  # decoding request -> steps_done when it joined
        self.finish: list[tuple[int, int]] = []  # heap of (steps_done at its last token, request)
        self.finish_of: dict[int, int] = {}
        self.steps_done = 0  # decode steps this instance has run
        self.ctx_sum = 0  # context tokens of the running requests
        self.incoming: list[int] = []
        self.swapped: list[tuple[int, int, int]] = []  # (request, context, remaining) waiting for memory
        self.loading: set[int] = set()  # reserved here; cache load, swap-in or recompute under way
        self.ready: list[tuple[int, int, int]] = []  # swapped in or recomputed: rejoins the batch next
        self.busy = False  # an iteration or a decode jump is under way
        # the decode jump under way: (start, batch, context sum, steps, `decode_run` of those steps)
        self.jump: tuple[float, int, float, int, tuple[float, float, float]] | None = None
        self.token = 0  # bumps when a scheduled end is superseded
        self.kick_pending = False
        self.jump_growth = 0  # KV tokens the decode jump under way will add (preemption mode)
        self.up = True
        self.busy_switching = False
        self.draining = False  # taking no new work before an elastic role switch
        self.restores = False  # down, and a fault will bring it back
        self.future_role: str = self.role  # the role it serves once a role switch under way ends
        self.inbound = 0  # KV transfers on their way here (reserved, not yet in `incoming`)
        self.generation = 0  # bumps when the instance fails: stale callbacks are ignored
        self.nic_free_s = 0.0
        # the router's view of this instance (`current_views`), kept between routes: every write of a
        # field it carries (queue, prefilling, batch, incoming, reserved KV, waiting tokens, up, role)
        # sets it to None, and the next route builds it again
        self.view: policies.InstanceView | None = None
        self.rank: tuple[Any, ...] = ()  # a ranked router's rank of `view`, then its position: set with it
        self.rank_tokens = self.rank_running = 0.0  # least_loaded's rank of `view`, less its position
        self.rank_kept = False  # computed since `view` was last built or reset (`least_loaded`)
        # tokens/s in each role, and over the deployment's fastest (the sim sets `speeds`); typed as
        # tuples of any length so that, compiled, they stay tuples of float objects: a fixed pair is
        # kept unboxed, and `speeds[k]` would box both into a new tuple at every view
        self.rates: tuple[float, ...] = throughput(self.step, b.token_budget, b.max_batch, self.ranks)
        self.speeds: tuple[float, ...] = (1.0, 1.0)
        # this instance's price per second, on the scenario's cost basis: rent, or an owned chip's
        # capital, hosting and energy while busy (at its TDP), so `cost_aware` routes as the bill counts
        basis = sim.scenario.cost
        if basis.mode == "rent":
            per_s = pool.usd_per_hour / pool.spec.count / 3600.0
        else:
            hw = pool.hardware
            per_s = pool.instance.chips * ownership.chip_hour_usd(hw, basis, power_w=hw.tdp_w) / 3600.0
        self.prices = tuple(per_s / r * 1e6 if r > 0 else 0.0 for r in self.rates)  # per million tokens
        self.last_decode = -1.0  # end of the batch's last decode step; -1 when no batch is decoding
        bt = sim.reqs.block_tokens
        kvb = self.kv_bytes = pool.instance.kv_bytes_held  # every rank's copy (each offloads, loads its own)
        cache = sim.scenario.cache
        self.hbm = LruBlocks(self.kv_cap // bt) if sim.cache_on and cache.hbm else None
        host_blocks = int(cache.host.capacity_gb * 1e9 // (kvb * bt)) if cache.host.enabled else 0
        self.host = LruBlocks(host_blocks) if sim.cache_on and cache.host.enabled else None
        # the block maps of the instance's own tiers (cleared in place, never replaced)
        self.own_blocks = [t.blocks for t in (self.hbm, self.host) if t is not None]
        # the state machine's timed calls, bound once: reading `self._kick_cb` builds a bound method
        # every time (compiled, after a lookup by name), and these are most of a run's events
        self.kick_call: Callable[[int], None] = self._kick_cb
        self.iteration_call: Callable[[int, tuple[Any, ...]], None] = self._iteration_done
        self.jump_call: Callable[[int, tuple[Any, ...]], None] = self._jump_done

    # --- views and wake-ups ---------------------------------------------------------------

    def reconfigure(self, counters: dict[str, float]) -> float:
        """Charge one reconfiguration of this instance's chips (a reconfigurable chip loading another
        design: `HardwareSpec.reconfig_s`, `reconfig_j`) and return its seconds (0 for other chips).

        Its energy, every chip's, is counted per pool in the run's `counters` (`reconfig_j.<pool>`),
        which the energy figures add (`engine.serving.metrics`)."""
        inst = self.pool.instance
        hw = inst.hardware
        if hw.reconfig_j:
            key = f"{RECONFIG_COUNTER}.{self.pool.index}"
            counters[key] = counters.get(key, 0.0) + hw.reconfig_j * inst.chips
        return hw.reconfig_s or 0.0

    def step_with(self, context: int) -> float:
        """Seconds of one decode step of the batch this instance runs, with one more request of
        `context` tokens (0 on a prefill instance)."""
        if self.role == "prefill":
            return 0.0
        d = len(self.running) + len(self.incoming) + 1
        return self.step.cost(0.0, 0.0, 0.0, float(d), float(self.ctx_sum + context))[0]

    def notify(self, could_start: bool) -> None:
        """Something arrived or was freed: start work if idle, or cut a decode jump short."""
        if not self.up:
            return
        if not self.busy:
            if not self.kick_pending:  # form the batch once the current callbacks are done
                self.kick_pending = True
                self.sim.env.after(0.0, self.kick_call, self.token)
        elif self.jump is not None and could_start:
            self.cut_jump()

    def queue_tokens(self, rid: int, delta: int) -> None:
        """Account prompt tokens still to prefill here (in total and by class priority)."""
        self.waiting_tokens += delta
        self.view = None
        prio = self.sim.priority[rid]
        self.tokens_by_priority[prio] = self.tokens_by_priority.get(prio, 0) + delta

    def tokens_ahead(self, rid: int) -> int:
        """Prompt tokens a new request would wait behind (strict priority: only its own and higher)."""
        if not self.sim.by_priority:
            return self.waiting_tokens
        prio = self.sim.priority[rid]
        return sum(v for p, v in self.tokens_by_priority.items() if p >= prio)

    def has_slot(self) -> bool:
        """True when the running batch can take another request."""
        return len(self.running) + len(self.prefilling) + len(self.loading) < self.max_batch

    # --- the state machine ----------------------------------------------------------------
    # An instance is idle, running one iteration, or running one decode jump. Each of those
    # ends with a timed call on the simulation's clock that applies the work and forms the next batch.
    # `token` bumps whenever a scheduled end is superseded (a jump cut short, a fault), so a
    # stale callback does nothing.

    def kick(self) -> None:
        """Form the next batch now and start it, or go idle."""
        if not self.up or self.busy_switching or self.busy:
            return
        sim = self.sim
        role = self.role
        while True:
            while self.ready:
                item = self.ready.pop(0)
                sim.rejoined(self, item[0])
                self.start_decoding(*item)
            if self.swapped and self._admit_swapped():
                return  # a decode instance recomputes preempted contexts before its next step
            if self.incoming and role != "prefill":  # (a decode instance fallen back to mixed too)
                self._admit_incoming()
            chunks = self._schedule_prefill() if role != "decode" else _NO_CHUNKS
            decodes = len(self.running) if role != "prefill" and (sim.mix or not chunks) else 0
            if decodes and sim.preempt:
                held = self.kv_reserved
                if not self._make_room():
                    if sim.swap:  # the victims' KV is copied out over PCIe before the next step runs
                        self._stall(sim.swap_time(self, held - self.kv_reserved))
                        return
                    continue  # memory was freed by preemption: form the batch again
            break
        if not chunks and not decodes:
            return  # idle until notified
        self.busy = True
        if chunks:
            self._start_iteration(chunks, decodes)
        else:
            self._start_jump()

    def _kick_cb(self, token: int) -> None:
        self.kick_pending = False
        if token == self.token:
            self.kick()

    def _start_iteration(self, chunks: list[tuple[int, int, int]], decodes: int) -> None:
        if len(chunks) == 1:  # most iterations: the sums below over one chunk, without generators
            _, q, k = chunks[0]
            pairs = 0.0 + q * (k + q / 2.0)  # (as `sum` adds it: to 0.0)
            largest = float(q) if self.ranks > 1 else 0.0
        else:
            q = sum(c[1] for c in chunks)
            pairs = sum(c[1] * (c[2] + c[1] / 2.0) for c in chunks)
            k = sum(c[2] for c in chunks)
            largest = float(max(c[1] for c in chunks)) if self.ranks > 1 else 0.0  # a prompt's rank
        ctx = float(self.ctx_sum) if decodes else 0.0
        t, flops, nbytes = self.step.cost(q, pairs, k, decodes, ctx, len(chunks) + decodes, largest)
        work = (chunks, decodes, ctx, q, pairs, k, largest, self.sim.env.now, t, flops, nbytes)
        self.sim.env.after(t, self.iteration_call, self.token, work)

    def _iteration_done(self, token: int, work: tuple[Any, ...]) -> None:
        if token != self.token:
            return
        sim = self.sim
        chunks, d, ctx, q, pairs, k, largest, t0, t, flops, nbytes = work
        if d:  # split the iteration's time between its prefill and decode work by their costs alone
            tp = self.step.cost(q, pairs, k, 0, 0.0, 0, largest)[0]
            share = tp / (tp + self.step.cost(0, 0.0, 0, d, ctx)[0])
        else:
            share = 1.0
        now = sim.env.now
        gap = (now - self.last_decode if self.last_decode >= 0.0 else now - t0) if d else 0.0
        sim.segments.add(  # one row of `ledger.SEGMENT_COLUMNS`
            (
                self.idx,
                t0,
                now,
                flops,
                nbytes,
                self.kv_used - self.kv_shared + (q + d) / 2.0,
                d + len(chunks),
                len(self.waiting) + len(self.incoming),
                share * t,
                d,
                1,
                gap,
                gap,
            )
        )
        self.kv_used += q + d
        if d:
            self.last_decode = now
            self.advance(1)
        prefilled, by_priority, priority = sim.prefilled, self.tokens_by_priority, sim.priority
        for rid, qi, _ in chunks:
            prefilled[rid] += qi
            self.waiting_tokens -= qi  # `queue_tokens(rid, -qi)`, inlined
            self.view = None
            prio = priority[rid]
            by_priority[prio] = by_priority.get(prio, 0) - qi
            if prefilled[rid] >= sim.pf_target[rid]:
                self.prefilling.remove(rid)
                self.view = None
                sim.prefill_done(self, rid)
        self.busy = False
        self.kick()

    def _start_jump(self) -> None:
        sim = self.sim
        b = len(self.running)
        finish, finish_of = self.finish, self.finish_of
        while finish_of.get(finish[0][1]) != finish[0][0]:  # the head: the next request to finish
            _heappop(finish)  # a preempted request's stale entry
        kmax = finish[0][0] - self.steps_done
        now = sim.env.now
        if sim.preempt:
            kmax = max(1, min(kmax, (self.kv_cap - self.kv_reserved) // b))
        ctx = float(self.ctx_sum)
        run = self.step.decode_run(b, ctx, kmax)
        self.jump_growth = kmax * b
        self.jump = (now, b, ctx, kmax, run)
        sim.env.after(run[0], self.jump_call, self.token, (now, b, kmax, run))

    def cut_jump(self) -> None:
        """A request can join: end the decode jump at the boundary of the step under way."""
        assert self.jump is not None
        t0, b, ctx, kmax, whole = self.jump
        self.jump = None
        steps, run = self._steps_started(b, ctx, self.sim.env.now - t0, kmax, whole)
        if steps == kmax:
            return  # the jump ends with that very step anyway
        self.token += 1  # supersede the jump's planned end
        left = t0 + run[0] - self.sim.env.now
        self.sim.env.after(left if left > 0.0 else 0.0, self.jump_call, self.token, (t0, b, steps, run))

    def _jump_done(self, token: int, work: tuple[Any, ...]) -> None:
        if token != self.token:
            return
        t0, b, steps, run = work
        self.jump = None
        self.jump_growth = 0
        total_s, flops, nbytes = run
        now = self.sim.env.now
        step_s = total_s / steps
        first = step_s + (t0 - self.last_decode if self.last_decode >= 0.0 else 0.0)
        waiting = len(self.waiting) + len(self.incoming)
        self.sim.segments.add(  # one row of `ledger.SEGMENT_COLUMNS`
            (
                self.idx,
                t0,
                now,
                flops,
                nbytes,
                self.kv_used - self.kv_shared + steps * b / 2.0,
                b,
                waiting,
                0.0,
                b,
                steps,
                first,
                step_s,
            )
        )
        self.kv_used += steps * b
        self.last_decode = now
        self.advance(steps)
        self.busy = False
        self.kick()

    def _steps_started(
        self, b: int, ctx: float, elapsed: float, kmax: int, whole: tuple[float, float, float]
    ) -> tuple[int, tuple[float, float, float]]:
        """Steps finished or in progress after `elapsed` seconds of a decode run (at most kmax),
        and the run of that many steps (`StepModel.decode_run`: kept from the search when it has it,
        `whole` the run of all kmax steps, and the first step's, never asked for twice)."""
        # (`step.decode_run` called on the model each time: a bound method kept in a local is a
        # generic call from compiled code, the model's method a native one)
        step = self.step
        one = have = step.decode_run(b, ctx, 1)
        have_k = 1
        # (two-value min and max are written out on the per-event path: `StepModel.decode_run`)
        guess = int(elapsed / have[0]) + 1  # steps only get longer: an upper bound
        guess = guess if guess < kmax else kmax
        if guess > 2:  # refine from the mean step time over the guess (steps grow slowly)
            have, have_k = whole if guess == kmax else step.decode_run(b, ctx, guess), guess
            mean = have[0] / guess
            refined = int(elapsed / mean) + 2
            guess = refined if refined < guess else guess
        while guess > 1:
            shorter = one if guess == 2 else step.decode_run(b, ctx, guess - 1)
            if shorter[0] <= elapsed:
                break
            guess -= 1
            have, have_k = shorter, guess
        if have_k == guess:
            return guess, have
        return guess, whole if guess == kmax else step.decode_run(b, ctx, guess)

    # --- decode batch ---------------------------------------------------------------------
    def start_decoding(self, rid: int, context: int, remaining: int) -> None:
        """A request joins the decode batch with `remaining` tokens still to produce."""
        self.sim.context[rid] = context
        self.running[rid] = self.steps_done
        self.view = None
        self.finish_of[rid] = self.steps_done + remaining
        _heappush(self.finish, (self.steps_done + remaining, rid))
        self.ctx_sum += context

    def context_of(self, rid: int) -> int:
        """Current context tokens of a running request."""
        return self.sim.context[rid] + self.steps_done - self.running[rid]

    def leave(self, rid: int) -> tuple[int, int]:
        """Take a request out of the decode batch; returns (context, tokens still to produce)."""
        # (`context_of`; item and del rather than `dict.pop`, which the compiled build calls by name)
        running, finish_of = self.running, self.finish_of
        ctx = self.sim.context[rid] + self.steps_done - running[rid]
        del running[rid]
        self.view = None
        remaining = finish_of[rid] - self.steps_done
        del finish_of[rid]
        self.ctx_sum -= ctx
        self.sim.context[rid] = ctx
        return ctx, remaining

    def advance(self, steps: int) -> None:
        """Every running request produced `steps` tokens; complete those that are done."""
        sim = self.sim
        done = self.steps_done = self.steps_done + steps
        b = len(self.running)
        self.ctx_sum += steps * b
        # (assigned, not `+=`: compiled, an augmented assignment to the host's attribute goes by name)
        sim.tokens_emitted = sim.tokens_emitted + steps * b
        if sim.preempt:
            self.kv_reserved += steps * b
            self.view = None
            if self.kv_reserved > self.kv_peak:
                self.kv_peak = self.kv_reserved
        finish, finish_of = self.finish, self.finish_of  # (completing a request changes neither object)
        while finish and finish[0][0] <= done:
            fin, rid = _heappop(finish)
            if finish_of.get(rid) != fin:
                continue
            self.leave(rid)
            sim.complete(self, rid)
        if not self.running:
            self.last_decode = -1.0

    def decode_stopped(self) -> None:
        """No batch is decoding: forget the end of its last step."""
        self.last_decode = -1.0

    def idle(self) -> bool:
        """True when the instance holds no request at all (KV on its way here counts as held)."""
        return not (
            self.inbound
            or self.waiting
            or self.prefilling
            or self.running
            or self.incoming
            or self.swapped
            or self.loading
            or self.ready
        )
