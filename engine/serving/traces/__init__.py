"""Trace files and length files: untrusted text in, checked arrays of requests out.

A scenario may replay a trace instead of generating requests (`[workload.trace]`), and a length
distribution may draw from a column of a CSV file. Four trace formats are read, one module each:

- ``mooncake`` (`mooncake`): JSON Lines, one request a line (``timestamp`` in ms,
  ``input_length``, ``output_length``, ``hash_ids``: one id per prompt block of
  `Trace.block_tokens` tokens);
- ``azure`` (`azure`): the Azure LLM inference CSV (``TIMESTAMP``, ``ContextTokens``,
  ``GeneratedTokens``);
- ``csv`` (`csv`): ``arrival_s,input_tokens,output_tokens[,class]``; this module also reads
  length files (`length_column`) and a trace's class labels (`trace_class_names`);
- ``agentic`` (`agentic`): agentic-coding sessions in kv-cache-tester's format, one JSON document
  a session, with sub-agents; block ids are turned into prefix names (`prefix_ids`).

`text` holds what they share: the untrusted text checked and walked a chunk of lines at a time,
the words of a problem, and `TraceArrays`, what each reader finds row by row. `read` picks the
reader, then scales the arrivals in time and keeps the scenario's window as `TraceRequests`.
Every value is checked; a bad one raises ScenarioError naming its line and column (CSV), line
and field (Mooncake) or session, request and field (agentic). Underscored names are shared
between these modules only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.scenario.model import Scenario, Trace
from engine.serving.traces.agentic import AGENTIC_SCOPES, MAX_NESTING, MAX_OFFSET_S, _read_agentic, prefix_ids
from engine.serving.traces.azure import _read_azure
from engine.serving.traces.csv import _read_csv, length_column, trace_class_names
from engine.serving.traces.mooncake import MAX_TIMESTAMP_MS, _read_mooncake
from engine.serving.traces.text import LENGTH_RULE, TraceArrays, _clean_text, _file_text

__all__ = [
    "AGENTIC_SCOPES",
    "LENGTH_RULE",
    "MAX_NESTING",
    "MAX_OFFSET_S",
    "MAX_TIMESTAMP_MS",
    "TooManyRequests",
    "TraceArrays",
    "TraceRequests",
    "length_column",
    "prefix_ids",
    "read",
    "trace_class_names",
]


class TooManyRequests(ScenarioError):
    """A trace whose window holds more requests than a replay may (`bounds.MAX_REQUESTS`), with no
    `max_requests` set: `count` is how many the window holds, `limit` how many a replay may (the dashboard
    offers the earliest that fit, where it offered nothing: a browser review)."""

    def __init__(self, message: str, count: int, limit: int) -> None:
        super().__init__(message)
        self.count, self.limit = count, limit


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
    rows: int = 0
    """Requests in the file, in the window or not."""
    before: int = 0
    """Of them, those before the window (`start_s`)."""
    after: int = 0
    """Those at or past the window's end (`start_s + duration_s`): a file in milliseconds read as
    seconds leaves most of its rows here."""
    cut: int = 0
    """Those in the window past `max_requests` (the earliest are kept)."""
    last_s: float = 0.0
    """The file's last arrival, s from its first (time-scaled)."""

    def __len__(self) -> int:
        return int(self.arrival_s.shape[0])

    def window(self) -> TraceWindow:
        """How the file met the window, without the arrays (`TraceWindow`)."""
        last = float(self.arrival_s.max()) if len(self) else -1.0
        return TraceWindow(len(self), self.rows, self.before, self.after, self.cut, self.last_s, last)


@dataclass(frozen=True)
class TraceWindow:
    """How a trace's file met a run's window, its counts without its arrays: what a result keeps for
    `engine.notes` (which read the file again, and raised where it had moved: a review)."""

    kept: int
    rows: int
    before: int
    after: int
    cut: int
    last_s: float
    """The file's last arrival, s from its first (time-scaled)."""
    last_arrival_s: float
    """The window's last arrival, s from its start (-1: none)."""

    def __len__(self) -> int:
        return self.kept


def _empty_window(trace: Trace, duration_s: float, name: str, arrivals: np.ndarray, nxt: int) -> str:
    """Why a trace's window holds none of its requests: past the file's end, or in a gap between its
    arrivals (an agentic trace pauses for hours), with the start that reaches the next one."""
    where = (
        f"workload.trace.start_s: the window from {trace.start_s:,.0f} s to "
        f"{trace.start_s + duration_s:,.0f} s holds none of {name}'s {len(arrivals):,} requests"
    )
    if nxt >= len(arrivals):
        return f"{where}, which arrive from 0 to {float(arrivals[-1]):,.0f} s (time-scaled): set start_s below that"
    return (
        f"{where}: it falls in a gap between its arrivals, the next at {float(arrivals[nxt]):,.0f} s "
        "(time-scaled): set start_s at or below that, or a longer duration_s"
    )


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
    elif trace.format == "mooncake":  # its ids name blocks of the trace's own block size (a review)
        rows = _read_mooncake(text, name, trace.block_tokens)
    else:
        reader = {"azure": _read_azure, "csv": _read_csv}[trace.format]
        rows = reader(text, name, scenario)
    del text
    arrival, prompt, output, cls, offsets, hashes = rows[:6]
    if len(arrival) == 0:
        raise ScenarioError(f"{name}: no requests")
    arrival = (arrival - arrival.min()) / trace.time_scale
    order = np.argsort(arrival, kind="stable")
    lo, hi = np.searchsorted(arrival[order], (trace.start_s, trace.start_s + scenario.duration_s))
    if hi <= lo:  # an empty run was billed, exit 0 (a review)
        raise ScenarioError(_empty_window(trace, scenario.duration_s, name, arrival[order], int(lo)))
    if trace.max_requests is None and hi - lo > bounds.MAX_REQUESTS:  # (it sliced first: never said)
        raise TooManyRequests(
            f"{name}: {hi - lo:,} requests in the window; {bounds.requests_limit_text()}: set "
            f"workload.trace.max_requests (1 to {bounds.MAX_REQUESTS:,}) to replay the earliest, or shorten "
            "the window (duration_s)",
            int(hi - lo),
            bounds.MAX_REQUESTS,
        )
    idx = order[lo:hi][: trace.max_requests or bounds.MAX_REQUESTS]
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
        rows=len(arrival),
        before=int(lo),
        after=int(len(arrival) - hi),
        cut=int(hi - lo - n),
        last_s=float(arrival.max()),
    )
