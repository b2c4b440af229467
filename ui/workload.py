"""Widgets of the Workload page: length distributions with previews, arrivals, traces, uploads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from engine.core import (
    MAX_CLIENTS,
    MAX_DURATION_S,
    MAX_RATE_RPS,
    MAX_REQUESTS,
    MAX_TOKENS_PER_REQUEST,
    ScenarioError,
)
from engine.explain import (
    arrival_histogram,
    length_columns,
    length_histogram,
    length_stats,
    peak_of,
    rate_cap_rps,
    rate_curve,
    rate_stops,
    round_down,
    runnable_duration_s,
    runnable_rate_rps,
)
from engine.scenario import USED_BY_KIND, Arrival, LengthDist, Scenario, window_changes
from engine.serving import whole_run
from ui import charts, export, state, timeline
from ui.bound import bound, current, key_of, nice_step, number, select, slider
from ui.forms import model_form
from ui.labels import HELP, label_of, show_number
from ui.text import plain

DIST_FIELDS = {
    "constant": ("tokens",),
    "uniform": ("low", "high"),
    "lognormal": ("mean", "p99"),
    "empirical": ("path", "column"),
}
"""The fields each kind of length distribution uses (max_tokens applies to all)."""


@st.cache_data(max_entries=64, show_spinner=False)
def _histogram(dist_json: str, seed: int) -> tuple[pd.DataFrame, dict[str, float]]:
    dist = LengthDist.model_validate_json(dist_json)
    return length_histogram(dist, seed), length_stats(dist, seed)


def _converted(dist: dict[str, Any], kind: str) -> dict[str, Any]:
    """A distribution of another kind with about the same mean."""
    mean = float(
        dist.get("mean")
        or dist.get("tokens")
        or ((dist.get("low") or 1) + (dist.get("high") or 1)) / 2
        or 512
    )
    mean = max(mean, 2.0)
    out: dict[str, Any] = {"kind": kind, "max_tokens": dist.get("max_tokens", MAX_TOKENS_PER_REQUEST)}
    if kind == "constant":
        out["tokens"] = round(mean)
    elif kind == "uniform":
        out.update(low=max(1, round(mean / 2)), high=max(2, round(mean * 1.5)))
    elif kind == "lognormal":
        out.update(mean=round(mean), p99=round(mean * 5))
    else:
        cols = length_columns()
        path, column = cols[0] if cols else ("data:traces/vidur_lengths/lengths.csv", "num_prefill_tokens")
        out.update(path=path, column=column)
    return out


def _kind_changed(path: str, key: str) -> None:
    state.override({path: _converted(current(path, {}) or {}, st.session_state[key])})


def _with_room(path: str) -> Callable[[Any], tuple[dict[str, Any], str]]:
    """A constant length's change, its (hidden) maximum raised to hold it: a constant is never clipped."""

    def made(tokens: Any) -> tuple[dict[str, Any], str]:
        room = max(int(current(f"{path}.max_tokens", MAX_TOKENS_PER_REQUEST) or 1), int(tokens or 1))
        return {f"{path}.tokens": tokens, f"{path}.max_tokens": room}, ""

    return made


