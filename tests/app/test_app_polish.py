"""App tests of the polish items: cards that show their whole value, typed SLO targets, honest colours."""

from __future__ import annotations

import json

from tests.app.harness import app, assert_clean, scenario_of, short, text_of
from ui.text import plain

BANDED = ("$ / 1M output tokens", "Goodput per $", "Energy per output token")


def test_cost_cards_keep_their_band_under_the_value() -> None:
    """A band beside the value ('$2.10 (−1% to +2%)') made a narrow card cut it short; it goes under, as the headline's."""
    at = app("results")
    assert_clean(at)
    cards = {m.label: m for m in at.metric if m.label in BANDED}
    assert set(cards) == set(BANDED)
    for label, card in cards.items():
        assert "%" not in card.value and "(" not in card.value, (label, card.value)
        if label.startswith("Energy"):  # energy's band is not shown: its coverage is not measured
            assert not card.delta, (label, card.delta)
        else:
            assert card.delta and "%" in card.delta, (label, card.delta)


TTFT = "workload.classes[0].slo.ttft_ms"
TPOT = "workload.classes[0].slo.tpot_ms"


def test_slo_targets_can_be_typed() -> None:
    """Beside each target's slider, a box that takes any value in the field's range (733 ms, or past the slider)."""
    from tests.app.harness import scenario_of

    at = app("slo")
    assert_clean(at)
    at.number_input(key=f"fg:{TTFT}-typed").set_value(733.0).run()
    at.number_input(key=f"fg:{TPOT}-typed").set_value(412.5).run()  # past the slider's 300 ms
    slo = scenario_of(at).workload.classes[0].slo
    assert (slo.ttft_ms, slo.tpot_ms) == (733.0, 412.5)
    assert at.slider(key=f"fg:{TTFT}").value == 733.0  # the slider follows


def test_a_typed_slo_target_out_of_range_is_refused_naming_the_field() -> None:
    from tests.app.harness import scenario_of

    at = app("slo")
    before = scenario_of(at).workload.classes[0].slo.ttft_ms
    at.number_input(key=f"fg:{TTFT}-typed").set_value(0.0).run()
    said = " ".join(w.value for w in at.warning)
    assert plain(TTFT) in said and plain("0.01 to 3,600,000") in said, said  # the scenario's own range
    assert scenario_of(at).workload.classes[0].slo.ttft_ms == before
    # a link's target under the box's old floor of 0.1 ms shows as it is (it read "target 0.1 ms")
    at = app("slo", short(**{"workload.classes[0].slo.tpot_ms": 0.05}))
    assert_clean(at)
    assert at.number_input(key=f"fg:{TPOT}-typed").value == 0.05


def test_share_bars_are_not_drawn_in_the_red_that_marks_misses() -> None:
    from ui import tables

    bars = [
        (name, col, conf["type_config"]["color"])
        for name, configs in vars(tables).items()
        if name.isupper() and isinstance(configs, dict)
        for col, conf in configs.items()
        if isinstance(conf, dict) and conf.get("type_config", {}).get("type") == "progress"
    ]
    assert len(bars) >= 6  # met SLO, the utilisation columns, shares of the bill
    assert all(color not in (None, "primary", "red") for _, _, color in bars), bars


def test_a_prefix_cache_that_is_off_shows_no_tiers_in_use() -> None:
    from tests.app.harness import short

    off = app("strategy")
    assert_clean(off)
    labels = [t.label for t in off.toggle]
    assert "Reuse cached prefixes" in labels and "Cache in HBM" not in labels
    assert not next(t for t in off.toggle if t.label == "Reuse cached prefixes").value
    on = app("strategy", scenario=short("agentic-cache"), preset="agentic-cache")
    assert_clean(on)
    assert "Cache in HBM" in [t.label for t in on.toggle]


