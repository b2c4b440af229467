"""What every page shares around its own content: the sidebar and the live strip.

The sidebar holds the preset picker (every page starts from one), the share link of the current
scenario and page, a scenario file to download or open, and, on editing pages, the live strip:
p99 TTFT and TPOT, SLO attainment, cost per request, goodput and a small TTFT CDF, each with its
change from the previous run, so the effect of a slider shows beside it wherever the page is
scrolled. `page()` draws all of that, the page title, the messages waiting to be dismissed, and
returns the session scenario's result.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from engine import explain as ex
from engine.core import ScenarioError, count3, figures
from engine.explain import duration_text, duration_unit, headline, latency_cdfs, usd_decimals, usd_text
from engine.scenario import closest_preset, loads_toml, preset_names
from engine.serving import SimResult
from ui import marks, sim, state, strip_chart
from ui.text import plain, toast_text

PAGE = "fg_page"
SHARE_SLOT = "fg_share_slot"
"""Session state, within one run: the Share box's address slot and the address drawn in it."""

SPREAD_HELP = (
    " Its band (about two in three real deployments land inside) is, once the page has rerun it, its run's "
    "spread: the same requests with every chip at the pessimistic and the optimistic edge of its throughput band."
)
GOODPUT_BAND_HELP = (
    SPREAD_HELP
    + " Goodput takes that spread alone (it moves with the queues, which the chips' band does not say): none "
    "before it is known, nor where goodput falls by nine tenths or more at the pessimistic edge (the note under "
    "the cards says so)."
)
COST_BAND_HELP = (
    SPREAD_HELP
    + " Before then, and never narrower after, a cost carries its chips' throughput band turned round, what the "
    "bill of a deployment sized to hold the SLO moves by; where an open loop's run served every request it was "
    "sent, faster chips could not serve more, so that band is cut on the side they would move the bill (less "
    "where the drain after the window adds to it)."
)


METRIC_HELP = {
    "ttft_p99_ms": "99th percentile of time to first token over completed requests (queueing, prefill and KV "
    "transfer), interpolated between the two around the rank. A class's figure at its SLO percentile (the "
    "per-class table, the SLO page, the advisor) is the latency of the request at the rank, rejected and "
    "failed requests counting as late, as its SLO judges it: it can read a little higher.",
    "tpot_p99_ms": "99th percentile of time per output token over completed requests, interpolated between the "
    "two around the rank (a class's figure at its SLO percentile is the request's at the rank, as its SLO "
    "judges it).",
    "slo_attainment": "Share of requests in the window that met their class's TTFT and TPOT targets "
    "(rejected and failed requests count as misses).",
    "usd_per_request": "The whole deployment's bill (every chip, idle or not, until the drain ends) "
    "divided by completed requests. Marked 'at saturation' where the run cannot keep up: the bill over "
    "batches a backlog keeps full, served late, is cheaper per request and no better." + COST_BAND_HELP,
    "goodput_rps": "Requests per second of the window that met their SLO." + GOODPUT_BAND_HELP,
    "usd_per_million_output_tokens": "The bill divided by output tokens of completed requests, times a million. "
    "Marked 'at saturation' where the run cannot keep up, as $ / request is.",
}


def fmt_ms(v: float | None) -> str:
    """A duration given in milliseconds, for display (`presentation.duration_text`: seconds from
    ten seconds on, so a backlog's TTFT reads 17.4 min, not 1,043,795 ms)."""
    return duration_text(v)


def fmt_target(target_ms: float | None, value_ms: float | None) -> str:
    """A target beside its figure, in the figure's unit (`ex.target_text`, as the advisor writes it)."""
    return ex.target_text(target_ms, value_ms)


def fmt_rps(v: float | None) -> str:
    """Requests per second for display: two decimals, or three significant digits under 1 (a 2-request
    trace's 0.0033 read 'Goodput 0.00 req/s', edge-npu's 0.0314 read '0.03 req/s', rounded by more than
    its band: reviews)."""
    if v is None or not math.isfinite(v):
        return "–"
    if 0 < abs(v) < 1:  # never an exponent ('Goodput 9.4e-06 req/s' after a backlog's replay: a review)
        text = f"{v:.3g}"
        return f"{figures(v, 2) if 'e' in text else text} req/s"
    return f"{v:,.2f} req/s"