def dist_editor(path: str, title: str, seed: int) -> None:
    """A length distribution: its kind, the fields that kind needs, and a histogram of its draws."""
    dist = current(path, {}) or {}
    kind = dist.get("kind", "constant")
    key = key_of(f"{path}.kind")
    if st.session_state.get(key) != kind:
        st.session_state[key] = kind
    st.selectbox(  # (a segmented control cut 'empirical' to 'em' in half a page at 1,100 px: a review)
        title,
        list(DIST_FIELDS),
        key=key,
        on_change=_kind_changed,
        args=(path, key),
        help=(LengthDist.__doc__ or "").strip().split("\n\n")[1] if LengthDist.__doc__ else None,
    )
    fields = DIST_FIELDS.get(kind, ())
    if (
        "path" in fields
    ):  # a file's name on a row of its own: a third of half a page cut it to 'arxiv_s' (a review)
        choices = sorted({p for p, _ in length_columns()} | {dist.get("path", "")})
        select(
            f"{path}.path",
            choices,
            "File",
            format_func=lambda p: p.rsplit("/", 1)[-1],
            help="A CSV of measured lengths shipped with the project (data/traces): each request draws one row.",
        )
        fields = tuple(f for f in fields if f != "path")
    # a constant length is never clipped (its maximum must only be at least it): no box that does nothing
    cols = st.columns(len(fields) + 1) if kind != "constant" else st.columns(2)
    for col, name in zip(cols, fields, strict=False):
        with col:
            if name == "column":
                choices = sorted(
                    {c for p, c in length_columns() if p == dist.get("path")} | {dist.get("column", "")}
                )
                select(
                    f"{path}.column", choices, "Column", help="The file's column of token counts drawn from."
                )
            else:
                number(
                    f"{path}.{name}",
                    label_of(name),
                    integer=name in ("tokens", "low", "high"),
                    lo=1,
                    hi=MAX_TOKENS_PER_REQUEST,
                    what=f"{title}, {label_of(name).lower()}",
                    changes=_with_room(path) if name == "tokens" else None,
                )
    if kind != "constant":
        with cols[-1]:
            number(
                f"{path}.max_tokens",
                "Max",
                integer=True,
                lo=1,
                hi=MAX_TOKENS_PER_REQUEST,
                what=f"{title}, maximum",
            )
    try:
        hist, stats = _histogram(LengthDist.model_validate(dist).model_dump_json(), seed)
    except (ScenarioError, ValueError) as exc:
        st.caption(f"No preview: {plain(exc)}")
        return
    fig = charts.length_histogram(
        hist,
        f"mean {stats['mean_tokens']:,.0f} · p50 {stats['p50_tokens']:,.0f} · p99 {stats['p99_tokens']:,.0f} tokens",
    )
    what = path.replace("workload.classes", "class").replace("[", "").replace("]", "").replace(".", "_")
    export.chart(
        fig,
        state.scenario(),
        f"{what}_lengths",
        title=f"{title} of {current(path.rsplit('.', 1)[0] + '.name', '')}",
    )


ARRIVAL_NAMES = {
    "poisson": "Poisson",
    "gamma": "gamma (bursty)",
    "offline": "offline batch",
    "closed_loop": "closed loop",
}
"""The arrival kinds in words (the scenario's names, closed_loop, read as code: a review)."""


def arrival_editor(sc: Scenario, observed_s: Any = None) -> None:
    """The arrival process: kind, the fields it uses, and the rate over the window."""
    arr = sc.workload.arrival
    select(
        "workload.arrival.kind",
        list(ARRIVAL_NAMES),
        "Arrival process",
        horizontal=True,
        format_func=ARRIVAL_NAMES.__getitem__,
        help=(Arrival.__doc__ or "").strip().split("\n\n")[-1],
    )
    # the fields the kind uses (the engine's table); fields the engine adds later are shown for every kind
    used = set(USED_BY_KIND.get(arr.kind, ()))
    known = {f for fs in USED_BY_KIND.values() for f in fs} | {"kind"}
    c1, c2, c3 = st.columns([2, 1, 1] if "rate_rps" in used else [1, 1, 1])  # the rate: a slider and a box
    if "rate_rps" in used:
        with c1:
            rate_editor(sc)
    if "cv" in used:
        with c2:
            slider("workload.arrival.cv", 0.2, 8.0, "Burstiness (CV)", step=0.1)
            if arr.kind == "gamma" and arr.cv == 1.0:  # (choosing 'gamma (bursty)' changed nothing: a review)
                st.caption("At CV 1 gamma arrivals are Poisson's: above 1 they come in bursts.")
    if "shape" in used:
        _shape_editor(arr, c1 if "cv" in used else c2, c3)
    if "requests" in used:
        with c1:
            number("workload.arrival.requests", integer=True, lo=1, hi=MAX_REQUESTS)
    if "max_in_flight" in used:
        with c2 if "requests" in used else st.columns(3)[0]:
            ceiling_input()
    if "clients" in used:
        with c1:
            number("workload.arrival.clients", integer=True, lo=1, hi=MAX_CLIENTS)
        with c2:
            number("workload.arrival.think_time_s", lo=0.0, hi=86_400.0)
    if arr.kind == "closed_loop":  # how the clients think and start: a closed loop's own knobs
        spread = (
            ["think_spread"] if arr.think == "uniform" else []
        )  # the other think times have none (a review)
        model_form("workload.arrival", Arrival, only=["think", *spread, "ramp_s", "stop_after"], columns=4)
    extra = [n for n in Arrival.model_fields if n not in known]
    if extra:
        model_form("workload.arrival", Arrival, only=extra)
    curve = rate_curve(arr, sc.duration_s)
    obs = arrival_histogram(observed_s, sc.duration_s) if observed_s is not None and len(observed_s) else None
    if len(curve) or obs is not None:
        # (a closed loop's or offline batch's warm-up is measured too: not shaded as left out)
        fig = charts.rate(
            curve,
            "Arrival rate over the window",
            observed=obs,
            warmup_s=0.0 if whole_run(sc) else sc.warmup_s,
        )
        # the window read as one day: its hours, as Results' day panel ticks them
        if arr.peak_hour is not None:
            timeline.hour_ticks([fig], sc.duration_s, unit_s=1.0)
        export.chart(
            fig,
            sc,
            "arrival_rate",
            title="Arrival rate over the window",
        )
    else:
        st.caption(
            "A closed loop or an offline batch has no arrival curve: requests come as earlier ones end, or all at t = 0."
        )


