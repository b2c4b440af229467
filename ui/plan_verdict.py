"""The Planner's verdict: the choice in the buyer's terms, each chip's best, the margin box.

`summary(plan, margin)` draws the search's counts and the verdict (`engine.planning` `Verdict`):
the chosen deployment with its latencies at each class's SLO percentile, cost per million output
tokens and per request, output tokens/s per chip, chips and power, each with its band, quoted
from its full-length run; the nominal cheapest beside it with the premium and the risk in words;
and one row per chip (or pairing) with the winner starred. `margin_box` draws the margin for the
model's error; `choice_inputs` the form's objective, risk-aware switch and margin box;
`load_run` makes a run the session's scenario.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import streamlit as st

from engine import explain as ex
from engine.core import format_apart, ms_text, rate2, target_of
from engine.explain import duration_places, duration_text, duration_unit
from engine.planning import (
    BILLED,
    DEFAULT_ATTAINMENT,
    OBJECTIVES,
    PAST_TARGET_WHY,
    SAME_AT_EDGES,
    Margin,
    MarginCheck,
    Plan,
    assumed_price_mark,
    attained,
    class_bands,
    edge_premium_note,
    holds_note,
    past_target,
    reads_alike,
    rises_only,
    rule_text,
    steady_reruns,
    tokens_band,
)
from engine.scenario import vendor_crossing_note
from ui import marks, plan_link, state
from ui.plan_counters import counters
from ui.plan_per_chip import PER_CHIP, per_chip_frame, range_text
from ui.plan_state import own_plan, stale_plan
from ui.text import opening, plain, sentence

JUST_LOADED = "fg_plan_just_loaded"
LOADED = "fg_plan_loaded"


OBJECTIVE_LABELS = {
    "usd_per_hour": "Cost per hour",
    "usd_per_million_tokens": "Cost per million output tokens",
    "chips": "Fewest chips",
    "power": "Lowest power",
}
"""The objectives (`engine.planning.OBJECTIVES`) as the form names them."""


def choice_inputs(row: Any) -> None:
    """The form's choice fields: the objective, the risk-aware switch and the margin box."""
    row.selectbox(
        "Choose by",
        list(OBJECTIVES),
        format_func=OBJECTIVE_LABELS.__getitem__,
        key="plan_objective",
        persist_state="session",
        help="What the choice minimises at the target load; the cost frontier follows it.",
        width=260,
    )
    row.toggle(
        "Risk-aware choice",
        **plan_link.initial("plan_risk", value=True),
        key="plan_risk",
        persist_state="session",
        help="Choose the cheapest deployment that still meets every SLO with every chip at the pessimistic edge "
        "of its calibrated band; the nominal cheapest is shown beside it with the premium. Off: the cheapest as "
        "modelled.",
    )
    row.checkbox(
        "Check the margin for the model's error",
        **plan_link.initial("plan_margin", value=True),
        key="plan_margin",
        persist_state="session",
        help="After the search, rerun the chosen deployment, and search again, with every chip at the "
        "pessimistic edge of its throughput band (where about two in three real deployments land): does the "
        "choice hold if the chips are as slow as the band says they may be, and what would hold then. Slower "
        "chips need more instances, so the second search takes longer: about three times the time in all.",
    )


def options() -> dict[str, Any]:
    """The plan's objective and risk-aware switch as the form left them."""
    ss = st.session_state
    return {
        "objective": ss.get("plan_objective", "usd_per_hour"),
        "risk_aware": bool(ss.get("plan_risk", True)),
    }


def _headline(objective: str, what: str, unsure: bool) -> str:
    """The verdict's opening words by objective: a plan by chips or power read "Cheapest deployment by fewest
    chips" and "by lowest power" (a review)."""
    if objective == "chips":
        return "Deployment on the fewest chips" + (", of those checked," if unsure else "")
    if objective == "power":
        return "Deployment drawing the least mean power" + (", of those checked," if unsure else "")
    return f"Cheapest {'of the deployments checked' if unsure else 'deployment'} by {what}"


def _chips(n: Any) -> str:
    """'1 chip', '12 chips' (the verdict read '1 chips')."""
    return f"{int(n)} chip{'' if int(n) == 1 else 's'}"


