"""Compare: two scenarios side by side, with overlaid latency CDFs and a table of differences."""

import pandas as pd
import streamlit as st

from engine import explain as ex
from engine.core import ScenarioError
from engine.explain import compare_with_noise, with_mode
from engine.scenario import Scenario, preset_names
from ui import charts, export, layout, lesson, margin, marks, replicas, sim, state, tables
from ui.text import plain

layout.page(
    "Compare",
    "Two scenarios side by side: on the same requests (a paired comparison) where their workload and seed are "
    "the same.",
    live=False,
)
current = state.scenario()
other = "disaggregated" if current.deployment.mode == "colocated" else "colocated"
CURRENT, SWITCHED = "current", "current, other mode"
paired = current.counterpart in preset_names()  # its counterpart preset, on this scenario's load
# Options are plain words: the choices are bound to the URL (?a=...&b=...) as they read.
CHOICES = [CURRENT, SWITCHED, *([lesson.PAIRED] if paired else []), *preset_names()]
HELP = (
    f"**{CURRENT}**: the scenario you are editing. **{SWITCHED}**: the same, served {other} "
    "(same chips, split or merged)."
    + (
        f" **{lesson.PAIRED}**: its counterpart preset serving this scenario's workload, window and seed."
        if paired
        else ""
    )
    + " Or any shipped preset."
)


def scenario_of(choice: str) -> Scenario:
    """The scenario a choice names."""
    if choice == CURRENT:
        return current
    if choice == SWITCHED:
        return with_mode(current, other)
    if choice == lesson.PAIRED:
        return ex.with_load_of(state.preset(str(current.counterpart)), current)
    return state.preset(choice)


for side in ("a", "b"):  # a link's choice the page does not know is said, then left to the default
    if side in st.query_params and (asked := str(st.query_params[side])) not in CHOICES:
        st.warning(
            f"Scenario {side.upper()}: {plain(repr(asked[:60]))} is not a choice ('{CURRENT}', '{SWITCHED}' "
            "or a preset's name); showing the default.",
            icon=":material/link_off:",
        )
        del st.query_params[side]
B_FOR = "fg_compare_b_for"
c1, c2, c3 = st.columns([5, 5, 3])  # the Seeds box (130 px) fits at 1,100 px
# A is the scenario; B what it is measured against, as the lesson's link opens it: its preset
# counterpart (the same requests), else the same scenario served the other way
default_b = (
    (lesson.PAIRED if lesson.load_edited(current) else str(current.counterpart)) if paired else SWITCHED
)
# another preset: B starts again from its default (it kept the last preset's: moe-deepseek-h200's
# moe-deepseek-dp-ep stood beside sram-decode-groq, another model, 'not paired', a browser review)
if state.moved_on(B_FOR, state.preset_name()):
    st.session_state.pop("b", None)
    if "b" in st.query_params:
        del st.query_params["b"]
a_key = c1.selectbox(
    "Scenario A", CHOICES, index=CHOICES.index(CURRENT), key="a", bind="query-params", help=HELP
)
b_key = c2.selectbox(
    "Scenario B", CHOICES, index=CHOICES.index(default_b), key="b", bind="query-params", help=HELP
)
try:
    sa, sb = scenario_of(a_key or CURRENT), scenario_of(b_key or CURRENT)
except ScenarioError as exc:  # switching modes can fail validation; say so
    st.error(f"Cannot build that pair: {plain(exc)}")
    st.stop()


def unshared(b: str | None) -> list[str]:
    """A's edits that B, its counterpart preset, does not take (`ex.unshared_edits`), where A is the
    scenario being edited: the CLI's compare put an 8B model against the counterpart's 70B unsaid (a review)."""
    if a_key not in (CURRENT, None) or b not in (lesson.PAIRED, str(current.counterpart)):
        return []
    return ex.unshared_edits(state.preset(state.preset_name()), current)


