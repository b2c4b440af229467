"""What the HTML report of a run says before its charts: the headline figures with their bands, each
class's verdict, the advisor's findings and where the bill goes (`ui.export.report_html`).

A report sent to a buying committee held the charts, the raw summary and the TOML only: no band, no
verdict, no finding saying that a pass rests on chips as fast as modelled (a review).
"""

from __future__ import annotations

import html

import pandas as pd

from engine import explain as ex
from engine.core import ScenarioError
from engine.serving import SimResult
from ui import layout
from ui.tables import cost_view
from ui.tail_table import report_view

BILL_COLUMNS = {
    "usd_per_request": "$ / request",
    "usd_per_million_requests": "$ / million requests",
    "usd_per_million_output_tokens": "$ / million output tokens",
    "share": "share of the bill",
}
"""The report's cost-by-part columns in words, as the page heads them."""


def report_sections(result: SimResult) -> list[tuple[str, str]]:
    """(heading, HTML fragment) for the headline, the classes, the findings and the bill; the bands
    and the findings with the run's spread (two more simulations, as the Results page runs them),
    where the engine allows it."""
    s, sc = result.summary, result.scenario
    marks = ex.pool_marks(sc, s)
    bounds = ex.limits(s, sc)
    head = ex.headline(s)
    try:
        spread = ex.run_spread(sc, s)
    except ScenarioError:
        spread = None
    moves = spread.moves() if spread is not None else None
    rows = []
    for label, key, fmt, *_ in layout.STRIP:
        text = fmt(head.get(key))
        band = ex.figure_band(text, marks, key, moves, bounds)
        text, band = layout.marked_figure(s, key, text, band)  # as the page's cards and strip say it
        rows.append({"figure": label, "value": text, "band (about two in three land inside)": band or "–"})
    notes = ex.cliff_notes(moves, s.get("slo_attainment")) if moves is not None else []
    headline = pd.DataFrame(rows).to_html(index=False, border=0, classes="summary") + "".join(
        f"<p>{html.escape(n)}</p>" for n in notes
    )
    kinds = ("ttft", "tpot", "max_tbt")
    growing = {k for k in kinds if ex.latency_shortfall(s, k) is not None}
    verdicts = report_view(ex.slo_tail(sc, result.requests), growing, {k for k in kinds if ex.level(s, k)})
    verdicts = verdicts.to_html(index=False, border=0, classes="summary")
    findings = ex.findings(result)
    if spread is not None:  # a pass that rests on chips as fast as modelled, said as the page says it
        findings = ex.at_the_edge(findings, spread.slower, tops=ex.latency_tops(sc, s))
    found = "".join(
        f"<li><strong>{html.escape(f.severity)}</strong>: {html.escape(f.text)}</li>" for f in findings
    )
    parts = cost_view(
        ex.cost_parts(s)
    )  # as the page writes it: '0.000143233' and '0.499659' stood (a review)
    dollars = ("usd_per_million_requests", "usd_per_million_output_tokens")
    parts = parts.assign(
        **{c: [f"${v:,.2f}" for v in parts[c]] for c in dollars if c in parts},
        **({"share": [f"{v:.1%}" for v in parts["share"]]} if "share" in parts else {}),
    ).rename(columns=BILL_COLUMNS)
    bill = parts.to_html(index=False, border=0, classes="summary", float_format=lambda v: f"{v:,.6g}")
    return [
        ("Headline", headline + f"<p>{html.escape(ex.BAND_NOTE)}</p>"),
        ("Each class against its SLO", verdicts),
        ("Advisor", f"<ul>{found}</ul>" if found else "<p>No finding.</p>"),
        (f"Cost by part ({html.escape(ex.cost_basis(s))})", bill),
    ]
