"""The Planner page and the Advisor panel: widgets and charts over `engine.planning.plan` and `engine.explain.advisor`.

`planner_page()` draws the Planner: a form (target load, allowed chips, modes, tensor-parallel
degrees, pipeline depths, expert-parallel groups for a MoE model, budget, planning window, whether to
mix decode pools by class (portfolios), and what passing means: every class at its SLO percentile, or
a share of requests within their SLO), the plan's work (its run, progress and cancel: `ui.plan_run`), the chosen
deployment, and the two Pareto charts the industry uses (cost per hour against goodput; output
tokens/s per chip against tokens/s per user), every simulated run a point labelled with its
P:D split and the chosen one starred. The frontiers hold passing runs only (`engine.planning.frontier`):
a run that misses an SLO is a grey cross beside them, never a point of the trade-off. Clicking a
point loads that deployment, at the target load, as the session's scenario (`ui.state.commit`).
The plan is kept in session state with the inputs that produced it, so a rerun redraws it
without planning again.

The Results page's Advisor panel is `ui.advisor`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from engine import explain as ex
from engine.catalog import Catalog, load_catalog
from engine.planning import (
    DEFAULT_ATTAINMENT,
    OBJECTIVE_COLUMNS,
    PLAN_FORM,
    PP_MIN_TP,
    Rule,
    SearchSpace,
    off_frontier_text,
    passing_frontiers,
)
from engine.scenario import Scenario
from ui import plan_link, plan_run, plan_state, plan_verdict, state, tables
from ui.labels import show_number
from ui.plan_labels import label_sides
from ui.plan_verdict import JUST_LOADED, OBJECTIVE_LABELS, margin_box, summary
from ui.plan_verdict import band_text as _pm
from ui.plan_verdict import load_run as _load
from ui.plan_verdict import run_mark as run_mark
from ui.planner_emit import emit_panel
from ui.text import plain

PLAN = "fg_plan"
PICKED = "fg_plan_picked"
"""Each chart's selected run at the last rerun (`_picked`)."""
REQUEST = "fg_plan_request"
CHOSEN = "#c0392b"
MISSES = "#9e9e9e"


# --- charts ----------------------------------------------------------------------------------


def pareto_chart(
    runs: pd.DataFrame,
    x: str,
    y: str,
    frontier: str,
    *,
    title: str,
    x_title: str,
    y_title: str,
    height: int = 420,
) -> go.Figure:
    """Every run as a point, the frontier of passing runs as a line, the chosen run starred.

    Runs that meet every SLO are coloured by mode; runs that miss one are grey crosses, unlabelled
    and off the line (`runs[frontier]` is expected to hold passing runs only: `passing_frontiers`).
    A run on a chip without a profile fitted under the scenario's stack (`calibrated` false) is an
    open marker with its own legend entry; its hover names the chip, the basis and the error.
    """
    fig = go.Figure()
    rows = runs.replace([np.inf, -np.inf], np.nan).dropna(subset=[x, y])
    front = rows[rows[frontier]].sort_values(x)
    fig.add_trace(
        go.Scatter(
            x=front[x],
            y=front[y],
            mode="lines",
            name="Pareto frontier",
            line={"color": "gray", "dash": "dot"},
            hoverinfo="skip",
        )
    )
    hover = (
        "<b>%{customdata[1]}</b> %{customdata[2]}<br>$%{customdata[3]:,.2f}/h, "
        "goodput %{customdata[4]:,.2f} req/s<br>"
        + f"{x_title}: "
        + "%{x:,.3g}<br>"
        + f"{y_title}: "
        + "%{y:,.3g}<br>%{customdata[5]}<extra>run %{customdata[0]}</extra>"
    )
    if "calibrated" in rows:
        sure = rows["calibrated"].fillna(True).astype(bool)
        pairs = rows.reindex(columns=["throughput_fall", "throughput_rise"]).itertuples(index=False)
        said = (
            rows["calibration"].fillna("") + [_pm(tuple(p)) for p in pairs] if "calibration" in rows else ""
        )
    else:  # a plan from before calibration marks: every point as calibrated, nothing said
        sure, said = pd.Series(True, index=rows.index), ""
    rows = rows.assign(_sure=sure, _said=said)

    def data(sub: pd.DataFrame) -> np.ndarray:
        return np.stack(
            [sub["run"], sub["shape"], sub["split"], sub["usd_per_hour"], sub["goodput_rps"], sub["_said"]],
            axis=1,
        )

    passing = rows["passes"].astype(bool)
    labelled = rows[rows[frontier].astype(bool) | rows["chosen"].astype(bool)]
    sides = label_sides(labelled, x, y, markers=rows)  # the axes' extent: every point drawn

    def place(i: Any) -> str:
        return sides.get(i) or "top center"

    _misses(fig, rows[~passing], x, y, data, hover)  # first: under the passing points
    for mode, symbol, color in (("colocated", "circle", "#1f77b4"), ("disaggregated", "diamond", "#e67e22")):
        for calibrated in (True, False):
            sub = rows[(rows["mode"] == mode) & passing & (rows["_sure"] == calibrated)]
            if sub.empty:
                continue
            fig.add_trace(
                go.Scatter(
                    x=sub[x],
                    y=sub[y],
                    mode="markers+text",
                    text=sub["split"].where(sub.index.map(lambda i: sides.get(i) is not None), ""),
                    textposition=sub.index.map(place).tolist(),
                    name=f"{mode}, meets SLOs" + ("" if calibrated else ", uncalibrated chip"),
                    marker={
                        "symbol": symbol if calibrated else f"{symbol}-open",
                        "size": 11,
                        "color": color,
                        "line": {"width": 2},
                    },
                    customdata=data(sub),
                    hovertemplate=hover,
                    cliponaxis=False,  # a label above the highest point is drawn whole, not cut at the axis
                )
            )
    best = rows[rows["chosen"]]
    if len(best):
        fig.add_trace(_star(best, x, y, data(best), hover))
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title=y_title, rangemode="tozero")
    fig.update_layout(
        title={"text": title, "x": 0, "font": {"size": 15}},
        height=height,
        hovermode="closest",
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        legend={"orientation": "h", "yanchor": "top", "y": -0.3, "x": 0},  # clears the x title, wrapped
    )
    return fig


