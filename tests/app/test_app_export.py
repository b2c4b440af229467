"""App tests of the exports where images cannot be made: no browser for kaleido, or a failing export.

The browser lookup is patched (`ui.image_export.browser_path`), so these tests say the same
whether or not this machine has Chromium.
"""

from __future__ import annotations

from datetime import UTC

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.harness import app, assert_clean
from ui import export, image_export
from ui.text import plain


@pytest.fixture
def no_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    """kaleido finds no Chrome or Chromium."""
    monkeypatch.setattr(image_export, "browser_path", lambda: None)


def test_without_a_browser_images_say_why_and_html_and_csv_remain(no_browser: None) -> None:
    at = app("results")
    assert_clean(at)
    notes = [c.value for c in at.caption if "Chrome or Chromium" in c.value]
    assert len(notes) >= 7  # one in every chart's export menu
    assert image_export.install_hint() in notes[0] and "restart" in notes[0]
    buttons = {b.label: b for b in at.download_button}
    for label in ("PNG", "SVG"):
        shown = [b for b in at.download_button if b.label == label]
        assert shown and all(b.disabled and not b.proto.url and not b.proto.deferred_file_id for b in shown)
        assert all("Chrome or Chromium" in b.help for b in shown)
    html = [b for b in at.download_button if b.label == "HTML"]
    assert len(html) >= 7 and all(not b.disabled and b.proto.deferred_file_id for b in html)
    for label in ("Requests (CSV)", "Summary (CSV)", "Report (HTML)", "Scenario (TOML)"):
        assert not buttons[label].disabled, label
    assert buttons["Requests (CSV)"].proto.deferred_file_id


def test_with_a_browser_there_is_no_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_export, "browser_path", lambda: "/usr/bin/chromium")
    at = app("results")
    assert not [c.value for c in at.caption if "Chrome or Chromium" in c.value]
    assert all(not b.disabled for b in at.download_button if b.label in ("PNG", "SVG"))


@pytest.mark.parametrize(
    ("system", "release", "words"),
    [
        ("Linux", {"ID": "debian"}, image_export.FIX_DEBIAN),
        ("Linux", {"ID": "ubuntu", "ID_LIKE": "debian"}, image_export.FIX_DEBIAN),
        ("Linux", {"ID": "linuxmint", "ID_LIKE": "ubuntu debian"}, image_export.FIX_DEBIAN),
        ("Linux", {"ID": "fedora"}, image_export.FIX_FEDORA),
        ("Darwin", {}, image_export.FIX_MACOS),
        ("Windows", {}, "Google Chrome"),
    ],
)
def test_the_fix_fits_the_platform(system: str, release: dict[str, str], words: str) -> None:
    assert words in image_export.install_hint(system, release)


def test_kaleidos_own_installer_is_offered_where_it_exists() -> None:
    hint = image_export.install_hint("Linux", {"ID": "arch"})
    assert hint in ("`kaleido_get_chrome`", "`plotly_get_chrome`", "install Chrome or Chromium")


def test_a_failed_export_is_said_on_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """The callable fails where Streamlit runs it (a thread, no script context); the next run says why."""
    monkeypatch.setattr(image_export, "browser_path", lambda: "/usr/bin/chromium")

    def page() -> None:
        import threading

        import plotly.graph_objects as go
        import streamlit as st

        from ui import export, state

        if state.SCENARIO not in st.session_state:
            state.use_preset("chat-colocated")
        export.figure_buttons(go.Figure(go.Scatter(x=[0, 1], y=[0, 1])), state.scenario(), "t", "t")
        if st.button("export"):

            def boom() -> bytes:
                raise RuntimeError("Chrome crashed: *not* [markdown](http://x)")

            make = export.guarded(boom, "fg:dl:t:png", image=True)
            raised: list[Exception] = []

            def click() -> None:
                try:
                    make()
                except RuntimeError as exc:
                    raised.append(exc)

            thread = threading.Thread(target=click)
            thread.start()
            thread.join()
            st.write(f"raised {len(raised)}")

    at = AppTest.from_function(page, default_timeout=60).run()
    assert not at.error
    at.button[0].click().run()
    assert "raised 1" in [m.value for m in at.markdown]  # Streamlit still sees the failure
    at.run()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("The last PNG export failed: RuntimeError")
    assert "\\[markdown\\]" in errors[0]  # the reason is shown as text (ui.text.plain), never as Markdown


