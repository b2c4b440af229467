"""Request generation and trace replay: the same workload and seed give the same requests.

Generation is separate from serving, so every deployment sees the same requests and A/B
comparisons are paired. `generate(scenario)` returns a `Requests` table of numpy arrays:
arrival time, class, prompt and output tokens, plus what the prefix cache needs (a shared
prefix group and its length, the multi-turn session and the part of the prompt it repeats, or a
trace's block hashes).

Arrivals: a unit-mean renewal process (exponential gaps for Poisson, gamma gaps with a
coefficient of variation for bursty traffic) in "operational time", mapped through the inverse
of the cumulative rate Λ(t) = ∫ rate(s) ds, so a rate schedule (ramp, peak, diurnal, points)
shapes when requests come. Built-in shapes have a mean factor of one: `rate_rps` is the mean
rate over the window. Explicit points multiply `rate_rps` as given.

Multi-turn sessions: a session starts at an arrival; each next turn is sent an exponential think
time after the previous turn's answer ended (`Requests.turn_gap_s`; the front door sends it) and
its prompt is the whole previous context (prompt and answer) plus new input.

Traces: `engine.serving.traces` reads and checks a trace file; `read_trace` makes its rows requests.
The readers load with the first trace or length file a run reads, so a generated workload never
loads them (docs/performance.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.scenario.arrival import Arrival
from engine.scenario.model import Z99 as Z99  # the lengths' check and their draws share it
from engine.scenario.model import LengthDist, RequestClass, Scenario, Trace


@dataclass(frozen=True)
class Requests:
    """Every request of a run, as parallel numpy arrays (index = request id)."""

    arrival_s: np.ndarray
    cls: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    prefix_group: np.ndarray
    prefix_tokens: np.ndarray
    session: np.ndarray
    reused_tokens: np.ndarray
    block_tokens: int = 512
    block_offsets: np.ndarray | None = None
    block_hashes: np.ndarray | None = None
    closed_loop_clients: int = 0
    think_time_s: float = 0.0
    pause_s: np.ndarray | None = None
    """Closed loop: how long after its client's previous request ended each request is sent (the
    first `closed_loop_clients`: each client's start offset from t = 0). `closed_loop_pauses`."""
    turn_gap_s: np.ndarray | None = None
    """Generated multi-turn sessions: each request's think time after its session's previous turn
    ended (0 for a session's first turn). A later turn is sent then, not at its `arrival_s`, which
    is its planned time (the previous turn's planned one plus the think time: the order of ids, and
    what a window keeps); a turn after one that was not served, or that would come after the window,
    is never sent (docs/decisions.md, "When a session's next turn is sent"). None: every request is sent at its
    `arrival_s` (one-turn workloads, traces, closed loops)."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    source: Any = None
    """A trace's read (`engine.serving.traces.TraceRequests`: its rows in the file, those before, past
    and cut from the window), None for generated requests."""

    def __len__(self) -> int:
        return int(self.arrival_s.shape[0])

    def as_sent(
        self, rows: np.ndarray, arrival_s: np.ndarray, prompt_tokens: np.ndarray | None = None
    ) -> Requests:
        """The requests of `rows` (ids, in order) at the times they were sent, with their prompts as
        sent where given: a multi-turn run's table, its turns never sent left out (`Records.kept`).
        Generated requests only (no block hashes)."""
        assert self.block_offsets is None, "a trace's requests are all sent"
        return replace(
            self,
            arrival_s=arrival_s,
            cls=self.cls[rows],
            prompt_tokens=self.prompt_tokens[rows] if prompt_tokens is None else prompt_tokens,
            output_tokens=self.output_tokens[rows],
            prefix_group=self.prefix_group[rows],
            prefix_tokens=self.prefix_tokens[rows],
            session=self.session[rows],
            reused_tokens=self.reused_tokens[rows],
            turn_gap_s=self.turn_gap_s[rows] if self.turn_gap_s is not None else None,
        )

    def blocks(self, rid: int) -> np.ndarray | None:
        """Block hashes of a request's prompt (traces that carry them), else None."""
        if self.block_offsets is None or self.block_hashes is None:
            return None
        return self.block_hashes[self.block_offsets[rid] : self.block_offsets[rid + 1]]


