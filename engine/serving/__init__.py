"""The serving simulation: from a scenario to what happened to every request.

Owns: `workload` (request generation), `traces` (a package of trace readers, one module a format:
Mooncake, Azure, CSV, agentic sessions; `text` holds the text walking they share), `cache` (prefix
cache tiers), `host` (what an instance may see and call of the running simulation), `instance` (one
instance's state machine), `disruptions` (faults, elastic roles), `sim` (the request life cycle on
simpy), `metrics` (the summary figures from the records, numpy only), `tables` (the per-request
table and time series, pandas, laid out when first read), `work_load` (how many requests and how
long, drawn or expected), `work_bound` (the size of a run estimated from that load, checked before
it starts) and `run` (the front door: simulate, replicate).
May import: engine.core, engine.catalog, engine.costmodel, engine.policies, engine.scenario.
"""
