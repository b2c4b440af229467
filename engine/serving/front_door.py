"""The front door: how requests come in, and whether and where each is queued.

Open-loop arrivals are issued at their drawn times (`arrivals_from`); a closed loop's clients each
send their next request a think time after their last one ended (`next_from_client`, subscribed to
the request ledger's "ended"); a multi-turn session's first turn comes at its drawn time and each
later turn a think time after the previous one ended (`next_turn`). A new request
first travels the way in (`way_in`: the network to the first serving site, the control plane's
decision, a MoE model's first-token latency; free by default for a dense model). It then meets,
in order:
the edge site, which answers where it goes (an edge instance, or the data centre after the
offload delay and backhaul); the KV capacity
checks (a request no instance of its role could hold is rejected at once); its class's pinned
pools and their overflow rule; degrading (`serve_less`: while entry capacity is short or the
backlog long, lower classes are shed and outputs capped); the router; and admission control,
which sees the TTFT the request would have there (`predicted_ttft`). Then it is queued.
"""

from __future__ import annotations

import heapq
import math
from typing import TYPE_CHECKING, Any, Final

from engine import policies
from engine.serving.cache import RequestBlocks
from engine.serving.ceiling import ClientCeiling
from engine.serving.ledger import (
    DEGRADED,
    FAILED,
    NO_INSTANCE,
    OVER_CONTEXT,
    REJECTED,
    TOO_LONG,
    TOO_LONG_LIVE,
    RequestLedger,
)
from engine.serving.way_in import WayIn
from engine.serving.workload import closed_loop_pauses

if TYPE_CHECKING:
    from engine.scenario.resolve import Resolved
    from engine.serving.edge import EdgeSite
    from engine.serving.fleet import Fleet
    from engine.serving.host import Clock
    from engine.serving.instance import Server
    from engine.serving.kv import KvLedger

_heappush: Final = heapq.heappush  # (Final: a C static in the compiled build, not a lookup by name)


