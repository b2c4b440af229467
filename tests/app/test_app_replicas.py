"""App tests of replications (ui.replicas): N seeds in the background, intervals on Results and Compare."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.harness import app, assert_clean

SEEDS = 3
MODEL_ERROR = re.compile(
    r"( ± \d+%| \((model )?(± \d+%|(> )?[−+]\d+% to (> )?[−+]\d+%|[−+]?[\d.]+ to [−+]?[\d.]+ pts|± 0 pts)\))$"
)
"""The calibration's expected error after a figure (ui.marks.value): not a seeds' interval."""


def seeds_interval(text: str) -> bool:
    """Whether a figure's text shows an interval over seeds (``824 ± 36 ms``), its model error aside."""
    return "±" in MODEL_ERROR.sub("", text)


def _wait_for_intervals(at: AppTest, timeout_s: float = 120.0) -> None:
    """Rerun the page (as the progress fragment would) until its metrics show intervals."""
    deadline = time.monotonic() + timeout_s
    while not any(seeds_interval(m.value) for m in at.metric):
        assert time.monotonic() < deadline, "the replications did not finish"
        assert_clean(at)
        time.sleep(0.2)
        at.run()


def _charts(at: AppTest) -> list[dict[str, object]]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def test_one_seed_is_the_page_as_before() -> None:
    at = app("results")
    assert_clean(at)
    assert at.selectbox(key="fg:replications-results").value == 1
    assert not any(seeds_interval(m.value) for m in at.metric)
    assert "Throughput" not in {m.label for m in at.metric}
    assert not at.get("progress")
    assert not at.session_state["fg_replica_jobs"]  # nothing started
    assert at.caption[0].value.endswith("· seed 1")


def test_results_show_intervals_and_bands_over_three_seeds() -> None:
    at = app("results")
    at.selectbox(key="fg:replications-results").set_value(SEEDS).run()
    assert_clean(at)
    _wait_for_intervals(at)
    assert_clean(at)
    shown = {m.label: m.value for m in at.metric}
    for label in ("TTFT p99", "TPOT p99", "SLO attainment", "Goodput", "$ / request", "Throughput"):
        assert seeds_interval(shown[label]), (label, shown[label])
    assert MODEL_ERROR.sub("", shown["TTFT p99"]).endswith(" ms")
    assert any(f"95% confidence interval over {SEEDS} runs (seeds 1–3)" in c.value for c in at.caption)
    # the run's caption above the cards: its requests and events are one seed's, the figures are not
    assert at.caption[0].value.endswith("· this run: seed 1; the ± figures: seeds 1–3")
    assert not at.get("progress")
    names = {t.get("name") for spec in _charts(at) for t in spec["data"]}  # type: ignore[attr-defined]
    assert f"range of {SEEDS} seeds" in names  # the CDFs' bands
    # back to one seed: the single-run page again, no job wanted
    at.selectbox(key="fg:replications-results").set_value(1).run()
    assert_clean(at)
    assert not any(seeds_interval(m.value) for m in at.metric)
    assert not at.session_state["fg_replica_jobs"]


def test_compare_shows_intervals_and_flags_noise() -> None:
    at = app("compare")
    at.selectbox(key="fg:replications-compare").set_value(SEEDS).run()
    assert_clean(at)
    _wait_for_intervals(at)
    assert_clean(at)
    heads = [m for m in at.metric if m.label.endswith(": B")]
    assert len(heads) == 5 and all(seeds_interval(m.value) for m in heads)
    assert all("A: " in m.help and "±" in m.help for m in heads)
    table = next(df.value for df in at.dataframe if "better" in df.value.columns)
    assert {"a_ci95", "b_ci95", "within_noise"} <= set(table.columns)
    noisy = table[table["within_noise"]]
    assert (noisy["better"].isin(["within noise", "same"])).all()
    flagged = [m for m in heads if "within noise" in m.delta]
    FIGURE = {"$ / request": "Cost per request"}  # a card's name (layout.LABELS) -> the table's figure
    assert len(flagged) == sum(
        bool(table.set_index("figure")["within_noise"].get(FIGURE.get(m.label[:-3], m.label[:-3])))
        for m in heads
    )
    # the same requests on both sides in each seed: a difference is judged on the seeds' differences (B's
    # goodput lower in every seed read "within noise" beside its SLO attainment, lower by the same requests)
    verdicts = table.set_index("figure")["better"]
    assert verdicts["Goodput"] == verdicts["SLO attainment"] == "A"


def test_the_seed_count_follows_the_session_across_pages() -> None:
    at = app("results")
    at.selectbox(key="fg:replications-results").set_value(SEEDS).run()
    at.switch_page("app_pages/compare.py").run()
    assert_clean(at)
    assert at.selectbox(key="fg:replications-compare").value == SEEDS


