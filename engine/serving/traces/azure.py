"""Azure LLM inference traces: the CSV of ``TIMESTAMP``, ``ContextTokens``, ``GeneratedTokens``.

Azure's public traces (2023) time each request with a UTC wall-clock timestamp such as
``2023-11-16 18:17:03.9799600`` (up to nine digits of fraction); it is read as seconds since
1970, the fraction cut to microseconds as `datetime.timestamp` would. A chunk whose timestamps
share one length is converted at once from the digits' byte codes (`_azure_column`); any other
is read row by row with `datetime` (`_azure_seconds`), which words a bad cell. The two agree to
the bit (a property test). Lengths are checked as in plain CSV (`engine.serving.traces.csv`).
"""

from __future__ import annotations

import re
from array import array
from datetime import datetime

import numpy as np

from engine.scenario.model import Scenario
from engine.serving.traces.csv import (
    Converter,
    _ascii,
    _columns,
    _convert,
    _csv,
    _joined,
    _need,
    _numbers,
    _problem,
    _rows,
    _tokens,
    _tokens_column,
)
from engine.serving.traces.text import TraceArrays

_AZURE_TIME = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{1,9}))?")
_AZURE_RULE = "a timestamp like 2023-11-16 18:17:03.9799600"
_EPOCH = datetime(1970, 1, 1)


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


def _read_azure(text: str, name: str, scenario: Scenario) -> TraceArrays:
    need = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
    cols, width, chunks = _csv(text, name)
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
