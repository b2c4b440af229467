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

import codecs
import json
import math
import re
import reprlib
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from itertools import repeat

import numpy as np

from engine.core import bounds, datafiles
from engine.core.errors import ScenarioError
from engine.scenario.model import Arrival, LengthDist, RequestClass, Scenario, Trace

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
    """The lengths in a column of a CSV file, each an integer from 1 to MAX_TOKENS_PER_REQUEST."""
    assert dist.path is not None and dist.column is not None
    key = (dist.path, dist.column)
    if key not in _EMPIRICAL_CACHE:
        name = dist.path
        cols, width, chunks = _csv(_clean_text(_file_text(name), name))
        if dist.column not in cols:
            shown = ", ".join(_show(c) for c in list(cols)[:20]) + (", ..." if len(cols) > 20 else "")
            raise ScenarioError(f"{name}: no column {dist.column!r}; columns: {shown}")
        col = cols[dist.column]
        parts: list[list[np.ndarray]] = []
        for chunk in chunks:
            fast = _convert(_columns(chunk[1], width), [(col, _tokens_column)])
            if fast is not None:
                parts.append(fast)
                continue
            values: array[int] = array("q")
            for line, cells in _rows(chunk, name, (dist.column,), col + 1):
                values.append(_tokens(cells[col], name, line, dist.column))
            parts.append([np.frombuffer(values, dtype=np.int64)])
        (lengths,) = _joined(parts, 1)
        if len(lengths) == 0:
            raise ScenarioError(f"{name}: no rows")
        _EMPIRICAL_CACHE[key] = lengths.astype(float)
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
#
# Trace files are untrusted: every value is checked, and a bad one raises ScenarioError naming
# its line and column. The text is walked a chunk of lines at a time. A CSV chunk whose rows
# are all well formed is converted column by column with numpy; any other chunk is read row by
# row, which is also what finds and words a problem. Both paths accept the same values and
# give the same numbers; neither builds a Python object per value of the whole file.

LENGTH_RULE = f"an integer from 1 to {bounds.MAX_TOKENS_PER_REQUEST:,}"
"""What a prompt or output length in a trace or a length file must be."""
MAX_TIMESTAMP_MS = 1e18
"""The largest Mooncake timestamp accepted (milliseconds; about 31 million years)."""
_CHUNK_CHARS = 1 << 20
_TIME_CHARS = b"0123456789.eE+-"
_AZURE_TIME = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{1,9}))?")
_AZURE_RULE = "a timestamp like 2023-11-16 18:17:03.9799600"
_EPOCH = datetime(1970, 1, 1)
_SHOWN_CLASSES = 10
_SHOWN_LINES = 5

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxlong = _SHORT.maxother = 40
_SHORT.maxlist = _SHORT.maxdict = 4

Chunk = tuple[int, list[str]]
"""A run of lines and the line number of its first."""


def read_trace(trace: Trace, scenario: Scenario, text: str | None = None) -> Requests:
    """Requests from a trace file (or its text, for uploads), scaled in time and windowed.

    Lengths must be integers from 1 to `bounds.MAX_TOKENS_PER_REQUEST`, times finite and >= 0,
    classes the scenario's. Arrivals are sorted first, so `max_requests` keeps the earliest ones
    from `start_s` on, whatever the order of the file's rows.
    """
    name = trace.path
    text = _clean_text(_file_text(name) if text is None else text, name)
    reader = {"mooncake": _read_mooncake, "azure": _read_azure, "csv": _read_csv}[trace.format]
    arrival, prompt, output, cls, offsets, hashes = reader(text, name, scenario)
    del text
    if len(arrival) == 0:
        raise ScenarioError(f"{name}: no requests")
    arrival = (arrival - arrival.min()) / trace.time_scale
    order = np.argsort(arrival, kind="stable")
    lo, hi = np.searchsorted(arrival[order], (trace.start_s, trace.start_s + scenario.duration_s))
    idx = order[lo:hi][: trace.max_requests]
    if len(idx) > bounds.MAX_REQUESTS:
        raise ScenarioError(f"{name}: {len(idx):,} requests in the window; limit {bounds.MAX_REQUESTS:,}")
    n = len(idx)
    new_off = new_hash = None
    if offsets is not None and hashes is not None:
        starts = offsets[idx]
        lens = offsets[idx + 1] - starts
        new_off = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        # the kept rows' hashes in one gather: hash j of kept row i sits at starts[i] + j
        new_hash = hashes[np.repeat(starts - new_off[:-1], lens) + np.arange(new_off[-1], dtype=np.int64)]
    return Requests(
        arrival_s=arrival[idx] - trace.start_s,
        cls=cls[idx],
        prompt_tokens=prompt[idx],
        output_tokens=output[idx],
        prefix_group=np.full(n, -1, dtype=np.int64),
        prefix_tokens=np.zeros(n, dtype=np.int64),
        session=np.arange(n, dtype=np.int64),
        reused_tokens=np.zeros(n, dtype=np.int64),
        block_tokens=trace.block_tokens if trace.format == "mooncake" else scenario.cache.block_tokens,
        block_offsets=new_off,
        block_hashes=new_hash,
    )


