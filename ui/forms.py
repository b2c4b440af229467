"""Forms generated from the Scenario model's fields and from the policy registry.

`model_form` builds the widgets of a whole pydantic model from its fields (`ui.shapes`):
booleans become toggles, literals select boxes, bounded numbers number inputs checked against
their bounds, nested models bordered sections, tuples of models list editors, and `PolicySpec`
fields a picker over the policy registry plus one widget per knob (the policy dataclass's
fields). A field or a policy the engine adds later appears without a page change.
`defaulted_form` draws a model whose unset fields take their defaults from elsewhere.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, get_args

import streamlit as st
from pydantic import BaseModel

from engine import policies
from engine.costmodel import STACK_NAMES
from ui import state
from ui.bound import bound, current, key_of, number, select, sync, toggle
from ui.field_help import FIELD_HELP
from ui.labels import EMPTY, HELP, PATH_HELP, PATH_LABELS, label_of
from ui.shapes import Shape, shape_of
from ui.text import plain


def field_widget(
    path: str,
    name: str,
    shape: Shape,
    *,
    default: Any = None,
    choices: Sequence[Any] | None = None,
    help: str | None = None,
    label: str | None = None,
    **number_kw: Any,
) -> None:
    """One widget for one scalar field (`label`: other than the field's own; `number_kw`: more for a number box)."""
    label = label or PATH_LABELS.get(path) or label_of(name)
    tip = help or PATH_HELP.get(path) or HELP.get(name)
    if choices is not None:
        select(path, choices, label, default=default, help=tip)
    elif shape.kind == "bool":
        toggle(path, label, default=bool(default), help=tip)
    elif shape.kind == "literal":
        select(path, shape.options, label, default=default, help=tip)
    elif shape.kind in ("int", "float"):
        if shape.optional and name in EMPTY:
            number_kw.setdefault("placeholder", EMPTY[name])
        number(
            path,
            label,
            integer=shape.kind == "int",
            lo=shape.lo,
            hi=shape.hi,
            default=default,
            optional=shape.optional,
            help=tip,
            **number_kw,
        )
    elif shape.kind == "str":
        bound(
            st.text_input,
            path,
            label,
            default=default or "",
            help=tip,
            from_ui=lambda v: v or None if shape.optional else v,
        )


SCALARS = ("bool", "literal", "int", "float", "str")


def join(path: str, name: str) -> str:
    """A child field's path."""
    return f"{path}.{name}" if path else name


def model_form(
    path: str,
    cls: type[BaseModel],
    *,
    skip: Sequence[str] = (),
    only: Sequence[str] | None = None,
    choices: Mapping[str, Sequence[Any]] | None = None,
    columns: int = 3,
    nested: Mapping[str, Callable[[str], None]] | None = None,
) -> None:
    """Widgets for every field of a model at `path`: scalars in a grid, nested models below."""
    choices = choices or {}
    nested = nested or {}
    items = [(n, f) for n, f in cls.model_fields.items() if n not in skip and (only is None or n in only)]
    shapes = {n: shape_of(f.annotation, f.metadata) for n, f in items}
    scalars = [(n, f) for n, f in items if shapes[n].kind in SCALARS or n in choices]
    if scalars:
        cols = st.columns(columns)
        for i, (n, f) in enumerate(scalars):
            default = None if f.is_required() else f.get_default(call_default_factory=True)
            with cols[i % len(cols)]:
                tip = f.description or FIELD_HELP.get(f"{cls.__name__}.{n}")
                field_widget(join(path, n), n, shapes[n], default=default, choices=choices.get(n), help=tip)
    policy_fields = [n for n, _f in items if shapes[n].kind == "policy" and n not in nested]
    if policy_fields:
        for col, n in zip(st.columns(len(policy_fields)), policy_fields, strict=True):
            with col:
                policy_widget(join(path, n), n)
    for n, _f in items:
        sh = shapes[n]
        sub = join(path, n)
        if n in choices or sh.kind in SCALARS or n in policy_fields:
            continue
        if n in nested:
            nested[n](sub)
        elif sh.kind == "model":
            with st.container(border=True):
                st.markdown(f"**{label_of(n)}**", help=(sh.cls.__doc__ or "").strip().split("\n")[0] or None)
                if not sh.optional or _optional_on(sub, label_of(n)):
                    model_form(sub, sh.cls, columns=columns)
        elif sh.kind == "models":
            list_editor(sub, sh.cls)


ON_OFF = {True: "on", False: "off"}


def _optional_on(path: str, label: str) -> bool:
    """An optional section (a gateway, a custom model's MoE): a toggle that adds it from its defaults or
    removes it; True while it is set. Unset, its defaults are not in force, so they are not shown as if
    they were: the Strategy page showed a gateway's batch window and size on a preset without one, and
    typing one in switched a gateway on unsaid (a review)."""
    on = current(path) is not None
    # keyed by the state, so a refused change leaves the toggle where the scenario is
    want = st.toggle(  # 'On' under the section's title (its name twice read as two settings)
        "On", value=on, key=f"fg:on:{path}:{on}", help=f"Off: the scenario has no {label.lower()}."
    )
    if want != on and state.override({path: {} if want else None}, what=label):
        st.rerun()
    if not on:
        st.caption("Off: none in the scenario. On adds one from its defaults, to set here.")
    return on


def _to_defaults(path: str, names: Sequence[str]) -> None:
    state.override({join(path, n): None for n in names})


def per_chip(effective: Mapping[str, Any], each: Mapping[str, Any]) -> dict[str, Any]:
    """`effective` (a model's values in force) with each field whose value differs between chips (`each`:
    a chip's limits, in pool order) as the chips' values in that order: a pool on an H100 beside one on
    a 910B takes vLLM's 1,024 sequences where the 910B takes 256, and the box reads '256 / 1,024'."""
    out = dict(effective)
    for n in out:
        values = [getattr(b, n) for b in each.values()]
        if len(set(values)) > 1:
            out[n] = " / ".join(f"{v:,}" if isinstance(v, int | float) else str(v) for v in values)
    return out


def defaulted_form(
    path: str,
    cls: type[BaseModel],
    effective: Mapping[str, Any],
    whose: str,
    *,
    columns: int = 2,
) -> None:
    """Widgets for a model whose unset (None) fields take defaults from elsewhere (a serving stack).

    Each field shows the value in force: a number box left empty shows the default as its
    placeholder, a yes/no field offers "on (default)" beside on and off (the value first: a narrow box
    cuts the end; whose default it is, in the help). Typing a value overrides
    the default; emptying the box (or choosing the default) goes back to it, as does the button
    below for every field at once. `whose` names the defaults' owner ("vLLM's").
    """
    names = list(cls.model_fields)
    cols = st.columns(columns)
    for i, n in enumerate(names):
        f = cls.model_fields[n]
        sh = shape_of(f.annotation, f.metadata)
        eff = effective.get(n)
        tip = f"{f.description or HELP.get(n, '')} Empty: {whose} default ({eff})."
        with cols[i % len(cols)]:
            if sh.kind == "bool":
                select(
                    join(path, n),
                    [None, True, False],
                    label_of(n),
                    help=tip,
                    # '(default)', whose in the help: 'on (vLLM's def' was cut at 1,100 px (a review)
                    format_func=lambda v, e=eff: f"{ON_OFF.get(e, e)} (default)" if v is None else ON_OFF[v],
                    key=f"{key_of(join(path, n))}:{whose}:{eff}",  # its first label names them (`select`)
                )
            elif sh.kind in ("int", "float"):
                shown = f"{eff:,}" if isinstance(eff, int | float) else str(eff)
                number(
                    join(path, n),
                    label_of(n),
                    integer=sh.kind == "int",
                    lo=sh.lo,
                    hi=sh.hi,
                    optional=True,
                    # a long figure ('2,048 / 8,192' per chip, '1,024') leaves the box no room for ' (default)':
                    # it read '1,024 (d' at 1,100 px (a review); the caption and the help say whose it is
                    placeholder=f"{shown} (default)" if len(shown) <= 3 else shown,
                    help=tip,
                )
            else:
                field_widget(join(path, n), n, sh, help=tip)
    overridden = [n for n in names if current(join(path, n)) is not None]
    st.button(
        f"Back to {whose} defaults",
        key=f"fg:defaults:{path}",
        on_click=_to_defaults,
        args=(path, names),
        disabled=not overridden,
        icon=":material/restart_alt:",
        type="tertiary",
        help="Clear every value set here, so each field takes the default again.",
    )


# --- policies ----------------------------------------------------------------------------


STACK_DEFAULT = "(the stack's)"
"""The picker's entry for an optional policy left to the serving stack (`scheduler.iteration`)."""


def _policy_changed(path: str, key: str) -> None:
    chosen = st.session_state[key]
    # a new policy starts from its defaults; the stack's entry unsets the field
    state.override({path: None if chosen == STACK_DEFAULT else {"name": chosen}})


def _stack_policy(kind: str) -> str | None:
    """The policy the scenario's serving stack runs for a kind it decides (iteration), else None."""
    if kind != "iteration":
        return None
    return policies.STACK_SCHEDULER.get(str(current("deployment.stack", "vllm")))


def policy_widget(path: str, kind: str) -> None:
    """A picker over the registered policies of a kind, plus one widget per knob of the chosen one."""
    if kind not in get_args(policies.PolicyKind):
        st.caption(f"{label_of(kind)}: no policy registry of this kind")
        return
    table = policies.registered(kind)  # type: ignore[arg-type]
    spec = current(path, {}) or {}
    by_stack = _stack_policy(kind)
    names = sorted(table)
    if by_stack is not None:  # left unset, the stack decides: say which
        name = spec.get("name", STACK_DEFAULT)
        options = [STACK_DEFAULT, *names]
    else:
        name = spec.get("name", next(iter(table)))
        options = names
    # its first label names the stack's policy: a key of its own per stack (`ui.bound.select`)
    key = key_of(f"{path}.name") + (f":{by_stack}" if by_stack else "")
    sync(key, name)
    helps = "\n".join(f"- **{n}**: {table[n].help or (table[n].__doc__ or '').strip()}" for n in names)
    # the stack's entry names whose default it is: 'mixed (default)' beside 'mixed' read as one choice twice
    # (a browser review); the named entry keeps that policy whatever the stack
    whose = f"{STACK_NAMES.get(str(current('deployment.stack', 'vllm')), 'the stack')}'s default"
    if by_stack is not None:
        helps = (
            f"{by_stack} ({whose}): the serving stack's own, which follows the stack if it changes; a policy chosen "
            f"by name stays whatever the stack.\n{helps}"
        )
    st.selectbox(
        label_of(kind),
        options,
        key=key,
        on_change=_policy_changed,
        args=(path, key),
        help=helps,
        format_func=lambda o: f"{by_stack} ({whose})" if o == STACK_DEFAULT else str(o),
    )
    cls = table.get(by_stack if name == STACK_DEFAULT and by_stack else name)
    if cls is None:
        return
    if cls.help:
        st.caption(cls.help)
    knobs = dataclasses.fields(cls)
    if not knobs:
        return
    hints = typing.get_type_hints(cls)
    cols = st.columns(min(3, len(knobs)))
    for i, f in enumerate(knobs):
        default = f.default if f.default is not dataclasses.MISSING else None
        meta: Mapping[str, Any] = f.metadata or {}
        sh = shape_of(hints.get(f.name, type(default)), ())
        sh.lo = meta.get("ge", sh.lo)
        sh.hi = meta.get("le", sh.hi)
        with cols[i % len(cols)]:
            field_widget(f"{path}.{f.name}", f.name, sh, default=default, help=meta.get("help"))


# --- lists of models ---------------------------------------------------------------------


def remove_item(path: str, index: int) -> None:
    """Drop item `index` of the list at `path`."""
    items = list(current(path, []) or [])
    del items[index]
    state.override({path: items})


def add_item(path: str, make: Callable[[], dict[str, Any]]) -> None:
    """Append a new item (from `make`) to the list at `path`."""
    items = list(current(path, []) or [])
    state.override({path: [*items, make()]})


def list_editor(
    path: str,
    cls: type[BaseModel],
    *,
    new_item: Callable[[], dict[str, Any]] | None = None,
    title: Callable[[int, dict[str, Any]], str] | None = None,
    choices: Mapping[str, Sequence[Any]] | None = None,
    add_label: str = "Add",
    max_items: int | None = None,
    skip: Callable[[dict[str, Any]], Sequence[str]] | None = None,
    lead: Callable[[int, dict[str, Any]], None] | None = None,
) -> None:
    """Edit a tuple of models: one bordered form per item with a remove button, and an add button;
    `skip` names the fields an item's form leaves out (those its kind does not use), `lead` draws an
    item's own widgets before its form (a kind whose change moves other fields)."""
    items: list[dict[str, Any]] = list(current(path, []) or [])
    for i, item in enumerate(items):
        with st.container(border=True):
            head, rm = st.columns([3, 1], vertical_alignment="center")  # "Remove" whole at 1,100 px
            head.markdown(f"**{plain(title(i, item)) if title else f'{label_of(cls.__name__)} {i + 1}'}**")
            rm.button(
                "Remove",
                key=f"fg:rm:{path}[{i}]",
                on_click=remove_item,
                args=(path, i),
                icon=":material/delete:",
            )
            if lead is not None:
                lead(i, item)
            model_form(f"{path}[{i}]", cls, choices=choices, skip=skip(item) if skip else ())
    if new_item is not None and (max_items is None or len(items) < max_items):
        st.button(
            add_label, key=f"fg:add:{path}", on_click=add_item, args=(path, new_item), icon=":material/add:"
        )