def _shown(key: str, v: float | None) -> float | None:
    """A strip figure as it reads (`fmt_rps`): goodput from 1 req/s at its two decimals, under it at three
    significant figures, so that its change is the change of the figures shown (`rps_change`); any other
    figure as it is."""
    if key != "goodput_rps" or v is None or not math.isfinite(v) or v == 0:
        return v
    return round(v, 2) if abs(v) >= 1 else float(f"{v:.3g}")


def rps_change(change: float, value: float | None) -> str:
    """A change of a rate to the decimals its value is shown with (`fmt_rps`): '0.45 req/s' between 16.09
    and 15.64, where '0.442' read more precise than the figures it came from (a browser review)."""
    if value is not None and math.isfinite(value) and abs(value) >= 1 and abs(change) >= 0.005:
        return f"{change:,.2f} req/s"
    return fmt_rps(change)  # (a change across 1 req/s, '1.00' against '0.996': three figures, '0.004')


def fmt_count(v: float | None) -> str:
    """A positive quantity to three significant figures, with thousands separators: 2,380, 31.4, 2.05."""
    if v is None or not math.isfinite(v):
        return "–"
    return count3(v)


def fmt_pct(v: float | None) -> str:
    """A fraction as a percentage."""
    return "–" if v is None else f"{v:.1%}"


def fmt_usd(v: float | None) -> str:
    """Dollars with enough digits for fractions of a cent."""
    return usd_text(v)


def share_url() -> str:
    """The address that reopens the current scenario on the current page."""
    base = st.context.url or "http://localhost:8501/"
    path = st.session_state.get(PAGE, "")
    if path and not base.rstrip("/").endswith("/" + path):
        base = base.rstrip("/") + "/" + path
    extra = {
        k: str(st.query_params[k]) for k in st.query_params if k not in state.LINK_KEYS
    }  # e.g. Compare's a, b
    return f"{base}?{urlencode({**state.link(), **extra})}"


def _share_address(slot: Any) -> str:
    """The Share box's address and what it holds, into `slot`; the address."""
    url = share_url()
    with slot.container():
        st.code(url, language=None, wrap_lines=True)
        if "plan" in st.query_params:
            st.caption(
                "It holds the preset, only the fields you changed and the Planner's form: opening it fills "
                "the form in, and Plan makes the same plan."
            )
        else:
            st.caption("It holds the preset and only the fields you changed, so it stays short.")
    return url


def refresh_share() -> None:
    """The Share box's address again at the end of a run, if the page changed it after the sidebar was
    drawn (the Planner writes its plan's parameter when a plan finishes: `ui.plan_link`)."""
    kept = st.session_state.pop(SHARE_SLOT, None)
    if isinstance(kept, tuple) and kept[1] != share_url():
        _share_address(kept[0])


def _preset_changed() -> None:
    state.use_preset(st.session_state["fg:preset"])


def _reset() -> None:
    state.use_preset(state.preset_name())


def _open_file() -> None:
    up = st.session_state.get("fg:open")
    if up is None:
        return
    try:
        text = up.getvalue().decode("utf-8")
        sc = loads_toml(text)
    except (ScenarioError, UnicodeDecodeError) as exc:
        state.notify(f"{up.name}: {exc}")
        return
    if state.commit(sc, up.name):
        state.keep_relative_to(closest_preset(sc))  # not the preset shown before (a review)
        state.seeds_of_file(text)  # and the seeds its figures were the mean of, as a link's


