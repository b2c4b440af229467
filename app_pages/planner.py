"""Planner: the cheapest deployment that meets every SLO at a target load, and the Pareto frontier."""

from ui import layout
from ui.planner import planner_page

layout.page(
    "Planner",
    "Searches colocated and disaggregated deployments over the chips and layouts you allow (tensor, pipeline and, "
    "for MoE models, expert parallelism): the cost model prunes what cannot work and bounds the rest, the "
    "simulator confirms the finalists.",
    live=False,
)
planner_page()
