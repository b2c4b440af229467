"""The traces a user brings and the rates a window allows (engine.explain.trace_files, rate_scale,
engine.serving.trace_classes): which format a file is, what a file that is not one lacks, a trace that
ends early in its window, the classes a trace names. Split from test_app_views.py by what it owns."""

from __future__ import annotations

import pytest

from engine.explain import previews as pv
from engine.explain.trace_files import idle_tail, trace_format, trace_problem
from engine.scenario.codec import apply_overrides, load_preset


def test_trace_formats_and_shipped_traces() -> None:
    assert trace_format("x.jsonl", '{"timestamp": 0, "input_length": 5}') == "mooncake"
    assert trace_format("x.csv", "TIMESTAMP,ContextTokens,GeneratedTokens") == "azure"
    assert trace_format("x.csv", "arrival_s,input_tokens,output_tokens,class") == "csv"
    assert trace_format("x.csv", "a,b") is None
    said = trace_problem("x.csv", "time,prompt,completion")  # named, not "see the help" (a walkthrough)
    assert (
        "its header has time, prompt, completion" in said and "arrival_s, input_tokens, output_tokens" in said
    )
    traces = pv.shipped_traces()  # shipped in data/: no folder outside the repository needed
    assert {(t.label, t.format) for t in traces} >= {
        ("mooncake/conversation_trace", "mooncake"),
        ("azure_llm_2023/AzureLLMInferenceTrace_code", "azure"),
        ("kv_cache_tester_sample/sessions", "agentic"),  # it was missing from the picker: read as Mooncake
    }
    assert all(t.path.startswith("data:") for t in traces)


def test_a_trace_that_ends_early_in_its_window_says_so() -> None:
    """A 120 s trace in a 600 s window billed 480 idle seconds into its cost per token, unsaid (a
    walkthrough); a trace that runs into the window's last fifth says nothing."""
    said = idle_tail([0.0, 50.0, 119.6], 600.0)
    assert said.startswith("The trace's arrivals end at 120 s of the 600 s window: the last 480 s")
    assert "A window of about 120 s measures the trace alone." in said
    assert idle_tail([0.0, 490.0], 600.0) == "" and idle_tail([], 600.0) == ""


# --- the rate scale and the classes a trace needs (issue 14) ---------------------------------


def test_rate_scale_reaches_the_bound_the_window_allows() -> None:
    import itertools

    from engine.core import bounds
    from engine.explain.rate_scale import rate_cap_rps, rate_stops

    base = load_preset("chat-disaggregated")
    assert rate_cap_rps(base) == pytest.approx(bounds.MAX_REQUESTS / 600.0)
    short = apply_overrides(base, {"duration_s": 10.0})
    assert rate_cap_rps(short) == bounds.MAX_RATE_RPS
    peaked = apply_overrides(base, {"workload.arrival.shape": "peak", "workload.arrival.peak_factor": 2.0})
    assert rate_cap_rps(peaked) == pytest.approx(
        bounds.MAX_REQUESTS / 600.0
    )  # a built-in shape's mean is the rate
    points = [{"at_s": 0.0, "factor": 1.0}, {"at_s": 300.0, "factor": 2.0}]
    pointed = apply_overrides(base, {"workload.arrival.shape": "points", "workload.arrival.points": points})
    assert rate_cap_rps(pointed) == pytest.approx(bounds.MAX_REQUESTS / 1200.0)  # points multiply it as given
    for sc in (base, short, peaked, pointed):  # every stop is a rate validation accepts
        cap = rate_cap_rps(sc)
        stops = rate_stops(cap, 16.0)
        assert stops == sorted(set(stops)) and 16.0 in stops and stops[-1] <= cap
        apply_overrides(sc, {"workload.arrival.rate_rps": stops[-1]})
    stops = rate_stops(bounds.MAX_RATE_RPS)
    ratios = [b / a for a, b in itertools.pairwise(stops)]
    assert stops[0] == 0.1 and stops[-1] == 5000.0 and max(ratios) <= 1.34  # spaced by ratio


def test_class_gap_names_missing_and_impossible_classes() -> None:
    from engine.core import bounds
    from engine.serving.trace_classes import class_gap, with_classes

    sc = load_preset("chat-disaggregated")
    gap = class_gap(sc, ["chat", "gold", "", "silver", "gold"])
    assert gap.missing == ("gold", "silver") and gap.creatable
    classes = with_classes(sc, gap.missing)
    new = apply_overrides(sc, {"workload.classes": classes})
    assert [c.name for c in new.workload.classes] == ["chat", "gold", "silver"]
    assert new.workload.classes[2].slo == sc.workload.classes[0].slo
    bad = class_gap(sc, ["[x](y)"])
    assert not bad.creatable and bad.bad[0][0] == "[x](y)" and "letters, digits" in bad.bad[0][1]
    many = class_gap(sc, [f"c{i}" for i in range(bounds.MAX_CLASSES)])
    assert not many.creatable and many.over_limit == 1
    assert not class_gap(sc, ["chat", ""]).missing


def test_a_trace_longer_than_the_models_context_is_said_beside_its_lengths() -> None:
    """The agentic sample's prompts reach 139,748 tokens where Llama-3.1-70B holds 131,072: the Workload page
    drew them with no word, the rejections said on Results alone (a browser review)."""
    from tests.app.harness import app, assert_clean, short, text_of

    sample = {"format": "agentic", "path": "data:traces/kv_cache_tester_sample/sessions.jsonl"}
    at = app(
        "workload", short("chat-colocated", duration_s=600.0, **{"workload.trace": sample}), "chat-colocated"
    )
    assert_clean(at)
    said = [text_of(w.value) for w in at.warning if "longer than the model's context" in text_of(w.value)]
    assert said and "(131,072 tokens, prompt and output together; the longest 139,748)" in said[0], said
