"""Disruptions a scenario schedules: instances lost and restored, and elastic role switches.

Both are simpy processes over the simulation, seen through `engine.serving.host.DisruptionHost`:
a fault takes instances of a pool down at a time (their requests are retried from the start or
failed, per the fault) and brings them back after a while or never; the elastic controller moves
an instance to the other role when that role's backlog passes a threshold (an idle one at once;
with drain, a busy one after the backlog has lasted, once it has finished what it holds), at a
switch cost in seconds. Whenever either leaves a role with less capacity for good, the simulation ends at
once the requests nothing could serve any more (`DisruptionHost.service_lost`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.scenario.model import Fault

if TYPE_CHECKING:
    from engine.serving.host import DisruptionHost
    from engine.serving.instance import Server


def fault(sim: DisruptionHost[Server], spec: Fault) -> Any:
    """At spec.at_s, take instances of a pool down (or degrade its KV link); restore after spec.duration_s."""
    yield sim.env.timeout(spec.at_s)
    pool = next(p for p in sim.resolved.pools if p.spec.name == spec.pool)
    if spec.kind == "link":
        sim.counters["link_faults"] += 1
        if spec.link_factor == 0.0:
            yield from _link_down(sim, pool.index, spec)
            return
        sim.link_factor[pool.index] *= spec.link_factor
        if spec.duration_s is not None:
            yield sim.env.timeout(spec.duration_s)
            sim.link_factor[pool.index] /= spec.link_factor
        return
    victims = [s for s in sim.servers if s.pool is pool and s.up][: spec.instances]
    sim.fault_policy = spec.in_flight
    held: list[int] = []
    for srv in victims:
        srv.restores = spec.duration_s is not None
        held += srv.take_down()
    if sim.scenario.deployment.fallback == "colocated" and not sim.servers_of("entry"):
        _fall_back(sim)
    stranded = sim.strand_handoffs()
    for rid in held + stranded:
        sim.lost(rid, spec.in_flight)
    sim.service_lost()
    if spec.duration_s is not None:
        yield sim.env.timeout(spec.duration_s)
        for srv in victims:
            srv.bring_up()
        sim.retry_handoffs()
        # whichever fault's end brings a prefill instance back ends the fallback, not only the
        # fault that started it (another fault may have taken the last prefill instance)
        fallen = _prefill_back(sim)
        if fallen:
            yield from _restore_roles(sim, fallen)


def _link_down(sim: DisruptionHost[Server], pool: int, spec: Fault) -> Any:
    """A pool's KV link is down: hand-offs from it wait or fail (`Fault.link_down`) until it is back."""
    reject = spec.link_down == "reject"
    sim.link_down(pool, reject, forever=spec.duration_s is None)
    if spec.duration_s is None:
        return
    yield sim.env.timeout(spec.duration_s)
    sim.link_up(pool, reject)


def _prefill_back(sim: DisruptionHost[Server]) -> list[Server]:
    """With a prefill instance up again, the instances of the fallback under way, which it no
    longer owns (none when no fallback is under way or prefill is still down)."""
    if not (sim.fallen and sim.servers_of("prefill")):
        return []
    fallen, sim.fallen = sim.fallen, []
    return fallen


def end_fallback(sim: DisruptionHost[Server]) -> None:
    """A prefill instance came back some other way (an elastic switch): end a fallback under way."""
    fallen = _prefill_back(sim)
    if fallen:
        sim.env.process(_restore_roles(sim, fallen))


def _fall_back(sim: DisruptionHost[Server]) -> None:
    """No prefill instance is left: every live decode instance serves whole requests meanwhile.

    Instances still draining from an earlier fallback (their prompts not yet finished) fall back
    again at once rather than turn to decoding with no prefill instance up.
    """
    draining = [
        s
        for s in sim.servers
        if s.up and s.role == "mixed" and s.future_role == "decode" and s.draining and s not in sim.fallen
    ]
    fallen = list(sim.servers_of("decode")) + draining
    if not fallen:
        return
    for srv in fallen:
        srv.view = None
        srv.role = "mixed"  # its future role stays decode: what it decodes, and what is sent to it, stays
        srv.draining = False
    sim.counters["fallbacks"] += 1
    sim.fallen += fallen
    sim.roles_changed()
    for srv in fallen:
        srv.notify(True)


def _restore_roles(sim: DisruptionHost[Server], fallen: list[Server]) -> Any:
    """Prefill is back: the fallen-back instances take no new prompts, finish the ones they hold,
    then decode only again (unless prefill is lost again meanwhile and they fall back anew)."""
    for srv in fallen:
        srv.draining = True
    sim.roles_changed()
    left = list(fallen)
    while left:
        for srv in list(left):
            if srv in sim.fallen:  # fell back again while draining: the new fallback owns it
                left.remove(srv)
                continue
            if not srv.up or not (srv.waiting or srv.prefilling or srv.loading):
                srv.draining = False
                if srv.role == "mixed":
                    srv.role = "decode"
                    srv.view = None
                left.remove(srv)
                sim.roles_changed()
                sim.retry_handoffs()
                srv.notify(True)
        if left:
            yield sim.env.timeout(0.5)


