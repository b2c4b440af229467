"""The roofline the Hardware page draws: each chip at a layout that holds the model, the model's
prefill and decode points on it.

`fitting_layout` finds the smallest instance of a chip that holds the model: tensor parallelism
first (up to 64 chips), then pipeline stages of such groups (up to 16), as an SRAM-only chip
needs (a 70B model on Groq's LPUs takes hundreds of chips). `roofline` draws each chip per chip:
its compute ceiling, its main memory's roof and one roof per SRAM or DDR tier.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from engine.catalog.model_spec import ModelSpec
from engine.catalog.specs import HardwareSpec, KvPrecision, Precision
from engine.costmodel import stacks
from engine.costmodel.perf import Instance
from engine.costmodel.roofline import decode_table, prefill_table, tier_curves
from engine.scenario.model import Scenario

MAX_TP = 64
"""The largest tensor-parallel group `fitting_layout` tries (a GPU's scale-up domain is smaller;
an SRAM-centric chip's deployments are built of such groups)."""
MAX_PP = 16
"""The most pipeline stages `fitting_layout` tries."""


def fitting_tp(
    model: ModelSpec,
    hw: HardwareSpec,
    weights: Precision,
    kv: KvPrecision,
    mem_fraction: float = 0.9,
    activation_tokens: int = 0,
    attention_weights: Precision | None = None,
) -> int | None:
    """The smallest power-of-two tensor parallelism (up to 64) at which the model fits the chip."""
    fits = _fits(model, hw, weights, kv, mem_fraction, activation_tokens, attention_weights)
    return next((tp for tp in (2**i for i in range(MAX_TP.bit_length())) if fits(tp, 1)), None)


def fitting_layout(
    model: ModelSpec,
    hw: HardwareSpec,
    weights: Precision,
    kv: KvPrecision,
    mem_fraction: float = 0.9,
    activation_tokens: int = 0,
    attention_weights: Precision | None = None,
) -> tuple[int, int] | None:
    """The smallest (tp, pp) at which the model fits the chip, tp a power of two and pp any number of
    stages (the stacks split layers unevenly): fewest chips, then fewest stages (so a model that fits
    at some TP gets `fitting_tp`'s), and among those the widest TP. None past 64 x 16 chips."""
    sizes = [2**i for i in range(MAX_TP.bit_length())]
    layouts = sorted(
        ((tp, pp) for tp in sizes for pp in range(1, MAX_PP + 1)), key=lambda lp: (lp[0] * lp[1], lp[1])
    )
    fits = _fits(model, hw, weights, kv, mem_fraction, activation_tokens, attention_weights)
    return next(((tp, pp) for tp, pp in layouts if fits(tp, pp)), None)


def scenario_layout(scenario: Scenario, model: ModelSpec, chip: HardwareSpec) -> tuple[int, int] | None:
    """`fitting_layout` of `chip` for the scenario's model: its precisions, memory fraction and the
    activation memory its stack keeps on that chip (an SRAM chip's smaller token budget)."""
    return fitting_layout(
        model,
        chip,
        scenario.model.weights,
        scenario.kv_precision(),
        scenario.deployment.mem_fraction,
        scenario.activation_tokens(chip),
        scenario.model.attention_weights,
    )


def _fits(
    model: ModelSpec,
    hw: HardwareSpec,
    weights: Precision,
    kv: KvPrecision,
    mem_fraction: float,
    activation_tokens: int,
    attention_weights: Precision | None,
) -> Callable[[int, int], bool]:
    """Whether an instance of `tp` x `pp` chips holds the model (weights, activations and some KV), at a
    tensor-parallel degree the serving stacks can split its heads over (`stacks.tp_split_problem`)."""

    def fits(tp: int, pp: int) -> bool:
        if stacks.tp_split_problem(model, tp):
            return False
        return Instance(
            model=model,
            hardware=hw,
            tp=tp,
            pp=pp,
            weights=weights,
            kv=kv,
            mem_fraction=mem_fraction,
            activation_tokens=activation_tokens,
            attention_weights=attention_weights,
        ).fits()

    return fits


def roofline_name(chip: str, tp: int, pp: int = 1, dp: int = 1, ep: int = 1) -> str:
    """A chip's series in `roofline`: its id and chips per instance, with the layout where it has stages or
    data- and expert-parallel ranks ('h200 ×16 (tp1 dp16 ep16)': DeepSeek's decode pool read 'h200 ×1')."""
    if pp == 1 and dp == 1 and ep == 1:
        return f"{chip} ×{tp}"
    layout = " ".join(
        f"{k}{v}" for k, v in (("tp", tp), ("pp", pp), ("dp", dp), ("ep", ep)) if k == "tp" or v > 1
    )
    return f"{chip} ×{tp * pp * dp} ({layout})"


Layout = tuple[HardwareSpec, int] | tuple[HardwareSpec, int, int] | tuple[HardwareSpec, int, int, int, int]
"""A chip on the roofline and its instance: (chip, tp), (chip, tp, pp) or (chip, tp, pp, dp, ep)."""


def roofline(
    model: ModelSpec,
    chips: Sequence[Layout],
    weights: Precision,
    kv: KvPrecision,
    mem_fraction: float = 0.9,
    prompts: Sequence[int] = (512, 2048, 8192),
    activation_tokens: int = 0,
    attention_weights: Precision | None = None,
    eager: bool = False,
    batches: Sequence[int] = (1, 8, 32, 128),
    context_tokens: int = 4096,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Roofline curves and the model's prefill and decode points on each chip at its layout (`Layout`).

    Returns ``(curves, points)``. Curves: ``chip``, ``intensity_flops_per_byte``,
    ``attainable_tflops`` (per chip, at the calibrated fractions of peak; ``roof``: a tier's). Points: ``chip``,
    ``phase``, ``label``, ``intensity_flops_per_byte``, ``attainable_tflops`` (the ceiling at the
    point's intensity), ``achieved_tflops`` (what its compute and memory time reach: below the
    ceiling near the ridge), ``bound``, ``time_ms``, ``tokens_per_s``.
    """
    grid = np.geomspace(0.5, 20_000, 120)
    curves, points = [], []
    for hw, tp, *rest in chips:
        pp = rest[0] if rest else 1
        dp, ep = (rest[1], rest[2]) if len(rest) == 3 else (1, 1)
        inst = Instance(
            model=model,
            hardware=hw,
            tp=tp,
            pp=pp,
            dp=dp,
            ep=ep,
            weights=weights,
            kv=kv,
            mem_fraction=mem_fraction,
            activation_tokens=activation_tokens,
            attention_weights=attention_weights,
            eager=eager,
        )
        name = roofline_name(hw.id, tp, pp, dp, ep)
        per_chip_flops = inst.matmul_flops_per_s / tp
        per_chip_bw = inst.bytes_per_s / tp
        curves.extend(
            [  # the main memory's roof, then a roof per SRAM or DDR tier (named in `roof`)
                pd.DataFrame(
                    {
                        "chip": name,
                        "intensity_flops_per_byte": grid,
                        "attainable_tflops": np.minimum(per_chip_flops, grid * per_chip_bw) / 1e12,
                    }
                ),
                *tier_curves(inst, grid, name),
            ]
        )
        points.extend(_points(inst, name, prompts, batches, context_tokens))
    return pd.concat(curves, ignore_index=True), pd.concat(points, ignore_index=True)


def _points(
    inst: Instance, name: str, prompts: Sequence[int], batches: Sequence[int], context_tokens: int
) -> list[pd.DataFrame]:
    """The model's prefill points (one per prompt) and decode points (one per batch) on one instance."""
    per_chip_flops = inst.matmul_flops_per_s / inst.tp
    per_chip_bw = inst.bytes_per_s / inst.tp
    points = []
    pre = prefill_table(inst, prompts)
    points.append(
        pd.DataFrame(
            {
                "chip": name,
                "phase": "prefill",
                "label": [f"prefill {q} tokens" for q in pre["prompt_tokens"]],
                "intensity_flops_per_byte": pre["intensity_flops_per_byte"],
                "attainable_tflops": pre["attainable_tflops_per_chip"],
                "achieved_tflops": pre["achieved_tflops_per_chip"],
                "bound": pre["bound"],
                "time_ms": pre["time_ms"],
                "tokens_per_s": pre["tokens_per_s"],
            }
        )
    )
    dec = decode_table(inst, batches, (context_tokens,))
    intensity = dec["intensity_flops_per_byte"].to_numpy(dtype=float)
    points.append(
        pd.DataFrame(
            {
                "chip": name,
                "phase": "decode",
                "label": [f"decode batch {b}, {context_tokens} context" for b in dec["batch"]],
                "intensity_flops_per_byte": intensity,
                "attainable_tflops": np.minimum(per_chip_flops, intensity * per_chip_bw) / 1e12,
                "achieved_tflops": dec["achieved_tflops_per_chip"],
                "bound": dec["bound"],
                "time_ms": dec["time_ms"],
                "tokens_per_s": dec["tokens_per_s"],
            }
        )
    )
    return points


def pool_chips(scenario: Scenario) -> list[tuple[str, int, int, int, int]]:
    """(chip id, tp, pp, dp, ep) of each pool of the scenario, without repeats."""
    seen: list[tuple[str, int, int, int, int]] = []
    for p in scenario.deployment.pools:
        if (p.hardware, p.tp, p.pp, p.dp, p.ep) not in seen:
            seen.append((p.hardware, p.tp, p.pp, p.dp, p.ep))
    return seen