def _misses(
    fig: go.Figure,
    misses: pd.DataFrame,
    x: str,
    y: str,
    data: Callable[[pd.DataFrame], np.ndarray],
    hover: str,
) -> None:
    """The runs that miss an SLO, drawn before the passing ones so that they lie under them: a grey
    cross drawn over a frontier point made it read as failing (a review)."""
    for calibrated in (True, False):
        sub = misses[misses["_sure"] == calibrated]
        if len(sub):
            fig.add_trace(
                go.Scatter(
                    x=sub[x],
                    y=sub[y],
                    mode="markers",
                    name="misses an SLO" + ("" if calibrated else ", uncalibrated chip"),
                    marker={"symbol": "x" if calibrated else "x-open", "size": 9, "color": MISSES},
                    customdata=data(sub),
                    hovertemplate=hover.replace("<extra>", "<br>misses an SLO<extra>"),
                    legendrank=900,  # listed after the passing points
                )
            )


def _star(best: pd.DataFrame, x: str, y: str, data: np.ndarray, hover: str) -> go.Scatter:
    """The chosen run's star. It answers hover and click itself: with `hoverinfo="skip"` a click went
    through it to whatever lay beneath, a failing colocated run at the same cost and goodput, which was
    then loaded as "the choice" (a walkthrough)."""
    return go.Scatter(
        x=best[x],
        y=best[y],
        mode="markers",
        # risk-aware, the choice is the cheapest that still passes with slower chips, not the cheapest
        # passing point on the chart (the legend's "cheapest passing" sat beside cheaper passing runs)
        name="chosen (the verdict's)",
        marker={"symbol": "star", "size": 20, "color": CHOSEN},
        customdata=data,
        hovertemplate=hover.replace("<extra>", "<br><b>chosen</b><extra>"),
    )


def _picked(events: list[Any]) -> int | None:
    """The run the user just clicked on either chart: of the charts' selections, one that changed
    since the last rerun. A chart keeps its selection, so the first chart's older click had shadowed
    every later click on the second (a walkthrough: a click there loaded nothing)."""
    now = [selected_run(e) for e in events]
    before = st.session_state.get(PICKED) or [None] * len(now)
    st.session_state[PICKED] = now
    return next((r for r, b in zip(now, before, strict=False) if r is not None and r != b), None)


