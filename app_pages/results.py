"""Results: latency CDFs with SLO lines, utilisation, KV memory and queues over time, cost, tables."""

from typing import Any

import streamlit as st

from engine import explain as ex
from engine.scenario import vendor_crossing_note
from ui import (
    advisor,
    charts,
    export,
    layers,
    layout,
    lesson,
    margin,
    marks,
    replicas,
    state,
    tables,
    timeline,
)
from ui.text import plain

res = layout.page("Results", live=False)
if res is None:
    st.stop()
sc, s = res.scenario, res.summary
lesson.banner(sc)  # what the preset teaches, and one click to its counterpart
req = s["requests"]
cap, pick = st.columns([4, 1], vertical_alignment="bottom")
with pick:
    n_seeds = replicas.picker("results")
if (behind := ex.line(s)) is not None:  # before the figures it qualifies
    st.error(plain(behind), icon=":material/trending_up:")
if (rising := ex.rising_line(s)) is not None:  # too late in the window to tell
    st.container(key="fg-rising").warning(plain(rising), icon=":material/trending_up:")
if (edge := ex.edge_line(s)) is not None:
    st.info(plain(edge), icon=":material/cell_tower:")
if (way := ex.way_in_line(s)) is not None:  # network and control plane, as shares of TTFT
    st.info(plain(way), icon=":material/lan:")
if (held := ex.client_line(s)) is not None:  # a ceiling on requests in flight: the wait before the send
    st.info(plain(held), icon=":material/hourglass_top:")
# the KV hand-off between chip vendors (`emit` alone said it: a review)
if crossing := vendor_crossing_note(sc):
    st.info(plain(crossing), icon=":material/swap_horiz:")
if (window := res.extra.get("trace_window")) is not None and sc.workload.trace is not None:
    # how the trace's file met the window, as `run` says it (the Workload page alone did: a browser review)
    for said in ex.trace_notes(window, sc):
        st.info(plain(said), icon=":material/timeline:")
reps = replicas.run([sc], n_seeds)  # None with one seed, or until the other seeds are done
rep = reps[0] if reps else None
cap.caption(  # after the seeds: the headline figures of several are their mean, not this seed's
    f"**{plain(state.named(sc).name)}** · {req['total']:,} requests in the window ({req['completed']:,} completed, "
    f"{req['rejected']:,} rejected, {req['failed']:,} failed) · simulated in {res.wall_s:.2f} s "
    f"({res.events:,} events) · engine {res.engine_version} · {replicas.seed_words(sc.seed, rep)}"
)

h = ex.headline(s)
trust = ex.pool_marks(sc, s)  # each pool's calibration, as the run used it
bounds = ex.limits(s, sc)  # an open loop's rates cannot rise above what arrived
HEADLINE = (
    (layout.LABELS["ttft_p99_ms"], layout.fmt_ms(h["ttft_p99_ms"]), "ttft_p99_ms"),
    (layout.LABELS["tpot_p99_ms"], layout.fmt_ms(h["tpot_p99_ms"]), "tpot_p99_ms"),
    (layout.LABELS["slo_attainment"], layout.fmt_pct(h["slo_attainment"]), "slo_attainment"),
    (layout.LABELS["goodput_rps"], layout.fmt_rps(h["goodput_rps"] or 0.0), "goodput_rps"),
    (
        layout.LABELS["usd_per_request"] + (" (owned)" if s["cost"].get("mode") == "own" else ""),
        layout.fmt_usd(h["usd_per_request"]),
        "usd_per_request",
    ),
)


def _card(label: str, value: str, band: str | None, help_: str, **size: Any) -> None:
    """A headline figure's card: its value, its band under it (grey, no arrow), its help."""
    st.metric(
        label,
        value,
        delta=band,
        delta_color="off",
        delta_arrow="off",
        help=help_,
        border=True,
        width="content",
        **size,
    )


