"""An unsustainable run on the pages: said before its figures, and no latency percentile shown bare."""

from __future__ import annotations

from typing import Any

from streamlit.testing.v1 import AppTest

from engine.scenario.codec import to_link
from tests.app.harness import APP, app, short, text_of

PRESET = "chat-disaggregated"
OVERLOADED = {"workload.arrival.rate_rps": 48.0}  # three times its load: twelve H100s sustain about 30
LATENCY = ("TTFT p99", "TPOT p99")


def _said(at: AppTest) -> list[str]:
    """The page's own notices of an unsustainable run (the advisor's finding apart), unescaped."""
    try:
        advice = {id(e) for e in at.get_by_key("fg-advisor").error}  # type: ignore[union-attr]
    except KeyError:
        advice = set()
    texts = [e.value.replace("\\", "").replace("\u2060", "") for e in at.error if id(e) not in advice]
    return [t for t in texts if t.startswith(("Unsustainable", "A: Unsustainable", "B: Unsustainable"))]


def test_results_says_a_run_is_unsustainable_and_marks_its_latencies() -> None:
    at = app("results", short(PRESET, **OVERLOADED), PRESET)
    assert not at.exception, [e.value for e in at.exception]
    said = _said(at)
    assert len(said) == 1 and "short by" in said[0] and "req/s offered" in said[0]
    heads = {m.label: m for m in at.metric if m.label in LATENCY}
    assert len(heads) == 2
    # TTFT: '≥ 1.2 min' over 'grows with run length', never a bare figure with a band; TPOT, level
    # while the queue before the first token grows (its full batches' pace): its band, marked
    ttft, tpot = heads["TTFT p99"], heads["TPOT p99"]
    assert ttft.value.startswith("≥ ") and ttft.proto.delta == "grows with run length", ttft.value
    assert not tpot.value.startswith("≥") and tpot.proto.delta.endswith("· at saturation"), tpot.proto.delta
    assert "TPOT" in said[0] and "stay level" in said[0]  # the line says which grow and which do not
    # its cost per request is the bill over full batches serving a backlog late: cheaper, and marked
    for label in ("$ / request", "$ / 1M output tokens"):  # (the second was left unmarked)
        cost = next(m for m in at.metric if m.label.startswith(label))
        assert cost.proto.delta.endswith("at saturation"), (label, cost.proto.delta)
    # said once: the advisor repeated the red line word for word as its first finding (a browser review)
    advisor = at.get_by_key("fg-advisor")
    assert not any(e.value.startswith("Unsustainable") for e in advisor.error)  # type: ignore[union-attr]
    assert sum(text_of(e.value).startswith("Unsustainable") for e in at.error) == 1
    at.switch_page("app_pages/slo.py").run()  # the live strip, on the editing pages
    strip = " ".join(m.value for m in at.sidebar.markdown).replace("\u00a0", " ")
    assert "≥" in strip and strip.count("grows with run length") == 1 and "at saturation" in strip, strip
    # the SLO page: said first, and each class's percentiles marked
    assert len(_said(at)) == 1
    verdicts = [e.value for e in at.error if e.value.startswith("**chat**")]
    assert len(verdicts) == 1 and "TTFT p90 = ≥" not in verdicts[0]
    assert "grows with run length); TPOT" not in verdicts[0]
    assert verdicts[0].count("grows with run length") == 1 and "at saturation" in verdicts[0], verdicts


def test_the_per_class_table_marks_its_latencies_only_when_the_run_falls_behind() -> None:
    from ui.tables import SLO_TAIL, slo_tail_columns

    assert slo_tail_columns(()) is SLO_TAIL
    marked = slo_tail_columns({"ttft", "tpot"})
    for col in ("ttft_at_percentile_ms", "tpot_at_percentile_ms"):
        assert marked[col]["type_config"]["format"].startswith("≥ ")
        assert "grows with run length" in marked[col]["help"]
    level = slo_tail_columns({"ttft"}, level={"tpot"})  # a TPOT level while the queue grows
    assert level["ttft_at_percentile_ms"]["type_config"]["format"].startswith("≥ ")
    assert level["tpot_at_percentile_ms"]["type_config"]["format"] == "%.1f ms, at saturation"


