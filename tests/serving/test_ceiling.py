"""A client's ceiling on requests in flight (`workload.arrival.max_in_flight`, `engine.serving.ceiling`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine import explain as ex
from engine.core.errors import ScenarioError
from engine.scenario import codec as io
from engine.serving.run import simulate
from engine.serving.summary import latency_shortfall, rate_span_s, shortfall_rps
from engine.serving.workload import generate
from tests.simhelp import check_invariants, small


def _most_in_flight(t: Any) -> int:
    """The most requests sent and not yet ended at any send (every request completed)."""
    sent = np.sort(t["arrival_s"].to_numpy())
    ended = np.sort(t["completion_s"].to_numpy())
    return int((np.arange(1, len(sent) + 1) - np.searchsorted(ended, sent, side="right")).max())


def test_a_ceiling_holds_requests_at_the_client_and_times_them_from_the_send() -> None:
    sc = small("chat-colocated", **{"workload.arrival.max_in_flight": 8})
    res = simulate(sc)
    check_invariants(res)
    t = res.requests
    assert (t["outcome"] == "completed").all()
    assert _most_in_flight(t) == 8  # reached, never passed
    # the schedule is the rate's: each request was due when drawn, and sent after its wait
    due = generate(sc).arrival_s[: len(t)]
    wait = t["client_wait_s"].to_numpy()
    assert np.allclose(t["arrival_s"].to_numpy() - wait, due) and (wait >= 0).all()
    assert (t["ttft_s"] == t["first_token_s"] - t["arrival_s"]).all()  # from the send, not the due time
    client = res.summary["client"]
    assert (
        client["max_in_flight"] == 8
        and client["held"] > 0
        and client["wait_ms_max"] >= client["wait_ms_mean"] > 0
    )
    assert "held" in (ex.client_line(res.summary) or "")


def test_a_batch_under_a_ceiling_is_a_closed_loop_of_that_many_clients() -> None:
    """`--request-rate inf --max-concurrency 24` is 24 clients that never think: request for
    request, the same sends, first tokens and completions."""
    over: dict[str, Any] = {"duration_s": 600.0}
    batch = small(
        "chat-colocated",
        **over,
        **{"workload.arrival": {"kind": "offline", "requests": 300, "max_in_flight": 24}},
    )
    loop = small("chat-colocated", **over, **{"workload.arrival": {
        "kind": "closed_loop", "clients": 24, "think_time_s": 0.0, "ramp_s": 0.0, "stop_after": 300,
    }})  # fmt: skip
    a, b = simulate(batch).requests, simulate(loop).requests
    assert len(a) == len(b) == 300
    for col in ("arrival_s", "first_token_s", "completion_s", "prompt_tokens", "output_tokens"):
        assert np.array_equal(a[col].to_numpy(), b[col].to_numpy()), col


def test_a_ceiling_never_reached_changes_nothing() -> None:
    base = small("chat-colocated")
    capped = io.apply_overrides(base, {"workload.arrival.max_in_flight": 10_000})
    a, b = simulate(base), simulate(capped)
    for col in a.requests.columns:
        assert a.requests[col].equals(b.requests[col]), col
    assert (b.requests["client_wait_s"] == 0).all() and "client_wait_s" not in a.requests
    assert b.summary["client"]["held"] == 0 and "client" not in a.summary
    assert "held no request" in (ex.client_line(b.summary) or "")


def test_a_backlog_held_at_the_client_is_still_unsustainable() -> None:
    """The ceiling moves the queue to the client; the rate it falls short of is the same, but the
    latencies timed from the send do not grow with the run: they are printed as they are."""
    res = simulate(small("chat-colocated", **{"workload.arrival.max_in_flight": 4}))
    short = res.summary["unsustainable"]
    assert short is not None and short["offered_rps"] == pytest.approx(16.8, rel=0.05)
    assert short["sustained_rps"] < 2.0 < short["shortfall_rps"] and short.get("at_client") is True
    # its rates are the served ones, over the time its window's requests took, not the offered
    assert res.summary["throughput_rps"] == pytest.approx(short["sustained_rps"], rel=0.25)
    assert shortfall_rps(res.summary) == short["shortfall_rps"] and latency_shortfall(res.summary) is None
    said = ex.line(res.summary) or ""
    assert "waits at the client" in said and "no plan or capacity search counts this run as passing" in said
    # and, by Little's law, how many in flight the offered rate would need at these latencies
    needed = short["offered_rps"] * res.summary["latency_ms"]["e2e"]["mean"] / 1e3
    assert f"would keep about {needed:,.0f} requests in flight, where the ceiling allows 4" in said
    assert not [f.text for f in ex.findings(res) if ex.GROWS in f.text]
    # twice the window, the same server-side tail: bounded by the ceiling, not set by the run's length
    longer = simulate(small("chat-colocated", **{"workload.arrival.max_in_flight": 4, "duration_s": 120.0}))
    p99 = res.summary["latency_ms"]["ttft"]["p99"], longer.summary["latency_ms"]["ttft"]["p99"]
    assert p99[1] < 1.5 * p99[0]


def test_an_overload_past_a_high_ceiling_still_grows_at_the_servers() -> None:
    """A ceiling above what the servers can hold in their queue leaves the backlog there too."""
    res = simulate(
        small(
            "chat-colocated", **{"workload.arrival.rate_rps": 100.0, "workload.arrival.max_in_flight": 10_000}
        )
    )
    assert latency_shortfall(res.summary) is not None and "at_client" not in res.summary["unsustainable"]


def test_a_ceiling_counts_the_later_turns_of_sessions() -> None:
    sc = small("chat-colocated", **{
        "workload.classes[0].multi_turn": {"turns_mean": 3, "think_time_s": 2.0},
        "workload.arrival.max_in_flight": 6,
    })  # fmt: skip
    res = simulate(sc)
    check_invariants(res)
    t = res.requests
    assert (t["outcome"] == "completed").all() and _most_in_flight(t) == 6
    assert res.summary["client"]["held"] > 0


def test_a_ceiling_out_of_range_is_refused_by_name() -> None:
    with pytest.raises(ScenarioError, match=r"workload\.arrival\.max_in_flight"):
        small("chat-colocated", **{"workload.arrival.max_in_flight": 0})


def test_the_window_counts_what_fell_due_in_it_however_late_it_was_sent() -> None:
    """A request the ceiling held past the window's end was still offered in it: measured, its wait
    counted (counted by its send, a ramp's late requests vanished from every figure, the longest
    waits with them, and the run read 100% within SLO)."""
    over = {"duration_s": 30.0, "workload.arrival.rate_rps": 4.0, "workload.arrival.shape": "ramp",
            "workload.arrival.peak_factor": 6.0}  # fmt: skip
    free = simulate(small("chat-colocated", **over))
    held = simulate(small("chat-colocated", **over, **{"workload.arrival.max_in_flight": 14}))
    assert held.summary["requests"]["total"] == free.summary["requests"]["total"]
    t = held.requests
    late = t[t["arrival_s"] >= 30.0]  # sent after the window
    assert len(late) > 0
    assert held.summary["client"]["wait_ms_max"] == pytest.approx(t["client_wait_s"].max() * 1e3)


def test_the_demand_per_minute_is_what_fell_due_not_what_was_sent() -> None:
    """The timeline's requests per bin (Results' 'requests arriving') under a ceiling: the offered
    load, in the window, not the trickle of sends the ceiling let through over the drain."""
    res = simulate(small("chat-colocated", **{"workload.arrival.max_in_flight": 4, "duration_s": 300.0}))
    over = res.over_time  # (a window of five minutes at least)
    assert over is not None
    counts = np.array(over["requests"])
    starts = np.array(over["t_s"])
    assert counts.sum() == res.summary["requests"]["total"]
    assert counts[starts >= 300.0].sum() == 0  # none fell due after the window, though most were sent after
    assert (res.requests["arrival_s"] >= 300.0).mean() > 0.5


def test_the_cli_says_what_the_ceiling_held_and_that_the_class_does_not_pass(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from engine.cli.main import main

    assert (
        main(["run", "chat-colocated", "--set", "duration_s=60", "--set", "workload.arrival.max_in_flight=8"])
        == 0
    )
    out = capsys.readouterr().out
    assert "The client's ceiling (at most 8 in flight) held" in out
    assert "class chat:" in out and "is within target for the requests sent" in out and ": passes" not in out


@pytest.mark.parametrize("over", [
    {"workload.arrival.rate_rps": 100.0},
    {"workload.arrival.max_in_flight": 8},
])  # fmt: skip
def test_an_unsustainable_runs_rates_are_what_it_served_warm_up_or_not(over: dict[str, Any]) -> None:
    """With a warm-up, the requests from before the window drain in the time its rates are over:
    counting only the window's read throughput at half of what was served (23 req/s of 42)."""
    res = simulate(small("chat-colocated", **over, duration_s=120.0, warmup_s=60.0))
    s = res.summary
    mark = s["unsustainable"]
    assert mark is not None
    assert s["throughput_rps"] == pytest.approx(mark["sustained_rps"], rel=0.15)
    # goodput x the span it is over is the count it met, as the pages rebuild it (`rate_span_s`): the
    # window's requests only (a warm-up's that met their SLO are not the window's goodput: a review)
    t = res.requests
    end = 60.0 + mark["rates_over_s"]
    served = t[(t["outcome"] == "completed") & (t["completion_s"] >= 60.0) & (t["completion_s"] <= end)]
    assert s["throughput_rps"] * rate_span_s(s) == pytest.approx(len(served))
    from engine.serving.metrics import measured_mask

    window = served[measured_mask(res.scenario, t)[served.index]]  # (under a ceiling: due in the window)
    assert s["goodput_rps"] * rate_span_s(s) == pytest.approx(window["met_slo"].sum())


