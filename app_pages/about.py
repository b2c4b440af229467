"""About & validation: what the model is, how well it predicts measurements, your own calibration, hard limits."""

import numpy as np
import pandas as pd
import streamlit as st

from engine import explain as ex
from engine.calibration import experts_stacks, experts_terms
from engine.catalog import load_catalog
from engine.core import BOUNDS_TABLE
from engine.costmodel import UNHIDDEN_FRACTION as U
from engine.serving import ENGINE_VERSION
from ui import calibration, export, hardware_charts, layout, state
from ui.tables import PERCENT_STEP

layout.page("About & validation", live=False)
_TERMS = experts_terms()
_EXPERTS = (
    f"A MoE model's routed experts are fitted to the MoE reference rows: they stream their weights at "
    f"{_TERMS['eta_experts']:.2f} and compute at {_TERMS['eta_experts_compute']:.2f} of the dense layers' rates, "
    f"and each MoE layer adds {_TERMS['moe_layer_ms']:.3g} ms to every step. These are the shared terms, which a "
    "stack without terms of its own runs with; a stack has its own where two sources allow "
    f"({', '.join(ex.stack_name(s) for s in experts_stacks()) or 'none yet'}), and a chip vendor its own "
    "from one: a run's calibration line on Results names the terms its pools run with (docs/calibration.md)."
    if {"eta_experts", "eta_experts_compute", "moe_layer_ms"} <= _TERMS.keys()
    else "A MoE model's routed experts count as dense layers (the MoE terms are not yet fitted)."
)
st.markdown(
    f"""
Fengong (分工, *division of labour*) simulates LLM serving: a workload of request classes on a deployment of
chips, colocated or split into prefill and decode pools. One engine iteration is a roofline:
`t = max(c, m) + {U:g}·min(c, m) + t_tp + t_fixed`, with compute time `c = FLOPs / (tp·F·η_F) − s·matmul FLOPs`
and memory time `m = bytes / (tp·B·η_B)`: F is the BF16 peak, s the seconds FP8 or FP4 weights save per matmul FLOP
(only the matmuls speed up, by the GEMM speed-up measured on an H200), and {U:g} the share of the shorter time
the longer does not hide (measured on the same H200's GEMMs). {_EXPERTS} A discrete-event model of continuous
batching turns the iterations into latencies, utilisation and cost. Engine version **{ENGINE_VERSION}**.
Definitions of every number: `docs/metrics.md`; the cost model's assumptions: `docs/cost-model.md`.
"""
)


@st.cache_data(show_spinner="Predicting the reference measurements…")
def _validation() -> pd.DataFrame | None:
    return ex.validation_table(load_catalog())


st.subheader(
    "Predicted against measured",
    help="Each point is a public measurement (Splitwise's prefill and decode "
    "timings, TensorRT-LLM's published throughputs, vLLM results from AMD, OCI, dstack and the vLLM project) "
    "predicted by the cost model with the chip's profile for that stack, in sample.",
)
tab = _validation()
if tab is None:
    st.info("The reference measurements (data/reference/calibration.csv) are missing from this installation.")
else:
    dense, moe = tab[tab["fitted"]], tab[~tab["fitted"]]
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Dense points (fitted)", len(dense))
    c2.metric("Median |error|, in sample", f"{float(dense['abs_error'].median()):.1%}")
    c3.metric("p90 |error|, in sample", f"{float(dense['abs_error'].quantile(0.9)):.1%}")
    if len(moe):
        c4.metric(
            "MoE: median |error|",
            f"{float(moe['abs_error'].median()):.0%}",
            help="DeepSeek and Qwen3 rows: predicted with the dense profiles and the MoE terms of their own "
            "(the routed experts' streaming and compute rates against the dense layers', a cost per MoE layer, "
            "a first-token cost), fitted to these rows. Held out by source they give the error bar MoE results carry.",
        )
    export.chart(hardware_charts.validation(tab), state.scenario(), "validation", title="validation")
    errors = ex.expected_error_frame()
    if not errors.empty:
        st.markdown(
            "**Held out, the error is mostly larger.** Refitted with each point's source, chip or chip family left "
            "out, "
            "the predictions miss by these medians, by the rule that then gave the chip its profile (the MoE row: "
            "MoE points with their source left out, the MoE terms refitted too), each rule at least as far as the "
            "fitted chips miss, widened where the simulator's reruns of online serving showed a fit missing by more "
            "(the H100 under vLLM V0); a figure whose in-sample miss was already as large can read alike or a "
            "little smaller (the MoE TTFT: its terms are fitted to throughput and TPOT, not to TTFT). They "
            "summarise each rule in one symmetric figure; the bands printed beside "
            "a figure are not these but the 16th to 84th percentile of the held-out misses, one-sided where a "
            "chip's are, and wider on a chip without measurements of its own (the Hardware page lists every "
            "chip's under each stack). `make validate` "
            "prints the whole cross-validation and each band's coverage; `docs/validation.md` has the tables."
        )
        pct = st.column_config.NumberColumn(format="percent", step=PERCENT_STEP)
        st.dataframe(
            errors,
            hide_index=True,
            column_config={
                "throughput": pct,
                "ttft": st.column_config.NumberColumn("TTFT", format="percent", step=PERCENT_STEP),
                "tpot": st.column_config.NumberColumn("TPOT", format="percent", step=PERCENT_STEP),
                "energy": pct,
            },
        )
    by_kind = (
        tab.assign(models=np.where(tab["fitted"], "dense (fitted)", "MoE (terms fitted)"))
        .groupby(["models", "kind"])["abs_error"]
        .agg(["count", "median", "max"])
        .reset_index()
    )
    st.dataframe(
        by_kind,
        hide_index=True,
        column_config={
            "median": st.column_config.NumberColumn("median |error|", format="percent", step=PERCENT_STEP),
            "max": st.column_config.NumberColumn("worst |error|", format="percent", step=PERCENT_STEP),
        },
    )
    st.dataframe(
        # rounded to what it shows (+ 0.0: a miss under 0.05% read '-0.0%'), |error| from the same
        # rounding (each rounded apart, a row read 'error 19.7%' beside '|error| 19.6%': a review)
        tab.assign(error=(shown := tab["error"].astype(float).round(3) + 0.0), abs_error=shown.abs()),
        hide_index=True,
        width="stretch",
        column_config={
            "error": st.column_config.NumberColumn("error", format="percent", step=PERCENT_STEP),
            "abs_error": st.column_config.NumberColumn("|error|", format="percent", step=PERCENT_STEP),
            "measured": st.column_config.NumberColumn(format="%.1f"),
            "predicted": st.column_config.NumberColumn(format="%.1f"),
        },
    )

st.subheader(
    "Recalibrate from your own measurements",
    anchor="recalibrate",
    help="Fits the three factors of one chip's calibration profile to your measured timings, "
    "and saves the result as a catalog entry of your own.",
)
calibration.section()

st.subheader(
    "Hard limits",
    help="Enforced whenever a scenario is validated, whatever its origin: preset, file, share link or upload.",
)
st.dataframe(
    pd.DataFrame(BOUNDS_TABLE, columns=["limit", "value", "unit"]),
    hide_index=True,
    height="content",
    column_config={"value": st.column_config.NumberColumn(format="localized")},
)
