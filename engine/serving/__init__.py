"""The serving simulation: from a scenario to what happened to every request.

Owns: `workload` (request generation), `traces` (trace readers: Mooncake, Azure, CSV, agentic
sessions), `cache` (prefix cache tiers),
`host` (what an instance may see and call of the running simulation), `instance` (one
instance's state machine), `disruptions` (faults, elastic roles), `sim` (the request life
cycle on simpy), `metrics` (the summary figures from the records, numpy only), `saturation` (whether the
queue grows through the window: an unsustainable run), `tables` (the
per-request table and time series, pandas, laid out when first read), `work_bound` (the size of
a run, checked before it starts) and `run` (the front door: simulate, replicate).
May import: engine.core, engine.catalog, engine.costmodel, engine.policies, engine.scenario.
"""