def test_replications_are_bounded_server_wide_and_stale_jobs_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many sessions asking for many seeds cannot queue unbounded work or threads."""
    from engine.scenario.codec import apply_overrides, load_preset
    from ui import replicas

    release = threading.Event()
    monkeypatch.setattr(replicas.sim, "cached", lambda sc: release.wait(30))  # a simulation that waits
    monkeypatch.setattr(replicas, "MAX_ALIVE", 2)
    fresh = replicas._Registry()  # this test's own server: jobs other tests left running do not count
    monkeypatch.setattr(replicas, "_registry", lambda: fresh)
    base = load_preset("edge-npu")
    scenarios = [apply_overrides(base, {"seed": 100 + i}) for i in range(3)]
    try:
        first = replicas.job(scenarios[0], 3)
        replicas.job(scenarios[1], 3)
        with pytest.raises(replicas.Busy, match="2 other replications"):
            replicas.job(scenarios[2], 3)
        first.seen -= replicas.STALE_S + 1  # no page looked at it for a while
        with pytest.raises(replicas.Busy):
            replicas.job(scenarios[2], 3)  # still alive until its thread ends, but now cancelled
        assert first.cancelled
    finally:
        release.set()


def test_a_narrow_interval_shows_a_digit_of_its_width() -> None:
    """'20.12 ± 0.04 ms', not '20.1 ± 0.0 ms' (which reads as no spread at all); a wide one keeps
    the figure's own decimals."""
    from engine.explain.replicas import interval
    from ui.replicas import pm

    narrow = interval([20.10, 20.12, 20.14])
    assert narrow is not None and 0 < narrow.half_width < 0.05  # rounds to 0.0 at the figure's decimal
    text = pm("tpot_p99_ms", narrow)
    assert re.fullmatch(r"20\.12 ± 0\.0[1-9] ms", text), text
    assert pm("ttft_p99_ms", interval([700.0, 800.0, 900.0])).endswith(" ms")
    assert " ± " in pm("ttft_p99_ms", interval([700.0, 800.0, 900.0]))
    assert pm("slo_attainment", interval([0.9961, 0.9962, 0.9963])).endswith("%")
    assert " ± 0.0%" not in pm("slo_attainment", interval([0.9961, 0.9962, 0.9963]))


def test_the_seeds_count_travels_in_the_share_link() -> None:
    """A colleague opening a link saw one seed's figures where the sender read the mean of five (a
    review): the count is the link's `seeds` (left out at one), applied once, a bad one said."""
    from engine.scenario import to_link
    from tests.app.harness import APP, short

    at = app("results")
    at.selectbox(key="fg:replications-results").set_value(SEEDS).run()
    assert at.query_params["seeds"] in ([str(SEEDS)], str(SEEDS))
    at.selectbox(key="fg:replications-results").set_value(1).run()
    assert "seeds" not in at.query_params
    opened = AppTest.from_file(APP, default_timeout=120)
    opened.query_params.update({**to_link(short(), "chat-disaggregated"), "seeds": str(SEEDS)})
    opened.run()
    assert_clean(opened)
    assert opened.selectbox(key="fg:replications-results").value == SEEDS
    bad = AppTest.from_file(APP, default_timeout=120)
    bad.query_params.update({**to_link(short(), "chat-disaggregated"), "seeds": "7"})
    bad.run()
    assert bad.selectbox(key="fg:replications-results").value == 1
    said = [w.value.replace("\\", "").replace("\u2060", "") for w in bad.warning]
    assert any("The link's seeds: '7' is not one of 1, 3, 5, 10" in s for s in said), said
    assert "seeds" not in bad.query_params


def test_the_scenario_file_says_the_seeds_its_figures_are_the_mean_of() -> None:
    """The exported TOML carried only `seed`: the command line printed one seed's figures beside the
    page's mean of three (a review). A first comment says how many seeds and the command."""
    import tomllib
    from unittest import mock

    from tests.app.harness import short
    from ui import state

    sc = (
        short()
    )  # (AppTest holds no download's payload: the builder the buttons call, on the session's count)
    with mock.patch.object(state.st, "session_state", {"fg_replications": SEEDS}):
        toml = state.scenario_toml(sc)
    assert toml.startswith(f"# shown on the dashboard as the mean of {SEEDS} seeds (1 to 3)")
    assert f"--replications {SEEDS}" in toml.splitlines()[0] and tomllib.loads(toml)["seed"] == 1
    with mock.patch.object(state.st, "session_state", {}):
        assert not state.scenario_toml(sc).startswith("#")
