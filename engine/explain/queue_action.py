"""What would shorten the wait the advisor's queueing finding reports (`advisor._latency_findings`).

"Requests spend 62% of their TTFT waiting" said where, not what to do (moe-deepseek-dp-ep: a
review). The wait is split into the time a finished prompt waits for decode memory (`kv_wait_s`)
and the rest, the queue before prefill; the larger part names its pool and what would help.
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


def queue_action(result: SimResult, wait: np.ndarray, done: pd.DataFrame) -> str:
    """The clause after "... rather than being prefilled": where the wait is, what would shorten it,
    and whether it costs the SLO yet (every class within its TTFT target: not yet)."""
    total = float(wait.sum())
    if total <= 0:
        return "."
    util = result.summary["utilization"]
    pools = result.scenario.deployment.pools
    decode_memory = float(np.minimum(done["kv_wait_s"].to_numpy(dtype=float), wait).sum())
    if decode_memory / total >= 0.5:
        names = [p.name for p in pools if p.role == "decode"]
        where = (
            f": {decode_memory / total:.0%} of the wait is for decode memory ({', '.join(names)}), so more "
            "decode instances, or chips with more HBM, would hold more requests at once"
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
