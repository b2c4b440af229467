"""Draw the predicted-vs-measured chart of docs/validation.md (docs/img/validation.png).

Run: ``.venv/bin/python docs/make_validation_chart.py``. Reads data/reference and needs
kaleido with a Chromium (Debian's chromium package).
"""

from __future__ import annotations

from pathlib import Path

import plotly.graph_objects as go

from engine.catalog.entries import load_catalog
from engine.costmodel import calibrate

OUT = Path(__file__).resolve().parent / "img" / "validation.png"


def main() -> None:
    path = calibrate.reference_csv()
    if path is None:
        raise SystemExit("data/reference/calibration.csv is missing from the project")
    tab = calibrate.table(calibrate.read_reference_csv(path), load_catalog())
    fig = go.Figure()
    for kind, symbol in (("prefill", "circle"), ("decode", "diamond"), ("throughput", "square")):
        sub = tab[tab["kind"] == kind]
        fig.add_trace(
            go.Scatter(
                x=sub["measured"],
                y=sub["predicted"],
                mode="markers",
                name=kind,
                marker={"symbol": symbol, "size": 9},
                text=sub["id"] + " " + sub["setup"] + " " + sub["point"],
                hovertemplate="%{text}<br>measured %{x:.4g}<br>predicted %{y:.4g}<extra></extra>",
            )
        )
    lo, hi = (
        float(tab[["measured", "predicted"]].min().min()) * 0.7,
        float(tab[["measured", "predicted"]].max().max()) * 1.4,
    )
    for factor, dash in ((1.0, "solid"), (1.25, "dot"), (0.8, "dot")):
        fig.add_trace(
            go.Scatter(
                x=[lo, hi],
                y=[lo * factor, hi * factor],
                mode="lines",
                showlegend=factor == 1.0,
                name="exact (dotted: ±25%)",
                line={"color": "grey", "dash": dash, "width": 1},
            )
        )
    fig.update_xaxes(type="log", title="measured (ms for times, tokens/s for throughput)")
    fig.update_yaxes(type="log", title="predicted by the cost model")
    med, worst = tab["abs_error"].median(), tab["abs_error"].max()
    fig.update_layout(
        title=f"Cost model vs public measurements: median |error| {med:.0%}, worst {worst:.0%} ({len(tab)} points)",
        width=900,
        height=620,
        template="plotly_white",
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    fig.write_image(OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