def selected_run(event: Any) -> int | None:
    """The run number of the point a chart selection event picked, if any: of points picked together
    (drawn one over another), the one drawn on top, the last trace's (the chosen star over a run at the
    same cost and goodput)."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for p in sorted(points, key=lambda q: -int(q.get("curve_number", 0) or 0)):
        data = p.get("customdata")
        if data:
            return int(float(data[0]))
    return None


# --- the Planner page ------------------------------------------------------------------------


FORM_RANGES = {
    plan_link.KEYS[name]: (f.label, f.low, f.high)
    for name, f in PLAN_FORM.items()
    if f.kind in ("number", "int")
}
"""The planning form's numeric fields: (label, lowest, highest), checked when the form is submitted."""
PP_CHOICES = list(PLAN_FORM["pp"].allowed)
"""Pipeline depths the form offers."""
EP_CHOICES = list(PLAN_FORM["ep"].allowed)
"""Expert-parallel group sizes (chips per instance) the form offers for a MoE model."""
X_TITLES = {
    "usd_per_hour": "cost ($/h)",
    "usd_per_million_tokens": "cost ($ per million output tokens)",
    "chips": "chips",
    "power": "mean power (kW)",
}
"""The cost frontier's x axis per objective."""
RULE_LABELS: dict[str, str] = {
    "percentile": "Every class at its SLO percentile (MLPerf)",
    "attainment": "A share of requests within their SLO (DistServe)",
}
"""The planner's pass rules (`engine.planning.rules.run_passes`) as the form names them."""


def _budget_inputs(row: Any) -> None:
    """The plan's budgets: dollars per hour, and the power its chips may draw at TDP (0: none)."""
    row.number_input(
        "Budget ($/h, 0 = none)",
        **plan_link.initial("plan_budget", value=0.0),
        step=10.0,
        key="plan_budget",
        persist_state="session",
        width=180,
    )
    row.number_input(
        "Power budget (kW, 0 = none)",
        **plan_link.initial("plan_power_budget", value=0.0),
        step=1.0,
        key="plan_power_budget",
        persist_state="session",
        help="The most the deployment's chips may draw, every one at its TDP (what the site provisions for "
        "them); a candidate over it is not tried. A site power cap set on the Strategy page "
        "(deployment.power_cap_kw) is a budget too: the plan takes the lower of the two.",
        width=200,
    )


def _request() -> None:
    st.session_state[REQUEST] = True


def take_link() -> None:
    """A shared link's plan (`ui.plan_link`): its values into the form, waiting for a click on Plan;
    run before the page's notices are drawn, which say a link that could not be used."""
    sc = state.scenario()
    plan_link.take(lambda: load_catalog().with_entries(sc.custom_hardware, sc.custom_models).hardware)


def _default_chips(sc: Scenario, chips: list[str]) -> list[str]:
    """The form's chips at first: the scenario's, then H100, H200 and B200."""
    mine = [p.hardware for p in sc.deployment.pools]
    return list(dict.fromkeys([*mine, *(c for c in ("h100-sxm", "h200", "b200") if c in chips)]))


def _layout_inputs(sc: Scenario, cat: Catalog) -> None:
    """The planning form's layouts: modes, tensor, pipeline and expert parallelism."""
    moe = cat.models[sc.model.id].moe if sc.model.id in cat.models else None
    c4 = c5 = c6 = c7 = st.container(horizontal=True, gap="small")
    c4.multiselect(
        "Modes",
        list(PLAN_FORM["modes"].allowed),
        **plan_link.initial("plan_modes", default=list(PLAN_FORM["modes"].allowed)),
        key="plan_modes",
        persist_state="session",
        width=280,  # "colocated" and "disaggregated" side by side
    )
    c5.multiselect(
        "Tensor parallel",
        list(PLAN_FORM["tp"].allowed),
        **plan_link.initial("plan_tp", default=list(PLAN_FORM["tp"].allowed)),
        key="plan_tp",
        persist_state="session",
        width=270,
        wrap=True,
    )  # four chips and the clear button
    c6.multiselect(
        "Pipeline stages",
        PP_CHOICES,
        **plan_link.initial("plan_pp", default=list(SearchSpace().pp)),
        key="plan_pp",
        persist_state="session",
        help=f"Stages per instance; above 1 with each tensor-parallel degree of {PP_MIN_TP} or more, for "
        "models that need more chips than one node's tensor parallelism (Llama-3.1-405B on H100s).",
        width=160,
        wrap=True,
    )
    c7.multiselect(
        "Expert parallel (MoE)",
        EP_CHOICES,
        **plan_link.initial("plan_ep", default=list(SearchSpace().ep) if moe else []),
        key="plan_ep",
        persist_state="session",
        disabled=moe is None,
        help="Expert-parallel groups of this many chips per instance, laid out as 1 or 2 chips of "
        "tensor parallelism per attention rank and as many data-parallel ranks as fill the group "
        "(tp1 dp8 ep8, tp2 dp4 ep8): DeepSeek's layout. MoE models only"
        + ("." if moe else f"; {sc.model.id} is dense."),
        width=170,
        wrap=True,
    )


