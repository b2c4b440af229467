"""Share links in the app (streamlit.testing AppTest): the first load, round trips through the URL, a
link to another preset, and hostile links that warn and fall back."""

from __future__ import annotations

import base64
import json
import re
import zlib
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from engine.scenario.codec import (
    DEFAULT_PRESET,
    apply_overrides,
    from_link,
    load_preset,
)
from tests.app.harness import APP, app, assert_clean, dismiss_buttons, scenario_of, short, text_of

# --- share links -----------------------------------------------------------------------------


def test_first_load_without_a_link_uses_the_default_preset() -> None:
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    assert scenario_of(at) == load_preset(DEFAULT_PRESET)
    assert at.query_params.get("p") == DEFAULT_PRESET
    assert "s" not in at.query_params


def test_link_round_trips_through_the_url() -> None:
    at = app("workload")
    at.number_input(key="fg:rate-typed").set_value(9.5).run()  # a typed rate, between the slider's stops
    params = {k: at.query_params[k] for k in ("v", "p", "s")}
    assert from_link(params) == scenario_of(at)
    # a fresh session opening that URL restores the scenario exactly
    other = AppTest.from_file(APP, default_timeout=120)
    other.query_params.update(params)
    other.run()
    assert_clean(other)
    assert scenario_of(other) == scenario_of(at)
    assert scenario_of(other).workload.arrival.rate_rps == 9.5


def test_link_to_another_preset_with_changes() -> None:
    sc = short("chat-colocated", **{"workload.classes[0].slo.ttft_ms": 750.0})
    at = app("slo", sc, preset="chat-colocated")
    assert_clean(at)
    assert scenario_of(at) == sc
    assert at.session_state["fg_preset"] == "chat-colocated"


def _payload(changes: Any) -> str:
    return _payload_text(json.dumps(changes))


def _payload_text(text: str) -> str:
    return base64.urlsafe_b64encode(zlib.compress(text.encode(), 9)).decode().rstrip("=")


