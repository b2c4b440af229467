"""Field paths: one syntax addresses any field of a scenario's plain data everywhere (``--set``,
``--vary``, share links, error messages): dotted names with list indices, ``workload.classes[0].share``,
and a table's key where it is a chip's id, ``cost.usd_per_hour.h100-sxm``. `diff` lists the paths where
two scenarios' data differ (what a share link carries). Moved out of `engine.scenario.codec` (600
lines); `codec` imports each name back, so `codec.parse_path` and the rest still work.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from engine.core import safeparse
from engine.core.errors import ScenarioError

MAX_SCENARIO_CHARS = 1 << 20
"""Longest scenario document read (a scenario with every custom entry filled is a few kB), and
longest --set value."""

_PART = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_-]*)((?:\[\d+\])*)")
"""A path's chunk: a field or a key (a chip's id, 'h100-sxm', as `cost.usd_per_hour`'s keys are: a
price set on the SLO page made a share link the app then refused, 'malformed field path': a review),
with list indexes after it."""


CHIP_TABLES = frozenset(
    {"cost.usd_per_hour", "cost.capex_usd", "cost.server_capex_usd", "cost.porting_engineer_months"}
)
"""The tables keyed by chip id: after one, the rest of a path is a chip's id whole, dots and a leading
digit included ('cost.usd_per_hour.my.chip' was read as the field 'my', '...4090' told to put an index
in brackets: a review); `<table>.<chip>=null` drops a chip's entry and `<table>={}` empties the table
(`codec.apply_overrides`)."""

_CHIP_KEY = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")  # a catalog id (`catalog.specs.ID_PATTERN`)


def parse_path(path: str) -> list[str | int]:
    """``"a.b[0].c"`` -> ``["a", "b", 0, "c"]``; raises ScenarioError for a malformed path."""
    if not path or len(path) > 200:
        raise ScenarioError(f"malformed field path {path!r}")
    chunks = path.split(".")
    table, key = ".".join(chunks[:2]), ".".join(chunks[2:])
    if table in CHIP_TABLES and key:
        if not _CHIP_KEY.fullmatch(key):
            raise ScenarioError(
                f"malformed field path {path!r}: {key!r} is not a chip id (lower case, digits, . _ -)"
            )
        return [*table.split("."), key]
    out: list[str | int] = []
    for chunk in path.split("."):
        # an index goes in brackets; a path opens with a field's name, never a digit (a key may)
        m = (
            None
            if chunk.isdigit() or not (out or chunk[:1].isalpha() or chunk[:1] == "_")
            else _PART.fullmatch(chunk)
        )
        if not m and chunk.isdigit() and out:  # 'deployment.pools.0.hardware'
            said = re.sub(r"\.(\d+)(?=\.|$)", r"[\1]", path)
            raise ScenarioError(f"malformed field path {path!r}: a list's index goes in brackets, {said!r}")
        if not m:
            raise ScenarioError(f"malformed field path {path!r} (at {chunk!r})")
        out.append(m.group(1))
        out.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return out


def format_parts(parts: list[str | int]) -> str:
    """The inverse of `parse_path`."""
    s = ""
    for p in parts:
        s += f"[{p}]" if isinstance(p, int) else ("." if s else "") + p
    return s


def get_path(data: Any, path: str) -> Any:
    """The value at a field path in plain scenario data."""
    cur = data
    for part in parse_path(path):
        try:
            cur = cur[part]
        except (KeyError, IndexError, TypeError):
            raise ScenarioError(f"{path}: no such field") from None
    return cur


def _not_a_list(path: str, parts: list[str | int], i: int, cur: Any) -> None:
    """Raise, naming the item to pick, where a field is looked up in a list (`workload.classes.slo`
    said only 'no such field': a review)."""
    if isinstance(cur, list):
        at = format_parts(parts[:i])
        rest = format_parts(parts[i:])
        raise ScenarioError(
            f"{path}: {at} is a list of {len(cur)}; name an item by its index, as {at}[0].{rest}"
            + (f" (0 to {len(cur) - 1})" if cur else "")
        )


def set_path(data: dict[str, Any], path: str, value: Any, *, copy_data: bool = True) -> dict[str, Any]:
    """`data` with the field at `path` set (missing tables are created): a deep copy, or `data` itself."""
    out = copy.deepcopy(data) if copy_data else data
    parts = parse_path(path)
    cur: Any = out
    for i, part in enumerate(parts[:-1]):
        nxt = parts[i + 1]
        try:
            if isinstance(part, int):
                _check_index(path, parts[: i + 1], cur)
                cur = cur[part]
            else:
                _not_a_list(path, parts, i, cur)
                if part not in cur:
                    if isinstance(nxt, int):
                        raise ScenarioError(f"{path}: no list at {format_parts(parts[: i + 1])}")
                    cur[part] = {}
                cur = cur[part]
        except (IndexError, TypeError, KeyError):
            raise ScenarioError(f"{path}: no such field") from None
    last = parts[-1]
    try:
        if isinstance(last, int):
            if not isinstance(cur, list):
                raise ScenarioError(f"{path}: index {last} is out of range")
            _check_index(path, parts, cur)
            cur[last] = value
        elif isinstance(cur, dict):
            cur[last] = value
        else:
            _not_a_list(path, parts, len(parts) - 1, cur)
            raise ScenarioError(f"{path}: no such field")
    except TypeError:
        raise ScenarioError(f"{path}: no such field") from None
    return out


def _check_index(path: str, parts: list[str | int], cur: Any) -> None:
    """Refuse an index past a list's end, naming the list and the indices it has (it read "no such
    field", as though the name were wrong)."""
    index = parts[-1]
    if isinstance(cur, list) and isinstance(index, int) and index >= len(cur):
        n = len(cur)
        held = (
            "is empty" if not n else "has one entry, index 0" if n == 1 else f"has {n}, indices 0 to {n - 1}"
        )
        raise ScenarioError(f"{path}: index {index} is out of range ({format_parts(parts[:-1])} {held})")


