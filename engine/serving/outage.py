"""What a fault or a role switch does to an instance: it goes down, drops what it held, comes back.

A lost instance hands back every request it held (the simulation retries or fails them), counts
the tokens they had streamed as discarded, clears its cache tiers and bumps its `generation`, so
every call scheduled for its old work (iteration ends, cache loads, KV transfers from or to it)
finds it gone. `Outage` is a part of `engine.serving.instance.Server`, kept in its own room.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from engine.core.traits import trait
from engine.serving.cache import LruBlocks

if TYPE_CHECKING:
    from engine.policies import InstanceView
    from engine.serving.host import Host


@trait
class Outage:
    """The fault-handling part of a serving instance (the state it clears is the instance's)."""

    sim: Host[Any]
    role: str
    future_role: str
    up: bool
    busy: bool
    busy_switching: bool
    restores: bool
    waiting: list[tuple[tuple[float, ...], int]]
    waiting_tokens: int
    tokens_by_priority: dict[int, int]
    prefilling: list[int]
    running: dict[int, int]
    finish: list[tuple[int, int]]
    finish_of: dict[int, int]
    steps_done: int
    ctx_sum: int
    incoming: list[int]
    swapped: list[tuple[int, int, int]]
    loading: set[int]
    ready: list[tuple[int, int, int]]
    kv_reserved: int
    kv_used: int
    pins: dict[int, tuple[list[Hashable], int, int]]
    """Requests reading blocks of the HBM tier (`KvLedger.share`): rid -> (the blocks, the prompt
    tokens they save counted in `kv_shared`, the tokens they save that its reservation leaves out).
    The blocks' memory counts in `kv_reserved` once per block, whatever the requests reading it."""
    kv_shared: int
    """Tokens of `kv_used` read from pinned blocks beyond the blocks' own memory (held once, read by
    several): `kv_used - kv_shared` is the KV memory the requests hold."""
    inbound: int
    generation: int
    jump: tuple[float, int, float, int, tuple[float, float, float]] | None
    jump_growth: int
    kick_pending: bool
    token: int
    hbm: LruBlocks | None
    host: LruBlocks | None
    view: InstanceView | None  # the router's view of the instance (None once a field it carries changes)

    def notify(self, could_start: bool) -> None:
        """Start work if idle (the instance's)."""
        raise NotImplementedError

    def decode_stopped(self) -> None:
        """Forget the end of the batch's last decode step (the instance's: a float attribute set in a
        mypyc trait does not compile, mypy 2.4's mypyc)."""
        raise NotImplementedError

    def take_down(self) -> list[int]:
        """Lose the instance: return every request it held; it serves nothing until brought up."""
        held = self.drop_all()
        self.up = False
        self.view = None
        if self.busy_switching:  # a switch under way is abandoned: it returns in its old role
            self.future_role = self.role
        # (a decode instance serving whole requests in a fallback keeps its future role, decode)
        self.sim.roles_changed()
        if self.hbm is not None:
            self.hbm.clear()
        if self.host is not None:
            self.host.clear()
        return held

    def drop_all(self) -> list[int]:
        """Forget every request the instance holds and whatever it had under way; return them.

        The caller ends or retries them. Tokens they had streamed are counted as discarded, and
        the generation bumps, so calls scheduled for the old work (iteration ends, cache loads,
        KV transfers from or to here) find it gone.
        """
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
        self.generation += 1
        self.waiting, self.prefilling, self.incoming, self.swapped = [], [], [], []
        self.running, self.finish, self.finish_of, self.loading, self.ready = {}, [], {}, set(), []
        self.waiting_tokens = self.kv_reserved = self.kv_used = self.ctx_sum = self.inbound = 0
        self.pins = {}
        self.kv_shared = 0
        if self.hbm is not None:
            self.hbm.unpin_all()
        self.tokens_by_priority = {}
        self.view = None
        self.busy = False
        self.jump = None
        self.jump_growth = 0
        self.kick_pending = False
        self.decode_stopped()
        self.token += 1  # whatever was under way never finishes
        return list(dict.fromkeys(held))

    def bring_up(self) -> None:
        """The instance is back (empty)."""
        self.up = True
        self.view = None
        self.busy_switching = False
        self.restores = False
        self.sim.roles_changed()
        self.notify(True)
