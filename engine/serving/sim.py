"""The simpy model of LLM serving: the actors of a run, wired together, and the clock that drives them.

Each instance (`engine.serving.instance.Server`) runs continuous batching as a small state machine on
simpy's event queue: idle, running one iteration, or running one decode jump, each ending with a
timed call (`host.Clock`: a bare function call in the queue, ordered as a simpy timeout would be)
that applies the work and forms the next batch. A run of decode-only iterations with an unchanging
batch is one event too (`step.StepModel.decode_run` sums its steps in closed form), so events are a
small multiple of requests, whatever the output lengths. The run's other actors each own one invariant:

- the request ledger (`ledger`): every request's state; a request ends exactly once, with a reason;
- the fleet (`fleet`): the live instances by role, their capacities, and routing among them;
- the KV ledger (`kv`, with `handoffs` and `link`): reservations and releases, the prefix cache,
  hand-offs over the link and the parked ones, swaps; KV never exceeds an instance's capacity;
- the front door (`front_door`, with `edge`): arrivals, closed-loop clients, admission, degrading.

This module wires them, satisfies what instances and disruptions may see and call (`host.Host`,
`host.DisruptionHost`), owns what happens at a request's milestones (a prompt prefilled, a
transfer landed, a request completed or lost to a fault) and runs the clock. Faults and elastic
roles are simpy processes in `engine.serving.disruptions`; policies decide from read-only views.
"""

from __future__ import annotations

import bisect
import gc
import math
from collections.abc import Hashable

import numpy as np

from engine import policies
from engine.scenario.resolve import Resolved
from engine.serving import disruptions
from engine.serving.autoscale import Scaling
from engine.serving.cache import RequestBlocks
from engine.serving.edge import SITES, EdgeSite
from engine.serving.fleet import Fleet
from engine.serving.front_door import FrontDoor
from engine.serving.host import Clock, Host
from engine.serving.instance import Server
from engine.serving.kv import KvLedger
from engine.serving.ledger import (
    COMPLETED,
    FAILED,
    LOST,
    NO_DECODE,
    PENDING,
    SEGMENT_COLUMNS,
    Records,
    RequestLedger,
    without_unsent,
)
from engine.serving.rows import RowLog
from engine.serving.workload import Requests, whole_run

_COUNTERS = (
    "preemptions", "recomputed_tokens", "swapped_bytes", "retried", "role_switches", "role_drains", "role_restores",
    "link_faults", "fallbacks", "transfer_tokens_saved",
)  # fmt: skip


