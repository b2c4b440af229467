"""The work a scenario asks of the simulator, estimated before it runs, and the bound on it.

Field-by-field limits (`engine.core.bounds`) do not bound products of fields: a million-token prompt
cut into 16-token chunks or one-token cache blocks over a
million-token shared prefix each pass every field's check and still ask for billions of events
or gigabytes of block ids. This module estimates, without simulating, four figures of a run and
refuses one that exceeds its documented maximum (`bounds.MAX_EVENTS` and the rows after it):

- requests n: the drawn requests when given (what `simulate` passes), else the expectation from
  the scenario; a trace is read. The request count and lengths form the load
  (`engine.serving.work_load`); every term below is computed from it.
- events: n x (4 colocated or 6 disaggregated events per request: arrival, batch formation, KV
  transfer and hand-off, joining the decode batch, completion) plus one per prefill iteration
  (colocated chunked prefill: ceil(prompt / chunk) per request; otherwise one), one per cache
  load from host or pooled tiers, one for the way in when it costs time (two more through a
  gateway, one more with router workers), elastic checks (window / check interval) and faults.
- router looks: n x the instances each request is routed among (entry and, disaggregated,
  decode): the router looks at every candidate instance (its view kept from the last route
  where nothing it carries changed, rebuilt where something did).
- cache blocks: sum over requests of (2 x prompt + output) / block tokens (a prompt's block list
  and the prompt-and-answer list are built, looked up and inserted), when the cache is on.
- memory: 1.2 kB per request row, 60 B per event (iteration records), 48 B per distinct block
  id (each session's and prefix group's chain), 100 B per tier entry (capped by the ids held in
  every tier), 8 B per block of the lists live requests hold.

The constants were measured on the presets (tracemalloc and event counts). The estimate does
not subtract prefix-cache hits nor model several prompts sharing a prefill iteration, so it
reads high for cache-heavy and offline loads; it is a guard against runs hours long, not a
prediction of wall time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.scenario.model import Scenario
from engine.serving import work_load
from engine.serving.workload import Requests, generate

EVENTS_COLOCATED = 4.0
"""Events per request besides prefill iterations, colocated: arrival, batch, join, completion."""
EVENTS_DISAGGREGATED = 6.0
"""Events per request besides its prefill iteration, disaggregated: arrival, prefill batch,
transfer, decode batch, join, completion."""
BYTES_PER_REQUEST = float(bounds.REQUEST_ROW_BYTES)
"""Simulation state, records and result tables per request row (`bounds.REQUEST_ROW_BYTES`, which also
sets how many request rows a scenario may ask for)."""
BYTES_PER_EVENT = 60.0
"""Iteration records (segments) and the summary's working arrays over them, per event: a record is a
104-byte row of a float64 table (`engine.serving.rows`), about 0.4 of them an event (measured: the
default preset at 1,000,000 requests and a day of 864,000 peak at 0.84 and 0.81 GB; docs/performance.md)."""
BYTES_PER_BLOCK_ID = 48.0
"""A block id (a Python int) and its slot in its session's or prefix group's chain."""
BYTES_PER_TIER_ENTRY = 100.0
"""One block held by one cache tier (its dict entry and its entries in the tier's log of uses, `cache.LruBlocks`)."""
BYTES_PER_LIST_SLOT = 8.0
"""One block of a live request's block list."""

QUANTITIES: dict[str, tuple[str, str]] = {
    "events": ("simulated events", "MAX_EVENTS"),
    "router_looks": ("router looks at instances", "MAX_ROUTER_LOOKS"),
    "cache_blocks": ("prefix-cache block visits", "MAX_CACHE_BLOCKS"),
    "memory_bytes": ("bytes of simulation state", "MAX_STATE_BYTES"),
}
"""Each bounded quantity: (what it counts, the name of its limit in engine.core.bounds)."""


class WorkBoundError(ScenarioError):
    """A scenario whose estimated work exceeds a documented maximum; `scenario` is the one refused (None
    where the refusal was made without one), so that a caller can say what it would admit."""

    def __init__(self, message: str, scenario: Scenario | None = None) -> None:
        super().__init__(message)
        self.scenario = scenario


@dataclass(frozen=True)
class Term:
    """One part of a quantity: its size, the fields that drive it, and what to lower."""

    quantity: str
    part: str
    value: float
    cause: str
    advice: str


@dataclass(frozen=True)
class WorkEstimate:
    """A run's estimated size: requests, events, router looks, cache blocks and memory."""

    requests: float
    events: float
    router_looks: float
    cache_blocks: float
    memory_bytes: float
    from_requests: bool
    """True when computed from drawn requests, False from the scenario's expectations."""
    terms: tuple[Term, ...] = ()

    def value(self, quantity: str) -> float:
        """One of the bounded quantities by name (see `QUANTITIES`)."""
        return float(getattr(self, quantity))

    def load(self) -> float:
        """The largest quantity's share of its limit (over 1: the run is refused)."""
        return max(self.value(q) / float(getattr(bounds, limit)) for q, (_, limit) in QUANTITIES.items())

    def problems(self) -> list[str]:
        """A message for each quantity over its limit (empty when the run is within bounds)."""
        out = []
        for quantity, (label, limit_name) in QUANTITIES.items():
            limit = float(getattr(bounds, limit_name))
            value = self.value(quantity)
            if value <= limit:
                continue
            parts = [t for t in self.terms if t.quantity == quantity]
            top = max(parts, key=lambda t: t.value) if parts else None
            why = f": {top.cause}; {top.advice}" if top else ""
            ratio = value / limit
            # just over reads over: '1.0x over' (and '10 million, limit 10 million, 1.1x over') said nothing
            times = (
                f"{math.ceil(ratio * 100) / 100:.2f}"
                if ratio < 1.1
                else f"{ratio:.1f}"
                if ratio < 10
                else f"{ratio:,.0f}"
            )
            if quantity == "memory_bytes":  # '2.2 GB of simulation state', not '2.2 billion bytes of ...'
                label = label.removeprefix("bytes ")
                amount, cap = (f"{float(f'{v / 1e9:.2g}'):g} GB" for v in (value, limit))
            else:
                amount, cap = in_words(value), in_words(limit)
            out.append(f"work bound: about {amount} {label} (limit {cap}, {times}x over){why}")
        return out

    def to_json(self) -> dict[str, object]:
        """The figures with their limits, for the app and the CLI."""
        return {
            q: {"estimate": self.value(q), "limit": float(getattr(bounds, name)), "what": label}
            for q, (label, name) in QUANTITIES.items()
        } | {"requests": self.requests, "from_requests": self.from_requests}


_SCALES = ((1e12, "trillion"), (1e9, "billion"), (1e6, "million"))


def in_words(x: float) -> str:
    """A count in words, to two figures: 13 billion, 20 million, 450,000; plain below ten thousand
    (a planner reads "7.8 million", not "7.8e6")."""
    if not math.isfinite(x):
        return str(x)
    if abs(x) < 10_000:
        return f"{x:,.0f}"
    two = float(f"{x:.2g}")
    for scale, word in _SCALES:
        if abs(two) >= scale:
            return f"{two / scale:,.{1 if abs(two) < 10 * scale else 0}f}".removesuffix(".0") + f" {word}"
    return f"{two:,.0f}"


# --- the estimate ------------------------------------------------------------------------------


def _prompt_fields(scenario: Scenario, load: work_load.Load) -> str:
    """The fields that make prompts long: the heaviest class's prefix and multi-turn settings."""
    wl = scenario.workload
    if wl.trace is not None:
        return "workload.trace.path"
    i = min(load.heavy, len(wl.classes) - 1)
    cl = wl.classes[i]
    parts = []
    if cl.prefix.tokens > 0:
        parts.append(f"workload.classes[{i}].prefix.tokens={cl.prefix.tokens:,}")
    if cl.multi_turn.turns_mean > 1:
        parts.append(f"workload.classes[{i}].multi_turn.turns_mean={cl.multi_turn.turns_mean:g}")
    if not parts:
        parts.append(f"workload.classes[{i}].input")
    return ", ".join(parts)


def _event_terms(scenario: Scenario, load: work_load.Load) -> list[Term]:
    sc = scenario
    colocated = sc.deployment.mode == "colocated"
    per = (EVENTS_COLOCATED if colocated else EVENTS_DISAGGREGATED) + 1.0
    cache = sc.cache
    if cache.enabled and (cache.host.enabled or cache.pooled.enabled):
        per += 1.0
    if not (sc.network.is_free() and sc.control_plane.is_free()):
        per += 1.0  # the way in (`way_in`): one call when the request is through
        if sc.network.gateway is not None:
            per += 2.0  # reaching the gateway, and at most one batch window closing per request
        if sc.control_plane.routers and sc.control_plane.decision_ms > 0:
            per += 1.0  # reaching the router workers
    terms = [
        Term(
            "events",
            "requests",
            load.n * per,
            f"{load.n:,.0f} requests ({load.count_cause}) at about {per:.0f} events each",
            "lower the request count",
        )
    ]
    c = work_load.chunk_tokens(sc)
    if c is not None and load.chunks_mean > 1.0:
        b = sc.batching()
        knob = (
            f"deployment.batching.chunk_tokens={b.chunk_tokens:,}"
            if b.chunk_tokens <= b.token_budget
            else f"deployment.batching.token_budget={b.token_budget:,} (below chunk_tokens)"
        )
        terms.append(
            Term(
                "events",
                "prefill chunks",
                load.n * (load.chunks_mean - 1.0),
                f"{knob} with prompts up to {load.prompt_max:,.0f} tokens ({load.prompt_mean:,.0f} on "
                f"average; {_prompt_fields(sc, load)}) over {load.n:,.0f} requests",
                "raise the chunk size or lower the prompt length",
            )
        )
    el = sc.scheduler.elastic
    if el.enabled and not colocated:
        terms.append(
            Term(
                "events",
                "elastic checks",
                sc.duration_s / el.check_s,
                f"scheduler.elastic.check_s={el.check_s:g} over duration_s={sc.duration_s:g}",
                "raise scheduler.elastic.check_s",
            )
        )
    if sc.faults:
        # each rank of a pool has its own batch cap, its chip's
        cap = {p.name: p.dp * sc.pool_batching(p).max_batch for p in sc.deployment.pools}
        retried = sum(min(load.n, f.instances * cap[f.pool]) for f in sc.faults)  # (a fault names a pool)
        terms.append(
            Term(
                "events",
                "faults",
                2.0 * len(sc.faults) + retried * per,
                f"{len(sc.faults)} faults retrying up to {retried:,.0f} requests",
                "remove faults or lower faults[i].instances",
            )
        )
    return terms


def _router_term(scenario: Scenario, load: work_load.Load) -> Term:
    pools = scenario.deployment.pools
    entry = [(i, p) for i, p in enumerate(pools) if p.role in ("mixed", "prefill")]
    decode = [(i, p) for i, p in enumerate(pools) if p.role == "decode"]
    looks = 0
    fields = []
    for group in (entry, decode):
        k = sum(p.count for _, p in group)
        if k > 1:
            looks += k
            fields += [f"deployment.pools[{i}].count={p.count}" for i, p in group]
    return Term(
        "router_looks",
        "routing",
        load.n * looks,
        f"{load.n:,.0f} requests ({load.count_cause}) each routed among {looks} instances ({', '.join(fields)})",
        "lower the request count or the number of instances",
    )


def _cache_cause(scenario: Scenario, load: work_load.Load) -> str:
    trace = scenario.workload.trace
    field = (
        f"workload.trace.block_tokens={load.block_tokens:,}"
        if trace is not None and trace.format == "mooncake"
        else f"cache.block_tokens={load.block_tokens:,}"
    )
    return (
        f"{field} with prompts of {load.prompt_mean:,.0f} tokens on average ({_prompt_fields(scenario, load)}) "
        f"over {load.n:,.0f} requests"
    )


def _memory_terms(scenario: Scenario, load: work_load.Load, event_terms: list[Term]) -> list[Term]:
    recorded = [t for t in event_terms if t.part != "elastic checks"]  # checks leave no records
    events = sum(t.value for t in recorded)
    top = max(recorded, key=lambda t: t.value)
    terms = [
        Term(
            "memory_bytes",
            "request rows",
            load.rows * BYTES_PER_REQUEST,
            f"{load.rows:,} request rows ({load.count_cause})",
            "lower the request count",
        ),
        Term(
            "memory_bytes",
            "iteration records",
            events * BYTES_PER_EVENT,
            f"the records of {in_words(events)} events, mostly from {top.cause}",
            top.advice,
        ),
    ]
    cache = scenario.cache
    if cache.enabled and load.n > 0:
        pools = scenario.deployment.pools
        instances = sum(p.count for p in pools)
        entry = sum(p.count for p in pools if p.role in ("mixed", "prefill"))
        disaggregated = scenario.deployment.mode == "disaggregated"
        tiers = (cache.hbm * (2 if disaggregated else 1)) + cache.host.enabled + cache.pooled.enabled
        copies = cache.hbm * instances + cache.host.enabled * entry + cache.pooled.enabled
        entries = min(load.block_ids * copies, load.full_blocks * tiers)
        # each data-parallel rank has its own batch cap, its pool's chip's
        slots = sum(p.count * p.dp * scenario.pool_batching(p).max_batch for p in pools)
        live = min(load.n, slots) * load.blocks / load.n
        terms.append(
            Term(
                "memory_bytes",
                "cache bookkeeping",
                load.block_ids * BYTES_PER_BLOCK_ID
                + entries * BYTES_PER_TIER_ENTRY
                + live * BYTES_PER_LIST_SLOT,
                _cache_cause(scenario, load),
                "raise the cache block size, shorten the prompts or turn the cache off",
            )
        )
    return terms


def estimate(scenario: Scenario, requests: Requests | None = None) -> WorkEstimate:
    """The work a run of `scenario` would take, from its drawn `requests` or its settings.

    Without `requests`, a generated workload is estimated from its settings (nothing is drawn)
    and a trace is read (its rows are the requests). Costs a few milliseconds at most.
    """
    if requests is None and scenario.workload.trace is not None:
        requests = generate(scenario)
    load = (
        work_load.from_requests(scenario, requests) if requests is not None else work_load.expected(scenario)
    )
    ev_terms = _event_terms(scenario, load)
    events = sum(t.value for t in ev_terms)
    router = _router_term(scenario, load)
    terms = [*ev_terms, router]
    if scenario.cache.enabled:
        terms.append(
            Term(
                "cache_blocks",
                "block visits",
                load.blocks,
                _cache_cause(scenario, load),
                "raise the cache block size, shorten the prompts or turn the cache off",
            )
        )
    mem_terms = _memory_terms(scenario, load, ev_terms)
    terms += mem_terms
    return WorkEstimate(
        requests=load.n,
        events=events,
        router_looks=router.value,
        cache_blocks=load.blocks,
        memory_bytes=sum(t.value for t in mem_terms),
        from_requests=requests is not None,
        terms=tuple(terms),
    )


def check(scenario: Scenario, requests: Requests | None = None) -> WorkEstimate:
    """The estimate, or WorkBoundError naming each quantity over its limit and what drives it."""
    est = estimate(scenario, requests)
    problems = est.problems()
    if problems:
        raise WorkBoundError("; ".join(problems), scenario)
    return est
