"""App tests of the Planner page and the Advisor panel (streamlit.testing AppTest)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.planning.test_frontier import runs as sample_runs
from tests.simhelp import h100_edges
from ui.plan_charts import pareto_chart, selected_run

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_planner_page_plans_and_draws_both_frontiers() -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("app_pages/planner.py")
    at.run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Planner"]
    assert any("press **Plan**" in i.value for i in at.info)
    at.number_input(key="plan_target").set_value(20.0)
    at.multiselect(key="plan_hardware").set_value(["h100-sxm"])
    at.multiselect(key="plan_tp").set_value([2])
    at.selectbox(key="plan_window").set_value(60.0)
    at.button[0].click().run()
    assert not at.exception
    assert any(
        "Cheapest deployment" in s.value and "h100-sxm" in s.value.replace("\\", "") for s in at.success
    )
    metrics = {m.label: m.value for m in at.metric}
    passed, runs = (int(v.replace(",", "")) for v in metrics["Runs that met every SLO"].split(" of "))
    assert int(metrics["Shapes simulated"]) >= 1 and 1 <= passed <= runs  # '30 of 126': runs, not shapes
    # the shape counters add up (Simulated counted runs, several a shape: 342 against 19 + 289 + 70)
    shapes = [
        int(metrics[k].replace(",", ""))
        for k in ("Pruned by the cost model", "Bounded out", "Shapes simulated")
    ]
    considered = next(m for m in at.metric if m.label == "Shapes considered")
    left = (
        int(considered.help.split(" + ")[-1].split()[0].replace(",", ""))
        if "unexplored" in considered.help
        else 0
    )
    assert sum(shapes) + left == int(metrics["Shapes considered"].replace(",", ""))
    assert len(at.get("plotly_chart")) == 2
    # both frontiers export as every chart does, the plan's scenario in the file (plotly's button had none)
    menus = {getattr(p, "key", None) for p in at.get("popover")}
    assert {"fg:export:plan_cost_frontier", "fg:export:plan_goodput_frontier"} <= menus, menus


def test_failing_runs_are_grey_crosses_off_the_frontier() -> None:
    from engine.planning.frontier import passing_frontiers

    frame = sample_runs([False, True, True, True]).assign(
        mode="colocated",
        shape="h100-sxm tp2",
        split=["1 mixed", "2 mixed", "3 mixed", "4 mixed"],
        chosen=[False, True, False, False],
    )
    fig = pareto_chart(
        passing_frontiers(frame), "usd_per_hour", "goodput_rps", "on_cost_frontier", title="t", x_title="x",
        y_title="y",
    )  # fmt: skip
    traces = {t.name: t for t in fig.data}
    assert list(traces["Pareto frontier"].x) == [20.0, 40.0]  # the cheap failing run is not on the line
    misses = traces["misses an SLO"]
    assert list(misses.x) == [10.0] and misses.marker.symbol == "x" and misses.text is None
    assert list(traces["colocated, meets SLOs"].x) == [20.0, 30.0, 40.0]
    assert list(traces["colocated, meets SLOs"].text) == [
        "",
        "",
        "4 mixed",
    ]  # labels on the frontier only, the chosen one's on its star
    # the star is drawn last (on top) and answers a click with the chosen run itself: with no
    # customdata a click fell through it to a failing run at the same point, loaded as "the choice"
    star = fig.data[-1]
    assert star.name.startswith("chosen") and star.hoverinfo != "skip"
    # it carries the point's label, set off by its size (beneath it, the label was hidden: a browser review)
    assert list(star.text) == ["2 mixed"] and star.mode == "markers+text"
    # room above the highest point for its label
    assert fig.layout.yaxis.range[1] > max(traces["colocated, meets SLOs"].y)
    assert selected_run({"selection": {"points": [{"customdata": list(star.customdata[0])}]}}) == 1
    # a frontier of one point draws no line, so it has no legend entry (one stood for nothing drawn: a review)
    lone = passing_frontiers(frame.assign(passes=[False, True, False, False]))
    fig = pareto_chart(
        lone, "usd_per_hour", "goodput_rps", "on_cost_frontier", title="t", x_title="x", y_title="y"
    )
    assert "Pareto frontier" not in {t.name for t in fig.data}


def test_clicked_point_is_read_from_the_selection_event() -> None:
    event = {"selection": {"points": [{"customdata": [3, "h100-sxm tp2", "3P:2D", 24.9, 19.9]}]}}
    assert selected_run(event) == 3
    assert selected_run({"selection": {"points": []}}) is None
    assert selected_run(None) is None
    both = [  # a failing run beneath the chosen star, picked together: the star's (drawn on top) wins
        {"curve_number": 2, "customdata": [7, "h100-sxm tp1", "12 mixed", 54.0, 39.3]},
        {"curve_number": 5, "customdata": [3, "h100-sxm tp1", "10P:1D", 54.0, 39.3]},
    ]
    assert selected_run({"selection": {"points": both}}) == 3


def test_loading_a_run_makes_it_the_current_scenario() -> None:
    def app() -> None:
        import streamlit as st

        from engine.planning.candidates import SearchSpace
        from engine.planning.plan import plan
        from ui import plan_charts, state

        if state.SCENARIO not in st.session_state:
            state.use_preset("chat-colocated")
        p = plan(state.scenario(), 12.0, SearchSpace(hardware=("h100-sxm",), tp=(2,), duration_s=30.0))
        run = int(p.runs.index[p.runs["mode"] == "disaggregated"][0])
        plan_charts._load(p, run, ("test",))
        now = state.scenario()
        st.write(f"mode={now.deployment.mode} rate={now.workload.arrival.rate_rps:g}")

    at = AppTest.from_function(app, default_timeout=120).run()
    assert not at.exception
    assert "mode=disaggregated rate=12" in [m.value for m in at.markdown]


def test_advisor_panel_shows_findings_and_the_asic_test() -> None:
    def app() -> None:
        from engine.scenario import codec as io
        from engine.serving.run import simulate
        from ui.advisor import advisor_panel

        s = io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 20.0})
        advisor_panel(simulate(s))

    at = AppTest.from_function(app, default_timeout=120).run()
    assert not at.exception
    assert [s.value for s in at.subheader] == ["Advisor"]
    texts = [e.value for e in (*at.info, *at.success, *at.warning, *at.error)]
    assert any("an ASIC for decode" in t for t in texts)
    assert any("Class chat" in t for t in texts)
    at.number_input(key="advisor_months").set_value(3.0).run()
    assert not at.exception
    assert any("not stable" in i.value for i in at.info)


def test_planner_form_says_which_typed_value_is_out_of_range() -> None:
    """Out-of-range values typed into the form are said on submit (Streamlit would drop them silently)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("app_pages/planner.py")
    at.run()
    at.number_input(key="plan_target").set_value(99_999.0)
    at.number_input(key="plan_sims").set_value(2)
    at.button[0].click().run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1, errors
    assert "Target load (req/s): 99,999 is not allowed: the allowed range is 0.1 to 5,000" in errors[0]
    assert "Most simulations: 2 is not allowed: the allowed range is 5 to 400" in errors[0]
    assert not any("Cheapest deployment" in s.value for s in at.success)  # nothing was planned
    # the refusal says why; the first-visit prompt does not follow it ('Not planned ...' then 'Set a target
    # load and the chips allowed, then press Plan': a review)
    assert not any("then press" in i.value for i in at.info), [i.value for i in at.info]
    # the percentile rule's unused share blocks nothing, and a range reads in digits ('0 to 1e+07': a review)
    at.number_input(key="plan_target").set_value(16.0)
    at.number_input(key="plan_sims").set_value(5)
    at.number_input(key="plan_attainment").set_value(150.0)
    at.number_input(key="plan_budget").set_value(-1.0)
    at.button[0].click().run()
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "Requests within their SLO" not in errors[0], errors
    assert "e+0" not in errors[0] and "the allowed range is 0 to 10,000,000" in errors[0], errors


