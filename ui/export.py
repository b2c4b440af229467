"""Downloads: every chart as PNG, SVG and interactive HTML; tables as CSV; the scenario as TOML;
and a one-file HTML report of a run.

Nothing is rendered until its button is clicked: the buttons get callables
(`st.download_button` runs them on click, in a separate thread), because kaleido needs a
headless Chromium and a few seconds for an image. Every file says what it is in its name
(``fengong_<preset>_<seed>_<what>.<ext>``) and carries the scenario, its seed and the engine
version (see `engine.explain.report`).

PNG and SVG need a browser for kaleido (`ui.image_export`): where there is none, their buttons
are disabled and the menu says how to install one; HTML and CSV need none. An export that fails
on click (in Streamlit's download thread, where only the log would see it) is recorded in the
session, and the menu shows the reason from the next rerun on, until that export succeeds.
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from engine import explain as ex
from engine.explain import summary_rows
from engine.scenario import Scenario, dumps_toml
from engine.serving import SimResult
from ui import image_export, state
from ui.charts import CATEGORY_COLORS
from ui.text import plain

EXPORT_WIDTH, EXPORT_HEIGHT, EXPORT_SCALE = 1000, 560, 2
FAILURES = "fg_export_failures"
_LOG = logging.getLogger(__name__)


Pair = tuple[tuple[str, str, int, str], tuple[str, str, int, str]]
"""A comparison's two sides, each (file-name stem, name, seed, scenario TOML): Compare's charts are of A and B,
not of the session's scenario (their files and stamps named the sidebar's preset, neither side: a review), each
with its own seed (A at seed 7 against B at 1 was stamped 'seed 7' alone) and its own TOML (an export carried
the session's scenario's alone, so B could not be run again from it: a review)."""


def pair_seed(pair: Pair) -> str:
    """'7' where both sides run one seed, else 'A 7, B 1' (a file name takes it with the spaces slugged)."""
    a, b = pair[0][2], pair[1][2]
    return str(a) if a == b else f"A {a}, B {b}"


def provenance(scenario: Scenario) -> dict[str, str]:
    """The provenance of an export of the session's scenario, under the name it shows (`state.named`), with
    when the page made it (UTC, to the minute: a file kept from an earlier session said nothing of its date)."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return {**ex.provenance(state.named(scenario), state.preset_name(), state.edited()), "exported": when}


def name(scenario: Scenario, what: str, ext: str, pair: Pair | None = None) -> str:
    """The file name of an export of the session's scenario, or of a comparison's two sides."""
    if pair is not None:
        seed = scenario.seed if pair[0][2] == pair[1][2] else f"{pair[0][2]}-{pair[1][2]}"
        return ex.file_name(f"{pair[0][0]}-vs-{pair[1][0]}", seed, what, ext)  # type: ignore[arg-type]
    return ex.file_name(state.preset_name(), scenario.seed, what, ext, state.edited())


PRINT_MARGIN = {"l": 70, "r": 40, "t": 90}
"""Room around the plot of an exported chart: the title and a legend above it stay off the edges."""
CAPTION_ROOM_PX = 34
"""Below the axis (and a legend under the plot): the provenance caption's line, inside the canvas."""


CAPTION_CHARS = 110
"""The longest line of the provenance caption at its 10 px font: about 660 px, inside the narrowest export."""
CAPTION_LINE_PX = 14
"""Each further line of the caption."""


