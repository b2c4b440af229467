"""App tests of the last look-over: one name per figure, charts and rows that keep their things apart,
a catalog that fits the screen, and no band that says nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from engine.scenario import scenario_catalog
from tests.app.harness import app, assert_clean, live, scenario_of, short


def _nodes(node: Any) -> Iterator[Any]:
    """Every element and block under `node`, depth first."""
    for child in (getattr(node, "children", None) or {}).values():
        yield child
        yield from _nodes(child)


def _labels(node: Any) -> set[str]:
    return {label for n in _nodes(node) if (label := getattr(n, "label", None))}


def test_the_live_strip_names_and_writes_its_figures_as_the_results_cards() -> None:
    """'SLO met' in the sidebar and 'SLO attainment' on the cards read as two figures; goodput read
    '16.1/s' beside '16.09 req/s'."""
    from ui.layout import STRIP

    at = app("results")
    assert_clean(at)
    cards = {m.label: m.value for m in at.metric}
    at.switch_page("app_pages/workload.py").run()
    strip = live(at)
    for label, *_ in STRIP:
        assert label in cards, (label, sorted(cards))  # the card's own name
        assert f"| {label.replace('$', chr(92) + '$')} |" in strip, (label, strip)
    goodput = cards["Goodput"]
    assert goodput.endswith(" req/s")
    assert f"**{goodput.replace(' ', chr(0xA0))}**" in strip, (goodput, strip)  # the card's very text
    assert "SLO met" not in strip


def test_the_optional_slo_targets_sit_beside_the_percentile_each_in_its_own_column() -> None:
    """E2E and TBT stacked in one column left TBT alone on a line of its own under E2E; all seven
    widgets on one row read 'Exa/ct', 'Percentil/e' and '10(' for 1,000 at 1,100 px (a review): the two
    latency targets share a row, the percentile and the optional targets the next."""
    at = app("slo")
    assert_clean(at)
    latencies, rest = ("TTFT target (ms)", "TPOT target (ms)"), ("Percentile", "E2E (ms)", "TBT (ms)")
    assert [latencies] == [tuple(r) for r in _row_of(at, latencies[0], latencies) if None not in r]
    assert [list(rest)] == _row_of(at, "Percentile", rest)
    helps = {n.label: n.help for n in at.number_input if n.label in ("E2E (ms)", "TBT (ms)")}
    assert all(helps.values()) and len(helps) == 2, helps  # TBT's box had no help where E2E's had


def test_the_cost_by_part_legend_sits_under_the_axis_not_beside_the_title() -> None:
    """Beside the title, on half a page, the parts' legend ran into 'Cost per request by part'."""
    from engine import explain as ex
    from engine import simulate
    from ui import charts

    parts = ex.cost_parts(simulate(short()).summary)
    fig = charts.cost_parts(parts)
    legend = fig.layout.legend
    assert fig.layout.title.text == "Cost per request by part" and fig.layout.showlegend is not False
    assert legend.y < 0 and legend.yanchor == "top", (legend.y, legend.yanchor)  # under the plot
    assert legend.x == 0 and legend.xanchor == "left" and legend.orientation == "h"
    assert (
        fig.layout.yaxis.showticklabels is False
    )  # one bar, no label: the plot and its legend take the width
    assert fig.layout.height > 260  # grown by the legend's rows, the plot keeps its height


