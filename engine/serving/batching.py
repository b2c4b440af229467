"""How an instance forms its next batch: which prompts it admits, which requests rejoin, who is preempted.

A waiting request is admitted (and its KV reserved) only when the iteration has token budget
for it, as vLLM's scheduler does, so the backlog stays in the queue, where the queue order
decides who goes next. Prompts whose prefix comes from a slower cache tier, and preempted
requests swapped back in or recomputed, are `loading` until their KV is in place, then rejoin at
the next iteration boundary. With preemption, a decode step that would not fit in memory takes
victims first (lowest priority, latest arrival). `BatchFormation` is a part of
`engine.serving.instance.Server`, kept in its own room.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any, Final

from engine.core.traits import trait
from engine.costmodel.step import StepModel
from engine.serving.cache import LruBlocks

if TYPE_CHECKING:
    from engine.policies import InstanceView
    from engine.serving.host import Host

_heappop: Final = heapq.heappop  # (Final: a C static in the compiled build, not a lookup by name)


@trait
class BatchFormation:
    """The batch-forming part of a serving instance (the state it reads is the instance's)."""

    sim: Host[Any]
    idx: int
    role: str
    step: StepModel
    kv_cap: int
    kv_reserved: int
    kv_peak: int
    kv_used: int
    kv_shared: int
    max_batch: int
    token_budget: int
    chunked: bool
    chunk_cap: int
    waiting: list[tuple[tuple[float, ...], int]]
    prefilling: list[int]
    running: dict[int, int]
    incoming: list[int]
    swapped: list[tuple[int, int, int]]
    loading: set[int]
    ready: list[tuple[int, int, int]]
    generation: int
    busy: bool
    token: int
    hbm: LruBlocks | None
    view: InstanceView | None  # the router's view of the instance (None once a field it carries changes)

    def has_slot(self) -> bool:
        """True when the running batch can take another request (the instance's)."""
        raise NotImplementedError

    def notify(self, could_start: bool) -> None:
        """Start work if idle (the instance's)."""
        raise NotImplementedError

    def queue_tokens(self, rid: int, delta: int) -> None:
        """Account prompt tokens still to prefill (the instance's)."""
        raise NotImplementedError

    def start_decoding(self, rid: int, context: int, remaining: int) -> None:
        """A request joins the decode batch (the instance's)."""
        raise NotImplementedError

    def kick(self) -> None:
        """Form the next batch now and start it, or go idle (the instance's)."""
        raise NotImplementedError

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

    def _stall(self, seconds: float) -> None:
        """Hold the batch while preempted requests' KV is swapped out (vLLM copies the blocks out
        before the step that needed their room runs), then form it again."""
        self.busy = True
        self.sim.env.after(seconds, self._stalled, self.token)

    def _stalled(self, token: int) -> None:
        if token != self.token:
            return  # a fault reset the instance meanwhile
        self.busy = False
        self.kick()

    def _schedule_prefill(self) -> list[tuple[int, int, int]]:
        """Prefill work of the next iteration: continuing prompts, then new ones from the queue.

        A waiting request is admitted (and its KV reserved) only when this iteration has token
        budget for it, as vLLM's scheduler does, so the backlog stays in the queue, where the
        queue order decides who goes next.
        """
        if not self.prefilling and not self.waiting:
            return []  # nothing to prefill (most calls: a decoding instance forming its next jump)
        sim = self.sim
        pf_target, prefilled = sim.pf_target, sim.prefilled
        mixed_chunks = self.chunked and self.role == "mixed"  # prompts may be split
        running = len(self.running)
        budget = self.token_budget - (running if sim.mix and self.role == "mixed" else 0)
        chunk_cap = self.chunk_cap
        chunks: list[tuple[int, int, int]] = []
        for rid in self.prefilling:
            if budget <= 0:
                break
            done = prefilled[rid]
            left = pf_target[rid] - done
            if mixed_chunks:
                q = min(left, chunk_cap, budget)
            elif left <= budget or not chunks:
                q = left
            else:
                continue
            chunks.append((rid, q, done))
            budget -= q
        waiting = self.waiting
        if not waiting or budget <= 0:
            return chunks
        # with preemption, keep room for every running request's next token (a watermark)
        spare = running + 1 if sim.preempt and self.role == "mixed" else 0
        slots = self.max_batch - running  # `has_slot`, less the prefills and loads counted below
        while waiting and budget > 0 and len(self.prefilling) + len(self.loading) < slots:
            rid = waiting[0][1]
            need = sim.reserve_tokens(rid, self.role)
            # an HBM prefix hit is read where it is cached, not copied: the request reserves the
            # blocks it adds, and the hit's blocks once for every request reading them
            share = (
                sim.hbm_share(self, rid, self.kv_cap - self.kv_reserved - spare - need)
                if self.hbm is not None
                else None
            )
            if share is not None:
                need += share[2] - share[1]
            if self.kv_reserved + need + spare > self.kv_cap:
                break
            if not mixed_chunks and chunks and pf_target[rid] > budget:
                break  # a whole prompt that does not fit this iteration waits for the next
            _heappop(waiting)
            if share is not None:
                need += sim.share(self, rid, share)
            self.kv_reserved += need
            self.view = None
            if self.kv_reserved > self.kv_peak:
                self.kv_peak = self.kv_reserved
            if self.hbm is not None:
                self.hbm.shrink((self.kv_cap - self.kv_reserved) // sim.reqs.block_tokens)
            load_s = sim.use_cache(self, rid) if sim.cache_on else 0.0
            if load_s > 0:
                self.loading.add(rid)
                sim.env.after(load_s, self._loaded, rid, self.generation)
                continue
            self.prefilling.append(rid)
            sim.prefill_start[rid] = sim.env.now
            done = prefilled[rid]
            left = pf_target[rid] - done
            q = min(left, chunk_cap, budget) if mixed_chunks else left
            chunks.append((rid, q, done))
            budget -= q
        return chunks

    def _loaded(self, rid: int, generation: int) -> None:
        if generation != self.generation:
            return
        self.loading.discard(rid)
        self.prefilling.append(rid)
        self.view = None
        self.sim.prefill_start[rid] = self.sim.env.now
        self.notify(True)

    def _admit_incoming(self) -> None:
        sim = self.sim
        while self.incoming and len(self.running) + len(self.loading) < self.max_batch:
            rid = self.incoming.pop(0)
            self.view = None
            self.start_decoding(rid, sim.prompt[rid], sim.output[rid] - 1)

    def _admit_swapped(self) -> bool:
        """Bring back preempted requests (before new ones) once their memory is free again: swapped
        ones over PCIe beside the batch; a decode instance's recomputed ones by prefilling their
        contexts on its own chips first (True: that recompute now holds the batch)."""
        sim = self.sim
        redo: list[tuple[int, int, int]] = []
        work = [0.0, 0.0, 0.0]  # the recompute's seconds, FLOPs and bytes
        while self.swapped and len(self.running) + len(self.loading) < self.max_batch:
            rid, ctx, remaining = self.swapped[0]
            if self.kv_reserved + ctx + len(self.running) + 1 > self.kv_cap:
                break
            self.swapped.pop(0)
            self.kv_reserved += ctx
            self.view = None
            if self.kv_reserved > self.kv_peak:
                self.kv_peak = self.kv_reserved
            self.loading.add(rid)
            if sim.swap:
                sim.env.after(sim.swap_time(self, ctx), self._resumed, (rid, ctx, remaining), self.generation)
                continue
            t, flops, nbytes = self.step.cost(ctx, ctx * ctx / 2.0, 0, 0, 0.0, 0, ctx)  # a prefill of ctx
            work[0] += t
            work[1] += flops
            work[2] += nbytes
            redo.append((rid, ctx, remaining))
        if not redo:
            return False
        self.busy = True  # the chips prefill the contexts again before the batch's next step
        sim.env.after(work[0], self._recomputed, self.token, (redo, sim.env.now, work))
        return True

    def _recomputed(self, token: int, done: tuple[list[tuple[int, int, int]], float, list[float]]) -> None:
        if token != self.token:
            return  # a fault reset the instance meanwhile (as `_stalled`, which ends this)
        redo, t0, (t, flops, nbytes) = done
        sim = self.sim
        waiting = len(self.waiting) + len(self.incoming)
        # one row of `ledger.SEGMENT_COLUMNS`: prefill work that produced no token
        row = (
            self.idx,
            t0,
            sim.env.now,
            flops,
            nbytes,
            float(self.kv_used - self.kv_shared),
            len(redo),
            waiting,
            t,
            0,
            0,
            0.0,
            0.0,
        )
        sim.segments.add(row)
        for item in redo:
            self._resumed(item, self.generation)
        self._stalled(token)

    def _resumed(self, item: tuple[int, int, int], generation: int) -> None:
        if generation != self.generation:
            return
        rid, ctx, _ = item
        self.loading.discard(rid)
        self.kv_used += ctx
        self.ready.append(item)  # joins at the next iteration boundary, not mid-iteration
        self.notify(True)
