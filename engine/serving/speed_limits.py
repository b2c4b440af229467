"""How far faster chips could move an open loop's throughput-borne figures (`limits`).

Below the pages' bands (`engine.explain.confidence`) and the planner's (`engine.planning.verdict`):
both cut a band where the run's own load says the figure cannot go.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.scenario.model import Scenario
from engine.serving.metrics import whole_run

RAISED_BY_SPEED = ("goodput_rps", "throughput_rps", "goodput_per_usd")
"""Headline figures that faster chips raise: an open loop caps them at what arrived."""
LOWERED_BY_SPEED = ("usd_per_request", "usd_per_million_output_tokens")
"""Headline figures that faster chips lower: an open loop floors them at the bill over what arrived."""

Limits = Mapping[str, tuple[float, float]]
"""Per headline key, the largest relative fall and rise the model's error can make of the figure."""


def limits(summary: Mapping[str, Any], scenario: Scenario) -> dict[str, tuple[float, float]]:
    """How far faster chips could move each throughput-borne figure of an open loop.

    A model that is too pessimistic means faster real chips, but an open loop (Poisson, gamma or
    a trace, whose window is the arrivals') only ever sends what it sends: a run that served every
    request it was offered cannot complete more of them, so goodput and throughput cannot rise
    above what arrived. The bill runs until the last request drains, so faster chips can lower the
    cost per request by ending the drain sooner, but not below the bill up to the window's end
    over every request that arrived; goodput per $ (met requests over the bill) rises at most by
    both. The error bar is cut there, on the side speed would move it;
    the other side keeps the whole error. Offline batches and closed loops are measured over the
    whole run, which faster chips shorten (and a closed loop's clients send more when served
    faster): they have no such bound ({}); nor have the costs of a run with an autoscaled pool, which
    bills fewer instances on faster chips, nor its goodput per $ (over that bill).
    """
    if whole_run(scenario) or summary.get("unsustainable"):
        return {}  # an unsustainable run's rates are the served ones: faster chips serve more
    req = summary.get("requests", {})
    total, done = float(req.get("total") or 0), float(req.get("completed") or 0)
    window = float(summary.get("window_s") or 0.0)
    end = float(summary.get("drain_end_s") or 0.0)
    if total <= 0 or done <= 0 or window <= 0:
        return {}
    inf = float("inf")
    good = float(summary.get("goodput_rps") or 0.0) * window
    out = {"throughput_rps": (inf, max(total / done - 1.0, 0.0))}
    shorter = min(1.0, scenario.duration_s / end) if end > 0 else 1.0  # the drain, at best gone
    autoscaled = any(p.autoscale is not None for p in scenario.deployment.pools)
    if good > 0:
        out["goodput_rps"] = (inf, max(total / good - 1.0, 0.0))
        if not autoscaled:  # goodput per $ rises by the goodput's room and the bill's fall
            out["goodput_per_usd"] = (inf, max(total / good / shorter - 1.0, 0.0))
    if autoscaled:
        # an autoscaled pool bills the instances its load asks for, fewer on faster chips: no floor,
        # and no cap on goodput per $ (day-autoscaled read '$0.51 per 1k requests (+0% to +32%)' where
        # its faster rerun bills 21% less)
        return out
    floor = max(1.0 - done / total * shorter, 0.0)
    out.update({k: (floor, inf) for k in LOWERED_BY_SPEED})
    return out


def cut(r: tuple[float, float], bound: tuple[float, float] | None) -> tuple[float, float]:
    """A band (fall, rise), relative, cut by a bound (`limits`: the largest fall and rise the figure can make)."""
    if not bound:
        return r
    rise = min(r[1], bound[1])
    return min(max(r[0], -bound[0]), rise), rise
