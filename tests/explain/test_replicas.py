"""Confidence over seeds (engine.explain.replicas): intervals, CDF bands, mean summaries and noise flags."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pandas as pd
import pytest

from engine.core.errors import ScenarioError
from engine.explain import presentation as pr
from engine.explain.replicas import (
    NOISE,
    SEED_LIMIT,
    Interval,
    Replicas,
    cdf_band,
    compare_with_noise,
    figure_intervals,
    interval,
    mean_summary,
    seed_scenarios,
    summarize,
)
from engine.scenario.codec import DEFAULT_PRESET, apply_overrides, load_preset
from engine.scenario.model import Scenario
from engine.serving.run import SimResult, replicate, simulate
from engine.serving.summary import rate_span_s


def _short() -> Scenario:
    return apply_overrides(load_preset(DEFAULT_PRESET), {"duration_s": 60.0})


@cache
def _runs() -> tuple[SimResult, ...]:
    """Three seeds of a short scenario, simulated once for the module."""
    return tuple(simulate(s) for s in seed_scenarios(_short(), 3))


def test_interval_is_the_student_t_interval_of_the_mean() -> None:
    iv = interval([1.0, 2.0, 3.0])
    assert iv is not None
    assert iv.mean == pytest.approx(2.0) and iv.n == 3
    assert iv.half_width == pytest.approx(4.303 * 1.0 / math.sqrt(3))
    assert (iv.low, iv.high) == pytest.approx((2.0 - iv.half_width, 2.0 + iv.half_width))


def test_interval_skips_missing_values_and_has_no_width_for_one() -> None:
    iv = interval([5.0, None, math.inf, math.nan])
    assert iv is not None and iv.mean == 5.0 and iv.n == 1
    assert math.isnan(iv.half_width)
    assert interval([None, math.nan]) is None
    assert interval([]) is None
    same = interval([7.0, 7.0, 7.0])
    assert same is not None and same.half_width == 0.0
    rounded = interval([29.88, 29.88 * (1 + 1e-15), 29.88])  # float noise is no spread
    assert rounded is not None and rounded.half_width == 0.0


def test_overlap() -> None:
    def iv(lo: float, hi: float) -> Interval:
        return Interval(mean=(lo + hi) / 2, low=lo, high=hi, n=3)

    assert iv(0, 2).overlaps(iv(1, 3)) and iv(1, 3).overlaps(iv(0, 2))
    assert iv(0, 1).overlaps(iv(1, 2))  # touching counts
    assert not iv(0, 1).overlaps(iv(1.5, 2))
    assert not iv(0, 1).overlaps(Interval(mean=0.5, low=math.nan, high=math.nan, n=1))


def test_seed_scenarios_follow_the_command_line_and_wrap() -> None:
    sc = _short()
    runs = seed_scenarios(sc, 4)
    assert runs[0] is sc  # the page's own run: the same cache key
    assert [r.seed for r in runs] == [sc.seed + i for i in range(4)]
    assert all(r.model_copy(update={"seed": sc.seed}) == sc for r in runs)
    top = sc.model_copy(update={"seed": SEED_LIMIT - 1})
    assert [r.seed for r in seed_scenarios(top, 3)] == [SEED_LIMIT - 1, 0, 1]
    with pytest.raises(ValueError, match="at least 1"):
        seed_scenarios(sc, 0)


def test_figure_intervals_match_replicate() -> None:
    """The dashboard's intervals are the command line's (`engine.serving.run.replicate`)."""
    _, stats = replicate(_short(), 3)
    figures = figure_intervals([r.summary for r in _runs()])
    assert {k for k, st in stats.items() if st["mean"] is not None} == set(figures)
    for key, st in stats.items():
        iv = figures[key]
        assert iv.n == st["n"] and iv.mean == pytest.approx(st["mean"]), key
        if math.isfinite(st["ci95_low"]):
            assert (iv.low, iv.high) == pytest.approx((st["ci95_low"], st["ci95_high"])), key


def test_a_percentile_infinite_in_some_seeds_has_no_mean() -> None:
    """A class whose SLO percentile falls on rejected requests in some seeds (infinite there) gets no
    mean over the others, on the command line and on the dashboard; `missing` counts those seeds."""
    sc = apply_overrides(
        load_preset("enterprise-mixed"), {"duration_s": 120.0, "workload.arrival.rate_rps": 20.0}
    )
    runs, stats = replicate(sc, 4)
    key = "classes.interactive.ttft_ms_at_percentile"
    nones = sum(r.summary["classes"]["interactive"]["ttft_ms_at_percentile"] is None for r in runs)
    assert 0 < nones < 4  # infinite in some seeds, finite in others
    assert stats[key]["mean"] is None and stats[key]["missing"] == nones and stats[key]["n"] == 4 - nones
    assert key not in figure_intervals([r.summary for r in runs])
    assert stats["slo_attainment"]["mean"] is not None and stats["slo_attainment"]["n"] == 4


def test_mean_summary_nests_the_means() -> None:
    figures = figure_intervals([r.summary for r in _runs()])
    means = mean_summary(figures)
    assert means["latency_ms"]["ttft"]["p99"] == pytest.approx(figures["latency_ms.ttft.p99"].mean)
    assert means["cost"]["usd_per_request"] == pytest.approx(figures["cost.usd_per_request"].mean)
    head = pr.headline(means)
    assert head["ttft_p99_ms"] == pytest.approx(
        np.mean([r.summary["latency_ms"]["ttft"]["p99"] for r in _runs()])
    )


def test_band_holds_every_seed_and_its_mean() -> None:
    sc = _short()
    tables = [r.requests for r in _runs()]
    band = cdf_band(sc, tables, "ttft")
    assert list(band.columns) == ["class", "latency_ms", "fraction", "low_ms", "high_ms", "seeds"]
    assert set(band["seeds"]) == {3}
    assert (band["low_ms"] <= band["latency_ms"] + 1e-9).all() and (
        band["latency_ms"] <= band["high_ms"] + 1e-9
    ).all()
    for _, rows in band.groupby("class"):
        assert rows["fraction"].is_monotonic_increasing and rows["fraction"].iloc[-1] == 1.0
        for col in ("latency_ms", "low_ms", "high_ms"):
            assert rows[col].is_monotonic_increasing, col
    # each seed's own CDF, read at the band's fractions, lies within the band
    for t in tables:
        mine = _quantiles(sc, t, band["fraction"].to_numpy())
        assert ((band["low_ms"] - 1e-9 <= mine) & (mine <= band["high_ms"] + 1e-9)).all()


def _quantiles(sc: Scenario, table: pd.DataFrame, fractions: np.ndarray) -> np.ndarray:
    """A run's TTFT (ms) at each fraction: the smallest latency whose empirical CDF reaches it."""
    window = (table["arrival_s"] >= sc.warmup_s) & (table["arrival_s"] < sc.duration_s)
    done = table[window & (table["outcome"] == "completed")]
    v = np.sort(done["ttft_s"].to_numpy(dtype=float) * 1e3)
    return v[np.ceil(fractions * len(v) - 1e-9).astype(int) - 1]


