"""Which layer decided it, on the Results page: each layer switched alone, as a tornado chart.

A button runs `engine.explain.layer_view` (the scenario and each variant through the one cached
simulate wrapper, so a variant already simulated elsewhere is not run again; the view itself is
cached by the scenario's JSON), since it costs a simulation per layer. It draws two panels of
horizontal bars, the change in cost per request and in SLO attainment per layer, largest effect at
the top, with the sentence that names the layer that matters most. It stays on screen while the
scenario is unchanged.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from engine import explain as ex
from engine.core import ScenarioError
from engine.scenario import Scenario
from ui import export, sim
from ui.text import plain

SHOWN_KEY = "fg:layers"
"""Session key: the JSON of the scenario whose layer view is on screen."""

HELP = (
    "Runs this scenario again once per layer, each time with one layer's choice switched to its "
    "alternative and everything else kept, on the same requests: model precision (16-bit weights to "
    "fp8, narrower ones to bf16), chips (the next chip up of the same class by memory bandwidth), "
    "scheduling policy (FCFS to strict priority or shortest-prompt-first, others to FCFS) and serving "
    "stack (vLLM and SGLang swap; on Ascend vLLM-Ascend and MindIE). Bars: the change against this run."
)
CHEAPER, DEARER = "#2e7d32", "#c62828"


@st.cache_data(max_entries=8, show_spinner=False)
def _view(scenario_json: str) -> ex.LayerView:
    return ex.layer_view(Scenario.model_validate_json(scenario_json), run=sim.cached)


def tornado(view: ex.LayerView) -> go.Figure:
    """Change in cost per request (%) and in SLO attainment (points) per layer, largest effect on top."""
    ran = [e for e in view.effects if not e.refused]
    labels = [  # plotly draws bottom-up
        f"{e.layer}: {e.choice} → {e.alternative}"
        + (" (calibration basis changes)" if e.basis_change else "")
        for e in ran
    ][::-1]
    cost = [100 * (e.d_cost_share or 0.0) for e in ran][::-1]
    slo = [100 * (e.d_slo_attainment or 0.0) for e in ran][::-1]
    fig = make_subplots(
        rows=1,
        cols=2,
        shared_yaxes=True,
        horizontal_spacing=0.1,  # at 0.04 the cost axis's last tick ran into the SLO axis's first
        subplot_titles=("Cost per request, % change", "SLO attainment, points"),
    )
    fig.add_trace(
        go.Bar(
            y=labels,
            x=cost,
            orientation="h",
            marker={"color": [CHEAPER if c <= 0 else DEARER for c in cost]},
            hovertemplate="%{y}: cost per request %{x:+.1f}%<extra></extra>",
            texttemplate="%{x:+.1f}%",  # a small effect is a bar too thin to read without its number
            textposition="auto",
            textangle=0,  # never turned to fit a thin bar ('+11.4%' stood rotated inside one: a review)
            name="cost",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Bar(
            y=labels,
            x=slo,
            orientation="h",
            marker={"color": [CHEAPER if v >= 0 else DEARER for v in slo]},
            hovertemplate="%{y}: SLO attainment %{x:+.1f} points<extra></extra>",
            texttemplate="%{x:+.1f}",
            textposition="auto",
            textangle=0,
            name="SLO",
        ),
        row=1,
        col=2,
    )
    _zero_labels(fig, labels, cost, "+0.0%", 1)
    _zero_labels(fig, labels, slo, "+0.0", 2)
    fig.update_layout(
        height=120 + 50 * max(len(ran), 1),
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
        showlegend=False,
        title={"text": "Which layer decided it", "x": 0, "xanchor": "left", "font": {"size": 15}},
    )
    fig.update_xaxes(zeroline=True, zerolinewidth=1, zerolinecolor="#888888")
    # room beyond the bars on both sides of zero: a small bar's number sits outside it, and clipped at
    # the plot's edge ("+0." of +0.4) or ran into the layer names
    for col, values in ((1, cost), (2, slo)):
        lo, hi = min([0.0, *values]), max([0.0, *values])
        pad = 0.3 * max(hi - lo, 1.0)
        fig.update_xaxes(range=[lo - pad, hi + pad], row=1, col=col)
    return fig


def _zero_labels(fig: go.Figure, labels: list[str], values: list[float], text: str, col: int) -> None:
    """The number of each row whose bar has no width (a change of exactly zero): plotly draws no text
    for it, so a zero row stood blank beside a near-zero one's '+0.0%' (a note)."""
    rows = [y for y, v in zip(labels, values, strict=True) if v == 0.0]
    if rows:
        fig.add_trace(
            go.Scatter(
                y=rows,
                x=[0.0] * len(rows),
                mode="text",
                text=[text] * len(rows),
                textposition="middle right",
                hoverinfo="skip",
                showlegend=False,
            ),
            row=1,
            col=col,
        )


def layer_panel(scenario: Scenario) -> None:
    """A "Which layer decided it?" button; once pressed, the tornado, its sentence and the refused switches."""
    key = scenario.model_dump_json()
    if st.button(
        "Which layer decided it?", icon=":material/stacked_bar_chart:", help=HELP, key="fg:layers:run"
    ):
        st.session_state[SHOWN_KEY] = key
    if st.session_state.get(SHOWN_KEY) != key:
        return
    try:
        with st.spinner("Switching each layer in turn, on the same requests…", show_time=True):
            view = _view(key)
    except ScenarioError as exc:
        st.error(f"The layer view cannot run: {plain(exc)}", icon=":material/error:")
        return
    st.markdown(plain(view.sentence))
    if any(not e.refused for e in view.effects):
        export.chart(tornado(view), scenario, "layers", title="Which layer decided it")
    if said := view.saturation_note():
        st.warning(plain(said) + ".", icon=":material/trending_up:")
    for e in view.effects:
        if e.saturation_note() and not e.refused:
            st.caption(f"{plain(e.layer)}: {plain(e.saturation_note())}.")
        if e.basis_change and not e.refused:
            st.caption(
                f"{plain(e.layer)}: {plain(e.choice)} → {plain(e.alternative)} changes the calibration basis "
                f"({plain(e.basis_change)}), so part of its effect is the model's assumption, not the layer."
            )
        if e.refused:
            st.caption(
                f"{plain(e.layer)}: {plain(e.choice)} → {plain(e.alternative)} was refused: {plain(e.refused)}"
                + ("" if e.refused.rstrip().endswith((".", ")", "!", "?")) else ".")
            )
