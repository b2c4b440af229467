"""What a benchmark file says: the setup it states, what it measured, and what it cannot know.

Every reader (`engine.observe.bench`, `aiperf`, `prometheus`) turns a file into one `Observation`.
Latencies are kept in milliseconds as the tools print them; per-request rows in seconds, as the
simulator's tables are. A file never says which chip, how many, which serving stack and version,
how the chips were split or at which precision: `Observation.unknown` lists those, and the replay
asks for them.

Untrusted input: the checks here (`number`, `count`, `check_rows`) turn a value out of range, a
NaN, a negative time or per-request lists of different lengths into one-line ScenarioErrors that
name the file and the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from engine.core import bounds
from engine.core.errors import ScenarioError

UNKNOWN = (
    "chip",
    "chip count",
    "serving stack and version",
    "layout (tensor / pipeline / data parallel)",
    "precision (weights and KV)",
)
"""What no benchmark file states: the replay and the fit ask for each."""

MAX_VALUE = 1e12
"""Largest number accepted in a benchmark file (ms, tokens, counts): beyond it a value is corrupt."""

MAX_ITL_VALUES = 20_000_000
"""Most inter-token latencies accepted in one file (all requests together)."""


@dataclass(frozen=True, kw_only=True)
class Latency:
    """One latency's statistics as a file states them (ms): its mean and percentiles (50: median)."""

    mean_ms: float | None = None
    percentiles_ms: Mapping[float, float] = field(default_factory=dict)

    def at(self, stat: str) -> float | None:
        """'mean' or 'p50', 'p99', ...: the value, or None where the file does not state it."""
        if stat == "mean":
            return self.mean_ms
        return self.percentiles_ms.get(float(stat[1:]))


@dataclass(frozen=True, kw_only=True)
class Setup:
    """The run's setup as the file states it (None: not stated)."""

    model: str | None = None
    prompt_tokens: float | None = None
    """Mean prompt length (tokens)."""
    output_tokens: float | None = None
    """Mean output length (tokens)."""
    requests: int | None = None
    rate_rps: float | None = None
    """Request rate; None with `all_at_once` for bench tools' ``inf`` (every request sent at t = 0)."""
    all_at_once: bool = False
    concurrency: int | None = None
    burstiness: float | None = None
    """Gamma shape of the gaps between arrivals (1: Poisson), as vLLM's and SGLang's tools draw them."""


@dataclass(frozen=True, kw_only=True)
class Rows:
    """Per-request measurements (arrays of equal length; failed requests already removed)."""

    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    ttft_s: np.ndarray
    e2e_s: np.ndarray
    itl_s: np.ndarray
    """Every inter-token gap of every request, concatenated (the ITL distribution)."""
    start_s: np.ndarray | None = None
    """Send times from the first request, where the file has them (AIPerf's records, vLLM's
    ``--save-detailed`` result from the versions that write ``start_times``)."""

    @property
    def tpot_s(self) -> np.ndarray:
        """(E2E - TTFT) / (output - 1) of requests with more than one output token."""
        many = self.output_tokens > 1
        return (self.e2e_s[many] - self.ttft_s[many]) / (self.output_tokens[many] - 1)


@dataclass(frozen=True, kw_only=True)
class Measured:
    """What the run measured: latencies (ms), throughputs and counts (None: not stated)."""

    ttft: Latency | None = None
    tpot: Latency | None = None
    itl: Latency | None = None
    e2e: Latency | None = None
    queue: Latency | None = None
    output_tok_s: float | None = None
    request_rps: float | None = None
    duration_s: float | None = None
    completed: int | None = None
    failed: int | None = None
    running: float | None = None
    """Requests running at the end of the window (a server's gauge)."""
    waiting: float | None = None
    kv_usage: float | None = None
    """Fraction of the KV cache in use at the end of the window (0 to 1)."""


@dataclass(frozen=True, kw_only=True)
class Observation:
    """One benchmark file, read: its format, setup, measurements, rows and what it cannot know."""

    format: str
    source: str
    setup: Setup
    measured: Measured
    rows: Rows | None = None
    unknown: tuple[str, ...] = UNKNOWN
    notes: tuple[str, ...] = ()


# --- checks on untrusted values --------------------------------------------------------------


