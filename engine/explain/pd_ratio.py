"""What the advisor says of a prefill pool's share of the instances (`engine.explain.advisor`).

A prefill pool busy under 40% of the time on average looks oversized, but a mean hides bursts: a
trace of code completions keeps azure-code-replay's five prefill instances busy a tenth of the
time, and with four its p90 TTFT goes from 1.13 s to 2.1 s against a 1.5 s target. Busy fractions
binned over seconds miss such bursts too (its busiest 5 s bins reach 55%). So fewer instances are
suggested only where every class's TTFT at its SLO percentile uses at most half its target; where
one uses more, the pool's idle time is said with why it is not spare (prompts wait on one another
in bursts), and a run with fewer instances is what measures the cost.
"""

from __future__ import annotations

import math

from engine.explain.finding import Finding
from engine.explain.presentation import duration_text
from engine.serving.run import SimResult

IDLE_BELOW = 0.4
"""A prefill pool busy less than this share of the time, on average, looks oversized."""
BUSY_TARGET = 0.7
"""The average busy share the suggested instance count would keep a prefill pool under."""
TTFT_ROOM = 0.5
"""Fewer prefill instances are suggested only where every class's TTFT at its SLO percentile is at
most this share of its target: room for the longer queues fewer instances bring."""


def prefill_findings(
    result: SimResult, pool: str, count: int, decode: int, busy: float, backlog: tuple[float, float] | None
) -> list[Finding]:
    """The findings on prefill pool `pool` of `count` instances (beside `decode` decode instances) that
    was busy `busy` of the time, its queue growing through the window where `backlog` is given."""
    if busy > 0.9:
        return [
            Finding(
                "warning",
                "pd_ratio",
                f"prefill is busy {busy:.0%} of the time: prompts queue for it; more prefill "
                "instances (a higher P:D ratio) would cut TTFT.",
                {"prefill_busy": busy, "prefill_instances": count},
            )
        ]
    if busy >= IDLE_BELOW:
        return []
    if backlog is not None:  # idle, yet prompts pile up: they wait downstream
        return [
            Finding(
                "warning",
                "pd_ratio",
                f"prefill is idle {1 - busy:.0%} of the time while its queue grows: prompts wait "
                "for room in the decode pool (its KV memory or batch), not for prefill compute; "
                "more decode capacity, not fewer prefill instances, would serve them.",
                {"prefill_busy": busy, "prefill_instances": count},
            )
        ]
    # sized from the busiest minute, not the mean: day-static-peak's prefill, 35% busy over the day, was told
    # 2 of its 3 instances would be 53% busy, and 2 were 90% busy at 14:00, its worst minute at 64% (a review)
    peak = busiest_minute(result, pool)
    need = max(1, math.ceil(count * max(busy, peak) / BUSY_TARGET))
    if need >= count:
        return []
    name, used, ttft, target, pct = _tightest_ttft(result, pool)
    if not name or not math.isfinite(used):  # no class enters it, or one was not served (said elsewhere)
        return []
    nums = {"prefill_busy": busy, "prefill_instances": count, "ttft_share_of_target": used}
    if used > TTFT_ROOM:
        return [
            Finding(
                "info",
                "pd_ratio",
                f"prefill is idle {1 - busy:.0%} of the time on average, yet class {name}'s {pct} TTFT is "
                f"{duration_text(ttft)} of its {duration_text(target)}: prompts arrive in bursts that need "
                "the instances at once, so fewer would lengthen TTFT (a run with fewer says by how much).",
                nums,
            )
        ]
    return [
        Finding(
            "warning",
            "pd_ratio",
            f"prefill is idle {1 - busy:.0%} of the time: the P:D ratio ({count}:{decode}) is too high; "
            f"about {need} prefill instance{'s' if need > 1 else ''} would be busy {count * busy / need:.0%} "
            f"of the time and {count * max(busy, peak) / need:.0%} in its busiest minute (at most "
            f"{BUSY_TARGET:.0%}), and TTFT, at most {used:.0%} of its target now, has "
            f"room for the longer queues (a run with {need} says how much).",
            {**nums, "prefill_busiest_minute": peak, "suggested_prefill_instances": need},
        )
    ]


def busiest_minute(result: SimResult, pool: str) -> float:
    """The pool's busy share over its busiest minute of the measured window (a rolling mean of the
    time series' bins; 0 without one)."""
    sc = result.scenario
    ts = result.timeseries
    mine = ts[(ts["pool"] == pool) & (ts["t_s"] >= sc.warmup_s) & (ts["t_s"] < sc.duration_s)]
    if mine.empty:
        return 0.0
    bins = max(1, round(60.0 / sc.resolution_s))
    return float(mine["busy"].rolling(bins, min_periods=1).mean().max())


def _tightest_ttft(result: SimResult, pool: str) -> tuple[str, float, float, float, str]:
    """(class, TTFT at its SLO percentile as a share of its target, that TTFT, the target, 'p90') of
    the class entering `pool` whose TTFT uses the most of its target (a class with no TTFT: all of it).
    A class pinned to other entry pools does not enter it (`RequestClass.pools`)."""
    dep = result.scenario.deployment
    entries = {p.name for p in dep.pools if p.role in ("mixed", "prefill")}
    worst = ("", -1.0, 0.0, 1.0, "p90")
    for c in result.scenario.workload.classes:
        pinned = entries.intersection(c.pools)
        if pinned and pool not in pinned:
            continue
        got = result.summary["classes"].get(c.name)
        if got is not None and not got["requests"]:  # no request in the window: it used nothing
            continue
        ttft = None if got is None else got["ttft_ms_at_percentile"]
        used = math.inf if ttft is None else ttft / c.slo.ttft_ms
        if used > worst[1]:
            worst = (
                c.name,
                used,
                math.inf if ttft is None else ttft,
                c.slo.ttft_ms,
                f"p{c.slo.percentile:g}",
            )
    return worst