def _inputs(sc: Scenario) -> tuple[float, SearchSpace, Rule, float] | None:
    """The planning form; returns (target rps, search space, pass rule, attainment) once submitted.

    The submit button's callback records the request in session state, so it survives a rerun
    that happens before this function is reached.
    """
    cat = load_catalog().with_entries(sc.custom_hardware, sc.custom_models)
    chips = sorted(cat.hardware)
    with st.form("plan_form", border=True):
        # rows that wrap: in a narrow window a field moves to the next line instead of squeezing its values
        c1 = c2 = c3 = st.container(horizontal=True, gap="small")
        # no min/max on these inputs: Streamlit would refuse an out-of-range value silently; the
        # form checks the ranges when it is submitted and says which field is off (FORM_RANGES)
        c1.number_input(
            "Target load (req/s)",
            key="plan_target",
            persist_state="session",
            **plan_link.initial("plan_target", value=float(sc.workload.arrival.rate_rps)),
            step=1.0,
            width=160,
        )
        c2.multiselect(
            "Allowed hardware",
            chips,
            **plan_link.initial("plan_hardware", default=_default_chips(sc, chips)),
            key="plan_hardware",
            persist_state="session",
            help="Chips the planner may put in any pool; prefill and decode may differ.",
            width=340,  # three chips and the clear button; at 380 the power budget wrapped alone on a line
            wrap=True,  # more chips grow it a row (in a horizontal container they scrolled out of sight)
        )
        _budget_inputs(c3)
        _layout_inputs(sc, cat)
        _search_inputs()
        # (gap "large" between the rows it wraps into left an empty band above the margin box: a review)
        plan_verdict.choice_inputs(st.container(horizontal=True, gap="medium", vertical_alignment="bottom"))
        st.form_submit_button("Plan", type="primary", icon=":material/travel_explore:", on_click=_request)
    asked = _asked()
    if asked is not None:  # the values last submitted (the defaults at first): what Plan would run
        plan_run.work_line(sc, asked[0], asked[1], bool(st.session_state.get("plan_margin", True)))
    if not st.session_state.pop(REQUEST, False):
        return None
    return asked


def _search_inputs() -> None:
    """The planning form's search settings: window, budget of simulations, pass rule, mixing. Each
    keeps its value for the session (`persist_state`): the form went back to its defaults after a
    visit to another page while the plan made from other values stayed below it (a walkthrough)."""
    c8 = c9 = c10 = c11 = st.container(horizontal=True, gap="small")
    c8.selectbox(
        "Planning window",
        list(PLAN_FORM["window"].allowed),
        **plan_link.initial("plan_window", index=1),
        key="plan_window",
        persist_state="session",
        format_func=lambda v: f"{v:g} s",
        help="Arrival window of each planning run (multi-turn sessions: after an unmeasured lead for their ramp).",
        width=160,
    )
    c9.number_input(
        "Most simulations",
        **plan_link.initial("plan_sims", value=120),
        step=5,
        key="plan_sims",
        persist_state="session",
        help="The search's budget of planning runs (finalists and frontier runs included). The risk-aware "
        "checks (a search with slowed chips) and the margin each have a budget as large again, and each chip's "
        "pick is rerun at full length: the Work line under the form counts them all.",
        width=160,
    )
    c10.selectbox(
        "A deployment passes when",
        list(RULE_LABELS),
        format_func=RULE_LABELS.__getitem__,
        key="plan_rule",
        persist_state="session",
        help="Every class with its TTFT and TPOT within target at its SLO percentile (MLPerf's rule), "
        "or at least the share below of all requests each within its class's TTFT and TPOT "
        "targets (DistServe's attainment).",
        width=340,
    )
    c11.number_input(
        "Requests within their SLO (%)",
        **plan_link.initial("plan_attainment", value=DEFAULT_ATTAINMENT * 100.0),
        step=5.0,
        key="plan_attainment",
        persist_state="session",
        help="The share the attainment rule asks for (DistServe: 90%). Not used by the percentile rule.",
        width=200,
    )
    c12 = c13 = st.container(horizontal=True, gap="large")
    c12.checkbox(
        "Allow prefill and decode on different chips",
        **plan_link.initial("plan_mixed", value=True),
        key="plan_mixed",
        persist_state="session",
    )
    c13.checkbox(
        "Mix decode pools by class",
        value=False,
        key="plan_portfolio",
        persist_state="session",
        help="With two or more request classes: after the search, also try one prefill pool and a decode "
        "pool of its own chip for each class, the class pinned to it (a portfolio).",
    )