def number(value: Any, what: str, *, low: float = 0.0, high: float = MAX_VALUE) -> float:
    """`value` as a finite float in [low, high]; a one-line ScenarioError naming `what` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f"{what}: {value!r} is not a number")
    v = float(value)
    if not math.isfinite(v):
        raise ScenarioError(f"{what}: {value!r} is not a finite number")
    if v < low or v > high:
        raise ScenarioError(f"{what}: {_plain(v)} is out of range [{_plain(low)}, {_plain(high)}]")
    return v


def _plain(v: float) -> str:
    """A bound as a reader types it: 1,048,576 (it read 1.04858e+06: a browser review), 0.5, or 1e+18 past
    a trillion, where digits no longer help."""
    if v == int(v) and abs(v) < 1e12:
        return f"{int(v):,}"
    return f"{v:g}"


def optional(data: Mapping[str, Any], key: str, what: str, **kw: float) -> float | None:
    """`data[key]` checked by `number`, or None when absent or null."""
    value = data.get(key)
    return None if value is None else number(value, f"{what}: {key}", **kw)


def count(value: Any, what: str, high: int = bounds.MAX_REQUESTS) -> int:
    """A whole count in [0, high]."""
    v = number(value, what, high=high)
    if v != int(v):
        raise ScenarioError(f"{what}: {v:g} is not a whole number")
    return int(v)


def series(values: Any, what: str, *, high: float = MAX_VALUE) -> np.ndarray:
    """A list of numbers (each checked by `number`) as a float array; at most `bounds.MAX_REQUESTS`."""
    if not isinstance(values, list):
        raise ScenarioError(f"{what}: expected a list, got {type(values).__name__}")
    if len(values) > bounds.MAX_REQUESTS:
        raise ScenarioError(f"{what}: {len(values):,} entries; the limit is {bounds.MAX_REQUESTS:,}")
    return np.array([number(v, f"{what}[{i}]", high=high) for i, v in enumerate(values)], dtype=float)


def check_rows(source: str, lists: Mapping[str, Sequence[Any]]) -> int:
    """The common length of per-request lists; ScenarioError naming both when two differ."""
    lengths = {k: len(v) for k, v in lists.items()}
    first = next(iter(lengths))
    for k, n in lengths.items():
        if n != lengths[first]:
            raise ScenarioError(
                f"{source}: per-request lists differ in length ({first}: {lengths[first]}, {k}: {n})"
            )
    return lengths[first]


def latency_ms(mean: float | None, percentiles: Mapping[float, float]) -> Latency | None:
    """A `Latency`, or None when neither a mean nor a percentile is known."""
    if mean is None and not percentiles:
        return None
    return Latency(mean_ms=mean, percentiles_ms=dict(percentiles))


def from_rows(values_s: np.ndarray, points: Sequence[float] = (50.0, 90.0, 99.0)) -> Latency | None:
    """Mean and percentiles (ms) of per-request values in seconds (None when empty)."""
    if values_s.size == 0:
        return None
    ms = values_s * 1000.0
    return Latency(mean_ms=float(ms.mean()), percentiles_ms={p: float(np.percentile(ms, p)) for p in points})


def has_load(obs: Observation) -> bool:
    """Whether a file states its load: a concurrency, a request rate, or every request at once."""
    st = obs.setup
    return bool(st.concurrency or st.rate_rps or st.all_at_once)


def with_load(
    obs: Observation, *, concurrency: int | None = None, rate_rps: float | None = None
) -> Observation:
    """`obs` with the load the user states where the file does not (a concurrency or a request rate,
    each replacing what the file says); unchanged when neither is given."""
    if concurrency is None and rate_rps is None:
        return obs
    if concurrency is not None and count(concurrency, "concurrency", high=bounds.MAX_CLIENTS) < 1:
        raise ScenarioError(f"concurrency: {concurrency} is out of range [1, {bounds.MAX_CLIENTS}]")
    if rate_rps is not None:
        number(rate_rps, "rate_rps", low=bounds.MIN_RATE_RPS, high=bounds.MAX_RATE_RPS)
    setup = replace(
        obs.setup,
        concurrency=concurrency or obs.setup.concurrency,
        rate_rps=rate_rps or obs.setup.rate_rps,
        burstiness=obs.setup.burstiness or 1.0,
    )
    unknown = tuple(u for u in obs.unknown if u != "concurrency or request rate")
    # it said 'the load was given with the file' of a load the user gave (a review)
    given = ", ".join(
        f
        for f in (
            f"concurrency {concurrency}" if concurrency else "",
            f"{rate_rps:g} req/s" if rate_rps else "",
        )
        if f
    )
    said = f"the load replayed is the one given ({given}): the file states none"
    return replace(obs, setup=setup, unknown=unknown, notes=(*obs.notes, said))
