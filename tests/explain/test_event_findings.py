"""The advisor says what happened to a run beside its load (faults, an edge site's power budget,
autoscaling's cold starts) and what would shorten a queue it reports."""

from __future__ import annotations

import copy
from typing import Any

from engine.explain.advisor import findings
from engine.explain.event_findings import cold_start_finding, fault_finding, power_finding
from engine.scenario import codec as io
from engine.serving.run import simulate


def test_a_lost_instance_says_its_retries_and_the_slo_while_it_lasted() -> None:
    """failure-drill: one of three decode instances lost at 260 s for 120 s. The 34 requests retried
    from the start were in the summary's scheduler counters only; the finding counts them, and the SLO
    met by requests arriving during the fault against the others', from the per-request rows."""
    result = simulate(io.apply_overrides(io.load_preset("failure-drill"), {"duration_s": 420.0}))
    found = fault_finding(result)
    assert found is not None and found.topic == "fault"
    r = result.requests
    during = (r["arrival_s"] >= 260.0) & (r["arrival_s"] < 380.0)
    assert found.numbers["retried"] == result.summary["scheduler"]["retried"] > 0
    assert found.numbers["arrived_during_fault"] == during.sum()
    assert abs(found.numbers["met_during_fault"] - r.loc[during, "met_slo"].mean()) < 1e-12
    assert f"{found.numbers['met_during_fault']:.1%}" in found.text and "Compare fallbacks" in found.text
    # below the class's p90 while the fault lasts: a warning; at or above it, a note
    assert found.severity == ("warning" if found.numbers["met_during_fault"] < 0.9 else "info")
    assert any(f.topic == "fault" for f in findings(result))
    healthy = simulate(
        io.apply_overrides(io.load_preset("failure-drill"), {"duration_s": 120.0, "faults": []})
    )
    assert fault_finding(healthy) is None


def _edge(power: int, requests: int = 732) -> dict[str, Any]:
    return {
        "edge": {
            "requests": requests,
            "offloaded_by_reason": {"rule": 197, "saturated": 0, "power": power},
            "power_budget_w": 60.0,
            "site_idle_w": 12.0,
            "peak_site_power_w": 54.86,
        }
    }


def test_a_power_budget_that_sends_requests_away_is_said() -> None:
    """edge-offload's 60 W budget sends 59 of 732 requests to the data centre: a warning from 5%."""
    found = power_finding(_edge(59))
    assert found is not None and found.severity == "warning" and found.numbers["offloaded_for_power"] == 59
    assert "60 W power budget sent 59 requests (8.1%)" in found.text
    assert power_finding(_edge(20)).severity == "info"  # type: ignore[union-attr]
    assert power_finding(_edge(0)) is None and power_finding({}) is None


def test_the_preset_with_a_power_budget_reports_it() -> None:
    result = simulate(io.apply_overrides(io.load_preset("edge-offload"), {"duration_s": 300.0}))
    power = result.summary["edge"]["offloaded_by_reason"]["power"]
    assert power > 0
    assert [f.numbers["offloaded_for_power"] for f in findings(result) if f.topic == "power"] == [power]


def test_misses_while_an_instance_starts_are_said_among_the_runs_misses() -> None:
    """day-autoscaled as it ran until 2026-12-07: 59 of its 304 misses arrived while an instance was starting
    (79 s cold start)."""
    summary: dict[str, Any] = {
        "requests": {"total": 35650},
        "slo_attainment": 1.0 - 304 / 35650,
        "autoscale": {
            "pools": {"prefill": {"cold_start_s": 79.06}, "decode": {"cold_start_s": 79.06}},
            "scale_ups": 7,
            "requests_during_cold_start": 6198,
            "misses_during_cold_start": 59,
        },
    }
    found = cold_start_finding(summary)
    assert found is not None
    assert found.text.startswith(
        "59 of the run's 304 SLO misses came from requests arriving while an instance"
    )
    assert "(79 s cold start, 7 scale-ups)" in found.text
    none_missed = copy.deepcopy(summary)
    none_missed["autoscale"]["misses_during_cold_start"] = 0
    assert cold_start_finding(none_missed) is None and cold_start_finding({"autoscale": None}) is None


