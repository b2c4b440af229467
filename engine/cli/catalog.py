"""The ``catalog`` command: the catalog's chips, each with its calibration under a serving stack, and models.

A chip's calibration says whether its profile under the stack was fitted to measurements of that
chip ('calibrated') or comes by a rule ('uncalibrated: <basis>'), and its bands, where about two in
three real deployments land (`engine.explain.confidence.chip_rows`, as the Hardware page shows it).
`chip_marks` gives the same, short, for ``advise``'s roofline table.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.calibration.band_lookup import BAND_MEANING
from engine.catalog.entries import load_catalog, price_assumed
from engine.cli.common import aligned, emit_json
from engine.costmodel.stacks import SERVING_STACKS
from engine.explain import confidence
from engine.scenario.model import Scenario
from engine.scenario.resolve import scenario_catalog

STACKS = SERVING_STACKS
"""Serving stacks --stack accepts (`engine.scenario.model.Deployment.stack`; a test keeps them equal)."""


def mark_text(row: dict[str, Any]) -> str:
    """'calibrated (throughput −30% to +67%, TPOT −28% to +10%)': a chip's mark and its bands (where
    about two in three real deployments land; none where a band's coverage is not measured)."""
    band = str(row.get("expected_error") or "")
    return str(row["calibration"]) + (f" ({band})" if band else "")


def calibration_json(row: dict[str, Any], stack: str, moe: bool = False) -> dict[str, Any]:
    """A chip's calibration under `stack` for a dense model, or a MoE one (`moe`), for --json: mark, fitted
    or not, rule and expected errors."""
    return {
        "stack": stack,
        "model_kind": "moe" if moe else "dense",
        "mark": row["calibration"],
        "calibrated": row["calibrated"],
        "rule": row["calibration_rule"],
        "bands": row["expected_error"],
        "median_miss": {
            k[: -len("_error")]: v for k, v in row.items() if k.endswith("_error") and k != "expected_error"
        },
    }


def cmd_catalog(args: argparse.Namespace) -> int:
    """List the catalog's chips (with their calibration under --stack) and models."""
    cat = load_catalog()
    moe = bool(getattr(args, "moe", False))
    # a dense model's marks and bands unless --moe: the table read b200 "calibrated (TPOT −27% to +11%)" to
    # a buyer screening chips for DeepSeek, whose MoE band reaches +72% (a hardware strategist's review)
    marks = confidence.chip_rows(cat, args.stack, moe=moe)
    hw = [
        {
            "id": h.id,
            "name": h.name,
            "vendor": h.vendor,
            "class": h.kind,
            "illustrative": h.illustrative,
            "tflops": dict(h.tflops),
            "memory_gb": h.memory_gb,
            "memory_tb_s": h.memory_tb_s,
            "memory_tiers": [{"tier": n, "gb": gb, "tb_s": tb} for n, gb, tb in h.memory_tiers()],
            "reconfig_s": h.reconfig_s,
            "reconfig_j": h.reconfig_j,
            "clock_ghz": h.clock_ghz,
            "scale_up_gb_s": h.scale_up_gb_s,
            "scale_up_domain": h.scale_up_domain,
            "scale_out_gb_s": h.scale_out_gb_s,
            "pcie_gb_s": h.pcie_gb_s,
            "allreduce_latency_us": h.allreduce_latency_us,
            "tdp_w": h.tdp_w,
            "idle_w": h.idle_w,
            "usd_per_hour": h.usd_per_hour,
            "usd_per_hour_assumed": price_assumed(h),
            # the owned-cost figures `lifetime` and rent-vs-own read, whose sources were listed without them
            "capex_usd": h.capex_usd,
            "server_capex_usd": h.server_capex_usd,
            "profiles": sorted(h.profiles),
            "sources": dict(h.sources),
            "calibration": calibration_json(marks[h.id], args.stack, moe),
        }
        for h in sorted(cat.hardware.values(), key=lambda h: h.id)
    ]
    models = [
        {
            "id": m.id,
            "name": m.name,
            "params_b": m.total_params() / 1e9,
            "active_params_b": m.active_params() / 1e9,
            "layers": m.layers,
            "hidden": m.hidden,
            "kv_bytes_per_token_bf16": m.kv_bytes_per_token("bf16"),
            "moe": m.moe is not None,
            "mla": m.mla is not None,
            "source": m.source,
        }
        for m in sorted(cat.models.values(), key=lambda m: m.id)
    ]
    if args.json:
        emit_json({"hardware": hw, "models": models})
        return 0
    print_chips(hw, marks, args.stack, moe)
    print(
        "* an assumed price, not a published one: the chip's sources say why (--json: sources.usd_per_hour)"
    )
    print()
    print_models(models)
    return 0


def _peak(v: float | None) -> str:
    """A dense peak in TFLOP/s; "—" for a precision the chip lacks ("0" read as zero throughput)."""
    return f"{v:,.0f}" if v else "—"


