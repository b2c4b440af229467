"""Fallback policies (issue 15): degrade (shed low priorities, cap outputs) and the failure drill.

Degrade holds only while its trigger does; capped requests keep DESIGN.md's token invariant with
their delivered length; lower classes are shed, higher ones never; the drill runs one row per
applicable fallback, and in a prefill-pool loss the fallbacks lift attainment over none.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from engine.core.errors import ScenarioError
from engine.explain.drill import class_attainment, default_degrade, fallback_drill, fallback_variants
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.serving.ledger import DEGRADED, PENDING
from engine.serving.run import SimResult, simulate
from engine.serving.workload import generate
from tests.simhelp import check_invariants, records

FAULT_AT, FAULT_S = 40.0, 30.0


def _prefill_loss(instances: int = 3, **over: Any) -> Scenario:
    """The prefill-loss preset, short: `instances` of its three prefill instances lost for 30 s."""
    fault = {
        "at_s": FAULT_AT,
        "pool": "prefill",
        "instances": instances,
        "duration_s": FAULT_S,
        "in_flight": "fail",
    }
    base = {"duration_s": 100.0, "faults": [fault]}
    return io.apply_overrides(io.load_preset("prefill-loss-nofallback"), {**base, **over})


def _run(s: Scenario) -> SimResult:
    """Simulate with DESIGN.md's invariants checked, and every request ended exactly once."""
    rec, reqs = records(s)
    res = simulate(s, requests=reqs)
    check_invariants(res, rec)
    assert not np.any(rec.outcome == PENDING)
    t = res.requests
    req = res.summary["requests"]
    assert req["completed"] + req["rejected"] + req["failed"] == req["total"]
    assert (t.loc[t["outcome"] != "completed", "reason"] != "").all()
    # delivered plus capped is what was drawn; only completed outputs count as tokens delivered
    assert (t["output_tokens"] + t["capped_tokens"] == reqs.output_tokens[: len(t)]).all()
    assert int(t["capped_tokens"].sum()) == res.summary["scheduler"]["capped_tokens"]
    return res


DEGRADE = {"deployment.degrade.enabled": True, "deployment.degrade.shed_below_priority": 1}


@pytest.mark.parametrize(
    "over",
    [
        {**DEGRADE},
        {
            **DEGRADE,
            "deployment.fallback": "colocated",
            "faults[0].instances": 3,
            "faults[0].in_flight": "retry",
        },
        {**DEGRADE, "scheduler.preemption": "recompute", "deployment.degrade.above_backlog": 2.0},
        {
            **DEGRADE,
            "deployment.fallback": "colocated",
            "faults[0].duration_s": None,
            "scheduler.queue": {"name": "priority"},
        },
    ],
    ids=["partial-loss", "fallback-retry", "recompute-backlog", "lost-for-good"],
)
def test_every_request_ends_exactly_once_under_degrade_and_faults(over: dict[str, Any]) -> None:
    res = _run(_prefill_loss(2, **over))
    sched = res.summary["scheduler"]
    assert sched["degraded_arrivals"] > 0 and sched["capped_requests"] > 0


def test_degrade_caps_and_sheds_only_while_its_trigger_holds() -> None:
    """Two of three prefill instances lost (a third of the capacity left, under the 0.6 trigger):
    only arrivals in the fault are shed or capped, capped answers are 128 tokens long, and the
    delivered lengths are what metrics count."""
    res = _run(_prefill_loss(2, **DEGRADE))
    t = res.requests
    during = (t["arrival_s"] >= FAULT_AT - 1e-9) & (t["arrival_s"] <= FAULT_AT + FAULT_S + 1e-9)
    capped = t["capped_tokens"] > 0
    shed = t["reason"] == DEGRADED
    assert capped.sum() > 20 and shed.sum() > 20
    assert not (capped & ~during).any() and not (shed & ~during).any()
    assert (t.loc[capped, "output_tokens"] == 128).all()
    assert (t.loc[shed, "outcome"] == "rejected").all()
    assert res.summary["requests"]["rejected_by_reason"] == {DEGRADED: int(shed.sum())}
    # the TPOT of a capped request is over its delivered length
    done = t[capped & (t["outcome"] == "completed")]
    expect = (done["completion_s"] - done["first_token_s"]) / (done["output_tokens"] - 1)
    assert np.allclose(done["tpot_s"], expect)
    # and it lifted attainment over no degrade at all
    plain = simulate(_prefill_loss(2))
    assert res.summary["slo_attainment"] > plain.summary["slo_attainment"] + 0.02