def _asked() -> tuple[float, SearchSpace, Rule, float] | None:
    """The form's values as a plan request, or None (with why, once submitted) when they cannot be."""
    ss = st.session_state
    submitted = bool(ss.get(REQUEST))
    refused = [  # (ranges read '0 to 1e+07'; the percentile rule's unused share blocked a plan: a review)
        f"{label}: {show_number(ss[key])} is not allowed: the allowed range is {show_number(lo)} to {show_number(hi)}"
        for key, (label, lo, hi) in FORM_RANGES.items()
        if not lo <= float(ss[key]) <= hi
        and (key != "plan_attainment" or ss.get("plan_rule") == "attainment")
    ]
    if refused:
        if submitted:
            st.error("Not planned. " + "; ".join(refused) + ".", icon=":material/error:")
            ss[plan_run.REFUSED_NOW] = True
        return None
    hardware, modes, tps, pps = ss["plan_hardware"], ss["plan_modes"], ss["plan_tp"], ss["plan_pp"]
    if not hardware or not modes or not tps or not pps:
        if submitted:
            st.warning(
                "Choose at least one chip, one mode, one tensor-parallel degree and one pipeline depth."
            )
        return None
    space = SearchSpace(
        hardware=tuple(hardware),
        modes=tuple(modes),
        tp=tuple(int(t) for t in tps),
        pp=tuple(int(p) for p in pps),
        ep=tuple(int(e) for e in ss["plan_ep"]),
        mixed_hardware=bool(ss["plan_mixed"]),
        budget_usd_per_hour=float(ss["plan_budget"]) or None,
        power_budget_kw=float(ss["plan_power_budget"]) or None,
        duration_s=float(ss["plan_window"]),
        max_simulations=int(ss["plan_sims"]),
        portfolio=bool(ss["plan_portfolio"]),
    )
    rule: Rule = "attainment" if ss["plan_rule"] == "attainment" else "percentile"
    share = (
        float(ss["plan_attainment"]) / 100.0 if rule == "attainment" else DEFAULT_ATTAINMENT
    )  # (unused then)
    return float(ss["plan_target"]), space, rule, share