def headline_figures(moves: ex.Moves | None) -> None:
    """The headline row: each figure with its band (the run's spread once known, else the
    calibration's error of its kind)."""
    shown = [
        (label, replicas.metric_value(rep, key, value), key, layout.METRIC_HELP[key])
        for label, value, key in HEADLINE
    ]
    if rep is not None:
        shown.append(
            (
                "Throughput",
                replicas.pm("throughput_rps", rep.headline["throughput_rps"]),
                "throughput_rps",
                "Completed requests per second of the window.",
            )
        )
    full = rep is not None and any(rep.saturated)  # a seed's costs over full batches (at capacity too)
    for label, text, key, help_ in shown:
        value, band = marks.value_parts(text, trust, key, rep is not None, bounds, moves)
        if rep is None:  # one run: marked as its HTML report marks it (`layout.marked_figure`)
            value, band = layout.marked_figure(s, key, value, band)
            if band == layout.HEADROOM:  # the pill short, so the row's five cards stay one row at 1,440 px
                band, help_ = layout.HEADROOM_PILL, f"{help_} {layout.HEADROOM_HELP}"
            _card(label, value, band, help_, height="stretch")
            continue
        # seeds: any seed's whose figure grows (it is in the mean; not where a client's ceiling holds the backlog)
        kind = layout.GROWING.get(key)
        short = None if kind is None else rep.worst_growing(kind)
        if short is not None:  # a figure set by the run's length, not a band
            value, band = ex.at_least(value, short), ex.GROWS
        elif kind is not None and rep.level(kind):  # a saturated pace
            band = f"{band} · {ex.LEVEL}" if band else ex.LEVEL
        elif key in layout.COSTS and full:  # the bill over full batches serving a backlog late:
            band = f"{band} · {ex.LEVEL}" if band else ex.LEVEL  # cheaper per request, and no better
        _card(label, value, band, help_, height="stretch")  # a card without a band as tall as one with


head = st.empty()  # drawn now with the kinds' errors, again at the end with the run's spread
# seeds' '± x' values: a size smaller (ui.styles)
CARDS_KEY = "fg-wide-cards" if rep is not None else "fg-cards"
with head.container(horizontal=True, gap="small", width="stretch", key=f"{CARDS_KEY}-early"):
    headline_figures(None)
spread_note = st.empty()
spread_note.caption(margin.PROVISIONAL)  # until the run's spread replaces the kinds' bands
marks.run_mark(
    trust, key="fg-calibration", rules=False
)  # under the figures it qualifies; the advisor's rules
if rep is not None:
    replicas.caption(
        rep,
        # (the lesson too: its figures are the preset's seed's, beside cards that are now a mean: a review)
        "The lesson, the bands under the figures, the advisor, the margin and everything below the latency CDFs "
        "are your seed's run.",
    )
figures: list[tuple[str, Any]] = []
day = timeline.is_day(sc)
if day:  # a day of traffic teaches minute by minute: its panel opens the page
    timeline.panel(res, sc, figures)

advisor_slot = advisor.advisor_panel(res)  # from the run's numbers: no simulation
margin.margin_panel(res)  # one more simulation, when asked

targets = ex.slo_targets(sc)

st.subheader(
    "Latency",
    help="CDFs over completed requests in the window, per class. Dashed: the class's target; dotted: its SLO "
    "percentile. A curve that reaches the dotted line left of the dashed one passes.\n\n"
    + "\n\n".join(f"**{charts.METRIC_NAMES[m]}**: {t}" for m, t in charts.METRIC_HELP.items()),
)
for col, metric in zip([*st.columns(2), *st.columns(2)], ("ttft", "tpot", "max_tbt", "e2e"), strict=True):
    if rep is None:
        fig = charts.cdf(ex.latency_cdfs(sc, res.requests, metric), metric, targets)  # type: ignore[arg-type]
    else:
        fig = charts.cdf_band(rep.bands[metric], metric, targets, seeds=rep.n)
    figures.append((f"{charts.METRIC_NAMES[metric]} CDF", fig))
    with col:
        export.chart(fig, sc, f"{metric}_cdf")

st.subheader(
    "Pools over time",
    help="Per pool, per time bin of resolution_s seconds. Busy: share of time an instance runs an iteration; "
    "compute and bandwidth: achieved over peak FLOP/s and HBM bytes/s (MFU/MBU-like); KV memory: KV tokens held "
    "over capacity; queue depth: requests waiting. Shaded: a warm-up, simulated and not measured. After an open "
    "loop's window the run drains to its end (shaded, and said under the charts): no new arrivals, the last "
    "requests finish (the simulation's end, not the load's), which is why the lines fall there.",
)
SERIES = (
    ("utilization", ["busy", "compute_util", "bandwidth_util"], "Utilisation", "fraction", True),
    ("kv_memory", ["kv_memory"], "KV memory held", "of KV capacity", True),
    ("queue_depth", ["queue_depth"], "Queue depth", "requests waiting", False),
)
for col, (what, columns, title, yaxis, pct) in zip(st.columns(3), SERIES, strict=True):
    fig = charts.timeseries(res.timeseries, columns, title, yaxis, percent=pct, warmup_s=sc.warmup_s)
    timeline.shade_ends(fig, res.over_time, said=False)  # (beside a legend: said in the caption below)
    figures.append((title, fig))
    with col:
        export.chart(fig, sc, what)
