"""Tables of the hardware and model catalogs for the dashboard (data only, no widgets)."""

from __future__ import annotations

import pandas as pd

from engine.catalog import Catalog


def hardware_frame(cat: Catalog) -> pd.DataFrame:
    """One row per chip, units in the column names, sources alongside."""
    rows = []
    for h in sorted(cat.hardware.values(), key=lambda h: h.id):
        rows.append(
            {
                "id": h.id,
                "name": h.name + (" (illustrative)" if h.illustrative else ""),
                "class": h.kind,
                "bf16_tflops": h.tflops.get("bf16"),
                "fp8_tflops": h.tflops.get("fp8"),
                "fp4_tflops": h.tflops.get("fp4"),
                "memory_gb": h.memory_gb,
                "memory_tb_s": h.memory_tb_s,
                "scale_up_gb_s": h.scale_up_gb_s,
                "tdp_w": h.tdp_w,
                "usd_per_hour": h.usd_per_hour,
                "eta_compute": h.profile().eta_compute,
                "eta_bandwidth": h.profile().eta_bandwidth,
                "spec_source": h.sources.get("tflops", ""),
                "price_source": h.sources.get("usd_per_hour", ""),
            }
        )
    return pd.DataFrame(rows)


def model_frame(cat: Catalog) -> pd.DataFrame:
    """One row per model with its derived parameter counts and KV bytes per token."""
    rows = []
    for m in sorted(cat.models.values(), key=lambda m: m.id):
        rows.append(
            {
                "id": m.id,
                "name": m.name,
                "params_b": round(m.total_params() / 1e9, 2),
                "active_params_b": round(m.active_params() / 1e9, 2),
                "layers": m.layers,
                "hidden": m.hidden,
                "kv_bytes_per_token_bf16": int(m.kv_bytes_per_token("bf16")),
                "attention": "MLA" if m.mla else f"GQA {m.heads}/{m.kv_heads}",
                "moe": f"{m.moe.experts_per_token}/{m.moe.experts} experts" if m.moe else "dense",
                "source": m.source,
            }
        )
    return pd.DataFrame(rows)
