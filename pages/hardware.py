"""Hardware catalog: every chip with its specs and sources, the roofline of the model, custom chips."""

import streamlit as st

from engine.resolve import scenario_catalog
from ui import hardware, layout, state
from ui.catalog import hardware_frame, model_frame

layout.page(
    "Hardware catalog",
    "Dense peak numbers per chip with their sources; prices are dated on-demand snapshots. "
    "Illustrative chips (and your own) are design sketches, not products.",
)
sc = state.scenario()
cat = scenario_catalog(sc)

st.subheader("Model served")
hardware.model_picker(cat)

st.subheader("Where prefill and decode sit", help="Arithmetic intensity of each phase against the chip's achievable "
             "compute and bandwidth: points left of the ridge are bandwidth-bound, right of it compute-bound.")  # fmt: skip
hardware.roofline_section(sc, cat)

st.subheader(f"Accelerators ({len(cat.hardware)})")
st.dataframe(
    hardware_frame(cat), hide_index=True, width="stretch",
    column_config={
        "bf16_tflops": st.column_config.NumberColumn("BF16 TFLOP/s", help="Dense peak, no sparsity."),
        "fp8_tflops": st.column_config.NumberColumn("FP8 TFLOP/s", help="Dense peak, no sparsity."),
        "fp4_tflops": st.column_config.NumberColumn("FP4 TFLOP/s", help="Dense peak, no sparsity."),
        "memory_gb": st.column_config.NumberColumn("HBM (GB)"),
        "memory_tb_s": st.column_config.NumberColumn("HBM (TB/s)"),
        "scale_up_gb_s": st.column_config.NumberColumn("Scale-up (GB/s)", help="NVLink-class bandwidth per chip."),
        "tdp_w": st.column_config.NumberColumn("TDP (W)"),
        "usd_per_hour": st.column_config.NumberColumn("$ / chip-hour", format="%.2f"),
        "eta_compute": st.column_config.NumberColumn("η_F", help="Achievable fraction of peak FLOP/s (default profile)."),
        "eta_bandwidth": st.column_config.NumberColumn("η_B", help="Achievable fraction of peak HBM bandwidth (default profile)."),
        "spec_source": st.column_config.TextColumn("Spec source", width="medium"),
        "price_source": st.column_config.TextColumn("Price source", width="medium"),
    },
)  # fmt: skip

st.subheader(
    "Your own chip",
    help="Saved into this scenario's custom_hardware, so it travels with the share link and the TOML.",
)
hardware.custom_chip_form(sc, cat)

st.subheader(f"Models ({len(cat.models)})")
st.dataframe(model_frame(cat), hide_index=True, width="stretch")
