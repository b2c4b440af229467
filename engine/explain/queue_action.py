"""What would shorten the wait the advisor's queueing finding reports (`advisor._latency_findings`).

"Requests spend 62% of their TTFT waiting" said where, not what to do (moe-deepseek-dp-ep: a
review). The wait is before prefill (the entry pools' queues) or, in a split deployment, after it:
a prefilled prompt parked until a decode instance has room for it. The requests' rows do not part the
two, but the entry pools' queue depth over time does: its integral is the request-seconds spent
queued before prefill (Little's law). Where that is under half the wait (`ENTRY_SHARE`), decode
holds the prompts back; else they queue for prefill. Each names its pool and what would help. (A
decode pool's busy share says nothing of it: a continuous batch is busy whenever one request
decodes, moe-deepseek-dp-ep's at 100% with room to spare.)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.serving.run import SimResult


def ttft_within(result: SimResult) -> bool:
    """Every class with requests meets its TTFT target at its percentile (the queueing finding is then a
    note: the wait costs latency, not yet the SLO)."""
    targets = {c.name: c.slo.ttft_ms for c in result.scenario.workload.classes}
    return all(
        (at := c["ttft_ms_at_percentile"]) is not None and at <= targets[name]
        for name, c in result.summary["classes"].items()
        if c["requests"]
    )


ENTRY_SHARE = 0.5
"""The share of the wait the entry pools' queues must hold for the wait to be said to be theirs."""


def queue_action(result: SimResult, wait: np.ndarray, done: pd.DataFrame) -> str:
    """The clause after "... rather than being prefilled": where the wait is, what would shorten it,
    and whether it costs the SLO yet (every class within its TTFT target: not yet). (`wait` and
    `done`: the advisor's, each completed request's wait; said only where there is one.)"""
    if float(wait.sum()) <= 0 or done.empty:
        return "."
    util = result.summary["utilization"]
    pools = result.scenario.deployment.pools
    decode = [p.name for p in pools if p.role == "decode" and p.name in util]
    ts = result.timeseries
    entry_names = [p.name for p in pools if p.role != "decode"]
    queued = float(ts.loc[ts["pool"].isin(entry_names), "queue_depth"].sum()) * result.scenario.resolution_s
    if decode and queued < ENTRY_SHARE * float(wait.sum()):
        # (a run with one decode instance, prefill busy 43%, was told to add prefill: a review)
        held = ", ".join(f"{n} {float(util[n]['kv_memory']):.0%}" for n in decode)
        where = (
            f": most of it after prefill ({queued / float(wait.sum()):.0%} in the queue before it), prompts "
            f"waiting for a decode instance to take them (decode KV memory held on average: {held}), so more "
            "decode instances, or chips with more HBM there, would shorten it"
        )
    else:
        entry = [p.name for p in pools if p.role in ("prefill", "mixed") and p.name in util]
        busiest = max(entry, key=lambda n: float(util[n]["busy"])) if entry else None
        busy = f" with {busiest} busy {float(util[busiest]['busy']):.0%} of the window" if busiest else ""
        where = (
            f": most of it in the queue before prefill{busy}, so more {busiest or 'prefill'} instances, or a "
            "faster chip there, would shorten it"
        )
    said = ". Every class meets its TTFT target: the wait costs latency, not yet the SLO."
    return where + (said if ttft_within(result) else ".")


__all__ = ["queue_action", "ttft_within"]
