"""Numbers that refuse true and false.

pydantic's lax mode reads `true` as 1 and `false` as 0 for any int or float (and `Literal[1]`
matches true), so a share link or a `--set` that says ``max_in_flight=true`` would run with one
request in flight and no word. Every settings value (`engine.catalog.specs.Frozen`) and every
policy's knobs (`engine.policies.registry.build`) refuse a boolean where a number is wanted,
inside a mapping's values and a tuple's or list's items too (a chip's ``tflops.bf16``, a band's
bounds, ``cost.capex_usd.<chip>``): `boolean_in` names the first such place of the data about to
be validated. A nested settings value checks its own fields when it is validated.
"""

from __future__ import annotations

import numbers
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Union

_ABSENT = object()
_KEYS: dict[type, dict[str, Any]] = {}
"""Per class: the input keys (a field's name, and its alias) of its fields that may hold a number ->
their annotations (`field_keys`)."""


def _numeric(tp: Any) -> str | None:
    """'a whole number' or 'a number' where `tp` reads a boolean as a number, else None."""
    if tp is bool:
        return None
    if tp is int:
        return "a whole number"
    if tp is float:
        return "a number"
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _numeric(typing.get_args(tp)[0])
    if origin is typing.Literal:  # Literal[1] matches true
        numbers = [a for a in typing.get_args(tp) if isinstance(a, int) and not isinstance(a, bool)]
        return f"one of {', '.join(map(str, numbers))}" if numbers else None
    if origin is Union or origin is types.UnionType:
        args = typing.get_args(tp)
        if bool in args:
            return None
        return next((w for a in args if (w := _numeric(a)) is not None), None)
    return None


def _inside(tp: Any, value: Any) -> tuple[str, str, bool] | None:
    """(where in `value`: a path suffix such as '', '.bf16' or '[1]'; what `tp` wants there; the
    boolean) of the first boolean in `value` that `tp` would read as a number; None where none is."""
    if isinstance(value, bool):
        wants = _numeric(tp)
        return None if wants is None else ("", wants, value)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _inside(args[0], value)
    if origin is Union or origin is types.UnionType:
        return next((f for a in args if a is not type(None) and (f := _inside(a, value)) is not None), None)
    if isinstance(value, Mapping) and origin in (dict, Mapping) and len(args) == 2:
        for k, v in value.items():
            if (found := _inside(args[1], v)) is not None:
                return f".{k}{found[0]}", found[1], found[2]
    elif isinstance(value, list | tuple) and origin in (tuple, list) and args:
        each = args[:1] * len(value) if origin is list or args[-1] is Ellipsis else args
        for i, (a, v) in enumerate(zip(each, value, strict=False)):
            if (found := _inside(a, v)) is not None:
                return f"[{i}]{found[0]}", found[1], found[2]
    return None


def _may_hold(tp: Any) -> bool:
    """Whether a value of type `tp` may hold a number a boolean could stand for (a nested settings
    value checks its own fields: it is not looked into here)."""
    if _numeric(tp) is not None:
        return True
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _may_hold(args[0])
    if origin in (Union, types.UnionType, tuple, list):
        return any(_may_hold(a) for a in args if a is not Ellipsis)
    return origin in (dict, Mapping) and len(args) == 2 and _may_hold(args[1])


def field_keys(cls: type, fields: Callable[[], Mapping[str, Any]]) -> dict[str, Any]:
    """`cls`'s input keys whose values may hold a number -> their annotations, from what `fields`
    gives on the class's first call: its pydantic fields (FieldInfo: name and alias) or a plain
    mapping of names to annotations (a dataclass's type hints); kept per class (validation reads it
    for every settings value)."""
    known = _KEYS.get(cls)
    if known is None:
        known = {}
        for name, info in fields().items():
            tp = getattr(info, "annotation", info)
            if not _may_hold(tp):
                continue
            known[name] = tp
            if alias := getattr(info, "alias", None):
                known[alias] = tp
        _KEYS[cls] = known
    return known


def boolean_in(keys: Mapping[str, Any], data: Any) -> str | None:
    """``"tflops.bf16: must be a number, not true"`` for the first place in `data` (a mapping about to
    be validated, whose keys' annotations `keys` gives) holding a boolean where a number is wanted;
    None where there is none, or where `data` is not a mapping."""
    if not keys or not isinstance(data, Mapping):
        return None
    for key, tp in keys.items():
        value = data.get(key, _ABSENT)
        if value is not _ABSENT and (found := _inside(tp, value)) is not None:
            where, wants, flag = found
            return f"{key}{where}: must be {wants}, not {str(flag).lower()}"
    return None


def whole_number(value: Any) -> bool:
    """Whether `value` is a whole number as an API argument: an int or numpy's integers, not a boolean
    (numpy's np.bool_ is no `numbers.Integral`; a review saw np.int64(10) refused as 'a whole number')."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def real_number(value: Any) -> bool:
    """Whether `value` is a number as an API argument: an int, a float or numpy's, not a boolean."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)