def test_the_utilisation_legend_names_each_line_as_drawn() -> None:
    """One entry per line, with its pool's colour and its column's dash: no grey dash entries to combine with colours."""
    import pandas as pd

    from ui import charts

    ts = pd.DataFrame(
        {"t_s": [0.0, 1.0] * 2, "pool": ["prefill"] * 2 + ["decode"] * 2, "compute_util": 0.5, "busy": 0.9}
    )
    fig = charts.timeseries(ts, ["compute_util", "busy"], "Utilisation", "share", percent=True)
    shown = [t for t in fig.data if t.showlegend is not False]
    assert [t.name for t in shown] == ["prefill compute", "prefill busy", "decode compute", "decode busy"]
    assert len({(t.line.color, t.line.dash) for t in shown}) == 4 and len(fig.data) == 4
    # one entry a row, the figure grown by them, the legend starting under the x axis's title (at the
    # shared -0.25 of the plot, wrapped rows in a third of the page squeezed the plot onto "time (s)")
    assert fig.layout.legend.orientation == "v"
    assert fig.layout.height == 300 + 4 * charts.LEGEND_ROW_PX
    assert fig.layout.legend.y * (300 - 50 - charts.AXIS_BELOW_PX) <= -charts.AXIS_BELOW_PX + 1e-9


def test_a_target_label_in_a_third_of_the_page_stays_off_the_curves() -> None:
    """Compare draws its CDFs three to a row: a label's characters cover half as much again of that
    axis as of a half-page chart's, and the half-page estimate put 'SLO 5 ms @ p90' left of its line
    across the other run's curve. Where no place beside the line is clear, the label's background is
    opaque, so it reads over a curve rather than through it."""
    import numpy as np
    import pandas as pd

    from ui import charts

    frac = np.linspace(0.0, 1.0, 50)
    frame = pd.DataFrame({
        "run": ["A"] * 50 + ["B"] * 50,
        "latency_ms": np.concatenate([np.linspace(9.0, 20.0, 50), np.where(frac <= 0.3, 3.0, 22.0)]),
        "fraction": np.concatenate([frac, frac]),
    })  # fmt: skip
    targets = pd.DataFrame([{"class": "all", "metric": "tpot", "target_ms": 8.0, "percentile": 90.0}])
    curves = [(g["fraction"].to_numpy(), g["latency_ms"].to_numpy()) for _, g in frame.groupby("run")]
    label = 6  # characters: as wide on the axis as 'SLO 8 ms @ p90' was at the former 0.013 of it each
    # across half a page the label fits left of its line above B's foot (3 ms); across a third it
    # reaches over B's foot, and goes up to where B has moved on (A holds the right side)
    assert charts._label_place(curves, 8.0, label, 0.0, 23.0, False, 0.03, columns=2) == (0.03, "right")
    y, side = charts._label_place(curves, 8.0, label, 0.0, 23.0, False, 0.03, columns=3)
    assert (round(y, 2), side) == (0.33, "right")
    fig = charts.cdf(frame, "tpot", targets, series="run", columns=3)
    (note,) = fig.layout.annotations
    assert note.text == "SLO 8 ms @ p90" and note.bgcolor == charts.LABEL_BACKGROUND
    assert float(note.bgcolor.rsplit(",", 1)[1].rstrip(")")) >= 0.9  # opaque enough to hide a curve under it


def test_a_long_target_is_labelled_in_its_own_unit() -> None:
    """offline-batch's hour-long TTFT target read 'SLO 3,600,000 ms @ p50' on its chart; now 'SLO 60.0 min'."""
    import numpy as np
    import pandas as pd

    from ui import charts

    frac = np.linspace(0.0, 1.0, 20)
    frame = pd.DataFrame({"run": ["A"] * 20, "latency_ms": np.linspace(1e5, 2e5, 20), "fraction": frac})
    for target, said in (
        (3_600_000.0, "SLO 60.0 min @ p50"),
        (30_000.0, "SLO 30.0 s @ p50"),
        (2_000.0, "SLO 2 s @ p50"),  # on this axis in seconds (it read 'SLO 2,000 ms' under ticks in s)
    ):
        targets = pd.DataFrame([{"class": "all", "metric": "ttft", "target_ms": target, "percentile": 50.0}])
        (note,) = charts.cdf(frame, "ttft", targets, series="run").layout.annotations
        assert note.text == said
    # an axis in ms keeps its targets in ms
    targets = pd.DataFrame([{"class": "all", "metric": "ttft", "target_ms": 2_000.0, "percentile": 50.0}])
    (note,) = charts.cdf(
        frame.assign(latency_ms=frame["latency_ms"] / 100), "ttft", targets, series="run"
    ).layout.annotations
    assert note.text == "SLO 2,000 ms @ p50"


