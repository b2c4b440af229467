"""The Strategy page's failure drills: faults on pools and KV links, and what a lost pool does.

Split from app_pages/strategy.py (586 lines) with no change of behaviour.
"""

from typing import Any

import streamlit as st

from engine.scenario import LINK_FIELDS, Degrade, Fault, Scenario
from ui import drill, state
from ui.bound import select
from ui.field_help import FIELD_HELP
from ui.forms import list_editor, model_form
from ui.text import plain


def fault_kind(sc: Scenario, i: int, f: dict[str, Any]) -> None:
    """A fault's kind, which moves the fields only the other kind has: back to instances, the link's
    factor and down-policy to their defaults (they were kept, hidden, and refused the switch); to a link,
    onto a prefill pool's link when the fault named another pool (only a prefill pool sends KV)."""
    path = f"faults[{i}]"
    pools = [p.name for p in sc.deployment.pools]
    prefill = [p.name for p in sc.deployment.pools if p.role == "prefill"]
    moved: dict[str, str] = st.session_state.setdefault("fg:fault-moved", {})  # path -> the pool it left

    def moves(kind: str) -> tuple[dict[str, Any], str]:
        made: dict[str, Any] = {f"{path}.kind": kind}
        said: list[str] = []
        if kind == "instances":  # the link's fields back to their defaults, and the pool it had
            made |= {f"{path}.{k}": Fault.model_fields[k].default for k in LINK_FIELDS}
            if any(
                f.get(k, Fault.model_fields[k].default) != Fault.model_fields[k].default for k in LINK_FIELDS
            ):
                said.append("its link factor and down-policy back to their defaults")
            if (was := moved.pop(path, None)) in pools:
                made[f"{path}.pool"] = was
                said.append(f"back on {was}, the pool it had")
            return made, f"Fault {i + 1}: {'; '.join(said)}." if said else ""
        if f.get("pool") not in prefill and prefill:
            made[f"{path}.pool"], moved[path] = prefill[0], str(f.get("pool"))
            said.append(f"Fault {i + 1} is now on {prefill[0]}'s KV link: only a prefill pool sends KV.")
        return made, " ".join(said)

    def said_here(kind: str) -> tuple[dict[str, Any], str]:  # said beside the card too, not only at the top
        made, said = moves(kind)  # (the page's notices sat 2,700 px above the card: a review)
        if said:
            st.toast(plain(said), icon=":material/info:")
        return made, said

    select(
        f"{path}.kind",
        ["instances", "link"],
        "Kind",
        default="instances",
        changes=said_here,
        horizontal=True,
        help=FIELD_HELP["Fault.kind"],
    )


def fault_title(i: int, f: dict[str, Any]) -> str:
    """A fault card's heading: what it takes, where and when."""
    if f.get("kind") == "link":  # a factor of 0.001 read "at 0%", as if the link were down (a review)
        factor = f.get("link_factor", Fault.model_fields["link_factor"].default)
        what = f"{f.get('pool')}'s KV link " + ("down" if not factor else f"at {factor * 100:.3g}%")
    else:
        what = f"{f.get('instances', 1)} × {f.get('pool')} lost"
    at = f.get("at_s")
    return (
        f"Fault {i + 1}: {what} at {at:,.4g} s" if isinstance(at, int | float) else f"Fault {i + 1}: {what}"
    )


def failure_drills(sc: Scenario) -> None:
    """The Strategy page's failure drills: the faults' cards, what happens while a pool is lost or
    overloaded (fallback, degrade), and each fallback run on these faults (`drill.fallback_comparison`)."""
    st.subheader(
        "Failure drills", help="Take instances out at a time and for a while; watch TTFT and failed requests."
    )
    pools = [p.name for p in sc.deployment.pools]
    list_editor(
        "faults",
        Fault,
        choices={"pool": pools},
        add_label="Add a fault",
        new_item=lambda: {
            "at_s": round(sc.duration_s / 2, 1),
            "pool": pools[-1],
            "instances": 1,
            "duration_s": round(sc.duration_s / 5, 1),
        },
        title=fault_title,
        skip=lambda f: (
            ("kind", "instances", "in_flight") if f.get("kind") == "link" else ("kind", *LINK_FIELDS)
        ),
        lead=lambda i, f: fault_kind(sc, i, f),
    )
    with st.container(border=True):
        st.markdown("**When a pool is lost or overloaded**", help=(Degrade.__doc__ or "").strip())
        if sc.deployment.mode == "disaggregated":
            select(
                "deployment.fallback",
                ["none", "colocated"],
                "Fallback while every prefill instance is down",
                help="none: arrivals are rejected; colocated: decode instances serve whole requests until prefill "
                "is back. Spilling to another pool of a role needs no setting: routing spans every live pool.",
            )
        model_form("deployment.degrade", Degrade, columns=4)
    drill.fallback_comparison(state.scenario())  # each fallback on these faults (ui/drill.py)
