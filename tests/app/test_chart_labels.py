"""Chart labels and legends at the narrowest page the app is laid out for (1,100 px)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ui import charts


def test_a_target_label_with_no_clear_place_stays_inside_the_axis() -> None:
    """Compare's TPOT chart, a third of a 1,100 px page: A's 60 ms target near the axis' right end,
    curves under every place beside it. The label went right of its line and was cut at the plot's
    edge ('A SLO 60 m'); it now goes where the axis has room for it, over a curve if it must."""
    frac = np.linspace(0.0, 1.0, 50)
    curves = [(frac, np.linspace(20.0, 90.0, 50)), (frac, np.linspace(55.0, 62.0, 50))]
    _, side = charts._label_place(curves, 60.0, len("A SLO 60 ms"), 0.0, 93.0, False, 0.03, columns=3)
    assert side == "right"  # xanchor right: the label ends at its line, left of it, inside the axis
    width = len("A SLO 60 ms") * charts.LABEL_AXIS_PER_CHAR * 3 / 2 * 93.0
    assert 60.0 - width >= 0.0
    # near the left end the other way: the label starts at its line
    _, side = charts._label_place(curves, 5.0, len("A SLO 5 ms"), 0.0, 93.0, False, 0.03, columns=3)
    assert side == "left"


def test_two_pools_over_time_keep_their_legend_under_the_axis() -> None:
    """A third of a 1,100 px page: the legend of a prefill and a decode pool, beside the title, wrapped
    over 'KV memory held'. It goes under the axis, as the utilisation chart's does, and the figure grows
    by its row."""
    t = np.arange(0.0, 60.0, 5.0)
    ts = pd.DataFrame({
        "pool": ["prefill"] * len(t) + ["decode"] * len(t),
        "t_s": np.concatenate([t, t]),
        "kv_memory": np.linspace(0.0, 0.1, 2 * len(t)),
    })  # fmt: skip
    fig = charts.timeseries(ts, ["kv_memory"], "KV memory held", "of KV capacity", percent=True)
    assert fig.layout.legend.yanchor == "top" and fig.layout.legend.y < 0
    assert fig.layout.height == 300 + charts.LEGEND_ROW_PX


def test_several_classes_tails_keep_their_legend_under_the_axis() -> None:
    """The SLO page's TTFT and TPOT by percentile: three classes' names beside the title ran over it and
    the top tick in half a 1,100 px page (a review). Several classes: under the axis, the figure taller;
    one class: no change."""
    rows = [
        {"class": c, "percentile": p, "latency_ms": 100.0 + i * 10 + p}
        for i, c in enumerate(("interactive", "long-generation", "batch"))
        for p in (50.0, 90.0, 99.0)
    ]
    frame = pd.DataFrame(rows)
    targets = pd.DataFrame(
        [{"class": "interactive", "metric": "ttft", "target_ms": 1500.0, "percentile": 90.0}]
    )
    three = charts.tail(frame, "ttft", targets)
    one = charts.tail(frame[frame["class"] == "batch"], "ttft", targets)
    assert three.layout.legend.yanchor == "top" and three.layout.legend.y < 0
    assert three.layout.height > one.layout.height == 340
    assert one.layout.legend.yanchor == "bottom"


def test_the_live_strips_cdf_reaches_its_target() -> None:
    """The sidebar's TTFT CDF: a 1,000 ms target past latencies that end at 800 ms sat on the axis's edge,
    where it read as 800 (a review): the axis reaches the target, whose decade gets its tick."""
    from ui.strip_chart import strip_cdf

    frame = pd.DataFrame({"class": "chat", "latency_ms": [20.0, 90.0, 800.0], "fraction": [0.3, 0.6, 1.0]})
    fig = strip_cdf(frame, 5000.0, 90.0)
    xs = np.concatenate([np.asarray(t.x, dtype=float) for t in fig.data])
    assert xs.max() == 5000.0  # the autorange takes the target in
    assert 1000.0 in fig.layout.xaxis.tickvals and 10000.0 in fig.layout.xaxis.tickvals
    assert [t.name for t in fig.data if t.showlegend is not False] == ["chat"]
    # its dashed lines named in its title (a reader took the p90 line for p99 beside 'TTFT p99': a review)
    assert fig.layout.title.text == "TTFT CDF · dashed: SLO 5 s @ p90"
    assert strip_cdf(frame, None, None).layout.title.text == "TTFT CDF"
    # a linear axis separates its thousands ('1000 ms' beside '2000 ms': a review)
    flat = frame.assign(latency_ms=[1000.0, 1500.0, 2500.0])
    assert strip_cdf(flat, None, None).layout.xaxis.tickformat == ",~r"


def test_a_tails_target_is_named_and_its_log_axis_ticks_between_decades() -> None:
    """A 7,600 ms TTFT target over curves of 60 to 1,500 ms: the log axis read only '100' and '1000' and its
    dashed target had no label (plotly put an hline's own label at the raw value on a log axis, off the
    plot): the axis ticks 1, 2 and 5 of each decade, the target's label sits under its line (a review)."""
    frame = pd.DataFrame(
        {"class": ["chat"] * 4, "percentile": [50, 90, 99, 99.9], "latency_ms": [60.0, 300.0, 900.0, 1500.0]}
    )
    targets = pd.DataFrame([{"metric": "ttft", "class": "chat", "target_ms": 7600.0, "percentile": 99.0}])
    fig = charts.tail(frame, "ttft", targets)
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis.tickmode == "array"
    assert list(fig.layout.yaxis.tickvals) == [50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0]
    (label,) = [a for a in fig.layout.annotations if a.text == "SLO 7,600 ms"]
    assert label.y == pytest.approx(math.log10(7600.0))  # on the plot, where its line is


