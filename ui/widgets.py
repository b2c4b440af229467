"""Widgets bound to scenario fields by path, and forms generated from the Scenario model.

A bound widget shows the value at a field path (``workload.arrival.rate_rps``) and, when the
user changes it, calls `ui.state.override` with that path: the scenario is rebuilt and
validated, never mutated, and a refused value snaps back with a message naming the field (and,
for a number out of its bounds, the allowed range) that stays until the user dismisses it.

`model_form` builds the widgets of a whole pydantic model from its fields: booleans become
toggles, literals select boxes, bounded numbers number inputs checked against their bounds, nested models
bordered sections, tuples of models list editors, and `PolicySpec` fields a picker over the
policy registry plus one widget per knob (the policy dataclass's fields). A field or a policy
the engine adds later appears without a page change.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin

import streamlit as st
from pydantic import BaseModel

from engine import policies
from engine.core import ScenarioError
from engine.scenario import PolicySpec, get_path
from ui import state
from ui.text import plain

HELP: dict[str, str] = {
    "rate_rps": "Mean arrival rate over the window, in requests per second (sessions' later turns included).",
    "share": "This class's share of the traffic; shares are normalised over the classes.",
    "priority": "Higher is more important: served first under the priority queue, shed last by admission control.",
    "ttft_ms": "Time to first token target: arrival to first output token, queueing and KV transfer included.",
    "tpot_ms": "Time per output token target: (completion − first token) / (output tokens − 1).",
    "e2e_ms": "Optional end-to-end deadline: arrival to completion.",
    "percentile": "The class passes when this percentile of its TTFT and of its TPOT is within target.",
    "tp": "Tensor parallelism: chips that split every layer's weights and KV cache, exchanging partial "
    "results twice a layer (all-reduce over the scale-up link). An instance is tp x dp chips per pipeline "
    "stage, times pp stages.",
    "pp": "Pipeline stages per instance: each stage holds 1/pp of the layers on its own tp x dp chips. Up to pp "
    "micro-batches are in flight, one per stage, so a full pipeline multiplies throughput; a lone request "
    "passes the stages one after another (bubbles) plus a hand-off between stages.",
    "dp": "Attention data parallelism: dp ranks of tp chips, each with its own copy of the attention and dense "
    "weights and its own requests' KV cache, so the KV cache is not replicated across tensor-parallel chips. "
    "With expert parallelism the routed experts are spread over all tp x dp chips (DeepSeek's layout).",
    "ep": "Expert parallelism (MoE models): the routed experts are spread over ep ranks, one copy per group of "
    "ep chips. Each MoE layer waits for its busiest rank (see Expert imbalance) and adds an all-to-all "
    "dispatch and combine, over the scale-up link while ep fits its domain, else the scale-out NICs. Must "
    "divide tp x dp.",
    "count": "Instances in the pool.",
    "cv": "Coefficient of variation of the gaps between arrivals: 1 is Poisson, above 1 is bursty.",
    "shape": "How the rate varies over the window; built-in shapes keep rate_rps as the mean.",
    "peak_factor": "Peak rate over the mean (ramp: end over start; peak: the middle fifth; diurnal: midday).",
    "max_batch": "Most requests in one running batch of an instance (of each rank, in a pool with DP ranks).",
    "token_budget": "Most tokens (prefill chunks plus decodes) in one iteration (of each rank, with DP ranks).",
    "chunked_prefill": "Split long prompts into chunks that share iterations with running decodes.",
    "chunk_tokens": "Prefill tokens per chunk when chunked prefill is on.",
    "mem_fraction": "Share of each chip's HBM (in GiB, as vendors state it) usable for weights, one forward pass of activations and the KV cache.",
    "eager": "The stack runs without CUDA/HIP graphs (vLLM's --enforce-eager): every layer of every iteration "
    'pays a kernel-launch cost, 0.075 ms (docs/calibration.md, "Eager mode").',
    "bandwidth_gb_s": "KV link bandwidth per instance pair in GB/s; empty means the sender's scale-out NICs.",
    "latency_ms": "Fixed latency of one KV transfer.",
    "overlap": "Send layer l's KV while layer l+1 computes: only the part that outlasts the prefill is exposed.",
    "enabled": "Switch this feature on.",
    "capacity_gb": "Capacity of this cache tier (per instance for host memory, in all for the pooled store).",
    "usd_per_gb_hour": "Price of cache capacity per GB-hour (default: server DRAM amortised over three years).",
    "block_tokens": "Tokens per hashed KV block: the unit of prefix reuse.",
    "preemption": "What happens when decode memory runs out: none reserves the whole output up front; "
    "recompute and swap reserve as they go and evict a victim when full.",
    "at_s": "When the fault starts, in seconds from the start of the run.",
    "instances": "Instances of the pool lost.",
    "duration_s": "How long they stay lost (empty: for good).",
    "in_flight": "What happens to requests running on a lost instance: retried elsewhere, or failed.",
    "tokens": "Tokens of every request.",
    "mean": "Mean tokens.",
    "p99": "99th percentile of tokens (must exceed the mean).",
    "max_tokens": "Draws are clipped to this many tokens.",
    "time_scale": "Replay speed: 2 replays the trace twice as fast (twice the load).",
    "max_requests": "Replay at most this many requests of the trace.",
    "start_s": "Start this many seconds into the trace.",
    "turns_mean": "Mean turns per session; each later turn's prompt repeats the whole conversation so far.",
    "think_time_s": "Mean pause before the next request (between turns, or of a closed-loop client).",
    "groups": "Distinct shared prefixes (system prompts) requests draw from.",
    "requests": "Requests present at t = 0.",
    "clients": "Clients, each sending its next request when its last one ends.",
    "power_cap_kw": "The most these chips may draw together; over it they run at a lower clock. Empty: no cap.",
}
"""Help text of scenario fields by name (a field's own description wins when it has one)."""

UNITS: tuple[tuple[str, str], ...] = (
    ("_usd_per_gb_hour", "$/GB-h"), ("_gb_s", "GB/s"), ("_tb_s", "TB/s"), ("_gb", "GB"), ("_ms", "ms"),
    ("_rps", "req/s"), ("_tokens", "tokens"), ("_usd", "$"), ("_tflops", "TFLOP/s"), ("_w", "W"), ("_s", "s"),
    ("_mbps", "Mb/s"), ("_us", "µs"), ("_kw", "kW"),
)  # fmt: skip
_ACRONYMS = {
    w: w.upper() for w in ("tp", "pp", "dp", "ep", "cv", "kv", "hbm", "ttft", "tpot", "e2e", "tbt", "rtt")
}


LABELS: dict[str, str] = {
    "eager": "Eager mode",
    "tdp_w": "TDP (W)",
    "idle_w": "Idle power (W)",
    "usd_per_hour": "Price ($/chip-hour)",
    "usd_per_gb_hour": "Price ($/GB-hour)",
    "usd_per_kwh": "Electricity ($/kWh)",
    "pue": "PUE",
    "hosting_usd_per_kw_month": "Hosting ($/kW-month)",
    "amortisation_years": "Amortisation (years)",
    "server_power_factor": "Server power / chip TDP",
    "hbm": "Cache in HBM",
    "turns_mean": "Turns per session (mean)",
}
"""Labels that the name-to-label rule would get wrong."""


def label_of(name: str) -> str:
    """A field name as a label with its unit: ``capacity_gb`` -> ``Capacity (GB)``."""
    if name in LABELS:
        return LABELS[name]
    unit = ""
    for suffix, text in UNITS:
        if name.endswith(suffix) and name != suffix.lstrip("_"):
            name, unit = name[: -len(suffix)], text
            break
    words = [_ACRONYMS.get(w, w) for w in name.split("_") if w]
    text = " ".join(words)
    text = text[:1].upper() + text[1:]
    return f"{text} ({unit})" if unit else text


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


def _sync(key: str, value: Any) -> None:
    if st.session_state.get(key, _MISSING) != value:
        st.session_state[key] = value


Check = Callable[[Any], str | None]
"""Says why a widget's new value is refused before the scenario sees it (None: go ahead)."""


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
) -> None:
    value = st.session_state[key]
    value = from_ui(value) if from_ui else value
    problem = check(value) if check else None
    if problem:  # the widget snaps back on the rerun (see `bound`); the message stays until dismissed
        state.notify(f"{what} ({path}): {problem}", key=state.field_key([path]))
        return
    if slot is None:
        state.override({path: value}, what=what)  # the scenario's message names the path
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
    **kwargs: Any,
) -> Any:
    """Render `widget` showing the value at `path`; a change overrides that path in the scenario.

    A refused change (by `check`, or by the scenario's validation) leaves a message naming the
    field (`what`, default the label, and its path) that stays until dismissed. With `slot`, the
    scenario's refusal is kept for `local_problem(slot)` to show beside the widget instead. `key`
    is needed only for a second widget on the same path (the first is keyed by `key_of(path)`).
    """
    value = current(path, default)
    key = key or key_of(path)
    _sync(key, to_ui(value) if to_ui else value)
    args = (path, key, from_ui, what or label, check, slot)
    return widget(label, key=key, on_change=_on_change, args=args, **kwargs)