def test_a_later_success_clears_the_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    failures: dict[str, str] = {"k": "RuntimeError: earlier"}
    monkeypatch.setattr(export, "_failures", lambda: failures)
    assert export.guarded(lambda: b"ok", "k")() == b"ok"
    assert failures == {}


def test_an_edited_scenario_is_exported_under_its_derived_name() -> None:
    """A swapped chip: the provenance (PNG, SVG, CSV and HTML headers), the TOML and the report's title."""

    def page() -> None:
        import streamlit as st

        from engine.scenario.codec import dumps_toml
        from engine.serving.run import simulate
        from ui import export, state

        if state.SCENARIO not in st.session_state:
            state.use_preset("chat-disaggregated")
            state.override({"deployment.pools[0].hardware": "mi300x", "duration_s": 20.0})
        sc = state.scenario()
        meta = export.provenance(sc)
        st.text(f"scenario={meta['scenario']}|preset={meta['preset']}")
        html = export.report_html(simulate(sc), [], meta, dumps_toml(state.named(sc)), state.named(sc))
        st.text(
            f"title={'<title>Fengong report: ' + meta['scenario'] in html}|toml={meta['scenario'] in html}"
        )
        # its words are the edit's ('Edited from ...'), not the preset's own read as the edit's (a review)
        st.text(f"edited={'Edited from chat-disaggregated' in html.split('<pre')[0]}")

    at = AppTest.from_function(page, default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [t.value for t in at.text]
    want = "llama-3.1-70b on 6 mi300x prefill + 6 h100-sxm decode, edited from chat-disaggregated"
    assert shown[0] == f"scenario={want}|preset=chat-disaggregated (edited)", shown
    assert shown[1] == "title=True|toml=True", shown
    assert shown[2] == "edited=True", shown


def test_an_export_says_when_it_was_made() -> None:
    """A chart or table kept from an earlier session said nothing of its date: each export's provenance
    carries the minute the page made it, in UTC."""
    from datetime import datetime, timedelta

    def page() -> None:
        import streamlit as st

        from ui import export, state

        if state.SCENARIO not in st.session_state:
            state.use_preset("chat-disaggregated")
        st.text(export.provenance(state.scenario())["exported"])

    before = datetime.now(UTC).replace(second=0, microsecond=0)
    at = AppTest.from_function(page, default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    when = datetime.strptime(at.text[0].value, "%Y-%m-%d %H:%M UTC").replace(tzinfo=UTC)
    assert before <= when <= datetime.now(UTC) + timedelta(minutes=1)


def test_exports_of_several_seeds_say_their_figures_are_one_seeds() -> None:
    """With three seeds on the page (TTFT p99 848 ± 88 ms), the report's headline and the summary CSV read
    seed 1's 807 ms with no word, under CDFs of the mean of 3 seeds (a review): their provenance and the
    report say which run they are."""

    def page() -> None:
        import streamlit as st

        from engine.scenario.codec import apply_overrides, load_preset
        from engine.serving.run import simulate
        from ui import export, state

        if state.SCENARIO not in st.session_state:
            state.use_preset("chat-disaggregated")
        res = simulate(apply_overrides(load_preset("chat-disaggregated"), {"duration_s": 20.0}))
        meta = export.export_meta(res, seeds=3)
        st.text(meta.get("figures", ""))
        st.text(str("Figures: seed 1" in export.report_html(res, [], meta)))  # (its apostrophe escaped)
        st.text(str("figures" in export.export_meta(res)))

    at = AppTest.from_function(page, default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [t.value for t in at.text]
    assert shown[0].startswith("seed 1's run alone; the page shows the mean of 3 seeds"), shown
    assert shown[1:] == ["True", "False"], shown


def test_the_report_says_which_pools_are_uncalibrated() -> None:
    """An edit to a stack without a fitted profile: the report never said the run was uncalibrated (a
    review; only a raw summary row hinted at it). It says so under the title, as the pages do."""
    from engine import explain as ex
    from engine.scenario.codec import apply_overrides, load_preset
    from engine.serving.run import simulate
    from ui import export

    sc = apply_overrides(
        load_preset("chat-disaggregated"), {"deployment.stack": "sglang", "duration_s": 20.0}
    )
    res = simulate(sc)
    said = ex.note(ex.pool_marks(sc, res.summary))
    assert said and said.startswith("Uncalibrated under SGLang")
    html = export.report_html(res, [], {"scenario": sc.name})
    assert _escaped(said) in html.split("<pre")[0]
    # the bill's basis, an assumed price named (the summary table leaves text out)
    h200 = simulate(apply_overrides(sc, {"deployment.pools[0].hardware": "h200"}))
    assert h200.summary["cost"]["assumed_prices"]
    page = export.report_html(h200, [], {"scenario": sc.name}).split("<pre")[0]
    assert _escaped(f"Cost basis: {ex.cost_basis(h200.summary)}.") in page and "h200 $" in page


def _escaped(text: str) -> str:
    import html

    return html.escape(text)


def test_the_pages_show_an_edited_scenarios_derived_name() -> None:
    from engine.scenario.codec import apply_overrides, load_preset

    sc = apply_overrides(
        load_preset("chat-disaggregated"), {"deployment.pools[0].hardware": "mi300x", "duration_s": 20.0}
    )
    at = app("results", scenario=sc, preset="chat-disaggregated")
    assert_clean(at)
    want = plain("llama-3.1-70b on 6 mi300x prefill + 6 h100-sxm decode, edited from chat-disaggregated")
    assert any(want in c.value for c in at.sidebar.caption)  # the header beside every page
    assert any(want in c.value for c in at.main.caption)  # the Results caption
    assert not any(
        plain("Chat disaggregated: H100 prefill") in c.value for c in [*at.sidebar.caption, *at.main.caption]
    )


def test_an_image_is_rendered_again_where_kaleidos_tab_was_not_ready() -> None:
    """kaleido raised "ReferenceError: kaleido_scopes is not defined" in one CI run of three: its tab's
    scripts were not loaded yet. The export tries once more on that error, and on no other."""
    import plotly.graph_objects as go
    import pytest

    from ui import export

    class JavascriptError(Exception):  # kaleido's own, by name
        pass

    calls: list[dict[str, object]] = []

    class Fig(go.Figure):
        def to_image(self, **kw: object) -> bytes:  # type: ignore[override]
            calls.append(kw)
            if len(calls) == 1:
                raise JavascriptError("ReferenceError: kaleido_scopes is not defined")
            return b"png"

    assert export.rendered(Fig(), format="png") == b"png" and len(calls) == 2

    class Broken(go.Figure):
        def to_image(self, **kw: object) -> bytes:  # type: ignore[override]
            raise ValueError("no browser")

    with pytest.raises(ValueError, match="no browser"):
        export.rendered(Broken(), format="png")


def test_a_comparisons_exports_are_named_after_its_two_sides() -> None:
    """Compare's charts were saved as 'fengong_chat-disaggregated_1_compare_e2e_cdf.png' and stamped
    with the sidebar's scenario, neither A nor B (a review): they carry both sides."""
    from engine.scenario.codec import load_preset
    from ui import export

    pair = (
        ("chat-colocated", "Chat on one colocated H100 pool", 1),
        ("moe-deepseek-h200", "MoE: DeepSeek-V3", 1),
    )
    sc = load_preset("chat-colocated")
    assert (
        export.name(sc, "compare_changes", "png", pair)
        == "fengong_chat-colocated-vs-moe-deepseek-h200_1_compare_changes.png"
    )
    # each side's seed where they differ (A at seed 7 against B at 1 was stamped 'seed 7' alone: a review)
    apart = (("chat-colocated", "A", 7, ""), ("moe-deepseek-h200", "B", 1, ""))
    assert export.pair_seed(apart) == "A 7, B 1" and export.pair_seed(pair) == "1"
    assert export.name(sc, "x", "png", apart) == "fengong_chat-colocated-vs-moe-deepseek-h200_7-1_x.png"
    # and B's scenario with A's: an export carried the session's scenario alone (a review)
    import plotly.graph_objects as go

    meta = {
        "engine_version": "0",
        "scenario": "A: a; B: b",
        "preset": "p",
        "seed": "1",
        "scenario_b_toml": "b = 2",
    }
    page = export.html_text(go.Figure(), meta, "a = 1", "t")
    assert "# Scenario A\na = 1\n# Scenario B\nb = 2" in page and "scenario b toml" not in page
    at = app("compare")
    assert_clean(at)
    assert any(b.label == "HTML" for b in at.download_button)  # the page builds its exports with the pair


def test_the_report_says_the_headline_the_verdicts_and_the_findings() -> None:
    """A report sent to a buying committee held the charts, the raw summary and the TOML: no band, no
    class verdict, no finding, so moe-deepseek-dp-ep's pass resting on chips as fast as modelled was
    nowhere in it (a review)."""
    import html as html_lib

    from engine import simulate
    from engine.scenario.codec import load_preset
    from ui import export

    page = html_lib.unescape(
        export.report_html(simulate(load_preset("moe-deepseek-dp-ep")), [], {"scenario": "moe"})
    )
    for heading in ("Headline", "Each class against its SLO", "Advisor", "Cost by part"):
        assert f"<h2>{heading}" in page, heading
    assert "TPOT p99" in page and "about two in three" in page
    assert "SLO attainment shows no band" in page  # the cliff the Results page says
    assert "with every chip at its band's pessimistic edge it misses" in page


def test_a_plans_chart_export_says_what_was_planned_and_when() -> None:
    """An exported frontier named the preset alone (its TOML the preset's twelve H100s beside a search over
    three chips that chose B200s): the plan's request and choice go into its provenance, and with the date
    onto the image's caption (a browser review)."""
    from types import SimpleNamespace

    import plotly.graph_objects as go

    from engine.planning.candidates import SearchSpace
    from ui.export import print_copy
    from ui.plan_charts import plan_facts

    chosen = {"shape": "b200 tp1 -> b200 tp1", "split": "3P:1D"}
    p = SimpleNamespace(target_rps=16.0, objective="usd_per_hour", verdict=SimpleNamespace(chosen=chosen))
    key = ("{}", 16.0, SearchSpace(hardware=("h100-sxm", "h200", "b200")), "percentile", 0.9)
    said = plan_facts(p, key)
    assert said == (
        "plan: 16 req/s; chips h100-sxm, h200, b200; rule percentile; by cost per hour; "
        "chose b200 tp1 -> b200 tp1 3P:1D"
    )
    meta = {"engine_version": "0.1.0", "scenario": "s", "preset": "p", "seed": "1", "plan": said}
    meta["exported"] = "2026-12-07 03:33 UTC"
    caption = print_copy(go.Figure(), meta).layout.annotations[-1].text.replace("<br>", " ")
    assert "chose b200 tp1 -> b200 tp1 3P:1D" in caption and "exported 2026-12-07 03:33 UTC" in caption
