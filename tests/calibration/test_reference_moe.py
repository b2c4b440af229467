"""The MoE reference rows (calibration-moe.csv) are replayed as they were run, or set aside with why."""

from __future__ import annotations

import pytest

from engine.calibration import reference, reference_moe
from engine.catalog.entries import Catalog


@pytest.fixture(scope="module")
def rows(catalog: Catalog) -> dict[str, reference.Row]:
    return {r.id: r for r in reference_moe.read_moe_rows(catalog)}


def test_every_row_is_a_point_or_has_a_reason(rows: dict[str, reference.Row]) -> None:
    assert len(rows) == 1026
    for r in rows.values():
        assert r.usable or len(r.reason) > 10, r.id
    usable = [r for r in rows.values() if r.usable]
    assert len(usable) >= 150
    # one figure per block: output throughput, mean TTFT, mean TPOT
    assert {r.point.kind for r in usable if r.point} == {"throughput", "ttft", "tpot"}
    assert "another view" in rows["M002"].reason  # total tokens/s of M001's block


def test_loads_lengths_and_layouts_are_read_as_run(rows: dict[str, reference.Row]) -> None:
    # the SGLang cookbook: a concurrency-limited client, the *actual* mean lengths (1000 requested)
    c1 = rows["M550"].point
    assert c1 is not None and (c1.concurrency, c1.prompts) == (1, 10)
    assert (c1.prompt_tokens, c1.output_tokens) == (610, 421) and not c1.static
    # a GPUStack burst of fixed random lengths: a static batch of every prompt
    burst = rows["M100"].point
    assert burst is not None and burst.static and burst.batch == 100 and burst.prompt_tokens == 32000
    # SGLang's --enable-dp-attention: attention tp 1 x dp 8, the MoE layers over 8 ranks
    assert (burst.tp, burst.dp, burst.ep) == (1, 8, 8)
    # Tencent's TP16 over two nodes with its stated token budget (4096, not the version's default)
    tke = rows["M883"].point
    assert tke is not None and (tke.tp, tke.token_budget, tke.concurrency) == (16, 4096, 1)
    assert tke.hardware == "h20" and tke.model == "deepseek-v3"
    # its harness sends ten prompts per client (the playbook's benchmark_serving_concurrency.sh)
    assert tke.prompts == 10 and rows["M1023"].point is not None and rows["M1023"].point.prompts == 1280
    # ... of fixed lengths, all clients from t = 0: in step
    assert tke.lockstep and not rows["M550"].point.lockstep
    # vLLM's --enable-expert-parallel: the experts over the TP group
    assert reference_moe._layout("4 (EP)") == "4 (EP 4)"
    assert reference_moe._layout("16 (2 nodes x 8 GPUs)") == "16"


def test_what_is_set_aside_says_why(rows: dict[str, reference.Row]) -> None:
    assert rows["M001"].reason == reference_moe.SHAREGPT_BURST  # mean lengths cannot replay the tail
    assert rows["M082"].reason == reference_moe.SHORT_BURST  # 1,000 requests of 4 tokens
    assert "speculative" in rows["M631"].reason  # EAGLE MTP: acceptance not modelled
    assert "flagged" in rows["M046"].reason and "flagged" in rows["M640"].reason
    assert "flagged" in rows["M832"].reason  # a cold first request's TTFT
    assert "not in the catalog" in rows["M811"].reason  # gpt-oss-120b (the cookbook, at a concurrency)
    # a burst's TTFT counts the queue behind every prompt: not a point
    assert not rows["M004"].usable
