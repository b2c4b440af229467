"""App tests of refused input (streamlit.testing AppTest): a value out of range or a model the pools
cannot hold is said in words, naming the field and its range, and the scenario keeps its last good
value. The harness is tests/app/harness.py."""

from __future__ import annotations

from engine import apply_overrides
from tests.app.harness import app, assert_clean, dismiss_buttons, scenario_of, short, text_of


def test_a_refused_value_snaps_back_with_the_reason() -> None:
    at = app("strategy")
    at.selectbox(key="fg:deployment.pools[0].hardware").set_value("l4").run()  # 70B fp8 does not fit 2 x L4
    assert not at.exception
    assert any("tp" in text_of(w.value) for w in at.warning), [w.value for w in at.warning]
    assert scenario_of(at) == short()
    assert at.selectbox(key="fg:deployment.pools[0].hardware").value == short().deployment.pools[0].hardware


def test_a_typed_value_out_of_range_is_said_until_dismissed() -> None:
    at = app("workload")
    field = "workload.classes[0].input.max_tokens"
    before = scenario_of(at)
    at.number_input(key=f"fg:{field}").set_value(2_000_000).run()
    assert not at.exception
    assert scenario_of(at) == before  # refused
    kept = before.workload.classes[0].input.max_tokens
    assert at.number_input(key=f"fg:{field}").value == kept  # the box snaps back

    def said() -> list[str]:
        return [text_of(w.value) for w in at.warning if field in text_of(w.value)]

    assert len(said()) == 1, [w.value for w in at.warning]
    message = said()[0]
    assert "Prompt tokens, maximum" in message and "2,000,000" in message and "1 to 1,048,576" in message
    # said where the user is looking too: the notices sit at the top, the box may be far below it; the toast
    # short enough to show the range before its 'view more' (it was cut at 'the allowed range is 1…': a review)
    (toast,) = [text_of(t.value) for t in at.toast]
    assert (
        field not in toast
        and "2,000,000 refused, allowed 1 to 1,048,576" in toast
        and len(toast) < len(message)
    )
    at.run()
    assert not at.toast  # once, not on every rerun
    at.number_input(key=f"fg:{field}").set_value(2_000_000).run()  # again: one message, not two
    at.switch_page("app_pages/slo.py").run()  # it follows the user to another page
    assert len(said()) == 1
    dismiss_buttons(at)[0].click().run()
    assert not said()
    assert_clean(at)


def test_an_accepted_change_settles_its_earlier_refusal() -> None:
    at = app("workload")
    field = "workload.classes[0].input.max_tokens"
    at.number_input(key=f"fg:{field}").set_value(0).run()
    assert [w for w in at.warning if field in text_of(w.value)]
    at.number_input(key=f"fg:{field}").set_value(8192).run()
    assert scenario_of(at).workload.classes[0].input.max_tokens == 8192
    assert_clean(at)


def test_the_rate_takes_typed_values_up_to_the_bound_for_the_window() -> None:
    """A 1000 s window: the 1,666,666 request rows the memory bound holds allow up to 1,666 req/s, but the
    work bound admits a run only up to about 1,200 (a box offered 2,770 over 600 s, whose run was then
    refused at 1.2x its events: a review): the box and the slider stop there."""
    from engine.explain import round_down, runnable_rate_rps
    from engine.serving import estimate_work

    sc = short(**{"duration_s": 1000.0, "workload.arrival.rate_rps": 2.0})
    work = runnable_rate_rps(sc)
    assert work is not None and 1000 < work < 1660
    at_cap = estimate_work(apply_overrides(sc, {"workload.arrival.rate_rps": work}))
    over = estimate_work(apply_overrides(sc, {"workload.arrival.rate_rps": 1.1 * work}))
    assert not at_cap.problems() and over.problems()  # it runs; a tenth more is refused
    at = app("workload", sc)
    slider = at.select_slider(key="fg:workload.arrival.rate_rps")
    # (stops written as the messages write rates: '1,000')
    assert float(slider.options[-1].replace(",", "")) == round_down(work) and {"80", "1,000"} <= set(
        slider.options
    )
    at.number_input(key="fg:rate-typed").set_value(150.0).run()  # above the old slider's 64
    assert_clean(at)
    assert scenario_of(at).workload.arrival.rate_rps == 150.0
    assert at.select_slider(key="fg:workload.arrival.rate_rps").value == 150.0
    at.number_input(key="fg:rate-typed").set_value(5000.0).run()  # the bound, but too many requests here
    assert scenario_of(at).workload.arrival.rate_rps == 150.0
    said = [text_of(w.value) for w in at.warning if "rate_rps" in text_of(w.value)]
    assert len(said) == 1 and f"at most {round_down(work):,g} req/s" in said[0], said
    assert "over the 1000 s window may simulate: the work bound" in said[0], said
    # a short window reaches the documented bound itself
    short_window = app("workload", short(**{"duration_s": 10.0}))
    assert short_window.select_slider(key="fg:workload.arrival.rate_rps").options[-1] == "5,000"


