"""An edge site in front of the data centre: what it serves locally, its power budget, offloading.

A scenario with `deployment.edge` has edge pools (`tier = "edge"`, role 'mixed') beside its
data-centre pools. Every arrival (and every retry of a request the edge held) passes `EdgeSite.take`
first, before any data-centre check, so an edge chip's small memory never makes a data-centre
request look too long:

- the rule: a request is an edge candidate when its class is one the edge serves, its prompt and
  output are within the limits (the output stands for the request's max_tokens cap) and some edge
  instance's KV memory holds it; otherwise it is offloaded (`rule`);
- power: the site may draw at most `power_budget_w`. Every edge instance draws its idle power all
  the time, and an instance that holds work (or runs an iteration) is charged its most busy draw
  (`costmodel.power.instance_power_range_w`: full bandwidth and compute, at most TDP). An idle
  instance takes a request only if that charge still fits the budget, so the instances that can run
  iterations at once never draw more than the budget, whatever they run;
- saturation: an instance that holds work takes new requests while fewer than `offload_queue` wait
  on it;
- a candidate goes to the instance the scenario's router picks among those that may take it; with
  none, it is offloaded (`power` when an idle instance could have taken it within a larger budget,
  else `saturated`: every edge instance that could hold it is full or down).

An offloaded request reaches the data-centre path `offload_latency_ms` after it reached the edge (the
WAN round trip, charged before the data centre sees it, so TTFT and E2E include it; plus its
prompt's bytes over `backhaul_mbps` where set) and is routed there
as any request is. Edge instances never serve data-centre requests. A request the edge held that is
retried (its instance failed) passes the edge again; one offloaded stays with the data centre.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from engine.costmodel.power import chip_power_w, instance_power_range_w
from engine.serving.way_in import bytes_per_s

if TYPE_CHECKING:
    from engine.scenario.resolve import Resolved
    from engine.serving.fleet import Fleet
    from engine.serving.instance import Server
    from engine.serving.ledger import RequestLedger

UNDECIDED, LOCAL, RULE, SATURATED, POWER = 0, 1, 2, 3, 4
SITES = {
    UNDECIDED: "datacenter",
    LOCAL: "edge",
    RULE: "offload_rule",
    SATURATED: "offload_saturated",
    POWER: "offload_power",
}
"""Where each request was served (the per-request `site` column): at the edge, or offloaded and why."""
REASONS = {RULE: "rule", SATURATED: "saturated", POWER: "power"}


class EdgeSite:
    """The edge site's rule, power accounting and per-request placement during one run."""

    __slots__ = (
        "fleet",
        "ledger",
        "servers",
        "idle_w",
        "extra_w",
        "site_idle_w",
        "budget_w",
        "classes",
        "max_prompt",
        "max_output",
        "latency_s",
        "backhaul_bytes_s",
        "bytes_per_token",
        "queue_limit",
        "cap",
        "where",
        "peak_charged_w",
    )

    def __init__(self, resolved: Resolved, fleet: Fleet, ledger: RequestLedger) -> None:
        sc = resolved.scenario
        spec = sc.deployment.edge
        assert spec is not None
        self.fleet = fleet
        self.ledger = ledger
        self.servers: list[Server] = [s for s in fleet.servers if s.pool.spec.tier == "edge"]
        weights = sc.model.weights
        ranges = {
            s.idx: instance_power_range_w(s.pool.hardware, s.pool.instance.chips, weights)
            for s in self.servers
        }
        self.idle_w = {i: lo for i, (lo, _) in ranges.items()}
        self.extra_w = {i: hi - lo for i, (lo, hi) in ranges.items()}  # charged while it holds work
        self.site_idle_w = sum(self.idle_w.values())
        self.budget_w = spec.power_budget_w
        names = [c.name for c in sc.workload.classes]
        self.classes = frozenset(names.index(n) for n in spec.classes) if spec.classes else None
        self.max_prompt = spec.max_prompt_tokens
        self.max_output = spec.max_output_tokens
        self.latency_s = spec.offload_latency_ms / 1000.0
        self.backhaul_bytes_s = bytes_per_s(spec.backhaul_mbps)
        self.bytes_per_token = sc.network.bytes_per_token
        self.queue_limit = spec.offload_queue
        self.cap = max(s.kv_cap for s in self.servers)
        self.where: list[int] = [UNDECIDED] * len(ledger.reqs)
        self.peak_charged_w = self.site_idle_w  # the most the enforcement ever charged (a check)

    def charged_w(self) -> float:
        """The site's power as the enforcement counts it: idle for all, most busy draw for the holding."""
        return self.site_idle_w + sum(self.extra_w[s.idx] for s in self.servers if holding(s))

    def take(self, rid: int) -> tuple[Server | None, float] | None:
        """Where an arriving request goes: (an edge instance to queue it on, 0), or (None, the delay
        after which it reaches the data centre); None once it is there (offloaded before).

        The site answers; the front door acts on the answer (`engine.serving.front_door`).
        """
        if self.where[rid] >= RULE:
            return None  # offloaded: the data centre's path from here on
        code, srv = self.place(rid)
        self.where[rid] = code
        if code == LOCAL:
            return srv, 0.0
        rate = self.backhaul_bytes_s
        return None, self.latency_s + (self.ledger.prompt[rid] * self.bytes_per_token / rate if rate else 0.0)

    def place(self, rid: int) -> tuple[int, Server | None]:
        """(LOCAL, the edge instance that takes the request), or (why it is offloaded, None)."""
        led = self.ledger
        prompt, output = led.prompt[rid], led.output[rid]
        if (
            prompt > self.max_prompt
            or output > self.max_output
            or prompt + output > self.cap
            or (self.classes is not None and int(led.reqs.cls[rid]) not in self.classes)
        ):
            return RULE, None
        charged = self.charged_w()
        room_w = self.budget_w - charged
        takers: list[Server] = []
        short_of_power = False
        for s in self.fleet.servers_of("edge"):
            if prompt + output > s.kv_cap:
                continue
            if holding(s):
                if len(s.waiting) < self.queue_limit:
                    takers.append(s)
            elif self.extra_w[s.idx] <= room_w:
                takers.append(s)
            else:
                short_of_power = True
        if not takers:
            return (POWER if short_of_power else SATURATED), None
        srv = self.fleet.route(rid, takers, "edge")
        if not holding(srv):
            charged += self.extra_w[srv.idx]
            if charged > self.peak_charged_w:
                self.peak_charged_w = charged
        return LOCAL, srv