models_differ = sa.model.id != sb.model.id  # each side's model said (B's Llama-3.1-70B beside A's
# DeepSeek-V3 was never named, its cost 82.6% lower read as the deployment's: a review)
for col, key, chosen in ((c1, a_key, sa), (c2, b_key, sb)):  # an edited scenario named for what it runs
    mine = key in (CURRENT, SWITCHED, None)
    col.caption(
        plain((state.named(chosen) if mine else chosen).name)
        + (f", served {other}" if key == SWITCHED else "")
        + (f" · {changed}" if key == SWITCHED and (changed := ex.chips_changed(current, chosen)) else "")
        + (f" · {split}" if key == SWITCHED and (split := ex.split_text(current, chosen)) else "")
        + (", on this scenario's workload, window and seed" if key == lesson.PAIRED else "")
        + (f" · model {plain(chosen.model.id)}" if models_differ else "")
        + (f" · not A's changes to {', '.join(kept)}" if key == b_key and (kept := unshared(key)) else "")
    )
with c3:
    n_seeds = replicas.picker("compare")


def side(key: str | None, chosen: Scenario) -> tuple[str, str, int, str]:
    """A side's file-name stem, name, seed and scenario TOML, for the exports (`export.Pair`)."""
    stem = state.preset_name() + ("-edited" if state.edited() else "")
    stem = key if key not in (CURRENT, SWITCHED, None) else stem + (f"-{other}" if key == SWITCHED else "")
    stem = f"{current.counterpart}-this-load" if key == lesson.PAIRED else stem
    mine = key in (CURRENT, SWITCHED, None)
    shown = state.named(chosen) if mine else chosen
    return stem, shown.name, chosen.seed, state.scenario_toml(shown)


PAIR = (side(a_key, sa), side(b_key, sb))
ra, rb = sim.result(sa, "scenario A"), sim.result(sb, "scenario B")
if ra is None or rb is None:
    st.stop()
ta, tb = ex.pool_marks(sa, ra.summary), ex.pool_marks(sb, rb.summary)
for col, side, trust in ((c1, "A", ta), (c2, "B", tb)):
    with col:
        marks.run_mark(trust, key=f"fg-calibration-{side.lower()}")
unpaired = ex.unpaired(sa, sb)
if sa == sb:  # every change read 0.0% with nothing to say why (a browser review)
    st.info(
        "A and B are the same scenario: every change reads zero. Choose another preset, or edit the scenario on the "
        "other pages, for one side.",
        icon=":material/drag_handle:",
    )
if models_differ:
    st.warning(
        f"A serves {plain(sa.model.id)} and B {plain(sb.model.id)}: different models, so every change from A to B "
        "is as much the model's as the deployment's.",
        icon=":material/compare_arrows:",
    )
if unpaired:
    st.info(
        "A and B have different workloads, windows or seeds: they do not see the same requests, so the comparison "
        "is not paired, and a change from A to B is as much the load's as the deployment's (the cards' changes are "
        "grey)."
    )

judged = ex.target_differences(sa, sb)  # a class's targets set otherwise on one side: no verdict on them
if judged:
    st.warning(plain(ex.targets_note(judged)), icon=":material/rule:")
for side, run in (("A", ra), ("B", rb)):  # before the figures it qualifies
    if (behind := ex.line(run.summary)) is not None:
        st.error(plain(f"{side}: {behind}"), icon=":material/trending_up:")
    if (rising := ex.rising_line(run.summary)) is not None:
        st.container(key=f"fg-rising-{side}").warning(
            plain(f"{side}: {rising}"), icon=":material/trending_up:"
        )
reps = replicas.run([sa, sb], n_seeds)  # None with one seed, or until the other seeds are done


def behind(side: int, kind: ex.LatencyKind) -> float | None:
    """Side `side`'s shortfall where its latency of `kind` grows with the run's length (not where a
    client's ceiling holds the backlog, nor a TPOT that stays level); with seeds, any seed's whose
    queue kept growing: it is in the means the cards show."""
    if reps:
        return reps[side].worst_growing(kind)
    return ex.latency_shortfall((ra, rb)[side].summary, kind)