HOSTILE = {
    "version": ({"v": "99", "p": DEFAULT_PRESET}, "version", DEFAULT_PRESET),
    "preset": ({"v": "1", "p": "../../etc/passwd"}, "preset", DEFAULT_PRESET),
    "garbage": ({"v": "1", "p": "chat-colocated", "s": "!!!not-base64@@"}, "not a valid encoded scenario", "chat-colocated"),
    "not a mapping": ({"v": "1", "p": DEFAULT_PRESET, "s": _payload([1, 2, 3])}, "map field paths", DEFAULT_PRESET),
    "too long": ({"v": "1", "p": DEFAULT_PRESET, "s": "A" * 9000}, "limit", DEFAULT_PRESET),
    "zip bomb": ({"v": "1", "p": DEFAULT_PRESET, "s": _payload({"name": "x" * 4_000_000})}, "size limit", DEFAULT_PRESET),
    "out of range": ({"v": "1", "p": DEFAULT_PRESET, "s": _payload({"workload.arrival.rate_rps": 1e9})}, "rate_rps", DEFAULT_PRESET),
    "unknown field": ({"v": "1", "p": DEFAULT_PRESET, "s": _payload({"workload.nope": 1})}, "nope", DEFAULT_PRESET),
    "bad path": ({"v": "1", "p": DEFAULT_PRESET, "s": _payload({"a..b": 1})}, "malformed", DEFAULT_PRESET),
    "unknown chip": (
        {"v": "1", "p": DEFAULT_PRESET, "s": _payload({"deployment.pools[0].hardware": "warp-core"})},
        "warp-core",
        DEFAULT_PRESET,
    ),
    "local file": (
        {"v": "1", "p": DEFAULT_PRESET, "s": _payload({"workload.trace": {"format": "csv", "path": "/etc/passwd"}})},
        "/etc/passwd",
        DEFAULT_PRESET,
    ),
    "path escape": (
        {"v": "1", "p": DEFAULT_PRESET,
         "s": _payload({"workload.trace": {"format": "csv", "path": "shared:../../../etc/passwd"}})},
        "relative path inside its folder",
        DEFAULT_PRESET,
    ),
    "absolute data path": (
        {"v": "1", "p": DEFAULT_PRESET,
         "s": _payload({"workload.trace": {"format": "csv", "path": "shared:/etc/passwd"}})},
        "relative path inside its folder",
        DEFAULT_PRESET,
    ),
    "deep nesting": ({"v": "1", "p": DEFAULT_PRESET, "s": _payload_text("[" * 5000 + "]" * 5000)}, "nested", DEFAULT_PRESET),
    "markup preset": ({"v": "1", "p": "![x](http://127.0.0.1:9/p.png) [click](http://127.0.0.1:9/)"}, "is unknown", DEFAULT_PRESET),
    "markup class name": (
        {"v": "1", "p": DEFAULT_PRESET, "s": _payload({"workload.classes[0].name": "[click](http://127.0.0.1:9/) :red[x]"})},
        "letters, digits",
        DEFAULT_PRESET,
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_link_warns_and_falls_back(case: str) -> None:
    params, words, fallback = HOSTILE[case]
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    # the advisor's findings may be warnings too; the link's warning is the one about the link
    warnings = [text_of(w.value) for w in at.warning if "share link" in str(w.value)]
    assert len(warnings) == 1 and "share link could not be used" in warnings[0], warnings
    assert words in warnings[0], warnings[0]
    assert f"Showing the preset {fallback} instead" in warnings[0], warnings[0]  # named, not "the preset"
    raw = next(w.value for w in at.warning if "share link" in str(w.value))
    assert not re.search(r"(?<!\\)[\[\]()!<>`*_]", raw), raw  # user text reaches Markdown escaped
    assert scenario_of(at) == load_preset(fallback)
    assert at.query_params.get("p") == fallback and "s" not in at.query_params  # the URL is clean again
    at.run()  # the warning stays, once, until dismissed
    assert len([w for w in at.warning if "share link" in str(w.value)]) == 1
    dismiss_buttons(at)[0].click().run()
    assert not [w for w in at.warning if "share link" in str(w.value)]


def test_a_link_that_holds_in_part_keeps_the_part_that_holds() -> None:
    """One bad field threw the whole link away, its valid changes with it (a review): the changes that
    hold are applied in order, each refused one said, and the address holds what was applied."""
    cases = {
        # a seed and a rate out of range: the seed stays
        "out of range": ({"seed": 9, "workload.arrival.rate_rps": -5}, {"seed": 9}, "rate_rps"),
        # a tp the run refuses (its heads do not split 3 ways): the seed stays (the whole link was dropped)
        "refused by the run": ({"seed": 7, "deployment.pools[0].tp": 3}, {"seed": 7}, "attention heads"),
        # an hour's window, then a rate the bounds refuse over it: the window stays (a day's window at the
        # preset's own 16 req/s is over the work bound too, which a link is now held to)
        "over the bounds": (
            {"duration_s": 3600.0, "workload.arrival.rate_rps": 4000.0},
            {"duration_s": 3600.0},
            "limit",
        ),
    }
    for name, (changes, kept, words) in cases.items():
        at = AppTest.from_file(APP, default_timeout=120)
        at.query_params.update({"v": "1", "p": DEFAULT_PRESET, "s": _payload(changes)})
        at.run()
        assert not at.exception, (name, [e.value for e in at.exception])
        said = [text_of(w.value) for w in at.warning if "share link" in str(w.value)]
        assert len(said) == 1 and "changes were applied but for 1 refused" in said[0] and words in said[0], (
            name,
            said,
        )
        sc = scenario_of(at)
        assert sc == apply_overrides(load_preset(DEFAULT_PRESET), kept), name
        assert "s" in at.query_params  # the address holds what was applied


def test_a_scenario_is_kept_relative_to_the_preset_it_differs_least_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A file exported from an edited chat-colocated, opened over chat-disaggregated, read as
    chat-disaggregated's (its counterpart itself, Reset going there: a review). The app keeps it
    relative to the preset it differs from least."""
    from engine.scenario import closest_preset, dumps_toml
    from ui import layout, state

    edited = apply_overrides(load_preset("chat-colocated"), {"seed": 7, "workload.arrival.rate_rps": 12.0})
    assert closest_preset(edited) == "chat-colocated"
    assert closest_preset(load_preset("moe-deepseek-h200")) == "moe-deepseek-h200"
    # a name that says its origin is taken at its word: an edited chat-disaggregated (a whole table replaced
    # counts as one difference) read as portfolio-chat-batch's, 9 differences against 10 (a review)
    from engine.scenario.codec import diff, to_data
    from engine.scenario.naming import named

    base = load_preset("chat-disaggregated")
    over = {"seed": 7, "workload.arrival.rate_rps": 20.0, "workload.classes[0].output.mean": 300,
            "deployment.pools[1].count": 4, "workload.classes[0].slo.tpot_ms": 25.0,
            "cost.usd_per_hour": {"h100-sxm": 3.0}, "deployment.link.latency_ms": 0.2}  # fmt: skip
    far = named(apply_overrides(base, over), base, "chat-disaggregated")
    assert far.name.endswith(", edited from chat-disaggregated")
    count = {
        n: len(diff(to_data(load_preset(n)), to_data(far)))
        for n in ("chat-disaggregated", "portfolio-chat-batch")
    }
    assert count["portfolio-chat-batch"] < count["chat-disaggregated"]  # the case this is about
    assert closest_preset(far) == "chat-disaggregated"

    class Upload:
        name = "f.toml"

        def getvalue(self) -> bytes:  # as the dashboard exports it over three seeds
            return (
                "# shown on the dashboard as the mean of 3 seeds (7 to 9): ...\n" + dumps_toml(edited)
            ).encode()

    ss = {
        state.SCENARIO: load_preset("chat-disaggregated"),
        state.PRESET: "chat-disaggregated",
        "fg:open": Upload(),
    }
    monkeypatch.setattr(layout.st, "session_state", ss)  # (the one streamlit module `state` reads too)
    layout._open_file()
    assert ss[state.SCENARIO] == edited and ss[state.PRESET] == "chat-colocated"
    assert ss["fg_replications"] == 3 and ss["fg:replications-results"] == 3  # it opened on one (a review)


def test_a_link_is_held_to_the_work_bound_as_the_page_holds_a_typed_rate() -> None:
    """A link at 2,500 req/s opened, and its run was then refused on Results ('This scenario cannot run'),
    where the Workload page refuses the same rate as it is typed (a browser review): the link's rate is
    refused with the work bound's figure and its other changes kept."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(
        {"v": "1", "p": DEFAULT_PRESET, "s": _payload({"seed": 5, "workload.arrival.rate_rps": 2500.0})}
    )
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    said = [text_of(w.value) for w in at.warning if "share link" in str(w.value)]
    assert len(said) == 1 and "work bound: about" in said[0] and "refused" in said[0], said
    assert scenario_of(at) == apply_overrides(load_preset(DEFAULT_PRESET), {"seed": 5})
