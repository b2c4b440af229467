"""A model's architecture: the `ModelSpec` the cost model counts FLOPs, weight bytes and KV bytes from.

A `ModelSpec` describes a transformer's architecture (layers, widths, heads, `MoE` and `MLA`
fields). Parameter counts are derived from the architecture, so a model imported from a Hugging
Face ``config.json`` needs nothing else. Split from `engine.catalog.specs` (600 lines) with no
change of behaviour; the rules every entry follows (frozen, sourced, bounded) are that module's.
"""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
import math
from typing import Annotated, Literal

from pydantic import Field, model_validator

from engine.catalog.param_counts import counts_of
from engine.catalog.specs import (
    ACTIVATION_ELEMENT_BYTES,
    BYTES_PER_ELEMENT,
    ID_PATTERN,
    HfId,
    KvPrecision,
    Precision,
    Spec,
)
from engine.core.text import Line


class MoE(Spec):
    """Mixture-of-experts fields of a model."""

    experts: Annotated[int, Field(ge=2, le=4096)]
    experts_per_token: Annotated[int, Field(ge=1, le=64)]
    expert_intermediate: Annotated[int, Field(ge=1, le=1_000_000)]
    shared_experts: Annotated[int, Field(ge=0, le=64)] = 0
    dense_layers: Annotated[int, Field(ge=0, le=1000)] = Field(
        default=0, description="leading layers with a dense MLP instead of experts"
    )

    @model_validator(mode="after")
    def _check(self) -> "MoE":
        if self.experts_per_token > self.experts:
            raise ValueError(f"experts_per_token: {self.experts_per_token} exceeds experts {self.experts}")
        return self


class MLA(Spec):
    """Multi-head latent attention fields (DeepSeek-V2/V3): a compressed KV cache."""

    kv_lora_rank: Annotated[int, Field(ge=1, le=65536)]
    q_lora_rank: Annotated[int, Field(ge=0, le=65536)] = 0
    qk_nope_head_dim: Annotated[int, Field(ge=1, le=4096)]
    qk_rope_head_dim: Annotated[int, Field(ge=0, le=4096)]
    v_head_dim: Annotated[int, Field(ge=1, le=4096)]


