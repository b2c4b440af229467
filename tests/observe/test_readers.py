"""The benchmark readers: each format detected and read, near-misses and hostile files refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core.errors import ScenarioError
from engine.observe import detect
from engine.observe.observation import UNKNOWN

FIX = Path(__file__).parent / "fixtures"


def _doc(name: str) -> dict:
    return json.loads((FIX / name).read_text())


def test_vllm_detailed_json_gives_setup_and_rows() -> None:
    o = detect.read_path(FIX / "vllm_bench_detailed.json")
    doc = _doc("vllm_bench_detailed.json")
    assert o.format == "vllm-bench-json"
    assert o.setup.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert o.setup.requests == 100 and o.setup.rate_rps == 4.0 and o.setup.burstiness == 1.0
    assert o.setup.concurrency is None and not o.setup.all_at_once
    assert o.rows is not None and len(o.rows.ttft_s) == 100
    assert o.rows.prompt_tokens.sum() == doc["total_input_tokens"]
    # the file's own figures are kept where it states them; the rows add p90
    assert o.measured.ttft is not None and o.measured.ttft.mean_ms == pytest.approx(doc["mean_ttft_ms"])
    assert o.measured.ttft.percentiles_ms[99.0] == pytest.approx(doc["p99_ttft_ms"])
    assert 90.0 in o.measured.ttft.percentiles_ms
    assert o.measured.output_tok_s == pytest.approx(doc["output_throughput"])
    assert o.unknown == UNKNOWN


def test_vllm_without_details_has_no_rows_but_mean_lengths() -> None:
    o = detect.read_path(FIX / "vllm_bench.json")
    doc = _doc("vllm_bench.json")
    assert o.rows is None
    assert o.setup.prompt_tokens == pytest.approx(doc["total_input_tokens"] / doc["completed"])
    assert o.measured.tpot is not None and o.measured.tpot.at("p99") == pytest.approx(doc["p99_tpot_ms"])


def test_vllm_printed_block_matches_its_json() -> None:
    printed = detect.read_path(FIX / "vllm_bench_printed.txt")
    saved = detect.read_path(FIX / "vllm_bench.json")
    assert printed.format == "vllm-bench-printed"
    assert printed.setup.model == saved.setup.model and printed.setup.requests == 100
    assert printed.setup.rate_rps == 4.0
    for metric in ("ttft", "tpot", "itl"):
        a, b = getattr(printed.measured, metric), getattr(saved.measured, metric)
        assert a.mean_ms == pytest.approx(b.mean_ms, abs=0.006)
        assert a.at("p99") == pytest.approx(b.at("p99"), abs=0.006)


def test_sglang_jsonl_reads_the_last_run_and_asks_for_the_model() -> None:
    o = detect.read_path(FIX / "sglang_bench.jsonl")
    assert o.format == "sglang-bench-jsonl"
    assert o.setup.model is None and "model" in o.unknown
    assert o.setup.all_at_once and o.setup.concurrency == 8  # the second, appended run
    assert any("last is read" in n for n in o.notes)
    assert o.measured.e2e is not None and o.measured.itl is not None and 95.0 in o.measured.itl.percentiles_ms


def test_sglang_printed_block() -> None:
    o = detect.read_path(FIX / "sglang_bench_printed.txt")
    assert o.format == "sglang-bench-printed"
    assert o.setup.concurrency == 8 and o.setup.all_at_once
    assert o.measured.e2e is not None and o.measured.e2e.mean_ms == pytest.approx(
        _doc_line("sglang_bench.jsonl", -1)["mean_e2e_latency_ms"], abs=0.006
    )


def _doc_line(name: str, i: int) -> dict:
    return json.loads((FIX / name).read_text().strip().splitlines()[i])


def test_aiperf_export() -> None:
    o = detect.read_path(FIX / "aiperf_profile_export_aiperf.json")
    doc = _doc("aiperf_profile_export_aiperf.json")
    assert o.format == "aiperf-json"
    assert o.setup.concurrency == 4 and o.setup.requests == 64
    assert o.setup.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert o.measured.tpot is not None and o.measured.tpot.mean_ms == pytest.approx(
        doc["inter_token_latency"]["avg"]
    )
    assert o.measured.ttft is not None and o.measured.ttft.at("p90") == pytest.approx(
        doc["time_to_first_token"]["p90"]
    )


def test_aiperf_seconds_are_converted_to_ms() -> None:
    doc = _doc("aiperf_profile_export_aiperf.json")
    doc["time_to_first_token"] = {"unit": "sec", "avg": 0.05, "p50": 0.04}
    o = detect.read_text(json.dumps(doc), "a.json")
    assert o.measured.ttft is not None and o.measured.ttft.mean_ms == pytest.approx(50.0)
    doc["time_to_first_token"]["unit"] = "fortnights"
    with pytest.raises(ScenarioError, match=r"time_to_first_token\.unit"):
        detect.read_text(json.dumps(doc), "a.json")


def test_prometheus_two_scrapes_give_rates_over_the_window() -> None:
    o = detect.read_path(
        FIX / "vllm_metrics_t60.prom", earlier=(FIX / "vllm_metrics_t0.prom").read_text(), window_s=60
    )
    assert o.format == "prometheus-vllm"
    assert o.measured.completed == 240 and o.measured.request_rps == pytest.approx(4.0)
    assert o.measured.output_tok_s == pytest.approx(240 * 64 / 60)
    assert o.setup.prompt_tokens == pytest.approx(1024) and o.setup.output_tokens == pytest.approx(64)
    assert o.measured.kv_usage == pytest.approx(0.046) and o.measured.running == 3.0
    assert o.measured.ttft is not None and 30 < o.measured.ttft.mean_ms < 60
    assert o.measured.queue is not None and o.measured.itl is not None


def test_prometheus_one_scrape_has_no_rates() -> None:
    o = detect.read_path(FIX / "vllm_metrics_t0.prom")
    assert o.measured.output_tok_s is None and o.measured.completed == 1000
    assert any("one scrape" in n for n in o.notes)


def test_prometheus_scrapes_in_the_wrong_order_are_refused() -> None:
    with pytest.raises(ScenarioError, match="went down between the scrapes"):
        detect.read_path(
            FIX / "vllm_metrics_t0.prom", earlier=(FIX / "vllm_metrics_t60.prom").read_text(), window_s=60
        )


def test_histogram_quantile_interpolates_inside_buckets() -> None:
    from engine.observe.prometheus import quantile

    cum = {0.1: 10.0, 0.2: 30.0, float("inf"): 40.0}
    assert quantile(0.5, cum) == pytest.approx(0.15)  # rank 20: halfway through (0.1, 0.2]
    assert quantile(0.99, cum) == pytest.approx(0.2)  # in +Inf: the highest finite bound
    assert quantile(0.5, {0.1: 0.0, float("inf"): 0.0}) is None


# --- refusals: near-misses and hostile files ---------------------------------------------------


def test_near_miss_json_names_what_it_lacks() -> None:
    doc = _doc("vllm_bench.json")
    del doc["model_id"]
    with pytest.raises(ScenarioError, match="lacks model_id"):
        detect.read_text(json.dumps(doc), "run.json")


def test_unrelated_json_and_text_are_refused_with_the_accepted_formats() -> None:
    with pytest.raises(ScenarioError, match="none of"):
        detect.read_text('{"hello": 1}', "x.json")
    with pytest.raises(ScenarioError, match="not a benchmark result; accepted"):
        detect.read_text("id,model\n1,a\n", "x.csv")
    with pytest.raises(ScenarioError, match="not a benchmark result object"):
        detect.read_text("[1, 2]", "x.json")


def test_printed_block_without_lines_is_refused() -> None:
    with pytest.raises(ScenarioError, match="holds no 'label: value' lines"):
        detect.read_text(
            "============ Serving Benchmark Result ============\n====================\n", "p.txt"
        )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("mean_ttft_ms", float("nan"), "not a finite number"),
        ("mean_ttft_ms", -1.0, "out of range"),
        ("completed", 2.5, "not a whole number"),
        ("num_prompts", 10**9, "out of range"),
        ("duration", "fast", "not a number"),
        ("request_rate", 0, "out of range"),
        ("duration", 0, "0 s beside"),  # with requests completed (replayed with no error: a review)
    ],
)
def test_bad_values_give_one_line_messages(field: str, value: object, message: str) -> None:
    doc = _doc("vllm_bench.json")
    doc[field] = value
    with pytest.raises(ScenarioError, match=message) as err:
        detect.read_text(json.dumps(doc), "run.json")
    assert "\n" not in str(err.value) and field in str(err.value)


def test_mismatched_per_request_lists_are_refused() -> None:
    doc = _doc("vllm_bench_detailed.json")
    doc["ttfts"] = doc["ttfts"][:-1]
    with pytest.raises(ScenarioError, match="per-request lists differ in length"):
        detect.read_text(json.dumps(doc), "run.json")


def test_negative_itl_and_nan_in_rows_are_refused() -> None:
    doc = _doc("vllm_bench_detailed.json")
    doc["itls"][3][2] = -0.001
    with pytest.raises(ScenarioError, match=r"itls\[3\]\[2\].*out of range"):
        detect.read_text(json.dumps(doc), "run.json")
    doc = _doc("vllm_bench_detailed.json")
    doc["ttfts"][0] = float("nan")
    with pytest.raises(ScenarioError, match=r"ttfts\[0\].*not a finite number"):
        detect.read_text(json.dumps(doc), "run.json")


def test_deeply_nested_huge_binary_and_empty_files_are_refused() -> None:
    with pytest.raises(ScenarioError, match="nested more than"):
        detect.read_text("[" * 100 + "]" * 100, "deep.json")
    from engine.core import bounds

    with pytest.raises(ScenarioError, match="larger than"):
        detect.read_text(b" " * (bounds.MAX_TRACE_BYTES + 1), "huge.json")
    with pytest.raises(ScenarioError, match="not UTF-8"):
        detect.read_text(b"\xff\xfe\x00{", "bin.json")
    with pytest.raises(ScenarioError, match="empty"):
        detect.read_text("  \n", "e.json")


def test_all_failed_requests_leave_nothing_to_replay() -> None:
    doc = _doc("vllm_bench_detailed.json")
    doc["errors"] = ["timeout"] * len(doc["errors"])
    with pytest.raises(ScenarioError, match="no request succeeded"):
        detect.read_text(json.dumps(doc), "run.json")


def test_prometheus_negative_and_garbage_samples_are_refused() -> None:
    text = (FIX / "vllm_metrics_t0.prom").read_text()
    with pytest.raises(ScenarioError, match=r"line \d+: vllm:num_requests_running is -1.0"):
        detect.read_text(
            text.replace("vllm:num_requests_running{", "X{", 0).replace(
                'vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.0',
                'vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} -1.0',
            ),
            "m.prom",
        )
    with pytest.raises(ScenarioError, match="not a Prometheus sample"):
        detect.read_text(text + "this is not { a sample\n", "m.prom")
    with pytest.raises(ScenarioError, match="earlier scrape is only for Prometheus"):
        detect.read_text((FIX / "vllm_bench.json").read_text(), "r.json", earlier=text)


def test_aiperf_records_give_rows_with_send_times() -> None:
    o = detect.read_path(FIX / "aiperf_profile_export.jsonl")
    assert o.format == "aiperf-records-jsonl" and "model" in o.unknown
    assert o.rows is not None and o.rows.start_s is not None
    assert len(o.rows.ttft_s) == 63 and o.measured.failed == 1  # the cancelled record is dropped
    assert o.rows.start_s.min() == 0.0 and o.setup.rate_rps is not None
    assert o.measured.itl is not None and o.rows.itl_s.size == 63 * 127


def test_aiperf_record_without_its_metrics_is_refused() -> None:
    lines = (FIX / "aiperf_profile_export.jsonl").read_text().splitlines()
    doc = json.loads(lines[0])
    del doc["metrics"]["time_to_first_token"]
    text = "\n".join([json.dumps(doc), *lines[1:]])
    with pytest.raises(ScenarioError, match=r"line 1: lacks ttft"):
        detect.read_text(text, "records.jsonl")
    doc = json.loads(lines[0])
    doc["metrics"]["request_latency"]["value"] = -5
    with pytest.raises(ScenarioError, match="request_latency: -5 is out of range"):
        detect.read_text("\n".join([json.dumps(doc), *lines[1:]]), "records.jsonl")


def test_aiperf_csv_matches_its_json_and_asks_for_the_load() -> None:
    from engine.observe.observation import with_load

    o = detect.read_path(FIX / "aiperf_profile_export_aiperf.csv")
    j = detect.read_path(FIX / "aiperf_profile_export_aiperf.json")
    assert o.format == "aiperf-csv" and "concurrency or request rate" in o.unknown
    assert o.setup.concurrency is None and o.setup.model is None
    assert o.measured.ttft.mean_ms == pytest.approx(j.measured.ttft.mean_ms, abs=0.006)
    assert o.measured.e2e.at("p90") == pytest.approx(j.measured.e2e.at("p90"), abs=0.006)
    assert o.measured.output_tok_s == pytest.approx(j.measured.output_tok_s, abs=0.006)
    given = with_load(o, concurrency=4)
    assert given.setup.concurrency == 4 and "concurrency or request rate" not in given.unknown
    with pytest.raises(ScenarioError, match=r"concurrency: 0 is out of range \[1"):
        with_load(o, concurrency=0)


def test_aiperf_csv_with_a_bad_number_names_its_line() -> None:
    text = (FIX / "aiperf_profile_export_aiperf.csv").read_text().replace("92.45", "ninety", 1)
    with pytest.raises(
        ScenarioError, match=r"line \d+: Time to First Token \(ms\): 'ninety' is not a number"
    ):
        detect.read_text(text, "x.csv")


def test_an_sglang_scrape_is_read_under_its_own_names() -> None:
    o = detect.read_path(FIX / "sglang_metrics.prom")
    v = detect.read_path(FIX / "vllm_metrics_t0.prom")
    assert o.format == "prometheus-sglang" and v.format == "prometheus-vllm"
    assert (
        o.measured.completed == 500
        and o.measured.waiting == 1.0
        and o.measured.kv_usage == pytest.approx(0.12)
    )
    assert o.setup.prompt_tokens == pytest.approx(1024) and o.measured.itl is not None
    assert o.measured.queue is not None and o.measured.ttft is not None and 30 < o.measured.ttft.mean_ms < 60


# --- property: whatever arrives, a reader answers with an Observation or one ScenarioError line ------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**15), 10**15),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["inf", "Infinity", "", "NaN"]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
    max_leaves=20,
)


def _mutated(name: str) -> st.SearchStrategy[dict]:
    """A real fixture with some of its keys replaced by arbitrary values."""
    doc = _doc(name)
    return st.dictionaries(st.sampled_from(sorted(doc)), _VALUES, max_size=4).map(lambda m: {**doc, **m})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_mutated("vllm_bench.json"), _mutated("aiperf_profile_export_aiperf.json"), _VALUES))
def test_hostile_json_gives_an_observation_or_one_line(doc: object) -> None:
    try:
        o = detect.read_text(json.dumps(doc), "h.json")
    except ScenarioError as exc:
        assert "\n" not in str(exc)
    else:
        assert o.format and o.source == "h.json"


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_hostile_text_gives_an_observation_or_one_line(text: str) -> None:
    for body in (text, "# TYPE vllm:x counter\n" + text, "=== Serving Benchmark Result ===\n" + text):
        try:
            detect.read_text(body, "h.txt")
        except ScenarioError as exc:
            assert "\n" not in str(exc)


def test_a_newer_sglang_block_with_more_lines_is_read() -> None:
    """Later bench_serving versions print vision-token and peak lines and a TPOT section."""
    text = (FIX / "sglang_bench_printed.txt").read_text()
    extra = "\n".join(
        [
            "{:<40} {:<10}".format("Total input vision tokens:", 0),
            "{:<40} {:<10.2f}".format("Peak output token throughput (tok/s):", 1200.0),
            "{s:{c}^{n}}".format(s="Time per Output Token (excl. 1st token)", n=50, c="-"),
            "{:<40} {:<10.2f}".format("Mean TPOT (ms):", 8.03),
            "{:<40} {:<10.2f}".format("P99 TPOT (ms):", 8.17),
        ]
    )
    text = text.replace("---------------Inter-Token Latency", extra + "\n---------------Inter-Token Latency")
    o = detect.read_text(text, "sglang.log")
    assert (
        o.measured.tpot is not None and o.measured.tpot.mean_ms == 8.03 and o.measured.tpot.at("p99") == 8.17
    )
    assert o.measured.itl is not None and o.measured.itl.at("p95") is not None


def test_a_prompt_longer_than_any_request_may_be_is_refused() -> None:
    doc = _doc("vllm_bench_detailed.json")
    doc["input_lens"][5] = 10**8
    with pytest.raises(ScenarioError, match=r"input_lens\[5\].*out of range"):
        detect.read_text(json.dumps(doc), "run.json")


def test_two_scrapes_in_either_order_read_as_one_window() -> None:
    t0, t60 = (FIX / "vllm_metrics_t0.prom").read_bytes(), (FIX / "vllm_metrics_t60.prom").read_bytes()
    a = detect.read_pair(t0, "t0.prom", t60, "t60.prom", 60.0)
    b = detect.read_pair(t60, "t60.prom", t0, "t0.prom", 60.0)
    assert a.measured == b.measured and a.measured.completed == 240
    assert detect.is_scrape(t0) and not detect.is_scrape(b"{}") and not detect.is_scrape(b"\xff\xfe")
    with pytest.raises(ScenarioError, match="must be two Prometheus scrapes"):
        detect.read_pair(t0, "t0.prom", b"{}", "x.json", 60.0)


def test_a_ramped_request_rate_is_refused_not_replayed_as_a_burst(tmp_path: Path) -> None:
    """`vllm bench serve --ramp-up-strategy` saves request_rate "inf" beside its ramp: read as that,
    every request came at t = 0, and the replay's TTFT read 40 times the measured."""
    doc = _doc("vllm_bench_detailed_rate8.json")
    doc.update(request_rate="inf", ramp_up_strategy="linear", ramp_up_start_rps=1, ramp_up_end_rps=8)
    p = tmp_path / "ramp.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ScenarioError, match=r"ramp_up_strategy: a linear ramp .*from 1 to 8 req/s"):
        detect.read_path(p)
    text = (FIX / "vllm_bench_printed.txt").read_text()
    cmd = "vllm bench serve --model m --num-prompts 100 --ramp-up-strategy exponential --ramp-up-start-rps 2 \\\n"
    p.with_suffix(".txt").write_text(cmd + " --ramp-up-end-rps 16\n" + text)
    with pytest.raises(ScenarioError, match=r"exponential ramp .*from 2 to 16 req/s"):
        detect.read_path(p.with_suffix(".txt"))


def test_a_range_reads_as_a_reader_types_it() -> None:
    """'1.04858e+06' in a refusal of an upload's token count (a browser review): whole bounds with their
    thousands, fractions as they are."""
    from engine.observe.observation import number

    with pytest.raises(ScenarioError, match=r"^x: 2,000,000 is out of range \[0, 1,048,576\]$"):
        number(2e6, "x", high=1_048_576)
    with pytest.raises(ScenarioError, match=r"^x: 0\.25 is out of range \[0\.5, 2\]$"):
        number(0.25, "x", low=0.5, high=2.0)