def _level(side: int, kind: ex.LatencyKind) -> bool:
    """Whether side `side`'s latency of `kind` stays level while its queue grows (`ex.level`)."""
    return reps[side].level(kind) if reps else ex.level((ra, rb)[side].summary, kind)


table = ex.with_expected_error(  # each side's band cut where its load bounds it, as its card's is
    compare_with_noise(*reps, paired=not unpaired) if reps else ex.compare(ra.summary, rb.summary),
    ta,
    tb,
    (ex.limits(ra.summary, sa), ex.limits(rb.summary, sb)),
)
# with seeds, a side meets its SLO where it did in every seed (the table shows their means)
judged_a, judged_b = (reps[0].mean_summary(), reps[1].mean_summary()) if reps else (ra.summary, rb.summary)
table = ex.verdicts(table, sa, sb, judged_a, judged_b)
if reps:
    replicas.caption(reps[0], "Utilisation and cost by part at the bottom are each side's first seed.")
ha, hb = ex.headline(ra.summary), ex.headline(rb.summary)
bases_differ = (ma := ra.summary["cost"].get("mode", "rent")) != (
    mb := rb.summary["cost"].get("mode", "rent")
)
if bases_differ:
    st.info(
        f"A's chips are costed {'owned' if ma == 'own' else 'rented'}, B's {'owned' if mb == 'own' else 'rented'}: "
        "cost per request compares a rental bill with an ownership bill (see Cost by part below).",
        icon=":material/payments:",
    )
# another price on one side (a rent set on the SLO page): a cost change that is the price's, not the
# deployment's, read '-49.7%' on the card with one caption at the page's foot saying why (a review)
priced_apart = not bases_differ and sa.cost != sb.cost
if priced_apart:
    st.info(
        "A and B are priced differently (their cost bases differ: a chip's rent, purchase price or energy): a "
        "change in cost per request is as much the prices' as the deployments'.",
        icon=":material/payments:",
    )
change = table.set_index("figure")["change_pct"]
points = table.set_index("figure")["change_points"]
noise = table.set_index("figure")["within_noise"] if reps else None
better = table.set_index("figure")["better"]
HEAD = (  # the comparison table's figure names; each card reads the Results cards' name (`layout.LABELS`)
    ("TTFT p99", "ttft_p99_ms", layout.fmt_ms, True),
    ("TPOT p99", "tpot_p99_ms", layout.fmt_ms, True),
    ("SLO attainment", "slo_attainment", layout.fmt_pct, False),
    ("Goodput", "goodput_rps", layout.fmt_rps, False),
    ("Cost per request", "usd_per_request", layout.fmt_usd, True),
)


# the side that misses its SLO where the other meets it: its bill per request buys less (a review read
# an MI300X side 24% cheaper whose requests met the SLO 62.9% of the time against 94.6%)
missing = ex.misses_slo(side) if (side := ex.missing_side(judged_a, judged_b)) else ""
neither = ex.both_miss(judged_a, judged_b)  # every bill buys requests that miss: none is better
# which side's bill rests on a price the catalog assumes, for the cost card (the cost basis names it)
sides_assumed = [s for s, r in (("A", ra), ("B", rb)) if r.summary["cost"].get("assumed_prices")]
assumed = (
    "A's and B's prices assumed"
    if len(sides_assumed) == 2
    else "".join(f"{s}'s price assumed" for s in sides_assumed)
)


def _signed_card(delta: str | None, grey: bool, flat: bool, inverse: bool) -> tuple[str | None, str, str]:
    """A card's change (B against A) with the page's minus sign, and its colour and arrow: Streamlit reads
    a fall from an ASCII '-' only, so a fall's are set here ('-22.0% vs A's' stood beside the table's
    '−22.0%': a review). `grey`: no colour; `flat`: no arrow; `inverse`: lower is better."""
    color, arrow = ("off" if grey else "inverse" if inverse else "normal"), "off" if flat else "auto"
    signed = ex.minus(delta) if delta else delta
    if signed != delta:  # a fall
        arrow = "off" if flat else "down"
        color = "off" if grey else "green" if inverse else "red"
    return signed, color, arrow


