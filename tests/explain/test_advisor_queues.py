"""The advisor on queues and targets: a pool's queue growing through the window (the load's excess, or no
headroom at capacity), a prefill pool backed up by its decode pool, and a TTFT target no first token can
meet. Split from tests/explain/test_advisor.py at 600 lines."""

from __future__ import annotations

from typing import Any

from engine.explain.advisor import findings
from engine.scenario import codec as io
from engine.serving.run import simulate


def topics(fs: list[Any]) -> dict[str, Any]:
    return {f.topic: f for f in fs}


def test_a_queue_in_thousands_reads_with_their_separator() -> None:
    """'(2222 -> 15415 requests waiting)' where the app writes 35,637 elsewhere (a review)."""
    over = {"deployment.pools[1].hardware": "l40s", "workload.arrival.rate_rps": 40.0}
    f = topics(findings(simulate(io.apply_overrides(io.load_preset("chat-disaggregated"), over))))["overload"]
    last = f.numbers["queue_last_quarter"]
    assert last >= 1000 and f"-> {last:,.0f} requests waiting" in f.text


def test_a_pool_queue_growing_at_capacity_is_not_called_past_it() -> None:
    """chat-disaggregated at 30 req/s: 'At capacity: ... a little more load makes it unsustainable' above
    'the load exceeds what the deployment can serve' for its prefill pool (a browser review). The pool's
    finding says no headroom where the run is at capacity, and the load's excess where it is unsustainable."""
    at = simulate(
        io.apply_overrides(io.load_preset("chat-disaggregated"), {"workload.arrival.rate_rps": 30.0})
    )
    assert at.summary["at_capacity"] and not at.summary["unsustainable"]
    t = topics(findings(at))
    assert t["capacity"].severity == "critical"
    assert t["overload"].severity == "warning" and "no headroom" in t["overload"].text
    assert "exceeds" not in t["overload"].text


def test_a_prefill_pool_backed_up_by_decode_is_not_told_to_shrink() -> None:
    """L40S decode instances fill their KV memory: prompts, prefilled, wait for room, so the prefill
    pool is idle while its queue grows. The advisor says so, and does not advise fewer prefill
    instances (which would only lengthen the queue)."""
    sc = io.apply_overrides(io.load_preset("chat-disaggregated"), {"deployment.pools[1].hardware": "l40s"})
    t = topics(findings(simulate(sc)))
    assert t["overload"].severity == "critical" and "prefill pool" in t["overload"].text
    f = t["pd_ratio"]
    assert "idle" in f.text and "queue grows" in f.text and "decode" in f.text
    assert "suggested_prefill_instances" not in f.numbers and "would be busy" not in f.text


def test_a_ttft_target_no_first_token_can_meet_is_said() -> None:
    """A TTFT target of 25 ms on moe-deepseek-h200 read 'holds to p0' with nothing saying every first token
    takes 70.9 ms there (a browser review): the advisor and the SLO page (`under_first_token`) say so."""
    from engine.explain.targets import under_first_token
    from engine.scenario.resolve import resolve

    sc = io.apply_overrides(io.load_preset("moe-deepseek-h200"), {"workload.classes[0].slo.ttft_ms": 25.0})
    floor_ms = resolve(sc).first_token_s * 1000.0
    assert floor_ms > 25.0
    said = under_first_token(sc)
    assert list(said) == [0] and f"at or under the {floor_ms:,.1f} ms every first token takes" in said[0]
    t = topics(findings(simulate(io.apply_overrides(sc, {"duration_s": 60.0}))))
    assert t["unmeetable"].text.startswith("Class chat: its TTFT target of 25 ms")
    reachable = io.apply_overrides(sc, {"workload.classes[0].slo.ttft_ms": floor_ms * 2})
    assert under_first_token(reachable) == {} and under_first_token(io.load_preset("chat-colocated")) == {}