def test_the_workload_page_sets_a_ceiling_on_requests_in_flight_and_results_say_what_it_held() -> None:
    from tests.app.harness import scenario_of, short

    at = app("workload", short("chat-colocated"), "chat-colocated")
    assert_clean(at)
    box = next(n for n in at.number_input if n.label == "Most in flight")
    assert box.value is None  # no ceiling until one is typed
    box.set_value(8).run()
    assert_clean(at)
    assert scenario_of(at).workload.arrival.max_in_flight == 8
    at.switch_page("app_pages/results.py").run()
    assert_clean(at)
    said = [plain(i.value) for i in at.info if "ceiling" in i.value]
    assert said and "at most 8 in flight" in said[0] and "requests for a slot" in said[0], said
    # 16 req/s through 8 slots falls behind, and says where the backlog waits; the latencies, timed
    # from the send, are figures (not floors that grow with the run)
    assert any("waits at the client" in plain(e.value) for e in at.error)
    tiles = {m.label: m.value for m in at.metric}
    assert not tiles["TTFT p99"].startswith("≥") and not tiles["TPOT p99"].startswith("≥"), tiles
    # its goodput is what was served, over the time the window's requests took (it read 16 req/s)
    assert float(tiles["Goodput"].split()[0]) < 3.0, tiles
    # the SLO page: within target for the requests sent, said as the advisor says it (not a failure)
    at.switch_page("app_pages/slo.py").run()
    assert_clean(at)
    assert any("within target for the requests sent" in i.value for i in at.info)
    assert not any("chat" in e.value for e in at.error)


def test_the_arrival_chart_shades_the_warm_up_it_does_not_measure() -> None:
    import pandas as pd

    from ui import charts

    curve = pd.DataFrame({"t_s": [0.0, 600.0], "rate_rps": [8.0, 8.0]})
    shaded = charts.rate(curve, "Arrivals", warmup_s=300.0)
    (band,) = shaded.layout.shapes
    assert (band.x0, band.x1) == (0, 300.0)
    assert [a.text for a in shaded.layout.annotations] == ["warm-up: not measured"]
    assert not charts.rate(curve, "Arrivals").layout.shapes  # no warm-up, nothing shaded
    ts = pd.DataFrame({"t_s": [0.0, 5.0], "pool": ["mixed", "mixed"], "busy": [0.5, 0.6]})
    (pools,) = charts.timeseries(ts, ["busy"], "Busy", "fraction", warmup_s=300.0).layout.shapes
    assert (pools.x0, pools.x1) == (0.0, 300.0)


def test_a_holds_to_percentile_is_written_to_a_tenth() -> None:
    """The per-class table's 'holds' column printed every digit ('p90.77398292315', cut off)."""
    import pandas as pd

    from ui import tables

    assert [tables.holds_pct(p) for p in (90.77398292315, 99.96, 99.999, 100.0, 12.0)] == [
        90.8,
        99.96,
        99.99,  # never p100 for a target a request misses
        100.0,
        12.0,
    ]
    frame = pd.DataFrame(
        {"class": ["chat"], "ttft_holds_to_pct": [97.261938006144], "tpot_holds_to_pct": [100.0]}
    )
    shown = tables.tail_view(frame)
    assert shown.loc[0, "ttft_holds_to_pct"] == 97.3 and shown.loc[0, "tpot_holds_to_pct"] == 100.0
    # the verdict and the latencies it rests on first: in view at 1,100 px (a review)
    full = frame.assign(
        passes=[True],
        breaks=[""],
        ttft_target_ms=[9.0],
        ttft_at_percentile_ms=[1.0],
        tpot_target_ms=[8.0],
        tpot_at_percentile_ms=[2.0],
    )
    assert list(tables.tail_view(full).columns[:7]) == [
        "class",
        "passes",
        "breaks",
        "ttft_at_percentile_ms",
        "ttft_target_ms",  # each beside its target (a review found the targets off the screen)
        "tpot_at_percentile_ms",
        "tpot_target_ms",
    ]


