"""vLLM's start-up profiling pass: what a MoE model's forward pass of the token budget holds.

vLLM sizes its KV cache as `gpu_memory_utilization` x the device memory, less the weights, less
the peak memory torch allocated during one dummy forward pass of `max_num_batched_tokens`
(vllm/worker/worker.py `determine_num_available_blocks` in V0, vllm/v1/worker/gpu_worker.py
`determine_available_memory` in V1). `ModelSpec.activation_bytes_per_token` prices a dense
layer's MLP at that peak; a MoE layer under vLLM's fused kernel holds more
(vllm/model_executor/layers/fused_moe/fused_moe.py `fused_experts_impl`, DeepseekV2MoE.forward):

- a third whole-pass tensor beside the layer's input (which the routed experts' sum overwrites,
  `inplace=True`) and the residual: the shared experts' output (or, without shared experts, the
  routed output's scaled copy), hidden x 2 bytes per token;
- the kernel's buffers, sized for a chunk of at most `FUSED_MOE_CHUNK` tokens
  (`VLLM_FUSED_MOE_CHUNK_SIZE`): `intermediate_cache1` (tokens, top-k, 2 x the expert width),
  `intermediate_cache2` (tokens x top-k, the width) and `intermediate_cache3` (tokens, top-k,
  hidden), in bf16, the last the routed experts' outputs before their weighted sum.

vLLM V0 before 0.8 with MLA also keeps decode matrices absorbed at load (`W_Q_UK`, `W_UV_O`,
vllm/attention/backends/mla/utils.py under `VLLM_MLA_PERFORM_MATRIX_ABSORPTION`, on by default),
requantised to the weights' precision, beside the raw projections its prefill uses.
"""

from __future__ import annotations

from engine.catalog.model_spec import ModelSpec
from engine.catalog.specs import BYTES_PER_ELEMENT, Precision

FUSED_MOE_CHUNK = 65536
"""Tokens per chunk of vLLM's fused MoE kernel (`VLLM_FUSED_MOE_CHUNK_SIZE`'s default, 64 x 1024)."""

PROFILED_STACKS = ("vllm-v0",)
"""Stacks whose profiled peak is the MoE forward pass: vLLM V0, whose pass is a whole prompt's
(the context limit; MLA models always). V1's budgets (2,048-16,384 tokens) leave the peak to its
dummy sampler run over 1,024 sequences (fp32 copies of their logits), which is not modelled, and a
peak is the larger of the two, not their sum (docs/calibration.md, "vLLM's start-up profiling pass")."""

ABSORBING_STACKS = ("vllm-v0",)
"""Stacks that keep MLA's absorbed decode matrices beside the raw projections (vLLM V0 0.7)."""


def moe_pass_bytes(model: ModelSpec, rank_tokens: float, expert_split: int) -> float:
    """Bytes one chip's fused MoE layer holds in a pass of `rank_tokens` beyond the dense estimate.

    `expert_split`: the ranks an expert's width is split over (the tensor-parallel size, 1 under
    expert parallelism). 0 for a dense model or an empty pass.
    """
    if not model.moe or rank_tokens <= 0:
        return 0.0
    k = model.moe.experts_per_token
    width = model.moe.expert_intermediate / max(expert_split, 1)
    chunk = min(rank_tokens, FUSED_MOE_CHUNK)
    caches = chunk * k * (2.0 * width + width + model.hidden) * 2.0
    return rank_tokens * model.hidden * 2.0 + caches


def absorbed_mla_bytes(model: ModelSpec, weights: Precision) -> float:
    """Bytes of MLA's absorbed decode matrices, all heads (a rank holds its heads' share)."""
    m = model.mla
    if m is None:
        return 0.0
    q_in = m.q_lora_rank or model.hidden
    per_layer = model.heads * m.kv_lora_rank * (q_in + model.hidden)
    return model.layers * per_layer * BYTES_PER_ELEMENT[weights]


ALIGN_BYTES = 256
"""vLLM V0 0.7 aligns each KV-cache entry to 256 bytes (`VLLM_CUDA_MEM_ALIGN_KV_CACHE`, on by default,
vllm/worker/cache_engine.py): MLA's 576-element bf16 latent (1,152 bytes) takes 1,280."""


def aligned_kv_factor(model: ModelSpec, kv_bytes_per_element: float) -> float:
    """Memory an aligned MLA cache entry takes over its own bytes (1 without MLA)."""
    m = model.mla
    if m is None:
        return 1.0
    entry = (m.kv_lora_rank + m.qk_rope_head_dim) * kv_bytes_per_element
    return -(-entry // ALIGN_BYTES) * ALIGN_BYTES / entry