def test_band_of_one_table_is_its_cdf_and_a_scaled_copy_spans_it() -> None:
    sc = _short()
    table = _runs()[0].requests
    one = cdf_band(sc, [table], "ttft")
    assert (one["low_ms"] == one["latency_ms"]).all() and (one["high_ms"] == one["latency_ms"]).all()
    assert np.allclose(one["latency_ms"], _quantiles(sc, table, one["fraction"].to_numpy()))
    assert one["latency_ms"].iloc[-1] == pytest.approx(pr.latency_cdfs(sc, table, "ttft")["latency_ms"].max())
    slower = table.assign(ttft_s=table["ttft_s"] * 2.0)
    two = cdf_band(sc, [table, slower], "ttft")
    assert np.allclose(two["high_ms"], 2.0 * two["low_ms"])
    assert np.allclose(two["latency_ms"], 1.5 * two["low_ms"])


def test_band_per_class_and_over_all() -> None:
    sc = apply_overrides(load_preset("enterprise-mixed"), {"duration_s": 60.0})
    res = simulate(sc)
    band = cdf_band(sc, [res.requests, res.requests], "e2e")
    done = res.requests[res.requests["outcome"] == "completed"]
    served = {c.name for c in sc.workload.classes if (done["class"] == c.name).any()}
    assert set(band["class"]) == {pr.ALL_CLASSES, *served}
    assert band["class"].iloc[0] == pr.ALL_CLASSES  # as latency_cdfs orders them
    empty = cdf_band(sc, [res.requests.head(0)], "e2e")
    assert len(empty) == 0 and "low_ms" in empty.columns


