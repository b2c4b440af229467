"""An unsustainable run on the pages: said before its figures, and no latency percentile shown bare."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from engine.scenario.codec import to_link
from tests.app.harness import APP, app, short

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
    heads = [m for m in at.metric if m.label in LATENCY]
    assert len(heads) == 2
    for m in heads:  # '≥ 1.2 min' over 'grows with run length', never a bare figure with a band
        assert m.value.startswith("≥ "), m.value
        assert m.proto.delta == "grows with run length", m.proto.delta
    advisor = at.get_by_key("fg-advisor")
    assert any(e.value.startswith("Unsustainable") for e in advisor.error)  # type: ignore[union-attr]
    at.switch_page("app_pages/slo.py").run()  # the live strip, on the editing pages
    strip = " ".join(m.value for m in at.sidebar.markdown).replace("\u00a0", " ")
    assert "≥" in strip and strip.count("grows with run length") == 2, strip
    # the SLO page: said first, and each class's percentiles marked
    assert len(_said(at)) == 1
    verdicts = [e.value for e in at.error if e.value.startswith("**chat**")]
    assert len(verdicts) == 1 and verdicts[0].count("grows with run length") == 2, verdicts


def test_the_per_class_table_marks_its_latencies_only_when_the_run_falls_behind() -> None:
    from ui.tables import SLO_TAIL, slo_tail_columns

    assert slo_tail_columns(False) is SLO_TAIL
    marked = slo_tail_columns(True)
    for col in ("ttft_at_percentile_ms", "tpot_at_percentile_ms"):
        assert marked[col]["type_config"]["format"].startswith("≥ ")
        assert "grows with run length" in marked[col]["help"]


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
    for label in LATENCY:  # B keeps up: its figure stands, but no change from an A that grows
        m = heads[f"{label}: B"]
        assert not m.value.startswith("≥") and m.proto.delta == "grows with run length"
        assert "grows with run length" in m.help  # A's figure, in the help, is marked
    table = at.dataframe[0].value
    latency_rows = table[table["figure"].str.startswith(("TTFT", "TPOT", "E2E"))]
    assert len(latency_rows) and (latency_rows["better"] == "grows with run length").all()
    assert latency_rows["change_pct"].isna().all()