def test_a_latency_no_answer_reaches_reads_never_answered() -> None:
    """prefill-loss-fallback's batch class rejects over a tenth of its requests: its TTFT and TPOT at p90
    read 'None' in the per-class table (a review); they read 'never answered', the other class's figures
    in their columns' formats, and the page shows it."""
    from engine import explain as ex
    from engine import simulate
    from engine.scenario.codec import load_preset
    from ui import tables

    sc = load_preset("prefill-loss-fallback")
    rows, cols = tables.unanswered(
        tables.tail_view(ex.slo_tail(sc, simulate(sc).requests)), tables.slo_tail_columns(set())
    )
    batch, chat = (rows[rows["class"] == c].iloc[0] for c in ("batch", "chat"))
    assert batch["ttft_at_percentile_ms"] == batch["tpot_at_percentile_ms"] == tables.NEVER_ANSWERED
    assert chat["ttft_at_percentile_ms"].endswith(" ms") and chat["tpot_at_percentile_ms"].endswith(" ms")
    assert cols["ttft_at_percentile_ms"]["type_config"]["type"] == "text"
    at = app(scenario=sc, preset="prefill-loss-fallback")
    assert_clean(at)
    assert any(tables.NEVER_ANSWERED in df.value.to_string() for df in at.dataframe if "class" in df.value), (
        "the per-class table says it"
    )


def test_the_specialisation_table_names_every_column_it_shows() -> None:
    """The 'Should a phase get its own chip?' table showed the frame's own names and fractions
    (model_change_months, chip_hours_share 0.5, binding_share 0.6411): each column now has a label."""
    from engine import explain as ex
    from engine.serving.run import simulate
    from tests.app.harness import short
    from ui import tables

    spec = ex.specialisation(simulate(short("chat-disaggregated")), 12.0)
    assert set(spec.columns) == set(tables.SPECIALISATION)
    shown = {k: c for k, c in tables.SPECIALISATION.items() if c is not None}
    assert all("_" not in c["label"] for c in shown.values())  # no snake_case header
    assert tables.SPECIALISATION["text"] is None  # said above the table, sentence by sentence
    assert tables.ROOFLINE["tokens"]["type_config"]["format"] == "%,.0f"  # a mean prompt, not 1,983.411


def test_a_third_of_the_page_seeds_cdf_puts_its_legend_under_the_plot() -> None:
    """Compare's three seed-band CDFs stacked their legend ('range of 10 seeds', A, B) over the title
    (a review): a third of the page has no room beside it."""
    import pandas as pd

    from ui import charts

    frame = pd.DataFrame({"class": ["all"] * 3, "latency_ms": [10.0, 20.0, 40.0], "fraction": [0.1, 0.5, 1.0],
                          "low_ms": [9.0, 18.0, 35.0], "high_ms": [11.0, 22.0, 45.0]})  # fmt: skip
    third = charts.cdf_band(frame, "ttft", None, seeds=10, columns=3)
    half = charts.cdf_band(frame, "ttft", None, seeds=10, columns=2)
    assert third.layout.legend.y < 0 < half.layout.legend.y
    assert third.layout.height > half.layout.height  # the legend's row added, not taken from the plot
    # over three decades a third of the page keeps the powers of ten: nine 1-2-5 ticks stood upright and
    # pushed the axis's title onto the legend (Compare's E2E with three seeds: a review)
    wide = pd.DataFrame({"class": ["all"] * 3, "latency_ms": [200.0, 5000.0, 99000.0], "fraction": [0.1, 0.5, 1.0],
                         "low_ms": [190.0, 4000.0, 90000.0], "high_ms": [210.0, 6000.0, 100000.0]})  # fmt: skip
    assert len(charts.cdf_band(wide, "e2e", None, seeds=3, columns=2).layout.xaxis.tickvals) > 6
    assert list(charts.cdf_band(wide, "e2e", None, seeds=3, columns=3).layout.xaxis.tickvals) == [
        1e3,
        1e4,
        1e5,
    ]


