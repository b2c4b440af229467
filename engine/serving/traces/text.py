"""Trace text: untrusted text in, lines a chunk at a time, and the arrays every reader returns.

Trace files and length files come from users, so their text is untrusted: a file's bytes must be
UTF-8 (a leading byte-order mark is dropped), no larger than `bounds.MAX_TRACE_BYTES` and free of
NUL characters, or ScenarioError names the line at fault. The text is then walked a chunk of
lines (about a million characters) at a time, never split into all its lines at once, so no
reader holds a Python object per line of the whole file. A bad value is shown cut short
(`_show`) in the message that names its place.

Each format's reader (`csv`, `azure`, `mooncake`, `agentic`) turns the text into `TraceArrays`,
one row per request before the scenario's window is applied (`engine.serving.traces.read`).
"""

from __future__ import annotations

import codecs
import reprlib
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np

from engine.core import bounds, datafiles
from engine.core.errors import ScenarioError

LENGTH_RULE = f"an integer from 1 to {bounds.MAX_TOKENS_PER_REQUEST:,}"
"""What a prompt or output length in a trace or a length file must be."""
_CHUNK_CHARS = 1 << 20

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


def _file_text(path: str) -> str:
    """A data file's content as text (UTF-8, a leading byte-order mark dropped; see engine.core.datafiles)."""
    try:
        data = datafiles.read_bytes(path)
    except ScenarioError as exc:  # said with the field it is in (a review: "t.csv: no such file", bare)
        local = not datafiles.is_reference(path) and not Path(path).is_absolute()
        where = (
            f" (a relative path is read from {Path.cwd()})"
            if local and str(exc).endswith("no such file")
            else ""
        )
        raise ScenarioError(f"workload.trace.path: {exc}{where}") from None
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
