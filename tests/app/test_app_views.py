"""The dashboard's engine helpers: engine.explain.presentation and engine.explain.previews (the
exports' provenance and reports: test_app_report.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.calibration import trust
from engine.catalog.entries import Catalog
from engine.core.errors import ScenarioError
from engine.costmodel import ownership
from engine.explain import bill
from engine.explain import compare_table as ct
from engine.explain import mode_switch as ms
from engine.explain import presentation as pr
from engine.explain import previews as pv
from engine.explain import roofline_chips as rc
from engine.explain.pairing import paired_cdfs, paired_targets
from engine.scenario.codec import apply_overrides, load_preset, unsafe_paths
from engine.scenario.model import LengthDist
from engine.scenario.resolve import scenario_catalog
from engine.serving.metrics import measured_mask
from engine.serving.run import SimResult, simulate


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


def test_slo_tail_judges_the_tbt_target_as_the_summary_does() -> None:
    """A class with ``slo.tbt_ms`` fails where its largest token gap at the percentile misses it,
    in the Results and SLO pages' table as in the summary (found in review: the table said passes)."""
    sc = apply_overrides(load_preset("chat-colocated"), {"duration_s": 120.0})
    sc = apply_overrides(sc, {"workload.classes[0].slo.tbt_ms": 100.0})
    res = simulate(sc)
    cls = res.summary["classes"]["chat"]
    assert cls["max_tbt_ms_at_percentile"] > 100.0 and not cls["passes"]
    row = pr.slo_tail(sc, res.requests).iloc[0]
    assert not row["passes"] and row["breaks"] == "TBT"
    assert row["max_tbt_at_percentile_ms"] == pytest.approx(cls["max_tbt_ms_at_percentile"])
    assert row["tbt_target_ms"] == 100.0


def test_tail_curves_rise(run: SimResult) -> None:
    tc = pr.tail_curves(run.scenario, run.requests, "ttft")
    for _, rows in tc.groupby("class"):
        assert np.all(np.diff(rows["latency_ms"].to_numpy()) >= 0)


def test_compare_says_which_is_better() -> None:
    a = {"latency_ms": {"ttft": {"p99": 100.0}}, "slo_attainment": 0.9, "cost": {"usd_per_request": 0.002}}
    b = {"latency_ms": {"ttft": {"p99": 50.0}}, "slo_attainment": 0.8, "cost": {"usd_per_request": 0.002}}
    t = ct.compare(a, b).set_index("figure")
    assert t.loc["TTFT p99", "better"] == "B" and t.loc["TTFT p99", "change_pct"] == pytest.approx(-50.0)
    assert t.loc["SLO attainment", "better"] == "A"
    assert t.loc["Cost per request", "better"] == "same"
    assert t.loc["Goodput", "better"] == ""  # missing on both sides
    assert "Cache hit rate" not in t.index  # a feature in play on neither side is left out
    cached = ct.compare({"cache": {"hit_rate": 0.0}}, {"cache": {"hit_rate": 0.4}}).set_index("figure")
    assert cached.loc["Cache hit rate", "better"] == "B"


def test_a_change_of_ten_times_or_more_reads_as_a_ratio_too() -> None:
    """A goodput from 0.01 to 8.7 req/s read '+87,004.6%' beside A's rounded 0.01 (a review): from ten
    times on, the change gives its ratio and drops the tenth."""
    from ui.tables import change_text

    assert change_text(87004.6, None) == "+87,005% (871×)"
    assert change_text(900.0, None) == "+900% (10×)"
    assert change_text(899.0, None) == "+899.0%" and change_text(-99.9, None) == "-99.9%"
    assert change_text(None, 98.8) == "+98.8 pts" and change_text(None, None) is None