def sidebar() -> None:
    """The preset picker, the share link and the scenario file."""
    sb = st.sidebar
    names = preset_names()
    # the box set to the preset a link, a reset or an opened file changed to: forgetting its value
    # for an `index` left the browser's old choice in the box, sent back at the next click as a
    # change to that preset (a file opened over moe-deepseek-dp-ep went back to it on Reset: a review);
    # set on every run, since each page draws its own box, which a page switch showed at the first
    # preset when the value was left as the previous page's box had it (a review)
    st.session_state["fg:preset"] = state.preset_name()
    sb.selectbox(
        "Preset",
        names,
        key="fg:preset",
        on_change=_preset_changed,
        help="Every scenario starts from a shipped preset; your changes are kept relative to it (and in the share link).",
    )
    sc = state.scenario()
    sb.caption(plain(state.named(sc).name))
    c1, c2 = sb.columns(2)
    with c1.popover("Share", icon=":material/share:", width="stretch"):
        st.markdown("This address opens this scenario on this page:")
        slot = st.empty()
        # kept to be drawn again at the run's end if the address moved
        st.session_state[SHARE_SLOT] = (slot, _share_address(slot))
        st.download_button(
            "Scenario (TOML)",
            # named for what it runs and without the preset's lesson, as the Results page's (it carried the
            # preset's name and lesson for an edited scenario: a review)
            data=state.scenario_toml(state.named(sc)),
            file_name=ex.file_name(state.preset_name(), sc.seed, "scenario", "toml", state.edited()),
            mime="application/toml",
            on_click="ignore",
            key="fg:dl:sidebar-toml",
            icon=":material/download:",
        )
        st.file_uploader(
            "Open a scenario file",
            type=["toml"],
            key="fg:open",
            on_change=_open_file,
            help="A TOML scenario (as `fengong scenario` writes); it replaces the current one.",
        )
    c2.button(
        "Reset",
        on_click=_reset,
        disabled=not state.edited(),
        width="stretch",
        icon=":material/undo:",
        help="Back to the preset, dropping your changes.",
    )


def _delta(now: float | None, before: float | None, scale: float = 1.0) -> float | None:
    """now - before (times `scale`), None where either is missing or the change is rounding noise."""
    if now is None or before is None or not math.isfinite(now) or not math.isfinite(before):
        return None
    d = (now - before) * scale
    return d if abs(d) > 1e-9 * max(abs(now * scale), 1.0) else None


def duration_change(change_ms: float, value_ms: float | None, decimals: int = 0) -> str:
    """A change of a duration in the unit its value is shown in (`fmt_ms`): '196.6 s' beside
    '198.2 s', not '196,582 ms'; in ms with `decimals` where the value is in ms."""
    unit, size = duration_unit(abs(value_ms) if value_ms is not None and math.isfinite(value_ms) else 0.0)
    return f"{change_ms / size:,.{decimals if unit == 'ms' else 1}f} {unit}"


def usd_change(change: float, value: float | None) -> str:
    """A change of dollars to the places its value is shown with (`fmt_usd`)."""
    return f"${change:,.{usd_decimals(value) if value is not None else 5}f}"


LABELS = {
    "ttft_p99_ms": "TTFT p99",
    "tpot_p99_ms": "TPOT p99",
    "slo_attainment": "SLO attainment",
    "goodput_rps": "Goodput",
    "usd_per_request": "$ / request",
    "usd_per_million_output_tokens": "$ / 1M output tokens",
}
"""The one name of each headline figure, on the Results cards and in the live strip alike."""

STRIP: tuple[tuple[str, str, Any, Any, bool], ...] = (
    # label, headline key, value format, change format (change, value), lower is better
    (LABELS["ttft_p99_ms"], "ttft_p99_ms", fmt_ms, lambda d, v: duration_change(d, v, 0), True),
    (LABELS["tpot_p99_ms"], "tpot_p99_ms", fmt_ms, lambda d, v: duration_change(d, v, 1), True),
    (LABELS["slo_attainment"], "slo_attainment", fmt_pct, lambda d, v: f"{d * 100:.1f} pts", False),
    (LABELS["goodput_rps"], "goodput_rps", lambda v: fmt_rps(v or 0.0), lambda d, v: rps_change(d, v), False),
    (LABELS["usd_per_request"], "usd_per_request", fmt_usd, usd_change, True),
    (LABELS["usd_per_million_output_tokens"], "usd_per_million_output_tokens", fmt_usd, usd_change, True),
)
"""The live strip's rows: the Results page's figures, named and written as there (`LABELS`, `fmt_rps`)."""

