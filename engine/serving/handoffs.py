"""Parked hand-offs: prefilled prompts waiting for a decode instance with room, and their retries.

A disaggregated prompt whose decode side has no room now, but could later, is parked with the KV
tokens it would reserve. Every release of decode memory tries the parked prompts again
(`retry_handoffs`), in the order they arrived; a change of the fleet (a fault, a role switch)
checks each again, and fails those that nothing could ever take (`_recheck_handoffs`). The
KV ledger (`engine.serving.kv.KvLedger`) is the one user of this part.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from engine.serving.ledger import FAILED, RequestLedger

if TYPE_CHECKING:
    from engine.serving.fleet import Fleet
    from engine.serving.instance import Server
    from engine.serving.link import KvLink


class ParkedHandoffs:
    """The parked hand-offs of the KV ledger, in arrival order, with what each would reserve."""

    ledger: RequestLedger
    fleet: Fleet
    link: KvLink
    preempt: bool

    def __init__(self) -> None:
        self.pending_handoff: list[tuple[Server, int]] = []
        # what each parked hand-off would reserve on a decode instance, in the same order
        self._pending_need: list[int] = []
        # retry_handoffs skips its scan while nothing waiting can fit: the fewest tokens a waiting
        # prompt needs (never above the true least) and the fleet it was checked against
        self._pending_min_need: float = math.inf
        self._pending_epoch = -1

    def send(self, srv: Server, rid: int, fresh: bool = False) -> bool:
        """Reserve room on a decode instance and start the transfer (the KV ledger's)."""
        raise NotImplementedError

    def handoff(self, srv: Server, rid: int, fresh: bool = False) -> None:
        """Send a prefilled prompt on, or park it (the KV ledger's)."""
        raise NotImplementedError

    def release_prefilled(self, srv: Server, rid: int) -> None:
        """Free a prefilled prompt's KV on its prefill instance (the KV ledger's)."""
        raise NotImplementedError

    def why_not(self, srv: Server, rid: int, cap: int | None = None) -> str:
        """Why a prefilled prompt on `srv` fails rather than waits ('' when it may wait): no decode
        instance that could take it will ever be up (`Fleet.undeliverable`), or its link refuses."""
        return self.fleet.undeliverable(rid, cap, srv) or self.link.refusal(srv)

    def park(self, srv: Server, rid: int, need: int) -> None:
        """Park a prefilled prompt that needs `need` KV tokens on a decode instance."""
        self.pending_handoff.append((srv, rid))
        self._pending_need.append(need)
        self._pending_min_need = min(self._pending_min_need, need)

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
        fleet = self.fleet
        decode = fleet.servers_of("decode")
        room = self._decode_room(decode)
        if self._pending_epoch != fleet.roles_epoch:
            self._recheck_handoffs(decode, room)
            return
        if self._pending_min_need > room:
            return  # the same fleet as at the last look, and no waiting prompt fits: nothing changes
        # the same fleet: every waiting prompt's prefill instance is still up, and still deliverable
        pending, needs = self.pending_handoff, self._pending_need
        routed = fleet.routed_handoffs
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
                allowed = fleet.decode_pools(srv, rid)
                if allowed is not None and needs[i] > max((rooms.get(p, -1) for p in allowed), default=-1):
                    i += 1
                    continue
            if self.send(srv, rid):
                del pending[i], needs[i]
                room = self._decode_room(decode)
                if routed:
                    rooms = self._pool_rooms(decode)
                continue
            # no single instance takes it (preemption: its whole length)
            why = self.why_not(srv, rid)
            if why:
                del pending[i], needs[i]
                self.release_prefilled(srv, rid)
                self.ledger.end(rid, FAILED, why)
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
        fleet = self.fleet
        cap = fleet.future_cap("decode")
        epoch = fleet.roles_epoch
        led = self.ledger
        prompt, output, pf_target, preempt = led.prompt, led.output, led.pf_target, self.preempt
        for srv, rid in pending:
            if not srv.up:
                continue
            need = prompt[rid] if preempt else pf_target[rid] + output[rid]  # as handoff reserves
            if need <= room:
                self.handoff(srv, rid)
                room = self._decode_room(decode)
                continue
            why = self.why_not(srv, rid, cap)  # fits nowhere now
            if why:
                self.release_prefilled(srv, rid)
                led.end(rid, FAILED, why)
            else:
                self.pending_handoff.append((srv, rid))
                self._pending_need.append(need)
                if need < self._pending_min_need:
                    self._pending_min_need = float(need)  # (compared only: a float for mypyc)
        self._pending_epoch = epoch

    def recheck(self) -> None:
        """Something other than the fleet changed what may be delivered: check every parked hand-off."""
        self._pending_epoch = -1
        self.retry_handoffs()

    def strand_handoffs(self) -> list[int]:
        """Forget the waiting hand-offs whose prefill instance is down; return their requests."""
        pending, needs = self.pending_handoff, self._pending_need
        keep = [j for j, (srv, _) in enumerate(pending) if srv.up]
        stranded = [rid for srv, rid in pending if not srv.up]
        self.pending_handoff = [pending[j] for j in keep]
        self._pending_need = [needs[j] for j in keep]
        return stranded

    def drop_parked(self) -> None:
        """Forget every parked hand-off (the run has ended)."""
        self.pending_handoff, self._pending_need = [], []

    def _pool_rooms(self, decode: list[Server]) -> dict[int, int]:
        """The most KV tokens a hand-off could reserve on an instance of each decode pool."""
        rooms: dict[int, int] = {}
        for d in decode:
            r = d.kv_cap - d.kv_reserved - (d.jump_growth + len(d.running) + 1 if self.preempt else 0)
            if r > rooms.get(d.pool.index, -1):
                rooms[d.pool.index] = r
        return rooms

    def _decode_room(self, decode: list[Server]) -> int:
        """The most KV tokens a hand-off could reserve on any of `decode` (the test `send` applies)."""
        if self.preempt:
            return max(
                (d.kv_cap - d.kv_reserved - d.jump_growth - len(d.running) - 1 for d in decode), default=-1
            )
        return max((d.kv_cap - d.kv_reserved for d in decode), default=-1)
