"""vLLM's start-up profiling pass: a MoE layer's fused-kernel buffers and V0's absorbed MLA matrices."""

from __future__ import annotations

import pytest

from engine.catalog.entries import Catalog
from engine.costmodel import profile_pass, stacks
from engine.costmodel.perf import Instance

GIB = 2**30


def _r1(catalog: Catalog, stack: str, tokens: int = 163840) -> Instance:
    return Instance(
        model=catalog.model("deepseek-r1"), hardware=catalog.chip("h200"), tp=8, weights="fp8",
        activation_tokens=tokens, startup_profile=stack,
    )  # fmt: skip


def test_the_fused_moe_buffers_follow_the_kernel_shapes(catalog: Catalog) -> None:
    """DeepSeek-R1 at TP8: a 163,840-token pass holds a third whole-pass hidden tensor (7,168 x 2
    bytes a token) and, for one 65,536-token chunk of top-8 routes, the gate-up output (2 x 256),
    the activated half (256) and the experts' outputs before their sum (7,168), in bf16."""
    model = catalog.model("deepseek-r1")
    expected = 163840 * 7168 * 2 + 65536 * 8 * (512 + 256 + 7168) * 2
    assert profile_pass.moe_pass_bytes(model, 163840, 8) == pytest.approx(expected)
    # below the chunk the buffers scale with the pass; a dense model and an empty pass hold none
    small = profile_pass.moe_pass_bytes(model, 2048, 8)
    assert small == pytest.approx(2048 * 7168 * 2 + 2048 * 8 * (512 + 256 + 7168) * 2)
    assert profile_pass.moe_pass_bytes(catalog.model("llama-3.1-70b"), 8192, 8) == 0.0
    assert profile_pass.moe_pass_bytes(model, 0, 8) == 0.0


def test_only_vllm_v0_pays_the_profiled_pass_and_the_absorbed_matrices(catalog: Catalog) -> None:
    """Other stacks, V1 included (its peak at its budgets is the sampler's, not modelled), keep the
    dense estimate; V0 0.7 pays the MoE buffers, the absorbed W_Q_UK / W_UV_O (61 layers x 128 heads
    x 512 x (1,536 + 7,168) FP8 bytes, 4.05 GiB a GPU) and the 256-byte alignment of its latent."""
    plain, v1, v0 = _r1(catalog, ""), _r1(catalog, "vllm"), _r1(catalog, "vllm-v0")
    assert v1.activation_bytes == plain.activation_bytes
    assert v1.kv_capacity_tokens == plain.kv_capacity_tokens
    assert v0.activation_bytes > plain.activation_bytes
    assert plain.resident_extra_bytes == v1.resident_extra_bytes == 0.0
    assert v0.resident_extra_bytes / 8 / GIB == pytest.approx(61 * 128 * 512 * (1536 + 7168) / 8 / GIB)
    assert profile_pass.aligned_kv_factor(catalog.model("deepseek-r1"), 2.0) == pytest.approx(1280 / 1152)
    assert profile_pass.aligned_kv_factor(catalog.model("llama-3.1-70b"), 2.0) == 1.0
    assert plain.kv_capacity_tokens > v0.kv_capacity_tokens


def test_the_v0_room_comes_near_a_logged_v0_server(catalog: Catalog) -> None:
    """vLLM PR 14842 logs a V0 server of DeepSeek-R1 at TP8 with the default context: 4,739 blocks of
    64 tokens (303,296). The model's room for it is within a third of that figure (the rest is
    memory the model does not price: non-torch buffers, the projections every rank holds whole)
    where the older accounting gave 2.1 times it."""
    logged = 4739 * 64
    assert 1.0 < _r1(catalog, "vllm-v0").kv_capacity_tokens / logged < 1.35
    assert _r1(catalog, "").kv_capacity_tokens / logged > 2.0


def test_vllm_v0_prefills_whole_prompts_for_mla_models() -> None:
    """vLLM 0.7 forces chunked prefill off for MLA: the budget is the context limit, even past 32K."""
    assert stacks.vllm_v0_defaults(163840).chunked_prefill
    mla = stacks.vllm_v0_defaults(163840, mla=True)
    assert not mla.chunked_prefill and mla.token_budget == 163840