def _bottom_px(fig: go.Figure) -> int:
    """The bottom margin of an exported chart: its x axis, a legend under the plot, then the caption."""
    legend_below = fig.layout.legend.y is not None and fig.layout.legend.y < 0
    entries = sum(1 for t in fig.data if t.showlegend is not False)
    # a vertical legend is an entry a row: counted three a row, the utilisation chart's six entries ran
    # under the caption (a review)
    rows = (entries if fig.layout.legend.orientation == "v" else -(-entries // 3)) if legend_below else 0
    return 70 + 26 * rows + (20 if legend_below else 0) + CAPTION_ROOM_PX


def print_copy(fig: go.Figure, meta: dict[str, str]) -> go.Figure:
    """A copy of a figure styled for a file: white template, the app's line colours, room around the plot,
    and a provenance caption at the bottom of the canvas.

    The caption is placed in pixels from the plot's bottom edge (`yshift`), inside a bottom margin
    that holds the axis and any legend under the plot, so it lands in the canvas at any export size.
    """
    out = go.Figure(fig)
    caption = f"Fengong {meta['engine_version']} · {meta['scenario']} · preset {meta['preset']} · seed {meta['seed']}"
    # what a plan's chart was planned for, and when the file was made (neither was on the image: a review)
    caption += f" · {meta['plan']}" if meta.get("plan") else ""
    caption += f" · exported {meta['exported']}" if meta.get("exported") else ""
    # wrapped where long: a Compare export's two scenario names ran its seed off the image (a review)
    lines = textwrap.wrap(caption, CAPTION_CHARS, break_long_words=True) or [caption]
    caption = "<br>".join(lines)
    bottom = _bottom_px(out) + CAPTION_LINE_PX * (len(lines) - 1)
    out.update_layout(
        template="plotly_white",
        colorway=list(CATEGORY_COLORS),
        margin={**PRINT_MARGIN, "b": bottom},
        title={
            "xref": "paper",
            "x": 0,
            "xanchor": "left",
            "yref": "container",
            "y": 1,
            "yanchor": "top",
            "pad": {"t": 18},
        },
    )
    out.add_annotation(
        text=caption,
        xref="paper",
        yref="paper",
        x=0,
        y=0,
        yanchor="bottom",
        yshift=-(bottom - 8),
        showarrow=False,
        xanchor="left",
        align="left",  # a wrapped second line was centred under the first (a browser review)
        font={"size": 10, "color": "#666"},
    )
    return out


def rendered(fig: go.Figure, **kw: Any) -> bytes:
    """`fig.to_image(**kw)`, once more where kaleido's browser tab was not ready: it raises a
    JavaScript ReferenceError ('kaleido_scopes is not defined') now and then when its page has not
    loaded its scripts (one CI run of three, 2026-12-05); a second try renders."""
    try:
        return fig.to_image(**kw)  # type: ignore[no-any-return]
    except Exception as exc:  # kaleido's JavascriptError (its module is kaleido's private one)
        if type(exc).__name__ != "JavascriptError":
            raise
        return fig.to_image(**kw)  # type: ignore[no-any-return]


def png_bytes(fig: go.Figure, meta: dict[str, str], scenario_toml: str) -> bytes:
    """The figure as a PNG with the provenance and the scenario's TOML in iTXt chunks."""
    raw = rendered(
        print_copy(fig, meta), format="png", width=EXPORT_WIDTH, height=EXPORT_HEIGHT, scale=EXPORT_SCALE
    )
    return ex.png_with_text(
        raw, {**{f"fengong:{k}": v for k, v in meta.items()}, "fengong:scenario_toml": scenario_toml}
    )


def svg_text(fig: go.Figure, meta: dict[str, str], scenario_toml: str) -> str:
    """The figure as SVG with the provenance and the scenario's TOML in a metadata element."""
    raw = rendered(print_copy(fig, meta), format="svg", width=EXPORT_WIDTH, height=EXPORT_HEIGHT).decode(
        "utf-8"
    )
    return ex.svg_with_metadata(raw, {**meta, "scenario_toml": scenario_toml})


def html_text(fig: go.Figure, meta: dict[str, str], scenario_toml: str, title: str) -> str:
    """The figure as a standalone interactive HTML page (plotly.js inline), provenance included."""
    div = print_copy(fig, meta).to_html(full_html=False, include_plotlyjs=True)
    # a comparison's B under A in the scenario block, not among the visible facts
    b = meta.get("scenario_b_toml")
    shown = {k: v for k, v in meta.items() if k != "scenario_b_toml"}
    text = scenario_toml if b is None else f"# Scenario A\n{scenario_toml}\n# Scenario B\n{b}"
    return ex.html_report(title, shown, text, pd.DataFrame(columns=["figure", "value"]), [(title, div)])


def _failures() -> dict[str, str]:
    """This session's failed exports: button key -> reason (written from the download thread)."""
    return st.session_state.setdefault(FAILURES, {})  # type: ignore[no-any-return]


def guarded(make: Callable[[], bytes | str], key: str, *, image: bool = False) -> Callable[[], bytes | str]:
    """`make` for a download button, recording a failure in the session so that the page can say why.

    Streamlit runs the callable on click outside the script: an exception only reaches the log
    and a short generic note under the button. The session's dict (captured here, while the
    script runs) is read on the next rerun. A failed image makes the browser be looked up again.
    """
    failures = _failures()

    def run() -> bytes | str:
        try:
            data = make()
        except Exception as exc:
            _LOG.exception("export %s failed", key)
            failures[key] = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:400]
            if image:
                image_export.forget()
            raise
        failures.pop(key, None)
        return data

    return run


def figure_buttons(
    fig: go.Figure,
    scenario: Scenario,
    what: str,
    title: str,
    pair: Pair | None = None,
    facts: dict[str, str] | None = None,
) -> None:
    """PNG, SVG and HTML download buttons of one figure, rendered on click; with `pair`, named and
    stamped after the comparison's two sides; `facts` added to the provenance (a plan's request).

    Where kaleido has no browser, PNG and SVG are disabled and the reason and the fix are shown.
    """
    meta = {**provenance(scenario), **(facts or {})}
    if pair is not None:
        (stem_a, name_a, _, toml_a), (stem_b, name_b, _, toml_b) = pair
        meta |= {
            "scenario": f"A: {name_a}; B: {name_b}",
            "preset": f"A: {stem_a}; B: {stem_b}",
            "seed": pair_seed(pair),
            "scenario_b_toml": toml_b,  # A's is the file's scenario TOML
        }
    toml = state.scenario_toml(state.named(scenario)) if pair is None else toml_a
    k = f"fg:dl:{what}"
    blocked = image_export.problem()
    why = "Needs Chrome or Chromium on the server (see below)." if blocked else None
    png = guarded(lambda: png_bytes(fig, meta, toml), k + ":png", image=True)  # never registered if disabled
    svg = guarded(lambda: svg_text(fig, meta, toml), k + ":svg", image=True)
    html = guarded(lambda: html_text(fig, meta, toml, title), k + ":html")
    with st.container(horizontal=True, gap="small", key=f"fg-dl-{what}"):
        st.download_button(
            "PNG",
            data=png,
            file_name=name(scenario, what, "png", pair),
            mime="image/png",
            key=k + ":png",
            on_click="ignore",
            icon=":material/image:",
            disabled=bool(blocked),
            help=why
            or f"{EXPORT_WIDTH * EXPORT_SCALE} × {EXPORT_HEIGHT * EXPORT_SCALE} pixels, the scenario in its metadata.",
        )
        st.download_button(
            "SVG",
            data=svg,
            file_name=name(scenario, what, "svg", pair),
            mime="image/svg+xml",
            key=k + ":svg",
            on_click="ignore",
            icon=":material/shape_line:",
            disabled=bool(blocked),
            help=why or "A vector image, the scenario in its metadata.",
        )
        st.download_button(
            "HTML",
            data=html,
            file_name=name(scenario, what, "html", pair),
            mime="text/html",
            key=k + ":html",
            on_click="ignore",
            icon=":material/code:",
            help="An interactive page (plotly.js inline), the scenario included.",
        )
    if blocked:
        st.caption(f":material/warning: {blocked}")
    for ext in ("png", "svg", "html"):
        if reason := _failures().get(f"{k}:{ext}"):
            st.error(f"The last {ext.upper()} export failed: {plain(reason)}", icon=":material/error:")


MENU_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["toImage"]}
"""Plotly's settings under a chart with our export menu: plotly's own camera button wrote a PNG with no
scenario, seed or version in it, beside the menu's that carry them (one way to export, with provenance)."""


