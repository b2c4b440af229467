"""Compare with a counterpart on this scenario's load: 'Compare with chat-colocated' after raising the rate
to 60 req/s put the preset at its own 16 req/s against it, an unpaired comparison (a review)."""

from __future__ import annotations

import pytest

from engine import explain as ex
from engine.core import ScenarioError
from engine.scenario.codec import apply_overrides, load_preset
from tests.app.harness import app, short
from ui import lesson

PRESET = "chat-disaggregated"


def test_the_counterpart_serves_this_scenarios_load_and_the_pair_is_paired() -> None:
    a = short(PRESET, **{"workload.arrival.rate_rps": 24.0})
    b = ex.with_load_of(load_preset("chat-colocated"), a)
    assert b.workload == a.workload and (b.duration_s, b.seed) == (a.duration_s, a.seed)
    assert b.deployment == load_preset("chat-colocated").deployment and not ex.unpaired(a, b)
    pinned = load_preset("portfolio-chat-batch")  # its classes pinned to pools chat-colocated lacks
    with pytest.raises(ScenarioError):
        ex.with_load_of(load_preset("chat-colocated"), pinned)


def test_the_lesson_opens_compare_on_this_load_where_it_was_changed() -> None:
    at = app("results", short(PRESET, **{"workload.arrival.rate_rps": 24.0}))
    assert not at.exception, [e.value for e in at.exception]
    link = next(p for p in at.get("page_link") if "Compare with" in p.proto.label)
    assert link.proto.query_string.endswith("&b=counterpart%2C+this+load"), link.proto.query_string
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="b").value == lesson.PAIRED
    assert not [i.value for i in at.info if "do not see the same requests" in i.value]  # paired
    untouched = app("results", load_preset(PRESET))  # the preset's own load: its counterpart as it is
    link = next(p for p in untouched.get("page_link") if "Compare with" in p.proto.label)
    assert "b=chat-colocated" in link.proto.query_string


def test_a_pair_the_counterpart_cannot_serve_is_said() -> None:
    over = apply_overrides(load_preset("portfolio-chat-batch"), {"duration_s": 30.0})
    at = app("compare", over, "portfolio-chat-batch")
    at.selectbox(key="b").set_value(lesson.PAIRED).run()
    assert not at.exception, [e.value for e in at.exception]
    built = any(m.label == "$ / request: B" for m in at.metric)
    refused = [e.value for e in at.error if e.value.startswith("Cannot build that pair")]
    assert built != bool(refused), (built, refused)  # one or the other, said


def test_the_counterpart_names_the_edits_it_does_not_take() -> None:
    # the counterpart on this load keeps its own model and prices: an owned bill against a rented one read as
    # the deployments' difference (the CLI's compare, a review); B's caption names them
    a = short(PRESET, **{"workload.arrival.rate_rps": 24.0, "cost.mode": "own"})
    at = app("compare", a, PRESET)
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="b").value == lesson.PAIRED
    assert [c.value for c in at.caption if c.value.endswith("· not A's changes to cost")], [
        c.value for c in at.caption
    ]
    at.selectbox(key="b").set_value("rag-long-context").run()
    assert not [c.value for c in at.caption if "not A's changes" in c.value]  # a preset named: B as it is


def test_another_preset_starts_b_again_from_its_counterpart() -> None:
    """B kept the last preset's: moe-deepseek-h200's moe-deepseek-dp-ep stood beside sram-decode-groq, another
    model, 'not paired', where its counterpart is sram-decode-h100 (a browser review)."""
    at = app("compare", short("moe-deepseek-h200"), preset="moe-deepseek-h200")
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="b").value == lesson.PAIRED  # (its counterpart on this shortened window's load)
    at.selectbox(key="fg:preset").set_value("sram-decode-groq").run()
    assert not at.exception, [e.value for e in at.exception]
    assert (
        at.selectbox(key="b").value == "sram-decode-h100" == str(load_preset("sram-decode-groq").counterpart)
    )


def test_the_other_mode_says_its_split_is_a_starting_point() -> None:
    """B served disaggregated split 4:8 chips with nothing said of why (a review): its caption says the rule."""
    at = app("compare", short("chat-colocated"))
    at.selectbox(key="b").set_value("current, other mode").run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(c.value for c in at.caption)
    assert "split 2 prefill : 4 decode, a third to prefill: a starting split, not a tuned one" in captions


def test_a_scenario_without_its_lesson_keeps_its_compare_button() -> None:
    """An exported scenario drops the preset's lesson and keeps its counterpart: opened again, its
    'Compare with' button had gone with the lesson (a round-trip review)."""
    bare = short(PRESET, **{"workload.arrival.rate_rps": 24.0, "lesson": ""})
    assert bare.counterpart and not bare.lesson
    at = app("results", bare)
    assert not at.exception, [e.value for e in at.exception]
    assert [p for p in at.get("page_link") if p.proto.page == "compare" and "Compare with" in p.proto.label]
