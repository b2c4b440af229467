"""App tests (streamlit.testing AppTest): every page runs, widgets change results, share links round-trip.

The harness (the short preset, the app opened through a share link, ...) is tests/app/harness.py.
"""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from engine.scenario.codec import (
    DEFAULT_PRESET,
    apply_overrides,
    from_link,
    load_preset,
    preset_names,
    to_link,
)
from tests.app.harness import APP, PAGES, app, assert_clean, live, scenario_of, short, text_of


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_runs(page: str) -> None:
    at = app(page)
    assert_clean(at)
    assert [t.value for t in at.title] == [PAGES[page]]
    assert scenario_of(at) == short()


@pytest.mark.parametrize("preset", preset_names())
def test_every_preset_on_every_page(preset: str) -> None:
    """A preset added later (a trace, an offline batch, MoE, faults...) is covered the moment it exists."""
    base = load_preset(preset)
    sc = base
    if base.warmup_s < 60 and base.duration_s > 120:  # a shorter window, its faults in it (else said unfired)
        k = 120.0 / base.duration_s
        faults = [
            {**f.model_dump(exclude_unset=True), "at_s": f.at_s * k}
            | ({"duration_s": f.duration_s * k} if f.duration_s else {})
            for f in base.faults
        ]
        sc = apply_overrides(base, {"duration_s": 120.0, **({"faults": faults} if faults else {})})
    at = app("results", sc, preset=preset)
    assert_clean(at)
    for page in ("workload", "hardware", "strategy", "slo"):
        at.switch_page(f"app_pages/{page}.py").run()
        assert_clean(at)
        assert scenario_of(at) == sc, page  # showing a page never changes the scenario


def test_results_page_shows_summary_charts_and_exports(monkeypatch: pytest.MonkeyPatch) -> None:
    from ui import image_export

    monkeypatch.setattr(image_export, "browser_path", lambda: "/usr/bin/chromium")  # as if installed
    at = app("results")
    assert_clean(at)
    labels = {m.label for m in at.metric}
    assert {"TTFT p99", "TPOT p99", "SLO attainment", "Goodput", "$ / request"} <= labels
    labels = [b.label for b in at.download_button]
    for label in (
        "PNG",
        "SVG",
        "HTML",
        "Requests (CSV)",
        "Summary (CSV)",
        "Scenario (TOML)",
        "Report (HTML)",
    ):
        assert label in labels, label
    assert labels.count("PNG") >= 7  # one per chart
    # images, HTML and tables are rendered on click, not on every rerun
    heavy = [
        b for b in at.download_button if b.label in ("PNG", "SVG", "HTML", "Report (HTML)", "Requests (CSV)")
    ]
    assert all(b.proto.deferred_file_id and not b.proto.url for b in heavy)


def test_results_page_shows_the_advisor_from_the_cached_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.serving.run
    import ui.sim

    at = app("results")
    assert_clean(at)

    def no_simulation(*args: object, **kwargs: object) -> None:
        raise AssertionError("the Results page simulated again")

    monkeypatch.setattr(ui.sim, "simulate", no_simulation)
    monkeypatch.setattr(engine.serving.run, "simulate", no_simulation)
    at.number_input(key="advisor_months").set_value(3.0).run()  # a rerun draws it all from the cache
    assert_clean(at)
    advisor = at.get_by_key("fg-advisor")
    assert [s.value for s in advisor.subheader] == ["Advisor"]  # type: ignore[union-attr]
    texts = [e.value for kind in ("info", "success", "warning", "error") for e in getattr(advisor, kind)]
    assert any("Class chat passes" in t for t in texts), texts
    # the bill's amount beside the word bill, not after a part's share ("of the bill ($29.88/h; ...")
    bill = r"(takes \d+% of the \$[\d,.]+/h bill|[Tt]he \$[\d,.]+/h bill splits evenly) \("  # (an even split)
    assert any(re.search(bill, t.replace("\\", "")) for t in texts), texts
    assert any("not stable" in t for t in texts), texts  # the specialisation test, at 3 months


