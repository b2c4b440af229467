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

Multi-turn sessions: a session starts at an arrival; each next turn comes an exponential think
time later and its prompt is the whole previous context (prompt and answer) plus new input.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from engine import bounds
from engine.catalog import shared_dir
from engine.errors import ScenarioError
from engine.scenario import Arrival, LengthDist, RequestClass, Scenario, Trace

Z99 = 2.3263478740408408
"""The standard normal's 99th percentile."""


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
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __len__(self) -> int:
        return int(self.arrival_s.shape[0])

    def blocks(self, rid: int) -> np.ndarray | None:
        """Block hashes of a request's prompt (traces that carry them), else None."""
        if self.block_offsets is None or self.block_hashes is None:
            return None
        return self.block_hashes[self.block_offsets[rid] : self.block_offsets[rid + 1]]


# --- path resolution ----------------------------------------------------------------------


def resolve_path(path: str) -> Path:
    """A data file path: ``shared:traces/...`` under the shared folder, else as given."""
    if path.startswith("shared:"):
        root = shared_dir()
        if root is None:
            raise ScenarioError(f"{path}: the shared/ folder was not found (set FENGONG_SHARED)")
        p = root / path[len("shared:") :]
    else:
        p = Path(path).expanduser()
    if not p.is_file():
        raise ScenarioError(f"{path}: no such file")
    if p.stat().st_size > bounds.MAX_TRACE_BYTES:
        raise ScenarioError(f"{path}: {p.stat().st_size:,} bytes; the limit is {bounds.MAX_TRACE_BYTES:,}")
    return p


# --- lengths ------------------------------------------------------------------------------


def lognormal_params(mean: float, p99: float) -> tuple[float, float]:
    """(mu, sigma) of the lognormal with this mean and 99th percentile."""
    gap = math.log(p99 / mean)
    disc = Z99 * Z99 - 2.0 * gap
    if disc < 0:
        raise ScenarioError(f"p99 {p99} is more than {math.exp(Z99 * Z99 / 2):.1f}x the mean {mean}")
    sigma = Z99 - math.sqrt(disc)
    return math.log(mean) - sigma * sigma / 2.0, sigma


_EMPIRICAL_CACHE: dict[tuple[str, str], np.ndarray] = {}


def _empirical(dist: LengthDist) -> np.ndarray:
    assert dist.path is not None and dist.column is not None
    key = (dist.path, dist.column)
    if key not in _EMPIRICAL_CACHE:
        p = resolve_path(dist.path)
        values = []
        with p.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if dist.column not in (reader.fieldnames or []):
                raise ScenarioError(f"{dist.path}: no column {dist.column!r}; columns: {reader.fieldnames}")
            for line, row in enumerate(reader, start=2):
                try:
                    values.append(float(row[dist.column]))
                except (TypeError, ValueError):
                    raise ScenarioError(
                        f"{dist.path}: line {line}, column {dist.column}: not a number"
                    ) from None
        if not values:
            raise ScenarioError(f"{dist.path}: no rows")
        _EMPIRICAL_CACHE[key] = np.asarray(values)
    return _EMPIRICAL_CACHE[key]


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
        values = _empirical(dist)
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
        starts = np.zeros(min(bounds.MAX_REQUESTS, max(arr.clients * 64, 1024)))
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
            f"workload: {total:,} requests would be generated; the limit is {bounds.MAX_REQUESTS:,}"
        )
    session = np.repeat(np.arange(n0), turns)
    turn_idx = np.arange(total) - np.repeat(np.cumsum(turns) - turns, turns)
    cls = cls0[session]
    new_prompt, output = _draw_class_lengths(classes, cls, rng)
    think = np.array([classes[c].multi_turn.think_time_s for c in cls])
    gaps = np.where(turn_idx > 0, rng.exponential(1.0, size=total) * think, 0.0)
    arrival = np.repeat(starts, turns) + _segment_cumsum(gaps, turns)
    # a turn's prompt is the previous turn's prompt and answer plus its own new input
    ctx = (new_prompt + output).astype(np.int64)
    prev_ctx = np.concatenate([[0], _segment_cumsum(ctx, turns)[:-1]])
    reused = np.where(turn_idx > 0, prev_ctx, 0)
    prompt = new_prompt + reused
    # shared system prompts
    groups0 = np.array([classes[c].prefix.groups for c in cls0], dtype=np.int64)
    ptoks = np.array([classes[c].prefix.tokens for c in cls], dtype=np.int64)
    pgroup = (rng.integers(0, 1 << 30, size=n0) % np.maximum(groups0, 1))[session]
    prompt = prompt + ptoks
    prompt = np.minimum(prompt, bounds.MAX_TOKENS_PER_REQUEST)
    order = np.argsort(arrival, kind="stable")
    in_window = (
        arrival[order] < scenario.duration_s if arr.kind in ("poisson", "gamma") else np.ones(total, bool)
    )
    order = order[in_window]
    return Requests(
        arrival_s=arrival[order],
        cls=cls[order].astype(np.int64),
        prompt_tokens=prompt[order].astype(np.int64),
        output_tokens=output[order].astype(np.int64),
        prefix_group=(pgroup[order] + 1_000_003 * cls[order]).astype(np.int64),
        prefix_tokens=ptoks[order],
        session=session[order].astype(np.int64),
        reused_tokens=reused[order].astype(np.int64),
        block_tokens=scenario.cache.block_tokens,
        closed_loop_clients=arr.clients if arr.kind == "closed_loop" else 0,
        think_time_s=arr.think_time_s,
    )


