"""Parsing untrusted JSON and TOML text with size and nesting limits.

Python's parsers recurse once per level of nesting: a 66-character link of nested brackets
raises RecursionError, and data nested a few hundred levels deep makes every later recursive
step (copying, comparing, validating) fragile. These wrappers refuse text over a size limit and
data nested deeper than `MAX_NESTING`, and turn every parser failure into a ScenarioError that
says what was being read. A scenario is at most six levels deep; custom catalog entries and
Hugging Face configs a few more.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engine.core.errors import ScenarioError

MAX_NESTING = 32
"""Deepest nesting of tables and lists accepted in untrusted JSON or TOML."""


def read_capped(path: str | Path, limit: int, what: str) -> bytes:
    """At most `limit` bytes of the file at `path`, refused by name past them (`what`: the flag or field
    that named it). The bound is on what is read, not on `stat`: a 1 GiB --profile-from file was read
    whole before its size was refused (2.2 GB of memory, 6.8 s), and /dev/zero, whose size reads 0,
    ended in a MemoryError (a hostile review)."""
    try:
        with Path(path).open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise ScenarioError(f"{what} {path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    if len(data) > limit:
        raise ScenarioError(f"{what} {path}: more than {limit:,} bytes; the limit is {limit:,}")
    return data


def nesting_depth(data: Any, limit: int = MAX_NESTING) -> int:
    """How deeply `data` nests dicts and lists (a scalar is 0), counted up to `limit + 1` without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((c, depth) for c in children)
    return deepest


def _checked(data: Any, what: str) -> Any:
    if nesting_depth(data) > MAX_NESTING:
        raise ScenarioError(f"{what}: nested more than {MAX_NESTING} levels deep")
    return data


class _Twice(Exception):
    """A JSON object that gives one key twice (`_once`)."""


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members, each key once: JSON keeps the last of a key given twice without a word
    (a scenario's duration_s of 600 then 60 ran 60; a link's seed 3 then 5 ran 5: a review), where TOML
    refuses it; so does this."""
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Twice(k)
        out[k] = v
    return out


def loads_json(text: str | bytes, what: str, max_chars: int | None = None) -> Any:
    """JSON text as data; ScenarioError (naming `what`) when it is too long, too deep, not JSON, or gives
    a key twice in one object."""
    if max_chars is not None and len(text) > max_chars:
        raise ScenarioError(f"{what}: {len(text):,} characters; the limit is {max_chars:,}")
    try:
        data = json.loads(text, object_pairs_hook=_once)
    except _Twice as exc:
        raise ScenarioError(
            f"{what}: the key {exc.args[0]!r} is given twice in one object; give it once"
        ) from None
    except RecursionError:
        raise ScenarioError(f"{what}: nested more than {MAX_NESTING} levels deep") from None
    except json.JSONDecodeError as exc:
        raise ScenarioError(
            f"{what}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{what}: not valid JSON ({type(exc).__name__})") from None
    return _checked(data, what)


def loads_toml(text: str, what: str, max_chars: int | None = None) -> dict[str, Any]:
    """TOML text as data; ScenarioError (naming `what`) when it is too long, too deep or not TOML."""
    if max_chars is not None and len(text) > max_chars:
        raise ScenarioError(f"{what}: {len(text):,} characters; the limit is {max_chars:,}")
    import tomllib  # here: its import costs 20 M instructions, and a preset's run parses no TOML

    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise ScenarioError(f"{what}: nested more than {MAX_NESTING} levels deep") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{what}: not valid TOML ({exc})") from None
    except ValueError as exc:  # e.g. an integer too long to convert
        raise ScenarioError(f"{what}: not valid TOML ({exc})") from None
    return _checked(data, what)  # type: ignore[no-any-return]
