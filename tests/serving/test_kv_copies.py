"""Each tensor-parallel rank keeps, moves and receives the KV heads it holds (`Instance.kv_copies`):
swaps, hand-offs, the host tier's room and loads; the shared pooled store keeps a block once."""

from __future__ import annotations

import pytest

from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.run import simulate


def test_a_swap_moves_each_ranks_copy_of_the_kv() -> None:
    """Each rank swaps the KV copy it holds over its own PCIe link: Qwen3-235B's 4 KV heads at TP8 are
    held twice (`Instance.kv_copies`), so a swap takes twice what one copy over eight links would (a
    read-through found the copies counted for HBM room and reads, not for swaps)."""
    from engine.scenario.resolve import resolve
    from engine.serving.sim import Simulation
    from engine.serving.workload import generate

    sc = io.apply_overrides(
        io.load_preset("chat-disaggregated"),
        {
            "duration_s": 10.0,
            "model.id": "qwen3-235b-a22b",
            "deployment.pools[0].tp": 8,
            "deployment.pools[1].tp": 8,
        },
    )
    sim = Simulation(resolve(sc), generate(sc))
    srv = sim.servers[-1]
    inst = srv.pool.instance
    assert inst.kv_copies == 2.0
    one_copy = 1000 * inst.kv_bytes_per_token / (srv.pool.hardware.pcie_gb_s * 1e9 * 8)
    assert sim.kv.swap_time(srv, 1000) == pytest.approx(2 * one_copy)


def _qwen_tp8(**more: object) -> Scenario:
    base = {
        "duration_s": 20.0,
        "model.id": "qwen3-235b-a22b",
        "deployment.pools[0].tp": 8,
        "deployment.pools[1].tp": 8,
        "deployment.link.overlap": False,
        "deployment.link.bandwidth_gb_s": 10.0,
        "deployment.link.latency_ms": 0.0,
        "workload.arrival.rate_rps": 0.5,
    }
    return io.apply_overrides(io.load_preset("chat-disaggregated"), {**base, **more})


@pytest.mark.parametrize(("decode_tp", "copies"), [(8, 2.0), (4, 1.0)])
def test_a_handoff_carries_every_copy_the_decode_ranks_hold(decode_tp: int, copies: float) -> None:
    """Each decode rank pulls the KV heads it holds: Qwen3-235B's 4 KV heads on a TP8 decode instance
    are held twice, so twice one copy's bytes cross the link; on a TP4 one, once (a read-through found
    the copies counted for HBM room, reads and swaps, not for hand-offs)."""
    sc = _qwen_tp8(**{"deployment.pools[1].tp": decode_tp})
    one = resolve(sc).pools[1].instance.kv_bytes_per_token
    t = simulate(sc).requests
    done = t[(t["outcome"] == "completed") & (t["kv_wait_s"] == 0)]
    assert len(done) > 3
    per_token = done["kv_transfer_s"] * 10e9 / done["prompt_tokens"]
    assert per_token.to_numpy() == pytest.approx(copies * one, rel=1e-9)


def test_the_host_tier_holds_each_ranks_copy_and_the_pooled_store_one() -> None:
    """Each rank offloads the copy it holds to host memory, so a host tier of 100 GB on a TP8 instance
    of Qwen3-235B (two copies) holds half the blocks one copy would; the shared pooled store keeps a
    block once."""
    from engine.serving.sim import Simulation
    from engine.serving.workload import generate

    cache = {"cache.enabled": True, "cache.host.enabled": True, "cache.host.capacity_gb": 100.0}
    pooled = {"cache.pooled.enabled": True, "cache.pooled.capacity_gb": 100.0}
    sc = _qwen_tp8(**cache, **pooled)
    sim = Simulation(resolve(sc), generate(sc))
    srv = sim.servers[0]
    one = srv.pool.instance.kv_bytes_per_token * sc.cache.block_tokens
    assert srv.host is not None and sim.kv.pooled is not None
    assert srv.host.capacity == int(100e9 // (2 * one))
    assert sim.kv.pooled.capacity == int(100e9 // one)
