"""One way in: a printed result block and the shipped reference rows copied from it give the same
`Observation` figures (engine.observe.shipped)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from engine.core import datafiles
from engine.core.errors import ScenarioError
from engine.observe import detect
from engine.observe.observation import Observation
from engine.observe.shipped import BLOCK_FILES, block_observation, is_block, reference_blocks

REAL = Path(__file__).parent / "fixtures" / "real"
SHIPPED = [
    "gpustack_deepseek-r1_h200_vllm_burst.txt",
    "gpustack_qwen3-32b_h100_sglang-server_burst.txt",
    "gpustack_qwen3-8b_910b_c4.txt",
    "sglang-cookbook_qwen3-235b_b200_c1.txt",
    "sglang-cookbook_qwen3-235b_b200_c16.txt",
]
"""Real fixtures whose blocks the shipped files hold as rows (tests/observe/fixtures/README.md)."""


def _source_of(name: str, blocks: dict[str, Observation]) -> str:
    """The shipped block a fixture was copied from: same page, same first line of the block."""
    head = (REAL / name).read_text().splitlines()[0]
    path = re.search(r"(docs/\S+\.md)", head)
    line = re.search(r"lines (\d+)-\d+ \(result block", head)
    assert path and line, head
    hits = [s for s in blocks if path.group(1) in s and s.endswith(f"result block at line {line.group(1)}")]
    assert len(hits) == 1, (name, hits)
    return hits[0]


def _figures(o: Observation) -> dict[str, float | None]:
    m, s = o.measured, o.setup
    out: dict[str, float | None] = {
        "output_tok_s": m.output_tok_s,
        "request_rps": m.request_rps,
        "duration_s": m.duration_s,
        "completed": m.completed,
        "concurrency": s.concurrency,
        "prompt_tokens": s.prompt_tokens,
        "output_tokens": s.output_tokens,
    }
    for fig in ("ttft", "tpot", "itl", "e2e"):
        lat = getattr(m, fig)
        for stat in ("mean", "p50", "p99"):
            out[f"{fig} {stat}"] = None if lat is None else lat.at(stat)
    return out


@pytest.fixture(scope="module")
def blocks() -> dict[str, Observation]:
    return reference_blocks()


@pytest.mark.parametrize("name", SHIPPED)
def test_printed_block_and_shipped_rows_give_the_same_figures(
    name: str, blocks: dict[str, Observation]
) -> None:
    printed = _figures(detect.read_path(REAL / name))
    rows = _figures(blocks[_source_of(name, blocks)])
    compared = [k for k, v in rows.items() if v is not None]
    # the rows hold 8 or 9 of a block's figures; each is the printed one
    assert len(compared) >= 11
    for key in compared:
        assert rows[key] == pytest.approx(printed[key], rel=1e-9), key
    for key in ("output_tok_s", "request_rps", "ttft mean", "ttft p50", "ttft p99", "tpot mean", "completed"):
        assert key in compared


def test_every_shipped_block_becomes_one_observation(blocks: dict[str, Observation]) -> None:
    n = 0
    for f in BLOCK_FILES:
        with open(datafiles.data_dir() / "reference" / f, newline="", encoding="utf-8") as fh:
            n += sum(1 for r in csv.DictReader(fh) if is_block(r))
    assert n > 1500 and len(blocks) * 8 <= n <= len(blocks) * 9
    for o in blocks.values():
        assert o.measured.completed and o.setup.prompt_tokens and o.setup.output_tokens
        assert o.measured.output_tok_s and o.measured.ttft is not None and o.measured.tpot is not None
        assert o.setup.concurrency or o.setup.requests == o.measured.completed


def test_rows_that_are_not_one_block_are_refused() -> None:
    row = {
        "id": "X1",
        "source": "a, result block at line 1",
        "model": "Qwen3-8B (dense)",
        "rate": "max-concurrency 4 (100 prompts)",
        "scenario": "vllm bench serve",
        "metric": "mean_ttft_ms",
        "value": "10",
        "notes": "totals: 100 requests, 1000 input / 2000 generated tokens, duration 9.5 s",
    }
    assert block_observation([row]).setup.prompt_tokens == 10.0
    with pytest.raises(ScenarioError, match="different sources"):
        block_observation([row, {**row, "id": "X2", "source": "b, result block at line 2"}])
    with pytest.raises(ScenarioError, match="totals"):
        block_observation([{**row, "notes": "no totals here"}])
    with pytest.raises(ScenarioError, match="neither a burst nor a concurrency"):
        block_observation([{**row, "rate": "Poisson 4 req/s"}])
    with pytest.raises(ScenarioError, match="mean_ttft_ms"):
        block_observation([{**row, "value": "nan"}])
