"""How requests arrive: open loops shaped over time, an offline batch, closed-loop clients.

An open loop's rate is `rate_rps` on average over the window, shaped by `shape`: ``flat``,
``ramp`` (from 1 to `peak_factor`), ``peak`` (the middle fifth at `peak_factor`), ``diurnal``
(a cosine from trough to peak and back, `peak_factor` times the trough at its top) or explicit
``points``. A diurnal curve peaks in the middle of the window unless `peak_hour` places its
peak: the window is then read as one day (a real one, or a compressed one: 24 hours of shape
over `duration_s`), and the trough falls twelve hours from the peak.
"""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from engine.catalog.specs import Frozen
from engine.core import bounds


class RatePoint(Frozen):
    """One point of a rate schedule: at `at_s`, the rate is `factor` times the base rate."""

    at_s: Annotated[float, Field(ge=0, le=bounds.MAX_DURATION_S)]
    factor: Annotated[float, Field(ge=0, le=100)]


USED_BY_KIND: dict[str, tuple[str, ...]] = {
    "poisson": ("rate_rps", "shape", "peak_factor", "peak_hour", "points", "max_in_flight"),
    "gamma": ("rate_rps", "cv", "shape", "peak_factor", "peak_hour", "points", "max_in_flight"),
    "offline": ("requests", "max_in_flight"),
    "closed_loop": ("clients", "think_time_s", "think", "think_spread", "ramp_s", "stop_after"),
}
"""The arrival fields each kind uses (the Workload page shows those; `Arrival.unused` names the others
set); a field in none of them is used by every kind."""

USED_BY_SHAPE: dict[str, tuple[str, ...]] = {
    "peak_factor": ("ramp", "peak", "diurnal"),
    "points": ("points",),
}
"""The shapes that use each shape field (`Arrival.unused_by_shape`): `peak_factor = 3` beside a flat
shape ran flat, unsaid (a review)."""