# --- lengths ------------------------------------------------------------------------------


def whole_run(scenario: Scenario) -> bool:
    """True for loads measured over the whole run (offline batches and closed loops): their window
    is the makespan; an open loop's is [warm-up, duration), which the user rents whole."""
    return scenario.workload.trace is None and scenario.workload.arrival.kind in ("offline", "closed_loop")


def lognormal_params(mean: float, p99: float) -> tuple[float, float]:
    """(mu, sigma) of the lognormal with this mean and 99th percentile."""
    gap = math.log(p99 / mean)
    disc = Z99 * Z99 - 2.0 * gap
    if disc < 0:
        raise ScenarioError(f"p99 {p99} is more than {math.exp(Z99 * Z99 / 2):.1f}x the mean {mean}")
    sigma = Z99 - math.sqrt(disc)
    return math.log(mean) - sigma * sigma / 2.0, sigma


def sample_lengths(dist: LengthDist, n: int, rng: np.random.Generator) -> np.ndarray:
    """`n` token counts drawn from a distribution, clipped to [1, max_tokens]."""
    if dist.kind == "constant":
        out = np.full(n, float(dist.tokens or 1))
    elif dist.kind == "uniform":
        out = rng.integers(int(dist.low or 1), int(dist.high or 1) + 1, size=n).astype(float)
    elif dist.kind == "lognormal":
        mu, sigma = lognormal_params(float(dist.mean or 1), float(dist.p99 or 2))
        out = rng.lognormal(mu, sigma, size=n)
    else:
        from engine.serving import traces  # the readers: loaded with the first file read

        values = traces.length_column(dist)
        out = values[rng.integers(0, len(values), size=n)]
    return np.clip(np.rint(out), 1, dist.max_tokens).astype(np.int64)


# --- arrivals -----------------------------------------------------------------------------


def rate_factor_shape(arrival: Arrival, x: np.ndarray) -> np.ndarray:
    """The un-normalised shape of a built-in rate schedule over the window fraction `x`."""
    pf = arrival.peak_factor
    if arrival.shape == "ramp":
        return 1.0 + (pf - 1.0) * x  # from 1 to peak_factor
    if arrival.shape == "peak":
        return np.where(np.abs(x - 0.5) < 0.1, pf, 1.0)  # the middle fifth of the window
    if arrival.shape == "diurnal" and arrival.peak_hour is not None:  # the window is one day
        return 1.0 + (pf - 1.0) * 0.5 * (1.0 + np.cos(2.0 * np.pi * (x - arrival.peak_hour / 24.0)))
    if arrival.shape == "diurnal":
        return 1.0 + (pf - 1.0) * 0.5 * (1.0 - np.cos(2.0 * np.pi * x))  # trough at the ends
    return np.ones_like(x)


def rate_factor(arrival: Arrival, duration_s: float, t: np.ndarray) -> np.ndarray:
    """The rate multiplier at times `t` (built-in shapes have mean one over the window)."""
    if arrival.shape == "points":
        pts_t = np.array([p.at_s for p in arrival.points])
        pts_f = np.array([p.factor for p in arrival.points])
        return np.asarray(np.interp(t, pts_t, pts_f))
    x = np.clip(t / duration_s, 0.0, 1.0)
    mean = float(np.mean(rate_factor_shape(arrival, np.linspace(0.0, 1.0, 2001))))
    return rate_factor_shape(arrival, x) / mean