GROWING: dict[str, ex.LatencyKind] = {"ttft_p99_ms": "ttft", "tpot_p99_ms": "tpot"}
"""Strip figures an unsustainable run shows as growing with run length (`engine.explain.sustain`),
with their latency kind (a TPOT that stays level is shown as it is: `Shortfall.steady`)."""

GREW = "_latency_shortfall:"
"""The prefix of the keys under which a strip's figures keep their run's `latency_shortfall` of
their kind (`grew`; None: the figure did not grow)."""


def grew(key: str) -> str:
    """The key under which a strip's figure `key` keeps whether it grew with its run (`GREW`)."""
    return GREW + key


def growth(summary: Any) -> dict[str, float | None]:
    """Per strip figure of `GROWING`, its run's `latency_shortfall` of its kind (None: it does not grow),
    and for one that stays level while the run's queue grows (`ex.level`) the key `LEVEL_KEY` + it: 0."""
    grows = {key: ex.latency_shortfall(summary, kind) for key, kind in GROWING.items()}
    # at capacity, or its queue still rising at the window's end (not called unsustainable): its TTFT is no
    # steady figure either (a browser review read a bare 25.3 s at 4 req/s, 'grows' only one step further)
    if ex.rising_line(summary) is not None:  # the engine's one judgment of it, as Results' warning
        grows[HEADROOM_KEY + "ttft_p99_ms"] = 0.0
        grows |= {LEVEL_KEY + key: 0.0 for key in COSTS}  # the bill over full batches (`ex.saturated`)
    return grows | {LEVEL_KEY + key: 0.0 for key, kind in GROWING.items() if ex.level(summary, kind)}


def marked_figure(summary: Any, key: str, text: str, band: str | None) -> tuple[str, str | None]:
    """A single run's headline figure and its band as Results' cards say them: at least its value,
    growing with run length, where it grows (no band: a floor has none); its band and 'at saturation'
    for a latency that stays level or a cost while the run falls behind; for a TTFT with no headroom
    (at capacity, its queue still rising) `HEADROOM` in place of a band (a card read 'TTFT p99 75.9 s,
    −65% to −52%' beside the warning that it grows: a review)."""
    kind = GROWING.get(key)
    short = None if kind is None else ex.latency_shortfall(summary, kind)
    if short is not None:
        return ex.at_least(text, short), ex.GROWS
    if (kind is not None and ex.level(summary, kind)) or (key in COSTS and ex.saturated(summary)):
        return text, f"{band} · {ex.LEVEL}" if band else ex.LEVEL
    if HEADROOM_KEY + key in growth(summary):
        return text, HEADROOM
    if (
        key == "ttft_p99_ms" and (said := ex.answered_note(summary)) is not None
    ):  # the p99 of the answered only
        return text, f"{band} · {said}" if band else said
    return text, band


HEADROOM_KEY = "headroom:"
"""`growth`'s prefix of a strip figure of a run with no headroom (at capacity, or its queue still rising)."""
HEADROOM = ex.HEADROOM
HEADROOM_PILL = "no headroom"
"""A card's pill for a figure with no headroom (`HEADROOM` made the row's cards wrap at 1,440 px)."""
HEADROOM_HELP = (
    "No headroom: the queue never emptied, or still rose at the window's end, so this figure may grow with a "
    "longer run; it carries no band."
)


LEVEL_KEY = "level:"
"""`growth`'s prefix of a strip figure that stays level while its run's queue grows."""


COSTS = ("usd_per_request", "usd_per_million_output_tokens")
"""Strip figures whose fall is only good news while no fewer requests meet their SLO."""

SLO_FALL_PTS = 0.05
"""A fall in SLO attainment (points) past which a cheaper request is not called better: any fall the
strip shows (0.1 point, rounded); it was 0.5, so a collapse by steps of a few tenths of a point
each step showed its falling cost in green (found in review)."""


