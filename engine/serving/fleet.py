"""The fleet: the instances of a run, which are live in which role, and who may take a request.

An instance serves in one role at a time (prefill, decode or mixed) and may be down (a fault),
switching roles or draining (elastic roles). The fleet keeps the live instances of each role as
shared lists, recomputed only when roles change (`roles_changed`, which also bumps `roles_epoch`
so the KV ledger knows its parked hand-offs must be checked again), and answers the questions
routing asks: which instances could ever hold a request (`holds`, `future_cap`), which decode
pools a hand-off may go to (`decode_pools`), why none ever could (`undeliverable`), and which
instance the router picks (`route`, from read-only views). The edge site's instances are listed
apart (role "edge"): an edge chip's small memory must not turn requests away at the data centre.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine import policies
from engine.serving.cache import RequestBlocks, leading_run_in
from engine.serving.instance import current_views, least_loaded, least_ranked, views_of
from engine.serving.ledger import NO_DECODE, TOO_LONG_LIVE, RequestLedger

if TYPE_CHECKING:
    from engine.scenario.resolve import Resolved
    from engine.serving.instance import Server


class Fleet:
    """The run's instances by role, their KV capacities, and routing among them."""

    check_views = False
    """Check, at every route, each instance's kept view against one built afresh (tests set it:
    a write of a field the view carries that does not reset `Server.view` makes routing stale)."""

    def __init__(
        self, resolved: Resolved, ledger: RequestLedger, servers: list[Server], blocks: RequestBlocks
    ) -> None:
        sc = resolved.scenario
        self.ledger = ledger
        self.reqs = ledger.reqs
        self.servers = servers
        self.blocks = blocks
        self.router = policies.build_router(sc.scheduler.router.as_dict())
        self.cache_on = sc.cache.enabled
        r = self.router
        # a ranked router's rank when `route` answers from kept ranks alone (`least_ranked`), else None
        self._ranked = (
            r.rank if r.ranked and not (r.needs_prefix and self.cache_on) and not r.needs_timing else None
        )
        # least_loaded itself (not a subclass, whose rank may differ): its rank's terms kept as floats
        self._loads = self._ranked is not None and type(r) is policies.LeastLoaded
        self.ticks: dict[str, int] = {}
        self._live: dict[str, list[Server]] | None = None  # servers_of's lists, until roles change
        self._future: dict[str, int] | None = None  # future_cap's figures, until roles change
        self._future_decode: dict[int, int] = {}  # the same for decode, per pool (set with _future)
        self.roles_epoch = 0
        self._entry_share: tuple[int, float] = (-1, 1.0)  # (roles epoch, live share of entry capacity)
        self.disaggregated = sc.deployment.mode == "disaggregated"
        # each instance's throughput over the fastest's, per role (exactly 1.0 when all chips match)
        best = [max(s.rates[k] for s in servers) for k in (0, 1)]
        for srv in servers:
            srv.speeds = (
                srv.rates[0] / best[0] if best[0] > 0 else 1.0,
                srv.rates[1] / best[1] if best[1] > 0 else 1.0,
            )
        # the data centre's instances: an edge chip's small memory must not turn requests away here
        dc = [s for s in servers if s.pool.spec.tier == "datacenter"]
        self.decode_cap = max(s.kv_cap for s in dc if s.role in ("decode", "mixed"))
        self.prefill_cap = max(s.kv_cap for s in dc if s.role in ("prefill", "mixed"))
        self.min_cap = min(s.kv_cap for s in dc)  # below it, every instance holds a request
        # the model's context: a server refuses a request whose prompt and output together pass it
        self.context = resolved.pools[0].instance.model.max_context
        self._pins(resolved)

    def _pins(self, resolved: Resolved) -> None:
        """Per class, the pools it is pinned to; per pool, the decode pools it hands off to."""
        classes = resolved.scenario.workload.classes
        index_of = {p.spec.name: p.index for p in resolved.pools}
        decoders = {p.index for p in resolved.pools if p.spec.role == "decode"}
        self.pinned_decode: list[frozenset[int] | None] = [
            frozenset(index_of[n] for n in c.pools if index_of[n] in decoders) or None for c in classes
        ]
        self.pinned: list[frozenset[int] | None] = [
            frozenset(index_of[n] for n in c.pools if index_of[n] not in decoders) or None for c in classes
        ]
        self.any_decode_pins = any(p is not None for p in self.pinned_decode)
        self.any_pins = any(p is not None for p in self.pinned)  # (else no arrival reads its class)
        # per class: whether it spills to other pools (`overflow = "spill"`), also once its own decode pools are lost
        self.spills: list[bool] = [c.overflow == "spill" for c in classes]
        # per pool: the decode pools its hand-offs may go to (pool indices), or None for any
        self.targets: list[frozenset[int] | None] = [
            frozenset(index_of[n] for n in p.spec.sends_to) if p.spec.sends_to else None
            for p in resolved.pools
        ]
        # hand-offs go to some decode pools only (a pool's `sends_to`, a class's decode pins)
        self.routed_handoffs = self.any_decode_pins or any(p.spec.sends_to for p in resolved.pools)

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
        self.roles_epoch += 1
        for s in self.servers:  # (each write of `up` or `role` resets its view too)
            s.view = None

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
        led = self.ledger
        need = led.prompt[rid] if srv.role == "prefill" else led.prompt[rid] + led.output[rid]
        return need <= srv.kv_cap

    def decode_pools(self, sender: Server, rid: int) -> frozenset[int] | None:
        """The decode pools a prompt prefilled on `sender` may go to (None: any).

        The sending pool's `sends_to` and the class's decode pools together; where they share
        none, the class's own decode pools win. A class that spills (`overflow = "spill"`) whose own
        decode pools are lost for good may go to any (and past a `sends_to` whose pools are lost too).
        """
        routes = self.targets[sender.pool_index]
        if not self.any_decode_pins:
            return routes
        cls = self.reqs.cls[rid]
        pins = self.pinned_decode[cls]
        if self.spills[cls] and pins is not None and not self._serving(pins):
            # its own decode pools are lost for good: it spills to any decode pool that can take it
            pins = None
            routes = routes if routes is None or self._serving(routes) else None
        if routes is None or pins is None:
            return pins if routes is None else routes
        return (routes & pins) or pins

    def _serving(self, pools: frozenset[int]) -> bool:
        """True when some decode instance of `pools` serves now or will again."""
        self.future_cap("decode")  # (brings the per-pool figures up to date)
        return any(self._future_decode.get(p, 0) > 0 for p in pools)

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
        led = self.ledger
        return TOO_LONG_LIVE if led.prompt[rid] + led.output[rid] > cap else ""

    def route(self, rid: int, servers: list[Server], key: str) -> Server:
        """The server the router picks among `servers`."""
        tick = self.ticks.get(key, 0)
        self.ticks[key] = tick + 1
        if len(servers) == 1:
            return servers[0]
        if self._ranked is not None and not self.check_views:  # most routes: the branch below, shorter
            srv = servers[least_loaded(servers) if self._loads else least_ranked(servers, self._ranked)]
            if srv.up:
                return srv
        router = self.router
        if router.needs_prefix and self.cache_on:
            blocks = self.blocks.prompt_blocks(rid)
            bt = self.reqs.block_tokens
            # each instance's own tiers: the pooled store serves every instance alike
            views = views_of(servers, [leading_run_in(blocks, s.own_blocks) * bt for s in servers])
        elif router.needs_timing:  # the decode step each instance would run with this request
            prompt = self.ledger.prompt[rid]
            views = views_of(servers, None, [s.step_with(prompt) for s in servers])
            view = self.ledger.request_view(rid)._replace(now_s=servers[0].sim.env.now)
            return servers[router.choose(view, views, tick)]
        elif router.ranked:  # from each instance's rank, kept with its view
            at = least_loaded(servers) if self._loads else least_ranked(servers, router.rank)
            if self.check_views:
                fresh = _check(current_views(servers), servers, router, self._loads)
                if servers[at].up and at != router.choose(self.ledger.request_view(rid), fresh, tick):
                    raise AssertionError(f"the kept ranks chose position {at}, the router would not")
            if servers[at].up:  # (the least of all is the least of those up)
                return servers[at]
            views = current_views(servers)
        else:
            views = current_views(servers)
            if self.check_views:
                _check(views, servers)
        return servers[router.choose(self.ledger.request_view(rid), views, tick)]

    def entry_share(self) -> float:
        """Peak prefill FLOP/s of the live entry instances in their own role, over all entry pools'.

        Decode instances fallen back to serving whole requests do not count: they stand in for
        the entry pools' capacity, they do not restore it. Recomputed only when roles change.
        """
        epoch, share = self._entry_share
        if epoch != self.roles_epoch:

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
            self._entry_share = (self.roles_epoch, share)
        return share


def _check(
    views: list[policies.InstanceView],
    servers: list[Server],
    router: policies.Router | None = None,
    loads: bool = False,
) -> list[policies.InstanceView]:
    """Raise if a kept view differs from the instance as it is now (`Fleet.check_views`), or (with a
    ranked `router`) a kept rank from the view's (`loads`: least_loaded's terms, kept as floats);
    return the fresh views."""
    fresh = views_of(servers)
    for kept, now, srv in zip(views, fresh, servers, strict=True):
        if kept != now:
            raise AssertionError(f"instance {srv.idx}: stale router view {kept} against {now}")
        if router is None:
            continue
        # (least_loaded's rank ends in the position: its kept terms are the rank's first two)
        kept_rank = (srv.rank_tokens, srv.rank_running, now.position) if loads else srv.rank
        rank = router.rank(now) if loads else (*router.rank(now), now.position)
        if kept_rank != rank:
            raise AssertionError(f"instance {srv.idx}: stale rank {kept_rank} against its view {now}")
    return fresh