def test_advisor_months_out_of_range_is_said() -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.number_input(key="advisor_months").set_value(500.0).run()
    assert not at.exception
    said = [w.value for w in at.warning if "Months between model changes" in w.value]
    assert said and "500 is not allowed: the allowed range is 1 to 120" in said[0], said


def test_the_planner_mixes_decode_pools_by_class_when_asked() -> None:
    from engine.scenario.codec import load_preset
    from tests.app.harness import app

    at = app("planner", load_preset("portfolio-chat-batch"), preset="portfolio-chat-batch")
    at.number_input(key="plan_target").set_value(8.0)
    at.multiselect(key="plan_hardware").set_value(["h100-sxm", "h20", "mi300x"])
    at.multiselect(key="plan_modes").set_value(["disaggregated"])
    at.multiselect(key="plan_tp").set_value([1, 2])
    at.selectbox(key="plan_window").set_value(300.0)
    at.checkbox(key="plan_portfolio").check()
    at.toggle(key="plan_risk").set_value(False)  # the portfolio search itself, not the risk-aware choice
    at.button[0].click().run()
    assert not at.exception
    won = [s.value.replace("\\", "") for s in at.success if "Cheapest deployment" in s.value]
    assert won and "chat:" in won[0] and "batch:" in won[0], won  # a portfolio, each class its decode chip


