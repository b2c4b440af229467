"""Results page: the way in as shares of TTFT, and the "Which layer decided it?" tornado on demand."""

from __future__ import annotations

import pytest

from engine.explain import layer_view
from engine.serving.run import simulate
from tests.app.harness import app, assert_clean, scenario_of, short, text_of

pytestmark = pytest.mark.slow  # each test runs the app, the layer view five simulations


def test_the_way_in_is_said_only_when_it_costs_time() -> None:
    at = app("results", short("chat-colocated"))
    assert not [i for i in at.info if "On the way in" in text_of(i.value)]
    at = app(
        "results", short("chat-colocated", **{"network.user_rtt_ms": 50.0, "control_plane.decision_ms": 2.0})
    )
    assert_clean(at)
    [line] = [text_of(i.value) for i in at.info if "On the way in" in text_of(i.value)]
    assert "50.0 ms on the network" in line and "2.00 ms in the control plane" in line


def test_the_layer_view_runs_when_asked_and_names_the_layer_that_matters_most() -> None:
    sc = short("edge-offload")
    at = app("results", sc)
    assert not at.get("plotly_chart") or all(
        "Which layer" not in str(c.proto) for c in at.get("plotly_chart")
    )  # not before the button
    at.button(key="fg:layers:run").click().run()
    assert_clean(at)
    view = layer_view(sc, run=simulate)
    assert any(text_of(m.value) == view.sentence for m in at.markdown), view.sentence
    tornado = [c for c in at.get("plotly_chart") if "Which layer decided it" in str(c.proto)]
    assert len(tornado) == 1, "no tornado chart"
    # exported as every chart is, with its scenario: our menu, and plotly's own camera button (a PNG with no
    # provenance) gone
    assert tornado[0].key == "fg:chart:layers" and '"toImage"' in tornado[0].proto.config
    assert "fg:export:layers" in [getattr(p, "key", None) for p in at.get("popover")]
    bars = [e for e in view.effects if not e.refused]
    assert len(bars) >= 1 and view.sentence.startswith(("Here the", "No layer"))


def test_the_strategy_page_sets_where_the_users_are() -> None:
    at = app("strategy", short("chat-colocated"))
    rtt = at.number_input(key="fg:network.user_rtt_ms")
    assert rtt.label == "User RTT (ms)" and rtt.value == 0.0
    rtt.set_value(35.0).run()
    at.number_input(key="fg:control_plane.decision_ms").set_value(1.5).run()
    assert_clean(at)
    sc = scenario_of(at)
    assert sc.network.user_rtt_ms == 35.0 and sc.control_plane.decision_ms == 1.5


def test_the_tornado_labels_each_bar_with_its_number() -> None:
    # a +0.3% bar beside a +200% one is a hairline: the number says what the bar cannot
    from engine.explain import LayerEffect, LayerView
    from ui.layers import tornado

    effects = tuple(
        LayerEffect(layer=layer, choice="a", alternative="b", usd_per_request=1.0, slo_attainment=0.9,
                    d_usd_per_request=d, d_cost_share=d, d_slo_attainment=s)
        for layer, d, s in (("model precision", 2.035, -0.991), ("chips", 0.003, 0.0))
    )  # fmt: skip
    fig = tornado(LayerView(usd_per_request=1.0, slo_attainment=0.9, effects=effects, sentence=""))
    cost, slo, zero = fig.data
    assert cost.texttemplate == "%{x:+.1f}%" and slo.texttemplate == "%{x:+.1f}"
    # a change of exactly zero has no bar for plotly to write on: its number is written beside the axis
    assert list(zero.y) == ["chips: a → b"] and list(zero.text) == ["+0.0"] and zero.xaxis == "x2"
    assert list(cost.x) == [0.3, 203.5] and list(slo.x) == [0.0, -99.1]  # largest effect drawn on top
    # room for the numbers outside the bars, on both sides of zero
    lo, hi = fig.layout.xaxis.range
    assert lo < -50 and hi > 250
    lo, hi = fig.layout.xaxis2.range
    assert lo < -120 and hi > 25
