"""Widgets of the Hardware page: the model served, the roofline over chips, the catalog tables, custom chips."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from engine.calibration import chip_for_stack
from engine.catalog import Catalog
from engine.core import ScenarioError
from engine.costmodel import STACK_NAMES
from engine.costmodel import kv_default as kv_default_of
from engine.explain import (
    chip_options,
    chip_rows,
    pool_chips,
    roofline,
    roofline_name,
    scenario_layout,
    with_model_fitted,
)
from engine.scenario import Scenario, scenario_catalog
from ui import chip_sources, export, hardware_charts, state, tables
from ui.bound import local_problem, refused_value, select
from ui.text import plain


@st.cache_data(max_entries=32, show_spinner=False)
def _roofline(
    sc_json: str, chips: tuple[tuple[str, int, int, int, int], ...]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Each chip's roofline, with the activation memory a run on that chip keeps (its stack's token
    budget on it, as `_fitting` sized it)."""
    sc = Scenario.model_validate_json(sc_json)
    cat = scenario_catalog(sc)
    model = cat.model(sc.model.id)
    custom = {h.id for h in sc.custom_hardware}
    parts = [
        roofline(
            model,
            [
                (
                    chip_for_stack(
                        cat.chip(c), sc.deployment.stack, cat, custom=c in custom, moe=model.moe is not None
                    ),
                    tp,
                    pp,
                    dp,
                    ep,
                )
            ],
            sc.model.weights,
            sc.kv_precision(),
            sc.deployment.mem_fraction,
            activation_tokens=sc.activation_tokens(cat.chip(c)),
            attention_weights=sc.model.attention_weights,
            eager=sc.deployment.eager,
        )
        for c, tp, pp, dp, ep in chips
    ]
    return pd.concat([c for c, _ in parts], ignore_index=True), pd.concat(
        [p for _, p in parts], ignore_index=True
    )


def _fitting(sc: Scenario, cat: Catalog, chip: str) -> tuple[int, int, int, int] | None:
    """The smallest layout of `chip` that holds the scenario's model (`scenario_layout`), as (tp, pp, dp, ep)."""
    layout = scenario_layout(sc, cat.model(sc.model.id), cat.chip(chip))
    return None if layout is None else (*layout, 1, 1)


def _model_refused(sc: Scenario, cat: Catalog) -> None:
    """Why a model choice was refused, and how resized instances would hold it, one click to
    switch to them (`engine.explain.previews.with_model_fitted`)."""
    problem = local_problem("model")
    if not problem:
        return
    st.warning(plain(problem), icon=":material/block:")
    model_id = refused_value("model")
    if not isinstance(model_id, str):
        return
    try:
        fitted = with_model_fitted(sc, model_id, cat)
    except ScenarioError as exc:  # resized, something else still refuses it: say what
        st.caption(plain(f"Resizing the pools would not be enough: {exc}."))
        return
    if fitted is None:
        st.caption(
            "No layout of up to 8 x 8 chips of these pools' chips holds it: pick a larger chip on Strategy."
        )
        return
    layouts = ", ".join(
        f"{p.name} tp {p.tp}"
        + (f" x pp {p.pp}" if p.pp > 1 else "")
        + (f" x dp {p.dp}" if p.dp > 1 else "")
        + (f" ep {p.ep}" if p.ep > 1 or p.ep != q.ep else "")
        for p, q in zip(fitted.deployment.pools, sc.deployment.pools, strict=True)
        if (p.tp, p.pp, p.dp, p.ep) != (q.tp, q.pp, q.dp, q.ep)
    )
    st.button(
        f"Serve {model_id} on resized instances ({layouts})",
        icon=":material/open_in_full:",
        key="fg:model-fit",
        on_click=_serve_fitted,
        args=(sc, fitted, model_id, layouts),
    )


def _serve_fitted(before: Scenario, fitted: Scenario, model_id: str, layouts: str) -> None:
    """Serve the model on the resized pools, and say what that did to the chips and the bill."""
    if not state.commit(fitted, f"model {model_id}"):
        return
    cat = scenario_catalog(fitted)

    def size(s: Scenario) -> tuple[int, float | None]:
        chips = [(p.chips, cat.chip(p.hardware).usd_per_hour) for p in s.deployment.pools]
        prices = [n * u for n, u in chips if u is not None]
        return sum(n for n, _ in chips), sum(prices) if len(prices) == len(chips) else None

    (c0, u0), (c1, u1) = size(before), size(fitted)
    bill = f", ${u0:,.2f} -> ${u1:,.2f} an hour at list prices" if u0 is not None and u1 is not None else ""
    state.notify(
        f"Serving {model_id} with {layouts}: {c0:,} -> {c1:,} chips{bill} (the Strategy page changes the split).",
        kind="info",
        key="model-fit",
    )