def trace_class_names(text: str, format: str, limit: int = 1000) -> tuple[str, ...]:
    """The distinct class labels a plain-CSV trace names, in order of first use (at most `limit`).

    For a UI that offers to create the classes a trace needs; other formats carry none: ().
    """
    if format != "csv":
        return ()
    cols, _, chunks = _csv(_clean_text(text, "trace"))
    col = cols.get("class")
    if col is None:
        return ()
    seen: dict[str, None] = {}
    for _, lines in chunks:
        for line in lines:
            cells = line.split(",")
            label = _label(cells[col]) if col < len(cells) else ""
            if label and label not in seen:
                seen[label] = None
                if len(seen) >= limit:
                    return tuple(seen)
    return tuple(seen)


TraceArrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]


# --- reading text ---


def _file_text(path: str) -> str:
    """A data file's content as text (UTF-8, a leading byte-order mark dropped; see engine.core.datafiles)."""
    data = datafiles.read_bytes(path)
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return str(memoryview(data)[skip:], "utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, skip + exc.start) + 1
        raise ScenarioError(f"{path}: line {line}: not UTF-8 text") from None


def _clean_text(text: str, name: str) -> str:
    """Trace text without a leading byte-order mark; refused when too long or holding a NUL."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if len(text) > bounds.MAX_TRACE_BYTES:
        raise ScenarioError(f"{name}: larger than {bounds.MAX_TRACE_BYTES:,} bytes")
    nul = text.find("\0")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise ScenarioError(f"{name}: line {line}: holds a NUL character; a trace is plain text")
    return text


def _chunks(text: str) -> Iterator[Chunk]:
    """The lines of `text` ("\\n" or "\\r\\n" ends one), a chunk at a time, never all at once."""
    pos, size, line_no = 0, len(text), 1
    while pos < size:
        cut = text.find("\n", min(pos + _CHUNK_CHARS, size))
        end = size if cut < 0 else cut + 1
        chunk = text[pos:end]
        if "\r" in chunk:
            chunk = chunk.replace("\r\n", "\n")
        lines = chunk.split("\n")
        if not lines[-1]:
            lines.pop()
        yield line_no, lines
        line_no += len(lines)
        pos = end


def _show(value: object) -> str:
    """A short repr of a bad value for a message (long strings and deep JSON cut)."""
    return _SHORT.repr(value)


# --- CSV ---


def _label(cell: str) -> str:
    """A column name or class label: surrounding blanks and one pair of double quotes dropped."""
    s = cell.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1].strip()
    return s


def _csv(text: str) -> tuple[dict[str, int], int, Iterator[Chunk]]:
    """A CSV text's columns (name -> index; the first of repeated names wins), their number,
    and its data lines in chunks.

    Cells are split at every comma: a trace holds numbers and class names, neither of which
    needs quoting, so CSV quoting is not interpreted (a quoted number is refused as such).
    """
    chunks = _chunks(text)
    _, first = next(chunks, (1, [""]))
    header = first[0].split(",")
    cols: dict[str, int] = {}
    for i, cell in enumerate(header):
        cols.setdefault(_label(cell), i)

    def data() -> Iterator[Chunk]:
        if len(first) > 1:
            yield 2, first[1:]
        yield from chunks

    return cols, len(header), data()


def _need(cols: dict[str, int], need: tuple[str, ...], name: str, hint: str = "") -> list[int]:
    """The indices of the `need` columns; ScenarioError naming the missing ones."""
    missing = [c for c in need if c not in cols]
    if missing:
        raise ScenarioError(f"{name}: missing column(s) {', '.join(missing)}{hint}")
    return [cols[c] for c in need]


def _columns(lines: list[str], width: int) -> list[list[str]] | None:
    """The cells of a chunk column by column, when every line has exactly `width` cells."""
    if list(map(str.count, lines, repeat(","))).count(width - 1) != len(lines):
        return None
    flat = ",".join(lines).split(",")
    return [flat[k::width] for k in range(width)]


def _rows(chunk: Chunk, name: str, need: tuple[str, ...], width: int) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of a chunk's rows, one by one; blank lines skipped, short rows refused."""
    start, lines = chunk
    for line_no, line in enumerate(lines, start=start):
        cells = line.split(",")
        if len(cells) < width:
            if not line.strip():
                continue
            raise ScenarioError(
                f"{name}: line {line_no}: {len(cells)} cell(s); the columns {', '.join(need)} need {width}"
            )
        yield line_no, cells


def _ascii(cells: list[str]) -> np.ndarray | None:
    try:
        return np.array(cells, dtype="S")
    except UnicodeEncodeError:
        return None


def _problem(name: str, line: int, column: str, rule: str, cell: str) -> ScenarioError:
    quoted = ", written without quotes" if cell.startswith(('"', "'")) else ""
    return ScenarioError(f"{name}: line {line}, column {column}: must be {rule}{quoted} (got {_show(cell)})")


def _tokens(cell: str, name: str, line: int, column: str) -> int:
    """A length cell: an integer from 1 to MAX_TOKENS_PER_REQUEST, in ASCII digits."""
    s = cell.strip()
    if s.isdigit() and s.isascii() and len(s) <= 18:
        v = int(s)
        if 1 <= v <= bounds.MAX_TOKENS_PER_REQUEST:
            return v
    raise _problem(name, line, column, LENGTH_RULE, s)


def _tokens_column(cells: list[str]) -> np.ndarray | None:
    """`_tokens` over a column at once; None unless every cell is plainly valid."""
    b = _ascii(cells)
    if b is None or b.dtype.itemsize > 18 or not np.strings.isdigit(b).all():
        return None
    v = b.astype(np.int64)
    return v if ((v >= 1) & (v <= bounds.MAX_TOKENS_PER_REQUEST)).all() else None


def _seconds(cell: str, name: str, line: int, column: str) -> float:
    """A time cell in seconds: a finite decimal number >= 0."""
    s = cell.strip()
    try:
        v = float(s)
    except ValueError:
        v = math.nan
    if 0.0 <= v < math.inf and s.isascii() and "_" not in s:
        return v
    raise _problem(name, line, column, "a time in seconds >= 0 (a finite decimal number)", s)


def _seconds_column(cells: list[str]) -> np.ndarray | None:
    """`_seconds` over a column at once; None unless every cell is plainly valid."""
    b = _ascii(cells)
    if b is None or (np.strings.strip(b, _TIME_CHARS) != b"").any():
        return None
    try:
        v = b.astype(np.float64)
    except ValueError:
        return None
    return v if ((v >= 0.0) & (v < np.inf)).all() else None


def _azure_seconds(cell: str, name: str, line: int) -> float:
    """An Azure TIMESTAMP (``2023-11-16 18:17:03.9799600``, UTC) as seconds since 1970."""
    s = cell.strip()
    m = _AZURE_TIME.fullmatch(s)
    try:
        if m is None:
            raise ValueError
        when = datetime.fromisoformat(m[1])
    except ValueError:
        raise _problem(name, line, "TIMESTAMP", _AZURE_RULE, s) from None
    delta = when - _EPOCH
    # whole seconds plus microseconds (the fraction cut to six digits), as datetime.timestamp adds them
    return float(delta.days * 86_400 + delta.seconds) + int(((m[2] or "") + "000000")[:6]) / 1e6


def _azure_column(cells: list[str]) -> np.ndarray | None:
    """`_azure_seconds` over a column whose cells share one length; None unless all are valid."""
    b = _ascii(cells)
    if b is None:
        return None
    size = b.dtype.itemsize
    if not (size == 19 or 21 <= size <= 29) or (np.strings.str_len(b) != size).any():
        return None
    d = b.view(np.uint8).reshape(len(b), size).astype(np.int64) - ord("0")
    digits = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, *range(20, size)]
    seps = {4: "-", 7: "-", 13: ":", 16: ":", **({19: "."} if size > 19 else {})}
    if ((d[:, digits] < 0) | (d[:, digits] > 9)).any():
        return None
    if any((d[:, i] != ord(c) - ord("0")).any() for i, c in seps.items()):
        return None
    if ((d[:, 10] != ord(" ") - ord("0")) & (d[:, 10] != ord("T") - ord("0"))).any():
        return None

    def num(a: int, b: int) -> np.ndarray:
        return d[:, a:b] @ (10 ** np.arange(b - a - 1, -1, -1))

    year, month, day = num(0, 4), num(5, 7), num(8, 10)
    hour, minute, second = num(11, 13), num(14, 16), num(17, 19)
    frac = num(20, min(size, 26)) * 10 ** max(0, 26 - size) if size > 19 else np.zeros(len(b), np.int64)
    if not (
        (year >= 1) & (month >= 1) & (month <= 12) & (hour <= 23) & (minute <= 59) & (second <= 59)
    ).all():
        return None
    first = ((year - 1970) * 12 + month - 1).astype("datetime64[M]")
    days0 = first.astype("datetime64[D]").astype(np.int64)
    month_days = (first + 1).astype("datetime64[D]").astype(np.int64) - days0
    if not ((day >= 1) & (day <= month_days)).all():
        return None
    whole = (days0 + day - 1) * 86_400 + hour * 3_600 + minute * 60 + second
    return np.asarray(whole.astype(np.float64) + frac / 1e6)


