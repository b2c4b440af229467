"""Autoscaled pools: instances requested, cold-started, drained and stopped as the load moves.

A pool with `autoscale` set has `count` slots; `initial` of them serve from t = 0 and the rest are
off. Every `interval_s` its `PoolScaler` shows the pool's load (`policies.PoolLoad`) to the pool's
autoscaler, clamps the answer to [min_instances, count], holds it through the cooldowns, and acts:

- up (within the window only: past it no request arrives): a draining instance is taken back
  first (it is warm); otherwise an off slot is requested.
  It is billed from that moment and serves after its cold start (`ColdStart.seconds` of its
  weights, plus a reconfigurable chip's `reconfig_s`), when it comes up empty and the parked hand-offs are tried again;
- down, only to the most instances wanted over the last `down_cooldown_s` (a stabilisation window,
  as Kubernetes' HPA keeps): an instance still starting is cancelled first (billed until now, it never served);
  otherwise the least loaded serving instance drains: routing no longer sees it, it finishes
  what it holds (queued prompts included) and stops, unbilled from then on.

Every change is an event of the run's `ScalingLog` (time, pool, action, instance), and every
billed stretch of an instance one of its `billed` rows, which the summary turns into
instance-hours, the bill and the per-minute timeline (`engine.serving.timeline`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engine import policies
from engine.scenario.resolve import ResolvedPool

if TYPE_CHECKING:
    from engine.serving.host import ScalingHost as _Host
    from engine.serving.instance import Server

    ScalingHost = _Host[Server]


DRAIN_CHECK_S = 1.0
"""How often a draining instance is checked for having finished (it stops, and its bill, within this)."""

ACTIONS = ("request", "ready", "cancel", "drain", "undrain", "stop")
"""What a scaling event does to an instance: requested (billed from now), ready (serves), cancelled
while starting, draining, taken back while draining, stopped (unbilled from now)."""


@dataclass
class ScalingLog:
    """What the autoscalers did in a run: events, billed stretches, and each pool's figures."""

    events: list[tuple[float, int, str, int]] = field(default_factory=list)
    """(time, pool index, action in ACTIONS, server index)."""
    billed: list[tuple[int, int, float, float]] = field(default_factory=list)
    """(server index, pool index, from, to): to is NaN while the instance is still billed."""
    cold_start_s: dict[int, float] = field(default_factory=dict)
    capacity_rps: dict[int, float] = field(default_factory=dict)
    """Per pool: requests per second one instance serves within the tightest TTFT and TPOT targets."""
    slots: dict[int, int] = field(default_factory=dict)

    def close(self, end_s: float) -> None:
        """End every stretch still billed at `end_s` (the run's end: `Records.end_s`), and cut what
        the autoscalers did after it (their ticks outlive the traffic; none of that is billed)."""
        self.billed = [
            (s, p, a, end_s if math.isnan(b) else min(b, end_s)) for s, p, a, b in self.billed if a <= end_s
        ]
        self.events = [e for e in self.events if e[0] <= end_s]