def test_summarize_carries_seeds_headline_and_bands() -> None:
    rep = summarize(list(_runs()))
    assert rep.seeds == (1, 2, 3) and rep.n == 3
    assert set(rep.bands) == {"ttft", "tpot", "max_tbt", "e2e"}
    assert set(rep.headline) >= {
        "ttft_p99_ms",
        "tpot_p99_ms",
        "slo_attainment",
        "goodput_rps",
        "usd_per_request",
        "throughput_rps",
    }
    ttft = rep.headline["ttft_p99_ms"]
    assert ttft is not None and ttft.n == 3 and ttft.low < ttft.mean < ttft.high
    with pytest.raises(ValueError):
        summarize([])


def _replicas(**figures: tuple[float, float]) -> Replicas:
    """Replicas with the given figures (path with '/' for '.' -> (low, high)), nothing else."""
    figs = {
        k.replace("__", "."): Interval(mean=(lo + hi) / 2, low=lo, high=hi, n=3)
        for k, (lo, hi) in figures.items()
    }
    return Replicas(scenario=_short(), seeds=(1, 2, 3), figures=figs, headline={}, bands={})


def test_compare_flags_overlapping_intervals_as_noise() -> None:
    a = _replicas(latency_ms__ttft__p99=(90.0, 110.0), goodput_rps=(10.0, 11.0), slo_attainment=(0.9, 0.92))
    b = _replicas(latency_ms__ttft__p99=(105.0, 125.0), goodput_rps=(20.0, 21.0), slo_attainment=(0.9, 0.92))
    table = compare_with_noise(a, b).set_index("figure")
    assert list(table.reset_index().columns) == [
        "figure", "unit", "a", "a_ci95", "b", "b_ci95", "change", "change_pct", "change_points", "better", "within_noise",
    ]  # fmt: skip
    assert table.loc["TTFT p99", "within_noise"] and table.loc["TTFT p99", "better"] == NOISE
    assert table.loc["TTFT p99", "a"] == pytest.approx(100.0) and table.loc[
        "TTFT p99", "b_ci95"
    ] == pytest.approx(10.0)
    assert not table.loc["Goodput", "within_noise"] and table.loc["Goodput", "better"] == "B"
    assert table.loc["SLO attainment", "better"] == "same"  # equal means stay "same"
    assert pd.isna(table.loc["TPOT p99", "a"]) and not table.loc["TPOT p99", "within_noise"]


def test_a_figure_some_seeds_lack_has_no_mean_and_a_count_by_reason_counts_zero() -> None:
    """A shortfall only one seed of five has (its `unsustainable` section absent in the others) was
    averaged over that one seed; a rejection reason one seed saw was its count, not a fifth of it."""
    base = {"requests": {"rejected": 0, "rejected_by_reason": {}}, "goodput_rps": 10.0}
    seeds = [dict(base, goodput_rps=10.0 + i) for i in range(4)]
    seeds.append(
        {
            "requests": {"rejected": 10, "rejected_by_reason": {"predicted_ttft_over_slo": 10}},
            "goodput_rps": 14.0,
            "unsustainable": {"shortfall_rps": 1.14},
        }
    )
    got = figure_intervals(seeds)
    assert "unsustainable.shortfall_rps" not in got  # absent in four seeds: no mean
    assert got["requests.rejected_by_reason.predicted_ttft_over_slo"].mean == pytest.approx(2.0)
    assert got["requests.rejected"].mean == pytest.approx(2.0)
    assert got["goodput_rps"].mean == pytest.approx(12.0)


