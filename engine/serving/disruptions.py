"""Disruptions a scenario schedules: instances lost and restored, and elastic role switches.

Both are simpy processes over the simulation, seen through `engine.serving.host.DisruptionHost`:
a fault takes instances of a pool down at a time (their requests are retried from the start or
failed, per the fault) and brings them back after a while or never; the elastic controller moves
an idle instance to the other role when that role's backlog passes a threshold, at a switch cost
in seconds. Whenever either leaves a role with less capacity for good, the simulation ends at
once the requests nothing could serve any more (`DisruptionHost.service_lost`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.scenario.model import Fault

if TYPE_CHECKING:
    from engine.serving.host import DisruptionHost
    from engine.serving.instance import Server


def fault(sim: DisruptionHost, spec: Fault) -> Any:
    """At spec.at_s, take instances of a pool down; bring them back after spec.duration_s."""
    yield sim.env.timeout(spec.at_s)
    pool = next(p for p in sim.resolved.pools if p.spec.name == spec.pool)
    victims = [s for s in sim.servers if s.pool is pool and s.up][: spec.instances]
    sim.fault_policy = spec.in_flight
    held: list[int] = []
    for srv in victims:
        srv.restores = spec.duration_s is not None
        held += srv.take_down()
    stranded = sim.strand_handoffs()
    for rid in held + stranded:
        sim.lost(rid, spec.in_flight)
    sim.service_lost()
    if spec.duration_s is not None:
        yield sim.env.timeout(spec.duration_s)
        for srv in victims:
            srv.bring_up()
        sim.retry_handoffs()


def elastic(sim: DisruptionHost) -> Any:
    """Move an idle instance to the role whose queue is over the threshold."""
    cfg = sim.scenario.scheduler.elastic
    horizon = sim.scenario.duration_s
    limit = 20.0 * horizon + 3600.0
    while (sim.env.now < horizon or sim.ended < sim.issued) and sim.env.now < limit:
        yield sim.env.timeout(cfg.check_s)
        if sim.env.now > horizon and not any(s.waiting for s in sim.servers):
            break
        prefill = sim.servers_of("prefill")
        decode = sim.servers_of("decode")
        queued = sum(len(s.waiting) for s in prefill)
        if prefill and len(decode) > 1 and queued > cfg.threshold * len(prefill):
            idle = [s for s in decode if s.idle()]
            if idle:
                yield from _switch(sim, idle[-1], "prefill", cfg.switch_s)
                continue
        if decode and len(prefill) > 1 and len(sim.pending_handoff) > cfg.threshold * len(decode):
            idle = [s for s in prefill if s.idle()]
            if idle:
                yield from _switch(sim, idle[-1], "decode", cfg.switch_s)


def _switch(sim: DisruptionHost, srv: Server, role: str, switch_s: float) -> Any:
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
    srv.bring_up()
    if role == "decode":
        sim.retry_handoffs()
    srv.notify(True)
