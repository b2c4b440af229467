"""Column labels, units and help of the tables the pages show (st.column_config)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from engine import explain as ex
from engine.explain import change_text, compare_view, minus  # noqa: F401  (their home: the engine's)
from ui.tail_table import (  # noqa: F401  (their home; imported from here by the pages)
    BAR_COLOR,
    NEVER_ANSWERED,
    PERCENT_STEP,
    SLO_TAIL,
    fraction,
    holds_pct,
    in_seconds,
    slo_tail_columns,
    stepped,
    tail_view,
    unanswered,
)

cc = st.column_config

UTILIZATION: dict[str, Any] = {
    "pool": cc.TextColumn("pool"),
    "compute": fraction("compute", "Achieved over peak FLOP/s over the window (MFU-like).", "small"),
    "bandwidth": fraction("bandwidth", "Achieved over peak HBM bytes/s over the window (MBU-like).", "small"),
    "busy": fraction("busy", "Share of time an instance runs an iteration.", "small"),
    "kv_memory": fraction(
        "KV memory",
        "KV tokens the requests hold over KV capacity, time-averaged (a block several read from the HBM "
        "cache counts once).",
        "small",
    ),
    "bill_share": fraction(
        "share of bill",
        "The pool's chips' share of the whole bill (rent, or capital, hosting and energy).",
        "small",
    ),
}

COST_PARTS: dict[str, Any] = {
    "part": cc.TextColumn("part"),
    "kind": cc.TextColumn("kind", help="Owned chips: capital, hosting, energy (and cache capacity)."),
    # dollars per request as the headline reads them ($0.000271, `cost_view`): one unit for one figure a page
    "usd_per_request": cc.TextColumn(
        "$ / request", alignment="right", help="The part's share of the cost per request, in dollars."
    ),
    "usd_per_million_requests": None,
    "usd_per_million_output_tokens": cc.NumberColumn("$ / 1M output tokens", format="$%.3f"),
    "share": fraction("share of bill"),
}

COMPARE: dict[str, Any] = {
    # widths for the longest entries ('Cost per 1M output tokens', '0.0005415', '+0.00005255')
    "figure": cc.TextColumn("figure", width=200),
    # numbers shown as `compare_view` writes them (`compare_styled`), so a click on a header sorts by value
    "a": cc.NumberColumn("A", width=100),
    "b": cc.NumberColumn("B", width=100),
    "change": cc.NumberColumn("B − A", width=110),
    "change_pct": cc.NumberColumn(
        "change", help="Relative change from A to B; a share's (SLO attainment, cache hit rate) in points."
    ),
    "better": cc.TextColumn(
        "better",
        width=150,  # 'grows with run length' and 'other targets' whole (at 100 px the first read 'grows with run l')
        help="Which scenario does better on this figure (same: within 0.5%; other targets: A's and B's classes carry "
        "different SLO targets; 'A misses its SLO' on a bill: A is cheaper, but misses the SLO that B meets).",
    ),
    "band": cc.TextColumn(
        "band, A and B together",
        help="Where about two in three real deployments land, A's and B's together (the lower fall and the "
        "higher rise). Once each side's run has been re-simulated at its chips' band edges (the cards above), "
        "the figures that spread moves (TTFT, TPOT and E2E p99, SLO attainment, goodput, throughput, costs per "
        "request and per million tokens) carry it, as the cards do; the others, and all of them before, "
        "their kind's band from the pools' calibration. – where none is shown: a price ($/h) and the counts "
        "carry none, SLO attainment and goodput none but their runs' spread (none while it crosses a cliff: the "
        "note under the cards says so), and a kind whose coverage was never measured has none. "
        + ex.e2e_band_note(),
    ),
}


def rows_height(rows: int) -> int:
    """Pixels a dataframe of `rows` rows needs to show them all with its header (35 px a row)."""
    return 35 * (rows + 1) + 3


def cost_view(frame: pd.DataFrame) -> pd.DataFrame:
    """A cost-by-part (or by-kind) table for display: dollars per request as text, every part to the
    largest part's places (`usd_decimals`: $0.000271, $0.000270), a part too small for them as
    '< $0.000001' and none as '$0': one part at its own places ($0.0000000982) widened the column
    until the share beside it lost its '%'."""
    # a window without a completed request has no cost per request (a TypeError took the page down: a review)
    values = [math.nan if v is None else float(v) for v in frame["usd_per_request"]]
    finite = [v for v in values if math.isfinite(v)]
    places = ex.usd_decimals(max(finite)) if finite and max(finite) > 0 else 5
    step = 10.0**-places

    def text(v: float) -> str:
        if not math.isfinite(v):
            return "–"
        if v == 0:
            return "$0"
        return f"< ${step:.{places}f}" if 0 < v < step / 2 else f"${v:,.{places}f}"

    # a part in words ("kv transfer"), as the advisor says it
    named = {"part": frame["part"].astype(str).str.replace("_", " ")} if "part" in frame else {}
    return frame.assign(usd_per_request=[text(v) for v in values], **named)


def changes(table: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """(each figure's change: relative in percent, or a share's in points; whether it is in points)
    of a compare table (`engine.explain.compare_table.compare`)."""
    points = table["change_points"] if "change_points" in table else pd.Series(np.nan, index=table.index)
    in_points = points.notna()
    return table["change_pct"].astype(float).where(~in_points, points.astype(float)), in_points


COMPARE_NUMBERS = ("a", "b", "change", "change_pct", "a_ci95", "b_ci95")
"""The compare table's columns of numbers (`compare_styled`)."""


