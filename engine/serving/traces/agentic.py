"""Agentic-coding session traces in kv-cache-tester's format: sessions of requests and sub-agents.

One JSON document a session (a file may hold one, or several as JSON Lines), with its
``block_size``, its ``hash_id_scope`` and its ``requests``. Each request has ``t`` (seconds from
its session's start), ``in`` and ``out`` tokens and ``hash_ids`` (one id per ``block_size``-token
prompt block); a request may instead hold a nested ``requests`` list, a sub-agent whose times
count from the entry's ``t``. Sessions carry no wall-clock time, so all start at t = 0. Block ids
name blocks within a session (``hash_id_scope`` "local", the default; sub-agents share their
parent's) or across the file ("global"). `Trace.max_gap_s` cuts a session's long idle gaps (a
user away for hours) to a bound.

Block ids become the prefix cache's block names (`engine.serving.cache`), which name a block
*and everything before it*. An agentic trace's ids are only renumbered when they already behave
so (each id always follows the same id at the same position, as in the shipped sample); otherwise
a block's name is made from its id and its predecessor's name (`prefix_ids`), so two prompts
share a block only where they share the whole prefix.

A session is one JSON document, read whole, one session at a time; a bad value raises
ScenarioError naming its session, request and field.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections.abc import Iterator

import numpy as np

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.serving.traces.mooncake import MAX_TIMESTAMP_MS
from engine.serving.traces.text import LENGTH_RULE, TraceArrays, _show

MAX_OFFSET_S = MAX_TIMESTAMP_MS / 1000.0
"""The largest agentic time offset accepted (seconds; the same bound as Mooncake's timestamps)."""
MAX_NESTING = 8
"""Sub-agents nested deeper than this in an agentic session are refused (real traces nest one)."""
AGENTIC_SCOPES = ("local", "global")
"""The agentic ``hash_id_scope`` values: ids scoped to one session, or shared by the whole file."""
_BLANKS = re.compile(r"[ \t\r\n]*")


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
            rule = f"a time in seconds from 0 to 10^{math.log10(MAX_OFFSET_S):.0f}"
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
