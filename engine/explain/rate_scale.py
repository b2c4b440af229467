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
from engine.core.numbers import round_down
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
    generated open loop; None for a trace or another load, or where the estimate cannot say (a rate box
    offered 2,770 req/s, whose run was then refused at 1.2x its events: a review)."""
    if not _open_loop(scenario):
        return None
    rate = float(scenario.workload.arrival.rate_rps)
    return _admitted(scenario, "workload.arrival.rate_rps", rate, float(bounds.MAX_RATE_RPS), 0.0)


def runnable_duration_s(scenario: Scenario) -> float | None:
    """About the longest window whose run the work bound admits at the scenario's rate (86,400 s was
    accepted at 16 req/s, then refused at 2.2 GB of state: a review); the documented bound, or the
    requests-per-run bound, where either comes first. None for a trace or another load than an open loop's."""
    if not _open_loop(scenario):
        return None
    arrival = scenario.workload.arrival
    cap = min(bounds.MAX_DURATION_S, 0.999 * bounds.MAX_REQUESTS / (arrival.rate_rps * peak_of(arrival)))
    return _admitted(scenario, "duration_s", float(scenario.duration_s), cap, float(bounds.MIN_DURATION_S))


def _open_loop(scenario: Scenario) -> bool:
    """A generated open loop at a rate: what the work grows about in step with the rate and the window of."""
    wl = scenario.workload
    return wl.trace is None and wl.arrival.kind in ("poisson", "gamma") and bool(wl.arrival.rate_rps)


def _admitted(scenario: Scenario, path: str, value: float, cap: float, floor: float) -> float | None:
    """The value of `path` (a setting the run's work grows about in step with) at which the run fills 98% of
    the work bound: the estimate at `value` scaled, then refined once at that value. `cap` where the work
    bound admits more, `floor` where it admits less (a bound lowered in a test made a window of 0.89 s);
    None where the estimate cannot say (a setting the scenario refuses, such as a window inside its warm-up)."""
    for _ in range(2):
        value = min(value, cap)
        if value < floor:
            return floor
        try:
            load = estimate(apply_overrides(scenario, {path: value})).load()
        except ScenarioError:
            return None
        if not (math.isfinite(load) and load > 0):
            return None
        value = value / load
        if value >= cap:
            return cap
    return max(0.98 * value, floor)


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
