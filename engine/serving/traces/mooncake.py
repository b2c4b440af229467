"""Mooncake traces: JSON Lines, one request a line, with the prompt's block hashes.

Each line is a JSON object with ``timestamp`` (milliseconds), ``input_length`` and
``output_length`` (tokens) and ``hash_ids``: one id per prompt block of `Trace.block_tokens`
tokens. Mooncake's ids are prefix hashes (an id names its block *and everything before it*), so
they become the prefix cache's block names (`engine.serving.cache`) as they are. A bad line
raises ScenarioError naming its line and field.
"""

from __future__ import annotations

import json
import math
from array import array

import numpy as np

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.serving.traces.text import LENGTH_RULE, TraceArrays, _chunks, _show

MAX_TIMESTAMP_MS = 1e18
"""The largest Mooncake timestamp accepted (milliseconds; about 31 million years)."""

TRACE_KEYS = ('"timestamp"', '"input_length"', '"output_length"', '"hash_ids"')
"""The fields a Mooncake line is read by, quoted as its text names them."""


def _twice(line: str) -> str | None:
    """The first field of `TRACE_KEYS` a line's top-level object gives twice, else None."""
    top: list[list[str]] = []

    def keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
        top.append([k for k, _ in pairs])  # objects close inner first: the line's own is the last
        return dict(pairs)

    json.loads(line, object_pairs_hook=keys)
    own = top[-1] if top else []
    return next((k[1:-1] for k in TRACE_KEYS if own.count(k[1:-1]) > 1), None)


def _not_json(name: str, line_no: int, line: str, exc: json.JSONDecodeError) -> str:
    """Why a line is not a Mooncake request, in words: the parser's own ('Unterminated string starting at,
    column 41') read as cut off, and a CSV given as a Mooncake trace was not told so (a review)."""
    why = exc.msg.removesuffix(" at").lower()
    said = f"{name}: line {line_no}: not JSON at column {exc.colno} ({why})"
    if "," in line and not line.lstrip().startswith(("{", "[")):
        said += "; it reads as CSV: set workload.trace.format to azure (Azure's columns) or csv"
    return said


def _blocks_said(where: str, ids: list[int], tokens: int, block: int) -> str:
    """Why a line's hash_ids do not fit its prompt at the trace's block size: the ids name the prompt's
    blocks, one each, so their count is the prompt's blocks, whole or part. A block size of 16 on
    Mooncake's 512-token blocks read each id as 16 tokens: a 0.9% hit rate for 28.8%, unsaid (a review)."""
    lo, hi = tokens // block, -(-tokens // block)
    want = f"{lo:,}" if lo == hi else f"{lo:,} or {hi:,}"
    return (
        f"{where} hash_ids: {len(ids):,} ids for an input_length of {tokens:,} tokens, where "
        f"workload.trace.block_tokens ({block:,}) makes {want} blocks, one id each: set block_tokens to the "
        "trace's block size (Mooncake's traces use 512)"
    )


def _read_mooncake(text: str, name: str, block: int) -> TraceArrays:
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
                raise ScenarioError(_not_json(name, line_no, line, exc)) from None
            except (ValueError, RecursionError) as exc:
                why = "nested too deeply" if isinstance(exc, RecursionError) else "a number too long"
                raise ScenarioError(f"{name}: line {line_no}: not usable JSON ({why})") from None
            if type(row) is not dict:
                raise ScenarioError(f"{name}: line {line_no}: expected a JSON object")
            # a field given twice kept its last copy (an input of 500 then 90,000 ran at 90,000: a review);
            # the fields read are named once: the text's count first (a hook on every object costs the
            # parse), then the line's own keys where it counts one twice (a nested object's key is not its)
            # or spells any with an escape ('"input_l\u0065ngth"' is 'input_length' twice: a review)
            if ("\\u" in line or any(line.count(k) > 1 for k in TRACE_KEYS)) and (twice := _twice(line)):
                raise ScenarioError(
                    f"{name}: line {line_no}: the field {twice!r} is given twice; give it once"
                )
            try:
                ts, inp, out = row["timestamp"], row["input_length"], row["output_length"]
            except KeyError as exc:
                raise ScenarioError(f"{name}: line {line_no}: missing field {exc.args[0]!r}") from None
            where = f"{name}: line {line_no}, field"
            if not ((type(ts) is int or type(ts) is float) and 0 <= ts <= MAX_TIMESTAMP_MS):
                rule = f"a time in milliseconds from 0 to 10^{math.log10(MAX_TIMESTAMP_MS):.0f}"
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
            if h and not inp // block <= len(h) <= -(-inp // block):  # one id a block: a wrong block size
                raise ScenarioError(_blocks_said(where, h, inp, block))
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