def test_results_address_redirects_to_the_root_keeping_the_link() -> None:
    """/results (a typed address or an old link) lands on "/", so the navigation highlights Results."""
    first = AppTest.from_file(APP, default_timeout=120).run()
    pages = getattr(first, "_registered_pages", None)
    if pages is None:
        pytest.skip("this Streamlit's AppTest does not expose its registered pages")
    redirect = next(h for h, info in pages.items() if info.get("url_pathname") == "results")
    sc = short("chat-colocated", **{"workload.classes[0].slo.ttft_ms": 750.0})
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({**to_link(sc, "chat-colocated"), "seeds": "3"})
    at._page_hash = redirect  # what a browser opening /results?... asks for
    at.run()
    assert_clean(at)
    assert [t.value for t in at.title] == ["Results"]
    assert at.session_state["fg_page"] == ""  # the default page, served at "/"
    assert scenario_of(at) == sc
    assert {k: at.query_params[k] for k in ("v", "p", "s")} == to_link(sc, "chat-colocated")
    # the page's own parameters too: a link's seeds count opened /results on one seed
    assert at.query_params["seeds"] in ("3", ["3"]) and at.selectbox(key="fg:replications-results").value == 3


def test_hardware_page_lists_catalog_and_roofline() -> None:
    at = app("hardware")
    frames = [df.value for df in at.dataframe]
    hw = next(f for f in frames if "spec_source" in f.columns)
    assert {"h100-sxm", "b200", "mi300x"} <= set(hw["id"])
    models = next(f for f in frames if "kv_bytes_per_token_bf16" in f.columns)
    assert "llama-3.1-70b" in set(models["id"])
    points = next(f for f in frames if "intensity_flops_per_byte" in f.columns)
    assert {"prefill", "decode"} == set(points["phase"])


def test_rate_slider_changes_the_live_result() -> None:
    at = app("workload")
    before = live(at)
    rate = short().workload.arrival.rate_rps
    slider = at.select_slider(key="fg:workload.arrival.rate_rps")  # stops spaced by ratio
    faster = next(v for v in slider.options if float(v) > rate)
    slider.set_value(float(faster)).run()
    assert_clean(at)
    assert scenario_of(at).workload.arrival.rate_rps == float(faster)
    after = live(at)
    assert after != before
    assert "▲" in after or "▼" in after  # the strip shows the change from the previous run


def test_strategy_widgets_change_the_deployment() -> None:
    at = app("strategy")
    decode = next(i for i, p in enumerate(short().deployment.pools) if p.role == "decode")
    count = short().deployment.pools[decode].count
    at.slider(key=f"fg:deployment.pools[{decode}].count").set_value(count + 1).run()
    assert_clean(at)
    assert scenario_of(at).deployment.pools[decode].count == count + 1
    at.segmented_control(key="fg:mode").set_value("colocated").run()
    assert_clean(at)
    sc = scenario_of(at)
    assert sc.deployment.mode == "colocated"
    assert sum(p.count for p in sc.deployment.pools) == sum(p.count for p in short().deployment.pools) + 1
    # and back: the split the user set returns, not a third of the instances to prefill
    at.segmented_control(key="fg:mode").set_value("disaggregated").run()
    assert_clean(at)
    back = scenario_of(at).deployment.pools
    assert any("the split you had" in str(m.value) for m in at.info)  # said as restored, not "set each count"
    assert back[decode].count == count + 1 and sum(p.count for p in back) == sum(
        p.count for p in sc.deployment.pools
    )


def test_a_pools_count_past_the_sliders_end_is_typed() -> None:
    """The Instances slider ends at 32 and the engine allows 512 a pool: 40 decode instances could not be
    set on the page (a browser review). The box beside it takes any count the scenario allows."""
    at = app("strategy")
    decode = next(i for i, p in enumerate(short().deployment.pools) if p.role == "decode")
    at.number_input(key=f"fg:deployment.pools[{decode}].count-typed").set_value(40).run()
    assert_clean(at)
    assert scenario_of(at).deployment.pools[decode].count == 40
    assert at.slider(key=f"fg:deployment.pools[{decode}].count").value == 40  # its range widened to hold it