def chart(
    fig: go.Figure,
    scenario: Scenario | None,
    what: str,
    *,
    title: str = "",
    help: str | None = None,
    pair: Pair | None = None,
    facts: dict[str, str] | None = None,
    **events: Any,
) -> Any:
    """Draw a figure (themed by Streamlit) with a small export menu above its top-right corner (`pair`:
    a comparison's sides, which its files are named and stamped after); `events` (``on_select``,
    ``selection_mode``) go to `st.plotly_chart`, whose value is returned."""
    if scenario is not None:
        # the caption takes what the menu's button leaves: a ninth of a third of the page squeezed the
        # button to 21 px, its icon over its arrow (Compare's charts: a review)
        row = st.container(
            horizontal=True, horizontal_alignment="right", vertical_alignment="bottom", gap="small"
        )
        if help:
            row.caption(help)
        with row.popover(
            "",
            icon=":material/download:",
            help="Export this chart as PNG, SVG or interactive HTML.",
            key=f"fg:export:{what}",
        ):
            figure_buttons(fig, scenario, what, title or what.replace("_", " "), pair, facts)
    elif help:
        st.caption(help)
    config = MENU_CONFIG if scenario is not None else {"displaylogo": False}
    return st.plotly_chart(fig, theme="streamlit", key=f"fg:chart:{what}", config=config, **events)


