"""Where each phase sits on each chip's roofline, for a scenario's model and workload.

`roofline_table(scenario)`: for the scenario's model and workload, every catalog chip, each phase at
the tensor-parallel degree (of 1, 2, 4, 8 that hold the weights) that serves it at the lowest cost per
token without missing its SLO unloaded (`best_rows`), with prefill of the mean prompt and
decode at the batch B* the planner would use (the largest that fits KV memory, the batching
limit and the TPOT target): arithmetic intensity, the ridge point, attainable and achieved
TFLOP/s per chip, which resource binds, and a note when the chip cannot meet an SLO in that
phase even unloaded (the planner's pruning reasons). `compute` and `bandwidth` come from the roofline;
`kv_capacity` when decode is bandwidth-bound at a batch that KV memory caps (more memory
means a bigger batch and more tokens per second for the same weight reads); `link` when the
tensor-parallel all-reduces outlast the compute and memory time, or, for prefill, when moving
the prompt's KV cache over the chip's NICs takes longer than computing it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from engine.calibration import trust
from engine.catalog.entries import Catalog
from engine.core.errors import ScenarioError
from engine.costmodel import ownership
from engine.costmodel.iteration import IterationCost, RooflinePoint, decode_cost, prefill_cost, roofline_point
from engine.costmodel.ownership import CostBasis
from engine.costmodel.perf import Instance
from engine.costmodel.roofline import step_bound
from engine.explain.roofline_chips import scenario_layout
from engine.planning.sizing import Demand, InstanceRates, demand, instance_rates
from engine.scenario.model import Scenario
from engine.scenario.resolve import scenario_catalog
from engine.serving.workload import generate


def _fitting_instances(
    scenario: Scenario, cat: Catalog, hw: str, tp_options: Sequence[int]
) -> list[Instance]:
    """The chip's instances at each of `tp_options` that hold the weights, smallest first."""
    model = cat.models[scenario.model.id]
    custom = any(h.id == hw for h in scenario.custom_hardware)
    chip = trust.chip_for_stack(
        cat.hardware[hw], scenario.deployment.stack, cat, custom, model.moe is not None
    )

    def instance(tp: int, pp: int = 1) -> Instance:
        return Instance(
            model=model,
            hardware=chip,
            tp=tp,
            pp=pp,
            weights=scenario.model.weights,
            attention_weights=scenario.model.attention_weights,
            kv=scenario.kv_precision(),
            mem_fraction=scenario.deployment.mem_fraction,
            activation_tokens=scenario.activation_tokens(chip),  # as a pool on this chip keeps
            eager=scenario.deployment.eager,
        )

    out = [inst for inst in (instance(tp) for tp in sorted(tp_options)) if inst.fits()]
    if not out and (layout := scenario_layout(scenario, model, chip)) is not None:
        # more chips than one tp of `tp_options` holds: pipeline stages, as the Hardware page places
        # it (DeepSeek-R1 FP8 on H100s: tp 2 x pp 5), not dropped from the table without a word (a review)
        out.append(instance(*layout))
    return out


def best_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per phase, the row (one per tp, smallest first) that serves it at the lowest cost per token
    among those without a problem (`note`), else the smallest tp's. The table took the smallest tp
    that holds the weights: an H100 decoding Llama-3.1-70B FP8 at tp 1 has room for a batch of one,
    and read $21 per million tokens beside the scenario's own tp 2 at $2 (a review)."""
    out = []
    for phase in dict.fromkeys(r["phase"] for r in rows):
        mine = [r for r in rows if r["phase"] == phase]
        fine = [r for r in mine if not r["note"] and math.isfinite(r["usd_per_million_tokens"])]
        out.append(min(fine, key=lambda r: r["usd_per_million_tokens"]) if fine else mine[0])
    return out


def _binds(cost: IterationCost, point: RooflinePoint) -> str:
    """What binds one step: the longest of its compute-or-memory time (the roofline's reading), its
    tensor- and pipeline-parallel communication ('link'), its fixed cost and its pipeline stages
    (`step_bound`). The link was tested first: a Groq decode step of 2.10 ms, 92% fixed cost, read
    'link' for its 0.16 ms of communication (a review)."""
    comm = float(cost.comm_s)
    if comm > max(
        float(cost.compute_s), float(cost.memory_s), float(cost.overhead_s), float(cost.pipeline_s)
    ):
        return "link"
    return step_bound(cost, point)


