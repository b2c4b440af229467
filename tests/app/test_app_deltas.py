"""Changes that round to zero are shown as no change: no arrow, no colour (live strip, Compare)."""

from __future__ import annotations

from streamlit.proto.Metric_pb2 import Metric as MetricProto
from streamlit.testing.v1 import AppTest

from engine.scenario.codec import DEFAULT_PRESET, to_link
from tests.app.harness import APP, assert_clean, short
from ui.layout import shows_change, strip_rows


def test_a_formatted_change_of_zero_is_no_change() -> None:
    assert not shows_change("0 ms") and not shows_change("+0.0% vs A") and not shows_change("-0.00")
    assert shows_change("0.1 ms") and shows_change("-1.0% vs A") and shows_change("10 µ$")


def test_the_live_strip_drops_arrows_that_round_to_zero() -> None:
    now = {"ttft_p99_ms": 500.3, "tpot_p99_ms": 20.0, "slo_attainment": 0.9}
    prev = {"ttft_p99_ms": 500.0, "tpot_p99_ms": 21.0, "slo_attainment": 0.9}
    rows = {label: change for label, _, change in strip_rows(now, prev)}
    assert rows["TTFT p99"] == ""  # 0.3 ms shows as "0 ms": no "▲0 ms"
    assert "▼1.0" in rows["TPOT p99"]
    assert rows["SLO attainment"] == ""


def test_a_goodput_change_is_the_change_of_the_figures_shown() -> None:
    """Goodput read 16.09 then 15.64 req/s with the change '▼0.442 req/s', more precise than the figures it
    came from (a browser review): the change of the two figures as shown, to their decimals."""
    rows = {
        label: (v, change)
        for label, v, change in strip_rows({"goodput_rps": 15.6437}, {"goodput_rps": 16.0857})
    }
    assert rows["Goodput"][0] == "15.64 req/s" and "▼0.45 req/s" in rows["Goodput"][1], rows
    small = {label: c for label, _, c in strip_rows({"goodput_rps": 0.0314}, {"goodput_rps": 0.0424})}
    assert "▼0.011 req/s" in small["Goodput"]  # under 1 req/s, three significant figures as the value's
    across = {label: c for label, _, c in strip_rows({"goodput_rps": 1.004}, {"goodput_rps": 0.99649})}
    assert "▲0.004 req/s" in across["Goodput"], across  # 1.00 against 0.996, as shown


def test_a_latency_that_grew_with_its_run_is_no_baseline() -> None:
    """Back at 16 req/s after an overloaded 40, the strip read '810 ms ▼197,379 ms' beside a previous
    '≥ 198.2 s', a figure set by the run's length (a walkthrough): no change against it."""
    from ui.layout import grew

    now = {"ttft_p99_ms": 810.0, "tpot_p99_ms": 20.0, "slo_attainment": 0.99}
    prev = {"ttft_p99_ms": 198_200.0, "tpot_p99_ms": 21.0, "slo_attainment": 0.01,
            grew("ttft_p99_ms"): 24.0, grew("tpot_p99_ms"): 24.0}  # fmt: skip
    rows = {label: change for label, _, change in strip_rows(now, prev)}
    assert rows["TTFT p99"] == "" and rows["TPOT p99"] == ""
    assert "▲98.0 pts" in rows["SLO attainment"]  # the other figures still compare
    kept = strip_rows(now, {**prev, grew("ttft_p99_ms"): None, grew("tpot_p99_ms"): None})
    assert kept[0][2] != ""  # a previous run that kept up: compared
    # a previous TPOT that stayed level while its TTFT grew (`Shortfall.steady`) is compared
    level = {label: change for label, _, change in strip_rows(now, {**prev, grew("tpot_p99_ms"): None})}
    assert level["TTFT p99"] == "" and "▼1.0 ms" in level["TPOT p99"]
    # the run's own: a growing TTFT reads at least its value, a level TPOT as it is
    own = {label: v for label, v, _ in strip_rows(now, {}, 3.0, {"ttft_p99_ms": 3.0, "tpot_p99_ms": None})}
    assert own["TTFT p99"].startswith("≥") and own["TPOT p99"] == "20.0 ms"
    # and one that stays level while the queue grows (`growth`'s LEVEL_KEY) says so in its change
    from ui.layout import LEVEL_KEY

    marked = {"ttft_p99_ms": 3.0, "tpot_p99_ms": None, LEVEL_KEY + "tpot_p99_ms": 0.0}
    rows = {label: (v, c) for label, v, c in strip_rows(now, prev, 3.0, marked)}
    assert rows["TPOT p99"] == ("20.0 ms", ":small[:orange[at saturation]]")