class Simulation(Host[Server]):
    """One run: its actors, the clock, and what happens at each request's milestones; `run()` returns Records.

    It names `host.Host` as its base, not only satisfies it: the compiled build then reaches the
    simulation's attributes and calls from an instance natively (a trait's slots), not by name."""

    def __init__(self, resolved: Resolved, reqs: Requests) -> None:
        sc = resolved.scenario
        self.resolved, self.scenario, self.reqs, self.n = resolved, sc, reqs, len(reqs)
        self.env = Clock()
        self.tokens_emitted = 0
        self.tokens_discarded = 0
        self.ledger = led = RequestLedger(resolved, reqs, self.env)
        # the per-request lists instances read, handed over once (`host.Host`)
        self.arrival, self.prompt, self.output, self.pf_target = (
            led.arrival,
            led.prompt,
            led.output,
            led.pf_target,
        )
        self.prefilled, self.context, self.priority = led.prefilled, led.context, led.priority
        self.resume, self.prefill_start = led.resume, led.prefill_start
        self.mix = sc.iteration_scheduler().mixes_decodes
        self.preempt = sc.scheduler.preemption != "none"
        self.swap = sc.scheduler.preemption == "swap"
        self.cache_on = sc.cache.enabled
        queue = policies.build_queue(sc.scheduler.queue.as_dict())
        self.by_priority = isinstance(queue, policies.StrictPriority)
        self.counters: dict[str, float] = dict.fromkeys(_COUNTERS, 0)
        self.block_names = blocks = RequestBlocks(reqs)  # each request's block hashes, built on first use
        self.segments = RowLog(len(SEGMENT_COLUMNS))  # one row per iteration or decode jump
        self.servers: list[Server] = []
        for pool in resolved.pools:
            for j in range(pool.spec.count):
                self.servers.append(Server(self, len(self.servers), j, pool))
        self.fleet = fleet = Fleet(resolved, led, self.servers, blocks)
        self.kv = kv = KvLedger(resolved, led, fleet, self.env, blocks, queue, self.counters)
        kv.on_delivered, kv.on_lost = self.delivered, self.lost
        self.link_factor = kv.link.factor  # link faults scale it (`disruptions`)
        self.edge = EdgeSite(resolved, fleet, led) if sc.deployment.edge is not None else None
        self.front = FrontDoor(resolved, led, fleet, kv, self.env, blocks, queue, self.counters, self.edge)
        self.fallen: list[Server] = []  # decode instances serving whole requests (`deployment.fallback`)
        self.fault_policy = "retry"
        # autoscaled pools (`Pool.autoscale`): None when no pool autoscales, so other runs pay nothing
        scaled = any(p.spec.autoscale is not None for p in resolved.pools)
        means = (
            (float(np.mean(reqs.prompt_tokens)), float(np.mean(reqs.output_tokens))) if self.n else (1.0, 1.0)
        )
        self.scaling = Scaling(self, means) if scaled else None

    # --- what instances and disruptions call (`host.Host`, `host.DisruptionHost`) ----------------
    def reserve_tokens(self, rid: int, role: str) -> int:
        """KV tokens a request reserves on admission to an instance of a role."""
        return self.kv.reserve_tokens(rid, role)

    def use_cache(self, srv: Server, rid: int) -> float:
        """Look the prompt up in the cache tiers; the seconds its hit takes to load."""
        return self.kv.use_cache(srv, rid)

    def hbm_share(self, srv: Server, rid: int, room: int) -> tuple[list[Hashable], int, int] | None:
        """The HBM-cached blocks a request admitted to `srv` would read (`KvLedger.hbm_share`)."""
        return self.kv.hbm_share(srv, rid, room)

    def share(self, srv: Server, rid: int, share: tuple[list[Hashable], int, int]) -> int:
        """Pin the HBM blocks an admitted request reads (`KvLedger.share`)."""
        return self.kv.share(srv, rid, share)

    def swap_time(self, srv: Server, tokens: int) -> float:
        """Seconds to move `tokens` of KV between HBM and host memory."""
        return self.kv.swap_time(srv, tokens)

    def preempt_request(self, srv: Server, rid: int) -> None:
        """`srv` ran out of KV memory and takes `rid` off its batch."""
        self.kv.preempt_request(srv, rid)

    def roles_changed(self) -> None:
        """An instance went down, came back or switched roles."""
        self.fleet.roles_changed()

    def servers_of(self, role: str) -> list[Server]:
        """Live servers currently in a role (a shared list: do not modify it)."""
        return self.fleet.servers_of(role)

    def retry_handoffs(self) -> None:
        """Try the parked prefill-to-decode hand-offs again."""
        self.kv.retry_handoffs()

    def link_down(self, pool: int, reject: bool, forever: bool) -> None:
        """A pool's KV link goes down: its hand-offs fail (`reject`, or `forever`) or wait."""
        self.kv.link.take_down(pool, reject, forever)
        if reject or forever:
            self.kv.recheck()  # parked hand-offs from the pool fail now

    def link_up(self, pool: int, reject: bool) -> None:
        """A pool's KV link is back: what waited for it is sent."""
        self.kv.link.bring_up(pool, reject)
        self.kv.retry_handoffs()

    def strand_handoffs(self) -> list[int]:
        """Forget the parked hand-offs whose prefill instance is down; return their requests."""
        return self.kv.strand_handoffs()

    @property
    def pending_handoff(self) -> list[tuple[Server, int]]:
        """Prefilled prompts waiting for decode memory (the KV ledger's list)."""
        return self.kv.pending_handoff

    @property
    def issued(self) -> int:
        """Requests sent so far."""
        return self.ledger.issued

    @property
    def ended(self) -> int:
        """Requests closed so far."""
        return self.ledger.ended

    def arrived(self, now: float) -> int:
        """Requests sent by `now` (ids are in time order but for a session's later turns)."""
        led = self.ledger
        if led.follow is not None or self.front.ceiling is not None:  # (a held request's arrival moves)
            return led.sent
        return bisect.bisect_right(led.arrival, now, 0, led.issued)

    def rejoined(self, srv: Server, rid: int) -> None:
        """A preempted request rejoins `srv`'s batch: its stall ends with the next decode step."""
        led = self.ledger
        now = self.env.now
        led.stalls.append((rid, srv.idx, led.stalled.pop(rid, now), now))

    # --- a request's milestones -----------------------------------------------------------------
    def prefill_done(self, srv: Server, rid: int) -> None:
        """A prompt is fully prefilled: first token (colocated) or hand-off (disaggregated)."""
        led, kv = self.ledger, self.kv
        if self.cache_on and led.resume[rid] < 0:
            kv.remember(srv, rid, full=False)
        if srv.role != "mixed":
            kv.handoff(srv, rid, True)
            return
        if led.resume[rid] >= 0:  # a recomputed request picks up where it was preempted
            remaining = led.resume[rid]
            led.resume[rid] = -1
            self.rejoined(srv, rid)
            srv.start_decoding(rid, led.pf_target[rid], remaining)
            return
        led.first_token[rid] = self.env.now
        self.tokens_emitted += 1
        if led.output[rid] <= 1:
            led.context[rid] = led.prompt[rid]
            kv.release(srv, rid)
            led.end(rid, COMPLETED)
        else:
            srv.start_decoding(rid, led.prompt[rid], led.output[rid] - 1)

    def delivered(self, dst: Server, rid: int) -> None:
        """A hand-off's KV cache landed on its decode instance: the first token, then decoding."""
        led = self.ledger
        led.first_token[rid] = self.env.now
        self.tokens_emitted += 1
        led.context[rid] = led.prompt[rid]
        dst.kv_used += led.prompt[rid]
        if self.cache_on:
            self.kv.landed(dst, rid)
        if led.output[rid] <= 1:
            self.kv.release(dst, rid)
            led.end(rid, COMPLETED)
            return
        dst.incoming.append(rid)
        dst.view = None
        dst.notify(len(dst.running) < dst.max_batch)

    def complete(self, srv: Server, rid: int) -> None:
        """A request produced its last token."""
        if self.cache_on:
            self.kv.remember(srv, rid, full=True)
            self.block_names.drop(rid)
        self.kv.release(srv, rid)
        self.ledger.end(rid, COMPLETED)

    def lost(self, rid: int, policy: str | None = None) -> None:
        """A request's instance failed: retry it from the start or fail it, per the fault."""
        led = self.ledger
        if led.outcome[rid] != PENDING:
            return
        if (policy or self.fault_policy) == "fail":
            led.end(rid, FAILED, LOST)
            return
        led.retried(rid)
        self.counters["retried"] += 1
        self.front.arrive(rid, retry=True)

    def service_lost(self) -> None:
        """Instances left a role, maybe for good: end now what nothing could ever serve.

        Disaggregated only (a colocated instance serves a request from end to end, and a retried
        request finds out at arrival). Prompts waiting for decode memory are handed off again,
        which places them, keeps them waiting, or fails them. With no decode instance left at
        all, prompts on the prefill side could never go anywhere: they fail at once, and what
        those instances had under way is dropped.
        """
        if not self.fleet.disaggregated:
            return
        self.kv.retry_handoffs()
        if self.fleet.future_cap("decode") > 0:
            return
        for srv in self.servers:
            if srv.up and srv.role != "decode" and srv.pool.spec.tier == "datacenter":  # the edge serves on
                for rid in srv.drop_all():
                    self.ledger.end(rid, FAILED, NO_DECODE)

    # --- the run --------------------------------------------------------------------------------
    def close_unfinished(self) -> None:
        """The safety net: whatever is still in flight when the run ends fails, and says so."""
        if self.ledger.ended >= self.ledger.issued:
            return
        for srv in self.servers:
            srv.drop_all()  # counts the tokens they streamed as discarded
        self.ledger.close_unfinished()
        self.kv.drop_parked()

    def run(self) -> Records:
        """Simulate until every issued request has ended."""
        self.fault_policy = "retry"
        self.front.start()
        for spec in self.scenario.faults:
            self.env.process(disruptions.fault(self, spec))
        if self.scenario.scheduler.elastic.enabled:
            self.env.process(disruptions.elastic(self))
        if self.scaling is not None:
            self.scaling.start()
        # the loop makes no garbage in reference cycles (every event's tuples and lists are freed by
        # their counts; a whole run of the default preset and of `bench.scenarios.everything_on` left
        # none), so the cyclic collector, which would walk the growing ledger and iteration rows
        # for nothing, is off while it runs (docs/performance.md), and as it was afterwards
        collecting = gc.isenabled()
        gc.disable()
        try:
            self.env.run_all()
        finally:
            if collecting:
                gc.enable()
        # the run ends when its last request does, and an open loop not before its window does (the
        # user rents the window, idle or not): timers that outlive both (an autoscaler's ticks, a
        # fault still under way) bill nothing; a request left unfinished ends with the clock
        settled = 0 < self.ledger.issued == self.ledger.ended
        left = [_kv_held(s) for s in self.servers] if settled else []
        self.close_unfinished()
        end_s = float(self.env.now) if math.isfinite(self.env.now) else 0.0
        if settled:
            end_s = self.ledger.last_end_s
        if not whole_run(self.scenario):
            end_s = max(end_s, self.scenario.duration_s)
        if self.scaling is not None:
            self.scaling.log.close(end_s)
        n = self.ledger.issued
        segs = self.segments.array()
        rec = Records(
            **self.ledger.columns(),
            segments=segs,
            servers=[(s.pool.index, s.local, s.pool.spec.role) for s in self.servers],
            kv_capacity=np.array([s.kv_cap for s in self.servers], dtype=float),
            events=self.env.calls,
            end_s=end_s,
            tokens_emitted=self.tokens_emitted,
            tokens_discarded=self.tokens_discarded,
            kv_peak=np.array([s.kv_peak for s in self.servers], dtype=float),
            counters=dict(self.counters),
            site=[SITES[w] for w in self.edge.where[:n]] if self.edge is not None else None,
            network_s=self._paid(n, "network_s"),
            control_s=self._paid(n, "control_s"),
            client_wait_s=np.array(self.front.ceiling.wait[:n]) if self.front.ceiling is not None else None,
            scaling=self.scaling.log if self.scaling is not None else None,
            kv_left=np.array(left, dtype=float) if any(left) else None,
            prompt_tokens=None
            if self.ledger.follow is None
            else np.array(self.ledger.prompt, dtype=np.int64),
        )
        return rec if self.ledger.follow is None else without_unsent(rec)

    def _paid(self, n: int, what: str) -> np.ndarray | None:
        # what each request paid on its way in (`way_in`), when the scenario charges anything
        way = self.front.way_in
        return None if way is None or not way.charges else np.array(getattr(way, what)[:n], dtype=float)


def _kv_held(srv: Server) -> int:
    """What an instance still holds of KV: its reservation, its shared tokens, its pins (each 0 once
    every request has ended)."""
    return (
        abs(srv.kv_reserved)
        + abs(srv.kv_shared)
        + len(srv.pins)
        + (len(srv.hbm.pins) if srv.hbm is not None else 0)
    )