def _tokens_band(c: dict[str, Any], reruns: tuple[Any, ...]) -> str:
    """The choice's tokens/s per chip band: the reruns' spread, as the CLI's (`with_rerun_bands`); one
    that rounds to the figure at both ends is said so ('416 (416 to 416)': it serves the load either way)."""
    band = tokens_band(c, reruns)
    return SAME_AT_EDGES if reads_alike(band, ",.0f") else range_text(band, ",.0f")


def _ms_band(b: Any, ms: float | None, target: float | None = None) -> str:
    """' (230 to 500)' after a latency: its band's ends in the unit the figure reads in (a figure of
    12.0 s gets '(9.0 to 15.0)', not '(9,000 to 15,000)' beside it), an end that would read as the
    `target` without being it to more decimals ('(15.2 to 29.96)' beside a target of 30.0 ms)."""
    if not b or ms is None:
        return ""
    size, places = duration_unit(ms)[1], duration_places(ms)  # as `duration_text` writes the figure
    aim = None if target is None else target / size
    low, high = (format_apart(x / size, f",.{places}f", aim) for x in b[:2])
    if rises_only([b[0] / size, b[1] / size], ms / size, f",.{places}f"):  # as the CLI's
        return f" (up to {high})"
    return f" ({low} to {high})"


def _apart(ms: float, target: float | None) -> str:
    """`duration_text(ms)`, to more decimals where it would read as its `target` without being it."""
    unit, size = duration_unit(ms)
    return f"{format_apart(ms / size, f',.{duration_places(ms)}f', None if target is None else target / size)} {unit}"


def _latencies(c: dict[str, Any], reruns: tuple[Any, ...] = ()) -> str:
    """Each class's TTFT and TPOT at its SLO percentile, with their bands; for one class, its bands
    widened to hold the margin's reruns of the choice (`reruns`: its checks with slowed and faster
    chips), so the range never leaves out the figure the margin's box prints under it."""
    parts = []
    one = len(c["classes_at_slo"]) == 1
    bands = class_bands(c, reruns)  # (the CLI's too)
    for name, k in c["classes_at_slo"].items():
        p = f"p{k['percentile']:g}"
        ttft = (
            "never (requests not served)"
            if k["ttft_ms"] is None
            else _apart(k["ttft_ms"], k["ttft_target_ms"])
        )
        tpot = "n/a" if k["tpot_ms"] is None else _apart(k["tpot_ms"], k["tpot_target_ms"])
        tb, pb = bands[name]
        parts.append(
            (f"{plain(name)}: " if not one else "")
            + f"TTFT {p} {ttft}{_ms_band(tb, k['ttft_ms'], k['ttft_target_ms'])} "
            f"(target {duration_text(k['ttft_target_ms'])}), "
            f"TPOT {p} {tpot}{_ms_band(pb, k['tpot_ms'], k['tpot_target_ms'])} "
            f"(target {duration_text(k['tpot_target_ms'])})"
        )
    return "; ".join(parts)


def past_target_text(c: dict[str, Any], reruns: tuple[Any, ...] = ()) -> str:
    """A sentence where a latency's band reaches past its target ('' where none does): the choice held
    with its chips slowed to their throughput band's edge, and the latency's own error allows worse."""
    over = past_target(c, reruns)
    if not over:
        return ""
    one = len(c["classes_at_slo"]) == 1
    said = [
        f"{'' if one else plain(name) + ' '}{kind} band reaches {duration_text(high)} against "
        f"{duration_text(target)}"
        for name, kind, high, target in over
    ]
    return f" Its {'; its '.join(said)}: {PAST_TARGET_WHY}."


