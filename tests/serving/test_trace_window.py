"""What a trace's window keeps of its file, and what it says of the rest (a review: rows past the
request limit were cut unsaid, and a file in milliseconds read as seconds kept 3 rows of 3,000)."""

from __future__ import annotations

import pytest

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.explain.trace_files import dense_note, idle_tail, kept_text, trace_notes
from engine.scenario import codec as sio
from engine.scenario.model import Scenario
from engine.serving.workload import read_trace

BASE = sio.load_preset("chat-colocated")


def _csv(times: list[float]) -> str:
    return "arrival_s,input_tokens,output_tokens\n" + "\n".join(f"{t},100,10" for t in times) + "\n"


def _scenario(**trace: object) -> Scenario:
    return sio.apply_overrides(
        BASE, {"duration_s": 120.0, "workload.trace": {"format": "csv", "path": "t.csv", **trace}}
    )


def test_a_window_over_the_request_limit_is_refused_naming_max_requests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The limit's check came after the slice to it, so it never fired and the rows past it went unsaid."""
    monkeypatch.setattr(bounds, "MAX_REQUESTS", 50)
    sc = _scenario()
    text = _csv([i * 0.5 for i in range(80)])
    assert sc.workload.trace is not None
    with pytest.raises(
        ScenarioError, match=r"80 requests in the window; .*workload\.trace\.max_requests \(1 to 50\)"
    ):
        read_trace(sc.workload.trace, sc, text=text)
    capped = _scenario(max_requests=30)
    assert capped.workload.trace is not None
    got = read_trace(capped.workload.trace, capped, text=text)
    assert len(got) == 30 and got.source.cut == 50 and got.source.rows == 80
    assert kept_text(got.source, 120.0).startswith(
        "30 requests in the window of the file's 80: 50 past the trace's max requests"
    )


def test_rows_past_the_window_are_counted_and_a_file_in_milliseconds_is_hinted() -> None:
    sc = _scenario()
    assert sc.workload.trace is not None
    ms = read_trace(sc.workload.trace, sc, text=_csv([i * 200.0 for i in range(3000)])).source
    assert (len(ms), ms.after, ms.before, ms.last_s) == (1, 2999, 0, 599_800.0)
    said = kept_text(ms, 120.0)
    assert said.startswith("1 request in the window of the file's 3,000: 2,999 at or past its end at 120 s")
    assert "time scale to 1,000" in said
    # the idle tail is not said of a file the window cuts
    assert idle_tail([0.0], 120.0, after=ms.after) == "" and idle_tail([0.0], 120.0) != ""
    # a file the window holds whole: the count alone
    whole = read_trace(sc.workload.trace, sc, text=_csv([i * 0.5 for i in range(100)])).source
    assert kept_text(whole, 120.0) == "100 requests in the window"
    # rows before a start: counted, no hint
    late = _scenario(start_s=30.0)
    assert late.workload.trace is not None
    part = read_trace(late.workload.trace, late, text=_csv([float(i) for i in range(200)])).source
    assert (part.before, part.after) == (30, 50)
    assert "30 before its start at 30 s; 50 at or past its end at 150 s" in kept_text(part, 120.0, 30.0)
    assert "time scale" not in kept_text(part, 120.0, 30.0)


def test_a_window_past_the_files_end_is_refused_naming_start_s() -> None:
    """`start_s` past a one-hour trace's end ran an empty window, billed, with exit 0 (a review)."""
    late = _scenario(start_s=500.0)
    assert late.workload.trace is not None
    with pytest.raises(
        ScenarioError, match=r"workload\.trace\.start_s: the window from 500 s to 620 s holds none"
    ):
        read_trace(late.workload.trace, late, text=_csv([float(i) for i in range(200)]))


def test_arrivals_too_dense_for_their_unit_are_said_with_the_setting_that_mends_them() -> None:
    """A Mooncake file stamped in seconds (its format reads milliseconds) replayed 12,031 requests in
    3.5 s with nothing said; the Workload page hinted only the opposite mistake (a review). The note
    names the format's unit and time_scale; a trace at a real pace says nothing."""
    sc = _scenario()
    assert sc.workload.trace is not None
    dense = read_trace(sc.workload.trace, sc, text=_csv([i * 1e-4 for i in range(3000)])).source
    said = dense_note(dense, "mooncake", 1.0)
    assert said.startswith("The trace's file arrives 3,000 requests within 0.3 s, over 1,000 req/s")
    assert "Mooncake's timestamp is in milliseconds" in said and "time_scale to 0.001" in said
    assert "workload.trace.time_scale" in dense_note(dense, "csv", 1.0)
    # a time scale set already is named, not the unit's mending (a screenshot read 'set it to 0.001' at 1,000)
    paced = dense_note(dense, "mooncake", 1000.0)
    assert "at time scale 1000" in paced and "time_scale (1000) replays it that many times as fast" in paced
    assert "0.001" not in paced
    real = read_trace(sc.workload.trace, sc, text=_csv([i * 0.5 for i in range(3000)])).source
    assert dense_note(real, "csv", 1.0) == ""
    assert trace_notes(dense.window(), sc)[-1] == dense_note(dense, "csv", 1.0)


def test_a_window_in_a_gap_between_arrivals_names_the_next_one() -> None:
    """A window that falls in a gap inside the file (agentic sessions pause for hours) was told to start
    below the file's end, where it already did (a code review)."""
    gap = _scenario(start_s=200.0)
    assert gap.workload.trace is not None
    times = [float(i) for i in range(100)] + [500.0 + i for i in range(100)]
    with pytest.raises(ScenarioError, match=r"falls in a gap between its arrivals, the next at 500 s"):
        read_trace(gap.workload.trace, gap, text=_csv(times))


def test_notes_come_from_the_run_not_a_second_read_of_the_file() -> None:
    """`engine.notes` read the trace's file again: a run of an upload's text (no such file) raised, and a
    moved file would have been described instead of the one the run used (a code review)."""
    import engine

    sc = _scenario()
    assert sc.workload.trace is not None
    reqs = read_trace(sc.workload.trace, sc, text=_csv([float(i) for i in range(200)]))
    said = engine.notes(engine.simulate(sc, requests=reqs))
    assert (
        said[0]
        == "120 requests in the window of the file's 200: 80 at or past its end at 120 s (the file runs to 199 s)."
    )


def test_a_batch_that_arrives_at_once_is_not_said_to_be_in_the_wrong_unit() -> None:
    sc = _scenario()
    assert sc.workload.trace is not None
    batch = read_trace(sc.workload.trace, sc, text=_csv([0.0] * 300)).source
    assert dense_note(batch, "mooncake", 1.0) == ""