def model_picker(sc: Scenario, cat: Catalog) -> None:
    """The served model and its weight and KV precisions (the KV's left to the serving stack unless set)."""
    stack = STACK_NAMES.get(sc.deployment.stack, sc.deployment.stack)
    kv_default = kv_default_of(sc.deployment.stack, sc.model.weights)
    c1, c2, c3 = st.columns([2, 1, 1])
    with c1:
        select(
            "model.id",
            sorted(cat.models),
            "Model",
            format_func=lambda m: f"{m} ({cat.models[m].name})" if m in cat.models else m,
            help="The model every pool serves (catalog models plus the scenario's custom ones). One the pools' "
            "instances cannot hold is refused with the layout it needs, and a button resizes them.",
            slot="model",
        )
    _model_refused(sc, cat)
    with c2:
        select(
            "model.weights",
            ["bf16", "fp8", "fp4", "int4"],
            "Weights",
            help="Weight precision: fp8/fp4 use the chip's "
            "native path where it has one; int4 is weight-only (bf16 compute).",
        )
    with c3:
        select(
            "model.kv",
            [None, "bf16", "fp8"],
            "KV cache",
            format_func=lambda k: (
                f"{kv_default} ({stack} default)" if k is None else str(k)
            ),  # value first: a narrow box cut it
            help=f"KV-cache precision: bytes per cached element. Default: what {stack} uses with these weights "
            "(TensorRT-LLM's FP8 and FP4 checkpoints carry an FP8 KV cache; vLLM and SGLang keep bf16).",
        )


def roofline_section(sc: Scenario, cat: Catalog) -> None:
    """Pick chips; draw where the scenario's model sits on each chip's roofline."""
    in_use = pool_chips(sc)
    options = chip_options(cat)
    default = list(
        dict.fromkeys([u[0] for u in in_use] + [c for c in ("h200", "b200", "mi300x") if c in options])
    )
    picked = st.multiselect(
        "Chips on the roofline",
        options,
        default=default,
        key="fg:roofline-chips",
        help="Chips in the scenario's pools use their pool's layout; others the smallest that holds the model: "
        "tensor parallelism up to 64 chips, then pipeline stages (an SRAM-only chip needs hundreds of chips).",
    )
    chips: list[tuple[str, int, int, int, int]] = []
    skipped = []
    for c in picked:
        # a pool's chip at each of its pools' layouts, their data- and expert-parallel ranks too (a chip
        # of two pools drew the first pool's alone: moe-deepseek-dp-ep's dp16 decode pool went undrawn)
        layouts = [u for u in in_use if u[0] == c]
        fitted = _fitting(sc, cat, c) if not layouts else None
        if layouts:
            chips.extend(layouts)
        elif fitted is None:
            skipped.append(c)
        else:
            chips.append((c, *fitted))
    if skipped:
        st.caption(f"Not drawn (the model does not fit even on 64 x 16 chips): {plain(', '.join(skipped))}")
    if not chips:
        return
    curves, points = _roofline(sc.model_dump_json(), tuple(chips))
    marks = _chip_trust(cat, sc)
    loose = {roofline_name(*layout) for layout in chips if not marks[layout[0]]["calibrated"]}
    # a fitted chip whose MoE experts run at a shared factor, as Strategy and Results call it (a review)
    partly = {
        roofline_name(*layout)
        for layout in chips
        if marks[layout[0]]["calibrated"] and str(marks[layout[0]]["calibration"]).startswith("partly")
    }
    export.chart(
        hardware_charts.roofline(curves, points, uncalibrated=loose, partly=partly),
        sc,
        "roofline",
        title="Roofline",
        help=f"{sc.model.id}, {sc.model.weights} weights, {sc.kv_precision()} KV. Prefill at 512/2048/8192-token prompts; "
        "decode steps at batch 1/8/32/128 with 4096 tokens of context each.",
    )
    # a strategist read the MI300X's roof below the H100's as a lower compute ceiling, where the datasheet's
    # is higher and its vLLM fit reaches less of it (a browser review)
    st.caption(
        f"Each line is the chip's achievable roof under {sc.deployment.stack}: its datasheet peaks (the Compute and "
        "memory tab) times the fractions its calibration reaches (the Calibration tab), at the weights' precision. "
        "A roof below another chip's can be a lower fitted fraction, not a lower peak."
    )
    with st.expander("Roofline points as a table", icon=":material/table:"):
        # in words, as the chart's hover reads a step ('kv_capacity' stood as an identifier: a browser review)
        shown = points.assign(bound=points["bound"].replace({"kv_capacity": "KV capacity"}))
        st.dataframe(shown, hide_index=True, width="stretch", column_config=tables.ROOFLINE_POINTS)


