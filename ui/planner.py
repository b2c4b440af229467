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

from typing import Any

import streamlit as st

from engine import explain as ex
from engine.catalog import Catalog, load_catalog
from engine.planning import (
    DEFAULT_ATTAINMENT,
    PLAN_FORM,
    PP_MIN_TP,
    Rule,
    SearchSpace,
    queue_words,
)
from engine.scenario import Scenario
from ui import plan_link, plan_run, plan_state, plan_verdict, state, tables
from ui.labels import show_number
from ui.plan_charts import frontier_charts
from ui.plan_verdict import JUST_LOADED, OBJECTIVE_LABELS, margin_box, summary
from ui.plan_verdict import run_mark as run_mark
from ui.planner_emit import emit_panel
from ui.text import plain

PLAN = "fg_plan"
REQUEST = "fg_plan_request"


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
RULE_LABELS: dict[str, str] = {
    "percentile": "Every class at its SLO percentile (MLPerf)",
    "attainment": "A share of requests within their SLO (DistServe)",
}
"""The planner's pass rules (`engine.planning.rules.run_passes`) as the form names them."""


def _budget_inputs(row: Any) -> None:
    """The plan's budgets: dollars per hour, and the power its chips may draw at TDP (0: none)."""
    row.number_input(
        PLAN_FORM["budget"].label,
        **plan_link.initial("plan_budget", value=0.0),
        step=10.0,
        key="plan_budget",
        persist_state="session",
        width=180,
    )
    row.number_input(
        PLAN_FORM["power"].label,
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


FROM_SCENARIO = ("plan_target", "plan_hardware", "plan_ep")
"""The form's fields that start from the scenario: its rate, its chips, expert parallelism for a MoE model."""


def _follow_scenario(sc: Scenario) -> None:
    """Another preset or model: the form's fields that start from the scenario start again from it. Kept
    for the session, they carried the last preset's: moe-deepseek-h200 opened at chat's 16 req/s (its own
    is 10) with no expert parallelism, so Plan searched another load, and no EP layout, unsaid (a review)."""
    if state.moved_on(plan_link.FORM_FOR, [state.preset_name(), sc.model.id]):
        for key in FROM_SCENARIO:
            st.session_state.pop(key, None)


def _inputs(sc: Scenario) -> tuple[float, SearchSpace, Rule, float] | None:
    """The planning form; returns (target rps, search space, pass rule, attainment) once submitted.

    The submit button's callback records the request in session state, so it survives a rerun
    that happens before this function is reached.
    """
    _follow_scenario(sc)
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
        # (inside the form it cannot follow the rule's box: its label says which rule reads it, a review)
        PLAN_FORM["within"].label,
        **plan_link.initial("plan_attainment", value=DEFAULT_ATTAINMENT * 100.0),
        step=5.0,
        key="plan_attainment",
        persist_state="session",
        help="The share the attainment rule asks for (DistServe: 90%). Not used by the percentile rule.",
        width=230,
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
    emit_panel(None if p.best_run is None else state.named(p.scenario_of(p.best_run)))  # named by the page
    if not p.runs.empty:
        runs = frontier_charts(p, key)
        # keyed and stateful (as the launch commands' expander): opened, they stay open on the rerun after a plan
        with st.expander(
            "Every simulated run", icon=":material/table_rows:", key="fg-plan-runs", on_change="rerun"
        ):
            # what each run's queue did beside its figures (a run at capacity's 6,957 ms stood bare: a review)
            shown = tables.stepped(runs.assign(queue=queue_words(runs)), tables.PLAN_RUNS)
            st.dataframe(shown, hide_index=True, width="stretch", column_config=tables.PLAN_RUNS,
                         placeholder=tables.MISSING, column_order=tables.shown(tables.PLAN_RUNS, shown))  # fmt: skip
    tables.shapes_expander(p.candidates)  # also where nothing was simulated: its note names it (a review)