def arrival_times(
    arrival: Arrival, duration_s: float, rate_rps: float, rng: np.random.Generator
) -> np.ndarray:
    """Open-loop arrival times in [0, duration_s) at a mean rate, shaped over time."""
    grid = np.linspace(0.0, duration_s, 4001)
    lam = np.concatenate(
        [[0.0], np.cumsum(np.diff(grid) * rate_factor(arrival, duration_s, grid[:-1] + 1e-9))]
    )
    lam *= rate_rps
    total = lam[-1]
    if total <= 0:
        return np.zeros(0)
    n_max = int(total + 10.0 * math.sqrt(total) + 20)
    if arrival.kind == "gamma":
        k = 1.0 / (arrival.cv * arrival.cv)
        gaps = rng.gamma(k, 1.0 / k, size=n_max)
    else:
        gaps = rng.exponential(1.0, size=n_max)
    u = np.cumsum(gaps)
    u = u[u < total]
    return np.interp(u, lam, grid)


# --- generation ---------------------------------------------------------------------------


def _draw_class_lengths(
    classes: tuple[RequestClass, ...], cls: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    n = len(cls)
    prompt = np.zeros(n, dtype=np.int64)
    output = np.zeros(n, dtype=np.int64)
    for c, spec in enumerate(classes):
        idx = np.nonzero(cls == c)[0]
        if len(idx):
            prompt[idx] = sample_lengths(spec.input, len(idx), rng)
            output[idx] = sample_lengths(spec.output, len(idx), rng)
    return prompt, output


def generate(scenario: Scenario) -> Requests:
    """The requests of a scenario: generated from its classes, or read from its trace."""
    wl = scenario.workload
    if wl.trace is not None:
        return read_trace(wl.trace, scenario)
    rng = np.random.default_rng([scenario.seed, 0x5EED])
    arr = wl.arrival
    shares = np.array(wl.shares())
    classes = wl.classes
    if arr.kind == "offline":
        starts = np.zeros(arr.requests)
    elif arr.kind == "closed_loop":
        starts = np.zeros(arr.closed_loop_rows())
    else:
        turns_mean = float(np.dot(shares, [c.multi_turn.turns_mean for c in classes]))
        starts = arrival_times(arr, scenario.duration_s, arr.rate_rps / turns_mean, rng)
    n0 = len(starts)
    cls0 = rng.choice(len(classes), size=n0, p=shares)
    # expand multi-turn sessions (open loop only): turn counts are geometric with the class mean
    turns = np.ones(n0, dtype=np.int64)
    if arr.kind in ("poisson", "gamma"):
        for c, spec in enumerate(classes):
            mean = spec.multi_turn.turns_mean
            idx = np.nonzero(cls0 == c)[0]
            if mean > 1 and len(idx):
                turns[idx] = rng.geometric(1.0 / mean, size=len(idx))
    total = int(turns.sum())
    if total > bounds.MAX_REQUESTS:
        raise ScenarioError(
            f"workload: {total:,} requests would be generated; {bounds.requests_limit_text()}"
        )
    session = np.repeat(np.arange(n0), turns)
    turn_idx = np.arange(total) - np.repeat(np.cumsum(turns) - turns, turns)
    cls = cls0[session]
    new_prompt, output = _draw_class_lengths(classes, cls, rng)
    # per-class values looked up by class index (a Python loop over a million requests held 100+ MB)
    think = np.array([c.multi_turn.think_time_s for c in classes])[cls]
    gaps = np.where(turn_idx > 0, rng.exponential(1.0, size=total) * think, 0.0)
    arrival = np.repeat(starts, turns) + _segment_cumsum(gaps, turns)
    sessions = bool(turns.max(initial=1) > 1)
    if not sessions:
        del gaps
    del think  # a million requests' temporaries: freed as soon as they are used
    # a turn's prompt is the previous turn's prompt and answer plus its own new input
    ctx = (new_prompt + output).astype(np.int64)
    prev_ctx = np.concatenate([[0], _segment_cumsum(ctx, turns)[:-1]])
    reused = np.where(turn_idx > 0, prev_ctx, 0)
    prompt = new_prompt + reused
    del ctx, prev_ctx, new_prompt, turn_idx
    # shared system prompts
    groups0 = np.array([c.prefix.groups for c in classes], dtype=np.int64)[cls0]
    ptoks = np.array([c.prefix.tokens for c in classes], dtype=np.int64)[cls]
    pgroup = (rng.integers(0, 1 << 30, size=n0) % np.maximum(groups0, 1))[session]
    prompt = prompt + ptoks
    prompt = np.minimum(prompt, bounds.MAX_TOKENS_PER_REQUEST)
    order = np.argsort(arrival, kind="stable")
    in_window = (
        arrival[order] < scenario.duration_s if arr.kind in ("poisson", "gamma") else np.ones(total, bool)
    )
    order = order[in_window]
    del groups0, in_window
    return Requests(  # `copy=False`: the columns are int64 already, gathered once by `order`
        arrival_s=arrival[order],
        cls=cls[order].astype(np.int64, copy=False),
        prompt_tokens=prompt[order].astype(np.int64, copy=False),
        output_tokens=output[order].astype(np.int64, copy=False),
        prefix_group=(pgroup[order] + 1_000_003 * cls[order]).astype(np.int64, copy=False),
        prefix_tokens=ptoks[order],
        session=session[order].astype(np.int64, copy=False),
        reused_tokens=reused[order].astype(np.int64, copy=False),
        block_tokens=scenario.cache.block_tokens,
        closed_loop_clients=arr.clients if arr.kind == "closed_loop" else 0,
        think_time_s=arr.think_time_s,
        pause_s=closed_loop_pauses(arr, total, scenario) if arr.kind == "closed_loop" else None,
        turn_gap_s=gaps[order] if sessions else None,
    )


def closed_loop_pauses(arr: Arrival, n: int, scenario: Scenario) -> np.ndarray:
    """Closed loop: the pause before each of `n` requests is sent, by request id.

    Request k < clients is client k's first, sent k x ramp / clients after t = 0
    (`Arrival.start_ramp_s`); every later one a think time after the request its client sent
    before it ends, drawn from `arrival.think`. Drawn by request id from the scenario's seed,
    not in the order requests end, so every deployment gets the same pauses (paired runs).
    """
    rng = np.random.default_rng([scenario.seed, 0xC105ED])
    think = arr.think_time_s
    if think <= 0 or arr.think == "constant":
        pauses = np.full(n, think)
    elif arr.think == "exponential":
        pauses = rng.exponential(think, size=n)
    else:
        pauses = think * rng.uniform(1.0 - arr.think_spread, 1.0 + arr.think_spread, size=n)
    first = min(arr.clients, n)
    pauses[:first] = np.arange(first) * (arr.start_ramp_s(scenario.duration_s) / arr.clients)
    return pauses


def _segment_cumsum(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Cumulative sums restarting at each segment (segments given by their lengths)."""
    c = np.cumsum(values)
    starts = np.cumsum(lengths) - lengths
    base = np.repeat(np.concatenate([[0], c])[starts], lengths)
    return c - base


# --- traces -------------------------------------------------------------------------------


def read_trace(trace: Trace, scenario: Scenario, text: str | None = None) -> Requests:
    """Requests from a trace file (or its text, for uploads), scaled in time and windowed.

    The file is read and checked by `engine.serving.traces.read`; a trace's requests share no
    generated prefix groups (their block hashes, where the format has them, name their blocks).
    """
    from engine.serving import traces  # the readers: loaded with the first trace read

    t = traces.read(trace, scenario, text)
    n = len(t)
    return Requests(
        arrival_s=t.arrival_s,
        cls=t.cls,
        prompt_tokens=t.prompt_tokens,
        output_tokens=t.output_tokens,
        prefix_group=np.full(n, -1, dtype=np.int64),
        prefix_tokens=np.zeros(n, dtype=np.int64),
        session=t.session,
        reused_tokens=np.zeros(n, dtype=np.int64),
        block_tokens=t.block_tokens,
        block_offsets=t.block_offsets,
        block_hashes=t.block_hashes,
        source=t,
    )


def __getattr__(name: str) -> Any:
    """`trace_class_names`, which the UI imported from here before the trace readers moved to
    `engine.serving.traces`: loaded with the readers on first use."""
    if name == "trace_class_names":
        from engine.serving.traces import trace_class_names

        return trace_class_names
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
