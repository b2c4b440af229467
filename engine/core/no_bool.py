"""Numbers that refuse true and false.

pydantic's lax mode reads `true` as 1 and `false` as 0 for any int or float field, so a share
link or a `--set` that says ``max_in_flight=true`` would run with one request in flight and no
word. Every settings value (`engine.catalog.specs.Frozen`) refuses a boolean where its field wants
a number: `boolean_in_number` names the first such field of a mapping about to be validated.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

_NUMBER_FIELDS: dict[type, dict[str, str]] = {}
"""Per class: each number field's input keys (its name and its alias) -> what it wants in words."""


def _wants(tp: Any) -> str | None:
    """'a whole number' or 'a number' where `tp` (an annotation) takes numbers and no boolean."""
    if tp is bool:
        return None
    if tp is int:
        return "a whole number"
    if tp is float:
        return "a number"
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _wants(typing.get_args(tp)[0])
    if origin is Union or origin is types.UnionType:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if bool in args:
            return None
        wanted = [w for a in args if (w := _wants(a))]
        return wanted[0] if len(wanted) == len(args) else None
    return None


def _number_fields(cls: type, fields: Mapping[str, FieldInfo]) -> dict[str, str]:
    known = _NUMBER_FIELDS.get(cls)
    if known is None:
        known = {}
        for name, info in fields.items():
            if (wants := _wants(info.annotation)) is not None:
                known[name] = wants
                if info.alias:
                    known[info.alias] = wants
        _NUMBER_FIELDS[cls] = known
    return known


def boolean_in_number(cls: type, fields: Mapping[str, FieldInfo], data: Any) -> str | None:
    """``"field: must be a whole number, not true"`` for the first key of `data` (a mapping about to
    validate as `cls`, whose pydantic `fields` are given) that holds a boolean where a number is
    wanted; None where there is none (or `data` is not a mapping)."""
    if not isinstance(data, Mapping):
        return None
    for key, wants in _number_fields(cls, fields).items():
        value = data.get(key)
        if isinstance(value, bool):
            return f"{key}: must be {wants}, not {str(value).lower()}"
    return None
