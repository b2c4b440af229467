"""The way in: what a new request pays between the user and the first serving site's queue.

Before the front door (routing, admission, the edge's rule) sees a new request, it travels the
scenario's network (`Scenario.network`) and waits for the control plane (`Scenario.control_plane`):

- its prompt's bytes (`prompt tokens x bytes_per_token`) cross the device's uplink;
- with a gateway, it waits for its batch to leave (the window after the batch's first request, or
  at once when the batch is full), and the batch's bytes cross the gateway's link;
- the round trips: the device's to its next hop (`user_rtt_ms`) and the gateway's to the first
  serving site (`gateway.rtt_ms`), charged whole on the way in, so the first token and the
  completion reach the user when the run records them: TTFT and E2E include them, TPOT does not;
- the decision: `decision_ms`, plus `kv_index_lookup_us` per block of its prompt when a shared KV
  pool (`cache.pooled`) is on; with `routers` set, decisions are made by that many workers, one at
  a time each, in the order requests reach the site, so they queue under load.
- the first-token latency (`Resolved.first_token_s`: a MoE model's fitted figure for its stack, or
  `deployment.first_token_ms`), last, after the decision: what a request's first token takes beyond
  the step model's iterations (a prefill launched without CUDA graphs, the stack's front end). It
  delays the request, not the chips (docs/decisions.md), and is charged here, before routing, so the
  router and admission see the queue the request joins. Booked apart: not network nor control plane.

No link is shared (each request's or batch's transfer runs as if alone); docs/network.md says
why and what that misses. A retried request (its instance failed) is already
in, and does not pay again. The front door asks (`send`); this actor answers by calling the front
door back when the request is through, and keeps what each request paid for the summary.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.scenario.resolve import Resolved
    from engine.serving.host import Clock
    from engine.serving.ledger import RequestLedger


class WayIn:
    """One run's network chain, control plane and first-token latency on the way in, and what each
    request paid there."""

    __slots__ = (
        "arrival",
        "batch",
        "batch_token",
        "bytes_per_token",
        "control_s",
        "decision_s",
        "deliver",
        "env",
        "gateway",
        "lookup_s",
        "block_tokens",
        "charges",
        "first_token_s",
        "network_s",
        "prompt",
        "rtt_s",
        "sent",
        "uplink_bytes_s",
        "gateway_bytes_s",
        "gateway_rtt_s",
        "routers",
    )

    def __init__(
        self, resolved: Resolved, ledger: RequestLedger, env: Clock, deliver: Callable[[int], None]
    ) -> None:
        sc = resolved.scenario
        net, cp = sc.network, sc.control_plane
        n = len(ledger.reqs)
        self.env = env
        self.deliver = deliver  # the front door, called again once the request is through
        self.arrival = ledger.arrival
        self.prompt = ledger.prompt
        self.rtt_s = net.user_rtt_ms / 1e3
        self.bytes_per_token = net.bytes_per_token
        self.uplink_bytes_s = bytes_per_s(net.uplink_mbps)
        self.gateway = net.gateway
        self.gateway_bytes_s = bytes_per_s(net.gateway.bandwidth_mbps) if net.gateway else None
        self.gateway_rtt_s = net.gateway.rtt_ms / 1e3 if net.gateway else 0.0
        # when each router worker is next free (None: no contention between decisions)
        self.routers: list[float] | None = [0.0] * cp.routers if cp.routers and cp.decision_ms > 0 else None
        self.decision_s = cp.decision_ms / 1e3
        pooled = sc.cache.enabled and sc.cache.pooled.enabled
        self.lookup_s = cp.kv_index_lookup_us / 1e6 if pooled else 0.0
        self.block_tokens = sc.cache.block_tokens
        self.first_token_s = resolved.first_token_s
        # whether the network or the control plane costs time (their columns and summary key then)
        self.charges = not (net.is_free() and cp.is_free())
        self.network_s: list[float] = [0.0] * n
        self.control_s: list[float] = [0.0] * n
        self.sent = bytearray(n)
        self.batch: list[int] = []
        self.batch_token = 0

    def send(self, rid: int) -> bool:
        """Start a new request on its way in (True), or False when it is through already: let it in."""
        if self.sent[rid]:
            return False
        self.sent[rid] = 1
        up = self.transfer_s(self.prompt[rid], self.uplink_bytes_s)
        if self.gateway is None:
            self._through(rid, up + self.rtt_s)
        else:
            self.env.after(up, self._at_gateway, rid)
        return True

    def transfer_s(self, tokens: int, rate: float | None) -> float:
        """Seconds for `tokens` of prompt over a link of `rate` bytes/s (0 when unset)."""
        return tokens * self.bytes_per_token / rate if rate else 0.0

    def _at_gateway(self, rid: int) -> None:
        gw = self.gateway
        assert gw is not None
        if not self.batch:  # the first of a batch opens its window
            self.env.after(gw.batch_window_ms / 1e3, self._flush, self.batch_token)
        self.batch.append(rid)
        if len(self.batch) >= gw.batch_max:
            self._flush(self.batch_token)

    def _flush(self, token: int) -> None:
        """The batch leaves the gateway (a stale window closing after a full batch left does nothing)."""
        if token != self.batch_token or not self.batch:
            return
        self.batch_token += 1
        batch, self.batch = self.batch, []
        still = self.transfer_s(sum(self.prompt[r] for r in batch), self.gateway_bytes_s)
        still += self.gateway_rtt_s + self.rtt_s
        now = self.env.now
        for rid in batch:
            self._through(rid, now - self.arrival[rid] + still, still)

    def _through(self, rid: int, network_s: float, still_s: float | None = None) -> None:
        """Charge the rest of the way (`still_s`, all of `network_s` unless given) and the decision."""
        self.network_s[rid] = network_s
        still = network_s if still_s is None else still_s
        if self.routers is not None:  # the decision waits for a router worker at the site
            self.env.after(still, self._decide, rid)
            return
        control = self.decision_s + self.lookup_s * (self.prompt[rid] // self.block_tokens)
        self.control_s[rid] = control
        self.env.after(still + control + self.first_token_s, self.deliver, rid)

    def _decide(self, rid: int) -> None:
        """At the site: the first free router worker decides (after those ahead of it), then the lookups."""
        routers = self.routers
        assert routers is not None
        now = self.env.now
        start = max(now, heapq.heappop(routers))
        heapq.heappush(routers, start + self.decision_s)
        control = start - now + self.decision_s + self.lookup_s * (self.prompt[rid] // self.block_tokens)
        self.control_s[rid] = control
        self.env.after(control + self.first_token_s, self.deliver, rid)

    def offloaded(self, rid: int, delay_s: float) -> None:
        """The edge sent the request on to the data centre: its trip there is network time too."""
        self.network_s[rid] += delay_s


def bytes_per_s(mbps: float | None) -> float | None:
    """A link's megabits per second as bytes per second (None stays None: not limiting)."""
    return mbps * 1e6 / 8.0 if mbps is not None else None
