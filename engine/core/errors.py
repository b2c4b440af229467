"""Errors the engine raises for bad input, and how validation failures are worded.

Every message names the field by its path (the one syntax used everywhere: dotted names with
list indices, e.g. ``workload.classes[0].share``), the value given and what is allowed.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

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


BOUND_ERRORS = ("less_than_equal", "less_than", "greater_than", "greater_than_equal")
"""pydantic's error types of a number past one of its field's bounds."""
RANGED_ERRORS = (*BOUND_ERRORS, "float_parsing", "int_parsing", "float_type", "int_type", "int_from_float")
"""The errors whose message gives the field's range where it has one: past a bound, or not a number at all
(`--set duration_s=abc` said a number was wanted, not which: a review)."""


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model class an annotation holds (itself, or inside Optional, a list, a tuple, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if (found := _model_in(arg)) is not None:
            return found
    return None


def _range(model: type[Any], loc: Sequence[int | str]) -> tuple[str, str] | None:
    """Both bounds of the number field at `loc` under `model` (or of a policy's knob, `model` its
    dataclass) as a user reads them ('0.01', or 'more
    than 0' for an exclusive one: 'greater than 0; the allowed range is 0 to 100,000 (got 0.0)' said the
    refused value was allowed, a review); None where it has not two, or `loc` leads through something
    other than models, lists and tuples."""
    names = [part for part in loc if isinstance(part, str)]
    meta = (
        _knob_constraints(model, names)
        if dataclasses.is_dataclass(model)
        else _field_constraints(model, names)
    )
    lo, hi = _bound(meta or [], ("ge", "gt")), _bound(meta or [], ("le", "lt"))
    if lo is None or hi is None:
        return None
    return (f"more than {_number(lo[0])}" if lo[1] else _number(lo[0])), (
        f"less than {_number(hi[0])}" if hi[1] else _number(hi[0])
    )


def _field_at(model: type[BaseModel] | None, names: Sequence[str]) -> Any:
    """The model field (pydantic's FieldInfo) that `names` lead to through models, lists and tuples; None
    where they leave them."""
    cls = model
    for i, name in enumerate(names):
        field = cls.model_fields.get(name) if cls is not None else None
        if field is None or i == len(names) - 1:
            return field
        cls = _model_in(field.annotation)
    return None


def _field_constraints(model: type[BaseModel], names: Sequence[str]) -> list[Any] | None:
    """The constraints of the model field that `names` lead to (None: not a field of models), or of a table's
    values where the last name is its key ('cost.usd_per_hour.h100-sxm: greater than 0 (got -1)' named no
    top: a review)."""
    table = _field_at(model, names[:-1]) if len(names) > 1 else None
    if table is not None and (value := _dict_value(table.annotation)) is not None:
        return value
    field = _field_at(model, names)
    return None if field is None else _constraints(field)


def _description(model: type[Any], loc: Sequence[int | str]) -> str:
    """The description of the model field at `loc` under `model` ('' where it has none, or `loc` leads
    through something other than models, lists and tuples)."""
    names = [part for part in loc if isinstance(part, str)]
    is_model = isinstance(model, type) and issubclass(model, BaseModel)
    field = _field_at(model, names) if is_model else None
    return (field.description or "") if field is not None else ""


def _dict_value(annotation: Any) -> list[Any] | None:
    """The constraints of a `dict[key, Annotated[number, Field(...)]]` field's values (None: not such)."""
    if typing.get_origin(annotation) is not dict:
        return None
    value = typing.get_args(annotation)[1]
    if typing.get_origin(value) is not typing.Annotated:
        return None
    return [m for extra in typing.get_args(value)[1:] for m in (getattr(extra, "metadata", None) or [extra])]


def _knob_constraints(cls: Any, names: Sequence[str]) -> list[Any] | None:
    """The constraints of a policy's knob (a dataclass field annotated `Annotated[float, Field(...)]`):
    the autoscaler's `headroom` of 5 read only 'less than or equal to 1' (a review)."""
    if len(names) != 1:
        return None
    hint = typing.get_type_hints(cls, include_extras=True).get(names[0])
    if typing.get_origin(hint) is not typing.Annotated:
        return None
    return [m for extra in typing.get_args(hint)[1:] for m in (getattr(extra, "metadata", None) or [extra])]


def _constraints(field: Any) -> list[Any]:
    """A field's constraints: its own metadata, or, for an optional field (`Annotated[float, Field(ge=...)]
    | None`, whose metadata pydantic leaves empty), those of the annotated member of its union (the
    optional fields' refusals named one bound only: 'less than or equal to 10000 (got 10001)', a review)."""
    if field.metadata:
        return list(field.metadata)
    found: list[Any] = []
    for member in typing.get_args(field.annotation):
        for extra in typing.get_args(member)[1:] if typing.get_origin(member) is typing.Annotated else ():
            found.extend(getattr(extra, "metadata", None) or [extra])
    return found


def _bound(metadata: Sequence[Any], kinds: tuple[str, str]) -> tuple[float, bool] | None:
    """A field's bound of one side (`kinds`: ('ge', 'gt') or ('le', 'lt')) from its annotated metadata,
    and whether it is exclusive (gt, lt)."""
    found = ((getattr(m, k, None), k) for m in metadata for k in kinds)
    return next(((float(v), k in ("gt", "lt")) for v, k in found if v is not None), None)


def _number(v: float) -> str:
    """A bound as a user types it: 5,000; 0.98; 0.000001 (not 1e-06)."""
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:.12f}".rstrip("0") if abs(v) < 1e-3 else f"{v:,.6g}"