def _figure(v: float) -> str:
    """A memory size or bandwidth as the catalog states it, never an exponent: '80', '0.2148', '21,000'."""
    return f"{v:,.0f}" if v >= 1000 else f"{v:.4g}"


def print_chips(hw: list[dict[str, Any]], marks: dict[str, Any], stack: str, moe: bool = False) -> None:
    """The chips' table, its columns as wide as their widest cell, the calibration last (a dense model's,
    or with `moe` a Mixture-of-Experts model's)."""
    kind = "a MoE model" if moe else "a dense model; --moe for a MoE one"
    rows = [
        [
            *("hardware", "class", "bf16", "fp8", "fp4", "GiB", "TB/s", "$/h"),
            f" calibration under {confidence.stack_name(stack)} for {kind} (its bands: {BAND_MEANING}; "
            "TFLOP/s dense, — where the chip has no such peak)",
        ]
    ]
    for h in hw:
        tf: dict[str, float] = h["tflops"]
        mark = " (illustrative)" if h["illustrative"] else ""
        # an assumed price starred, as `run` and the Strategy page mark it (the table read it bare: a review)
        price = f"{h['usd_per_hour']:,.2f}" + ("*" if h["usd_per_hour_assumed"] else " ")
        rows.append(
            [
                *(
                    str(h["id"]),
                    str(h["class"]),
                    _peak(tf.get("bf16")),
                    _peak(tf.get("fp8")),
                    _peak(tf.get("fp4")),
                ),
                *(_figure(h["memory_gb"]), f"{h['memory_tb_s']:,.2f}", price),
                f" {mark_text(marks[str(h['id'])])}{mark}{tiers_text(h)}{_no_build(h, stack)}",
            ]
        )
    rows[0][7] += " "  # the header's '$/h' over the prices, whose star column follows them
    print("\n".join(aligned(rows, [False, False, True, True, True, True, True, True])))


def _no_build(h: dict[str, Any], stack: str) -> str:
    """'; vLLM has no build for it (emit refuses it): modelled with a profile by rule' for a chip whose vendor
    the stack has no build for, which the simulation still runs with a profile (a CLI review: the catalog listed
    groq-lpu under vLLM, as `plan` did, where `emit --stack vllm` refuses it)."""
    from engine.planning.emit import no_build

    if not no_build(stack, str(h["vendor"]), bool(h["illustrative"]), str(h.get("class", "GPU"))):
        return ""
    return f"; {confidence.stack_name(stack)} has no build for it (emit refuses it): modelled with a profile by rule"


def print_models(models: list[dict[str, Any]]) -> None:
    """The models' table, its columns as wide as their widest cell (qwen3-235b-a22b-2507 overran 18)."""
    rows = [["model", "params", "active", "KV B/token", " kind"]]
    for m in models:
        kind = "MoE+MLA" if m["moe"] and m["mla"] else "MoE" if m["moe"] else "dense"
        rows.append(
            [
                str(m["id"]),
                f"{m['params_b']:.1f}B",
                f"{m['active_params_b']:.1f}B",
                f"{m['kv_bytes_per_token_bf16']:,.0f}",
                f" {kind}",
            ]
        )
    print("\n".join(aligned(rows, [False, True, True, True])))


def tiers_text(h: dict[str, Any]) -> str:
    """'; tiers: SRAM 0.52 GiB at 240 TB/s, HBM 64 GiB at 2 TB/s, DDR 1,536 GiB at 0.2 TB/s; reconfigures
    in 0.01 s' for a chip with memory tiers or a reconfiguration time; empty otherwise. GiB, as the
    catalog states every tier (`sram_gb`, `memory_gb`, `ddr_gb`): it read 'GB' (a review)."""
    tiers: list[dict[str, Any]] = h["memory_tiers"]
    out = ""
    if len(tiers) > 1:
        out += "; tiers: " + ", ".join(
            f"{t['tier'].upper()} {t['gb']:,g} GiB at {t['tb_s']:g} TB/s" for t in tiers
        )
    if h["reconfig_s"] is not None:
        out += f"; reconfigures in {h['reconfig_s']:g} s"
    return out


def chip_marks(scen: Scenario) -> dict[str, str]:
    """Each chip's calibration under the scenario's stack and model, short: 'calibrated −24% to +56%',
    'uncalibrated −41% to +74%' (its throughput band; the dashboard's Hardware page shows the same)."""
    cat = scenario_catalog(scen)
    moe = cat.models[scen.model.id].moe is not None if scen.model.id in cat.models else False
    rows = confidence.chip_rows(
        cat, scen.deployment.stack, moe=moe, custom=[h.id for h in scen.custom_hardware]
    )
    out = {}
    for chip, row in rows.items():
        head = str(row["calibration"]).split(":")[0]
        band = str(row.get("throughput_band") or "")
        out[chip] = head + (f" {band}" if band else "")
    return out
