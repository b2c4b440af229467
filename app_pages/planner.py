"""Planner: the cheapest deployment that meets every SLO at a target load, and the Pareto frontier;
then the specialisation risk of a portfolio over a schedule of model changes (`ui.lifetime`)."""

import streamlit as st

from ui import layout, lifetime
from ui.planner import planner_page, take_link

take_link()
layout.page(
    "Planner",
    "Searches colocated and disaggregated deployments over the chips and layouts you allow (tensor, pipeline and, "
    "for MoE models, expert parallelism): the cost model prunes what cannot work and bounds the rest, the "
    "simulator confirms the finalists.",
    live=False,
)
planner_page()
st.divider()
lifetime.section()