if ends := timeline.ends_caption(res.over_time):
    st.caption(ends)
if not day:
    timeline.panel(res, sc, figures)  # a window of several minutes: minute by minute, with any scale events

st.subheader(
    "Cost and goodput",
    help="Every chip is billed from t = 0 to the end of the drain, idle or not (an autoscaled pool's instances "
    "from their request to their stop); the parts add up to the bill.",
)
c1, c2 = st.columns([1, 1])
parts = ex.cost_parts(s)
cost = s["cost"]
with c1:
    fig = charts.cost_parts(parts)
    figures.append(("Cost per request by part", fig))
    export.chart(fig, sc, "cost_by_part")
with c2:
    joules = s["energy"]["joules_per_output_token"]
    # two rows of two cards: the bill and the energy, then the two money figures (with their bands)
    # in a row of their own, not a row nested in a row (it wrapped goodput per $ under its neighbour)
    with st.container(horizontal=True, gap="small"):
        st.metric(
            "Bill per hour",
            layout.fmt_usd(cost["usd_per_hour"]),
            border=True,
            width="content",
            help="Every chip (and cache tier) per hour, busy or idle: its rent, or when owned its "
            "capital, hosting and the energy the run drew. An autoscaled pool's rent follows its instances "
            "billed: the figure is then the run's average.",
        )
        # none where no token came out ('0.00 J' for a window without a request: a review)
        energy, energy_band = (
            marks.value_parts(f"{joules:.2f} J", trust, "joules_per_output_token")
            if joules is not None
            else ("n/a", None)
        )
        st.metric(
            "Energy per output token",
            energy,
            delta=energy_band,
            delta_color="off",
            delta_arrow="off",
            border=True,
            width="content",
            help="Idle power all the time, plus while iterating a fitted share of "
            "the dynamic range (TDP − idle) and energy per byte and per FLOP moved, per output token.",
        )
    money = st.empty()  # with the run's spread at the end, as the headline

    def money_figures(moves: ex.Moves | None) -> None:
        """$ per million output tokens and goodput per dollar, their bands under them (as the headline's:
        a band beside the value made the card cut it short)."""
        per_usd = h["goodput_per_usd"]
        for label, text, key, help_ in (
            (
                layout.LABELS["usd_per_million_output_tokens"],
                layout.fmt_usd(h["usd_per_million_output_tokens"]),
                "usd_per_million_output_tokens",
                layout.METRIC_HELP["usd_per_million_output_tokens"],
            ),
            (
                "Goodput per $",
                layout.fmt_count(per_usd) + (" req/$" if per_usd is not None else ""),
                "goodput_per_usd",
                "Requests that met their SLO per dollar of the whole bill (warm-up and drain included, as $/request).",
            ),
        ):
            value, band = marks.value_parts(text, trust, key, False, bounds, moves)
            # as $ / request: the bill over full batches (at capacity too)
            behind = ex.saturated(s) if rep is None else any(rep.saturated)
            if key in layout.COSTS and behind:
                band = f"{band} · {ex.LEVEL}" if band else ex.LEVEL
            _card(label, value, band, help_)

    with money.container(horizontal=True, gap="small"):
        money_figures(None)
    if (capped := ex.power_cap_line(s)) is not None:  # the cap, the clock it imposes, the draw
        st.caption(plain(capped))
    elif (drew := ex.mean_power_line(s)) is not None:  # what a site's power budget is set against
        st.caption(plain(drew))
# the tables under both columns, at the page's width: in half of it at 1,100 px their last
# column ('share of bill', 'KV memory') was cut
st.dataframe(tables.cost_view(parts), hide_index=True, width="stretch", column_config=tables.COST_PARTS)
st.caption(f"Cost basis: {plain(ex.cost_basis(s))} (SLO targets page, 'Cost basis').")
kinds = ex.cost_kinds(s)
if len(kinds):
    st.dataframe(tables.cost_view(kinds), hide_index=True, width="stretch", column_config=tables.COST_PARTS)