def test_a_share_changes_in_points_not_percent() -> None:
    """0.8% to 99.6% of requests within SLO is +98.8 points, not +12,350%: a share's change is in
    percentage points, and it has no relative change; other figures keep theirs."""
    a = {"slo_attainment": 0.008, "latency_ms": {"ttft": {"p99": 200.0}}}
    b = {"slo_attainment": 0.996, "latency_ms": {"ttft": {"p99": 100.0}}}
    t = ct.compare(a, b).set_index("figure")
    assert t.loc["SLO attainment", "change_points"] == pytest.approx(98.8)
    assert pd.isna(t.loc["SLO attainment", "change_pct"])
    assert t.loc["TTFT p99", "change_pct"] == pytest.approx(-50.0) and pd.isna(
        t.loc["TTFT p99", "change_points"]
    )
    from ui.tables import compare_view

    shown = compare_view(ct.compare(a, b)).set_index("figure")  # one change column on the page
    assert "change_points" not in shown.columns
    assert (shown.loc["SLO attainment", "change_pct"], shown.loc["TTFT p99", "change_pct"]) == (
        "+98.8 pts",
        "−50.0%",  # a minus sign, as the bands beside it write theirs
    )
    # a share as the cards read it, in percent, its change in points
    share = shown.loc["SLO attainment"]
    assert (share["unit"], share["a"], share["b"]) == ("%", "0.80%", "99.60%")
    assert pd.isna(share["change"])  # its change is said once, in points, in the next column
    assert (shown.loc["TTFT p99", "a"], shown.loc["TTFT p99", "change"]) == ("200", "−100")
    # on the page the cells hold the numbers, read as the view writes them: a header's click sorts
    # by value (as text, '23,132' sorted before '3,740' and '-5.0 pts' among the percents: a review)
    from ui.tables import compare_styled

    styled = compare_styled(ct.compare(a, b))
    # the figure, its verdict, A, B and the change first; the unit in the figure's name, not a column of
    # its own (at 1,100 px, last, it sat off the screen; before that it pushed the change off)
    cols = list(styled.data.columns)
    assert cols[:5] == ["figure", "better", "a", "b", "change_pct"] and "unit" not in cols
    nums = styled.data.set_index("figure")
    assert (nums.loc["SLO attainment", "a"], nums.loc["SLO attainment", "change_pct"]) == pytest.approx(
        (0.8, 98.8)
    )
    assert (nums.loc["TTFT p99", "b"], nums.loc["TTFT p99", "change_pct"]) == pytest.approx((100.0, -50.0))
    assert pd.isna(nums.loc["SLO attainment", "change"])
    html = styled.to_html()
    for text in ("0.80%", "99.60%", "+98.8 pts", "−50.0%", "200", "−100", "TTFT p99 (ms)", "SLO attainment"):
        assert f">{text}</td>" in html, text


def test_compare_figures_read_as_the_cards_read_them() -> None:
    """Four significant figures with thousands separated: a user read '23130' and '+0.000005249'."""
    from engine.explain.compare_table import cell_text as figure_text

    assert [figure_text(v) for v in (23130.4, 0.00054153, 1.8874, 809.94, 0.0, 1234567.0)] == [
        "23,130",
        "0.0005415",
        "1.887",
        "809.9",
        "0",
        "1,234,567",
    ]
    assert (
        figure_text(0.000005249, signed=True) == "+0.000005249"
        and figure_text(-12.48, signed=True) == "−12.48"
    )
    assert figure_text(float("nan")) is None and figure_text(None) is None
    assert figure_text(-0.0) == "0" and figure_text(float("inf")) == "∞"
    assert [figure_text(v) for v in (2.1, 2.1240, 6.4, 0.05)] == ["2.100", "2.124", "6.400", "0.05000"]


def test_cost_parts_add_up(run: SimResult) -> None:
    parts = bill.cost_parts(run.summary)
    assert parts["share"].sum() == pytest.approx(1.0)
    total = sum(v for v in run.summary["cost"]["usd_per_request_by_part"].values() if v)
    assert parts["usd_per_request"].sum() == pytest.approx(total)
    assert parts["usd_per_million_requests"].sum() == pytest.approx(total * 1e6)
    owned = {"cost": {"usd_by_kind": {"capital": 3.0, "energy": 1.0},
                      "usd_per_request_by_kind": {"capital": 3e-7, "energy": 1e-7}}}  # fmt: skip
    kinds = bill.cost_kinds(owned).set_index("kind")
    assert kinds["usd_per_million_requests"].to_dict() == pytest.approx({"capital": 0.3, "energy": 0.1})
    assert kinds["share"].to_dict() == pytest.approx({"capital": 0.75, "energy": 0.25})