def verdict_box(p: Plan, reruns: tuple[Any, ...] = ()) -> None:
    """The choice, the nominal cheapest beside it, and each chip's best side by side (`reruns`: the
    margin's checks of the choice, slowed and faster, that its latency ranges hold)."""
    v = p.verdict
    assert v is not None and v.chosen is not None
    c = v.chosen
    per_m, per_req = c["usd_per_million_output_tokens"], c["usd_per_request"]
    # its throughput band's edge: the latency ranges quoted after it are wider (their own kinds' bands),
    # and "at the pessimistic edge of its band" beside "TPOT p90 42.9 ms (30.6 to 64.8)" against a 60 ms
    # target read as a contradiction (a review)
    edge = (
        ", even with every chip at the pessimistic edge of its throughput band"
        if v.risk_aware and c["holds_slowed"] is True
        else " as modelled (no passing deployment within the budget holds with every chip at the pessimistic edge "
        "of its throughput band)"
        if v.risk_aware
        else " as modelled"
    )
    what = OBJECTIVE_LABELS[v.objective].lower()
    rule, share = getattr(p, "rule", "percentile"), getattr(p, "attainment", DEFAULT_ATTAINMENT)
    meets = "meets every SLO" if rule == "percentile" else f"keeps {share:.0%} of requests within their SLO"
    m_band = range_text(c["usd_per_million_output_tokens_band"], ",.2f")
    rb = c["usd_per_request_band"]  # to the headline's places ($0.000542), as Results and Compare read it
    r_band = f" ({ex.usd_text(rb[0])} to {ex.usd_text(rb[1])})" if rb else ""
    t_band = _tokens_band(c, reruns)
    figures = (
        ", ".join(
            [
                _chips(c["chips"]),
                f"**\\${c['usd_per_hour']:,.2f}/h**" + assumed_price_mark(c),
                *([] if per_m is None else [f"**\\${per_m:,.2f}**{m_band} per million output tokens"]),
                *(
                    []
                    if per_req is None
                    else [f"{ex.usd_text(per_req)}{r_band} per request".replace("$", "\\$")]
                ),
                f"{c['output_tokens_per_s_per_chip']:,.0f}{t_band} output tokens/s per chip",
                f"{c['power_w'] / 1e3:,.1f} kW",
            ]
        )
        + f"; {_latencies(c, reruns)}"
    )
    unsure = v.unsure_text(p.settled)  # a search cut short: "of those checked" in the headline too
    with st.container(key="fg-plan-verdict"):
        show = st.success if c["passes"] and c["holds_slowed"] is not False else st.warning
        show(
            f"{_headline(v.objective, what, bool(unsure))} that {meets} at "
            f"{p.target_rps:g} req/s{edge}: "
            f"**{plain(c['shape'])} {plain(c['split'])}** — {figures}. Quoted from its {c['verified_by']} "
            f"({BILLED})"
            + (
                "."
                if c["verified"] or c["verified_by"].startswith("planning")
                else ", where it fails its SLO."
            )
            + (past_target_text(c, reruns) if v.risk_aware else "")
            + (f" Of what was checked: {plain(unsure)}." if unsure else ""),
            icon=":material/check_circle:",
        )
        if v.risk_aware and c["run"] != v.nominal_run and v.nominal_run is not None:
            _nominal_box(v, p)
        elif v.risk_text():
            st.caption(sentence(plain(v.risk_text())) + ".")
        frame = per_chip_frame(v.table, reruns)
        quoted = frame["quoted run"].unique()
        if len(quoted) == 1:  # said once under the table: the widest column, cut off at 1400 pixels
            frame = frame.drop(columns="quoted run")
        st.dataframe(frame, hide_index=True, width="stretch", key="fg-plan-per-chip", column_config=PER_CHIP)
        _under_table(
            v, str(quoted[0]) if len(quoted) == 1 else None, len(frame), bool(reruns) and len(frame) > 1
        )
        if p.best is not None and (crossing := vendor_crossing_note(p.best)):
            st.warning(plain(crossing), icon=":material/swap_horiz:")


def _nominal_box(v: Any, p: Any) -> None:
    """The nominal cheapest beside a risk-aware choice: its price, the choice's premium, its risk."""
    r, premium, where = p.runs.iloc[v.nominal_run], v.premium_text(), v.nominal_text(p.duration_s)
    # its chips' row shows the deployment that held slowed: 'b200 2P:1D $13.50/h' was on no row of
    # the table under it (a browser review)
    rowless = not ((v.table["shape"] == r["shape"]) & (v.table["split"] == r["split"])).any()
    st.info(
        f"{sentence(v.nominal_name().removeprefix('the '))}: **{plain(r['shape'])} {plain(r['split'])}**"
        + (f", {plain(where)}" if where else "")
        + (f"; the choice {v.premium_verb()} {plain(premium)}" if premium else "")
        + f". {sentence(plain(v.risk_text()))}."
        + (
            " The table below has no row for it: each chip's row is the deployment of that chip that held slowed."
            if rowless
            else ""
        ),
        icon=":material/balance:",
    )


