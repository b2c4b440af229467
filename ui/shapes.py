"""What kind of widget a scenario field needs, read from its type annotation.

`shape_of` reads a pydantic field's annotation and constraints (``Annotated[int, Field(ge=1)]``,
``float | None``, ``Literal[...]``, a nested model, a tuple of models, a `PolicySpec`) into a
`Shape`: its kind, whether it may be unset, its bounds and its options. The forms (`ui.forms`)
choose a widget by it; nothing here draws.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from engine.scenario import PolicySpec


@dataclass
class Shape:
    """What kind of widget a field needs."""

    kind: str
    optional: bool = False
    lo: float | None = None
    hi: float | None = None
    options: tuple[Any, ...] = ()
    cls: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


def _bounds(meta: Sequence[Any]) -> tuple[float | None, float | None]:
    lo = hi = None
    for m in meta:
        for attr in ("ge", "gt"):
            if getattr(m, attr, None) is not None:
                lo = float(getattr(m, attr))
        for attr in ("le", "lt"):
            if getattr(m, attr, None) is not None:
                hi = float(getattr(m, attr))
        inner = getattr(m, "metadata", None)
        if inner:
            ilo, ihi = _bounds(inner)
            lo = ilo if ilo is not None else lo
            hi = ihi if ihi is not None else hi
    return lo, hi


def shape_of(annotation: Any, metadata: Sequence[Any] = ()) -> Shape:
    """The widget shape of a type annotation (with its constraints)."""
    optional = False
    meta = list(metadata)
    tp = annotation
    for _ in range(4):
        origin = get_origin(tp)
        if origin in (Union, types.UnionType):
            members = [a for a in get_args(tp) if a is not type(None)]
            optional = optional or len(members) < len(get_args(tp))
            tp = members[0] if len(members) == 1 else tp
            if len(members) != 1:
                break
        elif origin is typing.Annotated:
            parts = get_args(tp)
            tp, meta = parts[0], meta + list(parts[1:])
        else:
            break
    lo, hi = _bounds(meta)
    origin = get_origin(tp)
    if origin is Literal:
        return Shape("literal", optional, options=get_args(tp))
    if tp is bool:
        return Shape("bool", optional)
    if tp is int:
        return Shape("int", optional, lo, hi)
    if tp is float:
        return Shape("float", optional, lo, hi)
    if tp is str:
        return Shape("str", optional)
    if isinstance(tp, type) and issubclass(tp, PolicySpec):
        return Shape("policy", optional, cls=tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return Shape("model", optional, cls=tp)
    if origin is tuple:
        items = get_args(tp)
        if items and isinstance(items[0], type) and issubclass(items[0], BaseModel):
            return Shape("models", optional, cls=items[0])
    return Shape("other", optional)


def field_shape(model: type[BaseModel], name: str) -> Shape:
    """The widget shape of a pydantic model's field (its range: `Shape.lo`, `Shape.hi`)."""
    f = model.model_fields[name]
    return shape_of(f.annotation, f.metadata)