def test_a_warm_ups_requests_are_in_the_bills_count_and_said() -> None:
    """With a warm-up, cost per request divides the bill from the start over every completed request,
    the warm-up's included, and goodput per $ read 434 beside 1 / $/request = 777 at 99.8% within SLO
    (the window's met requests over the whole bill: a review). Both count the same requests now, and
    the cost basis says what the bill is divided over."""
    from engine.explain import bill
    from engine.scenario.codec import apply_overrides, load_preset
    from engine.serving.run import simulate

    sc = apply_overrides(load_preset("chat-disaggregated"), {"duration_s": 60.0, "warmup_s": 30.0})
    s = simulate(sc).summary
    done, billed = s["requests"]["completed"], bill.billed_requests(s)
    assert billed is not None and billed > done
    h = pr.headline(s)
    assert h["goodput_per_usd"] == pytest.approx(
        s["slo_attainment"] * s["requests"]["total"] / done / s["cost"]["usd_per_request"]
    )
    assert (
        f"over all {billed:,} requests completed, the warm-up's {billed - done:,} included"
        in bill.cost_basis(s)
    )
    cold = simulate(apply_overrides(sc, {"warmup_s": 0.0})).summary  # no warm-up: nothing to say
    assert bill.billed_said(cold) == "" and bill.billed_requests(cold) == cold["requests"]["completed"]


def test_summary_rows_and_headline(run: SimResult) -> None:
    rows = pr.summary_rows(run.to_json()).set_index("figure")["value"]
    assert rows["latency_ms.ttft.p99"] == run.summary["latency_ms"]["ttft"]["p99"]
    h = pr.headline(run.summary)
    assert h["goodput_rps"] == run.summary["goodput_rps"]
    # requests that met their SLO over the whole bill, as $/request counts it: the drain's cost in it
    met = int(run.requests["met_slo"][measured_mask(run.scenario, run.requests)].sum())
    assert met == pytest.approx(h["goodput_rps"] * run.summary["window_s"])
    assert h["goodput_per_usd"] == pytest.approx(met / run.summary["cost"]["usd_total"])
    assert run.summary["drain_end_s"] > run.scenario.duration_s
    assert h["goodput_per_usd"] < h["goodput_rps"] * 3600 / run.summary["cost"]["usd_per_hour"]
    cache = {"hit_rate": 0.25, "bytes": 12.0, "hit_rate_by_tier": {"hbm": 0.2, "host": 0.05},
             "hit_rate_by_class": {"chat": 0.25}}  # fmt: skip
    assert pr.cache_rates({"cache": cache}).to_dict("records") == [
        {"figure": "all tiers", "value": 0.25, "key": "hit_rate"},
        {"figure": "HBM", "value": 0.2, "key": "hit_rate_by_tier.hbm"},
        {"figure": "host DRAM", "value": 0.05, "key": "hit_rate_by_tier.host"},
        {"figure": "class chat", "value": 0.25, "key": "hit_rate_by_class.chat"},
    ]
    assert pr.cache_rates({}).empty


def test_cache_and_scheduler_figures_say_what_happened() -> None:
    summary = {
        "cache": {"prefill_flops_saved": 2.5e15, "bytes_by_tier": {"hbm": 3e9, "host": 1e9, "pooled": 0.0},
                  "load_ms_mean": 0.5, "kv_transfer_tokens_saved": 1234},
        "requests": {"rejected_by_reason": {"queue_full": 3, "predicted_ttft_over_slo": 40}},
        "scheduler": {"preemptions": 7, "recomputed_tokens": 0, "swapped_bytes": 2.5e9, "retried": 0,
                      "role_switches": 1},
    }  # fmt: skip
    cache = {label: value for label, value, _ in pr.cache_figures(summary)}
    assert cache["Prefill compute saved"] == "2.5 PFLOP" and cache["KV read from cache"] == "4.0 GB"
    assert cache["Transfer saved"] == "1,234 tokens" and cache["Mean load time"] == "0.50 ms"
    helps = {label: h for label, _, h in pr.cache_figures(summary)}
    assert "HBM 3.0 GB, host DRAM 1.0 GB" in helps["KV read from cache"]
    assert "pooled" not in helps["KV read from cache"]
    colocated = {"cache": dict(summary["cache"], kv_transfer_tokens_saved=0, load_ms_mean=0.0,
                               prefill_flops_saved=9.8e18)}  # fmt: skip
    assert [(label, value) for label, value, _ in pr.cache_figures(colocated)] == [
        ("Prefill compute saved", "9.8 EFLOP"), ("KV read from cache", "4.0 GB"),
    ]  # fmt: skip
    sched = [(label, value) for label, value, _ in pr.scheduler_figures(summary)]
    assert sched == [
        ("Rejected: TTFT predicted to miss its target", "40"), ("Rejected: queue full", "3"),
        ("Preemptions", "7"), ("Swapped over PCIe", "2.5 GB"), ("Role switches", "1"),
    ]  # fmt: skip
    assert pr.scheduler_figures({"requests": {}, "scheduler": {"preemptions": 0}}) == []
    assert pr.cache_figures({}) == []


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