def test_a_trace_is_not_replicated() -> None:
    # a trace's requests do not depend on the seed: replications would be one run n times
    trace = next(
        n for n in ("azure-code-replay", "mooncake-replay") if load_preset(n).workload.trace is not None
    )
    with pytest.raises(
        ScenarioError, match="replications: a trace's requests are the same whatever the seed"
    ):
        replicate(apply_overrides(load_preset(trace), {"duration_s": 30.0}), 2)


def test_a_seed_that_did_not_keep_up_marks_the_means() -> None:
    """One seed of five unsustainable: its run-length-set p99 is in every mean, so the means (the
    cards, the Compare table) are marked as growing, where only the page's own seed was read."""
    rep = Replicas(
        scenario=load_preset(DEFAULT_PRESET),
        seeds=(1, 2, 3),
        figures=figure_intervals([{"goodput_rps": 1.0}] * 3),
        headline={},
        bands={},
        shortfalls=(None, 1.14, None),
    )
    assert rep.worst_shortfall() == 1.14
    assert rep.mean_summary()["unsustainable"] == {"shortfall_rps": 1.14}
    kept_up = Replicas(**{**vars(rep), "shortfalls": (None, None, None)})
    assert kept_up.worst_shortfall() is None and "unsustainable" not in kept_up.mean_summary()


def test_replicate_keeps_an_interval_to_its_figures_range() -> None:
    """Two seeds at 0 and 1.3% SLO attainment printed [-1.6%, 2.8%] (`fengong run --replications 2`,
    a review): no summary figure is below zero and a share is at most one."""
    from engine.serving.run import clipped, is_share

    assert clipped("slo_attainment", -0.0158, 0.0285) == (0.0, 0.0285)
    assert clipped("classes.chat.slo_attainment", 0.97, 1.02) == (0.97, 1.0)
    assert clipped("goodput_rps", -0.46, 0.82) == (0.0, 0.82)
    assert clipped("latency_ms.ttft.p99", 900.0, 1100.0) == (900.0, 1100.0)  # inside its range: as it was
    assert is_share("utilization.decode.busy") and is_share("cache.hit_rate_by_tier.hbm")
    assert clipped("classes.chat.passes", 0.245, 1.355) == (0.245, 1.0)  # the share of seeds it passed in
    assert not is_share("goodput_rps")
    low, high = clipped("slo_attainment", math.nan, math.nan)  # one seed: no interval, still none
    assert math.isnan(low) and math.isnan(high)


def test_a_figure_the_same_in_every_seed_has_no_spread() -> None:
    """`run --replications 3 --json` gave a constant band of 0.09 as "0.08999999999999997 to
    0.09000000000000005" from the mean's rounding (a review): the same value in every seed is its own
    mean and both ends of its interval; a figure that moves keeps its interval."""
    from engine.serving.run import replicate

    sc = apply_overrides(load_preset("chat-disaggregated"), {"duration_s": 30.0})
    _, stats = replicate(sc, 3)
    same = [k for k, s in stats.items() if s["mean"] is not None and s["ci95_low"] == s["ci95_high"]]
    key = "calibration.decode.expected_error.ttft"
    assert key in same and stats[key]["mean"] == 0.09
    assert all(stats[k]["ci95_low"] == stats[k]["mean"] for k in same)
    ttft = stats["latency_ms.ttft.p99"]
    assert ttft["ci95_low"] < ttft["mean"] < ttft["ci95_high"]


def test_a_cdf_counts_rejected_requests_as_never_answered() -> None:
    """A CDF's fraction is of the window's requests, a rejected one never arriving: enterprise-mixed
    rejects some of each class, whose curves stop below 100% where they reached it over the completed
    ones (a review: its TTFT curve crossed the 30 s target earlier than the SLO page's p90). The seeds'
    band stops there too, and its one-table band is that curve."""
    sc = apply_overrides(load_preset("enterprise-mixed"), {"duration_s": 120.0})
    res = simulate(sc)
    t = res.requests
    window = (t["arrival_s"] >= sc.warmup_s) & (t["arrival_s"] < sc.duration_s)
    cdf = pr.latency_cdfs(sc, t, "ttft")
    for name, curve in cdf.groupby("class"):
        mine = window if name == pr.ALL_CLASSES else window & (t["class"] == name)
        served = float((t.loc[mine, "outcome"] == "completed").mean())
        assert curve["fraction"].max() == pytest.approx(served)
    assert cdf["fraction"].max() < 1.0  # some were rejected
    band = cdf_band(sc, [t], "ttft")
    top = band.groupby("class")["fraction"].max()
    assert (top <= cdf.groupby("class")["fraction"].max() + 1e-12).all()
    assert np.isfinite(band["latency_ms"]).all()


