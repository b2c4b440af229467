"""Where prefill and decode sit on a chip's roofline, as tables for the CLI and the app.

For one model on one instance (chip x tp), a few prompt lengths and a grid of decode batch
sizes and context lengths: the iteration time, its compute and memory parts, the arithmetic
intensity, the binding resource, and whether the batch's KV cache fits in memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from engine.costmodel.iteration import IterationCost, RooflinePoint, decode_cost, prefill_cost, roofline_point
from engine.costmodel.perf import Instance, roof

PROMPTS = (512, 2048, 8192)
BATCHES = (1, 8, 32, 128)
CONTEXTS = (1024, 4096, 16384)


def achieved_tflops_per_chip(inst: Instance, cost: IterationCost) -> float:
    """TFLOP/s per chip an iteration reaches over its compute and memory time (`roof`, without its
    communication and fixed overhead): under the attainable ceiling min(F, I x B), by up to 1.32
    times near the ridge, where neither side hides the other. A pipeline's stages that wait their
    turn (`IterationCost.pipeline_s`) count: a lone prompt on four stages keeps each busy a quarter
    of the time, and its chips reach a quarter of the FLOP/s."""
    t = float(roof(float(cost.compute_s), float(cost.memory_s))) + float(cost.pipeline_s)
    return float(cost.flops) / t / inst.chips / 1e12 if t > 0 else 0.0


FIXED = "fixed cost"
"""What binds a step whose stack's fixed cost per iteration (`IterationCost.overhead_s`: launches, the
scheduler, sampling) outlasts its compute and its memory time: a 910B's batch-1 decode of Qwen3-8B
spends 35 of 47 ms there, 12 ms reading weights, and read 'bandwidth' (a review)."""


STAGES = "pipeline stages"
"""What binds a step whose pipeline stages, running in turn (`IterationCost.pipeline_s`), outlast its
compute and memory time spread over every stage: DeepSeek-V3 FP8 on ten H100s (tp 2 x pp 5), a
512-token prefill with 120 ms in turn against 77 ms of memory, read 'bandwidth' (a review)."""


def step_bound(cost: IterationCost, point: RooflinePoint) -> str:
    """The resource that binds one iteration: `FIXED` where the fixed cost outlasts both compute and
    memory time, `STAGES` where the pipeline's stages in turn do, else the roofline's (compute or
    bandwidth)."""
    work = max(float(cost.compute_s), float(cost.memory_s))
    if float(cost.overhead_s) > max(work, float(cost.pipeline_s)):
        return FIXED
    if float(cost.pipeline_s) > work:
        return STAGES
    return point.bound


def prefill_table(inst: Instance, prompts: Sequence[int] = PROMPTS) -> pd.DataFrame:
    """One row per prompt length: time of its prefill alone and where it binds."""
    rows = []
    for q in prompts:
        cost = prefill_cost(inst, q)
        pt = roofline_point(inst, "prefill", cost)
        rows.append(
            {
                "prompt_tokens": q,
                "time_ms": float(cost.time_s) * 1e3,
                "compute_ms": float(cost.compute_s) * 1e3,
                "memory_ms": float(cost.memory_s) * 1e3,
                "comm_ms": float(cost.comm_s) * 1e3,
                "pipeline_ms": float(cost.pipeline_s) * 1e3,
                "intensity_flops_per_byte": pt.intensity_flops_per_byte,
                "attainable_tflops_per_chip": pt.attainable_tflops,
                "achieved_tflops_per_chip": achieved_tflops_per_chip(inst, cost),
                "bound": step_bound(cost, pt),
                "tokens_per_s": q / float(cost.time_s),
            }
        )
    return pd.DataFrame(rows)


def decode_table(
    inst: Instance, batches: Sequence[int] = BATCHES, contexts: Sequence[int] = CONTEXTS
) -> pd.DataFrame:
    """One row per (batch, context): one decode step's time, its bound and whether it fits."""
    rows = []
    cap = inst.kv_capacity_tokens
    for b in batches:
        for c in contexts:
            cost = decode_cost(inst, b, c)
            pt = roofline_point(inst, "decode", cost)
            fits = b * c <= cap
            rows.append(
                {
                    "batch": b,
                    "context_tokens": c,
                    "time_ms": float(cost.time_s) * 1e3,
                    "compute_ms": float(cost.compute_s) * 1e3,
                    "memory_ms": float(cost.memory_s) * 1e3,
                    "comm_ms": float(cost.comm_s) * 1e3,
                    "pipeline_ms": float(cost.pipeline_s) * 1e3,
                    "intensity_flops_per_byte": pt.intensity_flops_per_byte,
                    "achieved_tflops_per_chip": achieved_tflops_per_chip(inst, cost),
                    "bound": step_bound(cost, pt) if fits else "kv_capacity",
                    "kv_fits": fits,
                    "tokens_per_s": b / float(cost.time_s),
                }
            )
    return pd.DataFrame(rows)