def test_unsafe_paths_refuse_local_files() -> None:
    base = load_preset("chat-disaggregated")
    ok = apply_overrides(
        base,
        {"workload.trace": {"format": "mooncake", "path": "data:traces/mooncake/conversation_trace.jsonl"}},
    )
    assert unsafe_paths(ok) == []
    for path in ("/etc/passwd", "shared:../../etc/passwd", "~/.ssh/id_rsa", "data:/etc/hosts"):
        bad = apply_overrides(base, {"workload.trace": {"format": "csv", "path": path}})
        assert unsafe_paths(bad), path
    emp = apply_overrides(
        base, {"workload.classes[0].input": {"kind": "empirical", "path": "/etc/hosts", "column": "x"}}
    )
    assert unsafe_paths(emp) == [
        "workload.classes[0].input.path: '/etc/hosts' is a local path; a shared scenario may only name "
        "shipped (data:...) or uploaded (upload:...) files"
    ]


def test_switching_mode_keeps_the_chips() -> None:
    dis = load_preset("chat-disaggregated")
    col = ms.with_mode(dis, "colocated")
    assert col.deployment.mode == "colocated" and len(col.deployment.pools) == 1
    assert col.deployment.pools[0].count == sum(p.count for p in dis.deployment.pools)
    back = ms.with_mode(col, "disaggregated")
    assert sorted(p.role for p in back.deployment.pools) == ["decode", "prefill"]
    assert sum(p.count for p in back.deployment.pools) == col.deployment.pools[0].count
    assert [p.count for p in back.deployment.pools] == [2, 4]  # a third to prefill: not the preset's 3 + 3
    # the split the user had comes back when the page passes the scenario it switched from
    again = ms.with_mode(col, "disaggregated", before=dis)
    assert again.deployment.pools == dis.deployment.pools
    # ... but not onto other chips or another count
    more = apply_overrides(col, {"deployment.pools[0].count": 8})
    assert [p.count for p in ms.with_mode(more, "disaggregated", before=dis).deployment.pools] == [3, 5]
    assert ms.with_mode(dis, "disaggregated") is dis
    # the faults of the split pools go with them and come back with the split (they were gone for good)
    drilled = apply_overrides(
        dis, {"faults": [{"at_s": 30.0, "pool": "prefill", "kind": "link", "duration_s": 9.0}]}
    )
    folded = ms.with_mode(drilled, "colocated")
    assert folded.faults == ()
    assert ms.with_mode(folded, "disaggregated", before=drilled).faults == drilled.faults
    with pytest.raises(ValueError):
        ms.with_mode(dis, "sideways")


def test_roofline_points_bind_where_the_model_says(catalog: Catalog) -> None:
    model = catalog.model("llama-3.1-70b")
    h100 = catalog.chip("h100-sxm")
    assert rc.fitting_tp(model, h100, "bf16", "bf16") == 2  # 141 GB of weights in 2 x 80 GB x 0.9
    assert rc.fitting_tp(model, catalog.chip("h200"), "fp8", "fp8") == 1
    curves, points = rc.roofline(model, [(h100, 4)], "bf16", "bf16")
    assert set(curves["chip"]) == {"h100-sxm ×4"}
    pre = points[points["phase"] == "prefill"]
    dec = points[points["phase"] == "decode"]
    assert (pre[pre["label"].str.contains("8192")]["bound"] == "compute").all()
    assert dec.iloc[0]["bound"] == "bandwidth"  # batch 1 decode
    assert pre["intensity_flops_per_byte"].min() > dec["intensity_flops_per_byte"].max()
    # points sit at what the iteration reaches: on the ceiling far from the ridge, under it near the
    # ridge by at most the unhidden share (compute and memory overlap only in part)
    from engine.costmodel.perf import UNHIDDEN_FRACTION

    ratio = points["achieved_tflops"] / points["attainable_tflops"]
    assert (ratio <= 1.0 + 1e-9).all() and (ratio >= 1.0 / (1.0 + UNHIDDEN_FRACTION) - 1e-9).all()
    assert ratio.max() > 0.97  # a batch-1 decode step: memory alone, nearly on the ceiling
    assert ratio.min() < 0.9  # a point near the ridge pays for the part neither side hides


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
    # a BF16 peak of 0 was saved silently and the chip then ran BF16 weights at its FP8 peak, faster
    # than the H100 it came from (a walkthrough): refused, naming the field and its range
    with pytest.raises(ValueError, match=r"tflops.bf16: 0 is not allowed: the allowed range is 0.01 to"):
        pv.custom_chip(base, "my-h100", "Mine", {}, {"bf16": 0.0, "fp8": 1979})