@pytest.mark.parametrize("preset", ["chat-hetero-h20", "premium-isolation"])
def test_a_switch_and_back_restores_two_chips_split_and_pinned_pools(preset: str) -> None:
    """chat-hetero-h20 (3 H100 prefill, 4 H20 decode) came back from colocated as 'prefill-prefill 1,
    prefill-decode 2, decode-prefill 1, decode-decode 3', 0.4% within SLO, and premium-isolation's two
    pinned mixed pools came back from disaggregated as four, under a notice of the disaggregated split (a
    browser review): the way back is the deployment the user had, said as such."""
    at = app("strategy", short(preset), preset)
    first = scenario_of(at)
    other = "colocated" if first.deployment.mode == "disaggregated" else "disaggregated"
    at.segmented_control(key="fg:mode").set_value(other).run()
    assert_clean(at)
    assert scenario_of(at).deployment.mode == other
    at.segmented_control(key="fg:mode").set_value(first.deployment.mode).run()
    assert_clean(at)
    back = scenario_of(at)
    assert back.deployment == first.deployment and back.faults == first.faults
    assert [c.pools for c in back.workload.classes] == [c.pools for c in first.workload.classes]
    said = [str(m.value) for m in at.info]
    assert any("the split you had" in m or "the pools you had" in m for m in said), said
    assert not any(m.startswith(other.capitalize()) for m in said), said  # the other mode's notice is gone


def test_policy_widgets_come_from_the_registry() -> None:
    from engine import policies

    at = app("strategy")
    router = at.selectbox(key="fg:scheduler.router.name")
    assert set(router.options) == set(policies.registered("router"))
    with_knobs = [n for n, c in policies.registered("admission").items() if policies.knob_fields(c)]
    assert with_knobs, "some admission policy has knobs"
    at.selectbox(key="fg:scheduler.admission.name").set_value(with_knobs[0]).run()
    assert_clean(at)
    knob = policies.knob_fields(policies.registered("admission")[with_knobs[0]])[0]
    assert at.number_input(key=f"fg:scheduler.admission.{knob.name}").value == knob.default
    assert scenario_of(at).scheduler.admission.name == with_knobs[0]


def test_slo_target_changes_attainment() -> None:
    at = app("slo")
    before = [m.value for m in at.success] + [m.value for m in at.error]
    at.slider(key="fg:workload.classes[0].slo.ttft_ms").set_value(100.0).run()
    assert_clean(at)
    assert scenario_of(at).workload.classes[0].slo.ttft_ms == 100.0
    after = [m.value for m in at.success] + [m.value for m in at.error]
    assert after != before
    assert any("fails" in m.value for m in at.error)


def test_a_missed_tbt_target_fails_the_class_on_the_slo_and_results_pages() -> None:
    sc = short("chat-colocated", **{"workload.classes[0].slo.tbt_ms": 100.0})
    at = app("slo", sc, "chat-colocated")
    assert_clean(at)
    assert not at.success
    verdict = [m.value for m in at.error if "fails on TBT" in m.value]
    assert len(verdict) == 1 and "largest gap between tokens" in verdict[0]
    at.switch_page("app_pages/results.py").run()
    assert_clean(at)


def test_preset_picker_starts_over() -> None:
    at = app("results")
    at.sidebar.selectbox(key="fg:preset").set_value("chat-colocated").run()
    assert_clean(at)
    assert scenario_of(at) == load_preset("chat-colocated")
    assert at.session_state["fg_preset"] == "chat-colocated"
    # each page draws its own box: after page switches it still shows the preset (a review saw the
    # first preset, agentic-cache, after every second switch)
    for page in ("compare", "slo", "results", "workload"):
        at.switch_page(f"app_pages/{page}.py").run()
        assert at.sidebar.selectbox(key="fg:preset").value == "chat-colocated", page


def test_compare_page_lines_up_two_scenarios() -> None:
    at = app("compare")
    assert_clean(at)
    table = next(df.value for df in at.dataframe if "better" in df.value.columns)
    assert {"TTFT p99", "Cost per request", "SLO attainment"} <= set(table["figure"])
    at.selectbox(key="a").set_value("current, other mode").run()
    assert_clean(at)
    changed = next(df.value for df in at.dataframe if "better" in df.value.columns)
    assert not changed.equals(table)


def test_compare_choices_come_from_the_url() -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({**to_link(short(), DEFAULT_PRESET), "a": "current", "b": "current, other mode"})
    at.switch_page("app_pages/compare.py").run()  # a first visit straight to /compare?...
    assert_clean(at)
    assert (at.selectbox(key="a").value, at.selectbox(key="b").value) == ("current", "current, other mode")


