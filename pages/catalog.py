"""Hardware and model catalogs: every chip and model the engine knows, with sources."""

import streamlit as st

from engine.catalog import load_catalog
from ui.catalog import hardware_frame, model_frame

st.title("Hardware & models")
cat = load_catalog()
st.caption(
    "Dense peak numbers per chip with their sources; prices are dated on-demand snapshots "
    "(override them in a custom entry). Illustrative chips are design sketches, not products."
)
st.subheader(f"Accelerators ({len(cat.hardware)})")
st.dataframe(hardware_frame(cat), hide_index=True, width="stretch")
st.subheader(f"Models ({len(cat.models)})")
st.dataframe(model_frame(cat), hide_index=True, width="stretch")