def test_a_custom_chips_profile_keeps_its_experts_factor(catalog: Catalog) -> None:
    """The form edits the fractions and the overhead; a base refitted on MoE measurements keeps
    saying its fractions hold the experts' slowness (eta_experts 1.0), so a run does not add the
    fitted factor on top; a base that leaves it unset keeps taking the fitted one."""
    base = catalog.chip("mi300x")
    prof = base.profile(None).model_copy(update={"eta_experts": 1.0, "source": "fitted to my MoE rows"})
    refit = base.model_copy(update={"profiles": {**base.profiles, "mine": prof}, "default_profile": "mine"})
    numbers = {"eta_compute": 0.3, "eta_bandwidth": 0.6, "overhead_ms": 4.0}
    chip = pv.custom_chip(refit, "my-mi300x", "Mine", {}, dict(base.tflops), numbers)
    assert chip.profile(None).eta_experts == 1.0
    assert trust.calibration(chip, "vllm", catalog, moe=True, custom=True)[0].eta_experts == 1.0
    plain = pv.custom_chip(base, "my-mi300x", "Mine", {}, dict(base.tflops), numbers)
    assert plain.profile(None).eta_experts is None
    prof = trust.calibration(plain, "vllm", catalog, moe=True, custom=True)[0]
    assert prof.eta_experts == trust.experts_factor("vllm")


def test_link_problems_are_scenario_errors() -> None:
    from engine.scenario.codec import from_link

    with pytest.raises(ScenarioError):
        from_link({"v": "1", "p": "chat-disaggregated", "s": "%%%"})


def test_paired_cdfs_overlay_scenarios_with_different_classes() -> None:
    def cdf(*classes: str) -> pd.DataFrame:
        return pd.DataFrame({"class": list(classes), "latency_ms": range(len(classes)), "fraction": 1.0})

    frame, shared = paired_cdfs(cdf("chat"), cdf("agent"), "all")
    assert sorted(frame["run"].unique()) == ["A", "B"] and shared is None  # both curves, no common target
    frame, shared = paired_cdfs(cdf("all", "chat", "batch"), cdf("chat"), "chat")
    assert set(frame["class"]) == {"chat"} and shared == "chat"
    frame, shared = paired_cdfs(cdf("all", "chat", "batch"), cdf("agent"), "batch")
    assert frame.groupby("run")["class"].first().to_dict() == {"A": "batch", "B": "agent"} and shared is None


def test_paired_charts_draw_each_sides_target_where_they_differ() -> None:
    """Compare drew A's target alone ("SLO 50 ms @ p99") beside a B asked for 30 ms at p90 (a walkthrough)."""
    from engine.scenario.codec import apply_overrides, load_preset

    a = load_preset("chat-disaggregated")
    b = apply_overrides(
        load_preset("chat-colocated"),
        {"workload.classes[0].slo.tpot_ms": 50.0, "workload.classes[0].slo.percentile": 99.0},
    )
    same = paired_targets(a, a, "chat")
    assert set(same["class"]) == {"chat"} and len(same) == len(same["metric"].unique())
    both = paired_targets(a, b, "chat")
    ta, tb = (both[both["class"] == r].set_index("metric") for r in "AB")
    assert (ta.loc["tpot", "target_ms"], ta.loc["tpot", "percentile"]) == (
        a.workload.classes[0].slo.tpot_ms,
        a.workload.classes[0].slo.percentile,
    )
    assert (tb.loc["tpot", "target_ms"], tb.loc["tpot", "percentile"]) == (50.0, 99.0)
    assert paired_targets(a, b, None).empty  # no class both show: no target line
    # on the chart each side's line says its own percentile where they differ
    from ui import charts

    frame = pd.DataFrame({"run": ["A", "B"], "latency_ms": [20.0, 25.0], "fraction": [1.0, 1.0]})
    fig = charts.cdf(frame, "tpot", both, series="run", colors={"A": "#111111", "B": "#222222"})
    said = {a.text for a in fig.layout.annotations}
    assert {"A SLO 30 ms @ p90", "B SLO 50 ms @ p99"} <= said, said


