"""Widgets bound to scenario fields by path: number boxes, select boxes, toggles, sliders.

A bound widget shows the value at a field path (``workload.arrival.rate_rps``) and, when the
user changes it, calls `ui.state.override` with that path: the scenario is rebuilt and
validated, never mutated, and a refused value snaps back with a message naming the field (and,
for a number out of its bounds, the allowed range) that stays until the user dismisses it.
Each widget's session key is `key_of(path)`, so a page can find (and a test set) the widget of
a field by its path.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from engine.core import ScenarioError
from engine.scenario import get_path
from ui import state
from ui.labels import HELP, label_of, show_number, show_value


def key_of(path: str) -> str:
    """The session-state key of the widget bound to a path."""
    return f"fg:{path}"


_MISSING = object()


def current(path: str, default: Any = None) -> Any:
    """The value at a path of the session's scenario (the default where the field is unset)."""
    try:
        return get_path(state.data(), path)
    except ScenarioError:
        return default


def sync(key: str, value: Any) -> None:
    """Give a widget's session key `value`, unless it holds it already."""
    if st.session_state.get(key, _MISSING) != value:
        st.session_state[key] = value


Check = Callable[[Any], str | None]
"""Says why a widget's new value is refused before the scenario sees it (None: go ahead)."""

Changes = Callable[[Any], tuple[dict[str, Any], str]]
"""The changes a widget's new value makes where it moves other fields too (a window that would end
inside its warm-up shortens the warm-up), and what to say once they are applied ("": nothing)."""


PROBLEMS = "fg_problems"
"""Session key of the refusals shown beside their widgets: slot -> (scenario refused against, message,
the refused value)."""


def local_problem(slot: str) -> str | None:
    """The refusal kept for a slot, while the scenario is still the one the change was refused against.

    Any accepted change makes a new scenario, so the message goes away by itself.
    """
    kept = st.session_state.get(PROBLEMS, {}).get(slot)
    return kept[1] if kept and kept[0] is state.scenario() else None


def refused_value(slot: str) -> Any:
    """The value whose refusal `local_problem(slot)` shows (None when there is none)."""
    kept = st.session_state.get(PROBLEMS, {}).get(slot)
    return kept[2] if kept and kept[0] is state.scenario() else None


def _on_change(
    path: str,
    key: str,
    from_ui: Callable[[Any], Any] | None,
    what: str = "",
    check: Check | None = None,
    slot: str | None = None,
    changes: Changes | None = None,
) -> None:
    value = st.session_state[key]
    value = from_ui(value) if from_ui else value
    problem = check(value) if check else None
    if problem:  # the widget snaps back on the rerun (see `bound`); the message stays until dismissed
        state.notify(state.with_names(f"{what} ({path}): {problem}", [path]), key=state.field_key([path]))
        return
    if slot is None:
        made, said = changes(value) if changes else ({path: value}, "")
        if state.override(made, what=what) and said:  # the scenario's message names the path
            state.dismiss(state.field_key([path]))  # a refusal of this field alone is settled too
            state.notify(said, kind="info", key=state.field_key(made))
        return
    refused = state.attempt({path: value})
    problems = st.session_state.setdefault(PROBLEMS, {})
    problems.pop(slot, None)
    if refused:  # shown beside the widget (`local_problem`) while nothing else changes
        problems[slot] = (state.scenario(), f"{what} {show_value(value)} is not possible: {refused}", value)


def bound(
    widget: Callable[..., Any],
    path: str,
    label: str,
    *,
    default: Any = None,
    to_ui: Callable[[Any], Any] | None = None,
    from_ui: Callable[[Any], Any] | None = None,
    what: str | None = None,
    check: Check | None = None,
    key: str | None = None,
    slot: str | None = None,
    changes: Changes | None = None,
    **kwargs: Any,
) -> Any:
    """Render `widget` showing the value at `path`; a change overrides that path in the scenario.

    A refused change (by `check`, or by the scenario's validation) leaves a message naming the
    field (`what`, default the label, and its path) that stays until dismissed. With `slot`, the
    scenario's refusal is kept for `local_problem(slot)` to show beside the widget instead. `key`
    is needed only for a second widget on the same path (the first is keyed by `key_of(path)`).
    `changes` makes the changes of a value that moves other fields too (not with `slot`).
    """
    value = current(path, default)
    key = key or key_of(path)
    sync(key, to_ui(value) if to_ui else value)
    args = (path, key, from_ui, what or label, check, slot, changes)
    return widget(label, key=key, on_change=_on_change, args=args, **kwargs)


def range_check(lo: float | None, hi: float | None, kept: Any = None) -> Check:
    """A check that refuses values outside [lo, hi], naming the range (and the value kept)."""

    def check(value: Any) -> str | None:
        if value is None or ((lo is None or value >= lo) and (hi is None or value <= hi)):
            return None
        if lo is not None and hi is not None:
            allowed = f"the allowed range is {show_number(lo)} to {show_number(hi)}"
        elif lo is not None:
            allowed = f"the smallest allowed value is {show_number(lo)}"
        else:
            allowed = f"the largest allowed value is {show_number(hi)}"  # type: ignore[arg-type]
        keeps = f"; it keeps {show_number(kept)}" if isinstance(kept, int | float) else ""
        return f"{show_number(value)} is not allowed: {allowed}{keeps}"

    return check


def _decimals(value: float, most: int = 6) -> int:
    """Decimals needed to show `value` as it is (up to `most`): 1.58 -> 2, 0.5 -> 1, 3.0 -> 0."""
    text = f"{value:.{most}f}".rstrip("0")
    return len(text.split(".")[1]) if "." in text else 0