def test_classes_sharing_a_target_share_its_label() -> None:
    # edge-offload's two classes at a 100 ms TPOT wrote 'assistant SLO 100 ms' over 'document SLO 100 ms'
    frame = pd.DataFrame(
        {"class": ["a"] * 2 + ["b"] * 2, "percentile": [50, 99] * 2, "latency_ms": [20.0, 40.0, 25.0, 50.0]}
    )
    targets = pd.DataFrame(
        [{"metric": "tpot", "class": c, "target_ms": 100.0, "percentile": 99.0} for c in ("a", "b")]
    )
    fig = charts.tail(frame, "tpot", targets)
    assert [a.text for a in fig.layout.annotations if "SLO" in a.text] == ["a, b SLO 100 ms"]


def test_an_arrival_histograms_bars_sit_over_their_bins() -> None:
    # bins from 0, 10 and 20 s were drawn centred on 0, 10 and 20: half a bin early (a review)
    curve = pd.DataFrame({"t_s": [0.0, 30.0], "rate_rps": [1.0, 1.0]})
    seen = pd.DataFrame({"t_s": [0.0, 10.0, 20.0], "rate_rps": [0.9, 1.1, 0.033]})
    fig = charts.rate(curve, "Arrivals", observed=seen)
    (bars,) = [t for t in fig.data if t.type == "bar"]
    assert list(bars.x) == [5.0, 15.0, 25.0]
    assert bars.hovertemplate.startswith("sent in this run: %{y:,.3~r} req/s")  # 0.0333, not 0.0


def test_a_cdfs_hover_title_has_its_unit_and_its_log_axis_ticks_between_decades() -> None:
    # a bare '110.7' over 'chat : 111 ms: 56.0%', and a TPOT axis of 14 to 945 ms ticked only '100' (a review)
    frame = pd.DataFrame(
        {"class": ["chat"] * 3, "latency_ms": [14.0, 60.0, 945.0], "fraction": [0.3, 0.6, 0.9]}
    )
    targets = pd.DataFrame([{"metric": "tpot", "class": "chat", "target_ms": 30.0, "percentile": 90.0}])
    fig = charts.cdf(frame, "tpot", targets)
    assert fig.layout.xaxis.unifiedhovertitle.text == "%{x:,.4~r} ms"
    assert fig.data[0].hovertemplate.startswith("%{y:.1%} by %{customdata}")
    assert list(fig.layout.xaxis.tickvals) == [10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
    tail = charts.tail(
        pd.DataFrame({"class": ["chat"] * 2, "percentile": [50, 99], "latency_ms": [20.0, 40.0]}),
        "tpot",
        targets,
    )
    assert tail.layout.xaxis.unifiedhovertitle.text == "by percentile"  # not the tail axis's 1.846155


def test_a_linear_latency_axis_separates_its_thousands() -> None:
    # edge-offload's linear TTFT axis read '1000, 2000' (a review): ',~r' as the log axes
    frame = pd.DataFrame({"class": ["chat"] * 2, "percentile": [50, 99], "latency_ms": [900.0, 2500.0]})
    targets = pd.DataFrame([{"metric": "ttft", "class": "chat", "target_ms": 2000.0, "percentile": 99.0}])
    tail = charts.tail(frame, "ttft", targets)
    cdf = charts.cdf(frame.assign(fraction=[0.5, 0.99]), "ttft", targets)
    assert tail.layout.yaxis.type == "linear" and tail.layout.yaxis.tickformat == ",~r"
    assert cdf.layout.xaxis.type == "linear" and cdf.layout.xaxis.tickformat == ",~r"


def test_a_call_the_band_does_not_back_is_drawn_pale_and_the_title_says_so() -> None:
    """Compare's changes chart drew TPOT's bars as bold a green as cost's red, under a caption saying
    the model cannot promise TPOT's change (B on other chips, inside the band): a browser review read
    the bar as a win. Those figures' bars are pale, the others full, and the title says what pale is."""
    table = pd.DataFrame({
        "figure": ["TPOT p90", "Cost per hour ($/h)"],
        "better": ["B", "A"],
        "A": [30.0, 25.0],
        "B": [27.0, 30.0],
        "change_pct": [-10.0, 20.0],
    })  # fmt: skip
    fig = charts.compare_bars(table, ("A", "B"), unbacked=["TPOT p90"])
    assert list(fig.data[0].marker.opacity) == [0.35, 1.0]
    assert "pale: inside the band" in fig.layout.title.text
    plain = charts.compare_bars(table, ("A", "B"))
    assert list(plain.data[0].marker.opacity) == [1.0, 1.0]
    assert "pale" not in plain.layout.title.text