def slo_capacity_rps(srv: Server, prompt: float, output: float, ttft_s: float, tpot_s: float) -> float:
    """Requests per second one instance serves while a mean request meets the targets (cost model).

    Prefill: its prompt tokens per second at a full token budget (`Server.rates`), cut in the
    ratio of the TTFT target to a mean prompt's prefill time when that exceeds it. Decode: the
    largest batch (within the batch cap and KV memory) whose step on mean contexts stays within
    the TPOT target, over that step, per mean output. A mixed instance does both in turn.
    """
    prompt, output = max(prompt, 1.0), max(output, 1.0)
    pf_tok_s = srv.rates[0]
    pf_rps = pf_tok_s / prompt if pf_tok_s > 0 else 0.0
    if pf_tok_s > 0 and prompt / pf_tok_s > ttft_s:
        pf_rps *= ttft_s / (prompt / pf_tok_s)
    ctx = prompt + output / 2.0
    most = max(1, min(srv.max_batch, int(srv.kv_cap // (prompt + output))))
    lo, hi = 1, most
    while lo < hi:  # the largest batch whose step is within the TPOT target
        mid = (lo + hi + 1) // 2
        if srv.step.cost(0.0, 0.0, 0.0, float(mid), mid * ctx)[0] <= tpot_s:
            lo = mid
        else:
            hi = mid - 1
    step = srv.step.cost(0.0, 0.0, 0.0, float(lo), lo * ctx)[0]
    dec_rps = lo / step / output if step > 0 else 0.0
    role = srv.pool.spec.role
    if role == "prefill":
        return pf_rps
    if role == "decode":
        return dec_rps
    return 1.0 / (1.0 / pf_rps + 1.0 / dec_rps) if pf_rps > 0 and dec_rps > 0 else 0.0


class PoolScaler:
    """One autoscaled pool: its slots' states, its autoscaler, and the actions it takes."""

    def __init__(self, sim: ScalingHost, pool: ResolvedPool, log: ScalingLog, capacity_rps: float) -> None:
        spec = pool.spec.autoscale
        assert spec is not None
        self.sim, self.pool, self.spec, self.log = sim, pool, spec, log
        self.policy = policies.build_autoscaler(
            spec.policy.as_dict(), where=f"{pool.spec.name}.autoscale.policy"
        )
        self.slots = [s for s in sim.servers if s.pool is pool]
        self.state = {s.idx: "serving" for s in self.slots[: spec.initial]}
        self.state.update({s.idx: "off" for s in self.slots[spec.initial :]})
        self.row: dict[int, int] = {}  # server -> its open row in log.billed
        for s in self.slots[: spec.initial]:
            self._bill_from(s, 0.0)
        for s in self.slots[spec.initial :]:
            s.up = False
            s.view = None
        # a reconfigurable chip (FPGA, CGRA) loads its design before it serves: its reconfiguration time
        self.cold_s = spec.cold_start.seconds(pool.instance.weight_bytes) + (
            pool.instance.hardware.reconfig_s or 0.0
        )
        self.capacity_rps = capacity_rps
        log.cold_start_s[pool.index], log.capacity_rps[pool.index] = self.cold_s, capacity_rps
        log.slots[pool.index] = len(self.slots)
        self.last_up = self.last_change = -math.inf
        self.cursor = 0  # segments read so far
        self.busy_s = 0.0
        self.demand = (0.0, 0.0)  # (last interval, the one before), requests per second
        self.seen = 0  # arrivals counted so far
        self.wanted: deque[tuple[float, int]] = deque()  # (time, instances wanted) over the down cooldown

    # --- billing and events ---------------------------------------------------------------
    def _bill_from(self, srv: Server, t: float) -> None:
        self.row[srv.idx] = len(self.log.billed)
        self.log.billed.append((srv.idx, self.pool.index, t, math.nan))

    def _bill_to(self, srv: Server, t: float) -> None:
        i = self.row.pop(srv.idx)
        s, p, a, _ = self.log.billed[i]
        self.log.billed[i] = (s, p, a, t)

    def _event(self, action: str, srv: Server) -> None:
        self.log.events.append((self.sim.env.now, self.pool.index, action, srv.idx))

    def count(self, state: str) -> int:
        """Slots in a state: off, starting, serving or draining."""
        return sum(1 for v in self.state.values() if v == state)

    # --- the load an autoscaler sees ---------------------------------------------------------
    def load(self, interval_s: float, role_share: float) -> policies.PoolLoad:
        """The pool's `PoolLoad` now; `role_share` is its share of the arrivals its role takes."""
        sim = self.sim
        serving = [s for s in self.slots if self.state[s.idx] == "serving"]
        mine = {s.idx for s in self.slots}
        segs = sim.segments
        busy = 0.0
        for row in segs.since(self.cursor):  # (server, t0, t1, ...)
            if int(row[0]) in mine:
                busy += row[2] - row[1]
        self.cursor = len(segs)
        busy_frac = min(1.0, busy / (interval_s * len(serving))) if serving else 0.0
        if self.pool.spec.role == "decode":
            queued = len(sim.pending_handoff)
        else:
            queued = sum(len(s.waiting) for s in serving)
        cap = sum(s.kv_cap for s in serving)
        kv = sum(s.kv_reserved for s in serving) / cap if cap else 0.0
        return policies.PoolLoad(
            role=self.pool.spec.role,
            serving=len(serving),
            starting=self.count("starting"),
            draining=self.count("draining"),
            busy=busy_frac,
            queued_requests=queued,
            kv_used=kv,
            demand_rps=self.demand[0] * role_share,
            previous_demand_rps=self.demand[1] * role_share,
            capacity_rps=self.capacity_rps,
            lookahead_s=self.cold_s + interval_s,
            interval_s=interval_s,
        )

    def count_arrivals(self, interval_s: float) -> None:
        """Arrivals over the last interval (every pool's; `load` takes the pool's share)."""
        sim = self.sim
        upto = sim.arrived(sim.env.now)
        n, self.seen = upto - self.seen, upto
        self.demand = (n / interval_s, self.demand[0])

    # --- decisions ---------------------------------------------------------------------------
    def evaluate(self, load: policies.PoolLoad) -> None:
        """Ask the autoscaler, clamp, respect the cooldowns, act."""
        spec, now = self.spec, self.sim.env.now
        have = load.serving + load.starting
        want = min(max(self.policy.desired(load), spec.min_instances), len(self.slots))
        after_window = now >= self.sim.scenario.duration_s  # no request arrives any more: never scale up
        # down only to the most wanted over the down cooldown (a stabilisation window, as Kubernetes' HPA
        # keeps one): one quiet interval drained an instance that the next asked for again, 30 s later,
        # paying its cold start twice (day-autoscaled, a review)
        self.wanted.append((now, want))
        while self.wanted and self.wanted[0][0] < now - spec.down_cooldown_s:
            self.wanted.popleft()
        lowest = max(w for _, w in self.wanted)
        if want > have and now - self.last_up >= spec.up_cooldown_s and not after_window:
            for _ in range(want - have):
                self.scale_up()
            self.last_up = self.last_change = now
        elif lowest < have and now - self.last_change >= spec.down_cooldown_s:
            for _ in range(have - lowest):
                self.scale_down()
            self.last_change = now

    def scale_up(self) -> None:
        """Take a draining instance back, else request an off one (billed now, serving after its cold start)."""
        sim = self.sim
        draining = [s for s in self.slots if self.state[s.idx] == "draining"]
        if draining:
            srv = draining[0]
            srv.draining = False
            self.state[srv.idx] = "serving"
            self._event("undrain", srv)
            sim.roles_changed()
            return
        srv = next(s for s in self.slots if self.state[s.idx] == "off")
        self.state[srv.idx] = "starting"
        self._bill_from(srv, sim.env.now)
        self._event("request", srv)
        srv.reconfigure(
            sim.counters
        )  # a reconfigurable chip's energy to load its design (its time is in `cold_s`)
        sim.env.after(self.cold_s, self._ready, srv, srv.generation)

    def _ready(self, srv: Server, generation: int) -> None:
        if srv.generation != generation or self.state[srv.idx] != "starting":
            return  # cancelled while starting
        self.state[srv.idx] = "serving"
        # an instance coming up is a change the scale-down cooldown counts from: counted from its request
        # alone, day-autoscaled drained an instance 41 s after it was ready (its 79 s cold start inside the
        # 120 s cooldown) and requested it again 30 s later, paying the cold start twice
        self.last_change = max(self.last_change, self.sim.env.now)
        self._event("ready", srv)
        srv.bring_up()
        self.sim.retry_handoffs()

    def scale_down(self) -> None:
        """Cancel an instance still starting, else drain the least loaded serving one."""
        sim = self.sim
        starting = [s for s in self.slots if self.state[s.idx] == "starting"]
        if starting:
            srv = starting[-1]
            self.state[srv.idx] = "off"
            srv.generation += 1  # its ready call finds it cancelled
            self._bill_to(srv, sim.env.now)
            self._event("cancel", srv)
            return
        serving = [s for s in self.slots if self.state[s.idx] == "serving"]
        srv = min(serving, key=lambda s: (len(s.running) + len(s.waiting) + len(s.incoming), -s.idx))
        srv.draining = True
        self.state[srv.idx] = "draining"
        self._event("drain", srv)
        sim.roles_changed()
        sim.env.after(DRAIN_CHECK_S, self._drained, srv)

    def _drained(self, srv: Server) -> None:
        """Stop a draining instance once it holds nothing (no hand-off of its own still parked)."""
        if self.state[srv.idx] != "draining":
            return  # taken back
        parked = any(s is srv for s, _ in self.sim.pending_handoff)
        if not srv.idle() or srv.kv_reserved or parked:
            self.sim.env.after(DRAIN_CHECK_S, self._drained, srv)
            return
        srv.draining = False
        srv.take_down()
        self.state[srv.idx] = "off"
        self._bill_to(srv, self.sim.env.now)
        self._event("stop", srv)


class Scaling:
    """The run's autoscaled pools and the clock that evaluates them."""

    def __init__(self, sim: ScalingHost, means: tuple[float, float]) -> None:
        self.sim = sim
        self.log = ScalingLog()
        classes = sim.scenario.workload.classes
        ttft = min(c.slo.ttft_ms for c in classes) / 1e3
        tpot = min(c.slo.tpot_ms for c in classes) / 1e3
        self.scalers: list[PoolScaler] = []
        for pool in sim.resolved.pools:
            if pool.spec.autoscale is None:
                continue
            first = next(s for s in sim.servers if s.pool is pool)
            cap = slo_capacity_rps(first, means[0], means[1], ttft, tpot)
            self.scalers.append(PoolScaler(sim, pool, self.log, cap))
        sim.roles_changed()

    def start(self) -> None:
        """Schedule each pool's first evaluation."""
        for sc in self.scalers:
            self.sim.env.after(sc.spec.interval_s, self.tick, sc)

    def tick(self, sc: PoolScaler) -> None:
        """Evaluate one pool; keep going while the window lasts or requests are in flight."""
        sim = self.sim
        horizon = sim.scenario.duration_s
        if sim.env.now >= horizon and sim.ended >= sim.issued:
            return
        interval = sc.spec.interval_s
        sc.count_arrivals(interval)
        sc.evaluate(sc.load(interval, self.share(sc)))
        if sim.env.now < 20.0 * horizon + 3600.0:
            sim.env.after(interval, self.tick, sc)

    def share(self, scaler: PoolScaler) -> float:
        """The pool's share of the arrivals its role takes: its instances (serving or starting) over
        those of every pool of its role (a fixed pool counts all its instances)."""
        role = scaler.pool.spec.role
        mine = 0.0
        total = 0.0
        for pool in self.sim.resolved.pools:
            if pool.spec.role != role or pool.spec.tier != "datacenter":
                continue
            sc = next((s for s in self.scalers if s.pool is pool), None)
            n = float(pool.spec.count if sc is None else sc.count("serving") + sc.count("starting"))
            total += n
            if sc is scaler:
                mine = n
        return mine / total if total > 0 else 1.0