class ModelSpec(Spec):
    """A transformer's architecture, enough to count its FLOPs, weight bytes and KV bytes."""

    id: str = Field(pattern=ID_PATTERN)
    name: Line = Field(min_length=1, max_length=120)
    source: str = Field(min_length=3, max_length=2000)
    layers: Annotated[int, Field(ge=1, le=1000)]
    hidden: Annotated[int, Field(ge=1, le=1_000_000)]
    heads: Annotated[int, Field(ge=1, le=4096)]
    kv_heads: Annotated[int, Field(ge=1, le=4096)]
    head_dim: Annotated[int, Field(ge=1, le=4096)]
    intermediate: Annotated[int, Field(ge=1, le=10_000_000)]
    vocab: Annotated[int, Field(ge=1, le=10_000_000)]
    mlp_matrices: Literal[2, 3] = Field(
        default=3, description="3 for gated MLPs (SwiGLU), 2 for plain GELU MLPs"
    )
    tied_embeddings: bool = False
    max_context: Annotated[int, Field(ge=1, le=100_000_000)] = 131072
    moe: MoE | None = None
    mla: MLA | None = None
    published_params_b: Annotated[float, Field(gt=0, le=1_000_000)] | None = Field(
        default=None, description="the parameter count its authors publish, as a cross-check"
    )
    hf_id: HfId | None = Field(
        default=None,
        description="the checkpoint's Hugging Face repository (owner/name), which launch commands load",
    )
    hf_weights: Precision = Field(
        default="bf16", description="the precision the checkpoint at hf_id stores its weights in"
    )

    @model_validator(mode="after")
    def _check(self) -> "ModelSpec":
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads: {self.kv_heads} must divide heads {self.heads}")
        if self.moe and self.moe.dense_layers > self.layers:
            raise ValueError(f"moe.dense_layers: {self.moe.dense_layers} exceeds layers")
        return self

    # --- parameter counts -------------------------------------------------------------
    def attention_params(self) -> float:
        """Weights of one layer's attention block."""
        d = self.hidden
        if self.mla:
            m = self.mla
            qk = m.qk_nope_head_dim + m.qk_rope_head_dim
            q = d * m.q_lora_rank + m.q_lora_rank * self.heads * qk if m.q_lora_rank else d * self.heads * qk
            kv_down = d * (m.kv_lora_rank + m.qk_rope_head_dim)
            kv_up = m.kv_lora_rank * self.heads * (m.qk_nope_head_dim + m.v_head_dim)
            out = self.heads * m.v_head_dim * d
            return float(q + kv_down + kv_up + out)
        h = self.head_dim
        return float(d * self.heads * h * 2 + d * self.kv_heads * h * 2)

    def _mlp_params(self, width: int) -> float:
        return float(self.mlp_matrices * self.hidden * width)

    def expert_params(self) -> float:
        """Weights of one routed expert in one layer (0 for a dense model)."""
        return self._mlp_params(self.moe.expert_intermediate) if self.moe else 0.0

    def moe_layers(self) -> int:
        """Number of layers whose MLP is a mixture of experts."""
        return self.layers - self.moe.dense_layers if self.moe else 0

    def embedding_params(self) -> float:
        """Input embedding plus output head (one matrix when tied)."""
        return float(self.vocab * self.hidden * (1 if self.tied_embeddings else 2))

    def dense_params(self) -> float:
        """Weights every token reads: attention, dense MLPs, shared experts, router, embeddings."""
        return counts_of(self).dense

    def total_params(self) -> float:
        """All weights."""
        return counts_of(self).total

    def active_params(self) -> float:
        """Weights one token's forward pass multiplies by (MoE: only its routed experts)."""
        return counts_of(self).active

    def matmul_params(self) -> float:
        """Active weights that take part in matmuls per token (the input embedding is a lookup)."""
        return counts_of(self).matmul

    # --- attention and KV ---------------------------------------------------------------
    def kv_elements_per_token(self) -> float:
        """KV-cache elements one token stores across all layers."""
        if self.mla:
            return float(self.layers * (self.mla.kv_lora_rank + self.mla.qk_rope_head_dim))
        return float(2 * self.layers * self.kv_heads * self.head_dim)

    def kv_bytes_per_token(self, kv: KvPrecision = "bf16") -> float:
        """KV-cache bytes one token stores across all layers."""
        return self.kv_elements_per_token() * BYTES_PER_ELEMENT[kv]

    def attention_flops_per_pair(self) -> float:
        """FLOPs of attention between one query token and one context token, all layers.

        Scores (q.k) and the weighted sum (p.v) each cost 2 FLOPs per head-dimension element:
        4 * L * n_q * h for standard heads, with MLA's qk and v widths where they differ.
        """
        if self.mla:
            m = self.mla
            return 2.0 * self.layers * self.heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim)
        return 4.0 * self.layers * self.heads * self.head_dim

    def expected_experts_touched(self, tokens: float) -> float:
        """Expected distinct routed experts per MoE layer that a batch of tokens activates.

        With uniform routing, each token picks k of E experts; an expert stays untouched with
        probability (1 - k/E)^T, so E * (1 - (1 - k/E)^T) are read from memory.
        """
        if not self.moe:
            return 0.0
        e, k = self.moe.experts, self.moe.experts_per_token
        t = max(tokens, 0.0)
        return e * (1.0 - math.pow(1.0 - k / e, t))

    def activation_bytes_per_token(self, tp: int) -> float:
        """Peak activation bytes per batched token on one of `tp` chips during a forward pass.

        The peak of a decoder layer's MLP: the residual stream and the MLP's input (2 x hidden)
        beside the gate-up projection's output and its activated half (3 x width / tp), in bf16.
        The width is the dense MLP's, or a MoE layer's routed and shared experts per token.
        (Assumption: docs/calibration.md, "Memory".)
        """
        width = float(self.intermediate)
        if self.moe:
            width = max(
                width, (self.moe.experts_per_token + self.moe.shared_experts) * self.moe.expert_intermediate
            )
        return ACTIVATION_ELEMENT_BYTES * (2.0 * self.hidden + 3.0 * width / tp)

    def _attention_extra(self, weights: Precision, attention: Precision | None) -> float:
        """Bytes the attention projections add when a checkpoint keeps them at `attention`."""
        if attention is None:
            return 0.0
        per = BYTES_PER_ELEMENT[attention] - BYTES_PER_ELEMENT[weights]
        return self.layers * self.attention_params() * per

    def weight_bytes(self, weights: Precision, attention: Precision | None = None) -> float:
        """Bytes of all weights at a precision (embeddings kept in bf16 as serving stacks do).

        `attention`: the attention projections' precision where a checkpoint keeps them apart
        (Meta's FP8 Llama 3.1 405B quantises only the MLPs); None: the same as the rest.
        """
        emb = self.embedding_params()
        return (
            (self.total_params() - emb) * BYTES_PER_ELEMENT[weights]
            + emb * 2.0
            + self._attention_extra(weights, attention)
        )

    def weight_bytes_read(
        self, weights: Precision, tokens: float, attention: Precision | None = None
    ) -> float:
        """Bytes of weights one iteration of `tokens` tokens streams from memory.

        Dense models read everything once per iteration (only the output head, not the input
        embedding table). MoE models read only the experts the batch touches.
        """
        wb = BYTES_PER_ELEMENT[weights]
        head = self.vocab * self.hidden * 2.0
        dense = (
            (self.dense_params() - self.embedding_params()) * wb
            + head
            + self._attention_extra(weights, attention)
        )
        if not self.moe:
            return dense
        touched = self.expected_experts_touched(tokens)
        return dense + self.moe_layers() * touched * self.expert_params() * wb