def test_an_optional_number_box_can_be_emptied_in_the_browser() -> None:
    """A batching box cleared in Chromium was sent as 0 and refused ('0 is not allowed: the allowed
    range is 1 to 4,096') where the caption says an empty field takes the default (a review): a box
    the browser may empty is made with `value=None`, which is what lets Streamlit's box send None."""
    import unittest.mock

    from ui import bound

    seen: list[dict[str, object]] = []
    with (
        unittest.mock.patch.object(bound, "current", lambda path, default=None: None),
        unittest.mock.patch.object(bound, "bound", lambda widget, path, label, **kw: seen.append(kw)),
    ):
        bound.number("deployment.batching.max_batch", "Max batch", integer=True, lo=1, hi=4096, optional=True)
        bound.number("deployment.mem_fraction", "Memory", lo=0.5, hi=0.98)
    assert "value" in seen[0] and seen[0]["value"] is None and seen[0]["placeholder"] == "default"
    assert "value" not in seen[1]  # a field that is never empty keeps Streamlit's own


def test_a_class_share_says_sessions_and_requests_where_turns_differ() -> None:
    """A class of three-turn sessions at 20% said '20% of traffic' where it sent about 43% of the
    requests (a review): with multi-turn classes the share is of the sessions, and the requests' share
    is said beside it; the prompt preview is said to be of a turn's new tokens."""
    from engine.scenario.codec import apply_overrides

    sc = short()
    c = sc.workload.classes[0].model_dump()
    multi = c | {"name": "multi", "share": 0.2, "multi_turn": {"turns_mean": 3.0, "think_time_s": 5.0}}
    at = app("workload", apply_overrides(sc, {"workload.classes": [c | {"share": 0.8}, multi]}))
    assert_clean(at)
    labels = [s.label for s in at.slider if s.label.startswith("Share")]
    assert labels == [
        "Share of sessions (now 80%, 57% of requests)",
        "Share of sessions (now 20%, 43% of requests)",
    ]
    assert any("carries the conversation so far" in c.value for c in at.caption)
    # one class: its share does nothing, and says so ('now 100% of traffic' moved nothing but Reset: a
    # review), as does its priority; nor does one class of sessions read 'Share of sessions (now 100%, ...)'
    for one in (app("workload"), app("workload", short("agentic-cache"), "agentic-cache")):
        assert [s.label for s in one.slider if s.label.startswith("Share")] == [
            "Share (unused: one class takes all the traffic)"
        ]
        assert "Priority (unused: one class)" in [n.label for n in one.number_input]
    # a trace gives each row its class: its share slider is off, not a control that moves nothing (a review)
    traced = app("workload", short("mooncake-replay"), "mooncake-replay")
    shares = [s for s in traced.slider if s.label.startswith("Share")]
    assert shares and all(s.label == "Share (unused: the trace gives each row its class)" for s in shares)
    assert all(s.disabled for s in shares)


def test_the_slo_page_says_when_targets_steer_the_run_and_no_empty_e2e_line() -> None:
    """On enterprise-mixed (early_reject admission) one class's TTFT target moved every class's figures,
    unsaid; a class without an E2E target read 'E2E p90 = – (target –)' beside one that has it (a review)."""
    from engine.scenario.codec import apply_overrides

    sc = apply_overrides(short("enterprise-mixed"), {"workload.classes[0].slo.e2e_ms": 2000.0})
    at = app("slo", sc, "enterprise-mixed")
    assert_clean(at)
    assert any("the targets also steer the run" in c.value for c in at.caption)
    verdicts = [e.value for kind in ("success", "info", "error") for e in getattr(at, kind)]
    e2e = [v for v in verdicts if "E2E p" in v]
    assert len(e2e) == 1 and "(target –)" not in e2e[0]
    # a class with an E2E target gets its curve beside TTFT's and TPOT's (a class failing on it stood beside
    # two charts under their targets: a browser review); no largest-gap chart where no class sets one
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert [t for t in titles if "by percentile" in t] == [
        "TTFT by percentile",
        "TPOT by percentile",
        "E2E by percentile",
    ], titles


