"""The dashboard's exports: engine.explain.report (provenance in PNG, SVG and CSV files, the HTML
report, the validation table)."""

from __future__ import annotations

import io
import struct
import zlib

import pandas as pd
import pytest

from engine.calibration import calibrate, reference
from engine.catalog.entries import Catalog
from engine.explain import presentation as pr
from engine.explain import report
from engine.scenario.codec import apply_overrides, load_preset
from engine.serving.run import ENGINE_VERSION, SimResult, simulate


@pytest.fixture(scope="module")
def run() -> SimResult:
    return simulate(apply_overrides(load_preset("chat-disaggregated"), {"duration_s": 90.0}))


# --- report ----------------------------------------------------------------------------------


def _tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (
        report.PNG_SIGNATURE
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\x00\x00"))
        + chunk(b"IEND", b"")
    )


def test_png_and_svg_carry_provenance() -> None:
    meta = {"fengong:engine_version": ENGINE_VERSION, "fengong:scenario_toml": 'name = "é"\nseed = 3\n'}
    png = report.png_with_text(_tiny_png(), meta)
    assert png.startswith(report.PNG_SIGNATURE) and report.png_text(png) == meta
    with pytest.raises(ValueError):
        report.png_with_text(b"GIF89a", meta)
    svg = report.svg_with_metadata(
        '<svg xmlns="http://www.w3.org/2000/svg"><g/></svg>', {"seed": "3", "x": "<&>"}
    )
    assert svg.index("<metadata") > svg.index("<svg") and "&lt;&amp;&gt;" in svg


def test_file_names_and_csv_provenance(run: SimResult) -> None:
    assert (
        report.file_name("chat-disaggregated", 7, "ttft_cdf", "png")
        == "fengong_chat-disaggregated_7_ttft_cdf.png"
    )
    assert report.file_name("a b/c", 1, "x y", ".csv", edited=True) == "fengong_a-b-c-edited_1_x-y.csv"
    meta = report.provenance(run.scenario, "chat-disaggregated", edited=False)
    assert meta["engine_version"] == ENGINE_VERSION and meta["seed"] == str(run.scenario.seed)
    text = report.csv_with_provenance(run.requests.head(5), meta)
    assert text.startswith("# generator: Fengong\n")
    back = pd.read_csv(io.StringIO(text), comment="#")
    assert len(back) == 5 and "ttft_s" in back.columns


def test_html_report_holds_everything(run: SimResult) -> None:
    meta = report.provenance(run.scenario, "chat-disaggregated", edited=True)
    html = report.html_report(
        "Run <1>", meta, "seed = 1\n", pr.summary_rows(run.summary), [("TTFT", "<div id='f1'></div>")]
    )
    assert "Run &lt;1&gt;" in html and "<div id='f1'></div>" in html
    assert f'content="{ENGINE_VERSION}"' in html and "seed = 1" in html and "latency_ms.ttft.p99" in html
    # the raw fields said as raw: 'latency_ms.ttft.p99 75,907.7' stood bare under a headline marking it (a review)
    assert "Every summary field</h2><p>As the engine wrote them, unmarked" in html
    # a chart's own export carries no summary, and no heading over an empty table (a browser review)
    chart = report.html_report(
        "Chart", meta, "seed = 1\n", pd.DataFrame(columns=["figure", "value"]), [("C", "")]
    )
    assert "Every summary field" not in chart and "Scenario (TOML)" in chart


def test_validation_table_is_there_when_the_reference_is(catalog: Catalog) -> None:
    tab = report.validation_table(catalog)
    if calibrate.reference_csv() is None:
        assert tab is None
        return
    assert tab is not None and len(tab) >= 20
    assert {"measured", "predicted", "error", "kind", "fitted"} <= set(tab.columns)
    # the MoE rows, which fit only their experts' factor, are told apart from the dense fit (make validate's split)
    moe = {m.id for m in reference.usable_points(catalog) if calibrate.is_moe(m, catalog)}
    assert moe and set(tab.loc[~tab["fitted"], "id"]) == moe


def test_the_html_reports_figures_carry_the_pages_marks() -> None:
    """An unsustainable run's report read 'TTFT p99 | 587.3 s | −50% to +65%' and '532,825 ms' per class where
    the page reads '≥ 587.3 s, grows with run length' (a review); an at-capacity run's card read its TTFT
    p99 with a band beside the warning that it grows."""
    from engine import explain as ex
    from ui import layout
    from ui.report_parts import report_sections

    over = {"workload.arrival.rate_rps": 60.0, "duration_s": 120.0}
    behind = simulate(apply_overrides(load_preset("chat-disaggregated"), over))
    assert ex.latency_shortfall(behind.summary, "ttft") is not None
    head, classes = (html for _, html in report_sections(behind)[:2])
    row = head.split("TTFT p99</td>", 1)[1].split("</tr>", 1)[0]
    assert "≥ " in row and ex.GROWS in row and "%" not in row
    cost = head.split("$ / request</td>", 1)[1].split("</tr>", 1)[0]
    assert ex.LEVEL in cost
    assert "≥ " in classes
    at_cap = simulate(apply_overrides(load_preset("enterprise-mixed"), {"workload.arrival.rate_rps": 40.0}))
    assert at_cap.summary["unsustainable"] is None and at_cap.summary["at_capacity"]
    assert layout.marked_figure(at_cap.summary, "ttft_p99_ms", "75.9 s", "−65% to −52%") == (
        "75.9 s",
        layout.HEADROOM,
    )
    assert layout.marked_figure(at_cap.summary, "tpot_p99_ms", "30 ms", "± 9%") == ("30 ms", "± 9%")


def test_the_reports_bill_is_written_as_the_page_writes_it(run: SimResult) -> None:
    """Its cost table read '0.000143233' and '0.499659' where the page reads $0.000143 and 50.0% (a review)."""
    from ui.report_parts import report_sections

    bill = dict(report_sections(run))[
        next(h for h, _ in report_sections(run) if h.startswith("Cost by part"))
    ]
    assert "$ / request" in bill and "share of the bill" in bill and "%</td>" in bill
    assert "e-0" not in bill and "0.4999" not in bill and "<td>$0.000" in bill