def _shape_editor(arr: Arrival, factor_col: Any, c3: Any) -> None:
    """An open loop's shape over the window: its name, its peak factor, a diurnal day's hour of peak, or
    its points."""
    with c3:
        select(
            "workload.arrival.shape",
            ["flat", "ramp", "peak", "diurnal", "points"],
            changes=_shape_changes(arr.peak_hour),
        )
    if arr.shape in ("ramp", "peak", "diurnal"):
        with factor_col:
            slider("workload.arrival.peak_factor", 1.0, 10.0, "Peak factor", step=0.1)
    if arr.shape == "diurnal":  # the window read as one day, peaking at this hour (empty: its middle)
        with c3:
            number(
                "workload.arrival.peak_hour",
                "Hour of peak",
                lo=0.0,
                hi=23.99,
                optional=True,
                step=1.0,
                placeholder="mid-window",
                help="Read the window as one day (real or compressed) whose rate peaks at this hour "
                "(0-24); the trough is twelve hours away. Empty: the peak is in the middle of the window.",
            )
    if arr.shape == "points":
        points_editor(arr)


def ceiling_input() -> None:
    """The client's ceiling on requests in flight (`Arrival.max_in_flight`), empty for none."""
    number(
        "workload.arrival.max_in_flight",
        "Most in flight",
        integer=True,
        lo=1,
        hi=MAX_CLIENTS,
        optional=True,
        placeholder="no ceiling",
        help="The client never has more requests unanswered than this (vLLM's `bench serve "
        "--max-concurrency` beside a rate, a gateway's limit): a request due while that many are in "
        "flight waits at the client and is sent when one ends; its TTFT counts from the send, and "
        "Results says how many waited and how long. Empty: no ceiling.",
    )


RATE = "workload.arrival.rate_rps"


def _shape_changes(peak_hour: float | None) -> Callable[[Any], tuple[dict[str, Any], str]]:
    """A shape chosen away from diurnal clears its hour of peak: on the day presets the box snapped back
    to diurnal, refused with 'only a diurnal shape has an hour of peak' and no word of the fix (a review)."""

    def changes(shape: Any) -> tuple[dict[str, Any], str]:
        if shape == "diurnal" or peak_hour is None:
            return {"workload.arrival.shape": shape}, ""
        said = f"Shape {shape}: its hour of peak ({peak_hour:g}) cleared, as only a diurnal day has one."
        return {"workload.arrival.shape": shape, "workload.arrival.peak_hour": None}, said

    return changes


