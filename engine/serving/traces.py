"""Trace files and length files: untrusted text in, checked arrays of requests out.

A scenario may replay a trace instead of generating requests (`[workload.trace]`), and a length
distribution may draw from a column of a CSV file. Four trace formats are read:

- ``mooncake``: JSON Lines, one request a line (``timestamp`` in ms, ``input_length``,
  ``output_length``, ``hash_ids``: one id per prompt block of `Trace.block_tokens` tokens);
- ``azure``: the Azure LLM inference CSV (``TIMESTAMP``, ``ContextTokens``, ``GeneratedTokens``);
- ``csv``: ``arrival_s,input_tokens,output_tokens[,class]``;
- ``agentic``: agentic-coding sessions in kv-cache-tester's format, one JSON document a session
  (a file may hold one, or several as JSON Lines). Each request has ``t`` (seconds from its
  session's start), ``in`` and ``out`` tokens and ``hash_ids`` (one id per ``block_size``-token
  prompt block); a request may instead hold a nested ``requests`` list, a sub-agent whose
  times count from the entry's ``t``. Sessions carry no wall-clock time, so all start at t = 0.
  Block ids name blocks within a session (``hash_id_scope`` "local", the default; sub-agents
  share their parent's) or across the file ("global"). `Trace.max_gap_s` cuts a session's long
  idle gaps (a user away for hours) to a bound.

Block ids become the prefix cache's block names (`engine.serving.cache`), which name a block
*and everything before it*. Mooncake's ids are prefix hashes and are used as they are. An agentic
trace's ids are only renumbered when they already behave so (each id always follows the same id
at the same position, as in the shipped sample); otherwise a block's name is made from its id and
its predecessor's name (`prefix_ids`), so two prompts share a block only where they share the
whole prefix.

Trace files are untrusted: every value is checked, and a bad one raises ScenarioError naming its
line and column (CSV), line and field (Mooncake) or session, request and field (agentic). The text
is walked a chunk of lines at a time. A CSV chunk whose rows are all well formed is converted
column by column with numpy; any other chunk is read row by row, which is also what finds and
words a problem. Both paths accept the same values and give the same numbers; neither builds a
Python object per value of the whole file (an agentic session is one JSON document, read whole,
one session at a time).
"""

from __future__ import annotations

import codecs
import json
import math
import re
import reprlib
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from itertools import repeat
from typing import NamedTuple

import numpy as np

from engine.core import bounds, datafiles
from engine.core.errors import ScenarioError
from engine.scenario.model import LengthDist, Scenario, Trace

LENGTH_RULE = f"an integer from 1 to {bounds.MAX_TOKENS_PER_REQUEST:,}"
"""What a prompt or output length in a trace or a length file must be."""
MAX_TIMESTAMP_MS = 1e18
"""The largest Mooncake timestamp accepted (milliseconds; about 31 million years)."""
MAX_OFFSET_S = MAX_TIMESTAMP_MS / 1000.0
"""The largest agentic time offset accepted (seconds; the same bound as Mooncake's timestamps)."""
MAX_NESTING = 8
"""Sub-agents nested deeper than this in an agentic session are refused (real traces nest one)."""
AGENTIC_SCOPES = ("local", "global")
"""The agentic ``hash_id_scope`` values: ids scoped to one session, or shared by the whole file."""
_CHUNK_CHARS = 1 << 20
_TIME_CHARS = b"0123456789.eE+-"
_AZURE_TIME = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{1,9}))?")
_AZURE_RULE = "a timestamp like 2023-11-16 18:17:03.9799600"
_EPOCH = datetime(1970, 1, 1)
_SHOWN_CLASSES = 10
_SHOWN_LINES = 5
_BLANKS = re.compile(r"[ \t\r\n]*")

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxlong = _SHORT.maxother = 40
_SHORT.maxlist = _SHORT.maxdict = 4

Chunk = tuple[int, list[str]]
"""A run of lines and the line number of its first."""


