"""App tests of the charts' polish: exported images keep their caption, title and colours inside the
canvas, and the planner's frontier labels keep clear of each other and of the markers (split from
test_app_polish.py)."""

from __future__ import annotations


def _figure():  # type: ignore[no-untyped-def]
    import plotly.graph_objects as go

    from ui import charts

    fig = go.Figure([go.Scatter(x=[0, 1], y=[0, 1], name="a"), go.Scatter(x=[0, 1], y=[1, 0], name="b")])
    return charts._layout(fig, "A title", 300)


META = {"engine_version": "0", "scenario": "s", "preset": "p", "seed": "1"}


def test_an_exported_chart_keeps_its_caption_and_title_inside_the_canvas() -> None:
    from ui import export

    out = export.print_copy(_figure(), META)
    caption = out.layout.annotations[-1]
    assert caption.text.startswith("Fengong 0")
    # anchored on the plot's bottom edge, shifted down in pixels by less than the bottom margin: in the canvas
    assert caption.yref == "paper" and caption.y == 0 and caption.yanchor == "bottom"
    assert 0 < -caption.yshift < out.layout.margin.b - 4
    assert out.layout.margin.b >= 70 + export.CAPTION_ROOM_PX  # the axis and its title, then the caption
    # the title starts where the plot does (left margin), not at the canvas's edge
    assert out.layout.title.xref == "paper" and out.layout.title.x == 0 and out.layout.margin.l >= 40
    # a long caption wraps, its seed kept on the image and the margin grown for it (a Compare export's
    # two scenario names ran it off: a review)
    long = export.print_copy(_figure(), {**META, "scenario": "A: " + "x" * 90 + " vs B: " + "y" * 90})
    text = long.layout.annotations[-1].text
    assert "<br>" in text and all(len(line) <= export.CAPTION_CHARS for line in text.split("<br>"))
    assert text.endswith(f"seed {META['seed']}") and long.layout.margin.b > out.layout.margin.b
    assert long.layout.annotations[-1].align == "left"  # its second line under its first, not centred


def test_an_exported_charts_caption_keeps_clear_of_a_legend_one_entry_a_row() -> None:
    """The utilisation chart's legend is an entry a row: counted three a row, its six entries ran under
    the caption in the PNG and SVG (a review). A part that costs nothing has no legend entry either."""
    import pandas as pd
    import plotly.graph_objects as go

    from ui import charts, export

    lines = [go.Scatter(x=[0, 1], y=[0, 1], name=f"line {i}") for i in range(6)]
    fig = charts._layout(go.Figure(lines), "Utilisation", 300, legend_below=True)
    flat = export.print_copy(go.Figure(fig).update_layout(legend={"y": -0.3}), META).layout.margin.b
    fig.update_layout(legend={"y": -0.3, "orientation": "v"})
    tall = export.print_copy(fig, META).layout.margin.b
    assert tall >= 70 + 26 * 6 + 20 + export.CAPTION_ROOM_PX and tall > flat
    parts = pd.DataFrame(
        {"part": ["prefill", "decode", "kv_transfer", "cache"], "usd_per_request": [2e-4, 1e-4, 1e-7, 0.0]}
    ).assign(share=lambda f: f["usd_per_request"] / f["usd_per_request"].sum())
    assert [t.name for t in charts.cost_parts(parts).data] == ["prefill", "decode", "kv transfer"]


def test_exported_lines_take_the_apps_colours() -> None:
    import tomllib
    from pathlib import Path

    from ui import charts, export

    config = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())
    assert tuple(config["theme"]["chartCategoricalColors"]) == charts.CATEGORY_COLORS  # the app's
    assert tuple(export.print_copy(_figure(), META).layout.colorway) == charts.CATEGORY_COLORS  # the file's


def test_an_exported_png_shows_its_caption_and_a_title_clear_of_the_edge() -> None:
    """Rendered by kaleido at the export size (skipped where it finds no browser)."""
    import io

    import pytest
    from PIL import Image  # Streamlit's own dependency

    from ui import export, image_export

    if image_export.problem():
        pytest.skip("kaleido finds no browser here")
    png = export.rendered(
        export.print_copy(_figure(), META),
        format="png",
        width=export.EXPORT_WIDTH,
        height=export.EXPORT_HEIGHT,
        scale=1,
    )
    img = Image.open(io.BytesIO(png)).convert("RGB")
    w, h = img.size
    px = img.load()
    # the caption's neutral grey (#666, antialiased); the template's text and grid are blue-grey
    grey = [
        (x, y) for y in range(h) for x in range(w) if len(set(px[x, y])) == 1 and 60 <= px[x, y][0] <= 170
    ]
    assert len(grey) > 50 and min(y for _, y in grey) > h * 0.85  # the caption, at the canvas's bottom
    dark_at_edge = [(x, y) for y in range(60) for x in range(20) if sum(px[x, y]) < 600]
    assert not dark_at_edge  # the title does not touch the left edge