def headline_row(moves_a: ex.Moves | None, moves_b: ex.Moves | None) -> None:
    """B's headline figures with the change from A and A's figure, each with its band (its run's
    spread once known, else its kind's error), A's band in the help."""
    # "mean ± x" and a band are wider: let the metrics wrap rather than cut their values
    wide = bool(reps) or any(
        ex.headline_range(t, k) is not None for t in (ta, tb) for _, k, *_ in HEAD if k in ex.HEADLINE_SOURCES
    )
    final = "-spread" if moves_a is not None else ""  # (drawn twice in one run: a key each time)
    row = st.container(horizontal=True, gap="small", key=f"fg-wide-cards{final}") if wide else None
    for col, (label, k, fmt, inverse) in zip(st.columns(5) if row is None else [row] * 5, HEAD, strict=True):
        pct, pts = change.get(label), points.get(label)
        text = tables.change_text(pct, pts)
        still = text is not None and not layout.shows_change(text)  # rounds to 0.0: no arrow, no colour
        if still:  # unsigned, as the same figure on both sides reads
            text = "0.0 pts" if pts is not None and pd.notna(pts) else "0.0%"
        quiet = noise is not None and bool(noise.get(label, False))  # the 95% intervals overlap
        apart = (bases_differ or priced_apart) and k == "usd_per_request"  # bills on other bases: no verdict
        targets = bool(judged) and k in ("slo_attainment", "goodput_rps")  # counted against other targets
        va, vb = (
            (replicas.pm(k, reps[0].headline[k]), replicas.pm(k, reps[1].headline[k]))
            if reps
            else (fmt(ha[k]), fmt(hb[k]))
        )
        # A's figure on the card, not only in its help: a reader compared B's 810 ms with nothing (a review)
        delta = f"{text} vs A's {va}" if text is not None else None
        kind = layout.GROWING.get(k)
        behind_a, behind_b = (None, None) if kind is None else (behind(0, kind), behind(1, kind))
        # a latency set by a run's length is a floor, not a figure with a band ('≥ 11.4 min (−63% to +51%)')
        if behind_a is None:
            va = ex.with_band(*marks.value_parts(va, ta, k, bool(reps), ex.limits(ra.summary, sa), moves_a))
        if behind_b is None:
            vb = ex.with_band(*marks.value_parts(vb, tb, k, bool(reps), ex.limits(rb.summary, sb), moves_b))
        if delta and apart:
            delta = f"{delta} · {'another cost basis' if bases_differ else 'other prices'}"
        elif delta and k == "usd_per_request" and assumed:  # a price the catalog assumes (a review)
            delta = f"{delta} · {assumed}"
        if delta and k == "usd_per_request" and missing:  # cheaper, and failing its SLO (a review)
            delta = f"{delta} · {missing}"
        # a cheaper side that misses its SLO, or two that both miss, is no better: the card read green (a review)
        cheaper = "" if pct is None or pd.isna(pct) or pct == 0 else "B" if pct < 0 else "A"
        no_win = k == "usd_per_request" and (neither or (bool(side) and side == cheaper))
        if delta and k == "usd_per_request" and neither:
            delta = f"{delta} · {ex.BOTH_MISS}"
        if delta and targets:
            delta = f"{delta} · other targets"
        if delta and unpaired:
            delta = f"{delta} · not paired"
        grows = behind_a is not None or behind_b is not None
        if kind is not None:  # a latency set by a run's length, or a decode pace level while a queue grows
            va = ex.latency(ex.at_least(va, behind_a), behind_a, _level(0, kind))
            vb = ex.at_least(vb, behind_b) if behind_b is not None else ex.latency(vb, None, _level(1, kind))
        if k in layout.COSTS:  # a side that cannot keep up bills full batches serving a backlog late
            va = ex.latency(
                va, None, ex.shortfall_rps(ra.summary) is not None
            )  # (cheaper, no better: Results)
            vb = ex.latency(vb, None, ex.shortfall_rps(rb.summary) is not None)
        if grows:  # marked, and no change from A
            # whose: a card of B's that only read 'grows with run length' seemed to say B's figure grew
            who = "A's and B's grow" if behind_a is not None and behind_b is not None else "A's grows"
            delta = ex.GROWS if behind_a is None else f"{who} with run length"
        # the table's 'same' (within half a percent) is no card's red: −0.3 pts of 100% read red beside it
        alike = better.get(label) == "same"
        grey = quiet or still or apart or targets or grows or unpaired or no_win or alike
        delta, color, arrow = _signed_card(delta, grey, still or grows, bool(inverse))
        col.metric(
            f"{layout.LABELS[k]}: B",
            vb,
            delta=f"{delta} · within noise" if delta and quiet else delta,
            delta_color=color,
            delta_arrow=arrow,
            help=f"A: {va}. {layout.METRIC_HELP[k]}",
            border=True,
            width="content" if wide else "stretch",
        )