def test_a_trigger_that_never_holds_changes_nothing() -> None:
    """Degrade on but never triggered: the very same run as degrade off."""
    s = _prefill_loss(1)  # two thirds of the capacity stay up: above the 0.6 trigger
    off = simulate(s)
    on = simulate(io.apply_overrides(s, {**DEGRADE, "deployment.degrade.below_capacity": 0.5}))
    assert on.summary["scheduler"]["degraded_arrivals"] == 0
    drop = {"scheduler", "sim"}
    assert {k: v for k, v in on.summary.items() if k not in drop} == {
        k: v for k, v in off.summary.items() if k not in drop
    }


def test_the_backlog_trigger_follows_the_queue() -> None:
    """No fault: an easy load never degrades; an overload past the backlog trigger does."""
    s = io.apply_overrides(
        io.load_preset("chat-colocated"), {"duration_s": 30.0, "deployment.pools[0].count": 2}
    )
    trigger = {"deployment.degrade.enabled": True, "deployment.degrade.above_backlog": 4.0}
    easy = _run(io.apply_overrides(s, {**trigger, "workload.arrival.rate_rps": 2.0}))
    assert easy.summary["scheduler"]["degraded_arrivals"] == 0
    hard = _run(io.apply_overrides(s, {**trigger, "workload.arrival.rate_rps": 40.0}))
    assert hard.summary["scheduler"]["capped_requests"] > 100


@pytest.mark.parametrize("threshold", [1, 2])
def test_lower_classes_are_shed_and_higher_ones_never(threshold: int) -> None:
    classes = [c.model_dump(mode="json") for c in io.load_preset("prefill-loss-nofallback").workload.classes]
    middle = {**classes[1], "name": "reports", "priority": 1, "share": 0.2}
    classes = [{**classes[0], "priority": 2, "share": 0.5}, middle, {**classes[1], "share": 0.3}]
    s = _prefill_loss(
        2, **{"workload.classes": classes, **DEGRADE, "deployment.degrade.shed_below_priority": threshold}
    )
    t = _run(s).requests
    shed = t[t["reason"] == DEGRADED]
    below = {"batch"} if threshold == 1 else {"batch", "reports"}
    assert set(shed["class"]) == below
    during = (t["arrival_s"] >= FAULT_AT) & (t["arrival_s"] <= FAULT_AT + FAULT_S)
    assert (t.loc[during & t["class"].isin(below), "reason"] == DEGRADED).all()  # every one of them


def test_degrade_settings_are_validated_with_the_field_named() -> None:
    s = io.load_preset("chat-colocated")
    with pytest.raises(ScenarioError, match=r"deployment\.degrade\.below_capacity: .*needs a trigger"):
        io.apply_overrides(s, {"deployment.degrade": {"enabled": True, "below_capacity": 0}})
    with pytest.raises(ScenarioError, match=r"deployment\.degrade\.max_output_tokens: .*needs an action"):
        io.apply_overrides(s, {"deployment.degrade": {"enabled": True, "max_output_tokens": 0}})
    with pytest.raises(
        ScenarioError, match=r"deployment\.degrade\.below_capacity: .*less than or equal to 1"
    ):
        io.apply_overrides(s, {"deployment.degrade.below_capacity": 1.5})
    with pytest.raises(ScenarioError, match=r"deployment\.degrade\.shed_below_priority"):
        io.apply_overrides(s, {"deployment.degrade.shed_below_priority": 101})
    # round trip through TOML, degrade on
    on = io.apply_overrides(
        s, {"deployment.degrade": {"enabled": True, "above_backlog": 3.0, "below_capacity": 0}}
    )
    assert io.loads_toml(io.dumps_toml(on)) == on