# --- editing beyond sliders -------------------------------------------------------------------


def test_workload_editors_change_classes_and_lengths() -> None:
    at = app("workload")
    at.selectbox(key="fg:workload.classes[0].input.kind").set_value("uniform").run()
    assert_clean(at)
    dist = scenario_of(at).workload.classes[0].input
    assert dist.kind == "uniform" and dist.low is not None and dist.high is not None
    n = len(scenario_of(at).workload.classes)
    next(b for b in at.button if b.label == "Add a class").click().run()
    assert_clean(at)
    assert len(scenario_of(at).workload.classes) == n + 1
    assert len([t for t in at.title]) == 1
    # with the first class's SLO, as a trace's new class takes it (it took the schema's p99 and 100 ms)
    first, added = scenario_of(at).workload.classes[0], scenario_of(at).workload.classes[-1]
    assert added.slo == first.slo


def test_strategy_cache_faults_and_custom_chip() -> None:
    at = app("strategy")
    at.toggle(key="fg:cache.enabled").set_value(True).run()
    assert_clean(at)
    assert scenario_of(at).cache.enabled
    next(b for b in at.button if b.label == "Add a fault").click().run()
    assert_clean(at)
    assert len(scenario_of(at).faults) == 1
    next(b for b in at.button if b.label == "Remove").click().run()
    assert not scenario_of(at).faults

    hw = app("hardware")
    next(b for b in hw.button if b.label == "Save chip to this scenario").click().run()
    assert not hw.exception
    custom = scenario_of(hw).custom_hardware
    assert len(custom) == 1 and custom[0].id.startswith("my-")
    assert "custom_hardware" in str(from_link({k: hw.query_params[k] for k in ("v", "p", "s")}).model_dump())


def test_an_unedited_copy_of_a_chip_runs_as_the_chip_it_copies() -> None:
    """The custom-chip form starts from the fractions the chip runs with under the scenario's
    stack (the H100's default profile is TensorRT-LLM's; the default preset runs vLLM): a copy
    saved unedited into every pool gives the same timings. A review found TTFT p99 810 -> 640 ms."""
    from engine.catalog.entries import load_catalog
    from engine.serving.run import simulate

    hw = app("hardware")
    sc = scenario_of(hw)
    chip, stack = sc.deployment.pools[0].hardware, sc.deployment.stack
    assert load_catalog().chip(chip).default_profile != stack  # the case the review found
    hw.checkbox(key=f"fg:chip:{chip}:{stack}:use").check().run()
    next(b for b in hw.button if b.label == "Save chip to this scenario").click().run()
    assert not hw.exception
    copy = scenario_of(hw)
    assert {p.hardware for p in copy.deployment.pools} == {f"my-{chip}"}
    before, after = simulate(sc).summary["latency_ms"], simulate(copy).summary["latency_ms"]
    for metric in ("ttft", "tpot"):
        assert after[metric]["p99"] == pytest.approx(before[metric]["p99"], rel=1e-9), metric
    # and it is as sure: a copy in every number that sets its speed keeps the chip's calibration
    hw.switch_page("app_pages/results.py").run()
    mark = " ".join(text_of(m.value) for m in hw.get_by_key("fg-calibration").markdown)
    assert "uncalibrated" not in mark and "calibrated" in mark, mark
    # a chip with peaks the form does not show (the A100's int8) is copied whole
    from engine.calibration import trust
    from engine.scenario.resolve import scenario_catalog

    a100 = app("hardware")
    a100.selectbox(key="fg:chip-base").set_value("a100-80g").run()
    next(b for b in a100.button if b.label == "Save chip to this scenario").click().run()
    with_a100 = scenario_of(a100)
    chip_copy = next(h for h in with_a100.custom_hardware if h.id == "my-a100-80g")
    assert chip_copy.tflops == load_catalog().chip("a100-80g").tflops
    twin = trust.speed_twin(chip_copy, with_a100.deployment.stack, scenario_catalog(with_a100))
    assert twin is not None and twin.id == "a100-80g"
    # the form follows the stack: under TensorRT-LLM it starts from that fit
    trt = app("hardware", short(**{"deployment.stack": "trtllm"}))
    fit = load_catalog().chip(chip).profile("trtllm")
    assert trt.number_input(key=f"fg:chip:{chip}:trtllm:eta_compute").value == pytest.approx(fit.eta_compute)