class FrontDoor:
    """Arrivals, closed-loop clients, admission, degrading and queueing of new requests."""

    def __init__(
        self,
        resolved: Resolved,
        ledger: RequestLedger,
        fleet: Fleet,
        kv: KvLedger,
        env: Clock,
        blocks: RequestBlocks,
        queue: policies.QueueOrder,
        counters: dict[str, float],
        edge: EdgeSite | None,
    ) -> None:
        sc = resolved.scenario
        self.scenario = sc
        self.ledger = ledger
        self.fleet = fleet
        self.kv = kv
        self.env = env
        self.arrival_due_call = self._arrival_due  # bound once (a bound method is built at every read)
        self.blocks = blocks
        self.queue = queue
        # first come, first served (the default order) is `Fcfs.key` itself, not a call into the
        # interpreter at every arrival (a subclass may order otherwise)
        self.fcfs = type(queue) is policies.Fcfs
        self.counters = counters
        self.edge = edge
        self.n = len(ledger.reqs)
        # the network, the control plane and the first-token latency on the way in; None when all
        # are free (a dense model's default)
        free = sc.network.is_free() and sc.control_plane.is_free() and resolved.first_token_s == 0
        self.way_in = None if free else WayIn(resolved, ledger, env, self.arrive)
        self.admission = policies.build_admission(sc.scheduler.admission.as_dict())
        self.admits_all = isinstance(self.admission, policies.AdmitAll)
        self.mix = sc.iteration_scheduler().mixes_decodes
        # degrade (`deployment.degrade`): None when off, so arrivals pay nothing for it
        self.degrade = sc.deployment.degrade if sc.deployment.degrade.enabled else None
        counters.update(degraded_arrivals=0, capped_requests=0, capped_tokens=0)
        # the client's ceiling on requests in flight (`Arrival.max_in_flight`); a closed loop's
        # clients are their own
        cap = sc.workload.arrival.max_in_flight
        self.ceiling = (
            ClientCeiling(cap, self.n, env, self.send_held) if cap is not None and not ledger.closed else None
        )

    def start(self) -> None:
        """Issue the first requests: every client's first one, or the open loop's."""
        led = self.ledger
        if led.closed:
            pauses = led.reqs.pause_s
            if pauses is None:  # requests built by hand: draw them as generate does
                pauses = closed_loop_pauses(self.scenario.workload.arrival, self.n, self.scenario)
            self.pauses = pauses
            led.on_end.append(self.next_from_client)
            for _ in range(min(led.reqs.closed_loop_clients, self.n)):
                self.next_from_client(0.0)
        else:
            if led.follow is not None:  # multi-turn sessions: a later turn is sent when its previous one ends
                led.on_turn = self.next_turn
            if self.ceiling is not None:
                led.on_end.append(self.ceiling.ended)
            self.arrivals_from(0)

    def next_turn(self, rid: int, now: float, served: bool, cut: int) -> None:
        """A session's turn ended at `now`: its next one (`rid`) is sent a think time later, unless the
        turn was not served (the client has no answer to go on from) or the next would come after the
        window; then it and the session's later turns are never sent. An answer degrading capped by
        `cut` tokens leaves that much less context in every later turn's prompt."""
        led = self.ledger
        gap = led.gap[rid]
        if not served or now + gap >= self.scenario.duration_s:
            led.unsend(rid)
            return
        if cut > 0:
            follow = led.follow
            assert follow is not None
            later = rid
            while later >= 0:
                led.prompt[later] = led.pf_target[later] = max(1, led.prompt[later] - cut)
                self.blocks.set_prompt(later, led.prompt[later])
                later = follow[later]
        led.arrival[rid] = now + gap
        self.env.after(gap, self._offer, rid)

    def _offer(self, rid: int) -> None:
        """A request falls due: sent now, unless a client's ceiling holds it for a slot (`send_held`)."""
        if self.ceiling is None or self.ceiling.admit(rid):
            self.ledger.sent += 1
            self.arrive(rid)

    def arrivals_from(self, rid: int) -> None:
        """Open loop: issue every request due now from `rid` on, then wait for the next one (with
        sessions, every session's first turn: a later one is sent when the one before it ends)."""
        now = self.env.now
        led = self.ledger
        arrival, later = led.arrival, led.follow_up
        while rid < self.n:
            if later and later[rid]:
                rid += 1
                continue
            dt = arrival[rid] - now
            if dt > 0:
                self.env.after(dt, self.arrival_due_call, rid)
                return
            self._offer(rid)
            rid += 1

    def _arrival_due(self, rid: int) -> None:
        self._offer(rid)
        self.arrivals_from(rid + 1)

    def send_held(self, rid: int) -> None:
        """A request held at the client for a slot (`ClientCeiling`) goes out now: the server, and
        its TTFT and E2E, count from now."""
        led = self.ledger
        led.arrival[rid] = self.env.now
        led.sent += 1
        self.arrive(rid)

    def next_from_client(self, now: float) -> None:
        """Closed loop: a client starts, or one whose request ended sends its next after a think time.

        The pause is the next request's own (`Requests.pause_s`: start offsets, then think times
        drawn by request id), so every deployment sees the same pauses. A client whose next
        request would come after the window stops.
        """
        led = self.ledger
        if led.issued >= self.n:
            return
        rid = led.issued
        delay = float(self.pauses[rid])
        if now + delay >= self.scenario.duration_s:
            return
        led.issued += 1
        led.arrival[rid] = now + delay
        self.env.after(delay, self.arrive, rid)

    def arrive(self, rid: int, retry: bool = False) -> None:
        """A request arrives (or is retried): admission, routing, queueing."""
        led = self.ledger
        if not retry and self.way_in is not None and self.way_in.send(rid):
            return  # on its way in: it comes back here once through
        if led.prompt[rid] + led.output[rid] > self.fleet.context:  # as vLLM answers past max-model-len
            led.end(rid, REJECTED, OVER_CONTEXT)
            return
        if self.edge is not None:
            answer = self.edge.take(rid)
            if answer is not None:  # served at the edge, or on its way to the data centre
                srv, delay_s = answer
                if srv is not None:
                    self.enqueue(srv, rid)
                else:  # it comes back here once it reaches the data centre
                    if self.way_in is not None:
                        self.way_in.offloaded(rid, delay_s)
                    self.env.after(delay_s, self.arrive, rid, retry)
                return
        fleet = self.fleet
        need = led.prompt[rid] + led.output[rid]
        if need > fleet.decode_cap or led.prompt[rid] > fleet.prefill_cap:
            led.end(rid, REJECTED, TOO_LONG)
            return
        live = entry = fleet.servers_of("entry")
        if not live:
            led.end(rid, FAILED if retry else REJECTED, NO_INSTANCE)
            return
        if need > fleet.min_cap:  # some instances could never hold it: route among the others
            entry = [s for s in live if fleet.holds(s, rid)]
            if not entry:
                led.end(rid, FAILED if retry else REJECTED, TOO_LONG_LIVE)
                return
        if (
            fleet.disaggregated and entry[0].role == "prefill"
        ):  # (a decode pool fallen back serves whole requests)
            why = fleet.undeliverable(rid)
            if why:
                led.end(rid, FAILED if retry else REJECTED, why)
                return
        pinned = fleet.pinned[led.cls[rid]] if fleet.any_pins else None
        if pinned is not None:  # traffic isolation: the class's own pools, and what overflow does
            own = [s for s in entry if s.pool.index in pinned]
            spec = self.scenario.workload.classes[led.cls[rid]]
            full = not own or all(len(s.waiting) >= spec.spill_queue for s in own)
            if not full or spec.overflow == "wait":
                if not own:
                    led.end(rid, FAILED if retry else REJECTED, NO_INSTANCE)
                    return
                entry = own
            elif spec.overflow == "reject":
                led.end(rid, FAILED if retry else REJECTED, "isolation_full")
                return
        if self.degrade is not None and self.serve_less(rid, retry):
            return  # shed while degraded
        srv = fleet.route(rid, entry, "entry")
        view = led.request_view(rid)
        if not retry and not self.admits_all:
            # waiting in the chosen instance's pool (`queue_cap`'s "in its pool"): every entry pool's
            # queue turned an isolated class away over another pool's backlog (a review)
            pool = srv.pool
            queued = sum(len(s.waiting) for s in live if s.pool is pool)
            # the time spent on its way here (only where the way in or an edge site costs any)
            waited = (
                self.env.now - led.arrival[rid] if self.way_in is not None or self.edge is not None else 0.0
            )
            predicted, own_s = self.predicted_ttft(srv, rid, view)
            reason = self.admission.reject(view, queued, predicted, waited, own_s)
            if reason:
                led.end(rid, REJECTED, reason)
                return
        self.enqueue(srv, rid, view)

    def enqueue(self, srv: Server, rid: int, view: policies.RequestView | None = None) -> None:
        """Queue a request on the instance chosen for it (data centre or edge) and wake it."""
        led = self.ledger
        view = view or led.request_view(rid)
        key: tuple[Any, ...] = (view.arrival_s, view.rid) if self.fcfs else self.queue.key(view)
        _heappush(srv.waiting, (key, rid))
        srv.view = None
        srv.queue_tokens(rid, led.pf_target[rid])
        led.prefill_inst[rid] = srv.idx
        # a mixed instance serves the whole request: colocated, at the edge, or fallen back
        if (
            not self.fleet.disaggregated
            or srv.role == "mixed"
            or (self.edge is not None and srv.pool.spec.tier == "edge")
        ):
            led.decode_inst[rid] = srv.idx
        could = (  # `srv.has_slot()`, inlined
            len(srv.running) + len(srv.prefilling) + len(srv.loading) < srv.max_batch
            and srv.kv_reserved + self.kv.reserve_tokens(rid, srv.role) <= srv.kv_cap
        )
        srv.notify(could)

    def serve_less(self, rid: int, retry: bool) -> bool:
        """While a degrade trigger holds: shed the request (True) if its class is below the shedding
        priority, else cap its output; a retry is never shed (it was admitted before)."""
        if not self.degraded():
            return False
        dg = self.degrade
        assert dg is not None
        led = self.ledger
        if not retry:
            self.counters["degraded_arrivals"] += 1
            if led.priority[rid] < dg.shed_below_priority:
                led.end(rid, REJECTED, DEGRADED)
                return True
        cap = dg.max_output_tokens
        if cap and led.output[rid] > cap:
            self.counters["capped_requests"] += 1
            self.counters["capped_tokens"] += led.output[rid] - cap
            led.output[rid] = cap  # everything downstream (KV reserved, decode steps, metrics) sees the cap
            self.blocks.cap_output(rid, cap)  # and the cache: only generated tokens are stored
            led.views[rid] = None
        return False

    def degraded(self) -> bool:
        """Whether a trigger of `deployment.degrade` holds now: entry capacity short, or its backlog long."""
        dg = self.degrade
        assert dg is not None
        if dg.below_capacity and self.fleet.entry_share() < dg.below_capacity:
            return True
        if dg.above_backlog is not None:
            live = self.fleet.entry_servers()
            # prompts queued on entry instances, and prefilled prompts waiting for decode memory
            waiting = sum(len(s.waiting) for s in live) + len(self.kv.pending_handoff)
            return waiting > dg.above_backlog * len(live)
        return False

    def tokens_ahead(self, srv: Server, rid: int, view: policies.RequestView) -> int:
        """Prompt tokens a new request would wait behind under the queue's order: what `srv` has still
        to prefill less the waiting requests its key sorts before (earliest deadline, shortest prompt;
        strict priority as `Server.tokens_ahead` counts it). Every order had counted the whole queue,
        so early rejection turned away under EDF and SPF what FCFS did (a review)."""
        if srv.sim.by_priority:
            return srv.tokens_ahead(rid)
        key = self.queue.key(view)
        target, done = self.ledger.pf_target, self.ledger.prefilled
        behind = sum(target[r] - done[r] for k, r in srv.waiting if k > key)
        return max(srv.waiting_tokens - behind, 0)

    def predicted_ttft(
        self, srv: Server, rid: int, view: policies.RequestView | None = None
    ) -> tuple[float, float]:
        """What admission control expects the rest of this request's TTFT to be on `srv`, from now
        (the time it already spent on its way in is the policy's `waited_s`), and, where nothing is
        queued ahead of it and no decode shares the instance's iterations, its own prefill (the
        policy's `own_s`: the whole prediction then; 0 otherwise).

        The prompt tokens queued ahead of it (under strict priority, only those of its own and
        higher priorities; under another order than first come first served, `tokens_ahead`) plus
        its own, at the prefill rate the instance has now: a full token budget shared with the
        decodes it is running (chunked prefill), each iteration timed by the cost model; and never
        less than one chunk of its own prompt per iteration. Its own prompt counts less the prefix
        it would find in the cache tiers (`KvLedger.cached_tokens`):
        a warm prompt is not prefilled again.
        """
        d = len(srv.running) if srv.role == "mixed" and self.mix else 0
        q = max(float(srv.token_budget - d), 1.0)
        prompt = float(self.ledger.prompt[rid] - self.kv.cached_tokens(srv, rid))
        ctx = float(srv.ctx_sum) if d else 0.0
        t_iter = srv.step.cost(q, q * (prompt / 2.0 + q / 2.0), prompt / 2.0, d, ctx, 0, min(prompt, q))[0]
        # a prompt gets at most one chunk per iteration, however short the queue, and with
        # attention DP its chunks run on one rank
        own = 0.0
        if (srv.role == "mixed" and srv.chunked) or srv.ranks > 1:
            c = float(min(srv.chunk_cap, prompt))
            own = (
                math.ceil(prompt / c)
                * srv.step.cost(c, c * (prompt / 2.0 + c / 2.0), prompt / 2.0, d, ctx, 0, c)[0]
            )
        alone = prompt * t_iter / q
        if own < alone:
            own = alone
        if view is None or self.fcfs:
            ahead = srv.tokens_ahead(rid)
        else:  # what sorts before it in the queue's order
            ahead = self.tokens_ahead(srv, rid, view)
        total = (ahead + prompt) * t_iter / q
        # its own prefill, where nothing is queued ahead of it nor decoding beside it (0 otherwise):
        # `d` prices the decodes sharing a mixed iteration, 0 where prefills run first (`prefill_first`),
        # which stalls the running decodes instead, so the instance's running batch decides
        solo = ahead == 0 and (srv.role != "mixed" or not srv.running)
        return (total if total > own else own), (own if solo else 0.0)
