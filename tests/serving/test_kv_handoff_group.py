"""The KV hand-offs of the prompts one prefill iteration finishes stream their layers together through
the sending NIC (a review: sent one after another from the iteration's end, only the first hid behind
the prefill, and each later one paid its whole wire time after it)."""

from __future__ import annotations

import numpy as np

from engine.scenario import codec as io
from engine.serving.run import simulate


def test_one_iterations_hand_offs_hide_behind_its_prefill_together() -> None:
    # 2,048-token prompts of llama-3.1-70b in FP8 KV (163,840 B a token): 335 MB, 67 ms over 5 GB/s;
    # a batch of them prefills in far longer, so each prompt's last layer alone (67 / 80 ms) shows
    sc = io.apply_overrides(
        io.load_preset("chat-disaggregated"),
        {
            "duration_s": 120.0,
            "deployment.link.bandwidth_gb_s": 5.0,
            "workload.classes[0].input": {"kind": "constant", "tokens": 2048},
            "workload.classes[0].output": {"kind": "constant", "tokens": 64},
        },
    )
    r = simulate(sc).requests
    done = r[r["outcome"] == "completed"]
    sent = done["kv_transfer_s"].to_numpy()
    waited = done["kv_wait_s"].to_numpy()
    wire, last = 2048 * 163_840 / 5e9, 2048 * 163_840 / 5e9 / 80
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