def _under_table(v: Any, quoted: str | None, rows: int, reran: bool = False) -> None:
    """The lines under the verdict's table: the run every row quotes (where one), whose ranges are which
    (`reran`), what a row's 'yes over 120 s' rests on, and the prices the catalog only assumes."""
    if quoted is not None:
        st.caption(_quoted_once(quoted, rows))
    if reran:  # the choice's '1,537 (the same ...)' beside another row's '1,537 (1,096–1,537)' (a review)
        st.caption(RANGES_NOTE)
    if said := holds_note(v.table["holds_text"], v.risk_aware):
        st.caption(sentence(plain(said)) + ".")
    # (opens with a chip's id, as written: not 'H100-sxm')
    if said := edge_premium_note(v.table, v.objective, v.nominal_run if v.premium_text() else None):
        st.caption(opening(plain(said)) + ".")
    if v.prices_text():  # a choice made on a price the catalog only assumes says so
        st.caption(sentence(plain(v.prices_text())) + ".")


RANGES_NOTE = (
    "Each range holds its figure's band and the runs of it with slowed chips: the choice's, its margin's reruns "
    "at both edges; the other rows', their own check with slowed chips. A latency's range is never narrower "
    "than its band (a TPOT range can reach past the margin's slowed rerun), a throughput's is cut where an "
    "open loop cannot serve more than it is sent. A latency with no band of its kind (a dense model's TTFT) "
    "spans its figure and those runs alone, so a row checked only with slowed chips has no lower side."
)
"""Said under the verdict's table: 'the choice's ranges are its own reruns'' stood over a TPOT range to
69.9 ms (its band's +72%) beside the margin's slowed rerun at 54.7 ms (a browser review); rows read
'431 (431–1,333)' under 'never narrower than its band' with no band to be narrower than (a review)."""


def _quoted_once(quoted: str, rows: int) -> str:
    """The run every row of the verdict's table quotes, said once under it."""
    run, fails = quoted.removesuffix(" (fails)"), quoted.endswith(" (fails)")
    whose = "Every row's figures are" if rows > 1 else "Its figures are"
    return f"{whose} quoted from its {plain(run)}" + (", where it fails its SLO." if fails else ".")


def run_mark(row: Any) -> str:
    """A run's mark from its ``calibration`` text ('calibrated', 'partly calibrated', 'uncalibrated')."""
    if not bool(row["calibrated"]):
        return "uncalibrated"
    return "partly calibrated" if str(row.get("calibration", "")).startswith("partly") else "calibrated"


def band_text(
    band: Any,
    modelled: float | None = None,
    slowed: float | None = None,
    faster: float | None = None,
    *,
    latency: bool = True,
) -> str:
    """' (−30% to +67%)' after a figure: its kind's band (fall, rise; '' when none is shown); with the
    figure as modelled and at its chips' two edges (the margin's reruns), how far they move it, as on
    Results: a latency never narrower than its kind's band, a goodput the moves alone once both are known."""
    if not all(isinstance(v, float) and np.isfinite(v) for v in band):
        return ""
    moves = [
        v / modelled - 1.0
        for v in (slowed, faster)
        if modelled and modelled > 0 and v is not None and math.isfinite(v)
    ]
    lo, hi = (min(moves), max(moves)) if moves else band
    if moves and (latency or len(moves) < 2):  # one side unknown: the kind's band there
        lo, hi = min(lo, band[0]), max(hi, band[1])
    text = ex.signed_text(lo, hi)
    return f" {text}" if text.startswith("±") else f" ({text})"