def format_validation_error(
    exc: ValidationError, prefix: str = "", model: type[BaseModel] | type[Any] | None = None
) -> str:
    """One line per problem: ``path: message (got value)``.

    A model-level check phrases its message as ``field: reason``; that field is appended to
    the model's path. An error on a container whose items also failed is left out. With `model` (the
    class validated), a number past one bound of a field that has two says both: a link's rate of -5
    read only "greater than or equal to 0.0001" (a review).
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
        elif err["type"] in ("too_short", "too_long"):  # pydantic's "Tuple should have at least 1 item
            # after validation, not 0" (a review): the count allowed and the count given
            ctx = err.get("ctx") or {}
            n, bound = (
                ctx.get("actual_length"),
                ctx.get("min_length" if err["type"] == "too_short" else "max_length"),
            )
            least = "at least" if err["type"] == "too_short" else "at most"
            # a text's are characters: a 200-character name read "needs at most 160 entries" (a hostile review)
            unit = ("character", "characters") if isinstance(err.get("input"), str) else ("entry", "entries")
            msg = f"needs {least} {bound} {unit[0] if bound == 1 else unit[1]} (got {n})"
        value = err.get("input")
        if err["type"] in ("tuple_type", "list_type") and isinstance(value, dict) and parts:
            # '[workload.classes]' for '[[workload.classes]]' read "Input should be a valid tuple" (a review)
            name = ".".join(str(p) for p in parts)
            msg = (
                f"a list of tables, one per entry: in TOML, [[{name}]] before each (got one table, [{name}])"
            )
        if _is_nan(value) and err["type"] in (
            "less_than_equal",
            "less_than",
            "greater_than",
            "greater_than_equal",
        ):
            # NaN fails every bound: the bound it happened to be checked against said nothing ('not NaN; input
            # should be less than or equal to 5000', beside the range: a review); the range below says it
            msg = "must be a number, not NaN"
        if err["type"] == "missing" and model is not None and (what := _description(model, loc)):
            # a custom chip without profiles read only "profiles: Field required" (a hardware strategist)
            msg = f"{msg}: {what}"
        if model is not None and err["type"] in RANGED_ERRORS and (both := _range(model, loc)) is not None:
            msg = f"{msg}; the allowed range is {both[0]} to {both[1]}"
        head, sep, rest = msg.partition(": ")
        if sep and isinstance(value, dict) and _looks_like_path(head):
            parts.append(head)
            msg = rest
        # a text too long or short is said by its length alone ("(got 300000) (got 'NNN...')": a browser review)
        counted = err["type"] in ("too_short", "too_long") and isinstance(value, str)
        show = (
            err["type"] not in ("missing", "extra_forbidden")
            and not isinstance(value, dict | list)
            and not counted
        )
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