def test_a_queue_before_prefill_names_the_busy_pool_and_whether_the_slo_feels_it() -> None:
    """moe-deepseek-dp-ep: 62% of TTFT waiting, nearly all of it for prefill (its prefill pool busy 82%),
    every class within its TTFT target. The finding said where, not what to do, as a warning."""
    result = simulate(io.apply_overrides(io.load_preset("moe-deepseek-dp-ep"), {"duration_s": 300.0}))
    (queue,) = [f for f in findings(result) if f.topic == "queueing"]
    busy = result.summary["utilization"]["prefill"]["busy"]
    assert f"in the queue before prefill with prefill busy {busy:.0%}" in queue.text
    assert "more prefill instances" in queue.text and queue.severity == "info"
    assert "not yet the SLO" in queue.text
    tight = simulate(
        io.apply_overrides(
            io.load_preset("moe-deepseek-dp-ep"),
            {"duration_s": 300.0, "workload.classes[0].slo.ttft_ms": 300.0},
        )
    )
    (queue,) = [f for f in findings(tight) if f.topic == "queueing"]
    assert queue.severity == "warning" and "not yet the SLO" not in queue.text


def test_a_findings_numbers_read_in_words_and_units() -> None:
    """The Results page's Numbers popover showed raw keys and six decimals ('queueing_share_of_ttft:
    0.621473'); each is now a figure in words with its unit, a share as a percentage."""
    from engine.explain import number_rows

    rows = dict(
        number_rows({
            "queueing_share_of_ttft": 0.6214, "kv_transfer_ms_mean": 0.734, "shortfall_rps": 3.214,
            "rejected": 12.0, "power_budget_w": 60.0, "met_during_fault": 0.986, "clients": 64,
        })
    )  # fmt: skip
    assert rows == {
        "queueing share of TTFT": "62.1%",
        "KV transfer mean (ms)": "0.7",
        "shortfall (req/s)": "3.21",
        "rejected": "12",
        "power budget (W)": "60.0",
        "met during fault": "98.6%",
        "clients": "64",
    }
    # SLO attainment reads as the page writes it, and the slowed chips' one says what it is: edge-offload's
    # advisor read 'SLO attainment at edge 0.758' beside an edge site (a review)
    slowed = dict(number_rows({"slo_attainment": 0.959, "slo_attainment_with_chips_slowed": 0.758}))
    assert slowed == {"SLO attainment": "95.9%", "SLO attainment with chips slowed": "75.8%"}


def test_a_rejection_for_size_says_the_sizes() -> None:
    """'139 requests were rejected (too_long_for_kv 139)' named neither the memory nor the request (a
    review): a size reason says the most an instance holds and the longest request so refused."""
    sc = io.apply_overrides(
        io.load_preset("chat-colocated"),
        {
            "duration_s": 60.0,
            "deployment.mem_fraction": 0.55,  # an H100 tp2 instance holds 121,395 tokens
            "workload.classes[0].input": {
                "kind": "lognormal",
                "mean": 60000,
                "p99": 120000,
                "max_tokens": 130000,
            },
        },
    )
    result = simulate(sc)
    (found,) = [f for f in findings(result) if f.topic == "rejections"]
    r = result.requests
    kv = r[r["reason"] == "too_long_for_kv"]
    longest = int((kv["prompt_tokens"] + kv["output_tokens"]).max())
    assert (
        len(kv)
        and f"({len(kv):,} too long for KV memory: KV memory for mixed 121,395 tokens an instance"
        in found.text
    )
    assert f"the longest request {longest:,}" in found.text
    assert " and 0 failed" not in found.text  # (it said nothing: a browser review)


def test_a_wait_decode_holds_back_is_laid_at_decodes_door() -> None:
    """One decode instance busy all the window, prefill 43%: the queueing finding told the user to add
    prefill instances (it read the NIC's wait as decode memory's: a review)."""
    sc = io.apply_overrides(
        io.load_preset("chat-disaggregated"),
        {
            "duration_s": 60.0,
            "deployment.pools[1].count": 1,
            "workload.arrival.rate_rps": 12.0,
            "workload.classes[0].output": {"kind": "constant", "tokens": 1500},
        },
    )
    result = simulate(sc)
    (queue,) = [f for f in findings(result) if f.topic == "queueing"]
    busy = result.summary["utilization"]["decode"]["busy"]
    assert "most of it after prefill (" in queue.text and busy > 0.9
    assert "more decode instances" in queue.text and "more prefill" not in queue.text


def test_a_fault_that_fails_requests_in_flight_says_so() -> None:
    """With in_flight = "fail" nothing is retried: the finding said 'sent 0 requests back to the start'
    and nothing of the 23 it failed (a review)."""
    sc = io.apply_overrides(
        io.load_preset("chat-disaggregated"),
        {
            "duration_s": 60.0,
            "faults": [
                {"at_s": 20.0, "pool": "decode", "instances": 1, "duration_s": 10.0, "in_flight": "fail"}
            ],
        },
    )
    result = simulate(sc)
    found = fault_finding(result)
    lost = result.summary["requests"]["failed_by_reason"]["instance_lost"]
    assert found is not None and lost > 0 and found.numbers["failed_in_flight"] == lost
    assert f"sent 0 requests back to the start and failed {lost:,} in flight" in found.text