Converter = tuple[int, Callable[[list[str]], np.ndarray | None]]
"""A column's index and its whole-column conversion."""


def _convert(split: list[list[str]] | None, converters: list[Converter]) -> list[np.ndarray] | None:
    """A chunk's columns converted at once; None (read it row by row) when one cannot be."""
    if split is None:
        return None
    out = []
    for index, convert in converters:
        col = convert(split[index])
        if col is None:
            return None
        out.append(col)
    return out


def _zeros(cells: list[str]) -> np.ndarray:
    return np.zeros(len(cells), dtype=np.int64)


def _joined(parts: list[list[np.ndarray]], count: int) -> list[np.ndarray]:
    """Per-chunk columns joined into whole columns (each chunk's copy let go as soon as it is joined)."""
    out = []
    for k in range(count):
        out.append(np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, dtype=np.int64))
        for p in parts:
            p[k] = out[-1][:0]
    return out


def _numbers(arrival: array[float], *counts: array[int]) -> list[np.ndarray]:
    """Row-by-row columns as numpy arrays over the same memory."""
    return [np.frombuffer(arrival, dtype=np.float64), *(np.frombuffer(c, dtype=np.int64) for c in counts)]


def _read_azure(text: str, name: str, scenario: Scenario) -> TraceArrays:
    need = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
    cols, width, chunks = _csv(text)
    it, ic, ig = _need(cols, need, name)
    converters: list[Converter] = [(it, _azure_column), (ic, _tokens_column), (ig, _tokens_column)]
    parts: list[list[np.ndarray]] = []
    for chunk in chunks:
        fast = _convert(_columns(chunk[1], width), converters)
        if fast is not None:
            parts.append(fast)
            continue
        arrival: array[float] = array("d")
        prompt: array[int] = array("q")
        output: array[int] = array("q")
        for line, cells in _rows(chunk, name, need, max(it, ic, ig) + 1):
            arrival.append(_azure_seconds(cells[it], name, line))
            prompt.append(_tokens(cells[ic], name, line, "ContextTokens"))
            output.append(_tokens(cells[ig], name, line, "GeneratedTokens"))
        parts.append(_numbers(arrival, prompt, output))
    a, p, o = _joined(parts, 3)
    return np.asarray(a, dtype=np.float64), p, o, np.zeros(len(a), dtype=np.int64), None, None


