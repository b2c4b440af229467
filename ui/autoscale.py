"""A pool's autoscaling on the Strategy page: on or off, the autoscaler, its knobs, bounds, cooldowns, cold start.

Compact, inside the pool's card: a toggle sets or clears the pool's `autoscale` (`engine.scenario.
Autoscale`, its defaults when turned on); while on, the autoscaler (one of the registered
`autoscaler` policies, starting from its defaults when chosen), the minimum and initial instances
and the evaluation interval. The pool's instance count is the maximum. Below them, folded, the
autoscaler's own knobs (its target, thresholds or headroom), the scale-up and scale-down cooldowns
and the cold start (start-up, where the weights load from and how fast, warm-up). Every widget is
bound to the scenario by path, like the page's other pool fields, so share links carry it. Bounds
come from the engine's own fields (the policy's annotated knobs, the pydantic fields of `Autoscale`
and `ColdStart`); a value out of them is refused with the field and its range named, and a value
the engine refuses otherwise keeps the scenario and shows the engine's one-line message.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import streamlit as st

from engine import policies
from engine.scenario import Autoscale, ColdStart, Pool
from ui import state
from ui.bound import current, key_of, number
from ui.forms import field_widget
from ui.labels import show_number
from ui.shapes import Shape, field_shape, shape_of

KNOB_LABELS = {
    "target": "Busy target",
    "up_above": "Up above (queued)",
    "down_below": "Down at or below",
    "busy_below": "Down if busy below",
    "headroom": "Headroom (share)",
    "predict": "Prediction",
}
"""Labels of the built-in autoscalers' knobs (a knob not named here is labelled from its name)."""

STORAGE_LABELS = {"nvme": "local NVMe", "network": "network storage", "peer": "a running instance's GPUs"}
"""What each weights tier is, for the help."""


def _switched(path: str, key: str) -> None:
    """The toggle moved: set the pool's autoscaling to its defaults, or clear it."""
    on = bool(st.session_state[key])
    state.override({path: {} if on else None}, what="Autoscale")


def _policy_chosen(path: str, key: str) -> None:
    """Another autoscaler: it starts from its own defaults (the old one's knobs would not fit it)."""
    state.override({path: {"name": st.session_state[key]}}, what="Autoscaler")


def _policy_help() -> str:
    table = policies.registered("autoscaler")
    return "\n".join(f"- **{n}**: {table[n].help or (table[n].__doc__ or '').strip()}" for n in sorted(table))


def pool_autoscale(pool: Pool, path: str, weights_gb: float | None = None) -> None:
    """The autoscaling widgets of the pool at `path` (a data-centre pool; an edge site's are fixed);
    `weights_gb`, one instance's weights, lets the cold start be said as a total."""
    if pool.tier != "datacenter":
        return
    at = f"{path}.autoscale"
    key = key_of(f"{at}:on")
    on = pool.autoscale is not None
    if st.session_state.get(key) != on:
        st.session_state[key] = on
    st.toggle(
        "Autoscale",
        key=key,
        on_change=_switched,
        args=(at, key),
        help=(Autoscale.__doc__ or "").strip()
        + f" The pool's {pool.count} instances are the most it scales to; a new instance is billed from "
        "its request and serves after its cold start (docs/autoscaling.md).",
    )
    if pool.autoscale is None:
        return
    left, right = st.columns(2)
    with left:
        pkey = key_of(f"{at}.policy.name")
        name = pool.autoscale.policy.name
        if st.session_state.get(pkey) != name:
            st.session_state[pkey] = name
        st.selectbox(
            "Autoscaler",
            sorted(policies.registered("autoscaler")),
            key=pkey,
            on_change=_policy_chosen,
            args=(f"{at}.policy", pkey),
            help=_policy_help(),
        )
        # no bounds of the page's own: a value out of range gets the engine's message, which names
        # the pool's count where that is the limit
        number(
            f"{at}.min_instances",
            "Min instances",
            integer=True,
            default=1,
            help="The fewest instances the autoscaler keeps; the pool's Max instances are the most.",
        )
    with right:
        number(
            f"{at}.interval_s",
            "Interval (s)",
            default=30.0,
            help="How often the autoscaler reads the pool's load and decides.",
        )
        number(
            f"{at}.initial_instances",
            "Initial instances",
            integer=True,
            optional=True,
            placeholder=f"{current(f'{at}.min_instances', 1)} (the min)",
            help="Instances warm at the start of the run; empty: the minimum.",
        )
    pool_settings(pool, path, weights_gb)


def allowed(shape: Shape) -> str:
    """The allowed range of a bounded number, as its help says it ('' when unbounded)."""
    if shape.lo is None and shape.hi is None:
        return ""
    lo = "any" if shape.lo is None else show_number(shape.lo)
    hi = "any" if shape.hi is None else show_number(shape.hi)
    return f" Allowed: {lo} to {hi}."