def _segment_cumsum(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Cumulative sums restarting at each segment (segments given by their lengths)."""
    c = np.cumsum(values)
    starts = np.cumsum(lengths) - lengths
    base = np.repeat(np.concatenate([[0], c])[starts], lengths)
    return c - base


# --- traces -------------------------------------------------------------------------------


def read_trace(trace: Trace, scenario: Scenario, text: str | None = None) -> Requests:
    """Requests from a trace file (or its text, for uploads), scaled in time and windowed."""
    if text is None:
        path = resolve_path(trace.path)
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise ScenarioError(f"{trace.path}: not UTF-8 text") from None
    if len(text) > bounds.MAX_TRACE_BYTES:
        raise ScenarioError(f"{trace.path}: larger than {bounds.MAX_TRACE_BYTES:,} bytes")
    reader = {"mooncake": _read_mooncake, "azure": _read_azure, "csv": _read_csv}[trace.format]
    arrival, prompt, output, cls, offsets, hashes = reader(text, trace.path, scenario)
    if len(arrival) == 0:
        raise ScenarioError(f"{trace.path}: no requests")
    arrival = (arrival - arrival.min()) / trace.time_scale
    keep = (arrival >= trace.start_s) & (arrival < trace.start_s + scenario.duration_s)
    idx = np.nonzero(keep)[0][: trace.max_requests]
    if len(idx) > bounds.MAX_REQUESTS:
        raise ScenarioError(
            f"{trace.path}: {len(idx):,} requests in the window; limit {bounds.MAX_REQUESTS:,}"
        )
    n = len(idx)
    new_off = None
    new_hash = None
    if offsets is not None and hashes is not None:
        lens = offsets[idx + 1] - offsets[idx]
        new_off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        new_hash = (
            np.concatenate([hashes[offsets[i] : offsets[i + 1]] for i in idx])
            if n
            else np.zeros(0, dtype=np.int64)
        )
    order = np.argsort(arrival[idx], kind="stable")
    idx = idx[order]
    if new_off is not None and new_hash is not None:
        lens = (new_off[1:] - new_off[:-1])[order]
        starts = new_off[:-1][order]
        new_hash = (
            np.concatenate([new_hash[s : s + ln] for s, ln in zip(starts, lens, strict=True)])
            if n
            else new_hash
        )
        new_off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    return Requests(
        arrival_s=arrival[idx] - trace.start_s,
        cls=cls[idx],
        prompt_tokens=np.clip(prompt[idx], 1, bounds.MAX_TOKENS_PER_REQUEST),
        output_tokens=np.clip(output[idx], 1, bounds.MAX_TOKENS_PER_REQUEST),
        prefix_group=np.full(n, -1, dtype=np.int64),
        prefix_tokens=np.zeros(n, dtype=np.int64),
        session=np.arange(n, dtype=np.int64),
        reused_tokens=np.zeros(n, dtype=np.int64),
        block_tokens=trace.block_tokens if trace.format == "mooncake" else scenario.cache.block_tokens,
        block_offsets=new_off,
        block_hashes=new_hash,
    )


TraceArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]


def _arrays(
    arrival: list[float], prompt: list[int], output: list[int], cls: list[int] | None = None,
    offsets: np.ndarray | None = None, hashes: np.ndarray | None = None,
) -> TraceArrays:  # fmt: skip
    """A reader's columns as arrays (class 0 for every row when the trace names none)."""
    return (
        np.asarray(arrival, dtype=float),
        np.asarray(prompt, dtype=np.int64),
        np.asarray(output, dtype=np.int64),
        np.asarray(cls, dtype=np.int64) if cls is not None else np.zeros(len(arrival), dtype=np.int64),
        offsets,
        hashes,
    )


def _csv_rows(text: str, name: str, need: tuple[str, ...], hint: str = "") -> csv.DictReader[str]:
    """A CSV reader over `text`, refusing a file that lacks one of the `need` columns."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in need if c not in (reader.fieldnames or [])]
    if missing:
        raise ScenarioError(f"{name}: missing column(s) {', '.join(missing)}{hint}")
    return reader


def _positive_int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(float(value)):
        raise ScenarioError(f"{where}: expected a number (got {value!r})")
    if value < 0:
        raise ScenarioError(f"{where}: must not be negative (got {value!r})")
    return int(value)


def _read_mooncake(text: str, name: str, scenario: Scenario) -> TraceArrays:
    arrival: list[float] = []
    prompt: list[int] = []
    output: list[int] = []
    hashes: list[int] = []
    lens: list[int] = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScenarioError(f"{name}: line {line_no}: not JSON ({exc.msg}, column {exc.colno})") from None
        if not isinstance(row, dict):
            raise ScenarioError(f"{name}: line {line_no}: expected a JSON object")
        for key in ("timestamp", "input_length", "output_length"):
            if key not in row:
                raise ScenarioError(f"{name}: line {line_no}: missing field {key!r}")
        arrival.append(_positive_int(row["timestamp"], f"{name}: line {line_no}, field timestamp") / 1000.0)
        prompt.append(_positive_int(row["input_length"], f"{name}: line {line_no}, field input_length"))
        output.append(_positive_int(row["output_length"], f"{name}: line {line_no}, field output_length"))
        h = row.get("hash_ids", [])
        if not isinstance(h, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in h):
            raise ScenarioError(f"{name}: line {line_no}, field hash_ids: expected a list of integers")
        hashes.extend(h)
        lens.append(len(h))
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    return _arrays(arrival, prompt, output, offsets=offsets, hashes=np.asarray(hashes, dtype=np.int64))


def _read_azure(text: str, name: str, scenario: Scenario) -> TraceArrays:
    reader = _csv_rows(text, name, ("TIMESTAMP", "ContextTokens", "GeneratedTokens"))
    arrival: list[float] = []
    prompt: list[int] = []
    output: list[int] = []
    for line, row in enumerate(reader, start=2):
        ts = (row["TIMESTAMP"] or "").strip()
        try:
            # seven fractional digits: keep microseconds
            head, _, frac = ts.partition(".")
            when = datetime.fromisoformat(f"{head}.{(frac + '000000')[:6]}" if frac else head)
        except ValueError:
            raise ScenarioError(f"{name}: line {line}, column TIMESTAMP: not a timestamp ({ts!r})") from None
        arrival.append(when.timestamp())
        for col, dest in (("ContextTokens", prompt), ("GeneratedTokens", output)):
            try:
                dest.append(int(row[col]))
            except (TypeError, ValueError):
                raise ScenarioError(
                    f"{name}: line {line}, column {col}: not an integer ({row[col]!r})"
                ) from None
    return _arrays(arrival, prompt, output)


def _read_csv(text: str, name: str, scenario: Scenario) -> TraceArrays:
    need = ("arrival_s", "input_tokens", "output_tokens")
    reader = _csv_rows(text, name, need, f"; expected {', '.join(need)}[, class]")
    names = {c.name: i for i, c in enumerate(scenario.workload.classes)}
    arrival: list[float] = []
    prompt: list[int] = []
    output: list[int] = []
    cls: list[int] = []
    for line, row in enumerate(reader, start=2):
        try:
            a = float(row["arrival_s"])
            if not math.isfinite(a) or a < 0:
                raise ValueError
        except (TypeError, ValueError):
            raise ScenarioError(
                f"{name}: line {line}, column arrival_s: not a time >= 0 ({row['arrival_s']!r})"
            ) from None
        arrival.append(a)
        for col, dest in (("input_tokens", prompt), ("output_tokens", output)):
            try:
                v = int(row[col])
                if v < 1:
                    raise ValueError
            except (TypeError, ValueError):
                raise ScenarioError(
                    f"{name}: line {line}, column {col}: not a positive integer ({row[col]!r})"
                ) from None
            dest.append(v)
        label = (row.get("class") or "").strip()
        if label and label not in names:
            raise ScenarioError(f"{name}: line {line}, column class: {label!r} is not one of {sorted(names)}")
        cls.append(names.get(label, 0))
    return _arrays(arrival, prompt, output, cls)