def shows_change(text: str) -> bool:
    """Whether a formatted change has a nonzero digit: one that rounds to zero gets no arrow."""
    return any(ch in "123456789" for ch in text)


def strip_rows(
    now: dict[str, float | None],
    prev: dict[str, float | None],
    shortfall_rps: float | None = None,
    grows: Mapping[str, float | None] | None = None,
) -> list[tuple[str, str, str]]:
    """(label, value, coloured change) per row of the live strip; green when the change is good,
    grey for a cost that fell while fewer requests met their SLO (an overloaded run bills the same
    chips over more, slower requests: cheaper per request, and no better). An unsustainable run (its
    `shortfall_rps` given) marks its costs 'at saturation', as Results does; where its latencies
    grow with the run (`grows` given, per figure: `growth`, not where a client's ceiling holds the
    backlog nor for a TPOT that stays level) they show as at least their value, growing with run
    length, and no change."""
    slo = _delta(now.get("slo_attainment"), prev.get("slo_attainment"), 100.0)
    # an unsustainable run bills the same chips over requests it cannot serve: cheaper is no better
    worse = (slo is not None and slo <= -SLO_FALL_PTS) or shortfall_rps is not None
    rows = []
    for label, key, fmt, dfmt, lower in STRIP:
        d = _delta(_shown(key, now.get(key)), _shown(key, prev.get(key)))
        change = ""
        if d is not None and shows_change(text := dfmt(abs(d), now.get(key))):
            good = (d < 0) == lower
            colour = "gray" if key in COSTS and d < 0 and worse else "green" if good else "red"
            change = f":small[:{colour}[{'▼' if d < 0 else '▲'}{text}]]"
        if (g := (grows or {}).get(key)) is not None:  # set by the run's length: nothing to compare
            rows.append((label, ex.at_least(fmt(now.get(key)), g), f":small[:orange[{ex.GROWS}]]"))
            continue
        if HEADROOM_KEY + key in (grows or {}):  # a queue that never emptied: no steady figure
            # the short pill, as Results' cards: the long phrase widened the sidebar's table past its box
            # and cut every value off at capacity ('1.' for 1.1% within SLO: a browser review)
            rows.append((label, fmt(now.get(key)), f":small[:orange[{HEADROOM_PILL}]]"))
            continue
        if LEVEL_KEY + key in (grows or {}):  # the pace of batches a growing queue keeps full
            rows.append((label, fmt(now.get(key)), f":small[:orange[{ex.LEVEL}]]"))
            continue
        if key in COSTS and shortfall_rps is not None:  # as Results and `run` mark it (a browser review:
            rows.append((label, fmt(now.get(key)), f":small[:orange[{ex.LEVEL}]]"))  # it stood bare here)
            continue
        if prev.get(grew(key)) is not None:  # nor against a figure that grew with its run:
            change = ""  # "810 ms ▼197,379 ms" beside a previous "≥ 198.2 s" (a walkthrough)
        rows.append((label, fmt(now.get(key)), change))
    return rows


PREVIEW_MARK = ":orange-badge[:material/hourglass_top: preview]"
"""The mark of a live strip drawn from a preview while the full run simulates."""


def preview_caption(preview: ex.RunPreview) -> str:
    """'First 2,000 of the 9,692 requests drawn, full run on its way; expected error: TTFT p99 ±9%, ...'."""
    return (
        f"First {preview.requests:,} of the {preview.full_requests:,} requests drawn, the full run on its way; "
        f"{ex.preview_error_text(preview.kind)}."
    )


PREVIEW_HIDDEN = COSTS
"""Strip figures a preview leaves to the full run: a short window bills its drain over fewer requests,
so its cost per request lands high on every preset (docs/performance.md, The slider's preview)."""