def test_report_and_chart_html_carry_provenance() -> None:
    import plotly.graph_objects as go

    from engine.explain import presentation as pr
    from engine.serving.run import ENGINE_VERSION, simulate
    from ui import charts, export

    sc = short(**{"duration_s": 30.0})
    res = simulate(sc)
    fig = charts.cdf(pr.latency_cdfs(sc, res.requests, "ttft"), "ttft", pr.slo_targets(sc))
    meta = {
        "generator": "Fengong",
        "engine_version": ENGINE_VERSION,
        "scenario": sc.name,
        "preset": DEFAULT_PRESET,
        "seed": "1",
    }
    html = export.report_html(res, [("TTFT CDF", fig), ("again", go.Figure(fig))], meta)
    # plotly.js inline once; headline, classes, advisor, cost by part; 2 charts, summary, TOML
    assert html.count("plotly.js v") <= 2 and html.count("<section>") == 8
    assert f'content="{ENGINE_VERSION}"' in html and "duration_s = 30.0" in html
    page = export.html_text(fig, meta, "seed = 1\n", "TTFT CDF")
    assert "Plotly.newPlot" in page and "Fengong 0.1.0" in page


def test_results_show_cache_figures_and_what_the_scheduler_did() -> None:
    sc = short("chat-disaggregated", **{
        "cache": {"enabled": True, "block_tokens": 256},
        "workload.classes[0].multi_turn": {"turns_mean": 3, "think_time_s": 2},
        "workload.classes[0].prefix": {"tokens": 1024, "groups": 2},
        "faults": [{"at_s": 30.0, "pool": "decode", "instances": 1, "duration_s": 20.0}],
    })  # fmt: skip
    at = app("results", sc, "chat-disaggregated")
    assert_clean(at)
    headers = [h.value for h in at.subheader]
    assert "Prefix cache" in headers and "Overload, preemption and faults" in headers
    labels = {m.label for m in at.metric}
    assert {
        "Prefill compute saved",
        "KV read from cache",
        "Transfer saved",
        "Retried after a fault",
    } <= labels
    assert not {"Preemptions", "Role switches"} & labels  # only what happened is shown


# --- issue 14: lessons, refused values said, typed rates, classes from a trace -----------------


def test_results_page_opens_with_the_lesson_and_a_link_to_its_counterpart() -> None:
    from urllib.parse import parse_qs

    sc = load_preset("chat-colocated")
    at = app("results", sc, preset="chat-colocated")  # unedited
    assert_clean(at)
    lesson = at.info[0]
    assert text_of(lesson.value) == sc.lesson and lesson.proto.title == "What this scenario shows"
    links = [e for e in at.get("page_link") if e.proto.page == "compare"]
    assert len(links) == 1 and text_of(links[0].proto.label) == "Compare with chat-disaggregated"
    params = {k: v[0] for k, v in parse_qs(links[0].proto.query_string).items()}
    assert (params["a"], params["b"], params["p"]) == ("current", "chat-disaggregated", "chat-colocated")
    # following the link: Compare opens with A = this scenario and B = the counterpart
    cmp = AppTest.from_file(APP, default_timeout=120)
    cmp.query_params.update(params)
    cmp.switch_page("app_pages/compare.py").run()
    assert_clean(cmp)
    assert (cmp.selectbox(key="a").value, cmp.selectbox(key="b").value) == ("current", "chat-disaggregated")
    assert scenario_of(cmp) == sc


def test_an_edited_scenario_keeps_its_lesson_marked_as_the_presets() -> None:
    at = app("results")  # the default preset on a shorter window
    assert_clean(at)
    assert text_of(at.info[0].value) == short().lesson
    assert "before your changes" in at.info[0].proto.title
    # lesson and counterpart are scenario fields, shown (and editable) on the Strategy page
    at.switch_page("app_pages/strategy.py").run()
    assert at.text_area(key="fg:lesson").value == short().lesson
    assert at.selectbox(key="fg:counterpart").value == short().counterpart
    at.text_area(key="fg:lesson").set_value("").run()
    at.switch_page("app_pages/results.py").run()
    assert not [i for i in at.info if i.proto.title and "shows" in i.proto.title]
    # the counterpart is a field of its own: its button stays without the lesson (a round-trip review)
    assert [e for e in at.get("page_link") if e.proto.page == "compare"]