head = st.empty()  # drawn now with the kinds' errors, again at the end with each side's spread
with head.container():
    headline_row(None, None)
spread_note = st.empty()
spread_note.caption(margin.PROVISIONAL)  # until each side's spread replaces the kinds' bands

names = sorted({c.name for c in sa.workload.classes} & {c.name for c in sb.workload.classes})
cls = st.segmented_control(
    "Class in the charts",
    ["all", *names] if len(names) > 1 else names or ["all"],
    default=(names[0] if len(names) == 1 else "all"),
    format_func=plain,  # a class's name is the user's text: an option renders Markdown ('www.…' linked)
    key="fg:cmp-class",
    help="The three CDFs below draw this class; the table and the changes under them are of every class "
    "(each class's figures against its targets: the SLO targets page).",
)
cols = st.columns(3)
for col, metric in zip(cols, ("ttft", "tpot", "e2e"), strict=True):
    fa = reps[0].bands[metric] if reps else ex.latency_cdfs(sa, ra.requests, metric)  # type: ignore[arg-type]
    fb = reps[1].bands[metric] if reps else ex.latency_cdfs(sb, rb.requests, metric)  # type: ignore[arg-type]
    frame, shared = ex.paired_cdfs(fa, fb, cls or "all")
    targets = ex.paired_targets(sa, sb, shared)  # B's own where it asks otherwise
    colors, dashes = {"A": charts.PAIR[0], "B": charts.PAIR[1]}, {"B": "dash"}
    name = charts.METRIC_NAMES[metric]
    if reps:
        fig = charts.cdf_band(
            frame,
            metric,
            targets,
            seeds=n_seeds,
            series="run",
            colors=colors,
            dashes=dashes,
            columns=3,
            title=f"{name}: A vs B, {n_seeds} seeds",  # 'mean of 3 se' at a third of 1,100 px (a review)
        )
    else:
        fig = charts.cdf(
            frame,
            metric,
            targets,
            series="run",
            colors=colors,
            dashes=dashes,
            columns=3,
            title=f"{name} CDF: A vs B",
        )
    with col:
        export.chart(fig, current, f"compare_{metric}_cdf", title=f"{metric} CDF, A vs B", pair=PAIR)

# the table across the page, every row in view: a column sized to its first rows cut a small
# cost's leading digits ($0.0005415 read '0005415') in the rows scrolled to
config = {**tables.COMPARE, **replicas.COMPARE_COLUMNS} if reps else tables.COMPARE
table_slot = st.empty()  # drawn now with the kinds' bands, again at the end with the runs' spreads


def draw_table(shown: pd.DataFrame) -> None:
    """The comparison table, every row in view; a figure without a band reads '–' there, as the CLI's '-'
    (an empty cell read as a band still to come)."""
    if "band" in shown:
        shown = shown.assign(band=[b or None for b in shown["band"]])
    table_slot.dataframe(
        tables.compare_styled(shown),
        hide_index=True,
        width="stretch",
        height=tables.rows_height(len(shown)),
        column_config=config,
        placeholder="–",
    )


if (
    cls and cls != "all" and len(names) > 1
):  # the picker draws the charts only (a review read the table as batch's)
    st.caption(f"The table and the changes below are of every class, not {plain(cls)} alone.")
