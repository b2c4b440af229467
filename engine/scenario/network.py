"""Where the user is, and what a request pays before any instance sees it.

A request travels a chain: the user's device, optionally a gateway that gathers the requests of
many devices and forwards them in batches, the first serving site (the edge site where the
scenario has one, else the data centre) and, for what the edge offloads, the data centre. Each
hop has a round trip and, where set, a bandwidth:

- `Network.user_rtt_ms`: device to its next hop (the gateway, else the first serving site) and
  back; the prompt's bytes cross `uplink_mbps` first. Every round trip is charged whole on the
  way in (the answer's way back included), so TTFT and E2E grow by it and TPOT does not.
- `Gateway`: a request waits there until its batch leaves (`batch_window_ms` after the batch's
  first request, or at once when `batch_max` are in), then the batch's bytes cross the gateway's
  `bandwidth_mbps` and its round trip to the first serving site, `Gateway.rtt_ms`.
- `Edge.offload_latency_ms` and `Edge.backhaul_mbps`: the edge site to the data centre, charged
  to what the edge offloads.

`ControlPlane` is what deciding costs: each request's routing/scheduling decision, and the lookups
of its prompt's blocks in a shared KV pool's index. Defaults are zero: a client beside its server,
as the benchmarks the calibration rests on measured, and a free control plane; docs/network.md
gives the typical figures, with their sources, and docs/decisions.md why zero.
"""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
from typing import Annotated

from pydantic import Field

from engine.catalog.specs import Frozen
from engine.core import bounds
from engine.scenario.fields import Name, Tokens

Rtt = Annotated[float, Field(ge=0, le=10_000)]
"""A round trip, ms (up to 10 s: a geostationary satellite hop is about 0.6 s)."""
Mbps = Annotated[float, Field(ge=0.01, le=10_000_000)]
"""A link's bandwidth, megabits per second."""


class Edge(Frozen):
    """An edge site: its pools (`tier = "edge"`) serve some requests locally, the rest go to the data centre.

    A request is an edge candidate when its class is in `classes` (empty: every class) and its
    prompt and output are within `max_prompt_tokens` and `max_output_tokens` (the output stands for
    the request's max_tokens cap, all a real router knows) and some edge instance's KV memory holds
    it. A candidate is served at the edge unless every edge instance that could take it already has
    `offload_queue` requests waiting, or starting one more would take the site's draw over
    `power_budget_w` (idle power of every edge chip plus full busy power of the instances holding
    work). Everything else is offloaded: it reaches the data-centre pools `offload_latency_ms` (the
    WAN round trip) plus its prompt's time over `backhaul_mbps` after it reached the edge
    (docs/scheduling.md, "Edge tier").
    """

    power_budget_w: Annotated[float, Field(ge=0.1, le=10_000_000)] = 200.0
    """The site's power budget for its edge chips, in watts."""
    max_prompt_tokens: Tokens = 2048
    max_output_tokens: Tokens = 512
    classes: Annotated[tuple[Name, ...], Field(max_length=bounds.MAX_CLASSES)] = ()
    """Classes served at the edge (names); empty: every class."""
    offload_latency_ms: Rtt = 40.0
    """WAN round trip added to an offloaded request before the data centre sees it."""
    offload_queue: Annotated[int, Field(ge=0, le=1_000_000)] = 4
    """Waiting requests per edge instance at which it counts as saturated."""
    backhaul_mbps: Mbps | None = None
    """The site's link to the data centre: an offloaded prompt's bytes cross it (unset: not limiting)."""


class Gateway(Frozen):
    """A gateway between the devices and the first serving site, forwarding requests in batches.

    The first request to reach an empty gateway opens a batch; the batch leaves `batch_window_ms`
    later, or as soon as it holds `batch_max` requests, and its prompts' bytes cross
    `bandwidth_mbps` together (one batch at a time on the link is not modelled: no queueing).
    """

    rtt_ms: Rtt = 0.0
    """The gateway to the first serving site and back, ms (the device's own hop is `user_rtt_ms`)."""
    batch_window_ms: Rtt = 10.0
    """How long the gateway holds a batch open, ms."""
    batch_max: Annotated[int, Field(ge=1, le=1_000_000)] = 16
    """A batch this full leaves at once."""
    bandwidth_mbps: Mbps | None = None
    """The gateway's uplink to the serving site (unset: not limiting)."""


class Network(Frozen):
    """The user's way to the first serving site: round trip, uplink, an optional gateway."""

    user_rtt_ms: Rtt = 0.0
    """Device to its next hop and back, ms: the gateway where there is one, else the first serving site
    (the edge site with one, else the data centre). 0: a client beside its server, as serving
    benchmarks measure (docs/network.md for typical trips)."""
    uplink_mbps: Mbps | None = None
    """The device's uplink: a prompt's bytes cross it first (unset: not limiting)."""
    bytes_per_token: Annotated[float, Field(ge=0.5, le=1_000_000)] = 4.0
    """Bytes a prompt token weighs on the wire: about 4 for English text (docs/network.md)."""
    gateway: Gateway | None = None
    """A gateway gathering many devices' requests (unset: none)."""

    def is_free(self) -> bool:
        """True when nothing on the way costs time (the default): the run pays no network delay."""
        return self.user_rtt_ms == 0.0 and self.uplink_mbps is None and self.gateway is None


class ControlPlane(Frozen):
    """What the serving system's own decisions cost each request, before it is queued.

    `decision_ms` is the router's and scheduler's decision for one request (parsing it, scoring
    instances, a cache-aware match); `kv_index_lookup_us` the lookup of one prompt block in a
    shared KV pool's index (`cache.pooled`, a Mooncake-style store; charged only with that tier on).
    Both are paid once per request, on its way in; with `routers` set they are made by that many
    workers, one decision at a time each (a request waits for a free one), else with no contention.
    """

    decision_ms: Annotated[float, Field(ge=0, le=10_000)] = 0.0
    """Routing and scheduling decision time per request, ms."""
    routers: Annotated[int, Field(ge=1, le=bounds.MAX_INSTANCES)] | None = None
    """Router workers making the decisions, one at a time each, so decisions queue when requests come
    faster than they decide (unset: as many as needed, no queueing)."""
    kv_index_lookup_us: Annotated[float, Field(ge=0, le=1_000_000)] = 0.0
    """Lookup time per prompt block in the shared KV pool's index, µs."""

    def is_free(self) -> bool:
        """True when deciding costs nothing (the default)."""
        return self.decision_ms == 0.0 and self.kv_index_lookup_us == 0.0