def nice_step(value: float, integer: bool) -> float | int:
    """A step for a number input: about a tenth of the value's order of magnitude."""
    if integer:
        return max(1, 10 ** max(0, int(math.log10(max(abs(value), 1))) - 1)) if value >= 100 else 1
    if not value:
        return 0.1
    return float(10 ** (math.floor(math.log10(abs(value))) - 1))


def number(
    path: str,
    label: str | None = None,
    *,
    integer: bool = False,
    lo: float | None = None,
    hi: float | None = None,
    default: Any = None,
    optional: bool = False,
    help: str | None = None,
    step: float | None = None,
    what: str | None = None,
    check: Check | None = None,
    key: str | None = None,
    fmt: str | None = None,
    placeholder: str | None = None,
    changes: Changes | None = None,
) -> Any:
    """A number input bound to a path (empty allowed when `optional`, showing `placeholder`; `changes`:
    see `bound`).

    The bounds are not given to Streamlit, which would refuse a typed value out of range in
    silence (a red mark in the box, nothing applied, nothing said): the change handler checks
    them and leaves a message naming the field (`what`, default the label) and its range.
    """
    name = path.rsplit(".", 1)[-1]
    value = current(path, default)
    cast: Callable[[Any], Any] = int if integer else float
    ref = value if value is not None else (lo if lo is not None else 1)
    step = cast(step) if step is not None else nice_step(float(ref), integer)
    kw: dict[str, Any] = {
        "check": check or range_check(lo, hi, value),
        "what": what,
        "key": key,
        "step": step,
        "help": help or HELP.get(name),
        "format": fmt or ("%d" if integer else f"%.{max(-math.floor(math.log10(step)), _decimals(ref), 0)}f"),
        "changes": changes,
    }
    if optional:
        kw["placeholder"] = placeholder or "default"
        # a box the browser may empty: created without `value=None` it sent a cleared box as 0, refused
        # as out of range where the caption says an empty field takes the default (a review)
        kw["value"] = None
    return bound(
        st.number_input,
        path,
        label or label_of(name),
        default=default,
        to_ui=lambda v: None if v is None else cast(v),
        from_ui=lambda v: None if v is None else cast(v),
        **kw,
    )


UNSET = "∅"
"""What a select box holds for a field that is unset (None), shown through `format_func(None)`."""


def select(
    path: str,
    options: Sequence[Any],
    label: str | None = None,
    *,
    default: Any = None,
    help: str | None = None,
    format_func: Callable[[Any], str] = str,
    horizontal: bool = False,
    slot: str | None = None,
    key: str | None = None,
    changes: Changes | None = None,
) -> Any:
    """A select box (or a segmented control when `horizontal`) bound to a path; None is a choice too
    (`changes`: the fields a choice moves with it, as `bound` takes them).

    With `slot`, a refused choice is kept for `local_problem(slot)` (see `bound`). `key`: where the
    labels of the choices depend on something else (the stack: "automatic (vLLM)"), a key that names
    it too, so that a change there makes a new widget: a browser holds a select box's choice as its
    label, and sent the old one back at the next edit, refused as a value ("'automatic (vLLM)' is not
    a profile of h100-sxm", a review).
    """
    name = path.rsplit(".", 1)[-1]
    value = current(path, default)
    opts = [UNSET if o is None else o for o in options]
    shown = UNSET if value is None else value
    if shown not in opts:
        opts.append(shown)
    kw: dict[str, Any] = {
        "options": opts,
        "default": default,
        "help": help or HELP.get(name),
        "format_func": lambda o: format_func(None if o == UNSET else o),
        "to_ui": lambda v: UNSET if v is None else v,
        "from_ui": lambda v: None if v == UNSET else v,
        "slot": slot,
        "key": key,
        "changes": changes,
    }
    if horizontal:
        return bound(st.segmented_control, path, label or label_of(name), required=True, **kw)
    return bound(st.selectbox, path, label or label_of(name), **kw)


def names(
    path: str, options: Sequence[str], label: str, *, help: str | None = None, placeholder: str = "any"
) -> Any:
    """A multiselect of names bound to a tuple-of-names field (names no longer offered are kept);
    `placeholder` says what choosing none means."""
    value = list(current(path, []) or [])
    opts = list(options) + [v for v in value if v not in options]
    return bound(
        st.multiselect,
        path,
        label,
        default=[],
        options=opts,
        help=help,
        to_ui=list,
        from_ui=list,
        placeholder=placeholder,
    )


def toggle(path: str, label: str | None = None, *, default: bool = False, help: str | None = None) -> Any:
    """A toggle bound to a boolean field."""
    name = path.rsplit(".", 1)[-1]
    return bound(st.toggle, path, label or label_of(name), default=default, help=help or HELP.get(name))


def slider(
    path: str,
    lo: float,
    hi: float,
    label: str | None = None,
    *,
    integer: bool = False,
    step: float | None = None,
    default: Any = None,
    help: str | None = None,
    fmt: str | None = None,
    disabled: bool = False,
) -> Any:
    """A slider bound to a numeric field; its range widens to hold the current value; `disabled` where the
    field is unused (a share a trace overrides moved and did nothing: a browser review)."""
    name = path.rsplit(".", 1)[-1]
    value = current(path, default)
    cast: Callable[[Any], Any] = int if integer else float
    if value is not None:
        hi = max(hi, float(value))
        lo = min(lo, float(value))
    kw: dict[str, Any] = {"min_value": cast(lo), "max_value": cast(hi), "help": help or HELP.get(name)}
    if step is not None:
        kw["step"] = cast(step)
    if fmt:
        kw["format"] = fmt
    if disabled:
        kw["disabled"] = True
    return bound(st.slider, path, label or label_of(name), default=default, to_ui=cast, from_ui=cast, **kw)