def test_the_accelerators_are_in_tabs_that_together_hold_every_column() -> None:
    """One table of 28 columns scrolled sideways at 1440 px, the calibration past the edge; each tab
    holds a few (tests/app/test_browser.py measures that none scrolls)."""
    from ui.hardware import HARDWARE_VIEWS, hardware_frame

    at = app("hardware")
    assert_clean(at)
    tabs = [t for t in at.tabs if t.label in HARDWARE_VIEWS]
    assert [t.label for t in tabs] == list(HARDWARE_VIEWS)
    sc = scenario_of(at)
    frame = hardware_frame(scenario_catalog(sc), sc)
    shown: set[str] = set()
    for tab in tabs:
        (table,) = tab.dataframe
        columns = list(table.value.columns)
        assert columns == list(HARDWARE_VIEWS[tab.label]) and columns[0] == "id", (tab.label, columns)
        assert len(table.value) == len(frame)  # every chip in every tab
        shown |= set(columns)
    assert shown == set(frame.columns), set(frame.columns) ^ shown
    # the first thing a planner checks, in the first tab beside the id (past the names at 1,100 px: a review)
    assert HARDWARE_VIEWS["Chips"][1] == "calibration"
    # every figure of a tab says its source: memory and bandwidth had none in any view (a review)
    h100 = frame.set_index("id").loc["h100-sxm"]
    assert "memory: NVIDIA H100" in h100["spec_source"] and "bandwidth: NVIDIA H100" in h100["spec_source"]


def test_a_goodput_band_from_nothing_is_left_off_on_compare_and_said() -> None:
    """moe-deepseek-dp-ep against moe-deepseek-h200: with the chips at the slow edge of their band,
    goodput falls to nothing, and '9.95 req/s (−100% to +0%)' said only that."""
    from streamlit.testing.v1 import AppTest

    from engine import simulate
    from engine.explain import run_spread
    from engine.explain.run_bands import falls_to_nothing
    from engine.scenario.codec import to_link
    from tests.app.harness import APP

    preset = "moe-deepseek-dp-ep"
    sc = short(preset)
    moves = run_spread(sc, simulate(sc).summary).moves()
    assert falls_to_nothing("goodput_rps", moves["goodput_rps"])  # the case under test holds
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update({**to_link(sc, preset), "a": "current", "b": "moe-deepseek-h200"})
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    goodput = next(m for m in at.metric if m.label == "Goodput: B")
    assert "%" not in goodput.value, goodput.value  # no band beside B's value
    assert "%" not in goodput.proto.help.split(". ")[0], goodput.proto.help  # nor beside A's, in its help
    said = " ".join(
        w.value for w in at.get_by_key("fg-cliff").warning
    )  # a warning, not the bands' small print
    assert "Goodput and goodput per" in said and "show no band" in said, said
    assert "−100% to" not in said


def _row_of(at: Any, first: str, wanted: tuple[str, ...]) -> list[list[str | None]]:
    """Each row of columns that holds `first`: which of `wanted` each of its columns holds."""
    rows = []
    for block in _nodes(at.main):
        columns = [
            c for c in (getattr(block, "children", None) or {}).values() if getattr(c, "type", "") == "column"
        ]
        holds = [next((w for w in wanted if w in _labels(c)), None) for c in columns]
        if first in holds:
            rows.append(holds)
    return rows


def test_a_dense_pools_split_is_one_row_and_a_moe_pools_two_of_two() -> None:
    """Two to a row left a dense pool's DP alone on a line of its own; a MoE pool's four stay two to a
    row (four abreast in a third of the page clipped '16' to '1')."""
    split = ("TP", "PP", "DP", "EP")
    dense = _row_of(app("strategy"), "TP", split)
    assert dense and all(row == ["TP", "PP", "DP"] for row in dense), dense
    moe = _row_of(app("strategy", short("moe-deepseek-h200"), "moe-deepseek-h200"), "TP", split)
    assert moe and all(row == ["TP", "PP"] for row in moe), moe


def test_a_latency_that_grows_with_run_length_carries_no_band_on_compare() -> None:
    """chat-ascend-910b against itself disaggregated, which cannot keep up: B's p99 TTFT is a floor
    ('≥ 11.4 min'), and a band beside a floor ('≥ 11.4 min (−63% to +51%)') contradicted it; its
    TPOT stays level while the queue grows (`Shortfall.steady`): its band, marked 'at saturation'."""
    from streamlit.testing.v1 import AppTest

    from engine.scenario.codec import to_link
    from tests.app.harness import APP

    preset = "chat-ascend-910b"
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params.update({**to_link(short(preset), preset), "a": "current", "b": "current, other mode"})
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Unsustainable" in e.value for e in at.error), [e.value for e in at.error]  # the case holds
    cards = {m.label: m for m in at.metric}
    value = cards["TTFT p99: B"].value
    assert value.startswith("≥ ") and "%" not in value, value
    value = cards["TPOT p99: B"].value
    assert not value.startswith("≥") and "%" in value and value.endswith(", at saturation"), value
    goodput = cards["Goodput: B"].value  # a figure that is not a floor keeps its band
    assert "$ / request: B" in cards, sorted(cards)  # the Results cards' and the strip's name, not another
    assert "%" in goodput or "req/s" in goodput, goodput