# --- the drill -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "rows"),
    [
        ("prefill-loss-nofallback", ["none", "colocated", "degrade", "colocated + degrade"]),
        ("failure-drill", ["none", "colocated", "degrade", "colocated + degrade"]),
        ("chat-colocated", ["none", "degrade"]),
        ("premium-isolation", ["none", "degrade", "spill"]),
        # one prefill pool, two decode pools each pinned to one class: spill against wait is its lesson
        ("portfolio-decode-loss", ["none", "colocated", "degrade", "colocated + degrade", "spill"]),
    ],
)
def test_the_drill_has_one_variant_per_applicable_fallback(preset: str, rows: list[str]) -> None:
    s = io.load_preset(preset)
    if not s.faults:
        s = io.apply_overrides(s, {"faults": [{"at_s": 10.0, "pool": s.deployment.pools[0].name}]})
    variants = fallback_variants(s)
    assert list(variants) == rows
    assert variants["none"].deployment.fallback == "none" and not variants["none"].deployment.degrade.enabled
    assert variants["degrade"].deployment.degrade.enabled
    if "spill" in variants:
        assert all(c.overflow == "spill" for c in variants["spill"].workload.classes if c.pools)
    for name, v in variants.items():  # only the spill row spills, even where the scenario does
        assert name == "spill" or all(c.overflow != "spill" for c in v.workload.classes)
    drawn = generate(s)
    for v in variants.values():  # only the fallback changes: the same requests for every row
        assert v.faults == s.faults
        again = generate(v)
        for col in ("arrival_s", "cls", "prompt_tokens", "output_tokens"):
            assert np.array_equal(getattr(again, col), getattr(drawn, col))


@pytest.mark.parametrize(
    "preset", ["prefill-loss-nofallback", "failure-drill", "premium-isolation", "portfolio-decode-loss"]
)
def test_the_drill_marks_the_scenario_as_set(preset: str) -> None:
    """`drill portfolio-decode-loss` listed 'spill' last, unmarked, where `run` of it simulates spill (a review):
    the row whose fallback, degrade and spilling are the scenario's own is marked."""
    from engine.explain.drill import own_variant

    s = io.load_preset(preset)
    if not s.faults:
        s = io.apply_overrides(s, {"faults": [{"at_s": 10.0, "pool": s.deployment.pools[0].name}]})
    own = own_variant(s)
    if own is None:  # as set it is none of the rows: one class spills, the other waits
        assert preset == "portfolio-decode-loss"
        return
    v = fallback_variants(s)[own]
    assert (v.deployment.fallback, v.deployment.degrade) == (s.deployment.fallback, s.deployment.degrade)
    assert [c.overflow for c in v.workload.classes] == [c.overflow for c in s.workload.classes]


def test_the_drill_needs_a_fault() -> None:
    with pytest.raises(ScenarioError, match=r"faults: the failure drill needs at least one fault"):
        fallback_variants(io.load_preset("chat-disaggregated"))


def test_the_drill_uses_the_scenarios_own_degrade_else_defaults() -> None:
    own = fallback_variants(io.load_preset("prefill-loss-fallback"))
    assert own["degrade"].deployment.degrade == io.load_preset("prefill-loss-fallback").deployment.degrade
    assert own["none"].deployment.fallback == "none"
    dflt = default_degrade(io.load_preset("premium-isolation"))
    assert dflt.enabled and dflt.shed_below_priority == 5  # every class below the top one
    assert default_degrade(io.load_preset("chat-colocated")).shed_below_priority == 0  # one class: none shed


