"""Hard limits on what one simulation may ask for, enforced whenever a scenario is validated.

A scenario can come from a preset, a file, a share link or a trace upload; every one of them
passes through `engine.scenario.model.Scenario` validation, which checks these limits, so no origin
can start a run larger than this table allows. docs/bounds.md repeats the table for users.

The last four rows bound the work of a run rather than one field: products of fields (prompt
length over chunk size, window over an elastic check interval, prompt length over cache block
size, requests times instances) that each pass their own limit. `engine.serving.work_bound` estimates
them before a run and `engine.simulate` refuses a scenario over any of them (the CLI's
``--no-work-limit`` lifts them for trusted local runs). The requests row follows the memory row
(`MAX_REQUESTS`): how many requests a run may have is the work bound's to judge, run by run.
"""

from __future__ import annotations

MAX_DURATION_S = 86_400.0
"""Simulated arrival window (one day)."""
MIN_DURATION_S = 1.0
"""Shortest arrival window of a run (and of a planning or capacity run)."""
MAX_RATE_RPS = 5_000.0
"""Mean arrival rate."""
MIN_RATE_RPS = 1e-4
"""Lowest mean arrival rate (one request in about three hours)."""
MAX_REPLICATIONS = 100
"""Seeds one replicated run may simulate (``replicate``, the CLI's ``run --replications``)."""
MAX_BUDGET_USD_PER_HOUR = 10_000_000.0
"""Highest hourly budget a plan may be given."""
MAX_INSTANCES = 512
"""Instances across all pools of a deployment."""
MAX_POOLS = 8
"""Pools of a deployment (each its own chip, layout and role)."""
MAX_TP = 64
"""Chips per tensor-parallel group."""
MAX_PP = 16
"""Pipeline stages."""
MAX_TOKENS_PER_REQUEST = 1_048_576
"""Prompt or output tokens of one request."""
MAX_CLASSES = 16
"""Request classes in a workload."""
MAX_FAULTS = 32
"""Scheduled faults."""
MAX_CLIENTS = 10_000
"""Clients of a closed-loop load."""
MAX_TRACE_BYTES = 64 * 1024 * 1024
"""Size of a trace file read or uploaded."""
MAX_LINK_CHARS = 8_192
"""Length of a share link's scenario payload."""
MAX_BATCH = 4_096
"""Requests in one running batch."""
MAX_EVENTS = 10_000_000
"""Simulated events one run is estimated to take (a minute or two on the reference machine)."""
MAX_ROUTER_LOOKS = 50_000_000
"""Instances compared by the router over a run: requests x instances each is routed among."""
MAX_CACHE_BLOCKS = 50_000_000
"""Prefix-cache block visits over a run: requests x (2 x prompt + output) / block tokens."""
MAX_STATE_BYTES = 2_000_000_000
"""Estimated memory of one run's state, records and cache bookkeeping."""
PLAN_EVENTS_PER_S = 50_000.0
"""Estimated events one core simulates per second in a plan (measured: docs/planner.md, "Bounded work")."""
MAX_PLAN_EVENTS = 30_000_000
"""Estimated events of a whole plan, its margin included: about ten minutes of one core."""
REQUEST_ROW_BYTES = 1200
"""Memory of one request's row: its state, records and result columns (measured on the presets with
tracemalloc; `engine.serving.work_bound` counts it with the events' records and the cache's)."""
MAX_REQUESTS = MAX_STATE_BYTES // REQUEST_ROW_BYTES
"""Request rows one run may allocate (expected arrivals for open-loop loads, or trace rows): as many as
the memory bound holds before a single event is recorded, 1,666,666. Below it the work bound judges
each run by its own estimate (events, router looks, cache blocks, memory), so a run of a million
requests passes or fails on its merits; this row only keeps a scenario from asking to draw, or read,
more requests than could ever pass."""

TABLE: tuple[tuple[str, float, str], ...] = (
    (
        "requests per run",
        MAX_REQUESTS,
        "expected arrivals or trace rows: what the memory bound holds (below)",
    ),
    ("simulated window", MAX_DURATION_S, "seconds of arrivals"),
    ("arrival rate", MAX_RATE_RPS, "requests per second"),
    ("replications", MAX_REPLICATIONS, "seeds of one replicated run (run --replications)"),
    ("instances", MAX_INSTANCES, "across all pools"),
    ("pools", MAX_POOLS, "per deployment"),
    ("tensor parallel", MAX_TP, "chips per instance"),
    ("pipeline stages", MAX_PP, "stages per instance"),
    ("tokens per request", MAX_TOKENS_PER_REQUEST, "prompt or output"),
    ("request classes", MAX_CLASSES, "per workload"),
    ("faults", MAX_FAULTS, "per scenario"),
    ("closed-loop clients", MAX_CLIENTS, "per workload"),
    ("trace file", MAX_TRACE_BYTES, "bytes"),
    ("share-link payload", MAX_LINK_CHARS, "characters"),
    ("running batch", MAX_BATCH, "requests"),
    ("simulated events", MAX_EVENTS, "estimated per run (work bound)"),
    ("router looks", MAX_ROUTER_LOOKS, "requests x instances compared, per run (work bound)"),
    ("cache block visits", MAX_CACHE_BLOCKS, "per run (work bound)"),
    ("simulation memory", MAX_STATE_BYTES, "bytes, estimated per run (work bound)"),
    ("plan or sweep work", MAX_PLAN_EVENTS, "simulated events estimated over a plan's or a sweep's runs"),
)
"""The limits as (name, value, unit) rows, for documentation and the app."""


def requests_limit_text() -> str:
    """'the limit is 1,666,666 (what 2 GB of simulation memory hold at 1,200 bytes a request)'."""
    return (
        f"the limit is {MAX_REQUESTS:,} (what {MAX_STATE_BYTES / 1e9:g} GB of simulation memory hold at "
        f"{REQUEST_ROW_BYTES:,} bytes a request; docs/bounds.md)"
    )