def test_every_setting_on_the_strategy_page_says_what_it_does() -> None:
    """The degrade, elastic, link-fault and edge fields had no help beside their label ("Below capacity",
    "Link factor", "Check (s)": a review); each one built from its model's fields now has some."""
    for preset in ("kv-link-fault", "edge-offload"):
        at = app("strategy", preset=preset)
        # not assert_clean: the short window puts kv-link-fault's fault past its end, which is warned
        assert not at.exception, preset
        bare = [
            w.label
            for kind in ("number_input", "toggle", "selectbox", "slider", "button_group")
            for w in getattr(at.main, kind)
            if not (w.help or "").strip()
        ]
        assert not bare, (preset, bare)


def test_a_class_whose_percentile_falls_among_rejected_requests_says_so() -> None:
    """Interactive's TTFT target at 10 ms: early rejection turns most of the class away, and its p90
    falls among requests never answered; the SLO page read 'TTFT p90 = –' with no reason (a review)."""
    from engine.scenario import codec as io
    from tests.app.harness import short as short_of

    s = io.apply_overrides(short_of("enterprise-mixed"), {"workload.classes[0].slo.ttft_ms": 10})
    at = app("slo", scenario=s, preset="enterprise-mixed")
    verdicts = [e.value for e in at.error if e.value.startswith("**interactive**")]
    assert verdicts and "TTFT p90 = never answered" in verdicts[0] and "= –" not in verdicts[0]


def test_a_constant_length_shows_no_maximum_and_a_longer_one_raises_it() -> None:
    """A constant length is never clipped: its Max box did nothing (a review). It is not shown, and a
    constant above the kept maximum raises it rather than being refused over a hidden field."""
    at = app(
        "workload",
        short(**{"workload.classes[0].input": {"kind": "constant", "tokens": 1024, "max_tokens": 16384}}),
    )
    assert scenario_of(at).workload.classes[0].input.kind == "constant"
    assert not [n for n in at.number_input if n.label == "Max" and "input" in (n.key or "")]
    tokens = next(n for n in at.number_input if (n.key or "").endswith("classes[0].input.tokens"))
    tokens.set_value(20_000).run()
    dist = scenario_of(at).workload.classes[0].input
    assert dist.tokens == 20_000 and dist.max_tokens >= 20_000


def test_a_class_passing_only_with_chips_as_fast_as_modelled_is_a_warning() -> None:
    """moe-deepseek-dp-ep: the headline said SLO attainment runs from 0% to 100% with the chips at their
    bands' edges, while the advisor read 'class chat passes' in blue (a review). Once the spread is
    known the advisor says the pass rests on chips as fast as modelled, as a warning."""
    at = app("results", preset="moe-deepseek-dp-ep")
    assert not at.exception
    warned = [text_of(w.value) for w in at.warning if text_of(w.value).startswith("Class chat passes")]
    assert warned and "with every chip at its band's pessimistic edge it misses" in warned[0]
    assert not [i for i in at.info if text_of(i.value).startswith("Class chat passes")]


def test_a_lesson_or_finding_that_names_a_page_links_to_it() -> None:
    """agentic-cache's lesson and prefill-loss-fallback's finding sent the user to 'the Strategy page' in
    plain text (a browser review): a link follows them."""
    from engine.scenario.codec import load_preset

    for preset in ("agentic-cache", "prefill-loss-fallback"):  # (its fault is past the short window)
        at = app("results", load_preset(preset), preset=preset)
        assert_clean(at)
        links = [p for p in at.get("page_link") if "Strategy page" in p.proto.label]
        assert links, preset