def show_value(value: Any) -> str:
    """A value as a message names it: numbers as `show_number` writes them, anything else as text."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return show_number(value)
    return str(value)


def show_number(value: float) -> str:
    """A number as a message shows it: 2000000 -> 2,000,000; 0.25 -> 0.25."""
    v = float(value)
    return f"{int(v):,}" if v.is_integer() and abs(v) < 1e15 else f"{v:,.6g}"


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
) -> Any:
    """A number input bound to a path (empty allowed when `optional`, showing `placeholder`).

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
    }
    if optional:
        kw["placeholder"] = placeholder or "default"
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
) -> Any:
    """A select box (or a segmented control when `horizontal`) bound to a path; None is a choice too.

    With `slot`, a refused choice is kept for `local_problem(slot)` (see `bound`).
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
        st.multiselect, path, label, default=[], options=opts, help=help, to_ui=list, from_ui=list,
        placeholder=placeholder,
    )  # fmt: skip


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
) -> Any:
    """A slider bound to a numeric field; its range widens to hold the current value."""
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
    return bound(st.slider, path, label or label_of(name), default=default, to_ui=cast, from_ui=cast, **kw)


# --- fields described from the model ---------------------------------------------------------


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


def field_widget(
    path: str,
    name: str,
    shape: Shape,
    *,
    default: Any = None,
    choices: Sequence[Any] | None = None,
    help: str | None = None,
) -> None:
    """One widget for one scalar field."""
    label = label_of(name)
    tip = help or HELP.get(name)
    if choices is not None:
        select(path, choices, label, default=default, help=tip)
    elif shape.kind == "bool":
        toggle(path, label, default=bool(default), help=tip)
    elif shape.kind == "literal":
        select(path, shape.options, label, default=default, help=tip)
    elif shape.kind in ("int", "float"):
        number(
            path,
            label,
            integer=shape.kind == "int",
            lo=shape.lo,
            hi=shape.hi,
            default=default,
            optional=shape.optional,
            help=tip,
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
                field_widget(
                    join(path, n), n, shapes[n], default=default, choices=choices.get(n), help=f.description
                )
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
                model_form(sub, sh.cls, columns=columns)
        elif sh.kind == "models":
            list_editor(sub, sh.cls)


ON_OFF = {True: "on", False: "off"}


def _to_defaults(path: str, names: Sequence[str]) -> None:
    state.override({join(path, n): None for n in names})


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
    placeholder, a yes/no field offers "default (on)" beside on and off. Typing a value overrides
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
                select(join(path, n), [None, True, False], label_of(n), help=tip,
                       format_func=lambda v, e=eff: f"{whose} default ({ON_OFF.get(e, e)})" if v is None else ON_OFF[v])  # fmt: skip
            elif sh.kind in ("int", "float"):
                shown = f"{eff:,}" if isinstance(eff, int | float) else str(eff)
                number(join(path, n), label_of(n), integer=sh.kind == "int", lo=sh.lo, hi=sh.hi, optional=True,
                       placeholder=f"{shown} (default)", help=tip)  # fmt: skip
            else:
                field_widget(join(path, n), n, sh, help=tip)
    overridden = [n for n in names if current(join(path, n)) is not None]
    st.button(
        f"Back to {whose} defaults", key=f"fg:defaults:{path}", on_click=_to_defaults, args=(path, names),
        disabled=not overridden, icon=":material/restart_alt:", type="tertiary",
        help="Clear every value set here, so each field takes the default again.",
    )  # fmt: skip


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
    key = key_of(f"{path}.name")
    _sync(key, name)
    helps = "\n".join(f"- **{n}**: {table[n].help or (table[n].__doc__ or '').strip()}" for n in names)
    st.selectbox(
        label_of(kind), options, key=key, on_change=_policy_changed, args=(path, key), help=helps,
        format_func=lambda o: f"the stack's ({by_stack})" if o == STACK_DEFAULT else str(o),
    )  # fmt: skip
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
) -> None:
    """Edit a tuple of models: one bordered form per item with a remove button, and an add button."""
    items: list[dict[str, Any]] = list(current(path, []) or [])
    for i, item in enumerate(items):
        with st.container(border=True):
            head, rm = st.columns([5, 1], vertical_alignment="center")
            head.markdown(f"**{plain(title(i, item)) if title else f'{label_of(cls.__name__)} {i + 1}'}**")
            rm.button(
                "Remove",
                key=f"fg:rm:{path}[{i}]",
                on_click=remove_item,
                args=(path, i),
                icon=":material/delete:",
            )
            model_form(f"{path}[{i}]", cls, choices=choices)
    if new_item is not None and (max_items is None or len(items) < max_items):
        st.button(
            add_label, key=f"fg:add:{path}", on_click=add_item, args=(path, new_item), icon=":material/add:"
        )
