"""The KV hand-offs of the prompts one prefill iteration finishes stream their layers together through
the sending NIC (a review: sent one after another from the iteration's end, only the first hid behind
the prefill, and each later one paid its whole wire time after it)."""

from __future__ import annotations

import numpy as np

from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.serving.run import simulate

WIRE = 2048 * 163_840 / 5e9
"""2,048-token prompts of llama-3.1-70b in FP8 KV (163,840 B a token): 335 MB, 67 ms over 5 GB/s."""


def _five_gb_s(**over: object) -> Scenario:
    """chat-disaggregated with constant 2,048-token prompts over a 5 GB/s link."""
    return io.apply_overrides(
        io.load_preset("chat-disaggregated"),
        {
            "deployment.link.bandwidth_gb_s": 5.0,
            "workload.classes[0].input": {"kind": "constant", "tokens": 2048},
            "workload.classes[0].output": {"kind": "constant", "tokens": 64},
            **over,
        },
    )


def test_one_iterations_hand_offs_hide_behind_its_prefill_together() -> None:
    # a batch of them prefills in far longer than 67 ms, so each prompt's last layer alone (67 / 80 ms) shows
    sc = _five_gb_s(duration_s=120.0)
    r = simulate(sc).requests
    done = r[r["outcome"] == "completed"]
    sent = done["kv_transfer_s"].to_numpy()
    waited = done["kv_wait_s"].to_numpy()
    wire, last = WIRE, WIRE / 80
    latency = sc.deployment.link.latency_ms / 1000.0  # paid once, by the last layer's message
    assert sent.max() < 0.1 * wire  # 202 ms (three wire times) before: the group's last layers only
    # each prompt's own part is its last layer; the rest is waiting behind its group's earlier ones
    own = sent - waited
    assert np.allclose(own, latency + last, rtol=1e-6)
    layers = (sent - latency) / last
    assert np.allclose(layers, np.round(layers), atol=1e-6)  # whole last layers of the group's prompts
    assert (layers > 1.5).any()  # some iterations finish several prompts
    # without overlap they go one after another, each its whole wire time
    serial = simulate(io.apply_overrides(sc, {"deployment.link.overlap": False})).requests
    assert serial["kv_transfer_s"].min() >= wire


def test_a_prompt_parked_for_the_link_sends_all_its_bytes_when_it_leaves() -> None:
    """Parked hand-offs released at one moment (the link back up) counted the time they sat parked as
    prefill to hide behind, so 26 of 67 ms each crossed a 5 GB/s link in 0.3 s (a review). A parked
    prompt had no decode instance to stream to: its whole wire time is its own, after it leaves."""
    down = {"at_s": 20.0, "pool": "prefill", "kind": "link", "link_factor": 0.0, "link_down": "queue"}
    sc = _five_gb_s(duration_s=40.0, faults=[{**down, "duration_s": 5.0, "instances": 3}])
    r = simulate(sc).requests
    wire = WIRE + sc.deployment.link.latency_ms / 1000.0
    done = r[r["outcome"] == "completed"]
    own = done["kv_transfer_s"] - done["kv_wait_s"]
    # a hand-off's own part is its last layer (fresh, hidden behind its prefill) or all its bytes (parked)
    last = WIRE / 80 + sc.deployment.link.latency_ms / 1000.0
    assert np.all(np.isclose(own, last, rtol=1e-6) | np.isclose(own, wire, rtol=1e-6))
    parked = done[np.isclose(own, wire, rtol=1e-6)]
    assert len(parked) > 60 and (parked["first_token_s"] >= 25.0).all()  # held by the link, sent after it
    # one NIC each: the last of a prefill instance's parked prompts lands its count of wire times late
    for _, mine in parked.groupby("prefill_instance"):
        assert mine["kv_transfer_s"].max() >= 0.99 * len(mine) * wire