def test_every_percent_column_shows_one_decimal_of_a_percent() -> None:
    """Streamlit's bare "percent" writes as many decimals as a value needs: a review saw "49.96%"
    beside "50%" in one column. Each percent column carries a step of 0.001 (one decimal)."""
    import json

    from tests.app.harness import app

    seen = 0
    for page in ("results", "about"):
        for frame in app(page).dataframe:
            for name, col in (json.loads(frame.proto.columns) if frame.proto.columns else {}).items():
                config = col.get("type_config", {})
                if config.get("format") == "percent":
                    seen += 1
                    assert config.get("step") == 0.001, (page, name, config)
    assert seen >= 8, seen  # the case holds: the pages show percent columns


def test_the_calibration_tab_wraps_its_rules_whole() -> None:
    """A chip's calibration rule runs to 139 characters; on one line the Hardware page's Calibration
    tab cut it at a third. Its rows are taller than 4 rem (Streamlit wraps a cell's text only then)
    and the rule gets the widest column; the other tabs keep one line a row."""
    import json

    from tests.app.harness import app

    at = app("hardware")
    tabs = {t.label: t for t in at.tabs}
    wrapped = tabs["Calibration"].dataframe[0].proto
    assert wrapped.row_height > 64, wrapped.row_height
    assert json.loads(wrapped.columns)["calibration_rule"]["width"] == "large"
    assert tabs["Chips"].dataframe[0].proto.row_height > 64  # its calibration wraps too (a review)
    assert not tabs["Links"].dataframe[0].proto.row_height  # the case holds: one line a row


def test_every_figure_the_sources_tab_cites_is_shown() -> None:
    """The Sources tab put a chip's every source in one cell, cut after about five lines at any width,
    and cited the scale-up domain of nine chips that no view showed (a review): it shows one chip, a
    row per figure with its value beside its whole source, and every figure any chip cites."""
    from engine.catalog.entries import load_catalog
    from tests.app.harness import app
    from ui.chip_sources import DEFAULT, FIGURES, figure_rows

    cited = {k for h in load_catalog().hardware.values() for k in h.sources}
    assert cited <= set(FIGURES), cited - set(FIGURES)
    rows = figure_rows(load_catalog().hardware["h100-sxm"]).set_index("figure")
    assert rows.loc["memory bandwidth", "value"] == "3.35 TB/s"
    assert rows.loc["dense peak", "value"] == "bf16 989 · fp8 1,979 TFLOP/s"
    assert rows.loc["idle power", "source"].startswith("assumption: ") and "—" not in rows["source"].tolist()
    assert rows.loc["scale-up domain", "source"] == DEFAULT  # a field's default is said as such
    (tab,) = [t for t in app("hardware").tabs if t.label == "Sources"]
    assert tab.selectbox[0].value == "h100-sxm"  # the scenario's chip first
    shown = tab.table[0].value
    assert "scale-up link" in shown.index and shown.loc["TDP", "value"] == "700 W"


def test_the_chip_select_names_a_chip_in_few_words() -> None:
    """Strategy's chip select shows 'id · name' in a half-width column (about 35 characters): the
    catalog's longest name ('NVIDIA GH200 (Hopper GPU of a Grace Hopper superchip, 96 GB HBM3)')
    ran far past it. The name's parenthesis is left to the Hardware page; the id leads."""
    from tests.app.harness import app

    options = app("strategy").selectbox(key="fg:deployment.pools[0].hardware").options
    assert "gh200 · NVIDIA GH200" in options, options
    assert all("(" not in o for o in options), [o for o in options if "(" in o]
    assert max(len(o) for o in options) <= 50, max(options, key=len)


