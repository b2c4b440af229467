"""Real benchmark output (tests/observe/fixtures/real): result blocks as `vllm bench serve` and SGLang's
`bench_serving` printed them, copied from Apache-2.0 repositories, read and replayed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.cli import main as cli
from engine.core.errors import ScenarioError
from engine.observe import detect

REAL = Path(__file__).parent / "fixtures" / "real"
FILES = sorted(p.name for p in REAL.glob("*.txt"))

_LINE = re.compile(r"^(?P<label>[^:]+):\s+(?P<value>\S+)\s*$")

FIGURES = {
    "Successful requests": lambda o: o.measured.completed,
    "Benchmark duration (s)": lambda o: o.measured.duration_s,
    "Request throughput (req/s)": lambda o: o.measured.request_rps,
    "Output token throughput (tok/s)": lambda o: o.measured.output_tok_s,
    "Mean TTFT (ms)": lambda o: o.measured.ttft.mean_ms,
    "Median TTFT (ms)": lambda o: o.measured.ttft.at("p50"),
    "P99 TTFT (ms)": lambda o: o.measured.ttft.at("p99"),
    "Mean TPOT (ms)": lambda o: o.measured.tpot.mean_ms,
    "Median TPOT (ms)": lambda o: o.measured.tpot.at("p50"),
    "P99 TPOT (ms)": lambda o: o.measured.tpot.at("p99"),
    "Mean ITL (ms)": lambda o: o.measured.itl.mean_ms,
    "Median ITL (ms)": lambda o: o.measured.itl.at("p50"),
    "P95 ITL (ms)": lambda o: o.measured.itl.at("p95"),
    "P99 ITL (ms)": lambda o: o.measured.itl.at("p99"),
    "Mean E2E Latency (ms)": lambda o: o.measured.e2e.mean_ms,
    "Median E2E Latency (ms)": lambda o: o.measured.e2e.at("p50"),
    "Maximum request concurrency": lambda o: o.setup.concurrency,
    "Max request concurrency": lambda o: o.setup.concurrency,
}
"""A printed label and where its figure lands in the `Observation`."""


def _block(name: str) -> dict[str, str]:
    """label -> value of a fixture's block, read here by a regex of its own (not the reader's)."""
    text = (REAL / name).read_text()
    start = text.index("Serving Benchmark Result")
    return {m["label"].strip(): m["value"] for ln in text[start:].splitlines() if (m := _LINE.match(ln))}


def test_the_real_fixtures_are_there_and_cited() -> None:
    assert len(FILES) >= 8
    readme = (REAL.parent / "README.md").read_text()
    for name in FILES:
        head = (REAL / name).read_text().splitlines()[0]
        assert head.startswith("# ") and "Apache-2.0" in head and re.search(r"\b[0-9a-f]{8}\b", head)
        assert name in readme


@pytest.mark.parametrize("name", FILES)
def test_each_printed_figure_is_read_as_printed(name: str) -> None:
    o = detect.read_path(REAL / name)
    block = _block(name)
    assert o.format == ("sglang-bench-printed" if "Backend" in block else "vllm-bench-printed")
    compared = 0
    for label, value in block.items():
        if label in FIGURES:
            assert FIGURES[label](o) == pytest.approx(float(value)), label
            compared += 1
    assert compared >= 12
    done = float(block["Successful requests"])
    assert o.setup.prompt_tokens == pytest.approx(float(block["Total input tokens"]) / done)
    assert o.setup.output_tokens == pytest.approx(float(block["Total generated tokens"]) / done)
    assert o.setup.all_at_once and o.setup.rate_rps is None  # every block here ran at rate inf


def test_the_command_above_a_block_gives_the_model_and_prompt_count() -> None:
    vllm = detect.read_path(REAL / "gpustack_qwen3-8b_h100_vllm_c4.txt")
    assert vllm.setup.model == "Qwen/Qwen3-8B" and vllm.setup.requests == 100 and not vllm.notes
    sglang = detect.read_path(REAL / "sglang-cookbook_qwen3-235b_b200_c16.txt")  # continued lines
    assert sglang.setup.model == "Qwen/Qwen3-235B-A22B-Instruct-2507" and sglang.setup.requests == 80
    bare = detect.read_path(REAL / "gpustack_qwen3-8b_910b_c4.txt")
    assert bare.setup.model is None and any("give it" in n for n in bare.notes)


def test_a_commented_or_hostile_command_is_not_taken() -> None:
    block = (REAL / "gpustack_qwen3-8b_910b_c4.txt").read_text().split("\n", 1)[1]
    commented = detect.read_text("# vllm bench serve --model Qwen/Qwen3-8B\n" + block, "x.txt")
    assert commented.setup.model is None
    with pytest.raises(ScenarioError, match="--num-prompts"):
        detect.read_text("vllm bench serve --num-prompts 1e30\n" + block, "x.txt")
    rate = detect.read_text("vllm bench serve --request-rate 2.5 --burstiness 0.5\n" + block, "x.txt")
    assert rate.setup.rate_rps == 2.5 and rate.setup.burstiness == 0.5 and not rate.setup.all_at_once


def test_replay_of_a_real_h100_block(capsys: pytest.CaptureFixture[str]) -> None:
    name = "gpustack_qwen3-8b_h100_vllm_c4.txt"
    argv = ["replay", str(REAL / name), "--hardware", "h100-sxm", "--stack", "vllm"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"{name} (vllm-bench-printed) replayed on 1x h100-sxm tp1 vllm, model qwen3-8b" in out[0]
    rows = {tuple(ln.split()[:2]): ln.split() for ln in out[2:]}
    assert rows[("tpot", "mean")][3] == "7.38"  # measured, as printed
    assert rows[("output_tok_s", "mean")][3] == "496.88"
    assert all(r[-1].endswith("%") for r in rows.values())
