"""SLO targets: per class TTFT and TPOT targets and percentile; attainment and where each tail breaks."""

from typing import Any

import pandas as pd
import streamlit as st

from engine import explain as ex
from engine.costmodel import LEVELS, CostBasis
from engine.scenario import Slo, scenario_catalog
from ui import charts, export, layout, state, tables
from ui.bound import key_of, number, select, slider
from ui.forms import model_form
from ui.labels import show_number
from ui.shapes import field_shape
from ui.text import plain

res = layout.page(
    "SLO targets",
    "A request meets its SLO when its TTFT and TPOT are within target, and its largest gap between tokens (TBT) "
    "and end-to-end time (E2E) where a class sets those; a class passes when the chosen percentile of each is "
    "within target (rejected and failed requests count as late).",
)
sc = state.scenario()
PERCENTILES = [50.0, 75.0, 90.0, 95.0, 99.0, 99.9]
REJECTS = "admission control (early_reject) turns away a request whose predicted TTFT misses its target"
steering = [REJECTS] if sc.scheduler.admission.name == "early_reject" else []
if sc.scheduler.queue.name == "edf":
    steering.append("the queue (edf) serves the earliest deadline first")
if steering:  # one class's target moved every class's figures, unsaid (a review)
    st.caption(
        "Here the targets also steer the run, not only judge it: "
        + "; ".join(steering)
        + ". A change to one class's target can move every class's figures."
    )


def target(path: str, what: str, sweep: tuple[float, float, float]) -> None:
    """A latency target: a slider over the usual `sweep` (low, high, step) and a box that takes any
    value the scenario allows, typed (a slider alone cannot hit 733 ms, nor go past its end)."""
    lo, hi, step = sweep
    # the scenario's own range (a box that refused under 0.1 ms showed a link's 0.05 as 0.1: a review)
    allowed_ms = field_shape(Slo, path.rsplit(".", 1)[1])
    left, right = st.columns([2, 1], vertical_alignment="bottom")
    with left:
        # "localized": 1,000 as the captions write it (a printf format has no thousands separator)
        slider(path, lo, hi, f"{what} target (ms)", step=step, fmt="localized")
    with right:
        number(
            path,
            "Exact",  # the unit is the slider's, beside it: "Exact (ms)" wrapped onto two lines
            key=f"{key_of(path)}-typed",
            lo=allowed_ms.lo,
            hi=allowed_ms.hi,
            fmt="%g",
            what=f"{what} target (ms)",
            step=step,
            help=f"Any {what} target from {allowed_ms.lo:g} to {allowed_ms.hi:,.0f} ms, typed.",
        )


# The optional targets (E2E, TBT): a column each beside the percentile, on a row under the two latency
# targets (stacked in one column, TBT sat alone on a line of its own). Seven widgets on one row read
# "Exa/ct", "Percentil/e" and "10(" for 1,000 at 1,100 px (a review): two rows of two and three.
OPTIONAL = [n for n in Slo.model_fields if n not in ("ttft_ms", "tpot_ms", "percentile")]

unmeetable = ex.under_first_token(sc)  # a TTFT target under what every first token takes (a review)
for i, cls in enumerate(sc.workload.classes):
    path = f"workload.classes[{i}].slo"
    with st.container(border=True):
        st.markdown(f"**{plain(cls.name)}** · priority {cls.priority}")
        if i in unmeetable:
            st.warning(plain(unmeetable[i]) + ".", icon=":material/warning:")
        c1, c2 = st.columns(2, gap="medium")
        c3, *rest = st.columns(1 + len(OPTIONAL))
        with c1:
            target(f"{path}.ttft_ms", "TTFT", (50.0, 10_000.0, 50.0))
        with c2:
            target(f"{path}.tpot_ms", "TPOT", (5.0, 300.0, 1.0))
        with c3:
            select(f"{path}.percentile", PERCENTILES, "Percentile", format_func=lambda p: f"p{p:g}")
        for col, name in zip(rest, OPTIONAL, strict=True):
            with col:
                model_form(path, Slo, only=[name], columns=1)


# the most each per-chip cost field allows (`engine.costmodel.ownership.CostBasis`)
PER_CHIP_MAX = {
    "usd_per_hour": 1_000,
    "capex_usd": 10_000_000,
    "server_capex_usd": 10_000_000,
    "porting_engineer_months": 10_000,
}
PORTING = ("usd_per_engineer_month",)  # drawn with the porting inputs, not in the generic form


def chip_price(field: str, chip_id: str, key: str, what: str, lo: str) -> None:
    """A per-chip price typed in: applied if allowed, else refused with the field and its range."""
    value = float(st.session_state[key])
    low_ok = value > 0 if field in ("capex_usd", "usd_per_hour") else value >= 0
    if not low_ok or value > PER_CHIP_MAX[field]:
        state.notify(  # keyed by the chip's field: a later refusal replaces it, an accepted price settles it
            f"{what} (cost.{field}.{chip_id}): {show_number(value)} is not allowed: {lo}, "
            f"up to {PER_CHIP_MAX[field]:,}",
            key=state.field_key([f"cost.{field}.{chip_id}"]),  # (two stayed for one field: a review)
        )
        return
    prices = dict(getattr(state.scenario().cost, field))
    if state.override({f"cost.{field}": {**prices, chip_id: value}}, what):
        state.dismiss(state.field_key([f"cost.{field}.{chip_id}"]))