def test_the_planner_says_whether_its_choice_holds_with_slower_chips_and_loads_what_does() -> None:
    """At 16 req/s on H100s the cheapest chat-colocated deployment passes by a thin margin: with its
    chips as slow as their expected error allows it misses, and the page names and loads the
    cheapest deployment that passes even then."""
    at = AppTest.from_file(APP, default_timeout=240)
    at.switch_page("app_pages/planner.py")
    at.run()
    at.number_input(key="plan_target").set_value(16.0)
    at.multiselect(key="plan_hardware").set_value(["h100-sxm"])
    at.multiselect(key="plan_tp").set_value([1, 2])
    at.multiselect(key="plan_pp").set_value([1])
    at.selectbox(key="plan_window").set_value(60.0)
    at.toggle(key="plan_risk").set_value(False)  # the nominal cheapest: the one at a cliff
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    box = at.get_by_key("fg-plan-margin")
    said = " ".join(w.value for w in box.warning).replace("\\", "").replace("\u2060", "")  # escapes, joiners
    slow = h100_edges("chat-colocated")[0]
    assert (
        f"With every chip at the pessimistic edge of its throughput band (h100-sxm {slow:+.0%} time)" in said
    ), said
    assert "the chosen deployment no longer passes" in said and "The cheapest that passes even then" in said
    # said over the planning window: such a pick can fail over the full length (a review)
    assert "even then over the 60 s planning window (not checked over the full length): **" in said
    shape = said.split("(not checked over the full length): **")[1].split("**")[0]
    at.button(key="fg-plan-load-margin").click().run()
    assert not at.exception
    now = at.session_state["fg_scenario"]
    counts = {p.role: p.count for p in now.deployment.pools}
    split = f"{counts['prefill']}P:{counts['decode']}D" if "prefill" in counts else f"{counts['mixed']}M"
    assert shape.endswith(split), (shape, counts)
    assert now.workload.arrival.rate_rps == 16.0
    # unticked, the plan comes without its margin
    at.switch_page("app_pages/planner.py").run()
    at.checkbox(key="plan_margin").uncheck()
    at.button[0].click().run()
    assert not at.exception and any("Cheapest deployment" in x.value for x in at.success)
    with pytest.raises(KeyError):
        at.get_by_key("fg-plan-margin")


def test_results_reruns_with_slower_chips_when_asked() -> None:
    """The Results page's margin panel runs nothing until asked; then it says which verdicts move
    and shows each figure as modelled and with slower chips, until the scenario changes."""
    from engine.scenario.codec import apply_overrides, load_preset, to_link

    at = AppTest.from_file(APP, default_timeout=240)
    sc = apply_overrides(load_preset("chat-colocated"), {"duration_s": 300.0})
    at.query_params.update(to_link(sc, "chat-colocated"))
    at.run()
    assert not at.exception
    panel = at.get_by_key("fg-run-margin")
    assert not panel.dataframe and not panel.warning
    at.button(key="fg-run-margin-go").click().run()
    assert not at.exception
    panel = at.get_by_key("fg-run-margin")
    said = " ".join(w.value for w in panel.warning).replace("\\", "")  # Markdown escapes
    assert (
        f"(h100-sxm {h100_edges('chat-colocated')[0]:+.0%} time)" in said and "class chat now fails" in said
    ), said
    frame = panel.dataframe[0].value
    assert list(frame.columns) == ["figure", "as modelled", "chips slower"]
    assert "SLO attainment" in set(frame["figure"])
    at.run()  # a rerun keeps it while the scenario is the same
    assert at.get_by_key("fg-run-margin").dataframe


