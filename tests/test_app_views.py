"""The dashboard's engine helpers: engine.presentation, engine.previews and engine.report."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pandas as pd
import pytest

from engine import presentation as pr
from engine import previews as pv
from engine import report
from engine.catalog import Catalog
from engine.errors import ScenarioError
from engine.run import ENGINE_VERSION, SimResult, simulate
from engine.scenario import LengthDist
from engine.scenario_io import apply_overrides, load_preset, unsafe_paths


@pytest.fixture(scope="module")
def run() -> SimResult:
    sc = apply_overrides(load_preset("chat-disaggregated"), {"duration_s": 90.0})
    return simulate(sc)


# --- presentation ----------------------------------------------------------------------------


def test_cdf_points_keep_the_tail_and_stay_monotone() -> None:
    vals = np.random.default_rng(3).lognormal(0, 1, 50_000)
    x, y = pr.cdf_points(vals, 400)
    assert len(x) <= 420
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(y) > 0)
    assert y[-1] == 1.0 and x[-1] == vals.max()
    p99 = np.sort(vals)[int(np.ceil(0.99 * len(vals))) - 1]
    assert np.any(np.isclose(x, p99))  # the p99 step is an exact point of the curve
    assert pr.cdf_points(np.array([np.nan, np.inf]))[0].size == 0


def test_latency_cdfs_match_the_summary(run: SimResult) -> None:
    sc, s = run.scenario, run.summary
    for metric in ("ttft", "tpot", "e2e"):
        cdf = pr.latency_cdfs(sc, run.requests, metric)  # type: ignore[arg-type]
        assert set(cdf["class"]) == {c.name for c in sc.workload.classes}
        # the median of the curve is the summary's p50 (same requests, same window)
        x = cdf["latency_ms"].to_numpy()
        y = cdf["fraction"].to_numpy()
        assert x[np.searchsorted(y, 0.5)] == pytest.approx(s["latency_ms"][metric]["p50"], rel=0.02)


def test_slo_tail_agrees_with_the_class_summary(run: SimResult) -> None:
    tail = pr.slo_tail(run.scenario, run.requests)
    for row in tail.to_dict("records"):
        cls = run.summary["classes"][row["class"]]
        assert row["passes"] == cls["passes"]
        assert row["slo_attainment"] == pytest.approx(cls["slo_attainment"])
        assert row["ttft_at_percentile_ms"] == pytest.approx(cls["ttft_ms_at_percentile"])
        assert (row["breaks"] == "") == row["passes"]
        assert 0 <= row["ttft_holds_to_pct"] <= 100


def test_slo_tail_names_what_breaks(run: SimResult) -> None:
    sc = apply_overrides(run.scenario, {"workload.classes[0].slo.ttft_ms": 1.0})
    row = pr.slo_tail(sc, run.requests).iloc[0]
    assert not row["passes"] and "TTFT" in row["breaks"]
    assert row["ttft_holds_to_pct"] < row["percentile"]


def test_tail_curves_rise(run: SimResult) -> None:
    tc = pr.tail_curves(run.scenario, run.requests, "ttft")
    for _, rows in tc.groupby("class"):
        assert np.all(np.diff(rows["latency_ms"].to_numpy()) >= 0)


def test_compare_says_which_is_better() -> None:
    a = {"latency_ms": {"ttft": {"p99": 100.0}}, "slo_attainment": 0.9, "cost": {"usd_per_request": 0.002}}
    b = {"latency_ms": {"ttft": {"p99": 50.0}}, "slo_attainment": 0.8, "cost": {"usd_per_request": 0.002}}
    t = pr.compare(a, b).set_index("figure")
    assert t.loc["TTFT p99", "better"] == "B" and t.loc["TTFT p99", "change_pct"] == pytest.approx(-50.0)
    assert t.loc["SLO attainment", "better"] == "A"
    assert t.loc["Cost per request", "better"] == "same"
    assert t.loc["Goodput", "better"] == ""  # missing on both sides


def test_cost_parts_add_up(run: SimResult) -> None:
    parts = pr.cost_parts(run.summary)
    assert parts["share"].sum() == pytest.approx(1.0)
    total = sum(v for v in run.summary["cost"]["usd_per_request_by_part"].values() if v)
    assert parts["usd_per_request"].sum() == pytest.approx(total)


def test_summary_rows_and_headline(run: SimResult) -> None:
    rows = pr.summary_rows(run.to_json()).set_index("figure")["value"]
    assert rows["latency_ms.ttft.p99"] == run.summary["latency_ms"]["ttft"]["p99"]
    h = pr.headline(run.summary)
    assert h["goodput_rps"] == run.summary["goodput_rps"]
    assert h["goodput_per_usd"] == pytest.approx(
        h["goodput_rps"] * 3600 / run.summary["cost"]["usd_per_hour"]
    )
    assert pr.cache_rates({"cache": {"hit_rate": 0.25, "bytes": 12.0}}).to_dict("records") == [
        {"figure": "hit_rate", "value": 0.25}
    ]
    assert pr.cache_rates({}).empty


# --- previews --------------------------------------------------------------------------------


def test_length_preview_matches_the_distribution() -> None:
    dist = LengthDist(kind="lognormal", mean=1000, p99=6000)
    hist = pv.length_histogram(dist)
    assert hist["fraction"].sum() == pytest.approx(1.0)
    stats = pv.length_stats(dist)
    assert stats["mean_tokens"] == pytest.approx(1000, rel=0.05)
    assert stats["p99_tokens"] == pytest.approx(6000, rel=0.1)
    const = pv.length_histogram(LengthDist(kind="constant", tokens=7))
    assert const["fraction"].tolist() == [1.0]


def test_rate_curve_has_the_scenario_mean() -> None:
    sc = apply_overrides(load_preset("chat-disaggregated"), {"workload.arrival.shape": "diurnal"})
    curve = pv.rate_curve(sc.workload.arrival, sc.duration_s)
    assert curve["rate_rps"].mean() == pytest.approx(sc.workload.arrival.rate_rps, rel=0.02)
    closed = apply_overrides(sc, {"workload.arrival.kind": "closed_loop"})
    assert pv.rate_curve(closed.workload.arrival, closed.duration_s).empty
    hist = pv.arrival_histogram(np.linspace(0, 10, 101)[:-1], 10.0, bins=10)
    assert hist["rate_rps"].tolist() == [10.0] * 10


def test_trace_formats_and_shipped_traces() -> None:
    assert pv.trace_format("x.jsonl", '{"timestamp": 0, "input_length": 5}') == "mooncake"
    assert pv.trace_format("x.csv", "TIMESTAMP,ContextTokens,GeneratedTokens") == "azure"
    assert pv.trace_format("x.csv", "arrival_s,input_tokens,output_tokens,class") == "csv"
    assert pv.trace_format("x.csv", "a,b") is None
    traces = pv.shipped_traces()
    if traces:  # the shared folder is there in the checkout and in CI
        assert any(t.format == "mooncake" and t.path.startswith("shared:") for t in traces)


def test_unsafe_paths_refuse_local_files() -> None:
    base = load_preset("chat-disaggregated")
    ok = apply_overrides(
        base, {"workload.trace": {"format": "mooncake", "path": "shared:traces/mooncake/x.jsonl"}}
    )
    assert unsafe_paths(ok, ["shared:"]) == []
    for path in ("/etc/passwd", "shared:../../etc/passwd", "~/.ssh/id_rsa"):
        bad = apply_overrides(base, {"workload.trace": {"format": "csv", "path": path}})
        assert unsafe_paths(bad, ["shared:"]), path
    emp = apply_overrides(
        base, {"workload.classes[0].input": {"kind": "empirical", "path": "/etc/hosts", "column": "x"}}
    )
    assert unsafe_paths(emp, ["shared:"]) == [
        "workload.classes[0].input.path: '/etc/hosts' is not a shipped or uploaded file"
    ]


def test_switching_mode_keeps_the_chips() -> None:
    dis = load_preset("chat-disaggregated")
    col = pv.with_mode(dis, "colocated")
    assert col.deployment.mode == "colocated" and len(col.deployment.pools) == 1
    assert col.deployment.pools[0].count == sum(p.count for p in dis.deployment.pools)
    back = pv.with_mode(col, "disaggregated")
    assert sorted(p.role for p in back.deployment.pools) == ["decode", "prefill"]
    assert sum(p.count for p in back.deployment.pools) == col.deployment.pools[0].count
    assert pv.with_mode(dis, "disaggregated") is dis
    with pytest.raises(ValueError):
        pv.with_mode(dis, "sideways")


def test_roofline_points_bind_where_the_model_says(catalog: Catalog) -> None:
    model = catalog.model("llama-3.1-70b")
    h100 = catalog.chip("h100-sxm")
    assert pv.fitting_tp(model, h100, "bf16", "bf16") == 2  # 141 GB of weights in 2 x 80 GB x 0.9
    assert pv.fitting_tp(model, catalog.chip("h200"), "fp8", "fp8") == 1
    curves, points = pv.roofline(model, [(h100, 4)], "bf16", "bf16")
    assert set(curves["chip"]) == {"h100-sxm ×4"}
    pre = points[points["phase"] == "prefill"]
    dec = points[points["phase"] == "decode"]
    assert (pre[pre["label"].str.contains("8192")]["bound"] == "compute").all()
    assert dec.iloc[0]["bound"] == "bandwidth"  # batch 1 decode
    assert pre["intensity_flops_per_byte"].min() > dec["intensity_flops_per_byte"].max()


def test_custom_chip_records_its_sources(catalog: Catalog) -> None:
    base = catalog.chip("h100-sxm")
    chip = pv.custom_chip(
        base,
        "my-h100",
        "Mine",
        {"memory_gb": 96.0, "memory_tb_s": base.memory_tb_s},
        {"bf16": 989, "fp8": 1979},
    )
    assert chip.sources["memory_gb"] == pv.USER_SOURCE
    assert chip.sources["memory_tb_s"] == base.sources["memory_tb_s"]  # unchanged number, original source
    assert chip.sources["tflops"] == base.sources["tflops"]
    assert chip.illustrative
    sc = pv.with_custom_chip(load_preset("chat-disaggregated"), chip)
    sc = apply_overrides(sc, {"deployment.pools[0].hardware": "my-h100"})
    simulate(apply_overrides(sc, {"duration_s": 10.0}))  # the scenario resolves and runs
    gone = pv.without_custom_chip(sc, "my-h100", "h200")
    assert gone.deployment.pools[0].hardware == "h200" and not gone.custom_hardware
    with pytest.raises(ValueError):
        pv.custom_chip(base, "Bad Id!", "x", {}, {"bf16": 1.0})


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
    back = pd.read_csv(__import__("io").StringIO(text), comment="#")
    assert len(back) == 5 and "ttft_s" in back.columns


def test_html_report_holds_everything(run: SimResult) -> None:
    meta = report.provenance(run.scenario, "chat-disaggregated", edited=True)
    html = report.html_report(
        "Run <1>", meta, "seed = 1\n", pr.summary_rows(run.summary), [("TTFT", "<div id='f1'></div>")]
    )
    assert "Run &lt;1&gt;" in html and "<div id='f1'></div>" in html
    assert f'content="{ENGINE_VERSION}"' in html and "seed = 1" in html and "latency_ms.ttft.p99" in html


def test_validation_table_is_there_when_the_reference_is(catalog: Catalog) -> None:
    tab = report.validation_table(catalog)
    if report.reference_points_path() is None:
        assert tab is None
        return
    assert tab is not None and len(tab) >= 20
    assert {"measured", "predicted", "error", "kind"} <= set(tab.columns)


def test_link_problems_are_scenario_errors() -> None:
    from engine.scenario_io import from_link

    with pytest.raises(ScenarioError):
        from_link({"v": "1", "p": "chat-disaggregated", "s": "%%%"})