def chip_input(
    box: Any,
    field: str,
    chip_id: str,
    label: str,
    what: str,
    lo: str,
    shown: float,
    *,
    step: float,
    fmt: str,
    help: str,
) -> None:
    """A per-chip cost box showing the scenario's value (after any refusal too), applied by `chip_price`."""
    key = f"fg:cost.{field}:{chip_id}"
    if st.session_state.get(key) != shown:
        st.session_state[key] = shown
    box.number_input(
        label,
        step=step,
        format=fmt,
        key=key,
        on_change=chip_price,
        args=(field, chip_id, key, what, lo),
        help=help,
    )


def porting_field(chip_id: str) -> None:
    """A chip's one-off porting effort (engineer-months): the basis' own, else its pools' maturity level's."""
    level = next((p.maturity for p in sc.deployment.pools if p.hardware == chip_id and p.maturity), None)
    default = LEVELS[level].engineer_months if level else 0.0
    chip_input(
        st,
        "porting_engineer_months",
        chip_id,
        f"{plain(chip_id)}: porting (engineer-months)",
        f"{chip_id} porting",
        "0 or more",
        float(sc.cost.porting_engineer_months.get(chip_id, default)),
        step=1.0,
        fmt="%.1f",
        help=f"One-off effort to run the model on {chip_id} under the scenario's stack, amortised over the "
        f"years above at the price per engineer-month. Default: its pools' software maturity "
        f"({level or 'not stated'}: {default:g}; Strategy page). Allowed: 0 to 10,000.",
    )


# keyed: its identity no longer follows `expanded`, so choosing "rented" inside it leaves it open (it
# collapsed under the user's click); it opens by itself where the scenario owns its chips
with st.expander(
    "Cost basis", expanded=sc.cost.mode == "own", icon=":material/payments:", key="fg-cost-basis"
):
    st.caption(
        "What cost per request is measured in: **rent** bills every chip at its catalog price per hour, or "
        "yours (most catalog rents are assumptions); **own** "
        "bills capital (chip and server share written off over the years), hosting (colocation per kW of "
        "provisioned power) and the run's energy times PUE. Sources: docs/cost-model.md."
    )
    select(
        "cost.mode",
        ["rent", "own"],
        "Chips are",
        horizontal=True,
        format_func=lambda m: {"rent": "rented", "own": "owned"}.get(m, str(m)),
    )
    if sc.cost.mode == "rent":
        cat = scenario_catalog(sc)
        for chip_id in sorted({p.hardware for p in sc.deployment.pools if p.hardware in cat.hardware}):
            hw = cat.hardware[chip_id]
            chip_input(
                st,
                "usd_per_hour",
                chip_id,
                f"{plain(chip_id)}: rent ($ per chip-hour)",
                f"{chip_id} rent",
                "above 0",
                float(hw.usd_per_hour),
                step=0.1,
                fmt="%g",  # (a quote of $0.001 read 0.00: a review)
                help=f"Price source: {plain(hw.sources.get('usd_per_hour') or 'none')}. Your quote replaces it "
                "(cost.usd_per_hour). Allowed: above 0, up to $1,000.",
            )
    if sc.cost.mode == "own":
        model_form(
            "cost",
            CostBasis,
            only=[n for n in CostBasis.model_fields if n not in ("mode", *PORTING, *PER_CHIP_MAX)],
        )
        number(
            "cost.usd_per_engineer_month",
            "Porting ($ per engineer-month)",
            lo=0.0,
            hi=1_000_000.0,
            step=1000.0,
            help="The price of one engineer-month of porting a chip's stack (assumption: $300,000 a year fully "
            "loaded). A chip's engineer-months below default to its pools' software maturity (Strategy page).",
        )
        cat = scenario_catalog(sc)
        for chip_id in sorted({p.hardware for p in sc.deployment.pools if p.hardware in cat.hardware}):
            hw = cat.hardware[chip_id]
            c1, c2 = st.columns(2)
            for col, field, what, lo in (
                (c1, "capex_usd", "purchase price", "above 0"),
                (c2, "server_capex_usd", "server share", "0 or more"),
            ):
                chip_input(
                    col,
                    field,
                    chip_id,
                    f"{plain(chip_id)}: {what} ($)",
                    f"{chip_id} {what}",
                    lo,
                    float(dict(getattr(sc.cost, field)).get(chip_id, getattr(hw, field)) or 0.0),
                    step=500.0,
                    fmt="%.0f",
                    help=f"Catalog: {hw.sources.get(field) or 'no price'}. Allowed: {lo}, up to $10,000,000.",
                )
            porting_field(chip_id)

if res is None:
    st.stop()

