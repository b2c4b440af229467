"""The simpy model of LLM serving: instances, pools, the KV link, and what happened.

Each instance is one simpy process running continuous batching. An iteration that contains
prefill work (a whole prompt, or a chunk of one) is one event. A run of decode-only iterations
with an unchanging batch is also one event: the cost model sums its steps in closed form
(`perf.StepModel.decode_run`), and the process jumps straight to the first completion in the
batch. A request routed to an instance in the middle of such a jump interrupts it; the
instance works out how many steps had finished, completes the step in progress (a request joins
a continuous batch at an iteration boundary) and forms a new batch. The number of events is
therefore a small multiple of the number of requests, whatever the output lengths.

Colocated instances mix decode steps and prefill chunks in one iteration (Sarathi-style; with
chunked prefill off, waiting prompts run in prefill-only iterations first, as vLLM's default
scheduler does). Prefill-only instances never chunk: with no decodes to protect, they batch
whole prompts up to the token budget (a longer prompt runs alone). Disaggregated deployments run prefill-only instances and decode-only instances:
a finished prompt's KV cache crosses the link to the decode instance the router chose, which
must have room for it; its first token is delivered when the transfer ends.

KV memory: a request reserves its prompt plus its output on admission (TensorRT-LLM's
"guaranteed no evict" policy), so memory never overflows and nothing is evicted; requests that
do not fit wait in the queue. A request that could never fit is rejected at arrival.
"""

from __future__ import annotations

import functools
import heapq
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from engine import policies
from engine.perf import StepModel
from engine.resolve import Resolved, ResolvedPool
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
    segments: np.ndarray  # columns: SEGMENT_COLUMNS
    servers: list[tuple[int, int, str]]  # (pool index, index in pool, role) per server
    kv_capacity: np.ndarray  # tokens, per server
    events: int
    end_s: float
    tokens_emitted: int  # output tokens produced by iterations (checked against completed outputs)
    kv_peak: np.ndarray  # most KV tokens reserved at once, per server