def _chip_trust(cat: Catalog, sc: Scenario) -> dict[str, dict[str, Any]]:
    """Each chip's calibration under the scenario's stack and model (`confidence.chip_rows`): what
    the catalog table and the roofline mark alike."""
    model = cat.models.get(sc.model.id)
    moe = model is not None and model.moe is not None
    return chip_rows(cat, sc.deployment.stack, moe=moe, custom=[h.id for h in sc.custom_hardware])


HARDWARE_VIEWS: dict[str, tuple[str, ...]] = {
    # the calibration beside the id: after the long names it sat past the edge of a 1,100-pixel window
    "Chips": ("id", "calibration", "class", "memory_type", "name"),
    "Compute and memory": (
        "id",
        "bf16_tflops",
        "fp8_tflops",
        "fp4_tflops",
        "memory_gb",
        "memory_tb_s",
        "spec_source",
    ),
    # two tabs: in one of fifteen columns the power and the reconfiguration sat past a 1,440 px edge
    "Memory tiers": ("id", "tiers", "sram_gb", "sram_tb_s", "ddr_gb", "ddr_tb_s", "reconfig_s", "reconfig_j"),
    # apart: in one tab the clock sat past the table's edge at 1,100 pixels (a review)
    "Links": (
        "id",
        "scale_up_gb_s",
        "scale_up_domain",
        "scale_out_gb_s",
        "pcie_gb_s",
        "allreduce_latency_us",
    ),
    "Power": ("id", "tdp_w", "idle_w", "clock_ghz"),
    "Calibration": ("id", "expected_error", "eta_compute", "eta_bandwidth", "calibration_rule"),
    "Prices": ("id", "usd_per_hour", "capex_usd", "server_capex_usd", "price_source", "capex_source"),
}
"""The catalog's columns in tabs, each narrow enough for a 1440-pixel screen: in one table of 28
columns the calibration sat past the right edge, reached only by scrolling sideways."""

_HEADER_WIDE = {"width": 104}
"""A figure's column as wide as its header ('BF16 TFLOP/s', '$ / chip-hour')."""
WRAPPED: dict[str, tuple[int, dict[str, Any]]] = {
    # the figures as wide as their headers and the sources wide, wrapped: the sources were cut at the
    # table's edge ("NVIDIA A100 Tensor Core GPU datashe") while each figure's column was as wide as theirs
    "Compute and memory": (
        66,
        {
            **{
                k: _HEADER_WIDE
                for k in ("bf16_tflops", "fp8_tflops", "fp4_tflops", "memory_gb", "memory_tb_s")
            },
            "spec_source": {"width": 330},
        },
    ),
    # the 910B's "partly calibrated: its fit misses the chip's own published results beyond the pooled
    # band" was cut at "beyo" at 1,100 and 1,440 pixels (a review)
    # the name wrapped beside it: 'AMD Alveo V80 (Versal HBM FPGA car' was cut at the table's edge once the
    # id was made wide enough for 'qualcomm-ai100-std' (a browser review)
    # and the id on one line ('qualcomm-ai1/00-std' broke mid-word at 1,400 px: a browser review)
    "Chips": (66, {"id": {"width": 160}, "calibration": {"width": 300}, "name": {"width": 260}}),
    "Prices": (
        66,
        {
            **{k: _HEADER_WIDE for k in ("usd_per_hour", "capex_usd", "server_capex_usd")},
            "price_source": {"width": 280},
            "capex_source": {"width": 280},
        },
    ),
    "Calibration": (
        66,
        {
            "expected_error": {"width": "medium"},
            "calibration_rule": {"width": "large"},
        },
    ),
}
"""Tabs whose text wraps: the row height (Streamlit wraps a cell's text only in rows taller than
4 rem) and the widths that change for it. A rule runs to 139 characters ('transferred: lower
quartile of the fractions ...'), which one line of the tab's last column cut at a third."""


