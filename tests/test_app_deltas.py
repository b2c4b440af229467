"""Changes that round to zero are shown as no change: no arrow, no colour (live strip, Compare)."""

from __future__ import annotations

from streamlit.proto.Metric_pb2 import Metric as MetricProto
from streamlit.testing.v1 import AppTest

from engine.scenario.codec import DEFAULT_PRESET, to_link
from tests.test_app import APP, assert_clean, short
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
    assert rows["SLO met"] == ""


def test_compare_of_a_scenario_with_itself_shows_neutral_deltas() -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({**to_link(short(), DEFAULT_PRESET), "a": "current", "b": "current"})
    at.switch_page("app_pages/compare.py").run()
    assert_clean(at)
    heads = [m for m in at.metric if m.label.endswith(": B")]
    assert len(heads) == 5
    for m in heads:  # a share's change is in points
        assert m.proto.delta == ("0.0 pts vs A" if m.label.startswith("SLO") else "0.0% vs A"), m.proto.delta
        assert m.proto.direction == MetricProto.MetricDirection.NONE


def test_counts_read_to_three_figures() -> None:
    from ui.layout import fmt_count, fmt_rps

    assert [fmt_count(v) for v in (2380.4, 31.44, 2.054, 0.0, None)] == ["2,380", "31.4", "2.05", "0", "–"]
    assert fmt_rps(0.0834) == "0.08 req/s" and fmt_rps(None) == "–"
