"""Which layer decided it: each layer switched alone, on the same requests, against the scenario itself.

Every preset gets a view (short windows); the switches are the named alternatives and nothing else;
the figures are the variants' own runs minus the scenario's; rows come largest effect first and the
sentence names the first; a variant the engine refuses stays as a row with its reason.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from engine.catalog.entries import load_catalog
from engine.explain.layers import (
    LAYERS,
    LayerEffect,
    alternatives,
    chip_alternative,
    layer_view,
    sentence,
)
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.serving.run import SimResult, simulate
from tests.simhelp import small

PRESETS = io.preset_names()


def short(name: str) -> Scenario:
    return small(name, duration_s=30.0)


@pytest.mark.slow  # five short simulations per preset
@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_has_a_view_with_one_row_per_layer(name: str) -> None:
    runs: list[Scenario] = []

    def run(s: Scenario) -> SimResult:
        runs.append(s)
        return simulate(s)

    view = layer_view(short(name), run=run)
    assert sorted(e.layer for e in view.effects) == sorted(LAYERS)
    ran = [e for e in view.effects if not e.refused]
    unswitchable = {a[0] for a in alternatives(short(name)) if isinstance(a[3], str)}  # refused unrun
    assert len(runs) == 1 + len(ran) + sum(
        1 for e in view.effects if e.refused and e.layer not in unswitchable
    )
    effects = [e.effect for e in view.effects]
    assert effects == sorted(effects, reverse=True)
    for e in ran:
        assert e.slo_attainment is not None and e.d_slo_attainment == pytest.approx(
            e.slo_attainment - view.slo_attainment
        )
        if e.usd_per_request is not None and view.usd_per_request:
            assert e.d_cost_share == pytest.approx(e.usd_per_request / view.usd_per_request - 1.0)
    if ran and ran[0].effect >= 0.005:
        assert ran[0].layer in view.sentence and ran[0].alternative in view.sentence


def test_each_switch_changes_its_layer_only() -> None:
    s = short("chat-disaggregated")
    base = io.to_data(s)
    for layer, _, _, change in alternatives(s):
        assert isinstance(change, dict), layer
        variant = io.to_data(io.apply_overrides(s, change))
        differing = {k for k in base if base[k] != variant[k]}
        want = {
            "model.weights": {"model"},
            "deployment.stack": {"deployment"},
            "scheduler.queue": {"scheduler"},
        }
        assert differing == want.get(next(iter(change)), {"deployment"}), layer
    by_layer = {a[0]: a for a in alternatives(s)}
    assert by_layer["model precision"][1:3] == ("fp8 weights", "bf16 weights")
    assert by_layer["serving stack"][1:3] == ("vllm", "sglang")
    assert by_layer["scheduling policy"][1:3] == ("fcfs", "spf")  # one priority: shortest prompt first
    assert by_layer["chips"][3] == {
        f"deployment.pools[{i}].hardware": "gh200" for i in range(len(s.deployment.pools))
    }


def test_classes_of_several_priorities_switch_fcfs_to_strict_priority() -> None:
    s = short("enterprise-mixed")
    assert len({c.priority for c in s.workload.classes}) > 1
    queue = {a[0]: a for a in alternatives(io.apply_overrides(s, {"scheduler.queue": {"name": "fcfs"}}))}
    assert queue["scheduling policy"][2] == "priority"
    back = {a[0]: a for a in alternatives(io.apply_overrides(s, {"scheduler.queue": {"name": "edf"}}))}
    assert back["scheduling policy"][2] == "fcfs"


def test_the_chip_alternative_is_the_next_faster_of_its_class() -> None:
    hw = load_catalog().hardware
    for chip in hw.values():
        alt = chip_alternative(chip, hw)
        # an illustrative (what-if) chip is a candidate only for a pool whose chip is one
        peers = [h for h in hw.values() if h.kind == chip.kind and (chip.illustrative or not h.illustrative)]
        if alt is None:
            assert peers == [chip]
            continue
        assert alt.kind == chip.kind and alt.id != chip.id and alt in peers
        faster = [h for h in peers if h.memory_tb_s > chip.memory_tb_s]
        if faster:
            assert alt.memory_tb_s == min(h.memory_tb_s for h in faster)
        else:
            assert alt.memory_tb_s <= chip.memory_tb_s
    assert chip_alternative(hw["h100-sxm"], hw).memory_tb_s > hw["h100-sxm"].memory_tb_s  # type: ignore[union-attr]
    assert chip_alternative(hw["ascend-910b"], hw) is None  # not the illustrative edge NPU
    assert not chip_alternative(hw["gaudi3"], hw).illustrative  # type: ignore[union-attr]  # not decode-asic


def test_the_stack_switch_starts_from_the_stack_each_pool_runs() -> None:
    """vLLM on Ascend runs as vLLM-Ascend, whose alternative is MindIE (not SGLang); an Ascend pool
    beside a GPU pool has no one stack that switches both, so the row is refused with why."""
    s = short("chat-colocated")
    ascend = io.apply_overrides(
        s, {f"deployment.pools[{i}].hardware": "ascend-910b" for i in range(len(s.deployment.pools))}
    )
    row = {a[0]: a for a in alternatives(ascend)}["serving stack"]
    assert row[1:] == ("vllm (runs as vllm-ascend)", "mindie", {"deployment.stack": "mindie"})
    mixed = {a[0]: a for a in alternatives(short("chat-ascend-910b"))}["serving stack"]
    assert isinstance(mixed[3], str) and "vllm-ascend, whose alternative is mindie" in mixed[3]


def test_a_switch_that_changes_the_calibration_basis_says_so() -> None:
    moved = LayerEffect(
        layer="chips",
        choice="a",
        alternative="b",
        usd_per_request=1.0,
        slo_attainment=0.8,
        d_usd_per_request=-0.2,
        d_cost_share=-0.2,
        d_slo_attainment=-0.2,
        basis=(("ascend", "fitted"), ("h100", "fitted")),
        alt_basis=(("ascend", "illustrative"), ("h100", "fitted")),
    )
    assert moved.basis_change == "ascend: fitted to illustrative"
    assert "basis changes (ascend: fitted to illustrative)" in sentence((moved,))
    assert effect("chips", -0.2, 0.0).basis_change == ""
    # in words, every basis: the sentence printed "same_silicon to other_stack" (a review)
    from typing import get_args

    from engine.calibration.mark import Basis
    from engine.explain.layers import BASIS_WORDS

    assert set(BASIS_WORDS) == set(get_args(Basis)) and not any("_" in w for w in BASIS_WORDS.values())
    stack = dataclasses.replace(
        moved, basis=(("decode", "same_silicon"),), alt_basis=(("decode", "other_stack"),)
    )
    assert stack.basis_change == "decode: same silicon to another stack's"


def test_wider_weights_cost_a_bandwidth_bound_deployment_its_slo() -> None:
    view = layer_view(short("chat-colocated"))
    precision = next(e for e in view.effects if e.layer == "model precision")
    assert precision.alternative == "bf16 weights"
    assert precision.d_slo_attainment is not None and precision.d_slo_attainment < -0.05


def test_a_variant_the_engine_refuses_stays_as_a_row_with_its_reason() -> None:
    s = short("pipeline-llama-405b")
    assert s.model.weights != "bf16"
    view = layer_view(s)
    precision = next(e for e in view.effects if e.layer == "model precision")
    assert precision.refused and precision.usd_per_request is None and precision.effect < 0
    refused = [e.refused != "" for e in view.effects]
    assert refused == sorted(refused)  # refused rows sort last
    assert "weights" in precision.refused or "memory" in precision.refused, precision.refused


def effect(layer: str, cost: float | None, slo: float | None, refused: str = "") -> LayerEffect:
    kw: dict[str, Any] = dict(usd_per_request=1.0, slo_attainment=1.0, d_usd_per_request=cost)
    return LayerEffect(
        layer=layer,
        choice="a",
        alternative="b",
        d_cost_share=cost,
        d_slo_attainment=slo,
        refused=refused,
        **kw,
    )


def test_the_sentence_names_the_largest_effect_or_says_none_matters() -> None:
    rows = (effect("chips", -0.2, 0.01), effect("serving stack", 0.01, 0.0))
    text = sentence(rows)
    assert text.startswith("Here the chips decide most: a to b moves cost per request −20.0%")
    assert "the serving stack matters least" in text
    assert "No layer matters much" in sentence((effect("chips", 0.001, 0.0),))
    # a switch that ran on another stack's borrowed calibration and moved nothing is no finding (a review)
    borrowed = dataclasses.replace(effect("serving stack", 0.0, 0.0), alt_basis=(("main", "other_stack"),))
    said = sentence((effect("chips", -0.2, 0.01), borrowed))
    assert "the serving stack shows no effect only because b has no calibration of its own here" in said
    assert "matters least" not in said
    assert "every alternative was refused" in sentence((effect("chips", None, None, "no fit"),))


def test_a_larger_move_of_slo_attainment_than_the_tops_is_said_too() -> None:
    """The chips 'decided most' by cost (−36.8%, SLO −1.8 points) while the chart showed the stack moving
    SLO attainment 18.5 points (a review): the sentence names both."""
    rows = (
        effect("chips", -0.368, -0.018),
        effect("serving stack", 0.05, -0.185),
        effect("queue", 0.0, 0.001),
    )
    text = sentence(rows)
    assert text.startswith("Here the chips decide most")
    assert "SLO attainment moves most with the serving stack (a to b: −18.5 points)" in text
    assert "SLO attainment moves most" not in sentence(rows[:1] + rows[2:])


def test_a_variant_or_a_scenario_at_saturation_says_so() -> None:
    """On prefill-loss-nofallback the bf16 row read 'cost per request +55.9% and SLO attainment −78.8
    points' as plain changes where that variant falls 6.5 req/s behind its load, its figures set by the
    run's length; portfolio-decode-loss's own run is unsustainable, and nothing said so (a review)."""
    from engine.serving.run import simulate
    from engine.serving.summary import shortfall_rps

    view = layer_view(io.load_preset("portfolio-decode-loss"))
    own = shortfall_rps(simulate(io.load_preset("portfolio-decode-loss")).summary)
    assert own is not None and view.shortfall_rps == pytest.approx(own)
    assert view.saturation_note().startswith("The scenario itself cannot sustain its load (short by")
    behind = [e for e in view.effects if e.shortfall_rps is not None]
    assert behind and all("cannot sustain the load" in e.saturation_note() for e in behind)
    top = next(e for e in view.effects if not e.refused)
    if top.shortfall_rps is not None:
        assert f"where {top.alternative} cannot sustain the load" in view.sentence
    fine = layer_view(io.load_preset("chat-colocated"), duration_s=60.0)
    assert fine.saturation_note() == "" and all(e.saturation_note() == "" for e in fine.effects)