def compare_styled(table: pd.DataFrame) -> Any:
    """A compare table for display as a pandas Styler: each figure's number under the text
    `compare_view` writes for it, so a cell reads '23,132' or '99.58%' and a click on a column's
    header sorts by the numbers (as text, 23,132 sorted before 3,740 and '-5.0 pts' among the percents:
    a review). A share's figures sort in percent, its change in points, as they read."""
    view = compare_view(table).reset_index(drop=True)
    if "better" in view:  # the verdict beside its figure: at 1,100 px the columns after B were off-screen
        view = view[["figure", "better", *(c for c in view if c not in ("figure", "better"))]]
    if "change" in view:  # B − A last: the relative change and the band in view at 1,280 px (a review)
        view = view[[*(c for c in view if c != "change"), "change"]]
    # the unit shown in the figure's name (the cell keeps the name): a column of its own sat off the screen
    units = dict(zip(view["figure"], view.pop("unit"), strict=True)) if "unit" in view else {}
    share = (table["unit"] == "fraction").to_numpy()
    numbers = view.copy()
    for col in (c for c in COMPARE_NUMBERS if c in view):
        raw = changes(table)[0] if col == "change_pct" else table[col]
        values = pd.to_numeric(pd.Series(raw).reset_index(drop=True), errors="coerce").astype(float)
        if col != "change_pct":
            values = values.where(~share, values * 100.0)
        numbers[col] = values.where(view[col].notna())  # a cell without text has no number either
    styler = numbers.style.format(lambda f: ex.with_unit(f, units[f]) if f in units else f, subset=["figure"])
    for col in (c for c in COMPARE_NUMBERS if c in view):
        for i, text in enumerate(view[col]):
            styler = styler.format(
                lambda _v, t=text: "–" if t is None or t != t else t, subset=pd.IndexSlice[[i], [col]]
            )
    if "band" in view:  # a figure without a band reads '–' (its None drew as the text 'nan': a review)
        styler = styler.format(lambda v: "–" if v is None or v != v or v == "" else v, subset=["band"])
    return styler


