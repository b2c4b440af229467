"""Draw the predicted-vs-measured charts of docs/validation.md (docs/img/validation*.png).

Run: ``.venv/bin/python docs/make_validation_chart.py``. Reads data/reference and needs
kaleido with a Chromium (Debian's chromium package). Two panels: the shipped profiles (fit) and
the same points predicted with their source left out (leave one source out).
"""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engine.calibration import validation
from engine.catalog.entries import load_catalog

OUT = Path(__file__).resolve().parent / "img" / "validation.png"

SYMBOLS = {"throughput": "square", "ttft": "circle", "tpot": "diamond"}
COLORS = {"throughput": "#4c6ef5", "ttft": "#e8590c", "tpot": "#2b8a3e"}


def main() -> None:
    rep = validation.report(load_catalog())
    df = rep.predictions
    panels = (("fit", "shipped profiles (in sample)"), ("loso", "source left out (out of sample)"))
    fig = make_subplots(rows=1, cols=2, subplot_titles=[t for _, t in panels], horizontal_spacing=0.08)
    lo = float(df[["measured", "predicted"]].min().min()) * 0.7
    hi = float(df[["measured", "predicted"]].max().max()) * 1.4
    for col, (scheme, _) in enumerate(panels, start=1):
        sub = df[df["scheme"] == scheme]
        for figure, symbol in SYMBOLS.items():
            part = sub[sub["figure"] == figure]
            fig.add_trace(
                go.Scatter(
                    x=part["measured"], y=part["predicted"], mode="markers", name=figure,
                    legendgroup=figure, showlegend=col == 1, marker={"symbol": symbol, "size": 8, "opacity": 0.75, "color": COLORS[figure]},
                    text=part["id"] + " " + part["chip"] + " " + part["stack"] + " (" + part["basis"] + ")",
                    hovertemplate="%{text}<br>measured %{x:.4g}<br>predicted %{y:.4g}<extra></extra>",
                ),
                row=1, col=col,
            )  # fmt: skip
        for factor, dash in ((1.0, "solid"), (1.35, "dot"), (1 / 1.35, "dot")):
            fig.add_trace(
                go.Scatter(
                    x=[lo, hi], y=[lo * factor, hi * factor], mode="lines", showlegend=col == 1 and factor == 1.0,
                    name="exact (dotted: ±35%)", line={"color": "grey", "dash": dash, "width": 1},
                ),
                row=1, col=col,
            )  # fmt: skip
        fig.update_xaxes(type="log", title="measured (ms; tokens/s)", row=1, col=col)
        fig.update_yaxes(type="log", title="predicted" if col == 1 else None, row=1, col=col)
    h = rep.headline
    fig.update_layout(
        title=(
            f"Cost model vs {int(h['fit']['n'])} public measurements: median |error| {h['fit']['median']:.1%} in sample, "
            f"{h['loso']['median']:.1%} with the source left out"
        ),
        width=1200,
        height=600,
        template="plotly_white",
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.write_image(OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