st.subheader(
    "Attainment per class",
    help="SLO attainment: share of the class's requests that met every target of their class. "
    "'Holds to p…': the percentile up to which each latency stays within target; below the SLO percentile, the tail breaks.",
)
tail = ex.slo_tail(sc, res.requests)


def _holds(pct: float) -> str:
    """How far into the tail a target holds: 'every request within it', or 'holds to p97.3'."""
    if pct >= 100.0:
        return "every request within it"
    held = tables.holds_pct(pct)
    return "no request within it" if held <= 0 else f"holds to p{held:g}"  # ('holds to p0': a browser review)


short = ex.shortfall_rps(res.summary)  # unsustainable: no class passes


def marked(row: dict[str, Any], kind: ex.LatencyKind) -> str:
    """A class's figure of `kind` at its percentile, marked where it grows with run length (unless
    held at the client) or stays level while the queue grows (`ex.marked`); 'never answered' where the
    percentile's rank falls among rejected or failed requests (it read '–' with no reason: a review)."""
    value = row[f"{kind}_at_percentile_ms"]
    # TTFT's and TPOT's say how far they hold; an E2E or a largest gap has a figure unless it is late
    holds = row.get(f"{kind}_holds_to_pct", 0.0 if kind in ("e2e", "max_tbt") else 100.0)
    if (value is None or pd.isna(value)) and holds < 100.0:
        return "never answered (its rank falls among rejected or failed requests)"
    return ex.marked(layout.fmt_ms(value), res.summary, kind)


def at_ms(row: dict[str, Any], kind: str) -> float | None:
    """A class's figure of `kind` at its percentile in ms (None: none), for its target's unit."""
    v = row.get(f"{kind}_at_percentile_ms")
    return None if v is None or pd.isna(v) else float(v)


if (behind := ex.line(res.summary)) is not None:
    st.error(plain(behind), icon=":material/trending_up:")
if (rising := ex.rising_line(res.summary)) is not None:
    st.container(key="fg-rising").warning(plain(rising), icon=":material/trending_up:")
tbt_targeted = {c.name for c in sc.workload.classes if c.slo.tbt_ms}
for row in tail.to_dict("records"):
    if not row["requests"]:  # a rare class that drew none: no verdict (it fails no plan either)
        st.info(
            f"**{plain(row['class'])}** has no request in the window: not judged.", icon=":material/info:"
        )
        continue
    passes = row["passes"] and short is None
    within = row["passes"] and not passes  # within target, in a run that falls behind its load
    verdict = "passes" if passes else ex.within_only(res.summary) if within else f"fails on {row['breaks']}"
    icon = ":material/check_circle:" if passes else ":material/info:" if within else ":material/cancel:"
    pct = f"p{row['percentile']:g}"
    ttft, tpot = marked(row, "ttft"), marked(row, "tpot")
    msg = (
        f"**{plain(row['class'])}** {plain(verdict)} at {pct}: TTFT {pct} = {ttft} (target "
        f"{layout.fmt_target(row['ttft_target_ms'], at_ms(row, 'ttft'))}, {_holds(row['ttft_holds_to_pct'])}); "
        f"TPOT {pct} = {tpot} "
        f"(target {layout.fmt_target(row['tpot_target_ms'], at_ms(row, 'tpot'))}, {_holds(row['tpot_holds_to_pct'])})"
        + (
            f"; largest gap between tokens {pct} = "
            f"{marked(row, 'max_tbt')} "
            f"(target {layout.fmt_target(row['tbt_target_ms'], at_ms(row, 'max_tbt'))}). "
            if row["class"] in tbt_targeted
            else ". "
        )
        + (
            f"E2E {pct} = {marked(row, 'e2e')} (target {layout.fmt_target(row['e2e_target_ms'], at_ms(row, 'e2e'))}). "
            # a class without one reads NaN where another class sets one (truthy: 'E2E p90 = – (target –)')
            if pd.notna(row.get("e2e_target_ms")) and row.get("e2e_target_ms")
            else ""
        )
        + f"{row['slo_attainment']:.1%} of its requests met every target."
    )
    (st.success if passes else st.info if within else st.error)(msg, icon=icon)  # (as the advisor says it)

targets = ex.slo_targets(sc)
# said once over both charts: each column carried the same line (a review)
st.caption("Where a curve crosses its dashed target, the tail breaks; the dotted line is the SLO percentile.")
# the largest gap and E2E too where a class sets their targets: a class failing on them stood beside
# TTFT and TPOT curves well under theirs (a browser review)
metrics = ["ttft", "tpot"] + [m for m in ("max_tbt", "e2e") if (targets["metric"] == m).any()]
ends = []  # where curves stop early: said once under the charts (TTFT's and TPOT's stop at the same rank)
for pair in (p for p in (metrics[:2], metrics[2:]) if p):
    for col, metric in zip(st.columns(2), pair, strict=False):
        with col:
            curves = ex.tail_curves(sc, res.requests, metric)  # type: ignore[arg-type]
            export.chart(
                charts.tail(curves, metric, targets),
                sc,
                f"{metric}_tail",
            )
            ends.append(ex.tail_end_text(curves))
for said in dict.fromkeys(e for e in ends if e):
    st.caption(said)
