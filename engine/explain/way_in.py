"""How the way in is said: network and control-plane time as their share of TTFT (`Summary.way_in`),
and the wait at the client for a slot under a ceiling on requests in flight (`Summary.client`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.explain.presentation import duration_text

if TYPE_CHECKING:
    import pandas as pd

    from engine.scenario.workload import Workload


def way_in_line(summary: Mapping[str, Any]) -> str | None:
    """One line on what requests paid before any instance saw them; None when the way in was free."""
    w = summary.get("way_in")
    if not w or w["network_ms_mean"] is None:
        return None
    net, ctl = w["network_ms_mean"], w["control_plane_ms_mean"]
    net_share, ctl_share = w["network_share_of_ttft"] or 0.0, w["control_plane_share_of_ttft"] or 0.0
    text = (
        f"On the way in: {net:.1f} ms on the network per request on average ({net_share:.0%} of TTFT; "
        f"round trip to the first site {w['user_rtt_ms']:g} ms)"
    )
    if ctl > 0:
        text += f", {ctl:.2f} ms in the control plane ({ctl_share:.1%} of TTFT)"
    return text + "."


def client_line(summary: Mapping[str, Any]) -> str | None:
    """One line on the requests a ceiling on requests in flight held at the client; None without a
    ceiling. Their wait is not in their TTFT (timed from the send, as the benchmark times it), so it
    is said beside the figures."""
    c = summary.get("client")
    if not c:
        return None
    cap = f"at most {c['max_in_flight']:,} in flight"
    if not c["held"]:
        return f"The client's ceiling ({cap}) held no request of the window: every one was sent when it fell due."
    total = summary["requests"]["total"]
    return (
        f"The client's ceiling ({cap}) held {c['held']:,} of the window's {total:,} requests for a slot: "
        f"{duration_text(c['wait_ms_mean'])} on average, {duration_text(c['wait_ms_max'])} at most, before they were "
        "sent. TTFT and E2E count from the send, as a benchmark client times them."
    )


def ignored_ceiling(workload: Workload) -> str | None:
    """What a closed loop does with a ceiling on requests in flight: nothing (its clients are its
    ceiling, `Arrival.max_in_flight`); said so that a file or `--set` that sets one learns it. A
    trace's replay takes its arrivals from the file and does apply it, whatever the kind."""
    a = workload.arrival
    if a.kind != "closed_loop" or a.max_in_flight is None or workload.trace is not None:
        return None
    return (
        f"workload.arrival.max_in_flight ({a.max_in_flight:,}) was not applied: a closed loop's {a.clients:,} "
        "clients are its ceiling on requests in flight (each waits for its answer before it sends again). "
        "Set clients to the ceiling you mean, or unset max_in_flight."
    )


__all__ = ["client_line", "ignored_ceiling", "way_in_line"]


def way_in_s(requests: pd.DataFrame) -> np.ndarray:
    """Each request's seconds on the way in (the user's network trip and the control plane's decision),
    zero where the run charges none: a part of its TTFT that is neither queueing nor service."""
    total = np.zeros(len(requests))
    for column in ("network_s", "control_s"):
        if column in requests:
            total += requests[column].fillna(0.0).to_numpy(dtype=float)
    return total