def by_side(sides: Sequence[tuple[str, pd.DataFrame]], column: str) -> pd.DataFrame:
    """Two runs' tables as one, each row's `column` led by its side's label ('A prefill'): side by side,
    in half the page each, their last columns sat past the right edge at 1,100 px (a review)."""
    frames = [f.assign(**{column: [f"{label} {v}" for v in f[column]]}) for label, f in sides if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


HARDWARE: dict[str, Any] = {
    # pinned, so it stays beside the columns scrolled to (the Chips tab sets it wide enough for the longest id)
    "id": cc.TextColumn("id", pinned=True),
    "name": cc.TextColumn("Name"),
    "bf16_tflops": cc.NumberColumn("BF16 TFLOP/s", help="Dense peak, no sparsity."),
    "fp8_tflops": cc.NumberColumn("FP8 TFLOP/s", help="Dense peak, no sparsity."),
    "fp4_tflops": cc.NumberColumn("FP4 TFLOP/s", help="Dense peak, no sparsity."),
    "class": cc.TextColumn("Class", width=84, help="GPU, ASIC, NPU, TPU, SoC, CGRA, FPGA or Dataflow."),
    "memory_type": cc.TextColumn(
        "Memory",
        width=72,
        help="What the main memory is: HBM, SRAM (Groq's LPU has nothing else), GDDR, LPDDR.",
    ),
    "tiers": cc.TextColumn(
        "Memory tiers", help="Where a chip has more than one memory: the order weights and KV fill them."
    ),
    "reconfig_s": cc.NumberColumn(
        "Reconfigure (s)", help="Loading a design: charged at start and at a role switch."
    ),
    "reconfig_j": cc.NumberColumn("Reconfigure (J)", help="The energy one reconfiguration draws."),
    "memory_gb": cc.NumberColumn(
        "Memory (GiB)",
        help="Main memory per chip (its type under Memory), as the vendor states it, which is GiB: an H100's "
        "80 GB is 85.9 GB of 10⁹ bytes. Usable and weights figures elsewhere are GiB too (0.9 usable: 72 GiB).",
    ),
    "memory_tb_s": cc.NumberColumn("Memory (TB/s)", help="Main memory bandwidth per chip."),
    "sram_gb": cc.NumberColumn(
        "SRAM tier (GiB)", help="On-chip SRAM that holds weights and KV before the main memory."
    ),
    "sram_tb_s": cc.NumberColumn("SRAM tier (TB/s)"),
    "ddr_gb": cc.NumberColumn(
        "DDR tier (GiB)", help="Memory read after the main memory (SambaNova's third tier)."
    ),
    "ddr_tb_s": cc.NumberColumn("DDR tier (TB/s)"),
    "scale_up_gb_s": cc.NumberColumn("Scale-up (GB/s)", help="NVLink-class bandwidth per chip."),
    "scale_up_domain": cc.NumberColumn(
        "Scale-up domain", help="Chips one scale-up fabric joins (8 in an HGX node, 72 in an NVL72 rack)."
    ),
    "scale_out_gb_s": cc.NumberColumn(
        "Scale-out (GB/s)", help="The chip's NIC to other machines (a KV hand-off's default link)."
    ),
    "pcie_gb_s": cc.NumberColumn("PCIe (GB/s)", help="To host memory (a host KV cache's link)."),
    "allreduce_latency_us": cc.NumberColumn("All-reduce (µs)", help="Fixed latency of one all-reduce step."),
    "tdp_w": cc.NumberColumn("TDP (W)", format="localized"),  # 23000 beside 15,000 (a browser review)
    "idle_w": cc.NumberColumn(
        "Idle (W)", format="localized", help="Power drawn idle: what a lightly loaded deployment pays."
    ),
    "clock_ghz": cc.NumberColumn("Clock (GHz)", help="Boost clock, where a power cap lowers it."),
    "usd_per_hour": cc.NumberColumn("$ / chip-hour", format="%.2f"),
    "capex_usd": cc.NumberColumn(
        "Purchase ($)", format="localized", help="One chip's price, for owned chips."
    ),
    "server_capex_usd": cc.NumberColumn(
        "Server share ($)", format="localized", help="The chip's share of its server."
    ),
    "calibration": cc.TextColumn(
        "Calibration",
        width="large",  # its longest, 'uncalibrated: transfer from the fitted chips, none of its own', whole
        help="calibrated: a profile fitted to measurements of "
        "this chip under the scenario's serving stack; partly calibrated: so fitted, but a MoE "
        "model's experts run at terms fitted per serving stack and chip vendor, not per chip, or the fit misses the "
        "chip's own published results beyond the pooled band (its band is widened to hold them); "
        "uncalibrated: a profile chosen by a rule.",
    ),
    "expected_error": cc.TextColumn(
        "Expected error",
        width="large",  # both bands whole: 'throughput −35% to +78%, TPOT −30% to +15%'
        help="Cross-validated relative error of the "
        "figures simulated on this chip, by kind (docs/calibration.md).",
    ),
    "eta_compute": cc.NumberColumn(
        "η_F",
        help="Achievable fraction of the BF16 peak FLOP/s under the scenario's stack (FP8 and FP4 speed up only the matmuls).",
    ),
    "eta_bandwidth": cc.NumberColumn(
        "η_B", help="Achievable fraction of the main memory's peak bandwidth under the scenario's stack."
    ),
    "calibration_rule": cc.TextColumn(
        "Calibration rule", width="medium", help="Where the chip's profile comes from."
    ),
    # wide: a datasheet's name and its figures ('Versal HBM data sheet: 805/750/70…' read cut at medium)
    "spec_source": cc.TextColumn(
        "Spec source",
        width="large",
        help="Where each figure comes from (drag the column's edge to read a long one).",
    ),
    "price_source": cc.TextColumn("Price source", width="medium"),
    "capex_source": cc.TextColumn("Purchase price source", width="medium"),
}

MODELS: dict[str, Any] = {
    "params_b": cc.NumberColumn("Params (B)", help="Total parameters, billions."),
    "active_params_b": cc.NumberColumn("Active (B)", help="Parameters active per token, billions."),
    "layers": cc.NumberColumn("Layers"),
    "hidden": cc.NumberColumn("Hidden"),
    "kv_bytes_per_token_bf16": cc.NumberColumn(
        "KV B/token", format="localized", help="KV cache bytes per token at BF16 (FP8 KV: half)."
    ),
    "attention": cc.TextColumn("Attention"),
    "moe": cc.TextColumn("MoE", help="Experts routed per token / experts, or dense."),
    "source": cc.TextColumn("Source", width="medium"),
}
"""The models' table, its headers short enough to keep it on a 1440-pixel screen."""

CALIBRATION_FIT: dict[str, Any] = {
    "id": cc.TextColumn("id"),
    "point": cc.TextColumn("point"),
    "kind": cc.TextColumn("kind"),
    "unit": cc.TextColumn("unit"),
    "measured": cc.NumberColumn("measured", format="%.2f"),
    "predicted": cc.NumberColumn("predicted", format="%.2f", help="The cost model with the fitted profile."),
    "error": cc.NumberColumn("error", format="percent", step=PERCENT_STEP, help="predicted / measured − 1"),
}


_ERR = "Median held-out |error| of the figure (docs/validation.md); its band is in the planner's verdict."
PLAN_RUNS: dict[str, Any] = {
    "run": cc.NumberColumn("run", width=44),
    "mode": cc.TextColumn("mode"),
    "shape": cc.TextColumn(
        "shape", help="Prefill chip and layout -> decode chip and layout (one for colocated)."
    ),
    "split": cc.TextColumn(
        "split", help="Instances: P:D prefill to decode; 'N mixed' a colocated pool of N."
    ),
    "chips": cc.NumberColumn("chips"),
    "usd_per_hour": cc.NumberColumn("$/h", format="%.2f"),
    "passes": cc.CheckboxColumn(
        "passes", help="Meets the plan's rule (every class at its SLO percentile, or the attainment asked)."
    ),
    "queue": cc.TextColumn(
        "queue",
        width=170,  # 'grows, short by 3.4 req/s' whole ('no heac' at the default width: a browser review)
        help="grows: the run cannot keep up (short by that many req/s), so its latencies are floors set by the "
        "run's length and its costs are at saturation; no headroom: its queue never emptied (at capacity), so its "
        "figures may grow with a longer run; empty: it kept up.",
    ),
    "ttft_ok": cc.CheckboxColumn("TTFT ok"),
    "tpot_ok": cc.CheckboxColumn("TPOT ok"),
    "slo_attainment": cc.NumberColumn(
        "attainment",
        format="percent",
        step=PERCENT_STEP,
        # a passing run at 88.9% under a p90 SLO read as a wrong tick (a planner's review)
        help="Share of requests within both their targets at once. Under the percentile rule a run passes on "
        "each target at its percentile apart (TTFT p90 and TPOT p90), so it may pass below that share.",
    ),
    "goodput_rps": cc.NumberColumn("goodput (req/s)", format="%.2f"),
    "output_tokens_per_s": cc.NumberColumn("output tok/s", format="%.0f"),
    "output_tokens_per_s_per_chip": cc.NumberColumn("output tok/s/chip", format="%.0f"),
    "goodput_tokens_per_s_per_chip": cc.NumberColumn(
        "goodput tok/s/chip",
        format="%.0f",
        help="Output tokens per second per chip of requests within their SLO.",
    ),
    "tpot_ms_mean": cc.NumberColumn("TPOT mean", format="%.1f ms"),
    "tokens_per_s_per_user": cc.NumberColumn("tok/s/user", format="%.1f", help="1 / mean TPOT."),
    "ttft_ms_p90": cc.NumberColumn("TTFT p90", format="%,.0f ms"),
    "tpot_ms_p90": cc.NumberColumn("TPOT p90", format="%.1f ms"),
    "usd_per_million_output_tokens": cc.NumberColumn("$/1M output tok", format="%.3f"),
    "prefill_busy": cc.NumberColumn("prefill busy", format="percent", step=PERCENT_STEP),
    "decode_kv_memory": cc.NumberColumn(
        "decode KV", format="percent", step=PERCENT_STEP, help="Peak KV memory of the fullest decode pool."
    ),
    "calibration": cc.TextColumn("calibration", width="medium"),
    "calibrated": None,  # the text column says it
    "throughput_error": cc.NumberColumn(
        "median miss, throughput", format="percent", step=PERCENT_STEP, help=_ERR
    ),
    "ttft_error": cc.NumberColumn("median miss, TTFT", format="percent", step=PERCENT_STEP, help=_ERR),
    "tpot_error": cc.NumberColumn("median miss, TPOT", format="percent", step=PERCENT_STEP, help=_ERR),
    "chosen": cc.CheckboxColumn("chosen"),
    "on_cost_frontier": cc.CheckboxColumn("cost frontier"),
    "on_throughput_frontier": cc.CheckboxColumn("goodput frontier"),
}
"""The planner's runs table (`Plan.runs`), in the order shown (`shown`); the per-pool layout
columns are left out (the shape and split say them; `plan --json` keeps them)."""

PLAN_SHAPES: dict[str, Any] = {
    "mode": cc.TextColumn("mode"),
    "shape": PLAN_RUNS["shape"],
    "lower_bound_split": cc.TextColumn(
        "bound split", help="The cheapest P:D split the cost model's bounds allow."
    ),
    # numbers under their text (`shapes_view`): a click on the header sorts by value
    "lower_bound_usd_per_hour": cc.NumberColumn(
        "bound $/h", help="The cost model's lower bound on its bill ('–': pruned, none)."
    ),
    "status": cc.TextColumn("what became of it", width="medium"),
    "best_run": cc.NumberColumn(
        "best run", help="Its cheapest passing run, if one passed ('–': none did, or not run)."
    ),
    **{
        k: PLAN_RUNS[k] for k in ("calibration", "calibrated", "throughput_error", "ttft_error", "tpot_error")
    },
}
"""The planner's shapes table (`Plan.candidates`)."""


def shapes_view(candidates: pd.DataFrame) -> Any:
    """The planner's shapes (`Plan.candidates`) for display, as a Styler: a missing bound, split or run
    shown '–' over its number (NaN), so a click on a header still sorts by value, and a shape simulated
    without a passing run said so (the table read 'None' in three columns: a review)."""
    out = candidates.copy()
    if "lower_bound_split" in out:
        out["lower_bound_split"] = ["–" if v is None or v != v else v for v in out["lower_bound_split"]]
    if "lower_bound_usd_per_hour" in out:
        bound = pd.to_numeric(out["lower_bound_usd_per_hour"])
        out["lower_bound_usd_per_hour"] = bound.where(bound.abs() != math.inf)
    if "best_run" in out:
        runs = pd.to_numeric(out["best_run"])
        none = ~(runs >= 0)
        out["best_run"] = runs.where(~none)
        if "status" in out:
            out["status"] = [
                "simulated: none passed" if s == "simulated" and n else s
                for s, n in zip(out["status"], none, strict=True)
            ]
    shown = {c: f for c, f in (("lower_bound_usd_per_hour", "{:,.2f}"), ("best_run", "{:.0f}")) if c in out}
    return out.style.format(shown, na_rep="–")


def shapes_expander(candidates: pd.DataFrame) -> None:
    """The planner's "Every shape and what became of it" (`shapes_view`): keyed and stateful, so it stays
    open on the rerun after a plan; drawn also where nothing was simulated, whose note names it."""
    with st.expander(
        "Every shape and what became of it",
        icon=":material/filter_alt:",
        key="fg-plan-shapes",
        on_change="rerun",
    ):
        shapes = shapes_view(candidates)
        st.dataframe(
            shapes,
            hide_index=True,
            width="stretch",
            placeholder=MISSING,  # the Styler's '–' did not reach the browser, which read 'None' (a review)
            column_config=PLAN_SHAPES,
            column_order=shown(PLAN_SHAPES, shapes.data),
        )


MISSING = "–"
"""What a table's missing value reads (Streamlit's own is 'None')."""


def shown(config: dict[str, Any], frame: pd.DataFrame) -> list[str]:
    """The columns of `frame` a table config labels (not hides), in the config's order."""
    return [k for k, v in config.items() if v is not None and k in frame.columns]


ROOFLINE_POINTS: dict[str, Any] = {
    "chip": cc.TextColumn("chip"),
    "phase": cc.TextColumn("phase"),
    "label": cc.TextColumn("point", width=220),
    "intensity_flops_per_byte": cc.NumberColumn("intensity (FLOP/B)", format="%.1f"),
    "attainable_tflops": cc.NumberColumn(
        "attainable TFLOP/s per chip",
        format="%.0f",
        help="The achievable roof at this intensity, compute or bandwidth: the datasheet peak times the fraction "
        "the chip's calibration reaches under the serving stack, not the peak itself.",
    ),
    "achieved_tflops": cc.NumberColumn("achieved TFLOP/s per chip", format="%.0f"),
    "bound": cc.TextColumn("bound", width="medium"),  # ('bandwidt…' at the table's edge: a browser review)
    "time_ms": cc.NumberColumn("iteration", format="%.2f ms"),
    "tokens_per_s": cc.NumberColumn(
        "tokens/s", format="localized", help="The instance's: the iteration's tokens over its time."
    ),
}
"""The Hardware page's roofline points (`engine.explain.roofline_chips`) under their chart."""

ROOFLINE: dict[str, Any] = {
    "hardware": cc.TextColumn("chip"),
    "class": cc.TextColumn("class"),
    "tp": cc.NumberColumn(
        "TP",
        help="The tensor-parallel group, of 1, 2, 4 and 8 chips that hold the weights, that serves the phase at "
        "the lowest cost per token without missing its SLO unloaded (else the smallest).",
        width=40,
    ),
    "pp": cc.NumberColumn(
        "PP", width=40, help="Pipeline stages: 1 unless no TP of 1-8 chips holds the weights"
    ),
    "ridge_flops_per_byte": cc.NumberColumn(
        "ridge (FLOP/B)",
        format="%.0f",
        help="Arithmetic intensity where the chip's achievable compute and bandwidth meet.",
    ),
    "kv_capacity_tokens": cc.NumberColumn(
        "KV room (tokens)", format="localized", help="KV-cache tokens beside the weights and activations."
    ),
    "phase": cc.TextColumn("phase"),
    "batch": cc.NumberColumn(
        "batch",
        format="%d",
        help="Prefill: one prompt; decode: the largest batch that fits KV memory, the batch limit and the TPOT target.",
    ),
    # prefill's tokens are the mean prompt's, a fraction ("1,983.411")
    "tokens": cc.NumberColumn("tokens", format="%,.0f", help="Tokens the iteration processes."),
    "intensity_flops_per_byte": cc.NumberColumn("intensity (FLOP/B)", format="%.1f"),
    "attainable_tflops_per_chip": cc.NumberColumn("attainable TFLOP/s per chip", format="%.0f"),
    "achieved_tflops_per_chip": cc.NumberColumn("achieved TFLOP/s per chip", format="%.0f"),
    # wide enough for 'bandwidth' (they read 'com' and 'ban' even at 1,600 px: a browser review)
    "roofline_bound": cc.TextColumn("roofline bound", width="medium"),
    "binds": cc.TextColumn(
        "binds",
        help="What limits the phase: the longest of its step's parts (compute or bandwidth, a link, the fixed "
        "cost, the pipeline stages), or KV capacity where it caps the decode batch.",
        width="medium",
    ),
    "time_ms": cc.NumberColumn("iteration", format="%.1f ms"),
    "kv_transfer_ms": cc.NumberColumn(
        "KV transfer",
        format="%.1f ms",
        help="The prompt's KV over the chip's scale-out links; none for a chip without one (it cannot send "
        "KV to another machine's decode pool without a link set on the scenario).",
    ),
    "tokens_per_s_per_chip": cc.NumberColumn("tokens/s per chip", format="localized"),
    "usd_per_million_tokens": cc.NumberColumn(
        "$ / 1M tokens", format="$%.3f", help="A busy chip-hour under the cost basis."
    ),
    "batch_limit": cc.TextColumn("batch limit"),
    "note": cc.TextColumn("note"),
}
"""The Results page's 'Where each phase sits on each chip's roofline' (`engine.explain.rooflines`)."""

SPECIALISATION: dict[str, Any] = {
    "phase": cc.TextColumn("phase", pinned=True),
    "stable": cc.CheckboxColumn("stable", help="The model's computation stays the same long enough."),
    "model_change_months": cc.NumberColumn("months per model", format="%g"),
    "large": cc.CheckboxColumn("large", help="The phase keeps a large enough share of the chip-hours busy."),
    "chip_hours": cc.NumberColumn("busy chip-hours", format="%,.2f"),
    "chip_hours_share": cc.NumberColumn(
        "share of busy chip-hours",
        format="percent",
        step=PERCENT_STEP,
        help="The phase's share of the chip-hours the run kept busy (each pool's hours times its busy "
        "share): its work, not what was provisioned.",
    ),
    "bottleneck_clear": cc.CheckboxColumn("clear bottleneck", help="One resource binds most of its work."),
    "binding_resource": cc.TextColumn("binds"),
    "binding_share": cc.NumberColumn("share it binds", format="percent", step=PERCENT_STEP),
    "software_ready": cc.CheckboxColumn("software ready", help="Blank: not rated (no maturity stated)."),
    "maturity": cc.TextColumn("software"),
    "porting_usd": cc.NumberColumn("porting ($)", format="dollar"),
    "porting_share": cc.NumberColumn("porting share", format="percent", step=PERCENT_STEP),
    "verdict": cc.TextColumn("an ASIC is"),
    "text": None,
}
"""The Results page's 'Should a phase get its own chip?' (`engine.explain.specialisation`): readable
names, shares in percent (it showed the frame's own: model_change_months, 0.6411, None)."""

LIFETIME_PERIODS: dict[str, Any] = {
    "portfolio": cc.TextColumn("Portfolio"),
    "period": cc.TextColumn("Period", help="The model served over the period (the lifetime's schedule)."),
    "start_month": cc.NumberColumn("From month", format="%g"),
    "months": cc.NumberColumn("Months", format="%g"),
    "model": cc.TextColumn("Model"),
    "weights": cc.TextColumn("Weights"),
    "prefill_label": cc.TextColumn("Prefill chips", help="Layout and instances, re-sized each period."),
    "decode_label": cc.TextColumn(
        "Decode chips", help="The flexible chips that decode what the ASIC cannot."
    ),
    "dedicated_label": cc.TextColumn("Dedicated chips", help="The chips designed for the first model."),
    "dedicated": cc.TextColumn(
        "Dedicated fit", width="medium", help="How much of the decode the dedicated chips serve, or why none."
    ),
    "dedicated_chips_owned": cc.NumberColumn("Dedicated owned", format="%d"),
    "dedicated_chips_used": cc.NumberColumn("Dedicated used", format="%d"),
    "prefill_chips": cc.NumberColumn("Prefill chip count", format="%d"),
    "decode_chips": cc.NumberColumn("Decode chip count", format="%d"),
    "prefill_usd": cc.NumberColumn("Prefill ($)", format="dollar"),
    "decode_usd": cc.NumberColumn("Decode ($)", format="dollar"),
    "dedicated_capital_usd": cc.NumberColumn("Dedicated depreciation ($)", format="dollar"),
    "dedicated_running_usd": cc.NumberColumn("Dedicated hosting and energy ($)", format="dollar"),
    "written_off_usd": cc.NumberColumn("Written off ($)", format="dollar"),
    "total_usd": cc.NumberColumn("Period bill ($)", format="dollar"),
    "output_tokens": cc.NumberColumn("Output tokens", format="compact"),
    "usd_per_million_tokens": cc.NumberColumn("$ / M output tokens", format="$%.3f"),
}
"""The lifetime's periods table (`ui.lifetime`): readable names, money in dollars, in this order."""