def elastic(sim: DisruptionHost[Server]) -> Any:
    """Move an instance to the role whose backlog is over the threshold, and back once it is calm.

    An idle instance of the other role switches at once. With `drain`, once the backlog has
    stayed over the threshold for `sustain_s` and none is idle, the least loaded instance of the
    other role is drained (no new work; what it holds finishes) and switches when empty. With
    `restore`, once both backlogs have stayed at most a quarter of the threshold for
    `restore_after_s`, one moved instance returns to its pool's role (`_restore_one`).
    """
    cfg = sim.scenario.scheduler.elastic
    horizon = sim.scenario.duration_s
    limit = 20.0 * horizon + 3600.0
    over_since: dict[str, float] = {}
    calm_since: float | None = None
    draining: Server | None = None
    while (sim.env.now < horizon or sim.ended < sim.issued) and sim.env.now < limit:
        yield sim.env.timeout(cfg.check_s)
        if draining is not None:  # a drained instance switches once it holds nothing
            if not draining.up:
                draining.draining, draining = False, None
            elif draining.idle():
                srv, draining = draining, None
                srv.draining = False
                yield from _switch(sim, srv, "prefill" if srv.role == "decode" else "decode", cfg.switch_s)
            continue
        if sim.env.now > horizon and not any(s.waiting for s in sim.servers):
            break
        prefill = sim.servers_of("prefill")
        decode = sim.servers_of("decode")
        queued = sum(len(s.waiting) for s in prefill)
        starved = {
            "prefill": bool(prefill) and len(decode) > 1 and queued > cfg.threshold * len(prefill),
            "decode": bool(decode)
            and len(prefill) > 1
            and len(sim.pending_handoff) > cfg.threshold * len(decode),
        }
        for role in ("prefill", "decode"):
            if starved[role]:
                over_since.setdefault(role, sim.env.now)
            else:
                over_since.pop(role, None)
        quarter = cfg.threshold / 4.0
        calm = queued <= quarter * len(prefill) and len(sim.pending_handoff) <= quarter * len(decode)
        calm_since = (calm_since if calm_since is not None else sim.env.now) if calm else None
        if cfg.restore and calm_since is not None and sim.env.now - calm_since >= cfg.restore_after_s:
            moved = _restore_one(sim, cfg.drain)
            if moved is not None:
                calm_since = None
                if moved.draining:
                    draining = moved
                    continue
                yield from _switch(sim, moved, moved.pool.spec.role, cfg.switch_s)
                continue
        for role, donors, donor in (("prefill", decode, "decode"), ("decode", prefill, "prefill")):
            if not starved[role] or starved[donor]:  # a starved role lends nothing: it would want it back
                continue
            idle = [s for s in donors if s.idle()]
            if idle:
                yield from _switch(sim, idle[-1], role, cfg.switch_s)
                over_since.pop(role, None)
                break
            if cfg.drain and sim.env.now - over_since[role] >= cfg.sustain_s:
                draining = min(
                    donors, key=lambda s: (len(s.running) + len(s.waiting) + len(s.incoming), -s.idx)
                )
                draining.draining = True
                sim.roles_changed()
                sim.counters["role_drains"] += 1
                over_since.pop(role, None)
                break


def _serves_away(sim: DisruptionHost[Server], s: Server) -> bool:
    """True when a live instance serves the other role than its pool's, and its role keeps another."""
    home, role = s.pool.spec.role, s.role
    if not s.up or s.busy_switching or s.draining or s in sim.fallen or role == home:
        return False
    return home in ("prefill", "decode") and role in ("prefill", "decode") and len(sim.servers_of(role)) > 1


def _restore_one(sim: DisruptionHost[Server], drain: bool) -> Server | None:
    """The instance to send home after a spike: an idle one that serves the other role, else (with
    `drain`) the least loaded, marked draining; None when none serves away or its role would empty.

    Instances in a fallback (serving whole requests) are the fallback's, not the controller's.
    """
    away = [s for s in sim.servers if _serves_away(sim, s)]
    idle = [s for s in away if s.idle()]
    if idle:
        sim.counters["role_restores"] += 1
        return idle[-1]
    if not away or not drain:
        return None
    sim.counters["role_restores"] += 1
    srv = min(away, key=lambda s: (len(s.running) + len(s.waiting) + len(s.incoming), -s.idx))
    srv.draining = True
    sim.roles_changed()
    sim.counters["role_drains"] += 1
    return srv


def _switch(sim: DisruptionHost[Server], srv: Server, role: str, switch_s: float) -> Any:
    # a reconfigurable chip (FPGA, CGRA) also loads the other phase's design: its time and energy
    switch_s += srv.reconfigure(sim.counters)
    srv.busy_switching = True
    srv.future_role = role
    sim.roles_changed()
    sim.service_lost()
    if srv.hbm is not None:
        srv.hbm.clear()
    sim.counters["role_switches"] += 1
    generation = srv.generation
    yield sim.env.timeout(switch_s)
    if srv.generation != generation:
        return  # the instance failed while switching: it returns, in its old role, when the fault ends
    srv.role = role
    srv.view = None
    srv.bring_up()
    if role == "decode":
        sim.retry_handoffs()
    else:
        end_fallback(sim)
    srv.notify(True)
