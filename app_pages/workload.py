"""Workload mix: request classes, their lengths and prefixes, and how requests arrive (or a trace)."""

import streamlit as st

from engine.core import MAX_CLASSES
from engine.scenario import MultiTurn, Prefix
from engine.serving import whole_run
from ui import layout, state, traces
from ui import workload as wl
from ui.bound import bound, current, number, slider
from ui.forms import add_item, model_form, remove_item
from ui.text import plain

res = layout.page(
    "Workload mix",
    "Who sends what, and when. Every deployment is offered the same requests for the same workload and "
    "seed, so comparisons are paired (a session's later turns wait on its answers, so a slower "
    "deployment is sent fewer of them).",
)
sc = state.scenario()

st.subheader("Where requests come from")
source = traces.source_of(sc)
if st.session_state.get("fg:source") != source:
    st.session_state["fg:source"] = source
st.segmented_control(
    "Source",
    ["generated", "shipped", "upload"],
    key="fg:source",
    on_change=traces.source_changed,
    required=True,
    format_func={
        "generated": "Generated from classes",
        "shipped": "Shipped trace",
        "upload": "Upload a trace",
    }.get,
    help="Generated: arrivals and lengths drawn from the classes below. A trace replays real arrival times and lengths.",
)

c1, c2, c3, c4 = st.columns(4)
with c1:
    longest, why = wl.window_bound(sc)
    number(
        "duration_s",
        "Window (s)",
        lo=1.0,
        hi=longest,
        check=wl.window_check(longest, why, sc.duration_s),
        help="Arrivals from the warm-up's end to the window's are measured; the run then drains until they all "
        "end. A window that "
        "would end inside the warm-up shortens the warm-up to keep its share of the window.",
        changes=wl.window_with_warmup,
    )
with c2:
    if whole_run(sc):  # its box changed nothing, the chart shaded it 'not measured' (a review)
        st.text_input(  # a box like its neighbours (a label in body text stood out: a review), off
            "Warm-up (s)",
            value="none: whole run",  # (the sentence cut at 1,100 px: its help says it whole)
            disabled=True,
            key="fg-warmup-whole-run",
            help="Not used: an offline batch or a closed loop is measured over its whole run.",
        )
    else:
        number(
            "warmup_s",
            "Warm-up (s)",
            lo=0.0,
            # below the window (5,000 s in a 600 s window read "the allowed range is 0 to 86,400": a review)
            hi=sc.duration_s,
            help="Requests arriving before this are not measured; it must end before the window does.",
        )
with c3:
    number(
        "seed",
        "Seed",
        integer=True,
        lo=0,
        hi=2**31 - 1,
        # the browser keeps a whole-number box's last whole number when a decimal is typed, saying nothing: said
        # here (a review)
        help="Every random draw of the run comes from here: a whole number from 0 to 2,147,483,647 (a decimal "
        "typed is not taken).",
    )
with c4:
    number(
        "resolution_s",
        "Time bin (s)",
        lo=0.01,  # the schema's (engine.scenario.model.Scenario.resolution_s)
        hi=3600.0,
        help="Width of the time-series bins on the Results page.",
    )

observed = res.requests["arrival_s"].to_numpy() if res is not None else None
if source == "generated":
    wl.arrival_editor(sc, observed)
elif source == "shipped":
    traces.trace_editor(sc)
    traces.trace_arrivals(sc, observed)
    traces.trace_lengths(sc, res.requests if res is not None else None)
else:
    traces.upload_editor()
    if sc.workload.trace is not None:
        st.caption(plain(traces.replaying(sc.workload.trace)))
        traces.trace_editor(sc)
        traces.trace_arrivals(sc, observed)
        traces.trace_lengths(sc, res.requests if res is not None else None)

st.subheader(
    "Request classes",
    help="Each class has its share of traffic, a priority, length distributions, shared "
    "prefixes, multi-turn sessions and its own SLO (set on the SLO page).",
)
if sc.workload.trace is not None:
    st.caption(
        "With a trace, lengths and arrivals come from the file; classes name SLOs (a plain CSV may give each row a class)."
    )
classes = current("workload.classes", [])
shares, sent = sc.workload.shares(), sc.workload.request_shares()


def share_label(i: int) -> str:
    """A class's share as it acts: of the sessions, and of the requests where sessions differ in turns;
    unused with a trace (the label said '20% of traffic' beside 43% of the requests: a review)."""
    if sc.workload.trace is not None:
        return "Share (unused: the trace gives each row its class)"
    if len(sc.workload.classes) == 1:  # moving it changed nothing but enabled Reset (a review)
        return "Share (unused: one class takes all the traffic)"
    if len({c.multi_turn.turns_mean for c in sc.workload.classes}) > 1:  # else the two shares are one
        return f"Share of sessions (now {shares[i]:.0%}, {sent[i]:.0%} of requests)"
    return f"Share (now {shares[i]:.0%} of traffic)"


for i in range(len(classes)):
    path = f"workload.classes[{i}]"
    with st.container(border=True):
        h1, h2, h3, h4 = st.columns([3, 3, 2, 1], vertical_alignment="bottom")
        with h1:
            bound(st.text_input, f"{path}.name", "Class name", max_chars=64)
        with h2:
            slider(
                f"{path}.share", 0.01, 1.0, share_label(i), step=0.01, disabled=sc.workload.trace is not None
            )
        with h3:
            number(
                f"{path}.priority",
                "Priority" if len(classes) > 1 else "Priority (unused: one class)",
                what="Priority",  # a standing refusal kept "(unused: one class)" after a class was added
                integer=True,
                lo=0,
                hi=100,
            )
        with h4:
            st.button(
                "",
                key=f"fg:rm:{path}",
                on_click=remove_item,
                args=("workload.classes", i),
                help="Remove this class",
                disabled=len(classes) < 2,
                icon=":material/delete:",
            )
        if sc.workload.trace is None:
            d1, d2 = st.columns(2)
            with d1:
                wl.dist_editor(f"{path}.input", "Prompt tokens", sc.seed)
            with d2:
                wl.dist_editor(f"{path}.output", "Output tokens", sc.seed)
            p1, p2 = st.columns(2)
            with p1:
                st.markdown("**Shared prefix**", help=(Prefix.__doc__ or "").strip())
                model_form(f"{path}.prefix", Prefix, columns=2)
                if (
                    pre := sc.workload.classes[i].prefix.tokens
                ) > 0:  # the preview above is without it (a review)
                    st.caption(
                        f"Every prompt the run sends carries these {pre:,} tokens before its own: longer than "
                        "the prompt-token preview above (its mean and its Max are of the prompt's own tokens)."
                    )
            with p2:
                st.markdown("**Multi-turn sessions**", help=(MultiTurn.__doc__ or "").strip())
                model_form(f"{path}.multi_turn", MultiTurn, columns=2)
                if sc.workload.classes[i].multi_turn.turns_mean > 1:  # the preview is of one turn's tokens
                    st.caption(
                        "Each later turn's prompt also carries the conversation so far, so the prompts "
                        "the run sends are longer than the prompt-token preview above, which is of a "
                        "turn's new tokens (size the pools from the prompts Results reports)."
                    )  # (a review sized from 512 where the run sent a mean of 1,714)
if len(classes) < MAX_CLASSES:
    st.button(
        "Add a class",
        on_click=add_item,
        args=(
            "workload.classes",
            lambda: wl.class_template(len(classes), sc.workload.classes[0].slo.model_dump(exclude_none=True)),
        ),
        icon=":material/add:",
    )
