"""The edge tier: the rule, offloading with its latency, and the site's power budget.

Invariants: every request ends exactly once across offloads, edge faults and retries; the site's
power, computed here from the recorded iterations with the power model (not from the counter the
simulation enforces the budget with), never exceeds the budget.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine.catalog.entries import load_catalog
from engine.core.errors import ScenarioError
from engine.costmodel.power import chip_power_w, instance_power_range_w
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.ledger import PENDING, SEGMENT_COLUMNS, Records
from engine.serving.run import result_of
from engine.serving.sim import Simulation
from engine.serving.workload import generate
from tests.simhelp import check_invariants

SITES = {"edge", "offload_rule", "offload_saturated", "offload_power"}


def edge(**over: Any) -> Scenario:
    """The edge-offload preset, shortened, with overrides by path."""
    base: dict[str, Any] = {"duration_s": 120.0}
    base.update(over)
    return io.apply_overrides(io.load_preset("edge-offload"), base)


def run(s: Scenario) -> tuple[Any, Records]:
    res = resolve(s)
    reqs = generate(s)
    rec = Simulation(res, reqs).run()
    return result_of(res, reqs, rec, 0.0), rec


def site_power_from_segments(s: Scenario, rec: Records) -> tuple[float, int]:
    """(peak site power in W, most edge instances iterating at once), from the records alone."""
    res = resolve(s)
    col = {c: i for i, c in enumerate(SEGMENT_COLUMNS)}
    edge_pools = {p.index: p for p in res.pools if p.spec.tier == "edge"}
    idle = sum(p.spec.count * p.instance.chips * p.hardware.idle_w for p in edge_pools.values())
    events: list[tuple[float, int, float]] = []  # (time, 0 = end / 1 = start, watts above idle)
    for row in rec.segments:
        pool = rec.servers[int(row[col["server"]])][0]
        if pool not in edge_pools or row[col["t1"]] <= row[col["t0"]]:
            continue
        p = edge_pools[pool]
        hw, chips = p.hardware, p.instance.chips
        chip_s = (row[col["t1"]] - row[col["t0"]]) * chips
        w = chip_power_w(
            hw,
            u_bandwidth=row[col["bytes"]] / (chip_s * hw.memory_tb_s * 1e12),
            u_compute=row[col["flops"]] / (chip_s * hw.peak_flops(s.model.weights)),
            weights=s.model.weights,
        )
        extra = chips * (float(w) - hw.idle_w)
        events += [(row[col["t0"]], 1, extra), (row[col["t1"]], 0, -extra)]
    level = peak = 0.0
    running = most = 0
    for _, kind, watts in sorted(events):
        level += watts
        running += 1 if kind else -1
        peak, most = max(peak, level), max(most, running)
    return idle + peak, most


def ended_once(result: Any, rec: Records) -> None:
    """Every request has one outcome, those not completed say why, and each has a site."""
    assert not np.any(rec.outcome == PENDING)
    t = result.requests
    assert set(t["site"]) <= SITES
    assert (t.loc[t["outcome"] != "completed", "reason"] != "").all()
    req = result.summary["requests"]
    assert req["completed"] + req["rejected"] + req["failed"] == req["total"]
    e = result.summary["edge"]
    assert e["local"] + e["offloaded"] == e["requests"] == req["total"]


def edge_servers(rec: Records, s: Scenario) -> set[int]:
    tiers = [p.tier for p in s.deployment.pools]
    return {i for i, (pool, _, _) in enumerate(rec.servers) if tiers[pool] == "edge"}


@pytest.mark.parametrize("budget", [56.0, 60.0, 78.0, 100.0])
def test_power_budget_is_never_exceeded(budget: float) -> None:
    s = edge(**{"deployment.edge.power_budget_w": budget, "workload.arrival.rate_rps": 2.0})
    result, rec = run(s)
    peak, most = site_power_from_segments(s, rec)
    assert peak <= budget + 1e-6
    idle, busy = instance_power_range_w(load_catalog().chip("edge-npu"), 1, "int4")
    assert most <= int((budget - 4 * idle) // (busy - idle) + 1e-9)
    assert result.summary["edge"]["peak_site_power_w"] == pytest.approx(peak)
    if budget < 100:
        assert result.summary["edge"]["offloaded_by_reason"]["power"] > 0  # the budget binds
    check_invariants(result, rec)


def test_power_budget_holds_across_mixed_edge_chips_and_faults() -> None:
    pools = [
        {"name": "datacenter", "role": "mixed", "hardware": "h100-sxm"},
        {"name": "npu", "role": "mixed", "tier": "edge", "hardware": "edge-npu", "count": 3},
        {"name": "orin", "role": "mixed", "tier": "edge", "hardware": "jetson-agx-orin", "count": 2},
    ]
    s = edge(**{
        "deployment.pools": pools, "deployment.edge.power_budget_w": 110.0, "workload.arrival.rate_rps": 2.0,
        "faults": [{"at_s": 30.0, "pool": "orin", "instances": 1, "duration_s": 30.0}],
    })  # fmt: skip
    result, rec = run(s)
    peak, _ = site_power_from_segments(s, rec)
    assert peak <= 110.0 + 1e-6
    ended_once(result, rec)


@pytest.mark.parametrize("in_flight", ["retry", "fail"])
def test_every_request_ends_once_across_offloads_faults_and_retries(in_flight: str) -> None:
    s = edge(**{
        "workload.arrival.rate_rps": 2.0,
        "scheduler.preemption": "recompute",
        "faults": [
            {"at_s": 20.0, "pool": "site", "instances": 2, "duration_s": 40.0, "in_flight": in_flight},
            {"at_s": 65.0, "pool": "site", "instances": 4, "in_flight": in_flight},
            {"at_s": 70.0, "pool": "datacenter", "instances": 1, "duration_s": 10.0, "in_flight": in_flight},
        ],
    })  # fmt: skip
    result, rec = run(s)
    ended_once(result, rec)
    check_invariants(result, rec)
    t = result.requests
    if in_flight == "retry":
        assert result.summary["scheduler"]["retried"] > 0
        assert (t["outcome"] == "failed").sum() == 0 or set(t.loc[t["outcome"] == "failed", "reason"]) <= {
            "no_instance_up"
        }
    else:
        assert "instance_lost" in set(t["reason"])
    # after all four edge instances are gone for good, every candidate is offloaded
    late = t[(t["arrival_s"] > 65.0) & (t["class"] == "assistant")]
    assert len(late) and (late["site"] != "edge").all()


def test_requests_go_where_the_rule_says() -> None:
    s = edge(**{"workload.arrival.rate_rps": 2.0})
    result, rec = run(s)
    t = result.requests
    on_edge = edge_servers(rec, s)
    local = t[t["site"] == "edge"]
    assert len(local) > 0
    assert (local["class"] == "assistant").all()
    assert (local["prompt_tokens"] <= 1024).all() and (local["output_tokens"] <= 256).all()
    assert local["prefill_instance"].isin(on_edge).all() and local["decode_instance"].isin(on_edge).all()
    off = t[t["site"] != "edge"]
    assert not off["prefill_instance"].isin(on_edge).any()  # data-centre requests never run at the edge
    outside = (t["class"] == "document") | (t["prompt_tokens"] > 1024) | (t["output_tokens"] > 256)
    assert (t.loc[outside, "site"] == "offload_rule").all()
    assert (t.loc[~outside, "site"] != "offload_rule").all()


def test_offloaded_requests_pay_the_wan_round_trip() -> None:
    s = edge(**{"deployment.edge.offload_latency_ms": 400.0})
    result, _ = run(s)
    t = result.requests
    done = t[(t["outcome"] == "completed") & (t["site"] != "edge")]
    assert len(done) > 0 and (done["ttft_s"] >= 0.4 - 1e-9).all()
    fast = run(edge(**{"deployment.edge.offload_latency_ms": 0.0}))[0].requests
    fast = fast[(fast["outcome"] == "completed") & (fast["site"] != "edge")]
    assert done["ttft_s"].median() > fast["ttft_s"].median() + 0.3


def test_a_request_too_long_for_edge_memory_is_offloaded_not_rejected() -> None:
    chip = load_catalog().chip("edge-npu").model_copy(update={"id": "tiny-npu", "memory_gb": 6.8})
    data = io.to_data(edge(**{"deployment.edge.max_prompt_tokens": 16000, "deployment.edge.max_output_tokens": 2000,
                              "deployment.edge.classes": [], "deployment.edge.power_budget_w": 100.0,
                              "workload.classes[1].input": {"kind": "uniform", "low": 2000, "high": 14000}}))  # fmt: skip
    data["custom_hardware"] = [chip.model_dump(mode="json", by_alias=True)]
    data = io.set_path(data, "deployment.pools[1].hardware", "tiny-npu")
    s = io.from_data(data)
    result, rec = run(s)
    cap = min(rec.kv_capacity[sorted(edge_servers(rec, s))])
    t = result.requests
    long = t["prompt_tokens"] + t["output_tokens"] > cap
    assert long.sum() > 0
    assert (t.loc[long, "site"] == "offload_rule").all()
    assert (t.loc[long, "outcome"] == "completed").all()
    assert result.summary["requests"]["rejected"] == 0


def test_no_edge_means_no_site_column_or_summary() -> None:
    s = io.apply_overrides(io.load_preset("chat-colocated"), {"duration_s": 10.0})
    result, _ = run(s)
    assert "site" not in result.requests.columns and "edge" not in result.summary


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"deployment.pools[1].role": "prefill"}, r"deployment\.pools\[1\]\.role: an edge pool .* 'mixed'"),
        (
            {"deployment.pools[0].tier": "edge"},
            r"deployment\.pools: an edge site needs at least one data-centre",
        ),
        ({"deployment.edge": None}, r"deployment\.edge: pools with tier 'edge' need"),
        ({"deployment.edge.classes": ["nope"]}, r"deployment\.edge\.classes: 'nope' is not a request class"),
        (
            {"deployment.edge.offload_queue": -1},
            r"deployment\.edge\.offload_queue: .*greater than or equal to 0",
        ),
        (
            {"deployment.edge.offload_latency_ms": -5},
            r"deployment\.edge\.offload_latency_ms: .*greater than or equal",
        ),
        (
            {"deployment.edge.max_prompt_tokens": 0},
            r"deployment\.edge\.max_prompt_tokens: .*greater than or equal to 1",
        ),
    ],
)
def test_validation_names_the_field(override: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        edge(**override)


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        (
            10.0,
            r"deployment\.edge\.power_budget_w: 10 W cannot power the edge instances even idle: they draw 12 W",
        ),
        (
            30.0,
            r"deployment\.edge\.power_budget_w: 30 W powers the edge instances idle \(12 W\) .* at least 34 W",
        ),
    ],
)
def test_a_budget_too_small_is_refused_with_the_figure(budget: float, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        resolve(edge(**{"deployment.edge.power_budget_w": budget}))


def test_same_seed_same_sites() -> None:
    a, b = run(edge())[0].requests, run(edge())[0].requests
    assert (a["site"] == b["site"]).all() and a["completion_s"].equals(b["completion_s"])
