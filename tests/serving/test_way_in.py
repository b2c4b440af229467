"""The way in: the network to the first serving site and the control plane, before any instance.

A round trip moves every first token and completion by exactly itself (TTFT and E2E grow, TPOT does
not); an uplink adds each prompt's bytes over it; a gateway holds requests until their batch leaves;
the edge's offload adds its own trip; a decision and a shared KV pool's index lookups add their time.
Free by default: the run and its summary are those of a scenario without the fields.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine.core.errors import ScenarioError
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.run import result_of, simulate
from engine.serving.sim import Simulation
from engine.serving.work_bound import estimate
from engine.serving.workload import generate
from tests.simhelp import check_invariants, small


def run(s: Scenario) -> tuple[Any, Any]:
    res = resolve(s)
    reqs = generate(s)
    rec = Simulation(res, reqs).run()
    return result_of(res, reqs, rec, 0.0), rec


def chat(**over: Any) -> Scenario:
    return small("chat-colocated", **{"duration_s": 30.0, **over})


def test_free_by_default_no_columns_no_summary_section() -> None:
    s = chat()
    assert s.network.is_free() and s.control_plane.is_free()
    result, rec = run(s)
    assert rec.network_s is None and rec.control_s is None
    assert "way_in" not in result.summary and "network_s" not in result.requests.columns


def test_round_trip_moves_ttft_and_e2e_by_itself_and_leaves_tpot() -> None:
    base, _ = run(chat())
    far, rec = run(chat(**{"network.user_rtt_ms": 80.0}))
    a, b = base.requests, far.requests
    done = (a["outcome"] == "completed").to_numpy()
    assert done.sum() > 50 and (b["outcome"] == a["outcome"]).all()
    np.testing.assert_allclose(b["ttft_s"][done] - a["ttft_s"][done], 0.080, atol=1e-9)
    np.testing.assert_allclose(b["e2e_s"][done] - a["e2e_s"][done], 0.080, atol=1e-9)
    np.testing.assert_allclose(b["tpot_s"][done], a["tpot_s"][done], rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(rec.network_s, 0.080)
    w = far.summary["way_in"]
    assert w["network_ms_mean"] == pytest.approx(80.0)
    assert w["network_share_of_ttft"] == pytest.approx(80.0 / w["ttft_ms_mean"])
    assert w["control_plane_ms_mean"] == 0.0
    check_invariants(far, rec)


def test_uplink_adds_each_prompts_bytes_over_it() -> None:
    s = chat(**{"network.user_rtt_ms": 10.0, "network.uplink_mbps": 1.0, "network.bytes_per_token": 4.0})
    result, rec = run(s)
    prompts = result.requests["prompt_tokens"].to_numpy()
    np.testing.assert_allclose(rec.network_s, 0.010 + prompts * 4.0 * 8 / 1e6)
    check_invariants(result, rec)


def test_gateway_holds_requests_until_their_batch_leaves() -> None:
    window_ms = 50.0
    s = chat(
        **{
            "network.user_rtt_ms": 5.0,
            "network.gateway": {"batch_window_ms": window_ms, "batch_max": 4},
        }
    )
    result, rec = run(s)
    t = result.requests
    waited = rec.network_s - 0.005
    assert (waited >= -1e-12).all() and (waited <= window_ms / 1e3 + 1e-9).all()
    leave = np.round(t["arrival_s"].to_numpy() + waited, 9)
    _, sizes = np.unique(leave, return_counts=True)
    assert sizes.max() <= 4 and (sizes > 1).any()  # batched, never past batch_max
    # a request that opened a batch left after the whole window, unless the batch filled first
    assert waited.max() == pytest.approx(window_ms / 1e3, abs=1e-9)
    check_invariants(result, rec)


def test_a_batch_of_one_leaves_at_once() -> None:
    s = chat(**{"network.gateway": {"batch_window_ms": 500.0, "batch_max": 1}})
    _, rec = run(s)
    np.testing.assert_allclose(rec.network_s, 0.0, atol=1e-12)


def test_decision_time_is_paid_by_every_request() -> None:
    base, _ = run(chat())
    slow, rec = run(chat(**{"control_plane.decision_ms": 3.0}))
    np.testing.assert_allclose(rec.control_s, 0.003)
    done = (base.requests["outcome"] == "completed").to_numpy()
    assert (slow.requests["ttft_s"][done] >= base.requests["ttft_s"][done] + 0.003 - 1e-9).all()
    assert slow.summary["way_in"]["control_plane_ms_mean"] == pytest.approx(3.0)


def test_kv_index_lookups_are_charged_per_prompt_block_with_a_shared_pool_only() -> None:
    over = {"control_plane.kv_index_lookup_us": 200.0, "duration_s": 30.0}
    pooled, rec = run(small("agentic-cache", **over))
    blocks = pooled.requests["prompt_tokens"].to_numpy() // small("agentic-cache").cache.block_tokens
    np.testing.assert_allclose(rec.control_s, blocks * 200e-6)
    assert rec.control_s.max() > 0
    _, plain = run(chat(**{"control_plane.kv_index_lookup_us": 200.0}))  # no pooled tier: no index
    np.testing.assert_allclose(plain.control_s, 0.0)


def test_edge_path_pays_its_short_trip_and_offloads_add_the_wan() -> None:
    s = io.apply_overrides(
        io.load_preset("edge-offload"),
        {"duration_s": 120.0, "network.user_rtt_ms": 6.0, "deployment.edge.offload_latency_ms": 40.0},
    )
    result, rec = run(s)
    site = result.requests["site"].to_numpy()
    local = site == "edge"
    assert local.any() and (~local).any()
    np.testing.assert_allclose(rec.network_s[local], 0.006)
    np.testing.assert_allclose(rec.network_s[~local], 0.046)
    check_invariants(result, rec)


def test_edge_backhaul_adds_an_offloaded_prompts_bytes() -> None:
    s = io.apply_overrides(
        io.load_preset("edge-offload"),
        {"duration_s": 120.0, "network.user_rtt_ms": 6.0, "deployment.edge.backhaul_mbps": 2.0},
    )
    result, rec = run(s)
    t = result.requests
    off = (t["site"] != "edge").to_numpy()
    want = 0.006 + 0.040 + t["prompt_tokens"].to_numpy()[off] * 4.0 * 8 / 2e6
    np.testing.assert_allclose(rec.network_s[off], want)


def test_closed_loop_clients_wait_for_the_trip() -> None:
    over = {"workload.arrival.kind": "closed_loop", "workload.arrival.clients": 4, "duration_s": 60.0}
    near, _ = run(chat(**over))
    far, rec = run(chat(**over, **{"network.user_rtt_ms": 500.0}))
    assert len(far.requests) < len(near.requests)  # each client's next request waits for the answer
    check_invariants(far, rec)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("network.user_rtt_ms", -1.0, r"network\.user_rtt_ms: .*greater than or equal to 0"),
        ("network.uplink_mbps", 0.0, r"network\.uplink_mbps: .*greater than or equal to 0\.01"),
        ("network.gateway.batch_max", 0, r"network\.gateway\.batch_max: .*greater than or equal to 1"),
        ("control_plane.decision_ms", 1e9, r"control_plane\.decision_ms: .*less than or equal to 10000"),
    ],
)
def test_bad_values_are_refused_naming_the_field(path: str, value: Any, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        io.apply_overrides(io.load_preset("chat-colocated"), {path: value})


def test_the_work_estimate_counts_the_way_ins_events() -> None:
    plain = chat()
    gated = chat(**{"network.user_rtt_ms": 5.0, "network.gateway": {"batch_window_ms": 20.0, "batch_max": 8}})
    reqs = generate(gated)
    for s in (plain, gated):
        res = resolve(s)
        events = Simulation(res, reqs).run().events
        assert events / 3 <= estimate(s, reqs).events <= 3 * events
    assert estimate(gated, reqs).events > estimate(plain, reqs).events + 2.5 * len(reqs)


def test_each_tier_adds_its_own_round_trip() -> None:
    s = chat(
        **{
            "network.user_rtt_ms": 5.0,
            "network.gateway": {"rtt_ms": 3.0, "batch_window_ms": 100.0, "batch_max": 1},
        }
    )
    _, rec = run(s)
    np.testing.assert_allclose(rec.network_s, 0.008)  # device to gateway, gateway to site; no wait


def test_router_workers_make_decisions_one_at_a_time() -> None:
    decision = 0.05  # 50 ms each on one worker: at this rate decisions queue
    free, _ = run(chat(**{"control_plane.decision_ms": 50.0}))
    busy, rec = run(chat(**{"control_plane.decision_ms": 50.0, "control_plane.routers": 1}))
    starts = np.sort(busy.requests["arrival_s"].to_numpy() + rec.control_s - decision)
    assert (np.diff(starts) >= decision - 1e-9).all()  # never two decisions at once
    assert rec.control_s.min() == pytest.approx(decision) and rec.control_s.max() > 2 * decision
    assert busy.summary["way_in"]["control_plane_ms_mean"] > free.summary["way_in"]["control_plane_ms_mean"]
    _, rec_many = run(chat(**{"control_plane.decision_ms": 50.0, "control_plane.routers": 64}))
    np.testing.assert_allclose(rec_many.control_s, decision)  # enough workers: nobody waits
    check_invariants(busy, rec)


def test_early_rejection_counts_the_time_spent_on_the_way_in() -> None:
    """250 ms of round trip against a 300 ms TTFT target: early rejection predicted the wait at the
    site against the whole target, so it admitted requests that could no longer make it (29 of
    136 admitted missed); the time spent comes off the target first, and the admitted make it."""
    ov = {
        "duration_s": 120.0,
        "network.user_rtt_ms": 250.0,
        "scheduler.admission": {"name": "early_reject"},
        "workload.classes[0].slo.ttft_ms": 300,
        "workload.classes[1].slo.ttft_ms": 300,
    }
    t = simulate(io.apply_overrides(io.load_preset("edge-cloud-only"), ov)).requests
    done = t[t["outcome"] == "completed"]
    assert (t["outcome"] == "rejected").sum() > 10 and len(done) > 50
    assert (done["ttft_s"] <= 0.3).mean() >= 0.95