def _strip_text(
    h: dict[str, float | None], prev: dict[str, float | None], s: Any
) -> list[tuple[str, str, str]]:
    """`strip_rows` as Markdown: "$" escaped (it opens LaTeX), a value and its change each kept on one
    line (the change wraps below as a whole)."""
    nbsp = "\u00a0"
    return [
        (a.replace("$", "\\$"), b.replace("$", "\\$").replace(" ", nbsp), c.replace(" ", nbsp))
        for a, b, c in strip_rows(h, prev, ex.shortfall_rps(s), growth(s))
    ]


def _remember(key: str, figures: dict[str, float | None]) -> None:
    """A new run's figures, the previous run's kept as the strip's baseline, but for another preset's:
    after a switch the arrows compared two unrelated scenarios ('TTFT p99 810 ms ▼12,939 ms' in green,
    a browser review)."""
    ss = st.session_state
    preset = ss.get(state.PRESET)  # (none in a page drawn alone, as tests draw the strip)
    ss["fg_live_prev"] = ss.get("fg_live_now") if ss.get("fg_live_preset") == preset else None
    ss["fg_live_key"], ss["fg_live_now"], ss["fg_live_preset"] = key, figures, preset


def _trust_badge(box: Any, result: SimResult) -> None:
    """The strip's calibration badge: uncalibrated (naming the pools), partly calibrated, or calibrated,
    each with its band in the help."""
    trust = ex.pool_marks(result.scenario, result.summary)
    off = ex.uncalibrated(trust)
    errors = ex.error_list(ex.errors_by_figure(trust))
    if off:
        box.markdown(
            marks.badge_markdown("uncalibrated")  # the pools in the badge's size (larger beside it: a review)
            + " :small["
            + plain(", ".join(f"{m.pool} on {m.hardware}" for m in off))
            + "]",
            help=plain(" ".join(filter(None, [ex.note(trust), errors and f"Band: {errors}."]))),
        )
    elif ex.partly(trust):
        box.markdown(
            marks.badge_markdown("partly calibrated"),
            help=plain(
                "Every pool's chip has a profile fitted under its serving stack, but "
                + "; ".join(sorted({m.calibration.partial_text for m in ex.partly(trust)}))
                + (f" ({'; '.join(ex.caveats(trust))})" if ex.caveats(trust) else "")
                + f". Band: {errors or 'none with a measured coverage'}."
            ),
        )
    else:
        box.markdown(
            marks.badge_markdown("calibrated"),
            help=plain(
                f"Every pool's chip has a profile fitted under its serving stack. Band: {errors or 'none with a measured coverage'}."
            ),
        )


def live_strip(result: SimResult, slot: Any = None, preview: ex.RunPreview | None = None) -> None:
    """The compact live figures, each with its change from the previous different run, drawn in
    `slot` (an `st.empty` of the sidebar; default: the sidebar's end). A `preview` is drawn marked
    as one, with its expected error and no changes, and is not remembered as a run."""
    ss = st.session_state
    key = result.scenario.model_dump_json()
    h = {
        **headline(result.summary),
        **{grew(k): g for k, g in growth(result.summary).items() if k in GROWING},
    }
    if preview is None and ss.get("fg_live_key") != key:
        _remember(key, h)
    prev: dict[str, float | None] = {} if preview is not None else ss.get("fg_live_prev") or {}
    tag = "-preview" if preview is not None else ""
    box = (slot if slot is not None else st.sidebar).container(border=True, key=f"fg-live{tag}")
    # The full run's strip replaces the preview's in the same script run, where the browser keeps a
    # block's extra children: both strips must be the same four elements (title, table, mark, CDF).
    if preview is not None:  # marked as what it is, with how far the full run may land from it
        box.markdown(  # one short line under the title, as the full run's: the strip keeps its height
            f"**Live result** {PREVIEW_MARK}  \n:small[:gray[first {preview.requests:,} of the "
            f"{preview.full_requests:,} requests drawn]]",
            help=plain(f"{preview_caption(preview)} {preview.text()}"),
        )
    else:
        box.markdown(
            # the arrows are against the run before, unsaid (a freshly opened link shows none, its sender's
            # some: a browser review); in the line under the title, which a heading of two lines squeezed
            f"**Live result**  \n:small[:gray[all {result.summary['requests']['total']:,} requests"
            f"{' · ▲▼ vs last' if prev else ''}]]",
            help="Re-simulated on every change; coloured arrows show the change from the previous run (green "
            "better, red worse; a cost that fell while fewer requests met their SLO is grey: not better).\n\n"
            + "\n\n".join(f"**{label}**: {METRIC_HELP[k]}" for label, k, *_ in STRIP)
            + f"\n\n{HEADROOM_HELP}",
        )
    rows = _strip_text(h, prev, result.summary)
    if preview is not None:
        hidden = {label for label, key, *_ in STRIP if key in PREVIEW_HIDDEN}
        rows = [
            (a, "…", ":small[:gray[full run]]") if label in hidden else (a, b, c)
            for (a, b, c), (label, *_) in zip(rows, STRIP, strict=True)
        ]
    box.markdown(
        f"| figure | {'preview' if preview is not None else 'this run'} |\n|:--|--:|\n"
        + "\n".join(f"| {a} | **{b}** {c} |" for a, b, c in rows)
    )
    _trust_badge(box, result)
    sc = result.scenario
    frame = latency_cdfs(sc, result.requests, "ttft", max_points=120)
    first = sc.workload.classes[0].slo
    target = first.ttft_ms if len(sc.workload.classes) == 1 else None
    box.plotly_chart(
        strip_chart.strip_cdf(frame, target, first.percentile if target else None),
        theme="streamlit",
        key=f"fg:strip{tag}",
        config={"displayModeBar": False, "staticPlot": True},
    )


