"""The simpy model of LLM serving: pools of instances, the KV link, and what happened.

Each instance (`engine.serving.instance.Server`) runs continuous batching as a small state machine on
simpy's event queue: idle, running one iteration, or running one decode jump, each ending with a
timed call (`host.Clock`: a bare function call in the queue, ordered as a simpy timeout would be)
that applies the work and forms the next batch. An iteration that contains prefill work (a whole
prompt, or a chunk of one) is one event. A run of decode-only iterations with an unchanging
batch is also one event: the cost model sums its steps in closed form
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
(see `engine.scenario.model.Scheduler`). A request that could never fit is rejected at arrival.

Every request ends exactly once: completed, rejected or failed, the last two with a reason
(`REASONS`). One that nothing could ever serve ends as soon as that is known: at arrival (too
long for every instance, or for every live one it could be routed to; no entry or decode instance
left), and when a fault or a role switch takes a role's last capable instance away for good
(`service_lost`). Routing only considers instances that can hold the request. Whatever is still
in flight when the event queue runs dry fails as `unfinished_at_end`, a safety net that a correct
run never needs.

This module follows requests between instances: arrival, admission, routing, the prefix cache
(`engine.serving.cache`), hand-off, completion, preemption, retries, and degrading (`serve_less`:
while entry capacity is short, lower classes are shed and outputs capped before routing). Faults
and elastic roles are simpy processes in `engine.serving.disruptions`; policies decide from
read-only views (`engine.policies`).
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from engine import policies
from engine.costmodel.perf import exposed_transfer_time, kv_transfer_time
from engine.scenario.resolve import Resolved
from engine.serving import disruptions
from engine.serving.cache import HBM, HOST, POOLED, LruBlocks, RequestBlocks, leading_run_in, lookup
from engine.serving.edge import SITES, EdgeSite
from engine.serving.host import Clock
from engine.serving.instance import Server
from engine.serving.workload import Requests, closed_loop_pauses

PENDING, COMPLETED, REJECTED, FAILED = 0, 1, 2, 3
SEGMENT_COLUMNS = (
    "server", "t0", "t1", "flops", "bytes", "kv_tokens", "batch", "waiting", "prefill_s",
    "decodes", "steps", "first_gap_s", "step_s",
)  # fmt: skip
"""Columns of the per-iteration records. A segment that produced tokens (`decodes` requests for
`steps` steps) records the gap before its first step's tokens (from the batch's previous decode
step: a prompt-only iteration in between is a stall) and its mean step time."""
OUTCOMES = {PENDING: "pending", COMPLETED: "completed", REJECTED: "rejected", FAILED: "failed"}
TOO_LONG = "too_long_for_kv"
TOO_LONG_LIVE = "too_long_for_live_kv"
NO_INSTANCE = "no_instance_up"
NO_DECODE = "no_decode_instance"
LOST = "instance_lost"
UNFINISHED = "unfinished_at_end"
DEGRADED = "degraded"
REASONS = {
    TOO_LONG: "the request needs more KV memory than any instance of its role has",
    TOO_LONG_LIVE: "too long for the KV memory of every instance it could be sent to now (decode: ever again)",
    NO_INSTANCE: "no instance that takes new requests is up",
    NO_DECODE: "no decode instance is up or will come back (disaggregated)",
    LOST: "its instance failed and the fault fails requests in flight",
    UNFINISHED: "still in flight when the run ended (a safety net: a correct run never needs it)",
    DEGRADED: "shed while the deployment was degraded: its class is below deployment.degrade.shed_below_priority",
}
"""Why the simulator rejects or fails a request (admission policies add their own reasons)."""


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
    transfer_wait_s: np.ndarray  # of transfer_s: the part spent queued for the sender's link
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
    output_tokens: np.ndarray  # delivered output length per request: the drawn one, or capped while degraded
    site: list[str] | None = None  # with an edge site: where each request was served (`edge.SITES`)


class Simulation:
    """All mutable state of one run; `run()` returns its Records."""

    def __init__(self, resolved: Resolved, reqs: Requests) -> None:
        sc = resolved.scenario
        self.resolved = resolved
        self.scenario = sc
        self.reqs = reqs
        self.env = Clock()
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
        self.transfer_wait: list[float] = [0.0] * n
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
        # per class: the pools it is pinned to (pool indices), or None for any
        index_of = {p.spec.name: p.index for p in resolved.pools}
        decoders = {p.index for p in resolved.pools if p.spec.role == "decode"}
        self.pinned_decode: list[frozenset[int] | None] = [
            frozenset(index_of[n] for n in c.pools if index_of[n] in decoders) or None for c in classes
        ]
        self.pinned: list[frozenset[int] | None] = [
            frozenset(index_of[n] for n in c.pools if index_of[n] not in decoders) or None for c in classes
        ]
        self.any_decode_pins = any(p is not None for p in self.pinned_decode)
        # hand-offs go to some decode pools only (a pool's `sends_to`, a class's decode pins)
        self.routed_handoffs = self.any_decode_pins or any(p.spec.sends_to for p in resolved.pools)
        # per class: the tightest TTFT target of the classes above it, which admission protects by
        # shedding this class first; under strict priority the classes above overtake it anyway
        self.guard_ttft: list[float] = [
            math.inf
            if sc.scheduler.queue.name == "priority"
            else min((o.slo.ttft_ms / 1000.0 for o in classes if o.priority > c.priority), default=math.inf)
            for c in classes
        ]
        b = sc.batching()
        self.max_batch = b.max_batch
        self.token_budget = b.token_budget
        self.chunked = b.chunked_prefill
        self.mix = sc.iteration_scheduler().mixes_decodes
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
        self._future: dict[str, int] | None = None  # future_cap's figures, until roles change
        self._future_decode: dict[int, int] = {}  # the same for decode, per pool (set with _future)
        self.ended = 0  # requests closed so far
        self.block_names = RequestBlocks(reqs)  # each request's block hashes, built on first use
        self.servers: list[Server] = []
        for pool in resolved.pools:
            for j in range(pool.spec.count):
                self.servers.append(Server(self, len(self.servers), j, pool))
        # each instance's throughput over the fastest's, per role (exactly 1.0 when all chips match)
        best = [max(s.rates[k] for s in self.servers) for k in (0, 1)]
        for srv in self.servers:
            srv.speeds = (
                srv.rates[0] / best[0] if best[0] > 0 else 1.0,
                srv.rates[1] / best[1] if best[1] > 0 else 1.0,
            )
        self.disaggregated = sc.deployment.mode == "disaggregated"
        # the data centre's instances: an edge chip's small memory must not turn requests away here
        dc = [s for s in self.servers if s.pool.spec.tier == "datacenter"]
        self.decode_cap = max(s.kv_cap for s in dc if s.role in ("decode", "mixed"))
        self.prefill_cap = max(s.kv_cap for s in dc if s.role in ("prefill", "mixed"))
        self.min_cap = min(s.kv_cap for s in dc)  # below it, every instance holds a request
        # the edge site (`engine.serving.edge`): None without one, so arrivals pay nothing for it
        self.edge = EdgeSite(self) if sc.deployment.edge is not None else None
        self.pending_handoff: list[tuple[Server, int]] = []
        # what each parked hand-off would reserve on a decode instance, in the same order
        self._pending_need: list[int] = []
        # retry_handoffs skips its scan while nothing waiting can fit: the fewest tokens a waiting
        # prompt needs (never above the true least) and the fleet it was checked against
        self._pending_min_need: float = math.inf
        self._pending_epoch = -1
        self._roles_epoch = 0
        self.segments: list[tuple[float, ...]] = []
        link = sc.deployment.link
        self.link_latency_s = link.latency_ms / 1000.0
        self.link_overlap = link.overlap
        self.link_factor: list[float] = [1.0] * len(resolved.pools)  # link faults degrade a pool's link
        self.fallen: list[Server] = []  # decode instances serving whole requests (`deployment.fallback`)
        self.link_gb_s = link.bandwidth_gb_s
        # a fabric every hand-off also crosses, and when it is next free (FIFO, see `_send`)
        self.shared_bytes_s = link.shared_gb_s * 1e9 if link.shared_gb_s else 0.0
        self.shared_free_s = 0.0
        # per pool: the decode pools its hand-offs may go to (pool indices), or None for any
        self.targets: list[frozenset[int] | None] = [
            frozenset(index_of[n] for n in p.spec.sends_to) if p.spec.sends_to else None
            for p in resolved.pools
        ]
        self.counters: dict[str, float] = {
            "preemptions": 0, "recomputed_tokens": 0, "swapped_bytes": 0, "retried": 0, "role_switches": 0, "role_drains": 0, "link_faults": 0, "fallbacks": 0,
            "transfer_tokens_saved": 0,
        }  # fmt: skip
        self.issued = n
        self.closed = reqs.closed_loop_clients > 0
        if self.closed:
            self.issued = 0
            self.arrival = [math.nan] * n
        # degrade (`deployment.degrade`): None when off, so arrivals pay nothing for it
        self.degrade = sc.deployment.degrade if sc.deployment.degrade.enabled else None
        self._entry_share: tuple[int, float] = (-1, 1.0)  # (roles epoch, live share of entry capacity)
        self.counters.update(degraded_arrivals=0, capped_requests=0, capped_tokens=0)

    # --- helpers --------------------------------------------------------------------------
    def servers_of(self, role: str) -> list[Server]:
        """Live servers currently in a role (a shared list: do not modify it)."""
        live = self._live
        if live is None:
            # the roles are the data centre's; edge instances are listed apart ("edge")
            dc = [s for s in self.servers if s.pool.spec.tier == "datacenter"]
            live = self._live = {
                r: [s for s in dc if s.role == r and s.up and not s.busy_switching and not s.draining]
                for r in ("prefill", "decode", "mixed")
            }
            live["entry"] = [
                s
                for s in dc
                if s.role in ("mixed", "prefill") and s.up and not s.busy_switching and not s.draining
            ]
            live["edge"] = [s for s in self.servers if s.pool.spec.tier == "edge" and s.up]
        return live[role]

    def entry_servers(self) -> list[Server]:
        """Live servers that take new requests (a shared list: do not modify it)."""
        return self.servers_of("entry")

    def roles_changed(self) -> None:
        """An instance failed, came back or started switching roles: recompute the live lists."""
        self._live = None
        self._future = None
        self._roles_epoch += 1

    def future_cap(self, role: str) -> int:
        """Largest KV capacity of the instances that serve `role` now or will again (0: none).

        An instance counts when it is up (in the role it will have once a switch under way ends)
        or down with a fault that will bring it back. Elastic switches yet to come are not
        counted on: the controller never moves a role's last live instance, and cannot make up
        a role that has none.
        """
        caps = self._future
        if caps is None:
            caps = self._future = {"prefill": 0, "decode": 0, "mixed": 0}
            pools = self._future_decode = {}
            for s in self.servers:
                if s.up or s.restores:
                    caps[s.future_role] = max(caps[s.future_role], s.kv_cap)
                    if s.future_role == "decode":
                        pools[s.pool.index] = max(pools.get(s.pool.index, 0), s.kv_cap)
        return caps[role]

    def holds(self, srv: Server, rid: int) -> bool:
        """True when the request fits in the instance's KV memory alone (its prompt, on prefill)."""
        need = self.prompt[rid] if srv.role == "prefill" else self.prompt[rid] + self.output[rid]
        return need <= srv.kv_cap

    def decode_pools(self, sender: Server, rid: int) -> frozenset[int] | None:
        """The decode pools a prompt prefilled on `sender` may go to (None: any).

        The sending pool's `sends_to` and the class's decode pools together; where they share
        none, the class's own decode pools win.
        """
        routes = self.targets[sender.pool.index]
        if not self.any_decode_pins:
            return routes
        pins = self.pinned_decode[self.reqs.cls[rid]]
        if routes is None or pins is None:
            return pins if routes is None else routes
        return (routes & pins) or pins

    def undeliverable(self, rid: int, cap: int | None = None, sender: Server | None = None) -> str:
        """Why no decode instance, now or later, could take this request ('' when one could).

        `cap` is `future_cap("decode")` when the caller has it already. With a `sender` whose pool
        hands off to some decode pools only (`sends_to`), only those count.
        """
        allowed = self.decode_pools(sender, rid) if sender is not None else None
        if allowed is not None:
            self.future_cap("decode")  # (brings the per-pool figures up to date)
            cap = max((self._future_decode.get(p, 0) for p in allowed), default=0)
        elif cap is None:
            cap = self.future_cap("decode")
        if cap == 0:
            return NO_DECODE
        return TOO_LONG_LIVE if self.prompt[rid] + self.output[rid] > cap else ""

    def segment(
        self, srv: Server, t0: float, t1: float, flops: float, nbytes: float, kv: float, batch: int,
        prefill_s: float = 0.0, decodes: int = 0, steps: int = 0, first_gap: float = 0.0, step_s: float = 0.0,
    ) -> None:  # fmt: skip
        """Record one iteration (or decode jump): the time series and the gaps between tokens."""
        waiting = len(srv.waiting) + len(srv.incoming)
        self.segments.append(
            (srv.idx, t0, t1, flops, nbytes, kv, batch, waiting, prefill_s, decodes, steps, first_gap, step_s)
        )

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
                self.arrival[rid] + spec.slo.ttft_ms / 1000.0, self.top_priority, self.guard_ttft[c],
                spec.slo.tpot_ms / 1000.0,
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
        elif self.router.needs_timing:  # the decode step each instance would run with this request
            views = [s.view(i, 0, s.step_with(self.prompt[rid])) for i, s in enumerate(servers)]
        else:
            views = [s.view(i) for i, s in enumerate(servers)]
        return servers[self.router.choose(self.request_view(rid), views, tick)]

    def end(self, rid: int, outcome: int, reason: str = "") -> None:
        """Close a request exactly once (a request that does not complete says why)."""
        assert self.outcome[rid] == PENDING, f"request {rid} ended twice"
        assert outcome == COMPLETED or reason, f"request {rid} ended without a reason"
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
        # a read refreshes the tiers that served it (as a GPU prefix hit leaves the CPU or
        # pooled copy's recency alone); the prefill's write-through refreshes every tier later
        hit_blocks = blocks[:total]
        for tier, served in zip((srv.hbm, srv.host, self.pooled), found, strict=True):
            if served and tier is not None:
                tier.touch(hit_blocks)
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
        """Put a request's blocks into the instance's tiers and the pool, as just used.

        At the end of a prefill: the prompt's blocks. At completion: the prompt's and the
        answer's, as one sequence (what the next turn of a conversation reuses; inserted
        together, a prompt ages tail first, see `LruBlocks`). Host memory is the prefill side's
        tier: a decode instance keeps what it received and produced in HBM only, so the next
        turn sends it only what it lacks.
        """
        blocks = self.block_names.full_blocks(rid) if full else self.block_names.prompt_blocks(rid)
        if srv.hbm is not None:
            srv.hbm.capacity = max(0, (srv.kv_cap - srv.kv_reserved) // self.reqs.block_tokens)
            srv.hbm.insert(blocks)
        if srv.host is not None and srv.role != "decode":
            srv.host.insert(blocks)
        if self.pooled is not None:
            self.pooled.insert(blocks)

    # --- request life cycle ---------------------------------------------------------------
    def arrive(self, rid: int, retry: bool = False) -> None:
        """A request arrives (or is retried): admission, routing, queueing."""
        if self.edge is not None and self.edge.take(rid, retry):
            return  # served at the edge, or on its way to the data centre (it comes back here)
        need = self.prompt[rid] + self.output[rid]
        if need > self.decode_cap or self.prompt[rid] > self.prefill_cap:
            self.end(rid, REJECTED, TOO_LONG)
            return
        live = entry = self.entry_servers()
        if not live:
            self.end(rid, FAILED if retry else REJECTED, NO_INSTANCE)
            return
        if need > self.min_cap:  # some instances could never hold it: route among the others
            entry = [s for s in live if self.holds(s, rid)]
            if not entry:
                self.end(rid, FAILED if retry else REJECTED, TOO_LONG_LIVE)
                return
        if (
            self.disaggregated and entry[0].role == "prefill"
        ):  # (a decode pool fallen back serves whole requests)
            why = self.undeliverable(rid)
            if why:
                self.end(rid, FAILED if retry else REJECTED, why)
                return
        pinned = self.pinned[self.reqs.cls[rid]]
        if pinned is not None:  # traffic isolation: the class's own pools, and what overflow does
            own = [s for s in entry if s.pool.index in pinned]
            spec = self.scenario.workload.classes[self.reqs.cls[rid]]
            full = not own or all(len(s.waiting) >= spec.spill_queue for s in own)
            if not full or spec.overflow == "wait":
                if not own:
                    self.end(rid, FAILED if retry else REJECTED, NO_INSTANCE)
                    return
                entry = own
            elif spec.overflow == "reject":
                self.end(rid, FAILED if retry else REJECTED, "isolation_full")
                return
        if self.degrade is not None and self.serve_less(rid, retry):
            return  # shed while degraded
        srv = self.route(rid, entry, "entry")
        view = self.request_view(rid)
        if not retry and not isinstance(self.admission, policies.AdmitAll):
            queued = sum(len(s.waiting) for s in live)
            predicted = self.predicted_ttft(srv, rid)
            reason = self.admission.reject(view, queued, predicted)
            if reason:
                self.end(rid, REJECTED, reason)
                return
        self.enqueue(srv, rid, view)

    def enqueue(self, srv: Server, rid: int, view: policies.RequestView | None = None) -> None:
        """Queue a request on the instance chosen for it (data centre or edge) and wake it."""
        heapq.heappush(srv.waiting, (self.queue.key(view or self.request_view(rid)), rid))
        srv.queue_tokens(rid, self.pf_target[rid])
        self.prefill_inst[rid] = srv.idx
        # a mixed instance serves the whole request: colocated, at the edge, or fallen back
        if (
            not self.disaggregated
            or srv.role == "mixed"
            or (self.edge is not None and srv.pool.spec.tier == "edge")
        ):
            self.decode_inst[rid] = srv.idx
        could = srv.has_slot() and srv.kv_reserved + self.reserve_tokens(rid, srv.role) <= srv.kv_cap
        srv.notify(could)

    def serve_less(self, rid: int, retry: bool) -> bool:
        """While a degrade trigger holds: shed the request (True) if its class is below the shedding
        priority, else cap its output; a retry is never shed (it was admitted before)."""
        if not self.degraded():
            return False
        dg = self.degrade
        assert dg is not None
        if not retry:
            self.counters["degraded_arrivals"] += 1
            if self.priority[rid] < dg.shed_below_priority:
                self.end(rid, REJECTED, DEGRADED)
                return True
        cap = dg.max_output_tokens
        if cap and self.output[rid] > cap:
            self.counters["capped_requests"] += 1
            self.counters["capped_tokens"] += self.output[rid] - cap
            self.output[rid] = cap  # everything downstream (KV reserved, decode steps, metrics) sees the cap
            self.block_names.cap_output(rid, cap)  # and the cache: only generated tokens are stored
            self.views[rid] = None
        return False

    def degraded(self) -> bool:
        """Whether a trigger of `deployment.degrade` holds now: entry capacity short, or its backlog long."""
        dg = self.degrade
        assert dg is not None
        if dg.below_capacity and self.entry_share() < dg.below_capacity:
            return True
        if dg.above_backlog is not None:
            live = self.entry_servers()
            # prompts queued on entry instances, and prefilled prompts waiting for decode memory
            waiting = sum(len(s.waiting) for s in live) + len(self.pending_handoff)
            return waiting > dg.above_backlog * len(live)
        return False

    def entry_share(self) -> float:
        """Peak prefill FLOP/s of the live entry instances in their own role, over all entry pools'.

        Decode instances fallen back to serving whole requests do not count: they stand in for
        the entry pools' capacity, they do not restore it. Recomputed only when roles change.
        """
        epoch, share = self._entry_share
        if epoch != self._roles_epoch:

            def flops(s: Server) -> float:
                inst = s.pool.instance
                return inst.matmul_flops_per_s * inst.pp * inst.dp

            # the data centre's entry pools (an edge site's instances are not entry instances)
            own = [
                s for s in self.servers if s.pool.spec.role != "decode" and s.pool.spec.tier == "datacenter"
            ]
            total = sum(flops(s) for s in own)
            live = sum(flops(s) for s in self.entry_servers() if s.role == s.future_role)
            share = live / total if total > 0 else 1.0
            self._entry_share = (self._roles_epoch, share)
        return share

    def predicted_ttft(self, srv: Server, rid: int) -> float:
        """What admission control expects this request's TTFT to be on `srv`.

        The prompt tokens queued ahead of it (under strict priority, only those of its own and
        higher priorities) plus its own, at the prefill rate the instance has
        now: a full token budget shared with the decodes it is running (chunked prefill), each
        iteration timed by the cost model; and never less than one chunk of its own prompt per
        iteration.
        """
        d = len(srv.running) if srv.role == "mixed" and self.mix else 0
        q = max(float(srv.token_budget - d), 1.0)
        prompt = float(self.prompt[rid])
        t_iter = srv.step.cost(
            q,
            q * (prompt / 2.0 + q / 2.0),
            prompt / 2.0,
            d,
            float(srv.ctx_sum) if d else 0.0,
            0,
            min(prompt, q),
        )[0]
        # a prompt gets at most one chunk per iteration, however short the queue, and with
        # attention DP its chunks run on one rank
        own = 0.0
        if (srv.role == "mixed" and self.chunked) or srv.ranks > 1:
            c = float(min(srv.chunk_cap, prompt))
            ctx = float(srv.ctx_sum) if d else 0.0
            own = (
                math.ceil(prompt / c)
                * srv.step.cost(c, c * (prompt / 2.0 + c / 2.0), prompt / 2.0, d, ctx, 0, c)[0]
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
        """Send a prefilled prompt to a decode instance with room, or park it until one has some."""
        if self._send(srv, rid):
            return
        why = self.undeliverable(rid, sender=srv)
        if why:  # no decode instance that could take it will ever be up again
            self.release_prefilled(srv, rid)
            self.end(rid, FAILED, why)
        else:  # waits for decode memory, or for an instance to come back
            need = self._handoff_need(rid)
            self.pending_handoff.append((srv, rid))
            self._pending_need.append(need)
            self._pending_min_need = min(self._pending_min_need, need)

    def _handoff_need(self, rid: int) -> int:
        """KV tokens a hand-off reserves on the decode instance."""
        return self.prompt[rid] if self.preempt else self.pf_target[rid] + self.output[rid]

    def _send(self, srv: Server, rid: int) -> bool:
        """Reserve room on a decode instance and send the KV cache over the link; False if none has room."""
        need = self._handoff_need(rid)
        decode = self.servers_of("decode")
        allowed = self.decode_pools(srv, rid)
        if allowed is not None:  # this pool, or this request's class, hands off to some decode pools only
            decode = [d for d in decode if d.pool.index in allowed]
        if self.preempt:  # room also for the jump under way and every request's next token
            whole = self.prompt[rid] + self.output[rid]  # and for all it will grow to
            fits = [
                d for d in decode
                if d.kv_reserved + d.jump_growth + need + len(d.running) + 1 <= d.kv_cap and whole <= d.kv_cap
            ]  # fmt: skip
        else:
            fits = [d for d in decode if d.kv_reserved + need <= d.kv_cap]
        if not fits:
            return False
        dst = self.route(rid, fits, "decode")
        dst.inbound += 1
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
        bw = (self.link_gb_s or (srv.pool.hardware.scale_out_gb_s * inst.tp)) * self.link_factor[
            srv.pool.index
        ]
        if self.shared_bytes_s:  # no faster than the shared fabric either
            bw = min(bw, self.shared_bytes_s / 1e9)
        full = kv_transfer_time(srv.kv_bytes, tokens, bw, self.link_latency_s)
        now = self.env.now
        prefill_s = max(now - self.prefill_start[rid], 0.0)
        exposed = exposed_transfer_time(full, prefill_s, inst.model.layers, self.link_overlap)
        start = max(now - (full - exposed), srv.nic_free_s)
        if self.shared_bytes_s:
            # the fabric's capacity is spent in arrival order: each transfer uses its bytes' worth
            # of fabric time, and starts late by the backlog others left (a fluid FIFO queue)
            start = max(start, self.shared_free_s)
            self.shared_free_s = start + srv.kv_bytes * tokens / self.shared_bytes_s
        end = max(start + full, now)
        srv.nic_free_s = end
        self.transfer[rid] = end - now
        self.transfer_wait[rid] = max(end - now - full, 0.0)  # queued behind other transfers
        self.env.after(end - now, self.transferred, srv, dst, rid, srv.generation, dst.generation)
        return True

    def transferred(self, src: Server, dst: Server, rid: int, src_gen: int, dst_gen: int) -> None:
        """The KV cache has arrived: free the prefill side, start decoding."""
        if src.generation == src_gen:
            self.release_prefilled(src, rid)
        if dst.generation == dst_gen:
            dst.inbound -= 1
        if src.generation != src_gen or dst.generation != dst_gen:
            if dst.generation == dst_gen:
                dst.kv_reserved -= (
                    self.reserve_tokens(rid, "decode") if not self.preempt else self.prompt[rid]
                )
                # the room is free again: hand-offs waiting for it, or (on an instance fallen
                # back to serving whole requests) a prompt queued behind it, may start now
                if dst.role == "decode":
                    self.retry_handoffs()
                dst.notify(True)
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
        dst.notify(len(dst.running) < dst.max_batch)

    def release_prefilled(self, srv: Server, rid: int) -> None:
        """Free a prefilled prompt's KV on the prefill instance that held it for the hand-off."""
        srv.kv_reserved -= self.prompt[rid]
        srv.kv_used -= self.prompt[rid]
        srv.notify(True)

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
        """Decode memory was freed: hand off the prompts that were waiting for room.

        Every release of decode memory comes here, and with a full decode pool hundreds of
        prompts may wait; most still fit nowhere. Handing each prompt off in turn, in the order
        they arrived, comes to this: while the fleet is the one they were all checked against,
        take the earliest waiting prompt that needs no more than the largest room any decode
        instance has, hand it off, and look again from there with the room that is left (room
        only shrinks meanwhile, so the prompts passed over still fit nowhere). When even the
        smallest waiting prompt needs more, nothing is scanned at all. Once the fleet has
        changed, every waiting prompt is checked again, in order (`_recheck_handoffs`).
        """
        if not self.pending_handoff:
            return
        decode = self.servers_of("decode")
        room = self._decode_room(decode)
        if self._pending_epoch != self._roles_epoch:
            self._recheck_handoffs(decode, room)
            return
        if self._pending_min_need > room:
            return  # the same fleet as at the last look, and no waiting prompt fits: nothing changes
        # the same fleet: every waiting prompt's prefill instance is still up, and still deliverable
        pending, needs = self.pending_handoff, self._pending_need
        routed = self.routed_handoffs
        rooms: dict[int, int] = self._pool_rooms(decode) if routed else {}
        i = 0
        while True:
            for i in range(i, len(needs)):  # noqa: B020 - resumes the scan where the last one stopped
                if needs[i] <= room:
                    break
            else:
                break  # no waiting prompt from i on fits
            srv, rid = pending[i]
            # its decode pools may be full while others have room (it was deliverable when parked)
            if routed:
                allowed = self.decode_pools(srv, rid)
                if allowed is not None and needs[i] > max((rooms.get(p, -1) for p in allowed), default=-1):
                    i += 1
                    continue
            if self._send(srv, rid):
                del pending[i], needs[i]
                room = self._decode_room(decode)
                if routed:
                    rooms = self._pool_rooms(decode)
                continue
            # no single instance takes it (preemption: its whole length)
            why = self.undeliverable(rid, sender=srv)
            if why:
                del pending[i], needs[i]
                self.release_prefilled(srv, rid)
                self.end(rid, FAILED, why)
            else:
                i += 1
        self._pending_min_need = min(needs, default=math.inf)

    def _recheck_handoffs(self, decode: list[Server], room: int) -> None:
        """The fleet changed: hand off, keep waiting or fail every waiting prompt, in order.

        A prompt still waits only if it could be delivered when it was last checked; that can
        change only with the fleet, so it is checked again here.
        """
        pending, self.pending_handoff, self._pending_need = self.pending_handoff, [], []
        self._pending_min_need = math.inf
        cap = self.future_cap("decode")
        epoch = self._roles_epoch
        prompt, output, pf_target, preempt = self.prompt, self.output, self.pf_target, self.preempt
        for srv, rid in pending:
            if not srv.up:
                continue
            need = prompt[rid] if preempt else pf_target[rid] + output[rid]  # as handoff reserves
            if need <= room:
                self.handoff(srv, rid)
                room = self._decode_room(decode)
                continue
            why = self.undeliverable(rid, cap, srv)  # fits nowhere now
            if why:
                self.release_prefilled(srv, rid)
                self.end(rid, FAILED, why)
            else:
                self.pending_handoff.append((srv, rid))
                self._pending_need.append(need)
                if need < self._pending_min_need:
                    self._pending_min_need = need
        self._pending_epoch = epoch

    def strand_handoffs(self) -> list[int]:
        """Forget the waiting hand-offs whose prefill instance is down; return their requests."""
        pending, needs = self.pending_handoff, self._pending_need
        keep = [j for j, (srv, _) in enumerate(pending) if srv.up]
        stranded = [rid for srv, rid in pending if not srv.up]
        self.pending_handoff = [pending[j] for j in keep]
        self._pending_need = [needs[j] for j in keep]
        return stranded

    def _pool_rooms(self, decode: list[Server]) -> dict[int, int]:
        """The most KV tokens a hand-off could reserve on an instance of each decode pool."""
        rooms: dict[int, int] = {}
        for d in decode:
            r = d.kv_cap - d.kv_reserved - (d.jump_growth + len(d.running) + 1 if self.preempt else 0)
            if r > rooms.get(d.pool.index, -1):
                rooms[d.pool.index] = r
        return rooms

    def _decode_room(self, decode: list[Server]) -> int:
        """The most KV tokens a hand-off could reserve on any of `decode` (the test `handoff` applies)."""
        if self.preempt:
            return max(
                (d.kv_cap - d.kv_reserved - d.jump_growth - len(d.running) - 1 for d in decode), default=-1
            )
        return max((d.kv_cap - d.kv_reserved for d in decode), default=-1)

    def service_lost(self) -> None:
        """Instances left a role, maybe for good: end now what nothing could ever serve.

        Disaggregated only (a colocated instance serves a request from end to end, and a retried
        request finds out at arrival). Prompts waiting for decode memory are handed off again,
        which places them, keeps them waiting, or fails them. With no decode instance left at
        all, prompts on the prefill side could never go anywhere: they fail at once, and what
        those instances had under way is dropped.
        """
        if not self.disaggregated:
            return
        self.retry_handoffs()
        if self.future_cap("decode") > 0:
            return
        for srv in self.servers:
            if srv.up and srv.role != "decode" and srv.pool.spec.tier == "datacenter":  # the edge serves on
                for rid in srv.drop_all():
                    self.end(rid, FAILED, NO_DECODE)

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
            self.end(rid, FAILED, LOST)
            return
        self.retries[rid] += 1
        self.counters["retried"] += 1
        self.pf_target[rid] = self.prompt[rid]
        self.prefilled[rid] = 0
        self.resume[rid] = -1
        self.first_token[rid] = math.nan
        self.decode_inst[rid] = -1  # the retry is placed anew
        self.arrive(rid, retry=True)

    # --- arrivals -------------------------------------------------------------------------
    def arrivals_from(self, rid: int) -> None:
        """Open loop: issue every request due now from `rid` on, then wait for the next one."""
        now = self.env.now
        while rid < self.n:
            dt = self.arrival[rid] - now
            if dt > 0:
                self.env.after(dt, self._arrival_due, rid)
                return
            self.arrive(rid)
            rid += 1

    def _arrival_due(self, rid: int) -> None:
        self.arrive(rid)
        self.arrivals_from(rid + 1)

    def next_from_client(self, now: float) -> None:
        """Closed loop: a client starts, or one whose request ended sends its next after a think time.

        The pause is the next request's own (`Requests.pause_s`: start offsets, then think times
        drawn by request id), so every deployment sees the same pauses. A client whose next
        request would come after the window stops.
        """
        if self.issued >= self.n:
            return
        rid = self.issued
        delay = float(self.pauses[rid])
        if now + delay >= self.scenario.duration_s:
            return
        self.issued += 1
        self.arrival[rid] = now + delay
        self.env.after(delay, self.arrive, rid)

    def close_unfinished(self) -> None:
        """The safety net: whatever is still in flight when the run ends fails, and says so."""
        if self.ended >= self.issued:
            return
        for srv in self.servers:
            srv.drop_all()  # counts the tokens they streamed as discarded
        for rid in range(self.issued):
            if self.outcome[rid] == PENDING:  # not through `end`: a closed loop must not send more
                self.outcome[rid] = FAILED
                self.reason[rid] = UNFINISHED
                self.ended += 1
        self.pending_handoff, self._pending_need = [], []

    def run(self) -> Records:
        """Simulate until every issued request has ended."""
        self.fault_policy = "retry"
        if self.closed:
            pauses = self.reqs.pause_s
            if pauses is None:  # requests built by hand: draw them as generate does
                pauses = closed_loop_pauses(self.scenario.workload.arrival, self.n, self.scenario)
            self.pauses = pauses
            for _ in range(min(self.reqs.closed_loop_clients, self.n)):
                self.next_from_client(0.0)
        else:
            self.arrivals_from(0)
        for spec in self.scenario.faults:
            self.env.process(disruptions.fault(self, spec))
        if self.scenario.scheduler.elastic.enabled:
            self.env.process(disruptions.elastic(self))
        self.env.run_all()
        self.close_unfinished()
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
            transfer_wait_s=np.array(self.transfer_wait[:n], dtype=float),
            cache_hit_tokens=np.array(self.hits[:n], dtype=np.int64).reshape(-1, 3),
            cache_load_s=np.array(self.load_s[:n], dtype=float),
            retries=np.array(self.retries[:n], dtype=np.int64),
            preemptions=np.array(self.preemptions[:n], dtype=np.int64),
            segments=segs,
            servers=[(s.pool.index, s.local, s.pool.spec.role) for s in self.servers],
            kv_capacity=np.array([s.kv_cap for s in self.servers], dtype=float),
            events=self.env.calls,
            end_s=float(self.env.now) if math.isfinite(self.env.now) else 0.0,
            tokens_emitted=self.tokens_emitted,
            tokens_discarded=self.tokens_discarded,
            kv_peak=np.array([s.kv_peak for s in self.servers], dtype=float),
            counters=dict(self.counters),
            output_tokens=np.array(self.output[:n], dtype=np.int64),
            site=[SITES[w] for w in self.edge.where[:n]] if self.edge is not None else None,
        )