def test_cost_parts_read_to_one_number_of_places() -> None:
    """A part at its own places ($0.0000000982 of KV transfer) widened the column until the share of
    bill beside it lost its '%' (found in a browser review): every part reads to the largest part's
    places, a part too small for them as '< $0.000001', none as '$0'."""
    import pandas as pd

    from ui.tables import cost_view

    frame = pd.DataFrame({"part": ["prefill", "decode", "kv_transfer", "cache"],
                          "usd_per_request": [0.000271, 0.000270, 9.82e-8, 0.0]})  # fmt: skip
    assert list(cost_view(frame)["usd_per_request"]) == ["$0.000271", "$0.000270", "< $0.000001", "$0"]
    assert list(cost_view(frame)["part"]) == [
        "prefill",
        "decode",
        "kv transfer",
        "cache",
    ]  # as the advisor says
    big = pd.DataFrame({"part": ["decode"], "usd_per_request": [0.126]})
    assert list(cost_view(big)["usd_per_request"]) == ["$0.13"]


def test_a_small_chips_memory_reads_to_three_figures() -> None:
    """Groq's LPU read 'weights 0.1 GB and activations 0.1 GB per chip of 0.2 GB usable' on the
    Strategy page, as though full (found in a browser review): below 1 GB, three significant figures."""
    from engine.explain.previews import pool_memory
    from engine.scenario.codec import load_preset
    from ui.parallelism import memory_text

    (lpu,) = pool_memory(load_preset("sram-decode-groq"))
    assert "weights 0.117 GiB and activations 0.0676 GiB per chip of 0.193 GiB usable" in memory_text(lpu)
    h100 = pool_memory(load_preset("chat-disaggregated"))[0]
    assert "weights 33.8 GiB" in memory_text(h100) and "of 72.0 GiB usable" in memory_text(h100)
    # 77.3 GB beside a catalog's "80 GB" at 0.9 read as an error (a walkthrough), and "77.3 GB usable
    # (0.9 of 80 GiB)" as two units (a review): one unit, the catalog's, whose product adds up
    assert "72.0 GiB usable (0.9 of 80 GiB)" in memory_text(h100) and " GB" not in memory_text(h100)


def test_the_batching_caption_says_whose_defaults_each_pool_takes() -> None:
    """Each pool takes the stack's defaults on its own chip (`ResolvedPool.limits`): beside an H100 pool
    the caption named only the 910B, with doubled brackets ('(vLLM V1 defaults for chips under 70 GiB
    (and A100))', a review)."""
    at = app("strategy", short("chat-ascend-910b"), preset="chat-ascend-910b")
    assert_clean(at)
    said = [
        c.value.replace("\\", "").replace("\u2060", "") for c in at.caption if "Empty fields take" in c.value
    ]
    assert said == [
        "Empty fields take vLLM's defaults on each pool's chip; the pools run "
        "with ascend-910b, 256 sequences and 2,048 tokens; h100-sxm, 1,024 sequences and 8,192 tokens."
    ]
    # the boxes show each chip's default in the caption's order, not the first pool's alone
    boxes = {n.label: n.placeholder for n in at.number_input if n.key and "deployment.batching" in n.key}
    assert boxes["Max batch"] == "256 / 1,024" and boxes["Token budget"] == "2,048 / 8,192"
    one = app("strategy")
    (alone,) = [c.value for c in one.caption if "Empty fields take" in c.value]
    assert "each pool" not in alone and "h100" in alone


def test_the_about_pages_errors_never_read_minus_zero() -> None:
    """Row H080's error read '-0.0%' (a miss under 0.05%, rounded): the page rounds it to what it shows."""
    import math

    at = app("about")
    assert_clean(at)
    (tab,) = [d.value for d in at.dataframe if "abs_error" in d.value.columns]
    shown = [float(v) for v in tab["error"] if v == v]
    assert shown and not any(v == 0.0 and math.copysign(1.0, v) < 0 for v in shown)
    assert all(round(v, 3) == v for v in shown)