def margin_box(m: Margin, key: tuple[Any, ...]) -> None:
    """The margin for the model's error: the choice with slowed chips, and the cheapest that holds.
    Chip ids and shapes can come from a custom chip: they go through `plain`."""
    slow = plain(", ".join(f"{chip} {e:+.0%} time" for chip, e in m.slowdown.items()) or "no chip has a band")
    c = m.chosen
    latency = (
        c.latency_text(ex.latency)
        if hasattr(c, "latency_text")
        else ex.latency(f"TTFT p90 {duration_text(c.ttft_ms_p90)}", c.grows_rps)
    )
    figures = f"{attained(c.slo_attainment)}, {latency}"
    if c.shortfall_rps is not None:
        figures += f"; it falls behind its load, short by {rate2(c.shortfall_rps)} req/s"
    figures += c.capacity_text() if hasattr(c, "capacity_text") else ""
    head = (
        "**Margin for the model's error.** With every chip at the pessimistic edge of its throughput band "
        f"({slow}),"
    )
    with st.container(key="fg-plan-margin"):
        if m.holds:
            # the rule it passes by: '86.5% of requests within SLO' beside a form's 90% (the attainment rule's,
            # not the one in use) read as a fail (a browser review)
            by = rule_text(m.modelled.rule, m.modelled.attainment)
            st.info(f"{head} the chosen deployment still passes ({by}): {figures}.", icon=":material/shield:")
            return
        q = m.slowed
        if q.best_run is None:
            why = plain(m.nothing_text())
            st.warning(
                f"{head} the chosen deployment no longer passes ({figures}), and no deployment of this search "
                f"passes then ({q.simulated} simulation{'' if q.simulated == 1 else 's'}{'; ' + why if why else ''}).",
                icon=":material/gpp_maybe:",
            )
            return
        r = q.runs.iloc[q.best_run]
        more = plain(m.extra_text())
        holds = f"**{plain(r['shape'])} {plain(r['split'])}**, {_chips(r['chips'])}"
        cut = plain(m.cut_text())
        st.warning(
            f"{head} the chosen deployment no longer passes ({figures}). {sentence(m.pick_text())}: "
            f"{holds}, **\\${r['usd_per_hour']:,.2f}/h**{plain(m.pick_figure())} ({more})"
            + (f"; {cut}" if cut else "")
            + ".",
            icon=":material/gpp_maybe:",
        )
        if st.button(
            "Load the deployment that holds",
            key="fg-plan-load-margin",
            icon=":material/download:",
            disabled=stale_plan(),
        ):
            load_run(q, q.best_run, (*key, "slowed"))


def summary(p: Plan, edge: Margin | None = None) -> None:
    """The search's counts and its verdict; with the margin (`edge`), the verdict's TTFT, TPOT and
    goodput bands are how far the chosen deployment moved with slowed and faster chips."""
    ours = edge is not None and edge.chosen.run == p.best_run  # the margin of this plan's choice

    def rerun(check: Any) -> tuple[float | None, float | None, float | None]:
        if not (ours and check):
            return None, None, None
        # a latency that grows with run length is no edge; a TPOT that stays level is (`steady_reruns`)
        return (
            getattr(check, "ttft_ms_at_slo", None) if steady_reruns((check,), "ttft") else None,
            getattr(check, "tpot_ms_at_slo", None) if steady_reruns((check,), "tpot") else None,
            check.goodput_rps,
        )

    slow_ttft, slow_tpot, slow_goodput = rerun(edge.chosen if edge else None)
    fast_ttft, fast_tpot, fast_goodput = rerun(edge.faster if edge else None)
    counters(p)
    rule = getattr(p, "rule", "percentile")  # a plan kept from before pass rules
    attainment = getattr(p, "attainment", DEFAULT_ATTAINMENT)
    for note in getattr(p, "method", ()):  # how the runs were made (a plan kept from before: none)
        st.info(plain(note))
    if p.best_run is None:  # nothing chosen: the notes say why, first
        _notes(p.notes)
        return
    if getattr(p, "verdict", None) is not None and p.verdict.chosen is not None:
        verdict_box(p, (edge.chosen, edge.faster) if ours and edge is not None else ())
        _calibration(p, p.runs.iloc[p.best_run])
        _notes(p.notes, folded=True)
        return
    r = p.runs.iloc[p.best_run]
    pct = f"p{r.get('slo_percentile', 90.0):g}"
    ttft, tpot = r.get("ttft_ms_at_slo", r["ttft_ms_p90"]), r.get("tpot_ms_at_slo", r["tpot_ms_p90"])
    per = r.get("classes_at_slo")  # each latency held apart from its class's target
    shown = (ms_text(ttft, target_of(per, "ttft_ms", ttft)), ms_text(tpot, target_of(per, "tpot_ms", tpot)))
    meets = (
        "meets every SLO" if rule == "percentile" else f"keeps {attainment:.0%} of requests within their SLO"
    )
    band = {k: (r.get(f"{k}_fall"), r.get(f"{k}_rise")) for k in ("throughput", "ttft", "tpot")}
    goodput = band_text(band["throughput"], r["goodput_rps"], slow_goodput, fast_goodput, latency=False)
    st.success(
        f"Cheapest deployment that {meets} at {p.target_rps:g} req/s: **{plain(r['shape'])} {plain(r['split'])}** — "
        f"{_chips(r['chips'])}, **${r['usd_per_hour']:,.2f}/h**, goodput {r['goodput_rps']:.2f} req/s{goodput}, "
        f"TTFT {pct} {shown[0]}{band_text(band['ttft'], ttft, slow_ttft, fast_ttft)}, "
        f"TPOT {pct} {shown[1]}{band_text(band['tpot'], tpot, slow_tpot, fast_tpot)} "
        f"(simulated over {p.duration_s:g} s{_lead(p)})."
        + (_behind_when_slowed(edge.chosen) if ours and edge is not None else ""),
        icon=":material/check_circle:",
    )
    _calibration(p, r)
    _notes(p.notes, folded=True)