def test_eager_mode_is_a_strategy_toggle_that_slows_decode() -> None:
    """`deployment.eager` shows on the Strategy page with its reason, reaches the scenario, and
    the run it starts pays the launch cost: a slower time per output token."""
    from engine.serving.run import simulate

    at = app("strategy")
    box = at.toggle(key="fg:deployment.eager")
    assert box.label.startswith("Eager mode") and "enforce-eager" in (box.help or "")
    box.set_value(True).run()
    assert_clean(at)
    eager = scenario_of(at)
    assert eager.deployment.eager and eager == short(**{"deployment.eager": True})
    graphed = simulate(short()).summary["latency_ms"]["tpot"]["p50"]
    assert simulate(eager).summary["latency_ms"]["tpot"]["p50"] > graphed + 2.0  # 80 layers x 0.075 ms


def test_compare_opens_against_the_scenarios_counterpart() -> None:
    """Straight to /compare without a or b: A is the scenario, B its counterpart preset (the same
    requests), as the lesson's link opens it; a scenario without one meets itself served the other
    way, never an unrelated preset."""
    at = app("compare")  # the short window: its load changed, so B is the counterpart on it (same requests)
    assert_clean(at)
    assert (at.selectbox(key="a").value, at.selectbox(key="b").value) == ("current", "counterpart, this load")
    whole = app(
        "compare", load_preset("chat-disaggregated")
    )  # the preset's own load: the counterpart as it is
    assert (whole.selectbox(key="a").value, whole.selectbox(key="b").value) == (
        "current",
        short().counterpart,
    )
    alone = app("compare", short().model_copy(update={"counterpart": None}))
    assert_clean(alone)
    assert (alone.selectbox(key="a").value, alone.selectbox(key="b").value) == (
        "current",
        "current, other mode",
    )


def test_a_closed_loops_own_knobs_show_only_for_a_closed_loop() -> None:
    """How clients think and start (think, think spread, ramp) means nothing to a Poisson arrival; the
    think times' spread, only to uniform think times (it showed beside exponential ones: a review)."""

    def labels(at: AppTest) -> set[str]:
        return {w.label for w in [*at.number_input, *at.selectbox, *at.slider]}

    poisson = app("workload")
    assert_clean(poisson)
    assert not {"Think", "Think spread", "Ramp (s)", "Clients"} & labels(poisson)
    closed = app("workload", short(**{"workload.arrival": {"kind": "closed_loop", "clients": 8}}))
    assert_clean(closed)
    assert {"Think", "Ramp (s)", "Clients"} <= labels(closed) and "Think spread" not in labels(closed)
    uniform = app(
        "workload", short(**{"workload.arrival": {"kind": "closed_loop", "clients": 8, "think": "uniform"}})
    )
    assert_clean(uniform)
    assert {"Think", "Think spread", "Ramp (s)", "Clients"} <= labels(uniform)
    # a closed loop is measured over its whole run: no warm-up box that changes nothing (a review set
    # 0, 200 and 300 s and read the same figures, the chart shading the run 'not measured')
    assert "Warm-up (s)" in labels(poisson) and "Warm-up (s)" not in labels(closed)
    (box,) = [t for t in closed.text_input if t.label == "Warm-up (s)"]
    assert box.disabled and box.value == "none: whole run"
    assert "measured over its whole run" in (box.help or "")


def test_no_page_writes_a_stray_string() -> None:
    """Streamlit's magic writes any bare expression of a page script to the page: a docstring-like
    string after a constant would show as text. Only the module's own docstring is allowed."""
    import ast
    from pathlib import Path

    for path in [*sorted(Path("app_pages").glob("*.py")), Path("app.py")]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        stray = [
            node.lineno
            for node in tree.body[1:]
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        ]
        assert not stray, f"{path}: bare strings at lines {stray}"