def holding(s: Server) -> bool:
    """True while an instance holds work or runs an iteration (it is charged its busy draw)."""
    return s.busy or not s.idle()


def site_power_w(
    resolved: Resolved, segments: Mapping[str, np.ndarray], servers: list[tuple[int, int, str]]
) -> tuple[float, float]:
    """(idle, peak) power of the edge site in watts, from the iterations the run recorded.

    `segments` holds the records' iteration columns by name (`ledger.SEGMENT_COLUMNS`), `servers` the
    records' (pool, index in pool, role) per server.

    Independent of the enforcement's accounting: every edge chip at its idle power, plus for each
    recorded iteration of an edge instance what its chips drew above idle at that iteration's own
    utilisations (`chip_power_w`), summed over the iterations under way at each moment.
    """
    weights = resolved.scenario.model.weights
    edge = {p.index: p for p in resolved.pools if p.spec.tier == "edge"}
    idle = sum(p.spec.count * p.instance.chips * p.hardware.idle_w for p in edge.values())
    if not edge or len(segments["server"]) == 0:
        return idle, idle
    pool_of = np.array([p for p, _, _ in servers])[segments["server"].astype(int)]
    parts = []
    for index, pool in edge.items():
        keep = (pool_of == index) & (segments["t1"] > segments["t0"])
        t0, t1 = segments["t0"][keep], segments["t1"][keep]
        chips, hw = pool.instance.chips, pool.hardware
        chip_s = (t1 - t0) * chips
        drawn = chip_power_w(
            hw,
            busy=1.0,
            u_bandwidth=segments["bytes"][keep] / (chip_s * hw.memory_tb_s * 1e12),
            u_compute=segments["flops"][keep] / (chip_s * hw.peak_flops(weights)),
            weights=weights,
        )
        parts.append(np.stack([t0, t1, chips * (np.asarray(drawn, dtype=float) - hw.idle_w)]))
    t0, t1, extra = np.concatenate(parts, axis=1)
    if len(extra) == 0:
        return idle, idle
    times = np.concatenate([t0, t1])
    steps = np.concatenate([extra, -extra])
    order = np.lexsort((steps, times))  # by time; at one instant, iterations end before others start
    level = np.cumsum(steps[order])
    return idle, idle + max(float(level.max()), 0.0)
