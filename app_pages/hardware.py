"""Hardware catalog: every chip with its specs and sources, the roofline of the model, custom chips."""

import streamlit as st

from engine.costmodel import STACK_NAMES, UNHIDDEN_FRACTION
from engine.scenario import scenario_catalog
from ui import custom_chip, hardware, layout, observe, state, tables

layout.page(
    "Hardware catalog",
    "Dense peak numbers per chip with their sources. Prices: a few are dated on-demand quotes, most the "
    "catalog's assumptions, each saying why (Prices tab); a run billed at one says so. "
    "Illustrative chips (and your own) are design sketches, not products.",
)
sc = state.scenario()
cat = scenario_catalog(sc)

st.subheader("Model served")
hardware.model_picker(sc, cat)

st.subheader(
    "Where prefill and decode sit",
    help="Arithmetic intensity of each phase against the chip's achievable "
    "compute and bandwidth (the lines): points left of the ridge are bandwidth-bound, right of it "
    "compute-bound, as far as the matmuls go; the bound named beside a point is the longer of its "
    "compute and memory time, which also counts weights in a slower memory tier, attention at BF16 "
    "and a MoE's slower experts. Each point sits at the FLOP/s its iteration reaches: near the ridge, under the line, "
    f"since compute and memory hide each other only in part ({UNHIDDEN_FRACTION:g} of the shorter time "
    "stays). A MoE "
    "model's points sit lower still: its routed experts run at a fitted share of the line's rates "
    "(docs/calibration.md).",
)
hardware.roofline_section(sc, cat)

st.subheader(
    f"Accelerators ({len(cat.hardware)})",
    help="Calibration: whether the chip has a profile fitted to "
    f"measurements under the scenario's serving stack ({STACK_NAMES[sc.deployment.stack]}), or runs with one "
    "chosen by a rule (same silicon, another stack, conservative transfer), with the error to expect.",
)
hardware.catalog_tables(cat, sc, tables.HARDWARE)

st.subheader(
    "Your own chip",
    help="Saved into this scenario's custom_hardware, so it travels with the share link and the TOML.",
)
custom_chip.custom_chip_form(sc, cat)

st.subheader(
    "Calibrate from your benchmark",
    help="Upload a vllm bench serve, SGLang bench_serving or AIPerf result (or a vLLM /metrics scrape): "
    "replay it on the chip you name, fit the chip's profile to it, keep the chip (docs/calibration.md).",
)
observe.section()

st.subheader(f"Models ({len(cat.models)})")
st.dataframe(hardware.model_frame(cat), hide_index=True, width="stretch", column_config=tables.MODELS)