def export_meta(result: SimResult, seeds: int = 1) -> dict[str, str]:
    """A run's exports' provenance; with `seeds` on the page, that their figures are the one seed's run."""
    sc = result.scenario
    meta = {**provenance(sc), "engine_version": result.engine_version}
    if seeds > 1:
        meta["figures"] = (
            f"seed {sc.seed}'s run alone; the page shows the mean of {seeds} seeds (fengong run FILE "
            f"--replications {seeds} prints it)"
        )
    return meta


def table_buttons(
    result: SimResult, *, figures: Callable[[], Sequence[tuple[str, go.Figure]]] | None = None, seeds: int = 1
) -> None:
    """CSV of the per-request and summary tables, the scenario's TOML, and the HTML report; with `seeds` runs
    on the page, each says its figures are the one seed's run (the report's headline read seed 1's 807 ms
    under CDFs of the mean of 3 seeds, beside the page's 848 ± 88 ms: a review)."""
    sc = result.scenario
    meta = export_meta(result, seeds)
    named_sc = state.named(sc)
    toml = state.scenario_toml(named_sc)
    with st.container(horizontal=True, gap="small", key="fg-dl-tables"):
        st.download_button(
            "Requests (CSV)",
            data=guarded(lambda: ex.csv_with_provenance(result.requests, meta), "requests"),
            file_name=name(sc, "requests", "csv"),
            mime="text/csv",
            on_click="ignore",
            key="fg:dl:requests",
            help="One row per request: class, times, tokens, instances, outcome, TTFT/TPOT/E2E in seconds, met_slo.",
            icon=":material/table:",
        )
        st.download_button(
            "Summary (CSV)",
            data=guarded(lambda: ex.csv_with_provenance(summary_rows(result.to_json()), meta), "summary"),
            file_name=name(sc, "summary", "csv"),
            mime="text/csv",
            on_click="ignore",
            key="fg:dl:summary",
            help="Every summary figure as a dotted name and a value (what `fengong run --json` prints).",
            icon=":material/summarize:",
        )
        st.download_button(
            "Scenario (TOML)",
            data=toml,
            file_name=name(sc, "scenario", "toml"),
            mime="application/toml",
            on_click="ignore",
            key="fg:dl:toml",
            help="Run it again with `fengong run <file>`.",
            icon=":material/description:",
        )
        if figures is not None:
            st.download_button(
                "Report (HTML)",
                data=guarded(lambda: report_html(result, figures(), meta, toml, named_sc), "report"),
                file_name=name(sc, "report", "html"),
                mime="text/html",
                on_click="ignore",
                key="fg:dl:report",
                help="One self-contained page: the headline figures with their bands, each class's verdict, the "
                "advisor's findings and the bill, then every chart (interactive), the summary and the scenario.",
                icon=":material/article:",
            )
    for what in ("requests", "summary", "report"):
        if reason := _failures().get(what):
            st.error(f"The last {what} export failed: {plain(reason)}", icon=":material/error:")


def report_html(
    result: SimResult,
    figures: Sequence[tuple[str, go.Figure]],
    meta: dict[str, str],
    toml: str | None = None,
    named: Scenario | None = None,
) -> str:
    """The one-file HTML report of a run: plotly.js inline once, then every chart.

    Its title is the scenario's name as `meta` gives it (an edited scenario's derived name), its TOML
    `toml` (by default the run's scenario as it is), and under the title whatever its run's mark says
    of uncalibrated pools and the description of `named` (the edited scenario under its derived name:
    the preset's own description read as the edit's, a review).
    """
    sc = result.scenario
    uncalibrated = ex.note(ex.pool_marks(sc, result.summary)) or ""
    from ui.report_parts import report_sections  # the figures, verdicts and findings before the charts

    sections = report_sections(result)
    for i, (title, fig) in enumerate(figures):
        copy = go.Figure(fig).update_layout(template="plotly_white")
        sections.append((title, copy.to_html(full_html=False, include_plotlyjs=i == 0)))
    return ex.html_report(
        f"Fengong report: {meta.get('scenario', sc.name)}",
        meta,
        toml or dumps_toml(sc),
        summary_rows(result.to_json()),
        sections,
        notes=" ".join(
            filter(
                None,
                [
                    f"Figures: {meta['figures']}." if "figures" in meta else "",
                    ex.line(result.summary),
                    ex.rising_line(result.summary),
                    f"Cost basis: {ex.cost_basis(result.summary)}.",  # an assumed price said (a review)
                    uncalibrated,
                    (named or sc).description.strip(),
                ],
            )
        ),
    )