def test_compare_checks_its_order_against_the_models_error_when_asked() -> None:
    """Compare's margin panel runs nothing until asked; then a row per figure with each case's
    change and better side, and a verdict. chat-disaggregated against chat-hetero-h20 run on
    different chips, so each side slower alone is a case too."""
    from engine.scenario.codec import apply_overrides, load_preset, to_link

    at = AppTest.from_file(APP, default_timeout=240)
    sc = apply_overrides(load_preset("chat-disaggregated"), {"duration_s": 120.0})
    at.query_params.update({**to_link(sc, "chat-disaggregated"), "b": "chat-hetero-h20"})
    at.run()
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception, [e.value for e in at.exception]
    panel = at.get_by_key("fg-compare-margin")
    assert not panel.dataframe
    at.button(key="fg-compare-margin-go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    panel = at.get_by_key("fg-compare-margin")
    frame = panel.dataframe[0].value
    assert list(frame.columns) == [
        "figure", "as modelled", "both slower", "B's chips slower", "A's chips slower", "verdict"
    ]  # fmt: skip
    row = frame.set_index("figure").loc["Cost per request"]
    assert row["verdict"].partition(", but ")[0] in {"B in every case", "A in every case", "the same",
                              "depends on the model's error", "A, or the same", "B, or the same"}  # fmt: skip
    said = " ".join(x.value for x in [*panel.warning, *panel.info]).replace("\\", "")
    from engine.calibration import trust
    from engine.catalog.entries import load_catalog

    cat = load_catalog()
    h100 = h100_edges("chat-disaggregated")[0]
    h20 = trust.calibration(cat.hardware["h20"], load_preset("chat-hetero-h20").deployment.stack, cat)[
        1
    ].edges()[0]
    assert f"A's chips slower: h100-sxm {h100:+.0%}; B's: h100-sxm {h100:+.0%}, h20 {h20:+.0%}" in said, said


def test_the_verdicts_band_reaches_as_far_as_the_margin_moved_the_figure() -> None:
    """The chosen deployment's TPOT p90 '56.4 ms ± 18%' beside a margin rerun of 87.9 ms reads
    '(−18% to +56%)'; a rerun within the band leaves '± 18%'."""
    from ui.plan_charts import _pm

    assert _pm((-0.18, 0.18), 56.4, 87.9) == " (−18% to +56%)"
    assert _pm((-0.18, 0.18), 56.4, 60.0) == " ± 18%"
    assert _pm((-0.18, 0.18), 56.4, None) == _pm((-0.18, 0.18)) == " ± 18%"
    assert _pm((None, None), 56.4, 87.9) == ""
    assert _pm((-0.36, 0.36), 10.01, 0.30) == " (−97% to +36%)"  # a goodput the slowed choice loses
    # with the faster rerun too: a goodput takes the two moves alone, a latency keeps its floor
    assert _pm((-0.36, 0.36), 10.01, 0.30, 12.0, latency=False) == " (−97% to +20%)"
    assert _pm((-0.18, 0.18), 56.4, 87.9, 50.0) == " (−18% to +56%)"
    assert _pm((-0.18, 0.18), 56.4, 87.9, 40.0) == " (−29% to +56%)"
    assert _pm((-0.30, 0.67)) == " (−30% to +67%)"  # an asymmetric band reads as one


def test_a_click_on_either_chart_is_the_one_that_loads() -> None:
    """A chart keeps its selection: the first chart's older click shadowed every later click on the
    second, which then loaded nothing (a walkthrough). The selection that changed wins."""

    def app() -> None:
        import streamlit as st

        from ui.plan_charts import _picked

        def event(run: int | None) -> dict[str, object]:
            points = (
                [] if run is None else [{"curve_number": 1, "customdata": [run, "s", "1 mixed", 1.0, 1.0]}]
            )
            return {"selection": {"points": points}}

        seen = []
        for first, second in ((3, None), (3, 7), (3, 7), (5, 7)):
            seen.append(_picked([event(first), event(second)]))
        st.write(f"picked={seen}")

    at = AppTest.from_function(app).run()
    assert not at.exception
    assert "picked=[3, 7, None, 5]" in [m.value for m in at.markdown]


def test_a_plan_that_simulated_nothing_shows_the_table_its_note_names() -> None:
    """A $5/h budget: every shape bounded out; the note sent the reader to 'the Planner page's table',
    which was drawn only where something had been simulated, and the plan's line read 'margin not
    checked' beside the ticked box (a review)."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("app_pages/planner.py")
    at.run()
    at.number_input(key="plan_target").set_value(20.0)
    at.number_input(key="plan_budget").set_value(5.0)
    at.button[0].click().run()
    assert not at.exception
    from tests.app.harness import text_of

    said = " ".join(text_of(m.value) for m in (*at.markdown, *at.caption, *at.warning, *at.error, *at.info))
    assert "No deployment was simulated" in said and "the Planner page's table of shapes" in said, said
    assert [e for e in at.expander if e.label == "Every shape and what became of it"]
    # its missing bounds and runs read '–' in the browser too ('None' there: a browser review)
    assert [d for d in at.dataframe if d.proto.placeholder == "–"]
    assert "margin not checked: nothing was chosen" in said, said


def test_the_counters_add_up_where_the_budget_stopped_the_search() -> None:
    """342 shapes considered, 19 pruned, 0 bounded out, 64 simulated: the 259 the budget never reached
    were in no tile (a review). A tile counts them where there are any."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("app_pages/planner.py")
    at.run()
    at.number_input(key="plan_target").set_value(20.0)
    at.number_input(key="plan_sims").set_value(5)
    at.checkbox(key="plan_margin").uncheck()
    at.button[0].click().run()
    assert not at.exception
    tiles = {m.label: m.value for m in at.metric}
    left = int(tiles["Left unexplored"].replace(",", ""))
    parts = ("Pruned by the cost model", "Bounded out", "Shapes simulated")
    assert left > 0 and int(tiles["Shapes considered"].replace(",", "")) == left + sum(
        int(tiles[k].replace(",", "")) for k in parts
    ), tiles


def test_the_form_starts_again_from_another_presets_load_and_chips() -> None:
    """Its fields were kept for the session, so moe-deepseek-h200 opened at chat's 16 req/s (its own is 10)
    with no expert parallelism: Plan then searched another load and no EP layout (a review). Fields that
    start from the scenario start again from another preset's."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("app_pages/planner.py")
    at.run()
    assert at.number_input(key="plan_target").value == 16.0 and at.multiselect(key="plan_ep").value == []
    at.selectbox(key="fg:preset").set_value("moe-deepseek-h200").run()
    assert not at.exception
    assert at.number_input(key="plan_target").value == 10.0
    assert at.multiselect(key="plan_ep").value == [8, 16]
    assert at.multiselect(key="plan_hardware").value[0] == "h200"
    at.switch_page("app_pages/results.py").run()  # the same preset again: nothing starts over
    at.switch_page("app_pages/planner.py").run()
    assert at.number_input(key="plan_target").value == 10.0
    at.selectbox(key="fg:preset").set_value("chat-colocated").run()
    assert (
        at.multiselect(key="plan_ep").value == []
        and at.multiselect(key="plan_hardware").value[0] == "h100-sxm"
    )


def test_a_frontier_spanning_a_wide_range_of_costs_is_drawn_on_a_log_axis() -> None:
    """A MoE plan's costs ran from $36 to $640/h: the candidates worth weighing sat in a few pixels (a review)."""
    from engine.planning.frontier import passing_frontiers

    frame = sample_runs([True, True, True, True]).assign(
        mode="colocated", shape="b200 tp8", split=["1 mixed", "2 mixed", "4 mixed", "16 mixed"],
        chosen=[True, False, False, False], usd_per_hour=[36.0, 72.0, 144.0, 640.0],
    )  # fmt: skip
    wide = pareto_chart(
        passing_frontiers(frame), "usd_per_hour", "goodput_rps", "on_cost_frontier", title="t", x_title="x",
        y_title="y",
    )  # fmt: skip
    assert wide.layout.xaxis.type == "log" and wide.layout.xaxis.dtick == "D2"
    narrow = frame.assign(usd_per_hour=[36.0, 40.0, 48.0, 60.0])
    flat = pareto_chart(
        passing_frontiers(narrow), "usd_per_hour", "goodput_rps", "on_cost_frontier", title="t", x_title="x",
        y_title="y",
    )  # fmt: skip
    assert flat.layout.xaxis.type in (None, "linear")