def _bounded(path: str, label: str, shape: Shape, default: Any, help_: str, **kw: Any) -> None:
    """The field's widget (`forms.field_widget`) under its own label, with its bounds said in its help."""
    field_widget(
        path, path.rsplit(".", 1)[-1], shape, default=default, help=help_ + allowed(shape), label=label, **kw
    )


def knob_shapes(name: str) -> list[tuple[str, Shape, Any, str]]:
    """The knobs of the registered autoscaler `name`: (knob, widget shape with its bounds, default, help)."""
    cls = policies.registered("autoscaler")[name]
    hints = typing.get_type_hints(cls, include_extras=True)  # the bounds live in the annotations
    return [
        (f.name, shape_of(hints[f.name]), f.default, str((f.metadata or {}).get("help", "")))
        for f in dataclasses.fields(cls)
    ]


def _field(cls: Any, name: str) -> tuple[Shape, Any, str]:
    f = cls.model_fields[name]
    return field_shape(cls, name), f.default, (f.description or "")


COOLDOWN_HELP = {
    "up_cooldown_s": "After a scale-up, how long before the next one.",
    "down_cooldown_s": "After any change, how long before a scale-down (keeps a pool from flapping).",
}
COLD_HELP = {
    "startup_s": "Scheduling the pod, starting the container and the serving engine, before the weights load "
    "(default: an assumption, docs/autoscaling.md).",
    "warmup_s": "After the weights: capturing CUDA graphs, compiling kernels (default: an assumption).",
    "storage": "Where a new instance loads its weights from; its tier sets the bandwidth unless stated: "
    + "; ".join(f"{t}: {STORAGE_LABELS[t]}, {gb:g} GB/s" for t, gb in ColdStart.TIERS.items())
    + " (sources: docs/autoscaling.md).",
    "load_gb_s": "Weight-loading bandwidth of one instance; empty: the storage tier's default.",
}


def _settings(at: str, spec: Autoscale) -> None:
    """The autoscaler's knobs, the cooldowns and the cold start, two to a row."""
    knobs = knob_shapes(spec.policy.name)
    boxes: list[tuple[str, str, Shape, Any, str, dict[str, Any]]] = [
        (f"{at}.policy.{k}", KNOB_LABELS.get(k, k.replace("_", " ").capitalize()), sh, d, h, {})
        for k, sh, d, h in knobs
    ]
    for name, label in (
        ("up_cooldown_s", "Up cooldown (s)"),
        ("down_cooldown_s", "Down cooldown (s)"),
    ):
        sh, d, _ = _field(Autoscale, name)
        boxes.append((f"{at}.{name}", label, sh, d, COOLDOWN_HELP[name], {}))
    tier = ColdStart.TIERS[spec.cold_start.storage]
    for name, label in (
        ("startup_s", "Start-up (s)"),
        ("warmup_s", "Warm-up (s)"),
        ("storage", "Weights from"),
        ("load_gb_s", "Load (GB/s)"),
    ):
        sh, d, _ = _field(ColdStart, name)
        extra = {"placeholder": f"{tier:g} (its tier)"} if name == "load_gb_s" else {}
        boxes.append((f"{at}.cold_start.{name}", label, sh, d, COLD_HELP[name], extra))
    cols = st.columns(2)
    for i, (path, label, sh, d, h, kw) in enumerate(boxes):
        with cols[i % 2]:
            _bounded(path, label, sh, d, h, **kw)


def pool_settings(pool: Pool, path: str, weights_gb: float | None = None) -> None:
    """The autoscaled pool's knobs, cooldowns and cold start, folded under the pool's autoscaling fields."""
    spec = pool.autoscale
    if spec is None or pool.tier != "datacenter":
        return
    knobs = ", ".join(f"{k} {v}" for k, v in policies.build_autoscaler(spec.policy.as_dict()).knobs().items())
    with st.expander(f"{spec.policy.name} autoscaler: knobs, cooldowns, cold start"):
        st.caption(
            (f"{knobs}; " if knobs else "")
            + f"cooldowns {spec.up_cooldown_s:g} s up, {spec.down_cooldown_s:g} s down; a new instance serves after "
            f"{spec.cold_start.startup_s:g} s + its weights at {spec.cold_start.load_bandwidth_gb_s():g} GB/s + "
            f"{spec.cold_start.warmup_s:g} s"
            + (
                f" = {spec.cold_start.seconds(weights_gb * 1e9):,.0f} s for its {weights_gb:,.0f} GB"
                if weights_gb is not None
                else ""
            )
            + "."
        )
        _settings(f"{path}.autoscale", spec)
