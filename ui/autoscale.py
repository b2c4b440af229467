"""A pool's autoscaling on the Strategy page: on or off, the autoscaler, and its bounds.

Compact, inside the pool's card: a toggle sets or clears the pool's `autoscale` (`engine.scenario.
Autoscale`, its defaults when turned on); while on, the autoscaler (one of the registered
`autoscaler` policies, starting from its defaults when chosen), the minimum and initial instances
and the evaluation interval. The pool's instance count is the maximum. Every widget is bound to the
scenario by path, like the page's other pool fields, so share links carry it; a refused value
keeps the scenario and shows the engine's one-line message. Cooldowns and the cold start keep
their defaults here (a scenario file or share link may set them).
"""

from __future__ import annotations

import streamlit as st

from engine import policies
from engine.scenario import Autoscale, Pool
from ui import state
from ui.widgets import current, key_of, number


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


def pool_autoscale(pool: Pool, path: str) -> None:
    """The autoscaling widgets of the pool at `path` (a data-centre pool; an edge site's are fixed)."""
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
            help="The fewest instances the autoscaler keeps; the pool's Instances are the most.",
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
