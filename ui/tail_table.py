"""The per-class SLO tail table's columns and view (`engine.explain.slo_tail`, on Results and SLO targets),
and the percent and fraction columns every table uses (`ui.tables` imports them from here)."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from typing import Any, Literal

import pandas as pd
import streamlit as st

from engine import explain as ex

cc = st.column_config

PERCENT_STEP = 0.001
"""The step of a percent column: a fraction to three places, so each cell shows one decimal of a percent
("49.9%" beside "50.0%", where Streamlit's bare "percent" wrote "49.96%" beside "50%")."""

BAR_COLOR = "blue"
"""Bars of shares and fractions: a measure, neither good nor bad (red is the theme's colour for misses)."""


def fraction(
    label: str, help: str | None = None, width: Literal["small", "medium", "large"] | None = None
) -> Any:
    """A 0..1 column drawn as a bar with a percentage, in a neutral blue: the theme's primary red would
    mark a high share of requests meeting their SLO, or a busy chip, as something wrong."""
    return cc.ProgressColumn(
        label,
        min_value=0.0,
        max_value=1.0,
        format="percent",
        step=PERCENT_STEP,
        help=help,
        width=width,
        color=BAR_COLOR,
    )


SLO_TAIL: dict[str, Any] = {  # widths that show all twelve columns in the main column at 1440 px
    "class": cc.TextColumn("class"),
    "requests": cc.NumberColumn(
        "requests", format="%,d", help="Requests of the class in the window.", width=68
    ),
    "percentile": cc.NumberColumn(
        "SLO pct", format="p%g", help="The percentile the targets apply at.", width=60
    ),
    "slo_attainment": fraction(
        "met SLO", "Share of the class's requests that met every target of their class.", "small"
    ),
    "ttft_target_ms": cc.NumberColumn("TTFT target", format="%,.0f ms", width=82),
    "ttft_at_percentile_ms": cc.NumberColumn(
        "TTFT at pct",
        format="%,.0f ms",
        help="TTFT at the SLO percentile: the latency of the request at that rank, rejected and failed requests "
        "counting as late, as the SLO judges it (the headline p99 interpolates over completed requests).",
        width=82,
    ),
    "ttft_holds_to_pct": cc.NumberColumn(
        "TTFT holds", format="p%g", help="The percentile up to which TTFT stays within target.", width=82
    ),
    "tpot_target_ms": cc.NumberColumn("TPOT target", format="%,.0f ms", width=82),
    "tpot_at_percentile_ms": cc.NumberColumn(
        "TPOT at pct",
        format="%.1f ms",
        help="TPOT at the SLO percentile: the request's at that rank, as the SLO judges it.",
        width=82,
    ),
    "tpot_holds_to_pct": cc.NumberColumn(
        "TPOT holds", format="p%g", help="The percentile up to which TPOT stays within target.", width=82
    ),
    "tbt_target_ms": None,  # shown by `slo_tail_columns` where a class sets a TBT target
    "max_tbt_at_percentile_ms": None,
    "e2e_target_ms": None,  # shown by `slo_tail_columns` where a class sets an E2E target
    "e2e_at_percentile_ms": None,
    "passes": cc.CheckboxColumn(
        "passes",
        help="Both latencies (and the largest gap between tokens and the end-to-end latency, where "
        "targeted) within target at the SLO percentile.",
        width=58,
    ),
    "breaks": cc.TextColumn(
        "breaks on", help="Where the tail breaks: the metric(s) that miss their target at the SLO percentile."
    ),
}


def holds_pct(pct: float) -> float:
    """A 'holds to' percentile as the page writes it: a tenth, or a hundredth where a tenth would read
    p100 for a target some requests miss (the table's ``p%g`` wrote 'p90.77398292315', cut off)."""
    tenth = round(float(pct), 1)
    return tenth if tenth < 100.0 or pct >= 100.0 else min(round(float(pct), 2), 99.99)


def tail_view(tail: pd.DataFrame) -> pd.DataFrame:
    """`engine.explain.slo_tail`'s frame as the per-class tables show it: its 'holds to' percentiles
    rounded (`holds_pct`)."""
    cols = [c for c in ("ttft_holds_to_pct", "tpot_holds_to_pct") if c in tail]
    # the verdict and the two latencies it rests on in view at 1,100 px, each beside its target (TPOT
    # decided moe-deepseek-dp-ep and sat off the screen behind the TTFT's target and holds; then the
    # targets sat off it, enterprise-mixed's batch TTFT of 22,387 ms beside no 30 s: reviews)
    lead = (
        *("class", "passes", "breaks", "ttft_at_percentile_ms", "ttft_target_ms"),
        *("tpot_at_percentile_ms", "tpot_target_ms"),
    )
    first = [c for c in lead if c in tail]
    return tail.assign(**{c: tail[c].map(holds_pct) for c in cols})[
        [*first, *(c for c in tail if c not in first)]
    ]


_MARKED = (
    (
        "ttft",
        "TTFT at pct",
        "%,.0f ms",
        "its backlog grows among the requests decoding and its TTFT stays level through the window",
    ),
    (
        "tpot",
        "TPOT at pct",
        "%.1f ms",
        "its TPOT stays level through the window (the pace of batches the backlog keeps full)",
    ),
)
"""The latencies at the percentile `slo_tail_columns` marks where they grow or stay level: kind, label,
format, and why a level one is level."""


def slo_tail_columns(
    growing: Collection[str], tbt: bool = False, level: Collection[str] = (), e2e: bool = False
) -> dict[str, Any]:
    """`SLO_TAIL`, or for an unsustainable run its latencies at the percentile that grow (`growing`:
    their kinds, of ``ttft``, ``tpot`` and ``max_tbt``, `engine.explain.sustain`) marked: '≥ 63,835 ms',
    growing with run length, and a TPOT or TTFT that stays `level` '22.0 ms, at saturation'; with `tbt` (a
    class sets ``slo.tbt_ms``) the largest gap between tokens and its target are shown too, with
    `e2e` (a class sets ``slo.e2e_ms``) the end-to-end latency and its target."""
    if not growing and not tbt and not level and not e2e:
        return SLO_TAIL
    at = "≥ " if "max_tbt" in growing else ""
    cols = dict(SLO_TAIL)
    for kind, label, fmt, why in _MARKED:
        if kind in growing:
            cols[f"{kind}_at_percentile_ms"] = cc.NumberColumn(
                label,
                format=f"≥ {fmt}",
                help=f"At least this: the run is unsustainable, and this latency {ex.GROWS}.",
                width=92,
            )
        elif kind in level:
            cols[f"{kind}_at_percentile_ms"] = cc.NumberColumn(
                label,
                format=f"{fmt}, {ex.LEVEL}",
                help=f"The run is unsustainable, but {why}: a figure of the deployment at its limit, "
                "not of the load offered.",
                width=150,
            )
    if tbt:
        cols["tbt_target_ms"] = cc.NumberColumn("TBT target", format="%,.0f ms", width=82)
        cols["max_tbt_at_percentile_ms"] = cc.NumberColumn(
            "TBT at pct",
            format=f"{at}%,.0f ms" + (f", {ex.LEVEL}" if "max_tbt" in level else ""),
            help="The largest gap between tokens at the SLO percentile (rejected and failed requests count as late).",
            width=150 if "max_tbt" in level else 92,
        )
    if e2e:
        cols["e2e_target_ms"] = cc.NumberColumn("E2E target", format="%,.0f ms", width=82)
        cols["e2e_at_percentile_ms"] = cc.NumberColumn(
            "E2E at pct",
            format=f"{'≥ ' if growing else ''}%,.0f ms",  # E2E grows with any latency that grows
            help="The end-to-end latency at the SLO percentile (rejected and failed requests count as late).",
            width=92,
        )
    return cols


NEVER_ANSWERED = "never answered"
"""A latency at the SLO percentile whose rank falls among the class's rejected or failed requests."""

_PRINTF = re.compile(r"%(,?)\.(\d+)f")


def _printf(fmt: str, v: float) -> str:
    """`v` under a NumberColumn's printf format ('%,.0f ms', '≥ %.1f ms, at saturation')."""
    return _PRINTF.sub(lambda m: format(v, f"{m.group(1)}.{m.group(2)}f"), fmt, count=1)


SECONDS_FROM_MS = 10_000.0
"""A latency pair of the per-class table (a figure and its target) this long or longer reads in seconds, as
`duration_text` writes it elsewhere (`in_seconds`)."""


def in_seconds(view: pd.DataFrame, cols: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The per-class table with each latency pair (TTFT, E2E: its figure at the percentile and its target)
    in seconds where either reaches ten seconds: enterprise-mixed's batch read '22,387 ms / 30,000 ms'
    beside the advisor's and the SLO page's '22.4 s of 30.0 s' (a browser review). The values and their
    columns' formats change together; a pair under ten seconds stays in ms."""
    out, conf = view, dict(cols)
    for kind in ("ttft", "e2e"):
        pair = [c for c in (f"{kind}_at_percentile_ms", f"{kind}_target_ms") if c in view and cols.get(c)]
        if not any((pd.to_numeric(view[c], errors="coerce") >= SECONDS_FROM_MS).any() for c in pair):
            continue
        out = out.assign(**{c: pd.to_numeric(view[c], errors="coerce") / 1000.0 for c in pair})
        for c in pair:
            was = dict(cols[c])
            fmt = str(was["type_config"].get("format") or "%,.0f ms")
            was["type_config"] = {
                **was["type_config"],
                "format": fmt.replace(".0f", ".1f").replace(" ms", " s"),
            }
            conf[c] = was
    return out, conf


def unanswered(view: pd.DataFrame, cols: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The per-class table with each latency at the percentile that no answer reached shown as such:
    where the rank falls among rejected or failed requests the figure is None, which the table wrote
    'None' (a review), so such a column becomes text, each figure in its column's format."""
    out, conf = view.copy(), dict(cols)
    for col in [c for c in view if c.endswith("_at_percentile_ms") and cols.get(c)]:
        missing = view[col].isna() & (view["requests"] > 0)
        if not missing.any():
            continue
        fmt = cols[col]["type_config"].get("format") or "%,.0f ms"
        out[col] = [
            NEVER_ANSWERED if gone else "" if v is None or v != v else _printf(fmt, float(v))
            for v, gone in zip(view[col], missing, strict=True)
        ]
        was = cols[col]
        conf[col] = cc.TextColumn(
            was["label"],
            help=f"{was.get('help') or ''} {NEVER_ANSWERED.capitalize()}: the request at that rank was rejected or "
            "failed, so no latency reaches it.".strip(),
            width=max(int(was.get("width") or 92), 110),
        )
    return out, conf


def stepped(frame: pd.DataFrame, config: Mapping[str, Any]) -> pd.DataFrame:
    """`frame` with each column whose config has a `step` rounded to it: Streamlit cuts a value to its
    column's step instead of rounding it (0.98759 showed 98.7% where `fengong drill` prints 98.8%: a
    browser review). Other columns, and a frame with none, are left as they are."""
    out = frame
    for col, c in config.items():
        step = c.get("type_config", {}).get("step") if isinstance(c, Mapping) else None
        if not step or col not in frame.columns:
            continue
        places = max(0, -math.floor(math.log10(step) + 1e-9))
        vals = frame[col]
        if vals.dtype.kind == "f":
            rounded = vals.round(places)
        elif vals.dtype == object:
            rounded = vals.map(lambda v, p=places: round(v, p) if isinstance(v, float) else v)
        else:
            continue
        out = out.copy() if out is frame else out
        out[col] = rounded
    return out


_LABELS_OFF_PAGE = {
    "tbt_target_ms": "largest gap target",
    "max_tbt_at_percentile_ms": "largest gap at pct",
    "e2e_target_ms": "E2E target",
    "e2e_at_percentile_ms": "E2E at pct",
}


def _cell(col: str, v: Any) -> str:
    """One cell of the per-class table as the page writes it."""
    missing = v is None or (isinstance(v, float) and math.isnan(v))
    if col.endswith("_ms"):
        if missing:
            return "never answered" if "at_percentile" in col else "–"
        return f"{v:,.0f} ms" if abs(float(v)) >= 100 else f"{float(v):.1f} ms"
    if missing:
        return "–"
    if col == "slo_attainment":
        return f"{float(v):.1%}"
    if col == "percentile" or col.endswith("_pct"):
        return f"p{float(v):g}"
    if col == "passes":
        return "yes" if bool(v) else "no"
    if col == "requests":
        return f"{int(v):,}"
    return str(v)


def report_view(
    tail: pd.DataFrame, growing: Collection[str] = (), level: Collection[str] = ()
) -> pd.DataFrame:
    """The per-class table as text for the HTML report, labelled and written as the page shows it (the
    report wrote 'ttft_at_percentile_ms 2.239e+04' beside 'ttft_target_ms 3e+04', and None: a review);
    an unsustainable run's latencies that grow (`growing`, by kind) at least their figure, those that stay
    `level` at saturation, as `slo_tail_columns` marks them ('532,825 ms' stood where the page has '≥')."""
    view = tail_view(tail)
    out = pd.DataFrame({col: [_cell(col, v) for v in view[col]] for col in view.columns})
    marked = {f"{k}_at_percentile_ms": "≥ {}" for k in growing} | {
        f"{k}_at_percentile_ms": "{}, " + ex.LEVEL for k in level
    }
    if growing:
        marked["e2e_at_percentile_ms"] = "≥ {}"  # E2E grows with any latency that grows
    for col, form in marked.items():
        if col in out:
            out[col] = [v if v in ("–", NEVER_ANSWERED) else form.format(v) for v in out[col]]
    for target, at in (
        ("tbt_target_ms", "max_tbt_at_percentile_ms"),
        ("e2e_target_ms", "e2e_at_percentile_ms"),
    ):
        if target in out and at in out:  # a target no class sets: neither column (as on the page)
            unset = out[target] == "–"
            out = (
                out.drop(columns=[target, at])
                if unset.all()
                else out.assign(**{at: out[at].where(~unset, "–")})
            )
    labels = {c: (cfg.get("label") if isinstance(cfg, Mapping) else None) for c, cfg in SLO_TAIL.items()}
    return out.rename(columns={c: labels.get(c) or _LABELS_OFF_PAGE.get(c, c) for c in out.columns})