def test_in_a_prefill_pool_loss_the_fallbacks_lift_attainment_over_none() -> None:
    table = fallback_drill(_prefill_loss(3, **{"faults[0].in_flight": "retry"}))
    assert list(table["fallback"]) == ["none", "colocated", "degrade", "colocated + degrade"]
    assert {
        "slo_attainment.chat",
        "slo_attainment.batch",
        "rejected",
        "failed",
        "ttft_p90_ms",
        "usd_per_request",
    } <= set(table.columns)
    by = table.set_index("fallback")
    none = by.loc["none", "slo_attainment"]
    assert by.loc["none", "rejected"] > 100
    assert by.loc["colocated", "slo_attainment"] > none + 0.05
    assert by.loc["colocated + degrade", "slo_attainment"] > none + 0.05
    # degrade protects the top class: chat does better with it than with the fallback alone
    assert by.loc["colocated + degrade", "slo_attainment.chat"] > by.loc["colocated", "slo_attainment.chat"]
    assert by.loc["colocated + degrade", "capped_requests"] > 0
    long = class_attainment(table)
    assert len(long) == 4 * 2 and set(long["class"]) == {"chat", "batch"}
    assert (
        long.set_index(["fallback", "class"]).loc[("none", "chat"), "slo_attainment"]
        == by.loc["none", "slo_attainment.chat"]
    )


def test_the_strategy_page_compares_fallbacks_and_sets_degrade() -> None:
    """The Failure drills section: a "Compare fallbacks" button draws the drill; degrade has its switch."""
    from tests.app.harness import app, assert_clean, scenario_of

    at = app("strategy", _prefill_loss(3, duration_s=60.0), preset="prefill-loss-nofallback")
    assert_clean(at)
    assert not at.dataframe  # nothing runs until asked
    at.button(key="fg:drill:run").click().run()
    assert_clean(at)
    table = next(d.value for d in at.dataframe if "fallback" in d.value.columns)
    # the scenario's own row marked, as `drill` marks it (a review)
    assert list(table["fallback"]) == ["none (as set)", "colocated", "degrade", "colocated + degrade"]
    # its bars export as every chart does, with the scenario in the file (plotly's own button had none)
    assert "fg:export:fallbacks" in [getattr(p, "key", None) for p in at.get("popover")]
    at.toggle(key="fg:deployment.degrade.enabled").set_value(True).run()
    assert_clean(at)
    assert scenario_of(at).deployment.degrade.enabled


def test_the_drill_says_which_variants_did_not_act() -> None:
    import pandas as pd

    from engine.explain.drill import unchanged

    table = pd.DataFrame(
        {
            "fallback": ["none", "colocated", "degrade"],
            "completed": [90, 100, 90],
            "rejected": [10, 0, 10],
            "failed": [0, 0, 0],
            "slo_attainment": [0.8, 0.9, 0.8],
        }
    )
    assert unchanged(table) == ["degrade"]
    assert unchanged(table[table["fallback"] != "none"]) == []
    # a degrade that capped answers acted, though the counts stand (failure-drill's: a review)
    capped = table.assign(capped_requests=[0, 0, 8], capped_tokens=[0, 0, 2356])
    assert unchanged(capped) == []