def test_the_planners_frontier_labels_do_not_run_into_each_other() -> None:
    """Where every passing deployment serves the whole load, the cost frontier's points sit side by
    side at one goodput: labelled above and below in turn, '2P:1D' and '3P:1D' still overlapped.
    A label that has no free place is left off (the point's hover names it); the chosen run's first."""
    import pandas as pd

    from ui import plan_labels as planner

    runs = pd.DataFrame({
        "usd_per_hour": [17.0, 17.6, 18.0, 18.4, 19.0, 40.0],
        "goodput_rps": [15.2, 15.3, 15.3, 15.4, 15.4, 15.5],
        "split": ["2P:1D", "3P:1D", "2P:2D", "4P:1D", "3P:2D", "8 mixed"],
        "chosen": [False, False, True, False, False, False],
    })  # fmt: skip
    sides = planner.label_sides(runs, "usd_per_hour", "goodput_rps", (0.0, 60.0), 16.0)
    assert sides[2] is not None  # the chosen run keeps its label
    placed = [i for i, side in sides.items() if side is not None]
    assert 2 <= len(placed) < len(runs)  # some left off: five labels do not fit in that stretch
    width = planner.MARKER_LABEL_AXIS_PER_CHAR * 5 / 2
    for a in placed:
        for b in placed:
            if a < b and sides[a] == sides[b]:  # two labels on one side of one line of points
                apart = abs(runs.at[a, "usd_per_hour"] - runs.at[b, "usd_per_hour"]) / 60.0 * 0.9
                assert apart >= 2 * width, (runs.at[a, "split"], runs.at[b, "split"])


def test_a_frontier_label_does_not_cover_another_runs_marker() -> None:
    """A label goes to the side of its point where no other run's marker sits; where both sides are
    covered it is left to the hover, except the chosen run's, which is always named."""
    import pandas as pd

    from ui import plan_labels

    labelled = pd.DataFrame(
        {"cost": [10.0, 30.0], "goodput": [8.0, 8.0], "split": ["2P:1D", "4 mixed"], "chosen": [True, False]}
    )

    def sides(*extra: tuple[float, float]) -> dict[int, str | None]:
        others = pd.DataFrame(extra, columns=["cost", "goodput"])
        drawn = pd.concat([labelled[["cost", "goodput"]], others], ignore_index=True)
        return plan_labels.label_sides(labelled, "cost", "goodput", (0.0, 40.0), 10.0, markers=drawn)

    up, down = (30.0, 8.6), (30.0, 7.4)  # runs drawn just above and just below run 1
    first = sides()[1]
    assert first in ("top center", "bottom center")
    moved = sides(up if first == "top center" else down)[1]
    assert moved is not None and moved != first  # the other side
    crowded = sides(up, down, (10.0, 8.6), (10.0, 7.4))
    assert crowded[1] is None and crowded[0] == "top center"  # the chosen run's label stays


def test_a_frontier_label_keeps_clear_of_the_chosen_runs_star() -> None:
    """The star is larger than a run's marker: a label beside it placed as if it were a run's marker
    was half under it ('2M' beside the 2P:1D star, seen in Chromium)."""
    import pandas as pd

    from ui import plan_labels

    def side(chosen_first: bool) -> str | None:
        runs = pd.DataFrame(
            {
                "x": [54.0, 57.0],
                "y": [980.0, 980.0],
                "split": ["2P:1D", "2 mixed"],
                "chosen": [chosen_first, False],
            }
        )
        return plan_labels.label_sides(runs, "x", "y", (0.0, 70.0), 1300.0, markers=runs)[1]

    assert side(chosen_first=False) is not None  # beside a run's marker, 2M's label fits above or below
    assert side(chosen_first=True) is None  # beside the star it would sit under it: left to the hover


def test_a_split_already_named_over_the_same_x_is_not_named_again() -> None:
    """A MoE plan's frontier held three 1P:1D runs a hair apart at 24 tokens/s per user: '1P:1D' was
    stacked twice under the star's own (seen in Chromium). Another split there is still named."""
    import pandas as pd

    from ui import plan_labels

    runs = pd.DataFrame(
        {
            "x": [24.1, 24.15, 24.2, 24.25, 33.0],
            "y": [330.0, 250.0, 170.0, 90.0, 45.0],
            "split": ["1P:1D", "1P:1D", "1P:1D", "3 mixed", "1P:1D"],
            "chosen": [True, False, False, False, False],
        }
    )
    sides = plan_labels.label_sides(runs, "x", "y", (0.0, 35.0), 500.0, markers=runs)
    assert sides[0] is not None and sides[1] is None and sides[2] is None
    assert sides[3] is not None and sides[4] is not None  # another split, or the same one far off