def test_a_chip_number_out_of_range_is_said_at_once() -> None:
    at = app("hardware")
    sc = short()
    key = f"fg:chip:{sc.deployment.pools[0].hardware}:{sc.deployment.stack}:eta_compute"
    at.number_input(key=key).set_value(1.5).run()
    said = [text_of(w.value) for w in at.warning if "η_F" in text_of(w.value)]
    assert said == ["Compute fraction η_F (of BF16 peak): 1.5 is not allowed: the allowed range is 0.01 to 1; "
                    "the chip is not saved until it is in range"], said  # fmt: skip
    at.number_input(key=key).set_value(0.6).run()  # back in range: the message goes
    assert_clean(at)


def test_a_model_the_pools_cannot_hold_is_refused_with_a_layout_and_a_resize_button() -> None:
    """DeepSeek-V3 on the default preset's tp-2 H100 pools: the refusal names layouts that hold it
    (tp 16, or tp 8 x pp 2), and one click serves it on the smallest of them."""
    from engine.scenario.resolve import resolve

    at = app("hardware")
    before = scenario_of(at)
    at.selectbox(key="fg:model.id").set_value("deepseek-v3").run()
    assert scenario_of(at) == before  # refused: nothing changed
    said = [text_of(w.value) for w in at.warning if "deepseek-v3" in text_of(w.value)]
    assert said and "tp 16, or tp 8 x pp 2" in said[0], said
    button = next(b for b in at.button if b.key == "fg:model-fit")
    assert "resized instances" in button.label and "tp 8 x pp 2" in button.label
    button.click().run()
    assert_clean(at)
    after = scenario_of(at)
    assert after.model.id == "deepseek-v3"
    assert [(p.tp, p.pp) for p in after.deployment.pools] == [(8, 2)] * len(before.deployment.pools)
    assert [p.count for p in after.deployment.pools] == [p.count for p in before.deployment.pools]
    resolve(after)  # it runs
    told = [text_of(i.value) for i in at.info if "Serving deepseek-v3" in text_of(i.value)]
    assert told and "12 -> 96 chips" in told[0], told  # and says what it did to the deployment
    assert not [
        w for w in at.warning if "deepseek-v3" in text_of(w.value) and "not possible" in text_of(w.value)
    ]


def test_a_window_cut_below_the_warm_up_shortens_the_warm_up_and_says_so() -> None:
    at = app("workload", short(**{"duration_s": 600.0, "warmup_s": 300.0, "workload.arrival.rate_rps": 1.0}))
    at.number_input(key="fg:duration_s").set_value(120.0).run()
    assert not at.exception
    sc = scenario_of(at)
    assert (sc.duration_s, sc.warmup_s) == (120.0, 60.0)  # the warm-up keeps half the window
    said = [text_of(i.value) for i in at.info if "Warm-up shortened" in text_of(i.value)]
    assert len(said) == 1 and "from 300 s to 60 s" in said[0] and "(50%)" in said[0], said
    at.number_input(key="fg:warmup_s").set_value(200.0).run()  # the warm-up itself past the window: refused
    assert scenario_of(at).warmup_s == 60.0
    # with the window's end as its range (it read 0 to 86,400: a review)
    assert any("Warm-up" in (t := text_of(w.value)) and "0 to 120" in t for w in at.warning), [
        text_of(w.value) for w in at.warning
    ]
    at.number_input(key="fg:warmup_s").set_value(120.0).run()  # the window's end itself: the model's rule
    assert scenario_of(at).warmup_s == 60.0
    assert any("warmup_s" in text_of(w.value) and "duration_s" in text_of(w.value) for w in at.warning)


def test_a_refusal_is_settled_by_a_change_beside_it_and_forgotten_with_its_scenario() -> None:
    """A p99 refused below its mean stayed at the top of every page after the mean was lowered, and
    after a preset without that class was loaded (a review)."""
    at = app("workload")
    at.number_input(key="fg:workload.classes[0].output.p99").set_value(100).run()
    assert list(at.session_state["fg_notices"]) == ["field:workload.classes[0].output.p99"]
    at.number_input(key="fg:workload.classes[0].output.mean").set_value(90).run()  # now 100 > 90 holds
    assert_clean(at)
    assert list(at.session_state["fg_notices"]) == []
    at.number_input(key="fg:workload.classes[0].output.p99").set_value(50).run()  # refused again
    assert list(at.session_state["fg_notices"]) == ["field:workload.classes[0].output.p99"]
    at.selectbox(key="fg:preset").set_value("chat-colocated").run()  # another scenario: forgotten
    assert list(at.session_state["fg_notices"]) == []