draw_table(table)
# a call the band does not back (a review)
unbacked = ex.inside_band(table, ta, tb)
if inside := ex.inside_band_note(unbacked, "'Check the comparison' below reruns both"):
    st.caption(plain(inside))
with st.container():
    export.chart(
        charts.compare_bars(table, ("A", "B"), height=420, unbacked=unbacked),
        current,
        "compare_changes",
        title="changes from A to B",
        pair=PAIR,
    )

margin.compare_panel(ra, rb)  # when asked: the spreads' slower runs

# one table each across the page, A's rows then B's: side by side they ran past the right edge at 1,100 px
st.markdown("**Utilisation**")
several = len(ra.summary.get("utilization", {})) > 1 or len(rb.summary.get("utilization", {})) > 1
st.dataframe(  # (each side's pools' share of its bill, where either side has several pools)
    tables.by_side(
        [("A", ex.utilization_frame(ra.summary, several)), ("B", ex.utilization_frame(rb.summary, several))],
        "pool",
    ),
    hide_index=True,
    width="stretch",
    column_config=tables.UTILIZATION,
    placeholder="–",
)
bases = {label: plain(ex.cost_basis(run.summary)) for label, run in (("A", ra), ("B", rb))}
st.markdown(
    f"**Cost by part** ({bases['A']})"
    if bases["A"] == bases["B"]
    else f"**Cost by part** (A: {bases['A']}; B: {bases['B']})"
)
parts = [(label, tables.cost_view(ex.cost_parts(run.summary))) for label, run in (("A", ra), ("B", rb))]
st.dataframe(tables.by_side(parts, "part"), hide_index=True, width="stretch", column_config=tables.COST_PARTS)
kinds = [(label, tables.cost_view(ex.cost_kinds(run.summary))) for label, run in (("A", ra), ("B", rb))]
if any(len(k) for _, k in kinds):  # owned chips: the bill by kind (capital, hosting, energy)
    st.markdown("**Cost by kind**")
    st.dataframe(
        tables.by_side(kinds, "kind"), hide_index=True, width="stretch", column_config=tables.COST_PARTS
    )


# each side's spread last, so the page is drawn first (cached with the Results page's)
spreads = (margin.spread(ra), margin.spread(rb))
if spreads[0] is None or spreads[1] is None:
    spread_note.empty()  # the engine refused a side's spread: the kinds' bands stay
if spreads[0] is not None and spreads[1] is not None:
    moved = (spreads[0].moves(), spreads[1].moves())
    with head.container():
        headline_row(*moved)
    # as the cards now read them
    limits = (ex.limits(ra.summary, sa), ex.limits(rb.summary, sb))  # where each side's costs can go
    # the latencies' p50s and p90s too: their column read bare beside a p99 with the spread's band
    every = (moved[0] | spreads[0].percentile_moves(), moved[1] | spreads[1].percentile_moves())
    bands = ex.spread_errors(table["figure"], ta, tb, every, list(table["band"]), limits)
    draw_table(table.assign(band=[b or "" for b in bands]))
    same = spreads[0].slowdown == spreads[1].slowdown
    sides = (("A", spreads[0], ha, ra), ("B", spreads[1], hb, rb))
    said = {side: sp.band_notes(r.scenario, h.get("slo_attainment")) for side, sp, h, r in sides}
    notes = {side: " ".join(lines) for side, lines in said.items() if lines}
    same_note = len(notes) == 2 and notes["A"] == notes["B"]
    cliffs = [f"A and B: {notes['A']}"] if same_note else [f"{side}: {n}" for side, n in notes.items()]
    with spread_note.container():
        st.caption(
            plain(margin.spread_caption(spreads[1], " (A and B)") if same else margin.pair_caption(*spreads))
        )
        # a load on a cliff, where the chips' real speed alone decides the SLO: said, not small print
        if cliffs:
            st.container(key="fg-cliff").warning(plain(" ".join(cliffs)), icon=":material/warning:")