def test_a_paired_comparison_tests_the_seeds_differences() -> None:
    # Compare with three seeds, the same requests on both sides: B's goodput lower in every seed (by 0.81,
    # 0.90, 0.94 req/s) read "within noise", the two sides' intervals overlapping (a review)
    a_seeds, b_seeds = (16.0, 17.0, 15.4), (15.1, 16.2, 14.5)

    def side(values: tuple[float, ...]) -> Replicas:
        iv = interval(list(values))
        assert iv is not None
        return Replicas(
            scenario=_short(), seeds=(1, 2, 3), figures={"goodput_rps": iv}, headline={}, bands={},
            per_seed={"goodput_rps": values},
        )  # fmt: skip

    a, b = side(a_seeds), side(b_seeds)
    assert a.figures["goodput_rps"].overlaps(b.figures["goodput_rps"])
    unpaired = compare_with_noise(a, b).set_index("figure")
    assert unpaired.loc["Goodput", "better"] == NOISE  # other requests: the intervals overlap
    paired = compare_with_noise(a, b, paired=True).set_index("figure")
    assert not paired.loc["Goodput", "within_noise"] and paired.loc["Goodput", "better"] == "A"
    # differences that wander across 0 stay noise
    c = side((16.5, 15.9, 15.0))
    assert compare_with_noise(a, c, paired=True).set_index("figure").loc["Goodput", "better"] == NOISE
    # a lead under 0.5% (the one-seed rule's 'same') that every seed shows is named: 99.72% against
    # 100.00% SLO attainment read 'same' beside within_noise False (a review)
    d = side(tuple(v * 1.003 for v in a_seeds))
    real = compare_with_noise(a, d, paired=True).set_index("figure").loc["Goodput"]
    assert not real["within_noise"] and real["better"] == "B"
    assert compare_with_noise(a, a, paired=True).set_index("figure").loc["Goodput", "better"] == "same"


def test_summarize_keeps_each_seeds_figures() -> None:
    runs = [simulate(s) for s in seed_scenarios(_short(), 2)]
    rep = summarize(runs)
    assert rep.per_seed["goodput_rps"] == tuple(r.summary["goodput_rps"] for r in runs)


def test_rates_of_seeds_some_of_them_unsustainable_are_averaged_over_one_kind_of_span() -> None:
    """An unsustainable run's rates are over the span it served, the others' over the window: four seeds
    of portfolio-decode-loss averaged a goodput of 12.4 req/s from 11.5 to 12.0 over about 750 s and 14.7
    over 600 s, where over the window all four read 14.4 to 15.0 (a review). Mixed, every seed's rates are
    put over its window, on the command line and the dashboard alike; seeds alike keep their own. (Over
    400 s, where the span after the loss at 300 s is too short to judge alone, seed 1 alone is marked.)"""
    runs, stats = replicate(apply_overrides(load_preset("portfolio-decode-loss"), {"duration_s": 400.0}), 4)
    marked = [r.summary.get("unsustainable") is not None for r in runs]
    assert any(marked) and not all(marked)
    window = [r.summary["goodput_rps"] * rate_span_s(r.summary) / r.summary["window_s"] for r in runs]
    assert stats["goodput_rps"]["mean"] == pytest.approx(float(np.mean(window)))
    assert stats["goodput_rps"]["over"] == "window" and "over" not in stats["slo_attainment"]
    assert figure_intervals([r.summary for r in runs])["goodput_rps"].mean == pytest.approx(
        float(np.mean(window))
    )
    _, alike = replicate(_short(), 2)  # none unsustainable: each seed's own rates, as before
    assert "over" not in alike["goodput_rps"]