def _notes(notes: tuple[str, ...] | list[str], folded: bool = False) -> None:
    """The search's notes, each a warning (a sentence where it opens with a word, not a chip's id); under
    a choice (`folded`), in one expander after it: a plan that chose opened with three dense amber
    warnings above its green verdict, read as "something went wrong" (a browser review)."""
    if not notes:
        return
    said = [plain(opening(n)) + ("" if n.rstrip().endswith(".") else ".") for n in notes]  # each a sentence
    if not folded:
        for note in said:
            st.warning(note)
        return
    label = f"How the choice was searched and checked: {len(notes)} note{'s' if len(notes) != 1 else ''}"
    with st.expander(label, icon=":material/fact_check:"):
        for note in said:
            st.warning(note)


def _lead(p: Plan) -> str:
    """The unmeasured start a session workload's runs have before their window, or ''."""
    return f", after a {p.session_lead_s:g} s lead for its sessions' ramp" if p.session_lead_s > 0 else ""


def _behind_when_slowed(c: MarginCheck) -> str:
    """What the verdict adds where the choice, its chips slowed, falls behind its load: its latency
    grows with the run, or (a client's ceiling holding the backlog) the wait is at the client."""
    if c.shortfall_rps is None:
        return ""
    short = f"{rate2(c.shortfall_rps)} req/s"
    head = f" At the pessimistic edge of every chip's band it falls behind its load (short by {short})"
    if c.grows_rps is None:
        return f"{head}: the backlog waits at the client's ceiling on requests in flight, before it is sent."
    return f"{head}: its latency then {ex.GROWS}, so the bands' upper ends are the kinds' bands."


def _calibration(p: Plan, r: Any) -> None:
    """The band note and the chosen deployment's calibration badge."""
    if any(c.band for c in p.calibration):
        st.caption(plain(ex.BAND_NOTE))
    if "calibrated" in r:
        with st.container(
            key="fg-plan-calibration", horizontal=True, gap="small", vertical_alignment="center"
        ):
            marks.badge(run_mark(r), help=marks.MARK_HELP)
            rules = "; ".join(f"{c.hardware}: {c.rule}" for c in p.calibration if not c.fitted)
            chosen = {r.get(f"{role}_hardware") for role in ("prefill", "decode", "mixed")}
            shared = next((c.caveat for c in p.calibration if c.partial and c.hardware in chosen), "")
            said = f" ({shared})" if shared and run_mark(r) == "partly calibrated" else ""
            said += f". Uncalibrated chips of this search: {rules}." if rules else "."
            st.caption(plain(f"Chosen deployment: {r['calibration']}{said}"))


def load_run(p: Plan, run: int, key: tuple[Any, ...]) -> None:
    """Make a run's deployment the session's scenario, once per (plan, run), and redraw the page."""
    if st.session_state.get(LOADED) == (key, run):
        return
    if stale_plan():  # never over a scenario changed since the plan (the buttons are off then); not
        return  # marked loaded either, so the same row loads once the scenario is the plan's again
    st.session_state[LOADED] = (key, run)
    r = p.runs.iloc[run]
    if state.commit(p.scenario_of(run), "planner"):
        st.session_state[JUST_LOADED] = f"{r['shape']} {r['split']} at {p.target_rps:g} req/s"
        own_plan(state.scenario().model_dump_json())  # its own deployment: the plan is still this one's
        st.rerun()  # the sidebar and the share link follow the new scenario