def test_results_of_a_run_that_keeps_up_says_nothing_of_it() -> None:
    at = app("results", short(PRESET), PRESET)
    assert not at.exception
    assert not _said(at)
    heads = [m for m in at.metric if m.label in LATENCY]
    assert heads and all(not m.value.startswith("≥") for m in heads)


def test_compare_marks_the_unsustainable_side_and_gives_no_latency_verdict() -> None:
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update({**to_link(short(PRESET, **OVERLOADED), PRESET), "a": "current", "b": PRESET})
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    said = _said(at)
    assert len(said) == 1 and said[0].startswith("A: Unsustainable")
    heads = {m.label: m for m in at.metric if m.label.endswith(": B")}
    # B keeps up: its figure stands, but no change from an A whose TTFT grows, said as A's
    m = heads["TTFT p99: B"]
    assert not m.value.startswith("≥") and m.proto.delta == "A's grows with run length"
    assert "grows with run length" in m.help  # A's figure, in the help, is marked
    # A's cost per request is the bill over full batches serving a backlog late: marked, as on Results
    assert (
        "at saturation" in heads["$ / request: B"].help
        and "at saturation" not in heads["$ / request: B"].value
    )
    # A's TPOT stays level (its full batches' pace): compared, and marked as what it is
    m = heads["TPOT p99: B"]
    assert m.proto.delta != "grows with run length" and "at saturation" in m.help, (m.proto.delta, m.help)
    table = at.dataframe[0].value
    growing = table[table["figure"].str.startswith(("TTFT", "E2E"))]
    # A's figures only grow and are already the worse: B's are better whatever the run's length, but this
    # pair is not on the same requests (A's short window), so no side is called better; never A
    assert len(growing) and set(growing["better"]) <= {"grows with run length", "not paired", "B"}
    assert growing["change_pct"].isna().all()
    level = table[table["figure"].str.startswith("TPOT")]
    assert len(level) and (level["better"] != "grows with run length").all()


def test_the_summary_table_and_report_mark_each_latency_of_an_unsustainable_run() -> None:
    """Results' 'All summary figures', its CSV and the HTML report's table carry a note on each
    latency of a run whose queue grows (they printed 'latency_ms.ttft.p99 198188.6' bare: a
    review); a run that keeps up has no note column."""
    from engine.explain.presentation import summary_rows
    from engine.serving.run import simulate

    over = simulate(short(PRESET, **OVERLOADED)).to_json()
    rows = summary_rows(over).set_index("figure")["note"]
    assert rows["latency_ms.ttft.p99"] == rows["latency_ms.e2e.p50"] == "grows with run length"
    assert rows["classes.chat.ttft_ms_at_percentile"] == "grows with run length"
    assert rows["latency_ms.tpot.p99"] == "at saturation"  # the pace of full batches: level
    assert rows["goodput_rps"] == "" and rows["throughput_rps"] == ""
    assert "note" not in summary_rows(simulate(short(PRESET)).to_json())


def test_the_unsustainable_line_names_what_grows_and_what_stays_level() -> None:
    """`sustain.line`: TTFT and E2E grow for the queue before the first token; a decode latency that
    grows too is named apart from that reason, one that stays level with its verb in number."""
    from engine.explain.sustain import figure_notes, line

    mark = {"offered_rps": 10.0, "sustained_rps": 8.0, "shortfall_rps": 2.0}
    every = line({"unsustainable": {**mark, "steady": ["tpot", "max_tbt", "tbt"]}})
    assert every is not None and "TTFT and E2E percentiles grow" in every
    assert "its TPOT, longest token gap and token gaps stay level" in every
    one = line({"unsustainable": {**mark, "steady": ["max_tbt"]}})
    assert one is not None and "and so do its TPOT and token gaps; its longest token gap stays level" in one
    none = line({"unsustainable": {**mark, "steady": []}})
    assert none is not None and "its latency percentiles grow with the run's length" in none
    # every TTFT a summary holds is marked: TTFT by site and the way in's mean too
    doc = {"unsustainable": {**mark, "steady": ["tpot"]}}
    keys = ["edge.ttft_ms.edge.p99", "way_in.ttft_ms_mean", "latency_ms.tpot.p99", "edge.local_share"]
    assert figure_notes(doc, keys) == ["grows with run length", "grows with run length", "at saturation", ""]