class Arrival(Frozen):
    """How requests arrive.

    ``poisson`` and ``gamma`` (bursty, with a coefficient of variation) are open loops at
    `rate_rps`, shaped over time by `shape` (``flat``, ``ramp``, ``peak``, ``diurnal``) or
    by explicit `points`. ``offline`` puts `requests` requests at t = 0. ``closed_loop`` has
    `clients` clients, each sending its next request a think time after its last one ends.

    Closed loop: client k of N sends its first request at k x `ramp_s` / N (one more client
    every `ramp_s` / N, as AIPerf's ``--concurrency-ramp-duration`` and GuideLLM's ``rampup``
    spread them). Think times have mean `think_time_s`, drawn from `think`: ``exponential``
    (the default; TPC-C's negative-exponential think time), ``constant``, or ``uniform`` over
    mean x [1 - `think_spread`, 1 + `think_spread`] (Locust's ``between``). `ramp_s` unset: one
    mean think time; with no think time, `CLIENT_RAMP_S`, at most a tenth of the window
    (`start_ramp_s`). Started together and never jittered, clients would stay in lock step,
    their prompts queueing behind each other every round.
    """

    CLIENT_RAMP_S: ClassVar[float] = 1.0
    """Default start ramp of clients that do not think. An assumption: shorter than one request's
    round trip for usual outputs (200 tokens at 7 ms a token is 1.4 s), so the starts stay spread
    over a client's cycle instead of wrapping round it, and long enough that a few clients' long
    prompts prefill one after another (5,000 tokens of an 8B model take ~0.15 s on an H100)."""

    kind: Literal["poisson", "gamma", "offline", "closed_loop"] = "poisson"
    rate_rps: Annotated[float, Field(ge=bounds.MIN_RATE_RPS, le=bounds.MAX_RATE_RPS)] = 10.0
    cv: Annotated[float, Field(ge=0.01, le=20)] = 1.0
    shape: Literal["flat", "ramp", "peak", "diurnal", "points"] = "flat"
    peak_factor: Annotated[float, Field(ge=1, le=20)] = 2.0
    peak_hour: Annotated[float, Field(ge=0, lt=24)] | None = None
    """``diurnal`` only: the hour of the day (0 to 24, the window read as one day) at which the
    rate peaks; the trough is twelve hours away. Unset: the peak is in the middle of the window."""
    points: tuple[RatePoint, ...] = ()
    requests: Annotated[int, Field(ge=1, le=bounds.MAX_REQUESTS)] = 1000
    clients: Annotated[int, Field(ge=1, le=bounds.MAX_CLIENTS)] = 16
    think_time_s: Annotated[float, Field(ge=0, le=86_400)] = 0.0
    think: Literal["exponential", "constant", "uniform"] = "exponential"
    think_spread: Annotated[float, Field(ge=0, le=1)] = 0.5
    ramp_s: Annotated[float, Field(ge=0, le=bounds.MAX_DURATION_S)] | None = None
    stop_after: Annotated[int, Field(ge=1, le=bounds.MAX_REQUESTS)] | None = None
    """Closed loop: the clients send this many requests in all, then stop (bench_serving's
    ``--num-prompts`` beside ``--max-concurrency``); unset, they send until the window ends. Other
    kinds ignore it, as they ignore `clients`."""
    max_in_flight: Annotated[int, Field(ge=1, le=bounds.MAX_CLIENTS)] | None = None
    """Open loops, offline batches and traces: the client never has more than this many requests
    unanswered (vLLM's ``bench serve --max-concurrency`` beside ``--request-rate``, a gateway's
    in-flight limit). A request due while that many are in flight waits at the client, in order,
    until one ends; it is sent then, and its TTFT and E2E count from then, as the benchmark times
    them (the wait is reported apart: the summary's ``client``; `engine.serving.ceiling`). Unset: no
    ceiling. A closed loop does not apply it (its `clients` are its ceiling); the advisor and `run` say so."""

    @model_validator(mode="after")
    def _check(self) -> "Arrival":
        if self.shape == "points" and len(self.points) < 2:
            raise ValueError("shape 'points' needs at least two points")
        if any(b.at_s <= a.at_s for a, b in zip(self.points, self.points[1:], strict=False)):
            raise ValueError("points: at_s must increase strictly")
        if self.peak_hour is not None and self.shape != "diurnal":
            raise ValueError(
                f"peak_hour: only a 'diurnal' shape has an hour of peak (shape is {self.shape!r})"
            )
        return self

    def unused(self) -> list[str]:
        """The fields set away from their defaults that this kind does not use: a scenario file's
        `clients = 64` beside `kind = "poisson"` ran at its rate with nothing said. (A closed loop's
        `max_in_flight` has its own line: the advisor's and `run`'s.)"""
        used = set(USED_BY_KIND[self.kind]) | {"max_in_flight"}
        listed = {f for fs in USED_BY_KIND.values() for f in fs}
        return [
            n
            for n in type(self).model_fields
            if n in listed and n not in used and getattr(self, n) != type(self).model_fields[n].default
        ]

    def unused_by_shape(self) -> list[str]:
        """The shape fields set away from their defaults that an open loop's `shape` does not use
        (`USED_BY_SHAPE`); none for a kind without a shape (`unused` names those)."""
        if "shape" not in USED_BY_KIND[self.kind]:
            return []
        fields = type(self).model_fields
        return [
            n
            for n, shapes in USED_BY_SHAPE.items()
            if self.shape not in shapes and getattr(self, n) != fields[n].default
        ]

    def rows_factor(self) -> float:
        """The multiple of rate x window the requests-per-run bound counts: 1 for the built-in
        shapes (ramp, peak, diurnal: normalised to a mean of one, so `rate_rps` is the window's mean
        rate and the requests drawn are about rate x window); explicit points multiply `rate_rps` as
        given, so their highest factor (at least 1) bounds what they draw."""
        if self.shape == "points" and self.points:
            return max(max(p.factor for p in self.points), 1.0)
        return 1.0

    def closed_loop_rows(self) -> int:
        """Requests a closed loop draws: `stop_after`, else 64 a client (at least 1,024), within
        the requests-per-run bound; the clients send them until the window ends."""
        if self.stop_after is not None:
            return self.stop_after
        return min(bounds.MAX_REQUESTS, max(self.clients * 64, 1024))

    def start_ramp_s(self, window_s: float) -> float:
        """Seconds over which closed-loop clients send their first requests.

        `ramp_s` when set (0: every client at t = 0); else one mean think time; else, when
        clients do not think, `CLIENT_RAMP_S`, at most a tenth of the window.
        """
        if self.ramp_s is not None:
            return self.ramp_s
        if self.think_time_s > 0:
            return self.think_time_s
        return min(self.CLIENT_RAMP_S, window_s / 10.0)


__all__ = ["USED_BY_KIND", "Arrival", "RatePoint"]
