"""Errors the engine raises for bad input, and how validation failures are worded.

Every message names the field by its path (the one syntax used everywhere: dotted names with
list indices, e.g. ``workload.classes[0].share``), the value given and what is allowed.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

MAX_PROBLEMS_SHOWN = 12
"""Validation problems listed in one message; the rest are counted."""


class ScenarioError(ValueError):
    """A scenario, catalog entry, trace or link that cannot be used, with a readable reason."""


def format_path(loc: Sequence[int | str]) -> str:
    """A pydantic location tuple as a field path: ``("a", 0, "b") -> "a[0].b"``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-after", "function-before", "tagged-union")):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "(scenario)"


def _short(value: object, limit: int = 60) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int too long to print (Python refuses over 4,300 digits)
        return f"<{type(value).__name__} too long to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def format_validation_error(exc: ValidationError, prefix: str = "") -> str:
    """One line per problem: ``path: message (got value)``.

    A model-level check phrases its message as ``field: reason``; that field is appended to
    the model's path. An error on a container whose items also failed is left out.
    """
    errors = exc.errors(include_url=False)
    locs = [tuple(e["loc"]) for e in errors]
    # every proper prefix of a location: a container whose items failed (linear, not pairwise)
    parents = {loc[:i] for loc in locs for i in range(len(loc))}
    lines = []
    for err, loc in zip(errors, locs, strict=True):
        if loc in parents:
            continue
        parts: list[int | str] = [prefix, *loc] if prefix else list(loc)
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if err["type"] == "extra_forbidden":
            msg = "unknown field (not part of the scenario format)"
        value = err.get("input")
        if _is_nan(value) and err["type"] in (
            "less_than_equal",
            "less_than",
            "greater_than",
            "greater_than_equal",
        ):
            msg = f"must be a number, not NaN; {msg[0].lower()}{msg[1:]}"  # NaN fails every bound
        head, sep, rest = msg.partition(": ")
        if sep and isinstance(value, dict) and _looks_like_path(head):
            parts.append(head)
            msg = rest
        show = err["type"] not in ("missing", "extra_forbidden") and not isinstance(value, dict | list)
        got = f" (got {_short(value)})" if show else ""
        lines.append(f"{format_path(parts)}: {msg}{got}")
    unique = list(dict.fromkeys(lines))
    if len(unique) > MAX_PROBLEMS_SHOWN:
        more = len(unique) - MAX_PROBLEMS_SHOWN
        unique = [*unique[:MAX_PROBLEMS_SHOWN], f"and {more} more problem{'s' if more > 1 else ''}"]
    return "; ".join(unique)


def _is_nan(value: object) -> bool:
    """A float NaN, or a text that reads as one ('NaN', 'nan')."""
    if isinstance(value, float):
        return value != value
    return isinstance(value, str) and value.strip().lower() == "nan"


def _looks_like_path(text: str) -> bool:
    return bool(text) and all(c.isalnum() or c in "._[]-" for c in text)  # ('-': a chip id as a key)
