"""Plain CSV traces and length files: cells checked one column at a time, or row by row.

A plain-CSV trace has the columns ``arrival_s,input_tokens,output_tokens[,class]`` (seconds,
tokens, and a class label of the scenario; an empty label means the first class). A length file
is any CSV with a column of prompt or output lengths, read by an ``empirical`` length
distribution (`length_column`). Cells are split at every comma and CSV quoting is not
interpreted: a trace holds numbers and class names, neither of which needs quoting.

A chunk whose rows all have the header's number of cells is converted column by column with
numpy (`_convert`, each column by its `Converter`); a conversion gives up (None) on any cell it
is unsure of, and the chunk is then read row by row (`_rows`), which is also what finds and words
a problem: a ScenarioError naming its line and column. Both paths accept the same values and give
the same numbers (tests/serving/test_trace_input.py holds them to it). The Azure reader (`azure`) shares
these cells and columns.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Callable, Iterator, Mapping
from itertools import repeat

import numpy as np

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.scenario.model import LengthDist, Scenario
from engine.serving.traces.text import (
    LENGTH_RULE,
    Chunk,
    TraceArrays,
    _chunks,
    _clean_text,
    _file_text,
    _show,
)

_TIME_CHARS = b"0123456789.eE+-"
_SHOWN_CLASSES = 10
_SHOWN_LINES = 5


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


HEADER_NAME = re.compile(r"[\w .()/%+-]{1,64}")
"""A column name as a CSV header writes one; a first line of other text is not quoted back."""


def _columns_said(cols: Mapping[str, int]) -> str:
    """'columns: a, b' where the first line reads as a header: two columns or more, each named as a header
    names one (pandas' unnamed index column, '', aside); where it does not, its count of fields alone:
    /etc/passwd named as a length file printed its first line as the columns (a hostile review), a one-line
    token file too (a code review), and no message quotes a file's content (docs/bounds.md)."""
    named = [c for c in cols if c]
    if len(cols) < 2 or not all(HEADER_NAME.fullmatch(c) for c in named):
        n = len(cols)
        return f"its first line ({n} field{'s' if n != 1 else ''}) is not a header of column names"
    return "columns: " + ", ".join(_show(c) for c in list(cols)[:20]) + (", ..." if len(cols) > 20 else "")


def length_column(dist: LengthDist) -> np.ndarray:
    """The lengths in a column of a CSV file, each an integer from 1 to MAX_TOKENS_PER_REQUEST.

    For an ``empirical`` length distribution; read once per (file, column) and kept.
    """
    assert dist.path is not None and dist.column is not None
    key = (dist.path, dist.column)
    if key not in _EMPIRICAL_CACHE:
        name = dist.path
        cols, width, chunks = _csv(_clean_text(_file_text(name), name), name)
        if dist.column not in cols:
            raise ScenarioError(f"{name}: no column {dist.column!r}; {_columns_said(cols)}")
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


def _label(cell: str) -> str:
    """A column name or class label: surrounding blanks and one pair of double quotes dropped."""
    s = cell.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1].strip()
    return s


def _csv(text: str, name: str = "trace") -> tuple[dict[str, int], int, Iterator[Chunk]]:
    """A CSV text's columns (name -> index), their number, and its data lines in chunks; a column
    named twice is refused (the first copy was read where the calibration's reader took the last: a
    review).

    Cells are split at every comma: a trace holds numbers and class names, neither of which
    needs quoting, so CSV quoting is not interpreted (a quoted number is refused as such).
    """
    chunks = _chunks(text)
    _, first = next(chunks, (1, [""]))
    header = first[0].split(",")
    cols: dict[str, int] = {}
    for i, cell in enumerate(header):
        label = _label(cell)
        if label and label in cols:
            raise ScenarioError(
                f"{name}: the column {label!r} is named twice in the header; name each column once"
            )
        cols[label] = i

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


def _read_csv(text: str, name: str, scenario: Scenario) -> TraceArrays:
    need = ("arrival_s", "input_tokens", "output_tokens")
    cols, width, chunks = _csv(text, name)
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
        (ia, _seconds_column),
        (ii, _tokens_column),
        (io_, _tokens_column),
        (ic, classes) if ic >= 0 else (ia, _zeros),
    ]
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