def _read_csv(text: str, name: str, scenario: Scenario) -> TraceArrays:
    need = ("arrival_s", "input_tokens", "output_tokens")
    cols, width, chunks = _csv(text)
    ia, ii, io_ = _need(cols, need, name, f"; expected {', '.join(need)}[, class]")
    ic = cols.get("class", -1)
    names = [c.name for c in scenario.workload.classes]
    lookup = {"": 0, **{n: i for i, n in enumerate(names)}}

    def classes(cells: list[str]) -> np.ndarray | None:
        try:
            return np.fromiter(map(lookup.__getitem__, cells), dtype=np.int64, count=len(cells))
        except KeyError:  # an unknown label, or one that needs cleaning: row by row
            return None

    converters: list[Converter] = [
        (ia, _seconds_column), (ii, _tokens_column), (io_, _tokens_column), (ic, classes) if ic >= 0 else (ia, _zeros),
    ]  # fmt: skip
    unknown: dict[str, list[int]] = {}
    parts: list[list[np.ndarray]] = []
    for chunk in chunks:
        fast = _convert(_columns(chunk[1], width), converters)
        if fast is not None:
            parts.append(fast)
            continue
        arrival: array[float] = array("d")
        prompt: array[int] = array("q")
        output: array[int] = array("q")
        cls: array[int] = array("q")
        for line, cells in _rows(chunk, name, need, max(ia, ii, io_) + 1):
            arrival.append(_seconds(cells[ia], name, line, "arrival_s"))
            prompt.append(_tokens(cells[ii], name, line, "input_tokens"))
            output.append(_tokens(cells[io_], name, line, "output_tokens"))
            label = _label(cells[ic]) if 0 <= ic < len(cells) else ""
            index = lookup.get(label)
            if index is None:
                _note(unknown, label, line)
            cls.append(index or 0)
        parts.append(_numbers(arrival, prompt, output, cls))
    if unknown:
        raise ScenarioError(_unknown_classes(name, unknown, names))
    a, p, o, c = _joined(parts, 4)
    return np.asarray(a, dtype=np.float64), p, o, c, None, None