class TraceArrays(NamedTuple):
    """What a format's reader finds in a file, row by row (before windowing)."""

    arrival: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    cls: np.ndarray
    offsets: np.ndarray | None = None
    hashes: np.ndarray | None = None
    session: np.ndarray | None = None
    block_tokens: int | None = None


@dataclass(frozen=True)
class TraceRequests:
    """A trace's requests in a scenario's window, as parallel arrays (index = request id)."""

    arrival_s: np.ndarray
    cls: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    session: np.ndarray
    block_tokens: int
    block_offsets: np.ndarray | None = None
    block_hashes: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.arrival_s.shape[0])


def read(trace: Trace, scenario: Scenario, text: str | None = None) -> TraceRequests:
    """A trace file's requests (or its text's, for uploads), scaled in time and windowed.

    Lengths must be integers from 1 to `bounds.MAX_TOKENS_PER_REQUEST`, times finite and >= 0,
    classes the scenario's. Arrivals are sorted first, so `max_requests` keeps the earliest ones
    from `start_s` on, whatever the order of the file's rows.
    """
    name = trace.path
    text = _clean_text(_file_text(name) if text is None else text, name)
    if trace.format == "agentic":
        rows = _read_agentic(text, name, trace.max_gap_s)
    else:
        reader = {"mooncake": _read_mooncake, "azure": _read_azure, "csv": _read_csv}[trace.format]
        rows = reader(text, name, scenario)
    del text
    arrival, prompt, output, cls, offsets, hashes = rows[:6]
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
    if rows.block_tokens is not None:
        block_tokens = rows.block_tokens
    else:
        block_tokens = trace.block_tokens if trace.format == "mooncake" else scenario.cache.block_tokens
    return TraceRequests(
        arrival_s=arrival[idx] - trace.start_s,
        cls=cls[idx],
        prompt_tokens=prompt[idx],
        output_tokens=output[idx],
        session=rows.session[idx] if rows.session is not None else np.arange(n, dtype=np.int64),
        block_tokens=block_tokens,
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


_EMPIRICAL_CACHE: dict[tuple[str, str], np.ndarray] = {}


def length_column(dist: LengthDist) -> np.ndarray:
    """The lengths in a column of a CSV file, each an integer from 1 to MAX_TOKENS_PER_REQUEST.

    For an ``empirical`` length distribution; read once per (file, column) and kept.
    """
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
    return TraceArrays(np.asarray(a, dtype=np.float64), p, o, np.zeros(len(a), dtype=np.int64))


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
    return TraceArrays(np.asarray(a, dtype=np.float64), p, o, c)


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
    return TraceArrays(
        np.frombuffer(arrival, dtype=np.float64),
        np.frombuffer(prompt, dtype=np.int64),
        np.frombuffer(output, dtype=np.int64),
        np.zeros(len(arrival), dtype=np.int64),
        offsets,
        np.frombuffer(hashes, dtype=np.int64),
    )


# --- agentic sessions (kv-cache-tester JSON) ---


def _documents(text: str, name: str) -> Iterator[tuple[int, object]]:
    """The JSON documents of a text one after another (one, or JSON Lines), with their first line."""
    decode = json.JSONDecoder().raw_decode
    pos, line, counted = 0, 1, 0
    while True:
        match = _BLANKS.match(text, pos)
        pos = match.end() if match else pos
        if pos >= len(text):
            return
        line += text.count("\n", counted, pos)
        counted = pos
        try:
            doc, pos = decode(text, pos)
        except json.JSONDecodeError as exc:
            raise ScenarioError(
                f"{name}: line {exc.lineno}: not JSON ({exc.msg}, column {exc.colno})"
            ) from None
        except (ValueError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else "a number too long"
            raise ScenarioError(f"{name}: line {line}: not usable JSON ({why})") from None
        yield line, doc


def _is_number(v: object) -> bool:
    return type(v) is int or type(v) is float


def _offsets(entries: list[object], where: str, path: str, max_gap_s: float | None) -> list[float]:
    """Each entry's time from the start of its level (the session's or its sub-agent's).

    With `max_gap_s`, every gap between consecutive times (in time order, from the level's
    start) longer than it is cut to it.
    """
    times = []
    for i, entry in enumerate(entries):
        if type(entry) is not dict:
            raise ScenarioError(f"{where}, {path}[{i}]: expected a JSON object (a request or a sub-agent)")
        if "t" not in entry:
            raise ScenarioError(f"{where}, {path}[{i}]: missing field 't'")
        t = entry["t"]
        if not (_is_number(t) and 0 <= t <= MAX_OFFSET_S):
            rule = f"a time in seconds from 0 to {MAX_OFFSET_S:.0e}"
            raise ScenarioError(f"{where}, {path}[{i}], field t: must be {rule} (got {_show(t)})")
        times.append(float(t))
    if max_gap_s is None or not times:
        return times
    order = sorted(range(len(times)), key=times.__getitem__)
    out, prev, now = [0.0] * len(times), 0.0, 0.0
    for i in order:
        now += min(times[i] - prev, max_gap_s)
        prev = times[i]
        out[i] = now
    return out


class _Sessions:
    """The requests of the agentic sessions read so far, as growing arrays."""

    def __init__(self, max_gap_s: float | None) -> None:
        self.max_gap_s = max_gap_s
        self.arrival: array[float] = array("d")
        self.prompt: array[int] = array("q")
        self.output: array[int] = array("q")
        self.lens: array[int] = array("q")
        self.hashes: array[int] = array("q")
        self.session: array[int] = array("q")
        self.namespaces: array[int] = array("q")  # whose block ids each request's are
        # the session being read: where it is (for messages), its index, its ids' namespace, block size
        self.where, self.index, self.namespace, self.block = "", 0, 0, 1

    def add(self, entries: object, path: str, start_s: float, depth: int = 0) -> None:
        """Append one level of the session (its requests and, recursively, its sub-agents')."""
        where = self.where
        if type(entries) is not list:
            raise ScenarioError(f"{where}, {path}: must be a list of requests (got {_show(entries)})")
        if depth > MAX_NESTING:
            raise ScenarioError(f"{where}, {path}: sub-agents nested deeper than {MAX_NESTING} levels")
        top = bounds.MAX_TOKENS_PER_REQUEST
        for i, offset_s in enumerate(_offsets(entries, where, path, self.max_gap_s)):
            entry: dict[str, object] = entries[i]  # checked by _offsets
            here = f"{path}[{i}]"
            if "requests" in entry:  # a sub-agent: its own requests, timed from this entry
                self.add(entry["requests"], f"{here}.requests", start_s + offset_s, depth + 1)
                continue
            try:
                inp, out, h = entry["in"], entry["out"], entry["hash_ids"]
            except KeyError as exc:
                raise ScenarioError(f"{where}, {here}: missing field {exc.args[0]!r}") from None
            field = f"{where}, {here}, field"
            if not (type(inp) is int and 1 <= inp <= top):
                raise ScenarioError(f"{field} in: must be {LENGTH_RULE} (got {_show(inp)})")
            if not (type(out) is int and 1 <= out <= top):
                raise ScenarioError(f"{field} out: must be {LENGTH_RULE} (got {_show(out)})")
            most = -(-inp // self.block)
            try:
                if type(h) is not list or (h and set(map(type, h)) != {int}):
                    raise TypeError
                if len(h) > most:
                    raise ScenarioError(
                        f"{field} hash_ids: {len(h):,} block ids for {inp:,} prompt tokens; at most "
                        f"{most:,} (one per block of {self.block} tokens)"
                    )
                self.hashes.extend(h)
            except (TypeError, OverflowError):
                raise ScenarioError(f"{field} hash_ids: must be a list of 64-bit integers") from None
            self.arrival.append(start_s + offset_s)
            self.prompt.append(inp)
            self.output.append(out)
            self.lens.append(len(h))
            self.session.append(self.index)
            self.namespaces.append(self.namespace)


def _read_agentic(text: str, name: str, max_gap_s: float | None) -> TraceArrays:
    rows = _Sessions(max_gap_s)
    block: int | None = None
    for index, (line, doc) in enumerate(_documents(text, name)):
        where = f"{name}: session {index + 1} (line {line})"
        if type(doc) is not dict:
            raise ScenarioError(f"{where}: expected a JSON object (one session)")
        if "block_size" not in doc:
            raise ScenarioError(f"{where}: missing field 'block_size' (not an agentic session document?)")
        size = doc["block_size"]
        if not (type(size) is int and 1 <= size <= 65536):
            rule = "an integer from 1 to 65,536 (tokens a block id covers)"
            raise ScenarioError(f"{where}, field block_size: must be {rule} (got {_show(size)})")
        if block is not None and size != block:
            raise ScenarioError(
                f"{where}, field block_size: {size} differs from the first session's {block}; "
                "a trace has one block size"
            )
        scope = doc.get("hash_id_scope", "local")
        if scope not in AGENTIC_SCOPES:
            rule = f"one of {', '.join(AGENTIC_SCOPES)}"
            raise ScenarioError(f"{where}, field hash_id_scope: must be {rule} (got {_show(scope)})")
        if "requests" not in doc:
            raise ScenarioError(f"{where}: missing field 'requests'")
        block = size
        rows.where, rows.index, rows.block = where, index, size
        rows.namespace = index if scope == "local" else -1  # "global": one for the whole file
        rows.add(doc["requests"], "requests", 0.0)
    offsets = np.concatenate([[0], np.cumsum(np.frombuffer(rows.lens, dtype=np.int64))]).astype(np.int64)
    return TraceArrays(
        np.frombuffer(rows.arrival, dtype=np.float64),
        np.frombuffer(rows.prompt, dtype=np.int64),
        np.frombuffer(rows.output, dtype=np.int64),
        np.zeros(len(rows.arrival), dtype=np.int64),
        offsets,
        prefix_ids(
            np.frombuffer(rows.hashes, dtype=np.int64),
            offsets,
            np.frombuffer(rows.namespaces, dtype=np.int64),
        ),
        np.frombuffer(rows.session, dtype=np.int64),
        block,
    )


def prefix_ids(hashes: np.ndarray, offsets: np.ndarray, space: np.ndarray) -> np.ndarray:
    """Block names that stand for a block and everything before it, from per-request block ids.

    `hashes[offsets[r]:offsets[r + 1]]` are request r's block ids in the namespace `space[r]`.
    When every (namespace, id) always sits at the same position after the same id, the ids name
    prefixes already and each becomes a dense number; otherwise block k of a request is named by
    (its id, the name of block k - 1), so equal ids after different prefixes differ.
    """
    n = len(hashes)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    lens = np.diff(offsets)
    ns = np.repeat(space, lens)
    pos = np.arange(n, dtype=np.int64) - np.repeat(offsets[:-1], lens)
    order = np.lexsort((hashes, ns))
    h_sorted, ns_sorted = hashes[order], ns[order]
    first = np.ones(n, dtype=bool)
    first[1:] = (h_sorted[1:] != h_sorted[:-1]) | (ns_sorted[1:] != ns_sorted[:-1])
    dense = np.empty(n, dtype=np.int64)
    dense[order] = np.cumsum(first) - 1
    prev = np.where(pos > 0, np.roll(dense, 1), -1)
    starts = np.flatnonzero(first)

    def same(values: np.ndarray) -> bool:
        v = values[order]
        return bool((np.minimum.reduceat(v, starts) == np.maximum.reduceat(v, starts)).all())

    if same(pos) and same(prev):
        return dense
    names: dict[tuple[int, int, int], int] = {}
    out: list[int] = []
    h, off, sp = hashes.tolist(), offsets.tolist(), space.tolist()
    for r, s in enumerate(sp):
        parent = -1
        for k in range(off[r], off[r + 1]):
            parent = names.setdefault((s, parent, h[k]), len(names))
            out.append(parent)
    return np.array(out, dtype=np.int64)