def tier_ceilings(inst: Instance) -> dict[str, float]:
    """Achievable bytes/s per chip of each memory tier beside the main one (SRAM, DDR), by name:
    the extra roofs a chip with tiers draws (an iteration whose bytes all sit in one tier reaches
    that tier's roof). Empty for a chip with one memory."""
    tiers = inst.memory_tiers
    if tiers is None:
        return {}
    return {
        name: rate / inst.tp
        for name, rate in zip(tiers.names, tiers.bytes_per_s, strict=True)
        if name != "hbm"
    }


def tier_curves(inst: Instance, intensity: np.ndarray, name: str) -> list[pd.DataFrame]:
    """The roof of each tier beside the main memory (`tier_ceilings`) over a grid of intensities: the
    attainable TFLOP/s per chip, named in a ``roof`` column ('sram', 'ddr'), as `curves` rows."""
    flops = inst.matmul_flops_per_s / inst.tp
    return [
        pd.DataFrame(
            {
                "chip": name,
                "roof": tier,
                "intensity_flops_per_byte": intensity,
                "attainable_tflops": np.minimum(flops, intensity * bw) / 1e12,
            }
        )
        for tier, bw in tier_ceilings(inst).items()
    ]


def report(inst: Instance) -> dict[str, Any]:
    """The whole roofline report of an instance as plain data."""
    return {
        "model": inst.model.id,
        "hardware": inst.hardware.id,
        "tp": inst.tp,
        "pp": inst.pp,
        "weights": inst.weights,
        "kv": inst.kv,
        "profile": inst.profile.model_dump(),
        "weight_bytes": inst.weight_bytes,
        "kv_bytes_per_token": inst.kv_bytes_per_token,
        # copies the ranks hold (whole KV heads replicated, MLA's latent on each): the room a token takes
        # is kv_bytes_per_token x kv_copies (a read-through read the capacity at twice the memory there)
        "kv_copies": inst.kv_copies,
        "kv_capacity_tokens": inst.kv_capacity_tokens,
        "ridge_flops_per_byte": inst.matmul_flops_per_s / inst.bytes_per_s,
        "tier_ridges_flops_per_byte": {
            name: inst.matmul_flops_per_s / inst.tp / bw for name, bw in tier_ceilings(inst).items()
        },
        "weight_shares": inst.memory_tiers.weight_shares() if inst.memory_tiers is not None else {},
        "prefill": prefill_table(inst).to_dict(orient="records"),
        "decode": [
            _resident(r, inst.kv_capacity_tokens) for r in decode_table(inst).to_dict(orient="records")
        ],
    }


UNRESIDENT = (
    "time_ms",
    "compute_ms",
    "memory_ms",
    "comm_ms",
    "pipeline_ms",
    "tokens_per_s",
    "achieved_tflops_per_chip",
)
"""A decode row's figures that assume its batch resident: none where its KV does not fit."""


def _resident(row: dict[Any, Any], capacity_tokens: int) -> dict[Any, Any]:
    """A decode row as the report gives it: where the batch's KV does not fit (`kv_fits` false), no
    times or tokens/s (128 sequences of 16,384 tokens read 1,485 tok/s on an instance holding 43 of
    them: a review) and ``max_batch``, the most sequences of its context that fit."""
    if row["kv_fits"]:
        return row
    return row | dict.fromkeys(UNRESIDENT) | {"max_batch": capacity_tokens // int(row["context_tokens"])}