for line in ex.porting_lines(sc):  # a chip whose stack is being ported: the one-off, amortised
    st.caption(f"Porting: {plain(line)} (docs/cost-model.md).")
st.markdown("**Utilisation over the window**")
st.dataframe(ex.utilization_frame(s), hide_index=True, width="stretch", column_config=tables.UTILIZATION)

rates = ex.cache_rates(s)
if len(rates) and (sc.cache.enabled or float(rates["value"].max()) > 0):
    st.subheader(
        "Prefix cache",
        help="Prompt tokens served from cache: overall, by the tier that held them, and by class.",
    )
    c1, c2 = st.columns([3, 2])
    with c1:
        fig = charts.bars(rates, "figure", "value", "Cache hit rates (share of prompt tokens)", percent=True)
        figures.append(("Cache hit rates", fig))
        export.chart(fig, sc, "cache_hit_rates")
    with c2, st.container(horizontal=True, gap="small"):
        for label, value, help_ in ex.cache_figures(s):
            st.metric(label, value, help=help_, border=True, width="content")

happened = ex.scheduler_figures(s)
if happened:
    st.subheader(
        "Overload, preemption and faults",
        help="What admission control, preemption, faults and elastic roles did in this run (only what happened).",
    )
    with st.container(horizontal=True, gap="small"):
        for label, value, help_ in happened:
            st.metric(label, value, help=help_, border=True, width="content")

st.subheader(
    "Per class", help="Attainment and where each latency's tail breaks; details on the SLO targets page."
)
tail_rows, tail_cols = tables.unanswered(  # a rank among rejected requests: 'never answered', not 'None'
    *tables.in_seconds(  # a TTFT or E2E pair of ten seconds or more in s, as the advisor writes it
        tables.tail_view(ex.slo_tail(sc, res.requests)),
        tables.slo_tail_columns(
            {k for k in ("ttft", "tpot", "max_tbt") if ex.latency_shortfall(s, k) is not None},
            any(c.slo.tbt_ms for c in sc.workload.classes),
            {k for k in ("ttft", "tpot", "max_tbt") if ex.level(s, k)},
            any(c.slo.e2e_ms for c in sc.workload.classes),
        ),
    )
)
st.dataframe(
    tables.stepped(tail_rows, tail_cols),
    hide_index=True,
    width="stretch",
    height="content",
    column_config=tail_cols,
)

st.subheader(
    "Which layer decided it",
    help="Model precision, chips, scheduling policy and serving stack, each switched alone to its alternative: "
    "which one moves cost per request and SLO attainment most here. A simulation per layer, run when asked.",
)
layers.layer_panel(sc)

with st.expander("All summary figures", icon=":material/table_rows:"):
    st.dataframe(ex.summary_rows(res.to_json()), hide_index=True, width="stretch", height=420)

st.subheader(
    "Export",
    help="Files are named fengong_<preset>_<seed>_<what> and carry the scenario, its seed and the engine version.",
)
export.table_buttons(res, figures=lambda: figures, seeds=rep.n if rep else 1)
with st.expander("Per-request table (first 1,000 rows)", icon=":material/list:"):
    st.dataframe(res.requests.head(1000), hide_index=True, width="stretch")

# the run's spread last, so the page is drawn first: two more simulations on the same requests
spread = margin.spread(res)
if spread is None:
    spread_note.empty()  # the engine refused the spread's runs: the kinds' bands stay
else:
    moves = spread.moves()
    # a class passing only with chips as fast as modelled: the advisor says so beside the headline's cliff
    advisor.findings_at_the_edge(advisor_slot, res, spread.slower)
    with head.container(horizontal=True, gap="small", width="stretch", key=f"{CARDS_KEY}-spread"):
        headline_figures(moves)
    with money.container(horizontal=True, gap="small"):
        money_figures(moves)
    # a band from 0% to 100%, or from nothing to the figure, is left off and said; a steep SLO band's
    # reason is said too (a class at its target's edge)
    notes = spread.band_notes(res.scenario, h.get("slo_attainment"))
    with spread_note.container():
        st.caption(plain(margin.spread_caption(spread)))
        # a load on a cliff, where the chips' real speed alone decides the SLO: said, not small print
        if notes:
            st.container(key="fg-cliff").warning(plain(" ".join(notes)), icon=":material/warning:")