def test_a_refused_price_is_replaced_by_the_next_and_settled_by_an_accepted_one() -> None:
    """Rent typed 0, then 5,000, then 6.4: both refusals stayed at the top of the page, two notices for
    one field, after the price was accepted (a review)."""
    at = app("slo", preset="moe-deepseek-h200")
    box = at.number_input(key="fg:cost.usd_per_hour:h200")

    def refusals() -> list[str]:
        return [
            text_of(w.value)
            for w in at.warning
            if "is not allowed" in text_of(w.value) and "h200 rent" in w.value
        ]

    box.set_value(0.0).run()
    box.set_value(5000.0).run()
    assert len(refusals()) == 1 and "5,000" in refusals()[0]
    box.set_value(1000.4).run()  # the value as typed (it read '1,000 is not allowed ... up to 1,000')
    assert len(refusals()) == 1 and "1,000.4 is not allowed" in refusals()[0]
    box.set_value(6.4).run()
    assert not refusals()
    assert dict(scenario_of(at).cost.usd_per_hour)["h200"] == 6.4


def test_a_refusal_of_one_class_or_pool_leads_with_its_name() -> None:
    """Three E2E boxes on enterprise-mixed's SLO page: a refusal said 'workload.classes[1].slo.e2e_ms'
    alone, leaving the reader to count classes (a review). It leads with the class's name, the path kept."""
    at = app("slo", preset="enterprise-mixed")
    [n for n in at.number_input if n.label == "E2E (ms)"][1].set_value(-5.0).run()
    said = [text_of(w.value) for w in at.warning if "e2e_ms" in text_of(w.value)]
    assert said and said[0].startswith("Class long-generation: E2E (ms) (workload.classes[1].slo.e2e_ms)")


def test_past_three_messages_the_older_fold_under_the_newest_two() -> None:
    """Seven refusals gave seven boxes filling the screen (a review): past three, the older ones fold into
    an expander under which each keeps its dismiss button; the newest two stay in view."""
    at = app("workload")
    fields = ("input.max_tokens", "output.max_tokens", "input.mean", "output.mean", "prefix.tokens")
    for f in fields:
        at.number_input(key=f"fg:workload.classes[0].{f}").set_value(-5).run()
    said = [text_of(w.value) for w in at.warning if "is not allowed" in text_of(w.value)]
    assert len(said) == len(fields)
    (folded,) = [e for e in at.expander if "earlier messages" in e.label]
    assert folded.label == f"{len(fields) - 2} earlier messages"
    assert len([w for w in folded.warning if "is not allowed" in text_of(w.value)]) == len(fields) - 2
    assert len(dismiss_buttons(at)) >= len(fields)


def test_the_window_takes_what_the_work_bound_admits_at_the_rate() -> None:
    """86,400 s at 16 req/s was taken, then the run refused at 2.2 GB of state with the box not named (a
    review): the box stops at the longest window whose run is admitted, and says why."""
    from engine.explain import round_down, runnable_duration_s
    from engine.serving import estimate_work

    at = app("workload")
    before = scenario_of(at)
    longest = runnable_duration_s(before)
    assert longest is not None and 3600 < longest < 86_400
    at.number_input(key="fg:duration_s").set_value(86_400.0).run()
    assert scenario_of(at) == before
    said = [text_of(w.value) for w in at.warning if "duration_s" in text_of(w.value)]
    assert len(said) == 1 and f"from 1 to {round_down(longest):,g} s" in said[0], said
    assert "the longest a run at 16 req/s may simulate: the work bound" in said[0]
    # the bound itself runs (taken on the page, it would simulate a day's 1.2M requests here)
    assert not estimate_work(apply_overrides(before, {"duration_s": round_down(longest)})).problems()
    assert estimate_work(apply_overrides(before, {"duration_s": 1.1 * longest})).problems()


def test_a_refusal_names_the_field_as_it_stays_true() -> None:
    """A one-class workload's priority box reads "Priority (unused: one class)"; its refusal kept that
    name after a second class was added, where the box read "Priority" (a note)."""
    at = app("workload")
    field = "workload.classes[0].priority"
    assert at.number_input(key=f"fg:{field}").label == "Priority (unused: one class)"
    at.number_input(key=f"fg:{field}").set_value(500).run()
    said = [text_of(w.value) for w in at.warning if field in text_of(w.value)]
    assert len(said) == 1 and "Priority" in said[0] and "unused" not in said[0], said
    assert "0 to 100" in said[0], said
    assert not at.exception
