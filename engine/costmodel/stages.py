"""Pipeline stages: the layers, weights and KV capacity of each of an instance's `pp` stages.

A GPU serving stack splits a model's layers over its pipeline stages by count, not by bytes:
vLLM's ``get_pp_indices`` (SGLang reuses it) gives every stage ``layers // pp`` layers and one more
to each of the last ``layers % pp`` stages but the last, which also holds the output head; the
first holds the input embedding. With tied embeddings the two ends each load the matrix, so a
pipelined instance holds it twice. A stage's chips hold its layers' weights and its layers' share
of every cached token's KV, so the instance takes only as many tokens as its most loaded stage
has room for. Where the stages are alike (an even split, no tied matrix, the experts spread
alike) that is the instance's own figure (`Instance.kv_capacity_tokens` divides the whole), but a
small model's first and last stages carry a vocabulary matrix as large as several of its layers
(Llama-3.1-8B at pp 8: the first stage holds 39% more than an eighth of the weights), and a MoE
model's leading dense layers make its first stage light and the others heavy.

A chip whose compiler places tensors itself (`COMPILER_PLACED`: Groq's LPU, Cerebras' WSE,
SambaNova's RDU, an FPGA; or any chip with SRAM or DDR tiers beside its memory,
`engine.costmodel.tiers`) balances its stages by bytes; its instance is checked whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.catalog.param_counts import counts_of
from engine.catalog.specs import BYTES_PER_ELEMENT

if TYPE_CHECKING:
    from engine.costmodel.perf import Instance

COMPILER_PLACED = ("Dataflow", "CGRA", "FPGA")
"""Chip classes whose compiler lays a model's tensors over the chips (`HardwareSpec.kind`)."""
HEAD_BYTES_PER_ELEMENT = 2.0
"""The embedding and the head are kept in bf16 whatever the weights' precision (`ModelSpec.weight_bytes`)."""


def layer_split(layers: int, pp: int) -> list[int]:
    """Layers per stage, first to last (vLLM's ``get_pp_indices`` without a custom partition)."""
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    return parts


def stage_weights(inst: Instance) -> list[float]:
    """Bytes of weights each stage's chips hold together (all data-parallel copies), first to last."""
    m = inst.model
    split = layer_split(m.layers, inst.pp)
    matrix = m.vocab * m.hidden * HEAD_BYTES_PER_ELEMENT * inst.dp  # one vocabulary matrix, every copy
    counted = m.embedding_params() * HEAD_BYTES_PER_ELEMENT * inst.dp  # what `weight_bytes` holds of them
    experts = dense_mlps = 0.0
    moe_split = [0] * inst.pp
    if m.moe:
        wb = BYTES_PER_ELEMENT[inst.weights]
        copies = (inst.tp * inst.dp) // inst.ep if inst.ep > 1 else inst.dp
        experts = m.moe_layers() * m.moe.experts * m.expert_params() * wb * copies
        # the experts (routed and shared) and routers with the MoE layers, the dense layers' MLPs
        # with the dense layers (which lead); attention and the rest spread over every layer
        counts = counts_of(m)
        experts += counts.moe_dense * wb * inst.dp
        dense_mlps = counts.dense_mlps * wb * inst.dp
        first = m.moe.dense_layers
        start = 0
        for i, n in enumerate(split):
            moe_split[i] = max(0, start + n - max(start, first))
            start += n
    rest = inst.weight_bytes - experts - dense_mlps - counted
    moe_layers, dense_layers = max(m.moe_layers(), 1), max(m.moe.dense_layers if m.moe else 0, 1)
    return [
        rest * n / m.layers
        + experts * k / moe_layers
        + dense_mlps * (n - k) / dense_layers
        + matrix * ((i == 0) + (i == inst.pp - 1))
        for i, (n, k) in enumerate(zip(split, moe_split, strict=True))
    ]


def staged(inst: Instance) -> bool:
    """True where the stages differ, or hold more than the instance counts (a tied matrix at both
    ends): the most loaded stage, not the whole, sets the KV capacity."""
    if inst.pp == 1 or inst.hardware.tiered or inst.hardware.kind in COMPILER_PLACED:
        return False
    weights = stage_weights(inst)
    alike = len(set(layer_split(inst.model.layers, inst.pp))) == 1
    return inst.model.tied_embeddings or not alike or max(weights) - min(weights) > 1e-6 * max(weights)


def _shares(inst: Instance) -> list[tuple[float, float]]:
    """Per stage, first to last: (its layers' share of the model, its weights' bytes)."""
    layers = inst.model.layers
    return [(n / layers, w) for n, w in zip(layer_split(layers, inst.pp), stage_weights(inst), strict=True)]


def stage_capacity(inst: Instance) -> int:
    """KV tokens of the most loaded stage: each stage's memory less its weights, its share of the
    activations and its layers' share of the resident extra bytes, over its layers' share of the
    bytes a cached token takes (`Instance.kv_room_per_token`). A stage with no layer (more stages
    than layers) holds no KV and is left out."""
    memory, activations = inst.memory_bytes / inst.pp, inst.activation_bytes / inst.pp
    held, extra = inst.kv_room_per_token, inst.resident_extra_bytes
    tokens = [
        max(0, int((memory - w - activations - extra * share) // (held * share)))
        for share, w in _shares(inst)
        if share > 0
    ]
    return min(tokens, default=0)


def tightest(inst: Instance, room_tokens: int) -> tuple[int, float, float]:
    """(stage, bytes it needs, bytes its chips give) of the stage with the least to spare once it
    holds its weights and its shares of the activations, of the resident extra bytes and of
    `room_tokens` tokens of KV (as `stage_capacity` counts them)."""
    activations = inst.activation_bytes / inst.pp
    held, extra = inst.kv_room_per_token, inst.resident_extra_bytes
    needs = [w + activations + (extra + room_tokens * held) * share for share, w in _shares(inst)]
    worst = max(range(inst.pp), key=lambda i: needs[i])
    return worst, needs[worst], inst.memory_bytes / inst.pp


def overflow(inst: Instance) -> tuple[int, float, float] | None:
    """`tightest` at the room `Instance.fits` asks for, where the instance taken whole would hold
    it and a stage does not; None otherwise (it fits, or the whole does not either)."""
    room = inst.fit_room_tokens
    if not staged(inst) or inst.whole_kv_capacity_tokens < room or inst.kv_capacity_tokens >= room:
        return None
    return tightest(inst, room)


__all__ = [
    "COMPILER_PLACED",
    "layer_split",
    "overflow",
    "stage_capacity",
    "stage_weights",
    "staged",
    "tightest",
]
