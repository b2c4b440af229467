"""Request generation and trace readers: the real files, bad files, distributions, arrivals."""

from __future__ import annotations

import csv
import io as io_text
import json
from pathlib import Path

import numpy as np
import pytest

from engine.core import datafiles
from engine.core.errors import ScenarioError
from engine.scenario import codec as io
from engine.scenario.arrival import Arrival
from engine.scenario.model import LengthDist
from engine.serving.workload import arrival_times, generate, lognormal_params, sample_lengths

BASE = io.load_preset("chat-colocated")


def with_trace(fmt: str, path: str, **over: object) -> object:
    return io.apply_overrides(
        BASE, {"workload.trace": {"format": fmt, "path": path, **over}, "duration_s": 86400.0}
    )


def test_mooncake_conversation_trace_read_unchanged() -> None:
    reqs = generate(with_trace("mooncake", "data:traces/mooncake/conversation_trace.jsonl"))  # type: ignore[arg-type]
    assert len(reqs) == 12031
    assert 11000 < reqs.prompt_tokens.mean() < 13000
    assert reqs.arrival_s[0] == 0.0 and reqs.arrival_s[-1] == pytest.approx(3537.0, abs=60)
    assert np.all(np.diff(reqs.arrival_s) >= 0)
    # every row holds ceil(input_length / 512) block hashes
    lens = np.diff(reqs.block_offsets)
    assert np.array_equal(lens, -(-reqs.prompt_tokens // 512))


def test_mooncake_time_scale_and_window() -> None:
    fast = generate(with_trace("mooncake", "data:traces/mooncake/conversation_trace.jsonl", time_scale=2.0))  # type: ignore[arg-type]
    assert fast.arrival_s[-1] == pytest.approx(3537.0 / 2, abs=30)
    s = io.apply_overrides(
        BASE,
        {
            "workload.trace": {
                "format": "mooncake",
                "path": "data:traces/mooncake/conversation_trace.jsonl",
            },
            "duration_s": 600.0,
        },
    )
    windowed = generate(s)
    assert windowed.arrival_s.max() < 600.0 and 1000 < len(windowed) < 3000


@pytest.mark.parametrize(("name", "rows"), [("code", 8819), ("conv", 19366)])
def test_azure_traces_read_unchanged(name: str, rows: int) -> None:
    text = datafiles.read_text(f"data:traces/azure_llm_2023/AzureLLMInferenceTrace_{name}.csv")
    n = sum(1 for _ in csv.DictReader(io_text.StringIO(text)))
    assert n in (rows, rows - 1)
    reqs = generate(with_trace("azure", f"data:traces/azure_llm_2023/AzureLLMInferenceTrace_{name}.csv"))  # type: ignore[arg-type]
    assert len(reqs) == n
    assert reqs.arrival_s.min() == 0.0 and 3000 < reqs.arrival_s.max() < 4000
    assert reqs.prompt_tokens.mean() > 500


def test_plain_csv_with_classes(tmp_path: Path) -> None:
    data = io.to_data(BASE)
    data["workload"]["classes"].append({"name": "batch", "share": 0.5})
    p = tmp_path / "t.csv"
    p.write_text("arrival_s,input_tokens,output_tokens,class\n0.5,100,10,chat\n0.1,200,20,batch\n")
    data["workload"]["trace"] = {"format": "csv", "path": str(p)}
    s = io.from_data(data)
    reqs = generate(s)
    assert list(reqs.prompt_tokens) == [200, 100]
    assert list(reqs.cls) == [1, 0]
    assert list(reqs.arrival_s) == pytest.approx([0.0, 0.4])


@pytest.mark.parametrize(
    ("fmt", "text", "message"),
    [
        (
            "mooncake",
            '{"timestamp": 0, "input_length": 5, "output_length": 1}\n{"timestamp": 1, "input_length": 5',
            r"line 2: not JSON .*column",
        ),
        (
            "mooncake",
            '{"timestamp": 0, "input_length": "many", "output_length": 1}',
            r"line 1, field input_length",
        ),
        ("mooncake", '{"timestamp": 0, "output_length": 1}', r"line 1: missing field 'input_length'"),
        (
            "mooncake",
            '{"timestamp": 0, "input_length": 3, "output_length": 1, "hash_ids": "x"}',
            r"field hash_ids",
        ),
        (
            "azure",
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.97,10,x\n",
            r"line 2, column GeneratedTokens",
        ),
        ("azure", "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,10,1\n", r"line 2, column TIMESTAMP"),
        ("azure", "TIME,ContextTokens\n", r"missing column\(s\) TIMESTAMP, GeneratedTokens"),
        ("csv", "arrival_s,input_tokens,output_tokens\n0,10,1\n-1,10,1\n", r"line 3, column arrival_s"),
        ("csv", "arrival_s,input_tokens,output_tokens,class\n0,10,1,gold\n", r"line 2, column class: 'gold'"),
        ("csv", "arrival_s,input_tokens,output_tokens\n0,0,1\n", r"line 2, column input_tokens"),
        ("csv", "", r"missing column"),
    ],
)
def test_bad_trace_files_name_line_and_column(tmp_path: Path, fmt: str, text: str, message: str) -> None:
    p = tmp_path / "bad.trace"
    p.write_text(text)
    s = io.apply_overrides(BASE, {"workload.trace": {"format": fmt, "path": str(p)}})
    with pytest.raises(ScenarioError, match=message):
        generate(s)


def test_missing_and_oversized_trace(tmp_path: Path) -> None:
    s = io.apply_overrides(BASE, {"workload.trace": {"format": "csv", "path": str(tmp_path / "nope.csv")}})
    with pytest.raises(ScenarioError, match=r"^workload\.trace\.path: .*nope\.csv: no such file$"):
        generate(s)
    # a relative path says where it was looked for: the working directory (a review: "t.csv: no such file")
    rel = io.apply_overrides(BASE, {"workload.trace": {"format": "csv", "path": "nope-here.csv"}})
    with pytest.raises(ScenarioError, match=r"nope-here\.csv: no such file \(a relative path is read from /"):
        generate(rel)


def test_lognormal_mean_and_p99() -> None:
    rng = np.random.default_rng(0)
    x = sample_lengths(LengthDist(kind="lognormal", mean=1000, p99=6000), 200_000, rng)
    assert x.mean() == pytest.approx(1000, rel=0.02)
    assert np.percentile(x, 99) == pytest.approx(6000, rel=0.05)
    with pytest.raises(ScenarioError):
        lognormal_params(10, 1000)


def test_uniform_constant_and_clip() -> None:
    rng = np.random.default_rng(0)
    u = sample_lengths(LengthDist(kind="uniform", low=5, high=9), 10_000, rng)
    assert u.min() == 5 and u.max() == 9
    c = sample_lengths(LengthDist(kind="constant", tokens=7), 3, rng)
    assert list(c) == [7, 7, 7]
    big = sample_lengths(LengthDist(kind="lognormal", mean=1000, p99=10000, max_tokens=2000), 10_000, rng)
    assert big.max() == 2000


def test_empirical_lengths_from_vidur_file() -> None:
    rng = np.random.default_rng(0)
    d = LengthDist(
        kind="empirical",
        path="data:traces/vidur_lengths/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv",
        column="num_prefill_tokens",
    )
    x = sample_lengths(d, 5000, rng)
    assert x.max() <= 4096 and x.mean() > 1000


def test_poisson_rate_and_gamma_burstiness() -> None:
    rng = np.random.default_rng(1)
    p = arrival_times(Arrival(kind="poisson"), 10_000.0, 5.0, rng)
    assert len(p) == pytest.approx(50_000, rel=0.02)
    gaps = np.diff(p)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.05)
    g = arrival_times(Arrival(kind="gamma", cv=3.0), 10_000.0, 5.0, rng)
    ggaps = np.diff(g)
    assert len(g) == pytest.approx(50_000, rel=0.1)
    assert ggaps.std() / ggaps.mean() == pytest.approx(3.0, rel=0.15)


@pytest.mark.parametrize("shape", ["ramp", "peak", "diurnal"])
def test_rate_shapes_keep_the_mean_and_move_the_load(shape: str) -> None:
    rng = np.random.default_rng(2)
    arr = Arrival(kind="poisson", shape=shape, peak_factor=3.0)
    t = arrival_times(arr, 1000.0, 20.0, rng)
    assert len(t) == pytest.approx(20_000, rel=0.03)
    middle = ((t > 450) & (t < 550)).sum()
    start = (t < 100).sum()
    assert middle > 1.5 * start


def test_a_daily_curve_peaks_at_its_hour_and_keeps_the_mean() -> None:
    rng = np.random.default_rng(4)
    day = 2400.0  # a compressed day: 100 s an hour
    arr = Arrival(kind="poisson", shape="diurnal", peak_factor=4.0, peak_hour=18.0)
    t = arrival_times(arr, day, 10.0, rng)
    assert len(t) == pytest.approx(24_000, rel=0.03)  # rate_rps is the day's mean
    per_hour = np.histogram(t, bins=24, range=(0.0, day))[0]
    assert int(np.argmax(per_hour)) in (17, 18)  # the hour from 18:00 and the one before, about equal
    assert int(np.argmin(per_hour)) in (5, 6)  # the trough twelve hours away
    assert per_hour.max() / per_hour.min() == pytest.approx(4.0, rel=0.25)


def test_only_a_diurnal_curve_has_an_hour_of_peak() -> None:
    with pytest.raises(ValueError, match="peak_hour: only a 'diurnal' shape"):
        Arrival(kind="poisson", shape="ramp", peak_hour=3.0)
    with pytest.raises(ValueError, match="peak_hour"):
        Arrival(kind="poisson", shape="diurnal", peak_hour=24.0)


def test_points_schedule() -> None:
    rng = np.random.default_rng(3)
    arr = Arrival(
        kind="poisson", shape="points", points=({"at_s": 0, "factor": 0}, {"at_s": 100, "factor": 2})
    )  # type: ignore[arg-type]
    t = arrival_times(arr, 100.0, 10.0, rng)
    assert len(t) == pytest.approx(1000, rel=0.1)  # mean factor 1 over the window
    assert (t < 50).sum() < (t >= 50).sum() / 2


def test_multi_turn_prompts_extend_the_context() -> None:
    s = io.apply_overrides(
        BASE,
        {
            "workload.classes[0].multi_turn": {"turns_mean": 4, "think_time_s": 5},
            "workload.classes[0].prefix": {"tokens": 300, "groups": 3},
        },
    )
    r = generate(s)
    later = r.reused_tokens > 0
    assert later.any()
    assert np.all(r.prompt_tokens[later] > r.reused_tokens[later])
    assert len(set(r.prefix_group.tolist())) == 3
    assert np.all(r.prefix_tokens == 300)
    # a session's turns arrive in order
    for sess in np.unique(r.session)[:50]:
        a = r.arrival_s[r.session == sess]
        assert np.all(np.diff(a) >= 0)


def test_generation_is_deterministic_per_seed() -> None:
    a, b = generate(BASE), generate(BASE)
    assert np.array_equal(a.arrival_s, b.arrival_s) and np.array_equal(a.prompt_tokens, b.prompt_tokens)
    c = generate(io.apply_overrides(BASE, {"seed": 99}))
    assert not np.array_equal(a.prompt_tokens[:100], c.prompt_tokens[:100])


def test_mooncake_reader_on_inline_text(tmp_path: Path) -> None:
    p = tmp_path / "m.jsonl"
    rows = [
        {"timestamp": 2000, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]},
        {"timestamp": 1000, "input_length": 100, "output_length": 3, "hash_ids": [1]},
    ]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    s = io.apply_overrides(BASE, {"workload.trace": {"format": "mooncake", "path": str(p)}})
    r = generate(s)
    assert list(r.arrival_s) == [0.0, 1.0]
    assert list(r.blocks(0)) == [1] and list(r.blocks(1)) == [1, 2]