def test_a_change_reads_in_its_values_unit_and_a_collapse_is_not_cheaper() -> None:
    """'198.2 s' changes by '196.6 s', not '196,582 ms'; a cost change shows in dollars; a cost
    that fell while SLO attainment fell is grey (an overloaded run is not a better one)."""
    prev = {"ttft_p99_ms": 1_600.0, "tpot_p99_ms": 20.0, "slo_attainment": 0.929, "goodput_rps": 20.0,
            "usd_per_request": 0.00036, "usd_per_million_output_tokens": 1.40}  # fmt: skip
    now = {"ttft_p99_ms": 198_200.0, "tpot_p99_ms": 20.0, "slo_attainment": 0.008, "goodput_rps": 0.3,
           "usd_per_request": 0.00029, "usd_per_million_output_tokens": 1.10}  # fmt: skip
    rows = {label: (value, change) for label, value, change in strip_rows(now, prev)}
    assert rows["TTFT p99"] == ("198.2 s", ":small[:red[▲196.6 s]]")
    assert rows["SLO attainment"][1] == ":small[:red[▼92.1 pts]]"
    assert rows["Goodput"][1] == ":small[:red[▼19.70 req/s]]"
    assert rows["$ / request"][1] == ":small[:gray[▼$0.000070]]"
    assert rows["$ / 1M output tokens"] == ("$1.10", ":small[:gray[▼$0.30]]")
    # the same fall in cost with SLO attainment held is good news
    held = strip_rows({**now, "slo_attainment": 0.929}, prev)
    assert dict((a, c) for a, _, c in held)["$ / request"] == ":small[:green[▼$0.000070]]"
    # a fall the strip shows, however small, and an unsustainable run: not green (a collapse one
    # step at a time fell 0.3 points a step and showed each cheaper request in green)
    step = strip_rows({**now, "slo_attainment": 0.926}, prev)
    assert dict((a, c) for a, _, c in step)["$ / request"] == ":small[:gray[▼$0.000070]]"
    # an unsustainable run's costs are marked as Results and `run` mark them (they stood bare: a
    # browser review, '$0.000574 ▲$0.000123' where Results read '$0.000574 ... at saturation')
    over = {a: (v, c) for a, v, c in strip_rows({**now, "slo_attainment": 0.929}, prev, shortfall_rps=3.0)}
    assert over["$ / request"] == ("$0.000290", ":small[:orange[at saturation]]")
    assert over["$ / 1M output tokens"] == ("$1.10", ":small[:orange[at saturation]]")


def test_compare_of_a_scenario_with_itself_shows_neutral_deltas() -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({**to_link(short(), DEFAULT_PRESET), "a": "current", "b": "current"})
    at.switch_page("app_pages/compare.py").run()
    assert_clean(at)
    heads = [m for m in at.metric if m.label.endswith(": B")]
    assert len(heads) == 5
    for m in heads:  # a share's change is in points
        assert m.proto.delta.startswith("0.0 pts vs A's " if m.label.startswith("SLO") else "0.0% vs A's "), (
            m.proto.delta
        )
        assert m.proto.direction == MetricProto.MetricDirection.NONE


def test_counts_read_to_three_figures() -> None:
    from ui.layout import fmt_count, fmt_rps

    assert [fmt_count(v) for v in (2380.4, 31.44, 2.054, 0.0, None)] == ["2,380", "31.4", "2.05", "0", "–"]
    assert fmt_rps(0.0834) == "0.0834 req/s" and fmt_rps(None) == "–"


def test_compare_of_unpaired_scenarios_marks_its_changes_and_greys_them() -> None:
    """A at 19 req/s against chat-colocated at 16: the cards' changes are as much the load's as the
    deployment's; they read 'not paired' and carry no colour (they showed -19.5% goodput in red)."""
    from engine.scenario.codec import apply_overrides

    a = apply_overrides(short(), {"workload.arrival.rate_rps": 19.0})
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({**to_link(a, DEFAULT_PRESET), "a": "current", "b": "chat-colocated"})
    at.switch_page("app_pages/compare.py").run()
    assert_clean(at)
    assert any("not paired" in i.value for i in at.info)
    heads = [m for m in at.metric if m.label.endswith(": B")]
    assert len(heads) == 5 and all(m.proto.delta.endswith("not paired") for m in heads)
    assert all(m.proto.color == MetricProto.MetricColor.GRAY for m in heads)
    table = next(df.value for df in at.dataframe if "better" in df.value.columns)
    assert "not paired" in set(table["better"]) and not {"A", "B"} & set(table["better"])  # no side wins
    # ... but a fixed bill, which no request moves, is compared ('not paired' on cost per hour: a review)
    per_hour = table.loc[table["figure"] == "Cost per hour", "better"]
    assert len(per_hour) == 1 and per_hour.iloc[0] != "not paired"


