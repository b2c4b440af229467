"""Fengong's dashboard: routes to one thin page per screen (st.navigation)."""

import streamlit as st

st.set_page_config(page_title="Fengong: LLM serving lab", page_icon="⚙️", layout="wide")

PAGES = [
    st.Page("pages/catalog.py", title="Hardware & models", icon="🧮", url_path="catalog", default=True),
]

st.navigation(PAGES).run()