def catalog_tables(cat: Catalog, sc: Scenario, config: dict[str, Any]) -> None:
    """The accelerators' table, a tab per group of columns (`HARDWARE_VIEWS`), each led by the chip's id."""
    frame = hardware_frame(cat, sc)
    # a cell's text is cut at its row's height: where to read it whole (a browser review read sources cut
    # mid-sentence as the sources the page promises)
    st.caption("A cell cut short: the Sources tab gives one chip's figures and sources whole.")
    *tabs, sources = st.tabs([*HARDWARE_VIEWS, "Sources"])
    chip_sources.sources_tab(sources, cat, sc)  # one chip's figures whole, beside their values
    for (name, columns), tab in zip(HARDWARE_VIEWS.items(), tabs, strict=True):
        row_height, widths = WRAPPED.get(name, (None, {}))
        tab.dataframe(
            frame[list(columns)],
            hide_index=True,
            width="stretch",
            column_config={**config, **{k: {**config[k], **w} for k, w in widths.items()}},
            row_height=row_height,
            placeholder="—",  # a tier or peak the chip does not have
        )


def hardware_frame(cat: Catalog, sc: Scenario) -> pd.DataFrame:
    """One row per chip, units in the column names, sources alongside, and how sure its numbers are:
    first what kind of chip it is (class, main memory type, memory tiers in fill order, reconfiguration).

    The calibration columns and the achievable fractions are those the chip runs with under the
    scenario's serving stack (`engine.explain.confidence.chip_rows`).
    """
    trust = _chip_trust(cat, sc)
    rows = []
    for h in sorted(cat.hardware.values(), key=lambda h: h.id):
        t = trust[h.id]
        rows.append(
            {
                "id": h.id,
                # an illustrative chip is said so once (its name may already say it)
                "name": h.name
                + (" (illustrative)" if h.illustrative and "illustrative" not in h.name.lower() else ""),
                "class": h.kind,
                "memory_type": h.memory_type,
                "tiers": " → ".join(
                    h.memory_type if n == "hbm" else n.upper() for n, _, _ in h.memory_tiers()
                )
                if h.tiered
                else None,
                "reconfig_s": h.reconfig_s,
                "reconfig_j": h.reconfig_j,
                "calibration": t["calibration"],
                "expected_error": t["expected_error"],
                "bf16_tflops": h.tflops.get("bf16"),
                "fp8_tflops": h.tflops.get("fp8"),
                "fp4_tflops": h.tflops.get("fp4"),
                "memory_gb": h.memory_gb,
                "memory_tb_s": h.memory_tb_s,
                "sram_gb": h.sram_gb,
                "sram_tb_s": h.sram_tb_s,
                "ddr_gb": h.ddr_gb,
                "ddr_tb_s": h.ddr_tb_s,
                "scale_up_gb_s": h.scale_up_gb_s,
                "scale_up_domain": h.scale_up_domain,
                # every figure the Sources tab cites is shown (a review found six cited and never shown)
                "scale_out_gb_s": h.scale_out_gb_s,
                "pcie_gb_s": h.pcie_gb_s,
                "allreduce_latency_us": h.allreduce_latency_us,
                "tdp_w": h.tdp_w,
                "idle_w": h.idle_w,
                "clock_ghz": h.clock_ghz,
                "usd_per_hour": h.usd_per_hour,
                "capex_usd": h.capex_usd,
                "server_capex_usd": h.server_capex_usd,
                "eta_compute": t["eta_compute"],
                "eta_bandwidth": t["eta_bandwidth"],
                "calibration_rule": t["calibration_rule"],
                "spec_source": _sources(h.sources, SPEC_SOURCES),
                "price_source": h.sources.get("usd_per_hour", ""),
                "capex_source": h.sources.get("capex_usd", ""),
            }
        )
    return pd.DataFrame(rows)


SPEC_SOURCES = {"tflops": "TFLOP/s", "memory_gb": "memory", "memory_tb_s": "bandwidth"}
"""The Compute and memory tab's figures, by their `sources` key: the tab showed the TFLOP/s's source
alone, the memory's and bandwidth's in no view (a review)."""


def _sources(sources: Mapping[str, str], keys: Mapping[str, str]) -> str:
    """'TFLOP/s: <source> · memory: <source>' for the figures of `keys` that have a source, a source
    shared by several said once with their names together."""
    by: dict[str, list[str]] = {}
    for key, label in keys.items():
        if text := sources.get(key, ""):
            by.setdefault(text, []).append(label)
    return " · ".join(f"{', '.join(labels)}: {text}" for text, labels in by.items())


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