def notices() -> None:
    """The messages waiting for the user (refused values, links, uploads), each with its dismiss button.

    They stay on every page and every rerun until dismissed, so a refusal is never missed.
    """
    for message in state.fresh_warnings():
        st.toast(plain(toast_text(message)), icon=":material/warning:", duration="long")
    state.stale_upload_notes()  # an upload's counts, once its trace or window changed
    waiting = state.notices()
    # past three, the older ones fold under the newest two (seven refusals filled the screen: a review)
    older, newest = (waiting[:-2], waiting[-2:]) if len(waiting) > 3 else ([], waiting)
    if older:
        with st.expander(f"{len(older)} earlier messages", icon=":material/history:"):
            for key, kind, message in older:
                _notice(key, kind, message)
    for key, kind, message in newest:
        _notice(key, kind, message)
    if len(waiting) > 1:
        st.button(
            "Dismiss all",
            key="fg:dismiss-all",
            on_click=state.dismiss,
            type="tertiary",
            icon=":material/clear_all:",
        )


def _notice(key: str, kind: str, message: str) -> None:
    """One waiting message with its dismiss button."""
    with st.container(horizontal=True, vertical_alignment="center", gap="small", wrap=False):
        if kind == "success":
            st.success(plain(message), icon=":material/check_circle:")
        elif kind == "info":
            st.info(plain(message), icon=":material/info:")
        else:
            st.warning(plain(message), icon=":material/warning:")
        tag = hashlib.sha256(key.encode()).hexdigest()[:16]
        st.button(
            "",
            key=f"fg:dismiss:{tag}",
            on_click=state.dismiss,
            args=(key,),
            icon=":material/close:",
            type="tertiary",
            help="Dismiss this message",
        )


def page(title: str, caption: str = "", *, live: bool = True) -> SimResult | None:
    """Draw the sidebar, the title and any warnings; simulate the session scenario; return its result.

    On an editing page (`live`), a scenario not simulated yet first shows its preview in the live
    strip (`ui.sim.preview`), which the full run's strip then replaces in the same place."""
    sidebar()
    st.title(title)
    if caption:
        st.caption(caption)
    notices()
    scenario = state.scenario()
    slot = st.sidebar.empty() if live else None
    if slot is not None and (early := sim.preview(scenario)) is not None:
        live_strip(early.result, slot, early)
    res = sim.result(scenario)
    if slot is not None:
        if res is not None:
            live_strip(res, slot)
        else:  # no full run: its preview must not stand in for it
            slot.empty()
    return res