def test_a_drill_variant_behind_its_load_is_said_and_its_ttft_marked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`drill portfolio-decode-loss` printed its spill row's TTFT p90 9,599 ms bare where `run` of the same
    scenario says Unsustainable (a review): each variant carries its shortfall, and its TTFT is marked."""
    from engine.cli.main import main
    from engine.explain.drill import behind_lines, ttft_text
    from engine.serving.summary import shortfall_rps

    sc = io.load_preset("portfolio-decode-loss")
    table = fallback_drill(sc)
    spill = table[table["fallback"] == "spill"].iloc[0].to_dict()
    again = simulate(fallback_variants(sc)["spill"]).summary
    assert spill["shortfall_rps"] == shortfall_rps(again) is not None and spill["ttft_grows"]
    assert ttft_text(spill) == f"≥ {spill['ttft_p90_ms']:,.0f}, grows"
    assert ttft_text({"ttft_p90_ms": 703.2, "ttft_grows": False}) == "703"
    lines = behind_lines(table)
    assert any(line.startswith("spill: unsustainable, falling behind its load by") for line in lines)
    assert main(["drill", "portfolio-decode-loss", "--json"]) == 0
    rows = {r["fallback"]: r for r in json.loads(capsys.readouterr().out)["drill"]}
    assert rows["spill"]["shortfall_rps"] == spill["shortfall_rps"] and rows["spill"]["ttft_grows"] is True
    assert main(["drill", "portfolio-decode-loss"]) == 0
    assert "spill: unsustainable" in capsys.readouterr().out
    # variants alike said in one line (five alike filled the page: a browser pass), each named once; since
    # failed requests leave the queue when they fail (Records.failed_s) only spill falls behind here, so
    # the variants are made alike (degrade's 4.2 req/s beside none's unmarked run, both failing the same
    # 3,063 chat requests, was the old count's artefact)
    table = table.assign(shortfall_rps=spill["shortfall_rps"], ttft_grows=True)
    lines = behind_lines(table)
    behind = [str(f) for f, x in zip(table["fallback"], table["shortfall_rps"], strict=True) if x == x and x]
    said = " ".join(line.split(": unsustainable")[0] for line in lines)
    assert len(lines) < len(behind) and all(said.count(n) >= 1 for n in behind)
    assert any(" and " in line.split(":")[0] and "their load" in line for line in lines), lines
    steady = fallback_drill(_prefill_loss(3))  # variants that keep up: nothing said of them
    keeps_up = steady["shortfall_rps"].isna().all()
    assert keeps_up == (behind_lines(steady) == [])


def test_a_capped_answer_leaves_only_its_generated_blocks_for_the_next_turn() -> None:
    """Degrade caps an answer: the cache keeps the prompt and the tokens that were generated, not
    the drawn answer's, so the conversation's next turn cannot hit blocks no one produced."""
    from engine.scenario.resolve import resolve
    from engine.serving.sim import Simulation

    s = io.apply_overrides(
        io.load_preset("agentic-cache"),
        {
            "duration_s": 30.0,
            "warmup_s": 0.0,
            "workload.arrival.rate_rps": 200.0,  # sessions: far past what the pools serve
            "deployment.degrade": {"enabled": True, "above_backlog": 2.0, "max_output_tokens": 64},
        },
    )
    reqs = generate(s)
    sim = Simulation(resolve(s), reqs)
    sim.run()
    drawn = reqs.output_tokens
    capped = [r for r in range(len(sim.output)) if sim.output[r] < drawn[r]]
    assert len(capped) > 20 and reqs.session is not None
    bt = reqs.block_tokens
    for rid in capped:
        assert sim.output[rid] == 64
        # (the prompt as sent: shorter than drawn where an earlier answer of its session was capped)
        assert len(sim.block_names.full_blocks(rid)) == (sim.prompt[rid] + 64) // bt


def test_the_drill_command_marks_the_row_as_set(capsys: pytest.CaptureFixture[str]) -> None:
    """`drill` printed its rows with none marked as the scenario's own (a review): the row is '(as set)' in the
    text and `as_set` in the JSON; a scenario that is none of the rows says so."""
    import json

    from engine.cli.main import main

    args = ["drill", "prefill-loss-nofallback", "--set", "duration_s=60"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "none (as set)" in out and "(as set): the scenario's own fallback" in out
    assert main([*args, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["drill"]
    assert [r["fallback"] for r in rows if r["as_set"]] == ["none"]
    assert main(["drill", "portfolio-decode-loss", "--set", "duration_s=60"]) == 0
    out = capsys.readouterr().out
    assert "(as set)" not in out and "No row is the scenario as set" in out