def rate_editor(sc: Scenario) -> None:
    """The mean arrival rate: a slider with stops spaced by ratio, and a box for any typed rate.

    Both reach the highest rate validation allows for this window and shape (`rate_cap_rps`:
    the documented bound, or fewer when the window would pass the requests-per-run bound), or the
    highest whose run the work bound admits where that is lower (`runnable_rate_rps`).
    """
    cap = rate_cap_rps(sc)
    rate = sc.workload.arrival.rate_rps
    peak = peak_of(sc.workload.arrival)
    if (work := runnable_rate_rps(sc)) is not None and work < cap:  # (2,770 offered, then refused: a review)
        cap, why = work, f"the most a run over the {sc.duration_s:g} s window may simulate: the work bound"
    elif cap >= MAX_RATE_RPS:
        why = "the documented bound"
    else:
        why = f"{MAX_REQUESTS:,} requests per run over the {sc.duration_s:g} s window"
        why += f" at points up to {peak:g}× the rate" if peak > 1 else ""

    def check(value: float | None) -> str | None:
        if value is not None and 0 < value <= cap:
            return None
        shown = "nothing" if value is None else f"{show_number(value)} req/s"
        return (
            f"{shown} is not allowed: the rate must be above 0 and at most {show_number(round_down(cap))} "
            f"req/s ({why}); it keeps {show_number(rate)} req/s"
        )

    left, right = st.columns([3, 2], vertical_alignment="bottom")
    with left:
        bound(
            st.select_slider,
            RATE,
            "Rate (req/s)",
            options=rate_stops(cap, rate),
            format_func=lambda v: f"{v:,g}",  # 2,770 as the messages write it
            to_ui=float,
            from_ui=float,
            help=f"{HELP['rate_rps']} The stops are spaced by ratio, up to {show_number(round_down(cap))} req/s "
            f"({why}); type any rate in the box beside it.",
        )
    with right:
        number(
            RATE,
            "Exact (req/s)",
            key="fg:rate-typed",
            check=check,
            what="Rate (req/s)",
            step=nice_step(rate, False),
            fmt="%g",
            help=f"Any mean rate above 0 and up to {show_number(round_down(cap))} req/s ({why}).",
        )


def points_editor(arr: Arrival) -> None:
    """The rate schedule's points as an editable table (factor times rate_rps at each time)."""
    frame = pd.DataFrame(
        [p.model_dump() for p in arr.points] or [{"at_s": 0.0, "factor": 1.0}, {"at_s": 600.0, "factor": 1.0}]
    )
    edited = st.data_editor(
        frame,
        num_rows="dynamic",
        key="fg:points",
        hide_index=True,
        column_config={
            "at_s": st.column_config.NumberColumn("at (s)", min_value=0.0),
            "factor": st.column_config.NumberColumn("× rate", min_value=0.0),
        },
    )
    rows = edited.dropna().sort_values("at_s").to_dict("records")
    changed = rows != [p.model_dump() for p in arr.points] and len(rows) >= 2
    if changed and state.override({"workload.arrival.points": rows}):
        st.rerun()


def class_template(n: int, slo: dict[str, Any] | None = None) -> dict[str, Any]:
    """A new request class (a short-answer class beside the existing ones) with the SLO `slo` (the first
    class's, as a trace's new class takes it: the schema's p99 and 100 ms TPOT disagreed, a review)."""
    return {
        "name": f"class-{n + 1}",
        "share": 0.25,
        "input": {"kind": "lognormal", "mean": 512, "p99": 3000, "max_tokens": 16384},
        "output": {"kind": "lognormal", "mean": 128, "p99": 600, "max_tokens": 4096},
    } | ({"slo": slo} if slo else {})


def window_bound(sc: Scenario) -> tuple[float, str]:
    """The longest window the Window box takes, and why: the documented bound, or a shorter one whose
    run the work bound admits at the scenario's rate (`runnable_duration_s`: 86,400 s was taken at 16
    req/s, then the run refused at 2.2 GB of state, the box not named: a review)."""
    work = runnable_duration_s(sc)
    if work is None or work >= MAX_DURATION_S:
        return MAX_DURATION_S, "the documented bound"
    rate = sc.workload.arrival.rate_rps
    return round_down(work), f"the longest a run at {show_number(rate)} req/s may simulate: the work bound"


def window_check(longest: float, why: str, kept: float) -> Callable[[Any], str | None]:
    """The Window box's check: 1 s to `longest`, the refusal naming why."""

    def check(value: Any) -> str | None:
        if value is None or 1.0 <= value <= longest:
            return None
        return (
            f"{show_number(value)} s is not allowed: the window must be from 1 to {show_number(longest)} s "
            f"({why}); it keeps {show_number(kept)} s"
        )

    return check


def window_with_warmup(duration_s: float) -> tuple[dict[str, Any], str]:
    """A new window's changes (`window_changes`): a window that would end inside the warm-up shortens the
    warm-up to keep its share of the window, and says so."""
    sc = state.scenario()
    made = window_changes(sc, duration_s)
    if "warmup_s" not in made:
        return made, ""
    return made, (
        f"Warm-up shortened from {show_number(sc.warmup_s)} s to {show_number(made['warmup_s'])} s with the "
        f"{show_number(duration_s)} s window: it keeps its share of the window "
        f"({sc.warmup_s / sc.duration_s:.{0 if sc.warmup_s / sc.duration_s >= 0.01 else 2}%}) and must end "
        "before the window does."
    )
