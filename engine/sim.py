"""The simpy model of LLM serving: instances, pools, the KV link, and what happened.

Each instance runs continuous batching as a small state machine on simpy's event queue: idle,
running one iteration, or running one decode jump, each ending with a timed call (`_Clock`: a
bare function call in the queue, ordered as a simpy timeout would be) that applies the work and
forms the next batch. An iteration that contains prefill work (a
whole prompt, or a chunk of one) is one event. A run of decode-only iterations with an
unchanging batch is also one event: the cost model sums its steps in closed form
(`perf.StepModel.decode_run`), and the instance jumps straight to the first completion in the
batch (or the step at which decode memory runs out). A request routed to an instance in the
middle of such a jump cuts it short: the instance works out how many steps had finished,
completes the step in progress (a request joins a continuous batch at an iteration boundary)
and forms a new batch; the jump's planned end becomes stale and is ignored. The number of events
is therefore a small multiple of the number of requests, whatever the output lengths.

Colocated instances mix decode steps and prefill chunks in one iteration (Sarathi-style; with
chunked prefill off, waiting prompts run in prefill-only iterations first, as vLLM's default
scheduler does). Prefill-only instances never chunk: with no decodes to protect, they batch
whole prompts up to the token budget (a longer prompt runs alone). Disaggregated deployments
hand a finished prompt's KV cache over the link to the decode instance the router chose, which
must have room for it; its first token is delivered when the transfer ends.

KV memory: without preemption a request reserves its prompt plus its output on admission
(TensorRT-LLM's "guaranteed no evict"), so memory never overflows. With preemption it reserves
what it holds and grows a token a step; when memory runs out a victim is recomputed or swapped
(see `engine.scenario.Scheduler`). A request that could never fit is rejected at arrival.

The prefix cache (`engine.cache`), faults (instances lost and restored) and elastic roles are
modelled here too; policies decide from read-only views (`engine.policies`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from engine import policies
from engine.cache import HBM, HOST, POOLED, LruBlocks, RequestBlocks, leading_run_in, lookup
from engine.perf import StepModel, exposed_transfer_time, kv_transfer_time
from engine.resolve import Resolved, ResolvedPool
from engine.scenario import Fault
from engine.workload import Requests

PENDING, COMPLETED, REJECTED, FAILED = 0, 1, 2, 3
SEGMENT_COLUMNS = ("server", "t0", "t1", "flops", "bytes", "kv_tokens", "batch", "waiting", "prefill_s")
"""Columns of the per-iteration records."""
OUTCOMES = {PENDING: "pending", COMPLETED: "completed", REJECTED: "rejected", FAILED: "failed"}


@dataclass(frozen=True)
class Records:
    """What happened, per request and per iteration, as arrays (the metrics module reads it)."""

    arrival_s: np.ndarray
    first_token_s: np.ndarray
    completion_s: np.ndarray
    outcome: np.ndarray
    reason: list[str]
    prefill_instance: np.ndarray
    decode_instance: np.ndarray
    transfer_s: np.ndarray
    cache_hit_tokens: np.ndarray  # (requests, 3): tokens served from HBM, host, pooled
    cache_load_s: np.ndarray
    retries: np.ndarray
    preemptions: np.ndarray
    segments: np.ndarray  # columns: SEGMENT_COLUMNS
    servers: list[tuple[int, int, str]]  # (pool index, index in pool, starting role) per server
    kv_capacity: np.ndarray  # tokens, per server
    events: int
    end_s: float
    tokens_emitted: int  # output tokens produced by iterations (checked against completed outputs)
    tokens_discarded: int  # tokens produced and then lost to a fault (retried from the start)
    kv_peak: np.ndarray  # most KV tokens reserved at once, per server
    counters: dict[str, float]


class Server:
    """One instance: its queues, KV bookkeeping, cache tiers and its simpy process."""

    __slots__ = (
        "idx", "local", "pool", "role", "step", "kv_cap", "kv_reserved", "kv_used", "waiting",
        "waiting_tokens", "tokens_by_priority", "prefilling", "running", "incoming", "busy", "jump", "token",
        "kick_pending", "up",
        "nic_free_s", "sim", "finish", "finish_of", "steps_done", "ctx_sum", "kv_peak", "hbm", "host",
        "swapped", "loading", "generation", "busy_switching", "ready", "jump_growth", "own_blocks",
        "kv_bytes",
    )  # fmt: skip

    def __init__(self, sim: Simulation, idx: int, local: int, pool: ResolvedPool) -> None:
        self.sim = sim
        self.idx = idx
        self.local = local
        self.pool = pool
        self.role: str = pool.spec.role
        self.step = StepModel(pool.instance)
        self.kv_cap = pool.instance.kv_capacity_tokens
        self.kv_reserved = 0
        self.kv_peak = 0
        self.kv_used = 0
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
        self.jump: tuple[float, int, float, int] | None = None  # (start, batch, context sum, steps)
        self.token = 0  # bumps when a scheduled end is superseded
        self.kick_pending = False
        self.jump_growth = 0  # KV tokens the decode jump under way will add (preemption mode)
        self.up = True
        self.busy_switching = False
        self.generation = 0  # bumps when the instance fails: stale callbacks are ignored
        self.nic_free_s = 0.0
        bt = sim.reqs.block_tokens
        kvb = self.kv_bytes = pool.instance.kv_bytes_per_token  # of one token, all layers
        cache = sim.scenario.cache
        self.hbm = LruBlocks(self.kv_cap // bt) if sim.cache_on and cache.hbm else None
        host_blocks = int(cache.host.capacity_gb * 1e9 // (kvb * bt)) if cache.host.enabled else 0
        self.host = LruBlocks(host_blocks) if sim.cache_on and cache.host.enabled else None
        # the block maps of the instance's own tiers (cleared in place, never replaced)
        self.own_blocks = [t.blocks for t in (self.hbm, self.host) if t is not None]

    # --- views and wake-ups ---------------------------------------------------------------
    def view(self, position: int, cached: int = 0) -> policies.InstanceView:
        """What a router sees of this instance, at `position` in the list it chooses from."""
        return policies.InstanceView(
            position,
            len(self.waiting) + len(self.incoming),
            self.waiting_tokens,
            len(self.running) + len(self.prefilling),
            self.kv_cap - self.kv_reserved,
            cached,
            self.up,
        )

    def notify(self, could_start: bool) -> None:
        """Something arrived or was freed: start work if idle, or cut a decode jump short."""
        if not self.up:
            return
        if not self.busy:
            if not self.kick_pending:  # form the batch once the current callbacks are done
                self.kick_pending = True
                self.sim.after(0.0, self._kick_cb, self.token)
        elif self.jump is not None and could_start:
            self.cut_jump()

    def queue_tokens(self, rid: int, delta: int) -> None:
        """Account prompt tokens still to prefill here (in total and by class priority)."""
        self.waiting_tokens += delta
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
        return len(self.running) + len(self.prefilling) + len(self.loading) < self.sim.max_batch

    # --- the state machine ----------------------------------------------------------------
    # An instance is idle, running one iteration, or running one decode jump. Each of those
    # ends with a simpy timeout whose callback applies the work and forms the next batch.
    # `token` bumps whenever a scheduled end is superseded (a jump cut short, a fault), so a
    # stale callback does nothing.

    def kick(self) -> None:
        """Form the next batch now and start it, or go idle."""
        sim = self.sim
        if not self.up or self.busy_switching or self.busy:
            return
        while True:
            while self.ready:
                self.start_decoding(*self.ready.pop(0))
            self._admit_swapped()
            if self.role == "decode":
                self._admit_incoming()
            chunks = self._schedule_prefill() if self.role != "decode" else []
            decodes = len(self.running) if (self.role != "prefill") and (sim.chunked or not chunks) else 0
            if decodes and sim.preempt and not self._make_room():
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
        q = sum(c[1] for c in chunks)
        pairs = sum(c[1] * (c[2] + c[1] / 2.0) for c in chunks)
        k = sum(c[2] for c in chunks)
        ctx = float(self.ctx_sum) if decodes else 0.0
        t, flops, nbytes = self.step.cost(q, pairs, k, decodes, ctx)
        work = (chunks, decodes, ctx, q, pairs, k, self.sim.env.now, t, flops, nbytes)
        self.sim.after(t, self._iteration_done, self.token, work)

    def _iteration_done(self, token: int, work: tuple[Any, ...]) -> None:
        if token != self.token:
            return
        sim = self.sim
        chunks, d, ctx, q, pairs, k, t0, t, flops, nbytes = work
        if d:  # split the iteration's time between its prefill and decode work by their costs alone
            tp = self.step.cost(q, pairs, k, 0, 0.0)[0]
            share = tp / (tp + self.step.cost(0, 0.0, 0, d, ctx)[0])
        else:
            share = 1.0
        sim.segment(
            self, t0, sim.env.now, flops, nbytes, self.kv_used + (q + d) / 2.0, d + len(chunks), share * t
        )
        self.kv_used += q + d
        if d:
            self.advance(1)
        for rid, qi, _ in chunks:
            sim.prefilled[rid] += qi
            self.queue_tokens(rid, -qi)
            if sim.prefilled[rid] >= sim.pf_target[rid]:
                self.prefilling.remove(rid)
                sim.prefill_done(self, rid)
        self.busy = False
        self.kick()

    def _start_jump(self) -> None:
        sim = self.sim
        b = len(self.running)
        kmax = self._next_finish() - self.steps_done
        if sim.preempt:
            kmax = max(1, min(kmax, (self.kv_cap - self.kv_reserved) // b))
        ctx = float(self.ctx_sum)
        run = self.step.decode_run(b, ctx, kmax)
        self.jump_growth = kmax * b
        self.jump = (sim.env.now, b, ctx, kmax)
        sim.after(run[0], self._jump_done, self.token, (sim.env.now, b, kmax, run))

    def cut_jump(self) -> None:
        """A request can join: end the decode jump at the boundary of the step under way."""
        assert self.jump is not None
        t0, b, ctx, kmax = self.jump
        self.jump = None
        steps = self._steps_started(b, ctx, self.sim.env.now - t0, kmax)
        if steps == kmax:
            return  # the jump ends with that very step anyway
        run = self.step.decode_run(b, ctx, steps)
        self.token += 1  # supersede the jump's planned end
        self.sim.after(
            max(0.0, t0 + run[0] - self.sim.env.now), self._jump_done, self.token, (t0, b, steps, run)
        )

    def _jump_done(self, token: int, work: tuple[Any, ...]) -> None:
        if token != self.token:
            return
        t0, b, steps, run = work
        self.jump = None
        self.jump_growth = 0
        _, flops, nbytes = run
        self.sim.segment(self, t0, self.sim.env.now, flops, nbytes, self.kv_used + steps * b / 2.0, b)
        self.kv_used += steps * b
        self.advance(steps)
        self.busy = False
        self.kick()

    def _steps_started(self, b: int, ctx: float, elapsed: float, kmax: int) -> int:
        """Steps finished or in progress after `elapsed` seconds of a decode run (at most kmax)."""
        run = self.step.decode_run
        first = run(b, ctx, 1)[0]
        guess = min(kmax, int(elapsed / first) + 1)  # steps only get longer: an upper bound
        if guess > 2:  # refine from the mean step time over the guess (steps grow slowly)
            mean = run(b, ctx, guess)[0] / guess
            guess = min(guess, int(elapsed / mean) + 2)
        while guess > 1 and run(b, ctx, guess - 1)[0] > elapsed:
            guess -= 1
        return guess

    # --- decode batch ---------------------------------------------------------------------
    def _next_finish(self) -> int:
        while self.finish and self.finish_of.get(self.finish[0][1]) != self.finish[0][0]:
            heapq.heappop(self.finish)  # a preempted request's stale entry
        return self.finish[0][0]

    def start_decoding(self, rid: int, context: int, remaining: int) -> None:
        """A request joins the decode batch with `remaining` tokens still to produce."""
        self.sim.context[rid] = context
        self.running[rid] = self.steps_done
        self.finish_of[rid] = self.steps_done + remaining
        heapq.heappush(self.finish, (self.steps_done + remaining, rid))
        self.ctx_sum += context

    def context_of(self, rid: int) -> int:
        """Current context tokens of a running request."""
        return self.sim.context[rid] + self.steps_done - self.running[rid]

    def leave(self, rid: int) -> tuple[int, int]:
        """Take a request out of the decode batch; returns (context, tokens still to produce)."""
        ctx = self.context_of(rid)
        self.running.pop(rid)
        remaining = self.finish_of.pop(rid) - self.steps_done
        self.ctx_sum -= ctx
        self.sim.context[rid] = ctx
        return ctx, remaining

    def advance(self, steps: int) -> None:
        """Every running request produced `steps` tokens; complete those that are done."""
        sim = self.sim
        self.steps_done += steps
        b = len(self.running)
        self.ctx_sum += steps * b
        sim.tokens_emitted += steps * b
        if sim.preempt:
            self.kv_reserved += steps * b
            if self.kv_reserved > self.kv_peak:
                self.kv_peak = self.kv_reserved
        while self.finish and self.finish[0][0] <= self.steps_done:
            fin, rid = heapq.heappop(self.finish)
            if self.finish_of.get(rid) != fin:
                continue
            self.leave(rid)
            sim.complete(self, rid)

    def _make_room(self) -> bool:
        """Preempt victims until the next decode step fits in memory; False if any were taken."""
        sim = self.sim
        took = False
        while self.running and self.kv_reserved + len(self.running) > self.kv_cap:
            victim = min(
                self.running,
                key=lambda r: (sim.priority[r], -sim.arrival[r], -r),
            )
            sim.preempt_request(self, victim)
            took = True
        return not took

    # --- batch formation ------------------------------------------------------------------
    def _schedule_prefill(self) -> list[tuple[int, int, int]]:
        """Prefill work of the next iteration: continuing prompts, then new ones from the queue.

        A waiting request is admitted (and its KV reserved) only when this iteration has token
        budget for it, as vLLM's scheduler does, so the backlog stays in the queue, where the
        queue order decides who goes next.
        """
        sim = self.sim
        mixed_chunks = sim.chunked and self.role == "mixed"
        budget = sim.token_budget - (len(self.running) if mixed_chunks else 0)
        chunks: list[tuple[int, int, int]] = []
        for rid in self.prefilling:
            if budget <= 0:
                break
            left = sim.pf_target[rid] - sim.prefilled[rid]
            if mixed_chunks:
                q = min(left, sim.chunk_tokens, budget)
            elif left <= budget or not chunks:
                q = left
            else:
                continue
            chunks.append((rid, q, sim.prefilled[rid]))
            budget -= q
        # with preemption, keep room for every running request's next token (a watermark)
        spare = len(self.running) + 1 if sim.preempt and self.role == "mixed" else 0
        while self.waiting and budget > 0 and self.has_slot():
            rid = self.waiting[0][1]
            need = sim.reserve_tokens(rid, self.role)
            if self.kv_reserved + need + spare > self.kv_cap:
                break
            if not mixed_chunks and chunks and sim.pf_target[rid] > budget:
                break  # a whole prompt that does not fit this iteration waits for the next
            heapq.heappop(self.waiting)
            self.kv_reserved += need
            if self.kv_reserved > self.kv_peak:
                self.kv_peak = self.kv_reserved
            if self.hbm is not None:
                self.hbm.shrink((self.kv_cap - self.kv_reserved) // sim.reqs.block_tokens)
            load_s = sim.use_cache(self, rid) if sim.cache_on else 0.0
            if load_s > 0:
                self.loading.add(rid)
                sim.after(load_s, self._loaded, rid, self.generation)
                continue
            self.prefilling.append(rid)
            sim.prefill_start[rid] = sim.env.now
            left = sim.pf_target[rid] - sim.prefilled[rid]
            q = min(left, sim.chunk_tokens, budget) if mixed_chunks else left
            chunks.append((rid, q, sim.prefilled[rid]))
            budget -= q
        return chunks

    def _loaded(self, rid: int, generation: int) -> None:
        if generation != self.generation:
            return
        self.loading.discard(rid)
        self.prefilling.append(rid)
        self.sim.prefill_start[rid] = self.sim.env.now
        self.notify(True)

    def _admit_incoming(self) -> None:
        sim = self.sim
        while self.incoming and len(self.running) + len(self.loading) < sim.max_batch:
            rid = self.incoming.pop(0)
            self.start_decoding(rid, sim.prompt[rid], sim.output[rid] - 1)

    def _admit_swapped(self) -> None:
        """Bring back preempted requests (before new ones) once their memory is free again."""
        sim = self.sim
        while self.swapped and len(self.running) + len(self.loading) < sim.max_batch:
            rid, ctx, remaining = self.swapped[0]
            if self.kv_reserved + ctx + len(self.running) + 1 > self.kv_cap:
                break
            self.swapped.pop(0)
            self.kv_reserved += ctx
            if self.kv_reserved > self.kv_peak:
                self.kv_peak = self.kv_reserved
            self.loading.add(rid)
            if sim.swap:
                delay = sim.swap_time(self, ctx)
            else:  # recompute the context's KV in place (a prefill of ctx tokens)
                delay = float(self.step.cost(ctx, ctx * ctx / 2.0, 0, 0, 0.0)[0])
            sim.after(delay, self._resumed, (rid, ctx, remaining), self.generation)

    def _resumed(self, item: tuple[int, int, int], generation: int) -> None:
        if generation != self.generation:
            return
        rid, ctx, _ = item
        self.loading.discard(rid)
        self.kv_used += ctx
        self.ready.append(item)  # joins at the next iteration boundary, not mid-iteration
        self.notify(True)

    # --- faults and role switches ---------------------------------------------------------
    def take_down(self) -> list[int]:
        """Lose the instance: return every request it held; it serves nothing until brought up."""
        sim = self.sim
        held = [rid for _, rid in self.waiting] + list(self.prefilling) + list(self.running)
        held += list(self.incoming) + [rid for rid, _, _ in self.swapped] + sorted(self.loading)
        held += [rid for rid, _, _ in self.ready]
        # tokens already streamed by requests that will be retried from the start
        left: dict[int, int] = {rid: self.finish_of[rid] - self.steps_done for rid in self.running}
        left.update({rid: remaining for rid, _, remaining in self.swapped + self.ready})
        left.update({rid: sim.output[rid] - 1 for rid in self.incoming})
        for rid in held:
            if rid not in left and sim.resume[rid] >= 0:
                left[rid] = sim.resume[rid]
        for rid, remaining in left.items():
            sim.tokens_discarded += sim.output[rid] - remaining
        self.up = False
        self.sim.roles_changed()
        self.generation += 1
        self.waiting, self.prefilling, self.incoming, self.swapped = [], [], [], []
        self.running, self.finish, self.finish_of, self.loading, self.ready = {}, [], {}, set(), []
        self.waiting_tokens = self.kv_reserved = self.kv_used = self.ctx_sum = 0
        self.tokens_by_priority = {}
        if self.hbm is not None:
            self.hbm.clear()
        if self.host is not None:
            self.host.clear()
        self.busy = False
        self.jump = None
        self.jump_growth = 0
        self.kick_pending = False
        self.token += 1  # whatever was under way never finishes
        return list(dict.fromkeys(held))

    def bring_up(self) -> None:
        """The instance is back (empty)."""
        self.up = True
        self.busy_switching = False
        self.sim.roles_changed()
        self.notify(True)

    def idle(self) -> bool:
        """True when the instance holds no request at all."""
        return not (
            self.waiting
            or self.prefilling
            or self.running
            or self.incoming
            or self.swapped
            or self.loading
            or self.ready
        )


class Simulation:
    """All mutable state of one run; `run()` returns its Records."""

    def __init__(self, resolved: Resolved, reqs: Requests) -> None:
        sc = resolved.scenario
        self.resolved = resolved
        self.scenario = sc
        self.reqs = reqs
        self.env = _Clock()
        self.events = 0
        self.tokens_emitted = 0
        self.tokens_discarded = 0
        n = len(reqs)
        self.n = n
        # read-only per-request inputs as Python lists: scalar reads from numpy arrays cost
        # several times more, and the event handlers read them constantly
        self.prompt: list[int] = reqs.prompt_tokens.tolist()
        self.output: list[int] = reqs.output_tokens.tolist()
        # per-request state lives in Python lists while the run goes on (a scalar read or write
        # of a numpy array costs several times more, and handlers do little else); `run()`
        # hands numpy arrays to the records
        nan = math.nan
        self.pf_target: list[int] = reqs.prompt_tokens.tolist()
        self.arrival: list[float] = reqs.arrival_s.astype(float).tolist()
        self.prefilled: list[int] = [0] * n
        self.context: list[int] = [0] * n
        self.first_token: list[float] = [nan] * n
        self.completion: list[float] = [nan] * n
        self.outcome: list[int] = [PENDING] * n
        self.reason = [""] * n
        self.prefill_inst: list[int] = [-1] * n
        self.decode_inst: list[int] = [-1] * n
        self.transfer: list[float] = [0.0] * n
        self.prefill_start: list[float] = [0.0] * n
        self.hits: list[tuple[int, ...]] = [(0, 0, 0)] * n
        self.load_s: list[float] = [0.0] * n
        self.retries: list[int] = [0] * n
        self.preemptions: list[int] = [0] * n
        self.resume: list[int] = [-1] * n  # tokens left after a recompute, else -1
        self.views: list[policies.RequestView | None] = [None] * n
        classes = sc.workload.classes
        self.priority: list[int] = [classes[c].priority for c in reqs.cls.tolist()]
        self.top_priority = max(c.priority for c in classes)
        b = sc.deployment.batching
        self.max_batch = b.max_batch
        self.token_budget = b.token_budget
        self.chunked = b.chunked_prefill
        self.chunk_tokens = b.chunk_tokens
        self.preempt = sc.scheduler.preemption != "none"
        self.swap = sc.scheduler.preemption == "swap"
        self.router = policies.build_router(sc.scheduler.router.as_dict())
        self.queue = policies.build_queue(sc.scheduler.queue.as_dict())
        self.by_priority = isinstance(self.queue, policies.StrictPriority)
        self.admission = policies.build_admission(sc.scheduler.admission.as_dict())
        self.cache_on = sc.cache.enabled
        self.pooled = (
            LruBlocks(
                int(
                    sc.cache.pooled.capacity_gb
                    * 1e9
                    // (resolved.pools[0].instance.kv_bytes_per_token * reqs.block_tokens)
                )
            )
            if self.cache_on and sc.cache.pooled.enabled
            else None
        )
        self.ticks: dict[str, int] = {}
        self._live: dict[str, list[Server]] | None = None  # servers_of's lists, until roles change
        self.ended = 0  # requests closed so far
        self.block_names = RequestBlocks(reqs)  # each request's block hashes, built on first use
        self.servers: list[Server] = []
        for pool in resolved.pools:
            for j in range(pool.spec.count):
                self.servers.append(Server(self, len(self.servers), j, pool))
        self.disaggregated = sc.deployment.mode == "disaggregated"
        self.decode_cap = max(s.kv_cap for s in self.servers if s.role in ("decode", "mixed"))
        self.prefill_cap = max(s.kv_cap for s in self.servers if s.role in ("prefill", "mixed"))
        self.pending_handoff: list[tuple[Server, int]] = []
        self.segments: list[tuple[float, ...]] = []
        link = sc.deployment.link
        self.link_latency_s = link.latency_ms / 1000.0
        self.link_overlap = link.overlap
        self.link_gb_s = link.bandwidth_gb_s
        self.counters: dict[str, float] = {
            "preemptions": 0, "recomputed_tokens": 0, "swapped_bytes": 0, "retried": 0, "role_switches": 0,
            "transfer_tokens_saved": 0,
        }  # fmt: skip
        self.issued = n
        self.closed = reqs.closed_loop_clients > 0
        if self.closed:
            self.issued = 0
            self.arrival = [math.nan] * n

    # --- helpers --------------------------------------------------------------------------
    def servers_of(self, role: str) -> list[Server]:
        """Live servers currently in a role (a shared list: do not modify it)."""
        live = self._live
        if live is None:
            live = self._live = {
                r: [s for s in self.servers if s.role == r and s.up and not s.busy_switching]
                for r in ("prefill", "decode", "mixed")
            }
            live["entry"] = [
                s for s in self.servers if s.role in ("mixed", "prefill") and s.up and not s.busy_switching
            ]
        return live[role]

    def entry_servers(self) -> list[Server]:
        """Live servers that take new requests (a shared list: do not modify it)."""
        return self.servers_of("entry")

    def roles_changed(self) -> None:
        """An instance failed, came back or started switching roles: recompute the live lists."""
        self._live = None

    def after(self, delay: float, fn: Any, *args: Any) -> None:
        """Call `fn(*args)` after `delay` seconds."""
        self.events += 1
        self.env.call_later(delay if delay > 0.0 else 0.0, fn, args)

    def segment(
        self, srv: Server, t0: float, t1: float, flops: float, nbytes: float, kv: float, batch: int,
        prefill_s: float = 0.0,
    ) -> None:  # fmt: skip
        """Record one iteration (or decode jump) for the time series."""
        waiting = len(srv.waiting) + len(srv.incoming)
        self.segments.append((srv.idx, t0, t1, flops, nbytes, kv, batch, waiting, prefill_s))

    def reserve_tokens(self, rid: int, role: str) -> int:
        """KV tokens a request reserves on admission to an instance of a role."""
        if role == "prefill" or self.preempt:
            return self.pf_target[rid]
        return self.pf_target[rid] + self.output[rid]

    def release_tokens(self, rid: int, role: str) -> int:
        """KV tokens a finished request gives back."""
        if role == "prefill":
            return self.prompt[rid]
        if self.preempt:
            return self.context[rid]
        return self.prompt[rid] + self.output[rid]

    def request_view(self, rid: int) -> policies.RequestView:
        """What a policy sees of a request (built once per request)."""
        view = self.views[rid]
        if view is None:
            c = int(self.reqs.cls[rid])
            spec = self.scenario.workload.classes[c]
            view = self.views[rid] = policies.RequestView(
                rid, c, spec.priority, self.arrival[rid], self.prompt[rid], self.output[rid],
                self.arrival[rid] + spec.slo.ttft_ms / 1000.0, self.top_priority,
            )  # fmt: skip
        return view

    def route(self, rid: int, servers: list[Server], key: str) -> Server:
        """The server the router picks among `servers`."""
        tick = self.ticks.get(key, 0)
        self.ticks[key] = tick + 1
        if len(servers) == 1:
            return servers[0]
        if self.router.needs_prefix and self.cache_on:
            blocks = self.block_names.prompt_blocks(rid)
            bt = self.reqs.block_tokens
            # each instance's own tiers: the pooled store serves every instance alike
            views = [s.view(i, leading_run_in(blocks, s.own_blocks) * bt) for i, s in enumerate(servers)]
        else:
            views = [s.view(i) for i, s in enumerate(servers)]
        return servers[self.router.choose(self.request_view(rid), views, tick)]

    def end(self, rid: int, outcome: int, reason: str = "") -> None:
        """Close a request exactly once."""
        assert self.outcome[rid] == PENDING, f"request {rid} ended twice"
        self.outcome[rid] = outcome
        self.ended += 1
        self.reason[rid] = reason
        if outcome == COMPLETED:
            self.completion[rid] = self.env.now
        if self.closed:
            self.next_from_client(self.env.now)

    # --- cache ----------------------------------------------------------------------------
    def use_cache(self, srv: Server, rid: int) -> float:
        """Look the prompt up in the tiers; skip the prefix found; return the load time."""
        if self.resume[rid] >= 0:
            return 0.0
        blocks = self.block_names.prompt_blocks(rid)
        found = lookup(blocks, (srv.hbm, srv.host, self.pooled))
        bt = self.reqs.block_tokens
        total = sum(found)
        if total == 0:
            return 0.0
        hit = min(total * bt, self.prompt[rid] - 1)
        scale = hit / (total * bt)
        tokens = [int(f * bt * scale) for f in found]
        tokens[HBM] = hit - tokens[HOST] - tokens[POOLED]
        self.hits[rid] = tuple(tokens)
        for tier in (srv.hbm, srv.host, self.pooled):
            if tier is not None:
                tier.touch(blocks[:total])
        self.prefilled[rid] = hit
        srv.kv_used += hit
        srv.queue_tokens(rid, -hit)
        kvb = srv.kv_bytes
        cache = self.scenario.cache
        load = tokens[HOST] * kvb / (cache.host.bandwidth_gb_s * 1e9) + tokens[POOLED] * kvb / (
            cache.pooled.bandwidth_gb_s * 1e9
        )
        self.load_s[rid] = load
        return load

    def remember(self, srv: Server, rid: int, full: bool) -> None:
        """Put a request's blocks into the instance's tiers and the pool.

        At the end of a prefill: the prompt's blocks. At completion: the blocks the answer added
        (the prompt's are already there); a decode instance, which received the prompt's KV over
        the link, keeps all of them in HBM so the next turn sends only what it lacks.
        """
        blocks = self.block_names.full_blocks(rid) if full else self.block_names.prompt_blocks(rid)
        new = blocks
        if full:
            new = blocks[len(self.block_names.prompt_blocks(rid)) :]
        if srv.hbm is not None:
            srv.hbm.capacity = max(0, (srv.kv_cap - srv.kv_reserved) // self.reqs.block_tokens)
            srv.hbm.insert(blocks if srv.role == "decode" else new)
        if not new:
            return
        if srv.host is not None and srv.role != "decode":
            srv.host.insert(new)
        if self.pooled is not None:
            self.pooled.insert(new)

    # --- request life cycle ---------------------------------------------------------------
    def arrive(self, rid: int, retry: bool = False) -> None:
        """A request arrives (or is retried): admission, routing, queueing."""
        need = self.prompt[rid] + self.output[rid]
        if need > self.decode_cap or self.prompt[rid] > self.prefill_cap:
            self.end(rid, REJECTED, "too_long_for_kv")
            return
        entry = self.entry_servers()
        if not entry:
            self.end(rid, FAILED if retry else REJECTED, "no_instance_up")
            return
        srv = self.route(rid, entry, "entry")
        view = self.request_view(rid)
        if not retry and not isinstance(self.admission, policies.AdmitAll):
            queued = sum(len(s.waiting) for s in entry)
            predicted = self.predicted_ttft(srv, rid)
            reason = self.admission.reject(view, queued, predicted)
            if reason:
                self.end(rid, REJECTED, reason)
                return
        heapq.heappush(srv.waiting, (self.queue.key(view), rid))
        srv.queue_tokens(rid, self.pf_target[rid])
        self.prefill_inst[rid] = srv.idx
        if not self.disaggregated:
            self.decode_inst[rid] = srv.idx
        could = srv.has_slot() and srv.kv_reserved + self.reserve_tokens(rid, srv.role) <= srv.kv_cap
        srv.notify(could)

    def predicted_ttft(self, srv: Server, rid: int) -> float:
        """What admission control expects this request's TTFT to be on `srv`.

        The prompt tokens queued ahead of it (under strict priority, only those of its own and
        higher priorities) plus its own, at the prefill rate the instance has
        now: a full token budget shared with the decodes it is running (chunked prefill), each
        iteration timed by the cost model; and never less than one chunk of its own prompt per
        iteration.
        """
        d = len(srv.running) if srv.role == "mixed" and self.chunked else 0
        q = max(float(self.token_budget - d), 1.0)
        prompt = float(self.prompt[rid])
        t_iter = srv.step.cost(
            q, q * (prompt / 2.0 + q / 2.0), prompt / 2.0, d, float(srv.ctx_sum) if d else 0.0
        )[0]
        # a prompt gets at most one chunk per iteration, however short the queue
        own = 0.0
        if srv.role == "mixed" and self.chunked:
            c = float(min(self.chunk_tokens, prompt))
            ctx = float(srv.ctx_sum) if d else 0.0
            own = (
                math.ceil(prompt / c)
                * srv.step.cost(c, c * (prompt / 2.0 + c / 2.0), prompt / 2.0, d, ctx)[0]
            )
        return max((srv.tokens_ahead(rid) + prompt) * t_iter / q, own)

    def prefill_done(self, srv: Server, rid: int) -> None:
        """A prompt is fully prefilled: first token (colocated) or hand-off (disaggregated)."""
        if self.cache_on and self.resume[rid] < 0:
            self.remember(srv, rid, full=False)
        if srv.role == "mixed":
            if self.resume[rid] >= 0:  # a recomputed request picks up where it was preempted
                remaining = self.resume[rid]
                self.resume[rid] = -1
                srv.start_decoding(rid, self.pf_target[rid], remaining)
                return
            self.first_token[rid] = self.env.now
            self.tokens_emitted += 1
            if self.output[rid] <= 1:
                self.context[rid] = self.prompt[rid]
                self.release(srv, rid)
                self.end(rid, COMPLETED)
            else:
                srv.start_decoding(rid, self.prompt[rid], self.output[rid] - 1)
            return
        self.handoff(srv, rid)

    def handoff(self, srv: Server, rid: int) -> None:
        """Reserve room on a decode instance and send the KV cache over the link."""
        need = self.reserve_tokens(rid, "decode") if not self.preempt else self.prompt[rid]
        if self.preempt:  # room also for the jump under way and every request's next token
            fits = [
                d for d in self.servers_of("decode")
                if d.kv_reserved + d.jump_growth + need + len(d.running) + 1 <= d.kv_cap
            ]  # fmt: skip
        else:
            fits = [d for d in self.servers_of("decode") if d.kv_reserved + need <= d.kv_cap]
        if not fits:
            self.pending_handoff.append((srv, rid))
            return
        dst = self.route(rid, fits, "decode")
        dst.kv_reserved += need
        if dst.kv_reserved > dst.kv_peak:
            dst.kv_peak = dst.kv_reserved
        self.decode_inst[rid] = dst.idx
        inst = srv.pool.instance
        tokens = float(self.prompt[rid])
        if self.cache_on and dst.hbm is not None:  # only blocks the decode side lacks cross the link
            held = lookup(self.block_names.prompt_blocks(rid), (dst.hbm,))[0] * self.reqs.block_tokens
            held = min(held, self.prompt[rid])
            tokens -= held
            self.counters["transfer_tokens_saved"] += held
        bw = self.link_gb_s or (srv.pool.hardware.scale_out_gb_s * inst.tp)
        full = kv_transfer_time(srv.kv_bytes, tokens, bw, self.link_latency_s)
        prefill_s = max(self.env.now - self.prefill_start[rid], 0.0)
        exposed = exposed_transfer_time(full, prefill_s, inst.model.layers, self.link_overlap)
        start = max(self.env.now - (full - exposed), srv.nic_free_s)
        end = max(start + full, self.env.now)
        srv.nic_free_s = end
        self.transfer[rid] = end - self.env.now
        self.after(end - self.env.now, self.transferred, srv, dst, rid, srv.generation, dst.generation)

    def transferred(self, src: Server, dst: Server, rid: int, src_gen: int, dst_gen: int) -> None:
        """The KV cache has arrived: free the prefill side, start decoding."""
        if src.generation == src_gen:
            src.kv_reserved -= self.prompt[rid]
            src.kv_used -= self.prompt[rid]
            src.notify(True)
        if src.generation != src_gen or dst.generation != dst_gen:
            if dst.generation == dst_gen:
                dst.kv_reserved -= (
                    self.reserve_tokens(rid, "decode") if not self.preempt else self.prompt[rid]
                )
            self.lost(rid)
            return
        self.first_token[rid] = self.env.now
        self.tokens_emitted += 1
        self.context[rid] = self.prompt[rid]
        dst.kv_used += self.prompt[rid]
        if self.output[rid] <= 1:
            self.release(dst, rid)
            self.end(rid, COMPLETED)
            return
        dst.incoming.append(rid)
        dst.notify(len(dst.running) < self.max_batch)

    def release(self, srv: Server, rid: int) -> None:
        """Give back a request's KV reservation and memory on its instance."""
        srv.kv_reserved -= self.release_tokens(rid, srv.role)
        srv.kv_used -= self.context[rid]
        if srv.role == "decode":
            self.retry_handoffs()
        srv.notify(True)

    def complete(self, srv: Server, rid: int) -> None:
        """A request produced its last token."""
        if self.cache_on:
            self.remember(srv, rid, full=True)
            self.block_names.drop(rid)
        self.release(srv, rid)
        self.end(rid, COMPLETED)

    def retry_handoffs(self) -> None:
        """Decode memory was freed: hand off the prompts that were waiting for room."""
        pending, self.pending_handoff = self.pending_handoff, []
        for srv, rid in pending:
            if srv.up:
                self.handoff(srv, rid)

    # --- preemption -----------------------------------------------------------------------
    def swap_time(self, srv: Server, tokens: int) -> float:
        """Seconds to move `tokens` tokens of KV between HBM and host memory over PCIe."""
        inst = srv.pool.instance
        return tokens * inst.kv_bytes_per_token / (srv.pool.hardware.pcie_gb_s * 1e9 * inst.tp)

    def preempt_request(self, srv: Server, rid: int) -> None:
        """Take a running request off the instance to free its memory (recompute or swap)."""
        ctx, remaining = srv.leave(rid)
        srv.kv_reserved -= ctx
        srv.kv_used -= ctx
        self.preemptions[rid] += 1
        self.counters["preemptions"] += 1
        if self.swap:
            self.counters["swapped_bytes"] += 2.0 * ctx * srv.pool.instance.kv_bytes_per_token
        else:
            self.counters["recomputed_tokens"] += ctx
        if self.swap or srv.role == "decode":
            # swapped out to host memory, or (decode instance) recomputed in place once memory frees
            srv.swapped.append((rid, ctx, remaining))
            return
        self.pf_target[rid] = ctx
        self.prefilled[rid] = 0
        self.resume[rid] = remaining
        heapq.heappush(srv.waiting, (self.queue.key(self.request_view(rid)), rid))
        srv.queue_tokens(rid, ctx)

    # --- faults and elastic roles ---------------------------------------------------------
    def lost(self, rid: int, policy: str | None = None) -> None:
        """A request's instance failed: retry it from the start or fail it, per the fault."""
        if self.outcome[rid] != PENDING:
            return
        if (policy or self.fault_policy) == "fail":
            self.end(rid, FAILED, "instance_lost")
            return
        self.retries[rid] += 1
        self.counters["retried"] += 1
        self.pf_target[rid] = self.prompt[rid]
        self.prefilled[rid] = 0
        self.resume[rid] = -1
        self.first_token[rid] = math.nan
        self.arrive(rid, retry=True)

    def fault(self, spec: Fault) -> Any:
        """At spec.at_s, take instances of a pool down; bring them back after spec.duration_s."""
        yield self.env.timeout(spec.at_s)
        pool = next(p for p in self.resolved.pools if p.spec.name == spec.pool)
        victims = [s for s in self.servers if s.pool is pool and s.up][: spec.instances]
        self.fault_policy = spec.in_flight
        held: list[int] = []
        for srv in victims:
            held += srv.take_down()
        stranded = [r for s, r in self.pending_handoff if not s.up]
        self.pending_handoff = [(s, r) for s, r in self.pending_handoff if s.up]
        for rid in held + stranded:
            self.lost(rid, spec.in_flight)
        if spec.duration_s is not None:
            yield self.env.timeout(spec.duration_s)
            for srv in victims:
                srv.bring_up()
            self.retry_handoffs()

    def elastic(self) -> Any:
        """Move an idle instance to the role whose queue is over the threshold."""
        cfg = self.scenario.scheduler.elastic
        horizon = self.scenario.duration_s
        limit = 20.0 * horizon + 3600.0
        while (self.env.now < horizon or self.ended < self.issued) and self.env.now < limit:
            yield self.env.timeout(cfg.check_s)
            if self.env.now > horizon and not any(s.waiting for s in self.servers):
                break
            prefill = self.servers_of("prefill")
            decode = self.servers_of("decode")
            queued = sum(len(s.waiting) for s in prefill)
            if prefill and len(decode) > 1 and queued > cfg.threshold * len(prefill):
                idle = [s for s in decode if s.idle()]
                if idle:
                    yield from self._switch(idle[-1], "prefill", cfg.switch_s)
                    continue
            if decode and len(prefill) > 1 and len(self.pending_handoff) > cfg.threshold * len(decode):
                idle = [s for s in prefill if s.idle()]
                if idle:
                    yield from self._switch(idle[-1], "decode", cfg.switch_s)

    def _switch(self, srv: Server, role: str, switch_s: float) -> Any:
        srv.busy_switching = True
        self.roles_changed()
        if srv.hbm is not None:
            srv.hbm.clear()
        self.counters["role_switches"] += 1
        yield self.env.timeout(switch_s)
        srv.role = role
        srv.bring_up()
        if role == "decode":
            self.retry_handoffs()
        srv.notify(True)

    # --- arrivals -------------------------------------------------------------------------
    def arrivals_from(self, rid: int) -> None:
        """Open loop: issue every request due now from `rid` on, then wait for the next one."""
        now = self.env.now
        while rid < self.n:
            dt = self.arrival[rid] - now
            if dt > 0:
                self.after(dt, self._arrival_due, rid)
                return
            self.arrive(rid)
            rid += 1

    def _arrival_due(self, rid: int) -> None:
        self.arrive(rid)
        self.arrivals_from(rid + 1)

    def next_from_client(self, now: float) -> None:
        """Closed loop: a client whose request ended sends its next one after a think time."""
        if self.issued >= self.n:
            return
        think = self.reqs.think_time_s
        delay = float(self.rng.exponential(think)) if think > 0 else 0.0
        if now + delay >= self.scenario.duration_s:
            return
        rid = self.issued
        self.issued += 1
        self.arrival[rid] = now + delay
        self.after(delay, self.arrive, rid)

    def run(self) -> Records:
        """Simulate until every issued request has ended."""
        self.fault_policy = "retry"
        if self.closed:
            self.rng = np.random.default_rng([self.scenario.seed, 0xC105ED])
            for _ in range(min(self.reqs.closed_loop_clients, self.n)):
                self.next_from_client(0.0)
        else:
            self.arrivals_from(0)
        for spec in self.scenario.faults:
            self.env.process(self.fault(spec))
        if self.scenario.scheduler.elastic.enabled:
            self.env.process(self.elastic())
        self.env.run_all()
        n = self.issued
        segs = np.asarray(self.segments, dtype=float).reshape(-1, len(SEGMENT_COLUMNS))
        return Records(
            arrival_s=np.array(self.arrival[:n], dtype=float),
            first_token_s=np.array(self.first_token[:n], dtype=float),
            completion_s=np.array(self.completion[:n], dtype=float),
            outcome=np.array(self.outcome[:n], dtype=np.int8),
            reason=self.reason[:n],
            prefill_instance=np.array(self.prefill_inst[:n], dtype=np.int64),
            decode_instance=np.array(self.decode_inst[:n], dtype=np.int64),
            transfer_s=np.array(self.transfer[:n], dtype=float),
            cache_hit_tokens=np.array(self.hits[:n], dtype=np.int64).reshape(-1, 3),
            cache_load_s=np.array(self.load_s[:n], dtype=float),
            retries=np.array(self.retries[:n], dtype=np.int64),
            preemptions=np.array(self.preemptions[:n], dtype=np.int64),
            segments=segs,
            servers=[(s.pool.index, s.local, s.pool.spec.role) for s in self.servers],
            kv_capacity=np.array([s.kv_cap for s in self.servers], dtype=float),
            events=self.events,
            end_s=float(self.env.now) if math.isfinite(self.env.now) else 0.0,
            tokens_emitted=self.tokens_emitted,
            tokens_discarded=self.tokens_discarded,
            kv_peak=np.array([s.kv_peak for s in self.servers], dtype=float),
            counters=dict(self.counters),
        )


class _Clock(simpy.Environment):
    """simpy's environment with a cheaper path for the simulator's own timed calls.

    Processes (arrivals, faults, role switches) and their events run as in simpy. The state
    machines' timed calls go on the same queue, in the order a Timeout would take (its time,
    normal priority, the next event id), but as a bare (function, arguments) pair that
    `run_all` calls directly: no Event object and no callback list for most of a run's events.
    """

    def call_later(self, delay: float, fn: Any, args: tuple[Any, ...]) -> None:
        """Call `fn(*args)` after `delay` (>= 0) seconds."""
        queue: list[Any] = self._queue
        heapq.heappush(queue, (self._now + delay, simpy.events.NORMAL, next(self._eid), (fn, args)))

    def run_all(self) -> None:
        """Process every scheduled event (simpy's `run()` without `until`)."""
        queue: list[Any] = self._queue
        pop = heapq.heappop
        while queue:
            self._now, _, _, event = pop(queue)
            if type(event) is tuple:
                event[0](*event[1])
                continue
            callbacks, event.callbacks = event.callbacks, None
            for callback in callbacks:
                callback(event)
            if not event._ok and not hasattr(event, "_defused"):
                raise event._value