class Server:
    """One instance: its queues, KV bookkeeping and its simpy process."""

    __slots__ = (
        "idx", "local", "pool", "role", "step", "kv_cap", "kv_reserved", "kv_used", "waiting",
        "waiting_tokens", "prefilling", "running", "incoming", "proc", "wake", "in_jump", "up",
        "nic_free_s", "sim", "seq", "finish", "steps_done", "ctx_sum", "kv_peak",
    )  # fmt: skip

    def __init__(self, sim: Simulation, idx: int, local: int, pool: ResolvedPool) -> None:
        self.sim = sim
        self.idx = idx
        self.local = local
        self.pool = pool
        self.role = pool.spec.role
        self.step = StepModel(pool.instance)
        self.kv_cap = pool.instance.kv_capacity_tokens
        self.kv_reserved = 0
        self.kv_peak = 0
        self.kv_used = 0
        self.waiting: list[tuple[tuple[float, ...], int]] = []
        self.waiting_tokens = 0
        self.prefilling: list[int] = []
        self.running: dict[int, int] = {}  # decoding request -> steps_done when it joined
        self.finish: list[tuple[int, int]] = []  # heap of (steps_done at its last token, request)
        self.steps_done = 0  # decode steps this instance has run
        self.ctx_sum = 0  # context tokens of the running requests
        self.incoming: list[int] = []
        self.wake: simpy.Event | None = None
        self.in_jump = False
        self.up = True
        self.nic_free_s = 0.0
        self.seq = 0
        self.proc = sim.env.process(self.serve())

    # --- views and wake-ups ---------------------------------------------------------------
    def view(self, position: int) -> policies.InstanceView:
        """What a router sees of this instance, at `position` in the list it chooses from."""
        return policies.InstanceView(
            position,
            len(self.waiting) + len(self.incoming),
            self.waiting_tokens,
            len(self.running) + len(self.prefilling),
            self.kv_cap - self.kv_reserved,
            0,
            self.up,
        )

    def notify(self, could_start: bool) -> None:
        """Something arrived: wake the process if idle, or cut a decode jump short."""
        if self.wake is not None and not self.wake.triggered:
            self.wake.succeed()
        elif self.in_jump and could_start:
            self.in_jump = False
            self.proc.interrupt()

    def has_slot(self) -> bool:
        """True when the running batch can take another request."""
        return len(self.running) + len(self.prefilling) < self.sim.max_batch

    # --- the process ----------------------------------------------------------------------
    def serve(self) -> Any:
        """Continuous batching, one iteration (or one decode jump) per loop."""
        sim = self.sim
        env = sim.env
        while True:
            if self.role == "decode":
                self._admit_incoming()
            else:
                self._admit_waiting()
            chunks = self._prefill_chunks() if self.role != "decode" else []
            decodes = len(self.running) if (self.role != "prefill") and (sim.chunked or not chunks) else 0
            if not chunks and not decodes:
                self.wake = env.event()
                sim.events += 1
                yield self.wake
                self.wake = None
                continue
            t0 = env.now
            if chunks:
                yield from self._iteration(chunks, decodes, t0)
            else:
                yield from self._decode_jump(t0)

    def _iteration(self, chunks: list[tuple[int, int, int]], decodes: int, t0: float) -> Any:
        sim = self.sim
        q = sum(c[1] for c in chunks)
        pairs = sum(c[1] * (c[2] + c[1] / 2.0) for c in chunks)
        k = sum(c[2] for c in chunks)
        d = decodes
        ctx = float(self.ctx_sum) if d else 0.0
        t, flops, nbytes = self.step.cost(q, pairs, k, d, ctx)
        sim.events += 1
        yield sim.env.timeout(t)
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
            self.waiting_tokens -= qi
            if sim.prefilled[rid] >= sim.prompt[rid]:
                self.prefilling.remove(rid)
                sim.prefill_done(self, rid)

    def _decode_jump(self, t0: float) -> Any:
        sim = self.sim
        b = len(self.running)
        kmax = self.finish[0][0] - self.steps_done
        ctx = float(self.ctx_sum)
        run = self.step.decode_run(b, ctx, kmax)
        steps = kmax
        self.in_jump = True
        sim.events += 1
        try:
            yield sim.env.timeout(run[0])
        except simpy.Interrupt:
            steps = self._steps_started(b, ctx, sim.env.now - t0, kmax)
            run = self.step.decode_run(b, ctx, steps)
            sim.events += 1
            yield sim.env.timeout(max(0.0, t0 + run[0] - sim.env.now))
        self.in_jump = False
        _, flops, nbytes = run
        sim.segment(self, t0, sim.env.now, flops, nbytes, self.kv_used + steps * b / 2.0, b)
        self.kv_used += steps * b
        self.advance(steps)

    def start_decoding(self, rid: int, context: int, remaining: int) -> None:
        """A request joins the decode batch with `remaining` tokens still to produce."""
        self.sim.context[rid] = context
        self.running[rid] = self.steps_done
        heapq.heappush(self.finish, (self.steps_done + remaining, rid))
        self.ctx_sum += context

    def advance(self, steps: int) -> None:
        """Every running request produced `steps` tokens; complete those that are done."""
        sim = self.sim
        self.steps_done += steps
        self.ctx_sum += steps * len(self.running)
        sim.tokens_emitted += steps * len(self.running)
        while self.finish and self.finish[0][0] <= self.steps_done:
            _, rid = heapq.heappop(self.finish)
            ctx = int(sim.context[rid]) + self.steps_done - self.running.pop(rid)
            sim.context[rid] = ctx
            self.ctx_sum -= ctx
            sim.complete(self, rid)

    def _steps_started(self, b: int, ctx: float, elapsed: float, kmax: int) -> int:
        """Steps finished or in progress after `elapsed` seconds of a decode run (at most kmax)."""
        first = self.step.decode_run(b, ctx, 1)[0]
        guess = min(kmax, int(elapsed / first) + 1)  # steps only get longer: an upper bound
        while guess > 1 and self.step.decode_run(b, ctx, guess - 1)[0] > elapsed:
            guess -= 1
        return guess

    # --- batch formation ------------------------------------------------------------------
    def _admit_waiting(self) -> None:
        sim = self.sim
        while self.waiting and self.has_slot():
            rid = self.waiting[0][1]
            need = sim.reserve_tokens(rid, self.role)
            if self.kv_reserved + need > self.kv_cap:
                break
            heapq.heappop(self.waiting)
            self.kv_reserved += need
            self.kv_peak = max(self.kv_peak, self.kv_reserved)
            self.prefilling.append(rid)
            sim.prefill_start[rid] = sim.env.now

    def _admit_incoming(self) -> None:
        sim = self.sim
        while self.incoming and len(self.running) < sim.max_batch:
            rid = self.incoming.pop(0)
            self.start_decoding(rid, int(sim.prompt[rid]), int(sim.output[rid]) - 1)

    def _prefill_chunks(self) -> list[tuple[int, int, int]]:
        sim = self.sim
        budget = sim.token_budget - (len(self.running) if sim.chunked and self.role == "mixed" else 0)
        chunks: list[tuple[int, int, int]] = []
        for rid in self.prefilling:
            if budget <= 0:
                break
            left = int(sim.prompt[rid] - sim.prefilled[rid])
            if sim.chunked and self.role == "mixed":
                q = min(left, sim.chunk_tokens, budget)
            elif left <= budget or not chunks:
                q = left
            else:
                continue
            chunks.append((rid, q, int(sim.prefilled[rid])))
            budget -= q
        return chunks