def planner_page() -> None:
    """The Planner page's content (app_pages/planner.py draws the frame)."""
    sc = state.scenario()
    plan_run.interrupted(PLAN in st.session_state)  # a plan this rerun stopped says so; nothing of it kept
    st.session_state.pop(plan_run.REFUSED_NOW, None)
    asked = _inputs(sc)
    if asked is None:
        plan_link.pending()  # a shared link's values in the form, waiting for Plan
    else:
        target, space, rule, attainment = asked
        key = (sc.model_dump_json(), target, space, rule, attainment, *plan_verdict.options().values())
        result = plan_run.run_plan(
            sc, target, space, rule, attainment, bool(st.session_state.get("plan_margin", True))
        )
        if result is not None:
            st.session_state[PLAN] = (key, *result)
            plan_state.own_plan(key[0], fresh=True)
            plan_link.remember()
    stored = st.session_state.get(PLAN)
    if stored is None:
        plan_link.show(False)
        # (else `pending` has said it, or a refusal above says why nothing was planned)
        if st.session_state.get(plan_link.PENDING) is None and not st.session_state.get(plan_run.REFUSED_NOW):
            st.info("Set a target load and the chips allowed, then press **Plan**.", icon=":material/info:")
        return
    key, p, edge = stored if len(stored) == 3 else (*stored, None)  # a plan kept from before the margin
    plan_link.show(key[0] == sc.model_dump_json())  # the link reopens the plan if it is this scenario's
    if plan_state.stale_plan():
        st.warning(plan_state.STALE_TEXT, icon=":material/history:")
    chosen = p.verdict is not None and p.verdict.chosen is not None
    st.caption(plain(plan_state.planned_with(key, edge is not None, OBJECTIVE_LABELS, chosen)))
    loaded = st.session_state.pop(JUST_LOADED, None)
    if loaded:
        st.success(f"Loaded **{plain(loaded)}** as the current scenario.", icon=":material/download_done:")
        st.page_link("app_pages/results.py", label="See its results", icon=":material/monitoring:")
    summary(p, edge)
    for line in ex.porting_lines(p.best) if p.best is not None else ():
        st.caption(f"Porting of the cheapest plan's chips: {plain(line)}")
    if edge is not None:
        margin_box(edge, key)
    # under the name Results would give it once loaded: the preset's name ("... H100 pool") on a
    # deployment of other chips put the wrong name in the commands' header and the manifests' metadata
    emit_panel(None if p.best is None else state.named(p.best))
    if not p.runs.empty:
        runs = _frontier_charts(p, key)
        # keyed and stateful (as the launch commands' expander): opened, they stay open on the rerun after a plan
        with st.expander(
            "Every simulated run", icon=":material/table_rows:", key="fg-plan-runs", on_change="rerun"
        ):
            shown = tables.stepped(runs, tables.PLAN_RUNS)
            st.dataframe(shown, hide_index=True, width="stretch", column_config=tables.PLAN_RUNS,
                         column_order=tables.shown(tables.PLAN_RUNS, runs))  # fmt: skip
    tables.shapes_expander(p.candidates)  # also where nothing was simulated: its note names it (a review)


def _frontier_charts(p: Any, key: tuple[Any, ...]) -> pd.DataFrame:
    """The plan's two frontiers (a click on a point, or the button, loads that deployment); the runs
    they drew."""
    st.caption(
        "Click a point to load that deployment as the current scenario. Coloured markers meet every SLO and "
        "the frontier joins the best of them; grey crosses miss an SLO. Open markers: a chip with no profile fitted "
        "under the scenario's serving stack (uncalibrated; hover for the basis and the band). Labels give "
        "the frontier points' P:D splits where they fit beside the chosen run's (M: a colocated pool; hover any "
        "point for its own). Goodput per chip counts the output tokens of "
        "requests within their SLO."
    )
    objective = getattr(p, "objective", "usd_per_hour")  # the cost frontier follows the objective
    runs = passing_frontiers(p.runs, objective)
    cost = "power_kw" if objective == "power" else OBJECTIVE_COLUMNS[objective]  # kW, as the verdict
    runs = runs.assign(power_kw=runs["power_w"] / 1e3) if objective == "power" else runs
    frontiers = (  # x, y, frontier flag, title, axis titles, widget key
        (cost, "goodput_rps", "on_cost_frontier", f"{OBJECTIVE_LABELS[objective]} against "
         "goodput", X_TITLES[objective], "goodput (req/s meeting their SLO)", "plan_cost"),
        ("tokens_per_s_per_user", "goodput_tokens_per_s_per_chip", "on_throughput_frontier",
         "Goodput per chip against interactivity", "tokens/s per user (1 / mean TPOT)",
         "goodput tokens/s per chip", "plan_tput"),
    )  # fmt: skip
    if off := off_frontier_text(runs, getattr(p, "risk_aware", True)):  # as the command line says it
        st.caption(plain(f"{off[0].upper()}{off[1:]}."))
    stale = plan_state.stale_plan()
    if p.best_run is not None and st.button(  # a star among close points is hard to hit: one click
        "Load the chosen deployment", key="fg-plan-load-choice", icon=":material/download:", disabled=stale
    ):
        _load(p, p.best_run, (*key, "chosen"))
    events = []
    for col, (x, y, flag, title, x_title, y_title, chart_key) in zip(st.columns(2), frontiers, strict=True):
        with col:
            events.append(
                st.plotly_chart(
                    pareto_chart(runs, x, y, flag, title=title, x_title=x_title, y_title=y_title),
                    key=chart_key,
                    on_select="rerun",
                    selection_mode="points",
                )
            )
    run = _picked(events)
    if run is not None and 0 <= run < len(p.runs) and not stale:
        _load(p, run, key)
    return runs