def test_what_pairs_a_comparison() -> None:
    """The same workload, window and seed see the same requests; a window's length changes every
    request's lengths, so it unpairs (a 120 s A against a 600 s B read as paired); a trace's
    requests do not depend on the seed, so two seeds of one trace stay paired."""
    from engine import explain as ex
    from engine.scenario.codec import apply_overrides, load_preset

    chat = load_preset("chat-colocated")
    assert not ex.unpaired(chat, apply_overrides(chat, {"deployment.pools[0].count": 2}))
    assert ex.unpaired(chat, apply_overrides(chat, {"duration_s": 120.0}))
    assert ex.unpaired(chat, apply_overrides(chat, {"seed": 2}))
    # a client's ceiling holds the same requests back: paired (the other rate is not)
    assert not ex.unpaired(chat, apply_overrides(chat, {"workload.arrival.max_in_flight": 8}))
    assert ex.unpaired(chat, apply_overrides(chat, {"workload.arrival.rate_rps": 20.0}))
    # an SLO target judges the same requests: paired (an edit of the target alone read "not paired")
    targets = {"workload.classes[0].slo.tpot_ms": 50.0, "workload.classes[0].slo.percentile": 99.0}
    assert not ex.unpaired(chat, apply_overrides(chat, targets))
    assert ex.unpaired(chat, apply_overrides(chat, {"workload.classes[0].input.mean": 1500}))
    trace = load_preset("mooncake-replay")
    assert not ex.unpaired(trace, apply_overrides(trace, {"seed": 2}))
    # a class's pins, priority and overflow route and order the same requests: the portfolio preset
    # against its own counterpart read "not paired" (a review)
    assert not ex.unpaired(load_preset("portfolio-chat-batch"), load_preset("portfolio-h100-only"))
    pins = {"workload.classes[0].priority": 3, "workload.classes[0].overflow": "reject"}
    assert not ex.unpaired(chat, apply_overrides(chat, pins))


def test_a_preset_switch_leaves_no_arrows_against_the_old_preset() -> None:
    """After a switch of preset the live strip compared two unrelated scenarios ('TTFT p99 810 ms
    ▼12,939 ms' in green, a browser review): the first run of a preset has no previous run."""
    from tests.app.harness import app

    def arrows(at: AppTest) -> list[str]:
        return [m.value for m in at.sidebar.markdown if "▲" in m.value or "▼" in m.value]

    at = app("workload", short(**{"workload.arrival.rate_rps": 22.0}))
    at.number_input(key="fg:rate-typed").set_value(18.0).run()
    assert_clean(at)
    assert arrows(at)  # an edit of the same preset: its change from the previous run
    at.selectbox(key="fg:preset").set_value("chat-colocated").run()
    assert_clean(at)
    assert not arrows(at)


def test_a_cards_fall_reads_with_the_pages_minus_and_keeps_its_arrow_and_colour() -> None:
    """'-22.0% vs A's 807 ms' on a card stood beside '−22.0%' in the table (a review): the card writes the
    page's minus sign, and its arrow points down, green for a latency that fell, red for goodput."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({**to_link(short(), DEFAULT_PRESET), "a": "current", "b": "chat-colocated"})
    at.switch_page("app_pages/compare.py").run()
    assert_clean(at)
    heads = {m.label: m.proto for m in at.metric if m.label.endswith(": B")}
    falls = {label: p for label, p in heads.items() if p.delta.startswith("−")}
    assert falls and not any(p.delta.startswith("-") for p in heads.values()), [
        p.delta for p in heads.values()
    ]
    for label, p in falls.items():
        assert p.direction == MetricProto.MetricDirection.DOWN, label
        lower_better = label.startswith(("TTFT", "TPOT", "$"))
        want = MetricProto.MetricColor.GREEN if lower_better else MetricProto.MetricColor.RED
        assert p.color in (want, MetricProto.MetricColor.GRAY), (label, p.color)


def _strip_heading(last: dict[str, float] | None) -> str:
    """The live strip's title and the line under it, for a run of the default preset after a `last` run's figures (None: none)."""
    at = AppTest.from_string(
        "import streamlit as st\n"
        "from engine.scenario.codec import DEFAULT_PRESET, apply_overrides, load_preset\n"
        "from engine.serving import simulate\n"
        "from ui import layout\n"
        "sc = apply_overrides(load_preset(DEFAULT_PRESET), {'duration_s': 30.0})\n"
        "layout.live_strip(simulate(sc), st.sidebar.empty())\n",
        default_timeout=60,
    )
    if last is not None:
        at.session_state["fg_live_now"], at.session_state["fg_live_preset"] = last, None
    at.run()
    assert_clean(at)
    return next(str(m.value) for m in at.sidebar.markdown if str(m.value).startswith("**Live result**"))


def test_the_strip_says_its_arrows_are_against_the_last_run() -> None:
    """The strip's arrows are against the run before, which nothing on it said: a freshly opened link shows
    none where its sender's shows some (a browser review). The line under its title says so once there is one."""
    assert "vs last" not in _strip_heading(None)
    last = {"ttft_p99_ms": 900.0, "tpot_p99_ms": 30.0, "slo_attainment": 0.5}
    assert _strip_heading(last).endswith("requests · ▲▼ vs last]]")


def test_a_rate_never_reads_in_exponent_form() -> None:
    """'Goodput 9.4e-06 req/s ▼7.83e-06 req/s' in the live strip after a backlog's replay (a browser review)."""
    from ui.layout import fmt_rps

    assert [fmt_rps(v) for v in (9.4e-06, -7.83e-06, 0.0314, 0.5, 16.09)] == [
        "0.0000094 req/s",
        "-0.0000078 req/s",
        "0.0314 req/s",
        "0.5 req/s",
        "16.09 req/s",
    ]