def test_an_uncalibrated_chips_roofline_is_dashed_and_named_so(catalog: Catalog) -> None:
    from ui.hardware_charts import roofline as roofline_chart

    model = catalog.model("llama-3.1-70b")
    curves, points = rc.roofline(
        model, [(catalog.chip("h100-sxm"), 4), (catalog.chip("l40s"), 8)], "fp8", "fp8"
    )
    fig = roofline_chart(curves, points, uncalibrated={rc.roofline_name("l40s", 8)})
    lines = {t.name: t.line.dash for t in fig.data if t.mode == "lines"}
    assert lines == {"h100-sxm ×4": "solid", "l40s ×8 (uncalibrated)": "dash"}


def test_a_low_percentage_axis_shows_tenths() -> None:
    from ui.charts import timeseries

    ts = pd.DataFrame({"t_s": [0.0, 1.0, 2.0], "pool": ["decode"] * 3, "kv_memory": [0.004, 0.013, 0.021]})
    assert timeseries(ts, ["kv_memory"], "KV", "KV memory", percent=True).layout.yaxis.tickformat == ".1%"
    ts["kv_memory"] = [0.1, 0.5, 0.9]
    assert timeseries(ts, ["kv_memory"], "KV", "KV memory", percent=True).layout.yaxis.tickformat == ".0%"


def test_a_model_is_fitted_to_the_smallest_layout_that_holds_it() -> None:
    """Pools that hold the new model keep their layout; the others take the smallest of tp 1-8, then
    tp 8 x pp 2-8, that holds it; nothing holds a 671B model in bf16 on 64 TPU v5e chips."""
    from engine.explain.previews import LAYOUTS, with_model_fitted
    from engine.scenario.resolve import resolve

    sc = load_preset("chat-disaggregated")
    small = with_model_fitted(sc, "llama-3.1-8b")
    assert small is not None and [(p.tp, p.pp) for p in small.deployment.pools] == [
        (p.tp, p.pp) for p in sc.deployment.pools
    ]
    big = with_model_fitted(sc, "deepseek-v3")
    assert big is not None and big.model.id == "deepseek-v3"
    layouts = [(p.tp, p.pp) for p in big.deployment.pools]
    assert layouts == [(8, 2), (8, 2)]
    resolve(big)
    # the layout before it in LAYOUTS does not hold it
    smaller = LAYOUTS[LAYOUTS.index((8, 2)) - 1]
    with pytest.raises(ScenarioError):
        resolve(
            apply_overrides(big, {"deployment.pools[0].tp": smaller[0], "deployment.pools[0].pp": smaller[1]})
        )
    tiny = apply_overrides(
        sc,
        {
            "model.weights": "bf16",
            "deployment.pools[0].hardware": "tpu-v5e",
            "deployment.pools[1].hardware": "tpu-v5e",
        },
    )  # 1.3 TB of weights against 64 x 16 GB
    assert with_model_fitted(tiny, "deepseek-v3") is None
    # data-parallel pools keep their ranks: only an expert parallelism the model cannot take moves
    dp = load_preset("moe-deepseek-dp-ep")
    assert [(p.tp, p.dp, p.ep) for p in dp.deployment.pools] == [(1, 8, 8), (1, 16, 16)]
    dense = with_model_fitted(dp, "llama-3.1-70b")
    assert dense is not None and [(p.tp, p.pp, p.dp, p.ep) for p in dense.deployment.pools] == [
        (1, 1, 8, 1),
        (1, 1, 16, 1),
    ]
    mixtral = with_model_fitted(dp, "mixtral-8x7b")  # 8 experts: at most 8 expert-parallel ranks
    assert mixtral is not None and [(p.dp, p.ep) for p in mixtral.deployment.pools] == [(8, 8), (16, 8)]
    # what else refuses the model is said, not hidden behind "no layout holds it"
    with pytest.raises(ScenarioError, match=r"deployment\.edge\.power_budget_w"):
        with_model_fitted(load_preset("edge-offload"), "llama-3.1-70b")


