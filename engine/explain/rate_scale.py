"""The range of arrival rates a scenario may ask for, and a log-like scale of stops over it.

Two limits bound the mean rate of an open loop: `bounds.MAX_RATE_RPS` itself, and the requests per
run: rate x window (x the highest factor of explicit points) may not pass `bounds.MAX_REQUESTS` (the check in
`engine.scenario.model.Scenario`). `rate_cap_rps` is the lower of the two for a scenario's window and
shape, so a control that offers rates up to it never offers one validation refuses.

Rates people try span four orders of magnitude (a single user at 0.1 req/s, a chat fleet at
5,000), so a slider over them needs stops spaced by ratio, not by difference: `rate_stops` gives
about eleven per decade (1, 1.2, 1.4, 1.6, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten).
"""

from __future__ import annotations

import math

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.scenario.codec import apply_overrides
from engine.scenario.model import Arrival, Scenario
from engine.serving.work_bound import estimate

MIN_RATE_RPS = 0.1
"""The lowest stop of the rate scale (any positive rate can still be typed)."""
MANTISSAS = (1.0, 1.2, 1.4, 1.6, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0)
"""Stops within one decade."""


def peak_of(arrival: Arrival) -> float:
    """The multiple of rate x window the request bound counts (`Arrival.rows_factor`): 1 for the
    built-in shapes, whose mean is `rate_rps`; explicit points' highest factor."""
    return arrival.rows_factor()


def rate_cap_rps(scenario: Scenario) -> float:
    """The highest mean rate validation accepts for this scenario's window and arrival shape."""
    by_requests = bounds.MAX_REQUESTS / (scenario.duration_s * peak_of(scenario.workload.arrival))
    return min(bounds.MAX_RATE_RPS, by_requests)


def runnable_rate_rps(scenario: Scenario) -> float | None:
    """About the highest mean rate whose run the work bound admits (`engine.serving.work_bound`), for a
    generated open loop; None for a trace or another load, or where the estimate cannot say. The work
    grows about in step with the rate: the estimate at the scenario's rate scaled, then refined once at
    that rate, and 2% kept in hand (a rate box offered 2,770 req/s, whose run was then refused at 1.2x
    its events: a review)."""
    wl = scenario.workload
    if wl.trace is not None or wl.arrival.kind not in ("poisson", "gamma") or not wl.arrival.rate_rps:
        return None
    rate = float(wl.arrival.rate_rps)
    for _ in range(2):
        try:
            load = estimate(apply_overrides(scenario, {"workload.arrival.rate_rps": rate})).load()
        except ScenarioError:  # a rate the scenario refuses: the estimate cannot say
            return None
        if not (math.isfinite(load) and load > 0):
            return None
        rate = rate / load
        if rate >= bounds.MAX_RATE_RPS:  # the documented bound comes first
            return float(bounds.MAX_RATE_RPS)
    return 0.98 * rate


def runnable_duration_s(scenario: Scenario) -> float | None:
    """About the longest window whose run the work bound admits at the scenario's rate, as
    `runnable_rate_rps` finds the rate (86,400 s was accepted at 16 req/s, then refused at 2.2 GB of
    state: a review); the documented bound, or the requests-per-run bound, where either comes first.
    None for a trace or another load than an open loop's."""
    wl = scenario.workload
    if wl.trace is not None or wl.arrival.kind not in ("poisson", "gamma") or not wl.arrival.rate_rps:
        return None
    cap = min(
        bounds.MAX_DURATION_S, 0.999 * bounds.MAX_REQUESTS / (wl.arrival.rate_rps * peak_of(wl.arrival))
    )
    window = float(scenario.duration_s)
    for _ in range(2):
        window = min(window, cap)
        if window < bounds.MIN_DURATION_S:  # not even the shortest window runs (a bound lowered in a test)
            return float(bounds.MIN_DURATION_S)
        try:
            load = estimate(apply_overrides(scenario, {"duration_s": window})).load()
        except ScenarioError:  # a window the scenario refuses (its warm-up): the estimate cannot say
            return None
        if not (math.isfinite(load) and load > 0):
            return None
        window = window / load
        if window >= cap:
            return float(cap)
    return max(0.98 * window, float(bounds.MIN_DURATION_S))


def rate_stops(cap_rps: float, current_rps: float | None = None) -> list[float]:
    """Rates from MIN_RATE_RPS up to `cap_rps`, about eleven per decade, plus the cap and the current rate."""
    stops: set[float] = set()
    decade = 10.0 ** math.floor(math.log10(MIN_RATE_RPS))
    while decade <= cap_rps:
        for m in MANTISSAS:
            v = round(m * decade, 6)
            if MIN_RATE_RPS <= v <= cap_rps:
                stops.add(v)
        decade *= 10.0
    stops.add(round_down(cap_rps))
    if current_rps is not None and current_rps > 0:
        stops.add(float(current_rps))
    return sorted(stops)


def round_down(rate_rps: float) -> float:
    """A rate cut to three significant figures, never above the input (so still within a cap)."""
    if rate_rps <= 0:
        return rate_rps
    scale = 10.0 ** (math.floor(math.log10(rate_rps)) - 2)
    down = round(math.floor(rate_rps / scale) * scale, 9)
    return down if down <= rate_rps else down - scale