def test_a_closed_loop_says_it_ignores_a_ceiling_set_on_it() -> None:
    """A closed loop's clients are its ceiling: a `max_in_flight` set on one (a file, `--set`) changes
    nothing, and the advisor says so rather than leaving the setting silently unused."""
    loop = {
        "workload.arrival.kind": "closed_loop",
        "workload.arrival.clients": 6,
        "workload.arrival.stop_after": 60,
    }
    base, capped = (
        small("chat-colocated", **loop),
        small("chat-colocated", **loop, **{"workload.arrival.max_in_flight": 2}),
    )
    a, b = simulate(base), simulate(capped)
    assert a.requests.equals(b.requests) and "client" not in b.summary
    said = [f for f in ex.findings(b) if f.topic == "client"]
    assert len(said) == 1 and said[0].severity == "warning"
    assert "max_in_flight (2) was not applied: a closed loop's 6 clients are its ceiling" in said[0].text
    assert not [f for f in ex.findings(a) if f.topic == "client"]


def test_a_replay_applies_its_ceiling_whatever_the_arrival_kind_says() -> None:
    """A trace's arrivals come from the file: a `closed_loop` kind left in the file does not make it a
    closed loop, so the ceiling holds requests and nothing says it was not applied."""
    sc = small(
        "mooncake-replay", **{"workload.arrival.kind": "closed_loop", "workload.arrival.max_in_flight": 2}
    )
    res = simulate(sc)
    assert res.summary["client"]["max_in_flight"] == 2 and res.summary["client"]["held"] > 0
    assert not [f for f in ex.findings(res) if f.topic == "client"]
