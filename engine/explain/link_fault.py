"""What would shorten a long KV transfer (`link_fix`), a link fault's share of it said (`fault_said`),
for the advisor.

kv-link-fault cuts its 10 GB/s link to 1 GB/s for two minutes; the advisor read the transfer's share
of TTFT over the whole run and said "a faster link would help" (a review): outside the fault the link
holds a few percent of TTFT, and the fault, not the link's speed, sets the share.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.serving import SimResult


def fault_said(result: SimResult, done: Any) -> str | None:
    """'; outside the link fault (at 240 s for 120 s) the transfer takes 2% of TTFT: the fault sets it,
    not the link's speed' where the scenario degrades a link and the transfers outside its faults hold
    under a fifth of their TTFT; None otherwise (`done`: the completed requests' table)."""
    faults = [f for f in result.scenario.faults if f.kind == "link"]
    if not faults:
        return None
    arrival = done["arrival_s"].to_numpy(dtype=float)
    inside = np.zeros(len(arrival), dtype=bool)
    for f in faults:
        end = f.at_s + (f.duration_s if f.duration_s is not None else float("inf"))
        inside |= (arrival >= f.at_s) & (arrival < end)
    out = done[~inside]
    ttft = float(out["ttft_s"].sum())
    if out.empty or ttft <= 0:
        return None
    share = float(out["kv_transfer_s"].sum()) / ttft
    if share >= 0.2:
        return None
    when = "; ".join(
        f"at {f.at_s:,.0f} s" + (f" for {f.duration_s:,.0f} s" if f.duration_s is not None else ", for good")
        for f in faults
    )
    return (
        f"; outside the link fault ({when}) the transfer takes {share:.0%} of TTFT: the fault sets it, "
        "not the link's speed (a faster link helps only where it stays up)."
    )


def link_fix(result: SimResult, done: Any) -> str:
    """What would shorten a long KV transfer: overlap where it is off; where it is on, a faster link,
    and how much of the transfer is waiting behind others on the sender's NIC; a link fault's, said."""
    fault = fault_said(result, done)  # a link fault's share said first: a faster link helps little there
    if not result.scenario.deployment.link.overlap:
        return (
            f"{fault[:-1]}; layer-wise overlap would help."
            if fault
            else "; a faster link or layer-wise overlap would help."
        )
    waited = float(done["kv_wait_s"].sum()) / max(float(done["kv_transfer_s"].sum()), 1e-12)
    queued = f", {waited:.0%} of it waiting behind other transfers on the sending NIC" * (waited >= 0.1)
    return (
        f"{fault[:-1]}; layer-wise overlap is on{queued}."
        if fault
        else f"; layer-wise overlap is on{queued}: a faster link would help."
    )
