"""The slider's preview: the full scenario over a shorter window, on the full run's first requests."""

from __future__ import annotations

import numpy as np
import pytest

from engine.explain import run_preview as rp
from engine.scenario.codec import DEFAULT_PRESET, apply_overrides, load_preset, preset_names
from engine.serving.workload import generate


@pytest.fixture(scope="module")
def default_preview() -> rp.RunPreview:
    pv = rp.preview_of(load_preset(DEFAULT_PRESET))
    assert pv is not None
    return pv


def test_the_preview_scenario_is_the_full_one_with_a_shorter_window_and_nothing_else() -> None:
    for name in preset_names():
        sc = load_preset(name)
        window = rp.preview_window(sc, generate(sc))
        if window is None:
            continue
        short = rp.preview_scenario(sc, window)
        assert short is not None, name
        assert short.duration_s == window < sc.duration_s
        assert short.model_dump() == {**sc.model_dump(), "duration_s": window}, name


def test_the_preview_runs_the_full_runs_first_requests(default_preview: rp.RunPreview) -> None:
    sc = load_preset(DEFAULT_PRESET)
    full = generate(sc)
    got = default_preview.result.requests
    n = default_preview.requests
    assert len(got) == n == rp.PREVIEW_REQUESTS  # the default preset has no warm-up
    assert default_preview.full_requests == len(full)
    assert default_preview.result.scenario.duration_s == default_preview.window_s
    assert np.array_equal(got["arrival_s"].to_numpy(), full.arrival_s[:n])
    assert np.array_equal(got["prompt_tokens"].to_numpy(), full.prompt_tokens[:n])
    assert np.array_equal(got["output_tokens"].to_numpy(), full.output_tokens[:n])
    assert full.arrival_s[n] >= default_preview.window_s > full.arrival_s[n - 1]


def test_the_window_starts_counting_after_the_warm_up() -> None:
    sc = apply_overrides(load_preset(DEFAULT_PRESET), {"warmup_s": 100.0})
    reqs = generate(sc)
    window = rp.preview_window(sc, reqs, budget=500)
    assert window is not None
    before = int(np.searchsorted(reqs.arrival_s, 100.0))
    assert int(np.searchsorted(reqs.arrival_s, window)) == before + 500


def test_a_preview_after_a_warm_up_counts_every_request_it_simulated() -> None:
    """The strip says "first N of the M requests drawn": N is what the preview simulated, its warm-up's
    requests too, not only those it measured."""
    p = rp.preview_of(apply_overrides(load_preset(DEFAULT_PRESET), {"warmup_s": 60.0}))
    assert p is not None and p.requests == len(p.result.requests)
    assert p.requests > p.result.summary["requests"]["total"] >= rp.PREVIEW_REQUESTS - 50


def test_no_preview_that_would_simulate_most_of_the_run() -> None:
    """agentic-cache's 300 s warm-up would make its preview 3,988 of the full run's 4,409 requests."""
    preset = load_preset("agentic-cache")
    assert preset.warmup_s == 300.0 and rp.preview_of(preset) is None
    assert rp.preview_of(apply_overrides(preset, {"warmup_s": 0.0})) is not None


def test_trace_previews_keep_their_block_hashes() -> None:
    traces = [load_preset(n) for n in preset_names() if "mooncake" in n]
    reqs = generate(traces[0])
    assert reqs.block_offsets is not None  # Mooncake's rows name their blocks
    head = rp.head(reqs, 10)
    assert len(head.block_offsets) == 11
    for rid in range(10):
        assert np.array_equal(head.blocks(rid), reqs.blocks(rid))


@pytest.mark.parametrize(
    "changes",
    [
        {"workload.arrival.kind": "offline", "workload.arrival.requests": 9000},  # every request at t = 0
        {"workload.arrival.kind": "closed_loop", "workload.arrival.clients": 64},  # sent when the last ends
        {"duration_s": 200.0},  # about 3,200 requests: fast enough to wait for
    ],
)
def test_no_preview_where_no_shorter_window_holds_the_same_requests(changes: dict) -> None:
    assert rp.preview_of(apply_overrides(load_preset(DEFAULT_PRESET), changes)) is None


def test_kinds_follow_what_the_window_holds() -> None:
    sc = load_preset(DEFAULT_PRESET)
    assert rp.kind_of(sc) == "steady"
    assert rp.kind_of(apply_overrides(sc, {"workload.arrival.shape": "ramp"})) == "changing"
    faulty = next(load_preset(n) for n in preset_names() if load_preset(n).faults)
    assert rp.kind_of(faulty) == "changing"


def test_the_preview_says_what_it_is_and_its_measured_error(default_preview: rp.RunPreview) -> None:
    text = default_preview.text()
    assert f"first {rp.PREVIEW_REQUESTS:,} of the {default_preview.full_requests:,} requests drawn" in text
    ttft = rp.PREVIEW_ERROR["steady"]["ttft_p99_ms"]
    assert f"TTFT p99 ±{ttft:.0%}" in text
    assert "pts" in rp.preview_error_text("steady")
    assert "changes over the window" in rp.preview_error_text("changing")


def test_difference_is_relative_and_attainment_in_points() -> None:
    a = {"latency_ms": {"ttft": {"p99": 110.0}}, "slo_attainment": 0.95, "cost": {"usd_per_request": 1.0}}
    b = {"latency_ms": {"ttft": {"p99": 100.0}}, "slo_attainment": 0.97, "cost": {"usd_per_request": 2.0}}
    d = rp.difference(a, b)
    assert d["ttft_p99_ms"] == pytest.approx(0.10)
    assert d["slo_attainment"] == pytest.approx(0.02)
    assert d["usd_per_request"] == pytest.approx(0.5)
    assert "tpot_p99_ms" not in d and "goodput_rps" not in d


def test_the_error_table_covers_every_kind_and_figure() -> None:
    assert set(rp.PREVIEW_ERROR) == set(rp.KINDS)
    for errors in rp.PREVIEW_ERROR.values():
        assert set(errors) == set(rp.FIGURES)
        assert all(v > 0 for v in errors.values())


@pytest.mark.slow  # every preset with a preview, simulated twice: about 15 s on a quiet machine
def test_the_error_shown_is_the_error_measured_today() -> None:
    """PREVIEW_ERROR is a measurement: a change to the engine's results must measure it again
    (`python bench/preview_error.py`) rather than leave the strip quoting a stale error."""
    measured = rp.measure_preview_error(load_preset(n) for n in preset_names())["error"]
    for kind in rp.KINDS:
        for key in rp.FIGURES:
            assert measured[kind][key] == pytest.approx(rp.PREVIEW_ERROR[kind][key], abs=0.0015), (kind, key)