class Simulation:
    """All mutable state of one run; `run()` returns its Records."""

    def __init__(self, resolved: Resolved, reqs: Requests) -> None:
        sc = resolved.scenario
        self.resolved = resolved
        self.scenario = sc
        self.reqs = reqs
        self.env = simpy.Environment()
        self.events = 0
        self.tokens_emitted = 0
        n = len(reqs)
        self.n = n
        self.prompt = reqs.prompt_tokens
        self.output = reqs.output_tokens
        self.arrival = reqs.arrival_s.astype(float).copy()
        self.prefilled = np.zeros(n, dtype=np.int64)
        self.context = np.zeros(n, dtype=np.int64)
        self.first_token = np.full(n, np.nan)
        self.completion = np.full(n, np.nan)
        self.outcome = np.zeros(n, dtype=np.int8)
        self.reason = [""] * n
        self.prefill_inst = np.full(n, -1, dtype=np.int64)
        self.decode_inst = np.full(n, -1, dtype=np.int64)
        self.transfer = np.zeros(n)
        self.prefill_start = np.zeros(n)
        self.views: list[policies.RequestView | None] = [None] * n
        b = sc.deployment.batching
        self.max_batch = b.max_batch
        self.token_budget = b.token_budget
        self.chunked = b.chunked_prefill
        self.chunk_tokens = b.chunk_tokens
        self.router = policies.build_router(sc.scheduler.router.as_dict())
        self.queue = policies.build_queue(sc.scheduler.queue.as_dict())
        self.admission = policies.build_admission(sc.scheduler.admission.as_dict())
        self.ticks: dict[str, int] = {}
        self.servers: list[Server] = []
        self.by_role: dict[str, list[Server]] = {}
        for pool in resolved.pools:
            for j in range(pool.spec.count):
                s = Server(self, len(self.servers), j, pool)
                self.servers.append(s)
                self.by_role.setdefault(pool.spec.role, []).append(s)
        self.entry = self.by_role.get("mixed") or self.by_role["prefill"]
        self.disaggregated = "prefill" in self.by_role
        self.decode_cap = max(s.kv_cap for s in self.by_role.get("decode", self.entry))
        self.prefill_cap = max(s.kv_cap for s in self.entry)
        self.pending_handoff: list[tuple[Server, int]] = []
        self.segments: list[tuple[float, ...]] = []
        link = sc.deployment.link
        self.link_latency_s = link.latency_ms / 1000.0
        self.link_overlap = link.overlap
        self.link_gb_s = link.bandwidth_gb_s
        self.issued = n
        self.closed = reqs.closed_loop_clients > 0
        if self.closed:
            self.issued = 0
            self.arrival[:] = np.nan

    # --- bookkeeping ----------------------------------------------------------------------
    def segment(
        self,
        srv: Server,
        t0: float,
        t1: float,
        flops: float,
        nbytes: float,
        kv: float,
        batch: int,
        prefill_s: float = 0.0,
    ) -> None:
        """Record one iteration (or decode jump) for the time series."""
        waiting = len(srv.waiting) + len(srv.incoming)
        self.segments.append((srv.idx, t0, t1, flops, nbytes, kv, batch, waiting, prefill_s))

    def reserve_tokens(self, rid: int, role: str) -> int:
        """KV tokens a request reserves on an instance of a role."""
        if role == "prefill":
            return int(self.prompt[rid])
        return int(self.prompt[rid] + self.output[rid])

    def request_view(self, rid: int) -> policies.RequestView:
        """What a policy sees of a request (built once per request)."""
        view = self.views[rid]
        if view is None:
            view = self.views[rid] = self._request_view(rid)
        return view

    def _request_view(self, rid: int) -> policies.RequestView:
        c = int(self.reqs.cls[rid])
        spec = self.scenario.workload.classes[c]
        return policies.RequestView(
            rid=rid, cls=c, priority=spec.priority, arrival_s=float(self.arrival[rid]),
            prompt_tokens=int(self.prompt[rid]), output_tokens=int(self.output[rid]),
            ttft_deadline_s=float(self.arrival[rid]) + spec.slo.ttft_ms / 1000.0,
        )  # fmt: skip

    def route(self, rid: int, servers: list[Server], key: str) -> Server:
        """The server the router picks among `servers`."""
        tick = self.ticks.get(key, 0)
        self.ticks[key] = tick + 1
        if len(servers) == 1:
            return servers[0]
        views = [s.view(i) for i, s in enumerate(servers)]
        return servers[self.router.choose(self.request_view(rid), views, tick)]

    def end(self, rid: int, outcome: int, reason: str = "") -> None:
        """Close a request exactly once."""
        assert self.outcome[rid] == PENDING, f"request {rid} ended twice"
        self.outcome[rid] = outcome
        self.reason[rid] = reason
        if outcome == COMPLETED:
            self.completion[rid] = self.env.now
        if self.closed:
            self.next_from_client(self.env.now)

    # --- request life cycle ---------------------------------------------------------------
    def arrive(self, rid: int) -> None:
        """A request arrives: admission, routing, queueing."""
        reqview = None
        need = int(self.prompt[rid] + self.output[rid])
        if need > self.decode_cap or int(self.prompt[rid]) > self.prefill_cap:
            self.end(rid, REJECTED, "too_long_for_kv")
            return
        if not isinstance(self.admission, policies.AdmitAll):
            reqview = self.request_view(rid)
            queued = sum(len(s.waiting) for s in self.entry)
            reason = self.admission.reject(reqview, queued, 0.0)
            if reason:
                self.end(rid, REJECTED, reason)
                return
        srv = self.route(rid, self.entry, "entry")
        key = self.queue.key(reqview or self.request_view(rid))
        srv.seq += 1
        heapq.heappush(srv.waiting, (key, rid))
        srv.waiting_tokens += int(self.prompt[rid])
        if self.disaggregated:
            self.prefill_inst[rid] = srv.idx
        else:
            self.prefill_inst[rid] = self.decode_inst[rid] = srv.idx
        could = srv.has_slot() and srv.kv_reserved + self.reserve_tokens(rid, srv.role) <= srv.kv_cap
        srv.notify(could)

    def prefill_done(self, srv: Server, rid: int) -> None:
        """A prompt is fully prefilled: first token (colocated) or hand-off (disaggregated)."""
        if srv.role == "mixed":
            self.first_token[rid] = self.env.now
            self.tokens_emitted += 1
            if self.output[rid] <= 1:
                self.context[rid] = self.prompt[rid]
                self.release(srv, rid)
                self.end(rid, COMPLETED)
            else:
                srv.start_decoding(rid, int(self.prompt[rid]), int(self.output[rid]) - 1)
            return
        self.handoff(srv, rid)

    def handoff(self, srv: Server, rid: int) -> None:
        """Reserve room on a decode instance and send the KV cache over the link."""
        decoders = [d for d in self.by_role["decode"] if d.up]
        need = self.reserve_tokens(rid, "decode")
        fits = [d for d in decoders if d.kv_reserved + need <= d.kv_cap]
        if not fits:
            self.pending_handoff.append((srv, rid))
            return
        dst = self.route(rid, fits, "decode")
        dst.kv_reserved += need
        dst.kv_peak = max(dst.kv_peak, dst.kv_reserved)
        self.decode_inst[rid] = dst.idx
        inst = srv.pool.instance
        bw = self.link_gb_s or (srv.pool.hardware.scale_out_gb_s * inst.tp)
        full = self.link_latency_s + float(self.prompt[rid]) * inst.kv_bytes_per_token / (bw * 1e9)
        prefill_s = max(self.env.now - float(self.prefill_start[rid]), 0.0)
        layers = inst.model.layers
        # see perf.exposed_transfer_time: layer l moves while layer l+1 computes
        exposed = max(full - prefill_s * (layers - 1) / layers, full / layers) if self.link_overlap else full
        start = max(self.env.now - (full - exposed), srv.nic_free_s)
        end = max(start + full, self.env.now)
        srv.nic_free_s = end
        self.transfer[rid] = end - self.env.now
        self.events += 1
        ev = self.env.timeout(end - self.env.now)
        ev.callbacks.append(functools.partial(self._transferred_cb, srv, dst, rid))

    def _transferred_cb(self, src: Server, dst: Server, rid: int, _event: simpy.Event) -> None:
        self.transferred(src, dst, rid)

    def transferred(self, src: Server, dst: Server, rid: int) -> None:
        """The KV cache has arrived: free the prefill side, start decoding."""
        src.kv_reserved -= int(self.prompt[rid])
        src.kv_used -= int(self.prompt[rid])
        src.notify(True)
        self.first_token[rid] = self.env.now
        self.tokens_emitted += 1
        self.context[rid] = self.prompt[rid]
        dst.kv_used += int(self.prompt[rid])
        if self.output[rid] <= 1:
            self.release(dst, rid)
            self.end(rid, COMPLETED)
            return
        dst.incoming.append(rid)
        dst.notify(len(dst.running) < self.max_batch)

    def release(self, srv: Server, rid: int) -> None:
        """Give back a request's KV reservation and memory on its instance."""
        srv.kv_reserved -= self.reserve_tokens(rid, srv.role)
        srv.kv_used -= int(self.context[rid])
        if srv.role == "decode":
            self.retry_handoffs()
        srv.notify(True)

    def complete(self, srv: Server, rid: int) -> None:
        """A request produced its last token."""
        self.release(srv, rid)
        self.end(rid, COMPLETED)

    def retry_handoffs(self) -> None:
        """Decode memory was freed: hand off the prompts that were waiting for room."""
        pending, self.pending_handoff = self.pending_handoff, []
        for srv, rid in pending:
            self.handoff(srv, rid)

    # --- arrivals -------------------------------------------------------------------------
    def open_loop(self) -> Any:
        """Open-loop arrivals at their pre-generated times."""
        env = self.env
        for rid in range(self.n):
            dt = self.arrival[rid] - env.now
            if dt > 0:
                self.events += 1
                yield env.timeout(dt)
            self.arrive(rid)

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
        self.events += 1
        ev = self.env.timeout(delay)
        ev.callbacks.append(functools.partial(self._arrive_cb, rid))

    def _arrive_cb(self, rid: int, _event: simpy.Event) -> None:
        self.arrive(rid)

    def run(self) -> Records:
        """Simulate until every issued request has ended."""
        if self.closed:
            self.rng = np.random.default_rng([self.scenario.seed, 0xC105ED])
            for _ in range(min(self.reqs.closed_loop_clients, self.n)):
                self.next_from_client(0.0)
        else:
            self.env.process(self.open_loop())
        self.env.run()
        n = self.issued
        segs = np.asarray(self.segments, dtype=float).reshape(-1, len(SEGMENT_COLUMNS))
        return Records(
            arrival_s=self.arrival[:n],
            first_token_s=self.first_token[:n],
            completion_s=self.completion[:n],
            outcome=self.outcome[:n],
            reason=self.reason[:n],
            prefill_instance=self.prefill_inst[:n],
            decode_instance=self.decode_inst[:n],
            transfer_s=self.transfer[:n],
            segments=segs,
            servers=[(s.pool.index, s.local, s.role) for s in self.servers],
            kv_capacity=np.array([s.kv_cap for s in self.servers], dtype=float),
            events=self.events,
            tokens_emitted=self.tokens_emitted,
            kv_peak=np.array([s.kv_peak for s in self.servers], dtype=float),
            end_s=float(self.env.now) if math.isfinite(self.env.now) else 0.0,
        )