def _decode_row(
    inst: Instance, d: Demand, rates: InstanceRates, base: dict[str, Any], usd_per_chip_hour: float
) -> dict[str, Any]:
    """The roofline table's decode row: a decode step at the batch B* the instance reaches."""
    b = max(rates.decode_batch, 1)
    dc = decode_cost(inst, b, d.mean_decode_context_tokens)
    dt = roofline_point(inst, "decode", dc)
    t = float(dc.time_s)
    binds = _binds(dc, dt)
    if binds == "bandwidth" and rates.decode_batch_limit == "kv_capacity":
        binds = "kv_capacity"
    return {
        **base,
        "phase": "decode",
        "batch": b,
        "tokens": float(b),
        "intensity_flops_per_byte": dt.intensity_flops_per_byte,
        "attainable_tflops_per_chip": dt.attainable_tflops,
        "achieved_tflops_per_chip": float(dc.flops) / t / inst.chips / 1e12,
        "roofline_bound": dt.bound,
        "binds": binds,
        "time_ms": t * 1e3,
        "kv_transfer_ms": 0.0,
        "tokens_per_s_per_chip": b / t / inst.chips,
        "usd_per_million_tokens": usd_per_chip_hour * inst.chips / 3600 * t / b * 1e6,
        "batch_limit": rates.decode_batch_limit,
        "note": rates.decode_problem,
    }


def roofline_rows(inst: Instance, d: Demand, basis: CostBasis | None = None) -> list[dict[str, Any]]:
    """Prefill of the mean prompt and decode at B* on one instance, as two table rows.

    Dollars per million tokens price a busy chip-hour under the cost basis (rent by default; an
    owned chip at its TDP, an upper bound of its energy).
    """
    hw = inst.hardware
    prompt = float(np.mean(d.prompt_tokens - d.cached_tokens)) if len(d.prompt_tokens) else 1024.0
    cached = float(np.mean(d.cached_tokens)) if len(d.cached_tokens) else 0.0
    basis = basis or CostBasis()
    rates = instance_rates(inst, d, basis)
    try:
        usd_per_chip_hour = ownership.chip_hour_usd(hw, basis, power_w=hw.tdp_w)
    except ScenarioError:
        usd_per_chip_hour = math.nan  # an owned chip without a price (its note says so)
    base = {
        "hardware": hw.id,
        "class": hw.kind,
        "tp": inst.tp,
        "pp": inst.pp,
        "ridge_flops_per_byte": inst.matmul_flops_per_s / inst.bytes_per_s,
        "kv_capacity_tokens": inst.kv_capacity_tokens,
    }
    out = []
    pc = prefill_cost(inst, prompt + cached, cached)  # prefill_cost takes the whole prompt
    pt = roofline_point(inst, "prefill", pc)
    # a chip without a scale-out link sends no KV over one (Groq's LPU: it read 1.5e11 ms at 1 byte/s)
    nic = hw.scale_out_gb_s * inst.tp * 1e9
    link_s = inst.kv_bytes_held * (prompt + cached) / nic if nic > 0 else math.nan
    t = float(pc.time_s)
    binds = "link" if link_s > t else _binds(pc, pt)
    out.append(
        {
            **base,
            "phase": "prefill",
            "batch": 1,
            "tokens": prompt,
            "intensity_flops_per_byte": pt.intensity_flops_per_byte,
            "attainable_tflops_per_chip": pt.attainable_tflops,
            "achieved_tflops_per_chip": float(pc.flops) / t / inst.chips / 1e12,
            "roofline_bound": pt.bound,
            "binds": binds,
            "time_ms": t * 1e3,
            "kv_transfer_ms": None if math.isnan(link_s) else link_s * 1e3,
            "tokens_per_s_per_chip": prompt / t / inst.chips,
            "usd_per_million_tokens": usd_per_chip_hour * inst.chips / 3600 * t / prompt * 1e6,
            "batch_limit": "",
            "note": rates.prefill_problem,
        }
    )
    out.append(_decode_row(inst, d, rates, base, usd_per_chip_hour))
    return out


def roofline_table(
    scenario: Scenario,
    catalog: Catalog | None = None,
    hardware: Sequence[str] | None = None,
    tp_options: Sequence[int] = (1, 2, 4, 8),
) -> pd.DataFrame:
    """Both phases of the scenario's model on each chip (all catalog chips by default)."""
    cat = scenario_catalog(scenario, catalog)
    d = demand(scenario, generate(scenario))
    rows: list[dict[str, Any]] = []
    for hw in hardware or sorted(cat.hardware):
        each = [
            r
            for inst in _fitting_instances(scenario, cat, hw, tp_options)
            for r in roofline_rows(inst, d, scenario.cost)
        ]
        rows.extend(best_rows(each))
    return pd.DataFrame(rows)


# --- findings from a run ---------------------------------------------------------------------
