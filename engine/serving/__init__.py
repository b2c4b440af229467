"""The serving simulation: from a scenario to what happened to every request.

Owns the request side: `workload` (request generation), `traces` (a package of trace readers, one
module a format: Mooncake, Azure, CSV, agentic sessions; `text` holds the text walking they share).
The serving core, by its actors (docs/architecture.md): `sim` (wires them, owns the clock and a
request's milestones), `ledger` (every request's state; a request ends exactly once), `fleet`
(live instances by role, routing), `kv` with `handoffs` and `link` (KV reservations, the prefix
cache, hand-offs over the link, swaps), `front_door` with `edge` (arrivals, closed loops,
admission, degrading), `instance` with `batching` and `outage` (one instance's state machine),
`host` (what an instance may see and call of the running simulation), `cache` (prefix cache
tiers), `disruptions` (faults, elastic roles). After a run: `metrics` (the summary figures from
the records, numpy only), `gaps` (gaps between tokens), `saturation` (whether the queue grows
through the window: an unsustainable run), `tables` (the per-request table and time series,
pandas, laid out when first read). Around it: `work_load` (how many requests and how long, drawn
or expected), `work_bound` (the size of a run estimated from that load, checked before it starts)
and `run` (the front door: simulate, replicate).
May import: engine.core, engine.catalog, engine.costmodel, engine.policies, engine.scenario.
"""