def texts_of(elements: Any) -> list[str]:
    """Alerts' texts, unescaped (`plain` escapes them)."""
    return [w.value.replace("\\", "").replace("\u2060", "") for w in elements]


def test_a_queue_still_rising_at_the_windows_end_is_said_on_results() -> None:
    """H200s at 30 req/s of 2,048-token prompts over 120 s: the queue rises from within the window's
    second half to its end, too late in the window to be called unsustainable (its batches still
    fill), and Results says so, as a warning."""
    rising = {
        "deployment.pools[0].hardware": "h200",
        "workload.arrival.rate_rps": 30.0,
        "workload.classes[0].input.mean": 2048,
        "workload.classes[0].input.p99": 8000,
        "workload.classes[0].slo.tpot_ms": 40,
    }
    at = app("results", short("chat-colocated", **rising), "chat-colocated")
    assert not at.exception, [e.value for e in at.exception]
    assert not _said(at)  # not unsustainable
    page = texts_of(at.get_by_key("fg-rising").warning)  # type: ignore[union-attr]
    assert (
        len(page) == 1 and "still rising at the window's end" in page[0] and "a longer run tells" in page[0]
    )
    # its TTFT p99 card: no steady figure, so no band beside it (a card read '75.9 s, −65% to −52%': a review)
    ttft = next(m for m in at.metric if m.label == "TTFT p99")
    assert ttft.proto.delta == "no headroom" and "may grow with a" in ttft.help, ttft.proto.delta
    # nor is its one-sided spread quoted under the cards (it read 'TTFT p99 is lower with slower chips')
    assert not [w.value for w in at.warning if "TTFT p99 is" in w.value]
    advisor = at.get_by_key("fg-advisor")
    # the advisor says it only where no pool's queue finding already says the load outgrows it (a review)
    # (a warning where the run is not unsustainable: no headroom, not the load's excess)
    found = [*advisor.error, *advisor.warning]  # type: ignore[union-attr]
    overload = [e.value for e in found if "grows through the window" in e.value]
    said = sum("still rising at the window" in t for t in texts_of(advisor.warning))  # type: ignore[union-attr]
    assert said == (0 if overload else 1), (said, overload)


def test_compare_calls_no_bill_better_where_both_sides_miss_their_slo() -> None:
    """Both overloaded: B's 31% cheaper requests read green and 'better: B' on cost and energy, all of them
    missing their SLO (a review). Neither side is the better buy: the card is grey and says why."""
    both = {"workload.arrival.rate_rps": 60.0}
    at = AppTest.from_file(APP, default_timeout=180)
    link = to_link(short(PRESET, **both), PRESET)
    at.query_params.update({**link, "a": "current", "b": "current, other mode"})
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value.set_index("figure")
    assert table.loc["Cost per request", "better"] == "both miss their SLO"
    assert table.loc["Energy per output token", "better"] in ("both miss their SLO", "same", "")
    card = next(m for m in at.metric if m.label == "$ / request: B")
    from streamlit.proto.Metric_pb2 import Metric as MetricProto

    assert "both miss their SLO" in card.proto.delta and card.proto.color == MetricProto.MetricColor.GRAY


def test_a_ttft_with_no_headroom_has_no_one_sided_note_under_the_cards() -> None:
    """enterprise-mixed at 40 req/s, at capacity: under its TTFT card's 'no headroom' a warning still read 'TTFT
    p99 is lower with slower chips (−65%) and with faster ones (−52%)', the band the card left off (a browser
    pass)."""
    from engine.scenario.codec import apply_overrides, load_preset
    from tests.app.harness import text_of

    sc = apply_overrides(load_preset("enterprise-mixed"), {"workload.arrival.rate_rps": 40.0})
    at = app("results", sc, "enterprise-mixed")
    assert not at.exception, [e.value for e in at.exception]
    assert next(m for m in at.metric if m.label == "TTFT p99").proto.delta == "no headroom"
    assert not [text_of(w.value) for w in at.warning if "TTFT p99 is" in text_of(w.value)]
