"""The KV ledger: who holds which KV memory, and the rule that it never exceeds an instance's capacity.

Without preemption a request reserves its prompt plus its output on admission (TensorRT-LLM's
"guaranteed no evict"), so memory never overflows. With preemption it reserves what it holds and
grows a token a step; when memory runs out a victim is recomputed or swapped to host memory
(`preempt_request`; see `engine.scenario.model.Scheduler`).

Disaggregated, a finished prompt's KV cache is handed off over the link (`engine.serving.link`)
to a decode instance that has room for it, chosen by the router; where none has room now but one
could later, the hand-off is parked until decode memory is freed (`retry_handoffs`) or the fleet
changes. The prefix cache's tiers (`engine.serving.cache`) are looked up before a prefill
(`use_cache`) and filled after one (`remember`).

The ledger answers rather than calls up: when a transfer lands it publishes the outcome to the
simulation's hooks (`on_delivered`, `on_lost`), which deliver the first token or retry the request.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, cast

from engine.serving.cache import LruBlocks, RequestBlocks, found_in, held_run
from engine.serving.handoffs import ParkedHandoffs
from engine.serving.ledger import FAILED, RequestLedger
from engine.serving.link import KvLink

if TYPE_CHECKING:
    from engine import policies
    from engine.scenario.resolve import Resolved
    from engine.serving.fleet import Fleet
    from engine.serving.host import Clock
    from engine.serving.instance import Server


class KvLedger(ParkedHandoffs):
    """KV reservations and releases, the prefix cache, hand-offs over the link, and swaps."""

    def __init__(
        self,
        resolved: Resolved,
        ledger: RequestLedger,
        fleet: Fleet,
        env: Clock,
        blocks: RequestBlocks,
        queue: policies.QueueOrder,
        counters: dict[str, float],
    ) -> None:
        sc = resolved.scenario
        super().__init__()
        self.ledger = ledger
        self.fleet = fleet
        self.env = env
        self.transferred_call = self.transferred  # bound once (a bound method is built at every read)
        self.reqs = ledger.reqs
        self.blocks = blocks
        self.queue = queue
        self.counters = counters
        self.cache = sc.cache
        self.cache_on = sc.cache.enabled
        self.preempt = sc.scheduler.preemption != "none"
        self.swap = sc.scheduler.preemption == "swap"
        self.link = KvLink(resolved)
        # the pooled store is shared and keyed by block hash, so it keeps one copy of a block whatever
        # the readers' ranks (as Mooncake's store, LMCache's one save of an MLA latent); each rank then
        # reads out the heads it holds (`use_cache`: the loads count `Server.kv_bytes`, every copy)
        self.pooled = (
            LruBlocks(
                int(
                    sc.cache.pooled.capacity_gb
                    * 1e9
                    // (resolved.pools[0].instance.kv_bytes_per_token * self.reqs.block_tokens)
                )
            )
            if self.cache_on and sc.cache.pooled.enabled
            else None
        )
        self._found_for = -1  # the request whose lookup `_found` holds (`hbm_share`, `use_cache`)
        self._found = (0, 0, 0)
        self.on_delivered: Callable[[Server, int], None] = _unset
        self.on_lost: Callable[[int], None] = _unset

    # --- reservations -----------------------------------------------------------------------
    def reserve_tokens(self, rid: int, role: str) -> int:
        """KV tokens a request reserves on admission to an instance of a role."""
        if role == "prefill" or self.preempt:
            return self.ledger.pf_target[rid]
        return self.ledger.pf_target[rid] + self.ledger.output[rid]

    def release_tokens(self, rid: int, role: str) -> int:
        """KV tokens a finished request gives back."""
        led = self.ledger
        if role == "prefill":
            return led.prompt[rid]
        if self.preempt:
            return led.context[rid]
        return led.prompt[rid] + led.output[rid]

    def release_prefilled(self, srv: Server, rid: int) -> None:
        """Free a prefilled prompt's KV on the prefill instance that held it for the hand-off."""
        prompt = self.ledger.prompt[rid]
        srv.kv_reserved -= prompt + (self.unshare(srv, rid) if srv.pins else 0)
        srv.view = None
        srv.kv_used -= prompt
        srv.notify(True)

    def release(self, srv: Server, rid: int) -> None:
        """Give back a request's KV reservation and memory on its instance."""
        led, role = self.ledger, srv.role
        if srv.pins:
            srv.kv_reserved -= self.unshare(srv, rid)
        # `release_tokens`, inlined (every request ends here)
        if role == "prefill":
            srv.kv_reserved -= led.prompt[rid]
        elif self.preempt:
            srv.kv_reserved -= led.context[rid]
        else:
            srv.kv_reserved -= led.prompt[rid] + led.output[rid]
        srv.view = None
        srv.kv_used -= led.context[rid]
        if role == "decode" and self.pending_handoff:  # (`retry_handoffs` returns at once without)
            self.retry_handoffs()
        if not srv.busy or srv.jump is not None:  # (else `notify` does nothing: the batch is being formed)
            srv.notify(True)

    # --- the prefix cache -------------------------------------------------------------------
    def hit_tokens(self, rid: int, found: int) -> int:
        """The prompt tokens a cached prefix of `found` blocks saves: all but the prompt's last token,
        which is prefilled to give the first one."""
        # (two-value min and max are written out on the per-event path: `StepModel.decode_run`)
        hit, most = found * self.reqs.block_tokens, self.ledger.prompt[rid] - 1
        return most if most < hit else hit

    def cached_tokens(self, srv: Server, rid: int) -> int:
        """The prompt tokens `srv` would find in its tiers now (as `use_cache` counts them at
        admission, without touching the tiers' order): early rejection's prediction. 0 with the
        cache off, or for a preempted request coming back."""
        if not self.cache_on or self.ledger.resume[rid] >= 0:
            return 0
        n_hbm, n_host, n_pooled = found_in(self.blocks.prompt_blocks(rid), srv.hbm, srv.host, self.pooled)
        return self.hit_tokens(rid, n_hbm + n_host + n_pooled)

    def _split(self, rid: int, n_hbm: int, n_host: int, n_pooled: int) -> tuple[int, int, int]:
        """The prompt tokens a hit of blocks found in the tiers saves, per tier (HBM, host, pooled)."""
        total = n_hbm + n_host + n_pooled
        bt = self.reqs.block_tokens
        hit = self.hit_tokens(rid, total)
        scale = hit / (total * bt)
        from_host, from_pooled = int(n_host * bt * scale), int(n_pooled * bt * scale)
        return hit - from_host - from_pooled, from_host, from_pooled

    def hbm_share(self, srv: Server, rid: int, room: int) -> tuple[list[Hashable], int, int] | None:
        """What a request admitted to `srv` would read from its HBM tier: the blocks (pinned while
        it runs, shared with every other request reading them), the prompt tokens they save (which
        it does not reserve) and the tokens of those blocks no request has pinned yet (which it
        does: counted only where `room`, what memory leaves beside the rest of its reservation, could
        not take every block, else all of them, the most it can be; `share` settles the count);
        None without an HBM hit or for a preempted request coming back."""
        hbm = srv.hbm
        self._found_for = -1
        if hbm is None or not hbm.blocks or self.ledger.resume[rid] >= 0:
            return None
        blocks = self.blocks.prompt_blocks(rid)
        n_hbm, n_host, n_pooled = found_in(blocks, hbm, srv.host, self.pooled)
        # kept for `use_cache` right after: pinning and the shrink that follows leave the hit in place
        self._found_for, self._found = rid, (n_hbm, n_host, n_pooled)
        if not n_hbm:
            return None
        held, bt = hbm.blocks, self.reqs.block_tokens
        mine: list[Hashable]
        if not (n_host or n_pooled) or held_run(blocks, hbm) == n_hbm:  # (most hits: HBM's lead the prompt)
            mine = cast("list[Hashable]", blocks[:n_hbm])
        else:
            mine = [b for b in blocks[: n_hbm + n_host + n_pooled] if b in held]
        shared = self._split(rid, n_hbm, n_host, n_pooled)[0]
        new = len(mine) * bt
        if new - shared > room:  # tight: the blocks already pinned may make it fit
            new = hbm.unpinned(mine) * bt
        return mine, shared, new

    def share(self, srv: Server, rid: int, share: tuple[list[Hashable], int, int], read: bool = True) -> int:
        """Pin the HBM blocks an admitted request reads (`hbm_share`); `read`: its context counts in
        `kv_used` now (a hand-off's counts when it lands, `landed`). Returns the tokens of the blocks
        it pinned first less those `share` counted (0, or less where it took the most)."""
        hbm = srv.hbm
        assert hbm is not None
        new = hbm.pin(share[0]) * self.reqs.block_tokens
        srv.kv_shared -= new
        if read:
            srv.kv_shared += share[1]
        srv.pins[rid] = (share[0], share[1] if read else 0, share[1])
        return new - share[2]

    def landed(self, dst: Server, rid: int) -> None:
        """A hand-off's KV is in place on its decode instance. Its context now counts in `kv_used`,
        and so do the shared tokens it reads; its prompt's blocks join the instance's HBM tier, where
        the next prompt sharing them finds them (a decode instance with prefix caching hashes the
        blocks it receives, as vLLM's does)."""
        read = 0  # the leading blocks it reads from the tier: held, and pinned until it ends
        if dst.pins:
            got = dst.pins.get(rid)
            if got is not None:
                read = len(got[0])
                if not got[1]:
                    dst.kv_shared += got[2]
                    dst.pins[rid] = (got[0], got[2], got[2])
        hbm = dst.hbm
        if hbm is not None:
            free = (dst.kv_cap - dst.kv_reserved) // self.reqs.block_tokens
            hbm.capacity = free if free > 0 else 0
            blocks = self.blocks.prompt_blocks(rid)
            hbm.insert(blocks[read:] if read else blocks)

    def unshare(self, srv: Server, rid: int) -> int:
        """Unpin a request's shared HBM blocks on `srv`; returns what its release frees beyond its own
        reservation: the blocks no request reads now, less the shared tokens it never reserved."""
        pins = srv.pins
        got = pins.get(rid)
        if got is None:
            return 0
        del pins[rid]
        hbm = srv.hbm
        freed = (hbm.unpin(got[0]) if hbm is not None else 0) * self.reqs.block_tokens
        srv.kv_shared += freed - got[1]
        return freed - got[2]

    def use_cache(self, srv: Server, rid: int) -> float:
        """Look the prompt up in the tiers; skip the prefix found; return the load time."""
        led = self.ledger
        if led.resume[rid] >= 0:
            return 0.0
        blocks = self.blocks.prompt_blocks(rid)
        hbm, host, pooled = srv.hbm, srv.host, self.pooled
        if self._found_for == rid:  # `hbm_share` looked it up as it was admitted
            n_hbm, n_host, n_pooled = self._found
            self._found_for = -1
        else:
            n_hbm, n_host, n_pooled = found_in(blocks, hbm, host, pooled)
        total = n_hbm + n_host + n_pooled
        if total == 0:
            return 0.0
        from_hbm, from_host, from_pooled = self._split(rid, n_hbm, n_host, n_pooled)
        hit = from_hbm + from_host + from_pooled
        led.hits[rid] = (from_hbm, from_host, from_pooled)  # HBM, host, pooled
        # a read refreshes the tiers that served it (as a GPU prefix hit leaves the CPU or
        # pooled copy's recency alone); the prefill's write-through refreshes every tier later
        hit_blocks = blocks[:total]
        if n_hbm and hbm is not None:
            hbm.touch(hit_blocks)
        if n_host and host is not None:
            host.touch(hit_blocks)
        if n_pooled and pooled is not None:
            pooled.touch(hit_blocks)
        led.prefilled[rid] = hit
        srv.kv_used += hit
        srv.queue_tokens(rid, -hit)
        kvb = srv.kv_bytes  # every rank loads the copy it holds (MLA: the latent, once a rank)
        cache = self.cache
        load = from_host * kvb / (cache.host.bandwidth_gb_s * 1e9) + from_pooled * kvb / (
            cache.pooled.bandwidth_gb_s * 1e9
        )
        led.load_s[rid] = load
        return load

    def remember(self, srv: Server, rid: int, full: bool) -> None:
        """Put a request's blocks into the instance's tiers and the pool, as just used.

        At the end of a prefill: the prompt's blocks. At completion: the prompt's and the
        answer's, as one sequence (what the next turn of a conversation reuses; inserted
        together, a prompt ages tail first, see `LruBlocks`). Host memory is the prefill side's
        tier: a decode instance keeps what it received and produced in HBM only, so the next
        turn sends it only what it lacks.
        """
        blocks = self.blocks.full_blocks(rid) if full else self.blocks.prompt_blocks(rid)
        if srv.hbm is not None:
            free = (srv.kv_cap - srv.kv_reserved) // self.reqs.block_tokens
            srv.hbm.capacity = free if free > 0 else 0
            srv.hbm.insert(blocks)
        if srv.host is not None and srv.role != "decode":
            srv.host.insert(blocks)
        if self.pooled is not None:
            self.pooled.insert(blocks)

    # --- hand-offs --------------------------------------------------------------------------
    def handoff(self, srv: Server, rid: int, fresh: bool = False) -> None:
        """Send a prefilled prompt to a decode instance with room, or park it until one has some;
        `fresh`: its prefill has just ended (`Simulation.prefill_done`), so its layers may have streamed
        behind it."""
        if self.send(srv, rid, fresh):
            return
        why = self.why_not(srv, rid)
        if why:  # no decode instance that could take it will ever be up again, or the link is down
            self.release_prefilled(srv, rid)
            self.ledger.end(rid, FAILED, why)
        else:  # waits for decode memory, or for an instance to come back
            self.park(srv, rid, self.handoff_need(rid))

    def handoff_need(self, rid: int) -> int:
        """KV tokens a hand-off reserves on the decode instance."""
        led = self.ledger
        return led.prompt[rid] if self.preempt else led.pf_target[rid] + led.output[rid]

    def send(self, srv: Server, rid: int, fresh: bool = False) -> bool:
        """Reserve room on a decode instance and send the KV cache over the link; False if none has room.

        Only a `fresh` hand-off (its prefill just ended) hides behind its prefill: a parked one had no
        decode instance to stream to while it waited, so all of its bytes cross now (its prefill's
        time, counted to now, let hundreds of parked prompts cross a link at once: a review)."""
        if self.link.down[srv.pool_index]:
            return False  # nothing crosses a link that is down
        led = self.ledger
        need = led.prompt[rid] if self.preempt else led.pf_target[rid] + led.output[rid]  # `handoff_need`
        decode = self.fleet.servers_of("decode")
        allowed = self.fleet.decode_pools(srv, rid)
        if allowed is not None:  # this pool, or this request's class, hands off to some decode pools only
            decode = [d for d in decode if d.pool_index in allowed]
        if self.preempt:  # room also for the jump under way and every request's next token
            whole = led.prompt[rid] + led.output[rid]  # and for all it will grow to
            fits = [
                d
                for d in decode
                if d.kv_reserved + d.jump_growth + need + len(d.running) + 1 <= d.kv_cap and whole <= d.kv_cap
            ]
        else:
            fits = (
                decode  # (most hand-offs: every decode instance has room, and the router sees the same list)
            )
            for d in decode:
                if d.kv_reserved + need > d.kv_cap:
                    fits = [d for d in decode if d.kv_reserved + need <= d.kv_cap]
                    break
        if not fits:
            return False
        dst = self.fleet.route(rid, fits, "decode")
        dst.inbound += 1
        led.decode_inst[rid] = dst.idx
        tokens = float(led.prompt[rid])
        if self.cache_on and dst.hbm is not None:  # only blocks the decode side lacks cross the link
            held, less = self._decode_share(dst, rid, dst is not srv)
            need -= less
            tokens -= held
            self.counters["transfer_tokens_saved"] += held
        dst.kv_reserved += need
        dst.view = None
        if dst.kv_reserved > dst.kv_peak:
            dst.kv_peak = dst.kv_reserved
        now = self.env.now
        # (two-value max written out, as in `use_cache`)
        prefill_s = now - led.prefill_start[rid] if fresh else 0.0
        end, queued = self.link.send(
            srv, tokens, dst.kv_bytes, now, 0.0 if prefill_s < 0.0 else prefill_s, fresh
        )
        led.transfer[rid] = end - now
        led.transfer_wait[rid] = queued  # behind other transfers (on the NIC or the shared fabric)
        self.env.after(end - now, self.transferred_call, srv, dst, rid, srv.generation, dst.generation)
        return True

    def _decode_share(self, dst: Server, rid: int, pin: bool) -> tuple[int, int]:
        """Pin the prompt's blocks the decode instance holds already (they are read there, not sent);
        returns their tokens and what the reservation leaves out: those tokens, less the blocks no
        request read before (their memory is reserved now).

        Not `pin`: a prefill instance switched to decode hands a prompt it still holds to itself
        (elastic roles); its prefill side's pin stands until the hand-off frees it, so the decode
        side reserves the whole context rather than pin the blocks a second time under one request."""
        hbm = dst.hbm
        assert hbm is not None
        blocks = self.blocks.prompt_blocks(rid)
        n = held_run(blocks, hbm)
        if not n:
            return 0, 0
        bt = self.reqs.block_tokens
        held = n * bt
        held = self.ledger.prompt[rid] if self.ledger.prompt[rid] < held else held
        if not pin:
            return held, 0
        mine = cast("list[Hashable]", blocks[:n])
        new = n * bt + self.share(dst, rid, (mine, held, n * bt), read=False)
        return held, held - new

    def transferred(self, src: Server, dst: Server, rid: int, src_gen: int, dst_gen: int) -> None:
        """The KV cache has arrived: free the prefill side; deliver, or lose it to a fault on either side."""
        if src.generation == src_gen:
            self.release_prefilled(src, rid)
        if dst.generation == dst_gen:
            dst.inbound -= 1
        if src.generation != src_gen or dst.generation != dst_gen:
            if dst.generation == dst_gen:
                dst.kv_reserved -= (
                    self.reserve_tokens(rid, "decode") if not self.preempt else self.ledger.prompt[rid]
                ) + (self.unshare(dst, rid) if dst.pins else 0)
                dst.view = None
                # the room is free again: hand-offs waiting for it, or (on an instance fallen
                # back to serving whole requests) a prompt queued behind it, may start now
                if dst.role == "decode":
                    self.retry_handoffs()
                dst.notify(True)
            self.on_lost(rid)
            return
        self.on_delivered(dst, rid)

    # --- preemption -------------------------------------------------------------------------
    def swap_time(self, srv: Server, tokens: int) -> float:
        """Seconds to move `tokens` tokens of KV between HBM and host memory over PCIe: each rank moves
        the copy it holds over its own link (`Instance.kv_bytes_held`: whole KV heads, MLA's latent)."""
        inst = srv.pool.instance
        return tokens * inst.kv_bytes_held / (srv.pool.hardware.pcie_gb_s * 1e9 * inst.tp)

    def preempt_request(self, srv: Server, rid: int) -> None:
        """Take a running request off the instance to free its memory (recompute or swap)."""
        led = self.ledger
        ctx, remaining = srv.leave(rid)
        srv.kv_reserved -= ctx + (self.unshare(srv, rid) if srv.pins else 0)
        srv.kv_used -= ctx
        srv.view = None
        led.preemptions[rid] += 1
        self.counters["preemptions"] += 1
        # its last token came with the batch's last decode step (a lower bound where it joined since)
        led.stalled.setdefault(rid, srv.last_decode if srv.last_decode >= 0.0 else self.env.now)
        if self.swap:
            self.counters["swapped_bytes"] += 2.0 * ctx * srv.pool.instance.kv_bytes_held
        else:
            self.counters["recomputed_tokens"] += ctx
        if self.swap or srv.role == "decode":
            # swapped out to host memory, or (decode instance) recomputed in place once memory frees
            srv.swapped.append((rid, ctx, remaining))
            return
        led.pf_target[rid] = ctx
        led.prefilled[rid] = 0
        led.resume[rid] = remaining
        heapq.heappush(srv.waiting, (self.queue.key(led.request_view(rid)), rid))
        srv.view = None
        srv.queue_tokens(rid, ctx)


def _unset(*_: object) -> None:
    raise AssertionError("the simulation wires the KV ledger's hooks before it runs")