def parse_value(text: str) -> Any:
    """A --set value: a TOML literal (number, bool, string, array, inline table), ``null`` (None:
    an optional field unset, as a scenario file that leaves it out; TOML has no null, and the text
    "null" is '"null"'), or bare text."""
    if len(text) > MAX_SCENARIO_CHARS:
        raise ScenarioError(f"value: {len(text):,} characters; the limit is {MAX_SCENARIO_CHARS:,}")
    if text.strip() == "null":
        return None
    import tomllib  # only when a --set value is read: its import is 20 M instructions

    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    except (RecursionError, ValueError):
        raise ScenarioError(
            f"value {text[:40]!r}...: nested too deeply or a number of more than 4,300 digits"
        ) from None
    if safeparse.nesting_depth(value) > safeparse.MAX_NESTING:
        raise ScenarioError(f"value: nested more than {safeparse.MAX_NESTING} levels deep")
    return value


def parse_override(flag: str, path: str, text: str) -> Any:
    """A ``PATH=VALUE`` override's value (`parse_value`), its refusal naming the flag and the field (a
    5,000-digit number read "value '999...': a number too long", no field named: a review)."""
    try:
        return parse_value(text.strip())
    except ScenarioError as err:
        raise ScenarioError(f"{flag} {path.strip()}: {err}") from None


def _addressable(key: Any) -> bool:
    """Whether a mapping's key can be a path's chunk (a key with a dot cannot: its table goes whole)."""
    return isinstance(key, str) and not key.isdigit() and _PART.fullmatch(key) is not None and "[" not in key


def diff(base: Any, other: Any, prefix: list[str | int] | None = None) -> dict[str, Any]:
    """Paths and values where `other` differs from `base` (lists of unequal length: whole)."""
    prefix = prefix or []
    out: dict[str, Any] = {}
    if isinstance(base, dict) and isinstance(other, dict) and all(map(_addressable, [*base, *other])):
        for key in other:
            if key not in base:
                out[format_parts([*prefix, key])] = other[key]
            else:
                out.update(diff(base[key], other[key], [*prefix, key]))
        for key in base:
            if key not in other:
                out[format_parts([*prefix, key])] = None
        return out
    if (
        isinstance(base, list)
        and isinstance(other, list)
        and len(base) == len(other)
        and all(isinstance(x, dict) for x in base + other)
    ):
        for i, (a, b) in enumerate(zip(base, other, strict=True)):
            out.update(diff(a, b, [*prefix, i]))
        return out
    if base != other:
        out[format_parts(prefix)] = other
    return out