def test_a_window_without_a_request_draws_the_whole_results_page() -> None:
    """At 0.0001 req/s over 10 s the cost table's None per request raised a TypeError and everything below
    it was lost (a browser review): the page draws whole, the advisor saying there is no work."""
    from engine.scenario.codec import apply_overrides, load_preset

    empty = apply_overrides(
        load_preset("chat-disaggregated"), {"workload.arrival.rate_rps": 0.0001, "duration_s": 10.0}
    )
    at = app("results", empty, preset="chat-disaggregated")
    assert_clean(at)
    assert any("no work to advise on" in c.value for c in at.caption)
    assert [m.value for m in at.metric if m.label == "Energy per output token"] == ["n/a"]  # not '0.00 J'


def test_a_findings_sentence_opens_with_a_capital_unless_it_opens_with_an_id() -> None:
    # the advisor's findings opened 'class chat passes', 'the $29.88/h bill' on the page (a review)
    from ui.advisor import opening

    assert opening("class chat passes: p90 TTFT 332 ms") == "Class chat passes: p90 TTFT 332 ms"
    assert opening("the $29.88/h bill splits evenly") == "The $29.88/h bill splits evenly"
    assert (
        opening("h200 (pools prefill, decode) is uncalibrated")
        == "h200 (pools prefill, decode) is uncalibrated"
    )
    assert opening("vllm is the stack") == "vllm is the stack" and opening("KV transfer") == "KV transfer"


def test_gamma_arrivals_at_cv_one_say_they_are_poissons() -> None:
    """Choosing 'gamma (bursty)' left every figure as it was, the CV's default 1 being Poisson's (a review):
    at CV 1 a caption says so; above 1 it goes."""
    from engine.scenario import codec as io

    sc = io.apply_overrides(short("chat-colocated"), {"workload.arrival.kind": "gamma"})
    at = app("workload", sc, "chat-colocated")
    assert_clean(at)
    said = "At CV 1 gamma arrivals are Poisson's"
    assert any(said in text_of(c.value) for c in at.caption)
    at = app("workload", io.apply_overrides(sc, {"workload.arrival.cv": 2.0}), "chat-colocated")
    assert not any(said in text_of(c.value) for c in at.caption)


def test_the_slo_page_warns_of_a_ttft_target_under_the_first_token() -> None:
    """25 ms on moe-deepseek-h200, whose first tokens each take 70.9 ms: the page read 'holds to p0' alone (a
    browser review)."""
    at = app("slo", short("moe-deepseek-h200", **{"workload.classes[0].slo.ttft_ms": 25.0}))
    assert not at.exception, [e.value for e in at.exception]
    said = [text_of(w.value) for w in at.warning]
    assert any("its TTFT target of 25 ms is at or under the" in w for w in said), said
    shown = " ".join(text_of(m.value) for m in [*at.error, *at.success, *at.info, *at.warning])
    assert "TTFT p90" in shown and "holds to p0" not in shown and "no request within it" in shown, shown


def test_the_stacks_iteration_policy_says_whose_default_it_is() -> None:
    """The iteration select offered 'mixed (default)' beside 'mixed', alike in words (a browser review): the
    stack's entry names the stack whose default it is."""
    at = app("strategy")
    assert not at.exception, [e.value for e in at.exception]
    box = next(s for s in at.selectbox if s.label == "Iteration")
    assert box.options[:2] == ["mixed (vLLM's default)", "mixed"], box.options
    assert "a policy chosen by name stays whatever the stack" in str(box.help)


def test_results_say_a_kv_hand_off_between_chip_vendors() -> None:
    """Prefill on H100s, decode on MI300Xs: only `emit` said that the hand-off crosses vendors (a review)."""
    at = app("results", short(**{"deployment.pools[1].hardware": "mi300x"}))
    assert_clean(at)
    said = [text_of(i.value) for i in at.info if "crosses vendors" in text_of(i.value)]
    assert said and said[0].startswith(
        "The KV cache crosses vendors: prefill on NVIDIA (h100-sxm), decode on AMD"
    )
    plain_run = app("results")
    assert not [i for i in plain_run.info if "crosses vendors" in text_of(i.value)]
    at.switch_page("app_pages/strategy.py").run()  # where the chips are picked, too (a browser review)
    assert_clean(at)
    assert [i for i in at.info if text_of(i.value).startswith("The KV cache crosses vendors")]