def _note(unknown: dict[str, list[int]], label: str, line: int) -> None:
    """Remember where an unknown class label was used: [count, first few lines] per label."""
    if label not in unknown and len(unknown) >= _SHOWN_CLASSES:
        label = ""  # labels beyond the first few, counted together
    seen = unknown.setdefault(label, [0])
    seen[0] += 1
    if len(seen) <= _SHOWN_LINES:
        seen.append(line)


def _unknown_classes(name: str, unknown: dict[str, list[int]], names: list[str]) -> str:
    """The message for class labels a scenario lacks: each label with its lines, then the known ones."""
    parts = []
    for label, (count, *lines) in unknown.items():
        more = f" and {count - len(lines):,} more" if count > len(lines) else ""
        what = _show(label) if label else "other labels"
        parts.append(f"{what} on line{'s' if count > 1 else ''} {', '.join(map(str, lines))}{more}")
    first, (_, line, *_) = next(iter(unknown.items()))
    return (
        f"{name}: line {line}, column class: {_show(first)} is not a class of this scenario; "
        f"unknown classes: {'; '.join(parts)}. The scenario's classes: {', '.join(names)} "
        "(an empty cell means the first)"
    )


# --- Mooncake JSONL ---


def _read_mooncake(text: str, name: str, scenario: Scenario) -> TraceArrays:
    arrival: array[float] = array("d")
    prompt: array[int] = array("q")
    output: array[int] = array("q")
    lens: array[int] = array("q")
    hashes: array[int] = array("q")
    top = bounds.MAX_TOKENS_PER_REQUEST
    for start, lines in _chunks(text):
        for line_no, line in enumerate(lines, start=start):
            if not line or line.isspace():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ScenarioError(
                    f"{name}: line {line_no}: not JSON ({exc.msg}, column {exc.colno})"
                ) from None
            except (ValueError, RecursionError) as exc:
                why = "nested too deeply" if isinstance(exc, RecursionError) else "a number too long"
                raise ScenarioError(f"{name}: line {line_no}: not usable JSON ({why})") from None
            if type(row) is not dict:
                raise ScenarioError(f"{name}: line {line_no}: expected a JSON object")
            try:
                ts, inp, out = row["timestamp"], row["input_length"], row["output_length"]
            except KeyError as exc:
                raise ScenarioError(f"{name}: line {line_no}: missing field {exc.args[0]!r}") from None
            where = f"{name}: line {line_no}, field"
            if not ((type(ts) is int or type(ts) is float) and 0 <= ts <= MAX_TIMESTAMP_MS):
                rule = f"a time in milliseconds from 0 to {MAX_TIMESTAMP_MS:.0e}"
                raise ScenarioError(f"{where} timestamp: must be {rule} (got {_show(ts)})")
            if not (type(inp) is int and 1 <= inp <= top):
                raise ScenarioError(f"{where} input_length: must be {LENGTH_RULE} (got {_show(inp)})")
            if not (type(out) is int and 1 <= out <= top):
                raise ScenarioError(f"{where} output_length: must be {LENGTH_RULE} (got {_show(out)})")
            h = row.get("hash_ids", [])
            try:
                if type(h) is not list or (h and set(map(type, h)) != {int}):
                    raise TypeError
                hashes.extend(h)
            except (TypeError, OverflowError):
                raise ScenarioError(f"{where} hash_ids: must be a list of 64-bit integers") from None
            arrival.append(ts / 1000.0)
            prompt.append(inp)
            output.append(out)
            lens.append(len(h))
    offsets = np.concatenate([[0], np.cumsum(np.frombuffer(lens, dtype=np.int64))]).astype(np.int64)
    return (
        np.frombuffer(arrival, dtype=np.float64),
        np.frombuffer(prompt, dtype=np.int64),
        np.frombuffer(output, dtype=np.int64),
        np.zeros(len(arrival), dtype=np.int64),
        offsets,
        np.frombuffer(hashes, dtype=np.int64),
    )