def test_dollars_read_to_three_significant_figures_below_ten_cents() -> None:
    """$0.93 (not $0.93219), $0.00691, $0.000540 and $0.0000309 (not $0.00003, which a 15% change
    turns into $0.00004: +33% to the eye)."""
    from engine.explain.presentation import usd_text

    assert [usd_text(v) for v in (12.345, 0.93219, 0.00691, 0.00054, 0.0000309, 0.0, None)] == [
        "$12.35", "$0.93", "$0.00691", "$0.000540", "$0.0000309", "$0.00000", "–"
    ]  # fmt: skip


def test_a_pool_is_priced_in_the_scenario_s_cost_mode() -> None:
    """The Strategy page's pool line: rented, the catalog rent; owned, capital + hosting + energy
    from idle to TDP, around what the run bills (it showed $4.98/h rent for 2 owned H100s)."""
    sc = apply_overrides(load_preset("rent-vs-own"), {"deployment.pools[0].count": 1, "duration_s": 60.0})
    cat = scenario_catalog(sc)
    pool, hw = sc.deployment.pools[0], cat.hardware[sc.deployment.pools[0].hardware]
    rented = pv.pool_summary(pool, cat, apply_overrides(sc, {"cost.mode": "rent"}).cost)
    assert rented == f"1 × 2 × h100-sxm = 2 chips, ${2 * hw.usd_per_hour:,.2f}/h rented"
    owned = pv.pool_summary(pool, cat, sc.cost)
    low, high = (2 * ownership.chip_hour_usd(hw, sc.cost, w) for w in (None, hw.tdp_w))
    assert owned == (  # its purchase price is cited, its share of the server assumed (a review)
        f"1 × 2 × h100-sxm = 2 chips, ${low:,.2f}-{high:,.2f}/h owned (capital + hosting + energy, idle to TDP)"
        "; assumed server share"
    )
    billed = simulate(sc).summary["cost"]["usd_per_hour"]
    assert low <= billed <= high * (1 + 1e-9) and high < 2 * hw.usd_per_hour
    # a price the catalog assumes is said to be; an edge device's hourly figure is its amortised
    # purchase, not a rent (it read '$0.12/h rented (assumed price)')
    edge = load_preset("edge-offload")
    lines = [pv.pool_summary(p, scenario_catalog(edge), edge.cost) for p in edge.deployment.pools]
    assert lines == [
        "1 × 1 × h100-sxm = 1 chip, $2.49/h rented",
        "4 × 1 × edge-npu = 4 chips, $0.12/h amortised ownership (assumed price)",
    ]
    owned_h200 = apply_overrides(sc, {"deployment.pools[0].hardware": "h200"})  # its purchase price assumed
    assert pv.pool_summary(owned_h200.deployment.pools[0], cat, owned_h200.cost).endswith(
        "; assumed purchase price and server share"
    )


@pytest.mark.parametrize("mem_fraction", [0.87, 0.88])
def test_a_refit_model_sizes_each_pool_as_its_chip_batches(mem_fraction: float) -> None:
    """The refit's fit check took the first pool's chip's batching for every pool: beside a 910B (2,048
    tokens) it kept an H100 pool at tp1 that resolve, sizing the H100's 8,192-token activations, then
    refused (a review)."""
    from engine.explain.previews import with_model_fitted
    from engine.scenario.codec import apply_overrides, load_preset
    from engine.scenario.resolve import resolve

    sc = apply_overrides(
        load_preset("chat-ascend-910b"), {"model.weights": "fp8", "deployment.mem_fraction": mem_fraction}
    )
    new = with_model_fitted(sc, "llama-3.1-70b")
    assert new is not None
    assert [p.tp for p in new.deployment.pools] == [2, 2]
    resolve(new)  # raises where a pool was left too small
