"""A scenario's workload: its request classes, their lengths and SLOs, and a trace to replay.

What the users send: each class's share of traffic, priority, prompt and output lengths
(`LengthDist`), latency targets (`Slo`), shared prefixes and multi-turn sessions, and the pools
it is pinned to; `Workload` holds the classes with how they arrive (`engine.scenario.arrival`)
or the trace that replaces the arrivals. Part of `engine.scenario.model.Scenario`.
"""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
import math
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from engine.catalog.specs import Frozen
from engine.core import bounds
from engine.scenario.arrival import Arrival
from engine.scenario.fields import Name, Tokens

Z99 = 2.3263478740408408
"""The standard normal's 99th percentile."""
LOGNORMAL_MAX_SPREAD = math.exp(Z99 * Z99 / 2)
"""Largest p99 / mean of a lognormal (about 14.97): past it no sigma gives both."""


class LengthDist(Frozen):
    """A distribution of token counts.

    ``constant`` (tokens), ``uniform`` (low..high), ``lognormal`` (mean and p99, the way
    people describe lengths) or ``empirical`` (a column of a CSV file, sampled with
    replacement). Draws are clipped to [1, max_tokens].
    """

    kind: Literal["constant", "uniform", "lognormal", "empirical"] = "constant"
    tokens: Tokens | None = None
    low: Tokens | None = None
    high: Tokens | None = None
    mean: Annotated[float, Field(ge=1, le=bounds.MAX_TOKENS_PER_REQUEST)] | None = None
    p99: Annotated[float, Field(ge=1, le=bounds.MAX_TOKENS_PER_REQUEST)] | None = None
    path: Annotated[str, Field(min_length=1, max_length=1024)] | None = None
    column: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    max_tokens: Tokens = bounds.MAX_TOKENS_PER_REQUEST

    @model_validator(mode="after")
    def _check(self) -> "LengthDist":
        need = {
            "constant": ("tokens",),
            "uniform": ("low", "high"),
            "lognormal": ("mean", "p99"),
            "empirical": ("path", "column"),
        }[self.kind]
        missing = [f for f in need if getattr(self, f) is None]
        if missing:
            article = "an" if self.kind[0] in "aeiou" else "a"
            raise ValueError(
                f"{missing[0]}: {article} {self.kind} distribution needs {' and '.join(missing)}"
            )
        if self.kind == "uniform" and self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"low: must not exceed high ({self.high}) (got {self.low})")
        if (
            self.kind == "lognormal"
            and self.mean is not None
            and self.p99 is not None
            and self.p99 <= self.mean
        ):
            raise ValueError(  # (a mean typed past the p99 read as a p99 of 1000.0 refused: a review)
                f"p99: must exceed mean ({self.mean:g}) for a lognormal (got {self.p99:g}): a mean "
                "goes past the p99 only after the p99 is raised"
            )
        # every draw is clipped to max_tokens: one below what the distribution centres on would serve
        # another workload than the one stated (max 500 beside a mean of 1,024 drew a mean of 416: a review)
        floor = {"constant": self.tokens, "uniform": self.low, "lognormal": self.mean}.get(self.kind)
        if floor is not None and self.max_tokens < floor:
            what = {"constant": "the tokens", "uniform": "low", "lognormal": "the mean"}[self.kind]
            raise ValueError(
                f"max_tokens: must be at least {what} ({floor:g}): every draw is clipped to it, so the "
                f"distribution would not be the one stated (got {self.max_tokens})"
            )
        if self.kind == "lognormal" and 2.0 * math.log((self.p99 or 1) / (self.mean or 1)) > Z99 * Z99:
            raise ValueError(
                f"p99: a lognormal's p99 is at most {LOGNORMAL_MAX_SPREAD:.2f}x its mean ({self.mean}), "
                f"so at most {LOGNORMAL_MAX_SPREAD * (self.mean or 0):.6g} (got {self.p99})"
            )
        return self

    def nominal_mean(self) -> float:
        """The mean of the distribution (empirical files: unknown until read, reported as nan)."""
        if self.kind == "constant":
            return float(self.tokens or 0)
        if self.kind == "uniform":
            return ((self.low or 0) + (self.high or 0)) / 2.0
        if self.kind == "lognormal":
            return float(self.mean or 0)
        return math.nan


class Slo(Frozen):
    """Latency targets of a class: TTFT and TPOT at a percentile, optionally an E2E deadline and a
    TBT target (each request's largest gap between two tokens: stalls break it, means hide them)."""

    ttft_ms: Annotated[float, Field(ge=0.01, le=3_600_000)] = 2000.0
    tpot_ms: Annotated[float, Field(ge=0.01, le=60_000)] = 100.0
    percentile: Annotated[float, Field(ge=50, le=99.99)] = 99.0
    e2e_ms: Annotated[float, Field(ge=0.01, le=86_400_000)] | None = None
    tbt_ms: Annotated[float, Field(ge=0.01, le=600_000)] | None = None


class Prefix(Frozen):
    """Shared prompt prefixes: `groups` distinct system prompts of `tokens` tokens each."""

    tokens: Annotated[int, Field(ge=0, le=bounds.MAX_TOKENS_PER_REQUEST)] = 0
    groups: Annotated[int, Field(ge=1, le=100_000)] = 1


class MultiTurn(Frozen):
    """Multi-turn sessions: each turn's prompt extends the previous turn's whole context, and is sent
    a think time after that turn ended (not after it was sent: the user reads the answer first)."""

    turns_mean: Annotated[float, Field(ge=1, le=1000)] = 1.0
    think_time_s: Annotated[float, Field(ge=0, le=86_400)] = 10.0


class RequestClass(Frozen):
    """One class of requests: its share of traffic, priority, lengths, prefixes and SLO.

    Priority: a higher number is more important (it is served first under strict priority and
    shed last under admission control).
    """

    name: Name
    share: Annotated[float, Field(ge=1e-6, le=1)] = 1.0
    priority: Annotated[int, Field(ge=0, le=100)] = 0
    input: LengthDist = LengthDist(kind="constant", tokens=1024)
    output: LengthDist = LengthDist(kind="constant", tokens=256)
    slo: Slo = Slo()
    prefix: Prefix = Prefix()
    multi_turn: MultiTurn = MultiTurn()
    pools: Annotated[tuple[Name, ...], Field(max_length=8)] = ()
    """Pools the class is pinned to: entry pools (mixed or prefill) it enters, and decode pools its
    prompts are handed to; where it names none of a kind, any pool of that kind."""
    overflow: Literal["wait", "spill", "reject"] = "wait"
    """When every pinned instance has `spill_queue` requests waiting: keep queueing there, spill
    to the other pools, or reject (`isolation_full`)."""
    spill_queue: Annotated[int, Field(ge=1, le=1_000_000)] = 8


class Trace(Frozen):
    """A trace to replay instead of generated arrivals.

    Formats: ``mooncake`` (JSONL: timestamp ms, input_length, output_length, hash_ids),
    ``azure`` (CSV: TIMESTAMP, ContextTokens, GeneratedTokens), ``csv`` (arrival_s,
    input_tokens, output_tokens[, class]) and ``agentic`` (kv-cache-tester's agentic-coding
    sessions: JSON, one document a session, t / in / out / hash_ids per request, nested
    sub-agents; its block size is the file's `block_size`). `time_scale` > 1 replays faster.
    `block_tokens` is Mooncake's block size (other formats ignore it). `max_gap_s` (agentic only;
    others ignore it) cuts each gap between a session's consecutive requests to at most that many
    seconds: the recorded sessions pause for hours or days between bursts of work.
    """

    format: Literal["mooncake", "azure", "csv", "agentic"]
    path: Annotated[str, Field(min_length=1, max_length=1024)]
    time_scale: Annotated[float, Field(ge=0.001, le=1000)] = 1.0
    max_requests: Annotated[int, Field(ge=1, le=bounds.MAX_REQUESTS)] | None = None
    """Replay at most this many of the window's requests, the earliest; unset: every one, within the
    requests-per-run bound (`bounds.MAX_REQUESTS`, the earliest that many where a window holds more)."""
    start_s: Annotated[float, Field(ge=0, le=10 * bounds.MAX_DURATION_S)] = 0.0
    block_tokens: Annotated[int, Field(ge=1, le=65536)] = 512
    max_gap_s: Annotated[float, Field(ge=0.001, le=bounds.MAX_DURATION_S)] | None = None


class Workload(Frozen):
    """Request classes and how they arrive (generated, or replayed from a trace)."""

    classes: Annotated[tuple[RequestClass, ...], Field(min_length=1, max_length=bounds.MAX_CLASSES)] = (
        RequestClass(name="chat"),
    )
    arrival: Arrival = Arrival()
    trace: Trace | None = None

    @model_validator(mode="after")
    def _check(self) -> "Workload":
        names = [c.name for c in self.classes]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"classes: names must be unique; repeated: {', '.join(dup)}")
        return self

    def shares(self) -> list[float]:
        """Traffic shares of the classes, normalised to sum to one."""
        total = sum(c.share for c in self.classes)
        return [c.share / total for c in self.classes]

    def request_shares(self) -> list[float]:
        """The classes' shares of the requests: a class's `share` is of the sessions that start, each
        of its sessions `turns_mean` requests long (the generator's draw), so a class of three-turn
        sessions at 20% of them sends about 43% of the requests beside one-turn chat."""
        weights = [s * c.multi_turn.turns_mean for s, c in zip(self.shares(), self.classes, strict=True)]
        return [w / sum(weights) for w in weights]


TRACE_ARRIVAL_FIELDS = ("max_in_flight",)
"""The fields of `workload.arrival` a trace replay reads; the others (the kind, the rate, its shape, the
clients) are the file's to give."""


def arrival_unused_with_trace(workload: Workload) -> list[str]:
    """The `workload.arrival` fields set away from their defaults that a trace replay does not read (all
    but `TRACE_ARRIVAL_FIELDS`); none without a trace. A file's `clients = 64` beside a trace replayed
    the file with nothing said, where without a trace `run` names a field its kind does not use."""
    if workload.trace is None:
        return []
    arrival = workload.arrival
    fields = type(arrival).model_fields
    return [n for n in fields if n not in TRACE_ARRIVAL_FIELDS and getattr(arrival, n) != fields[n].default]


TRACE_UNREAD_CLASS_FIELDS = ("input", "output", "share", "prefix", "multi_turn")
"""The fields of a request class a trace replay never reads (`engine.serving.workload.read_trace`): the
file gives each request its lengths and class (an unlabelled row the first class), and no prefix group or
session is drawn. A sweep over a class's prompt length on the Mooncake trace wrote identical rows (a review)."""


def unused_with_trace(workload: Workload, paths: Iterable[str] | Mapping[str, Any]) -> str | None:
    """Why changing `paths` changes nothing where the workload replays a trace ('workload.arrival.rate_rps:
    unused with a trace ...'), None where every path is read. A sweep over the rate of a trace replay ran
    the same requests at every rate and labelled each row with a rate never applied (a review)."""
    if workload.trace is None:
        return None
    fmt = workload.trace.format
    if isinstance(
        paths, Mapping
    ):  # a whole table's keys as its paths ('workload.arrival={rate_rps=5}': a review)
        tables = [
            v
            for p, v in paths.items()
            if p == "workload.arrival"
            for v in (v if isinstance(v, list) else [v])
        ]
        paths = [*paths, *(f"workload.arrival.{k}" for t in tables if isinstance(t, Mapping) for k in t)]
    for path in paths:
        if path == "workload.trace.block_tokens" and fmt != "mooncake":
            return f"{path}: unused with a trace in the {fmt} format: only a Mooncake trace's hashes come in blocks"
        if path == "workload.trace.max_gap_s" and fmt != "agentic":
            return f"{path}: unused with a trace in the {fmt} format: only agentic sessions' gaps are cut"
        head, _, rest = path.partition("].")
        if head.startswith("workload.classes[") and rest.split(".")[0] in TRACE_UNREAD_CLASS_FIELDS:
            return (
                f"{path}: unused with a trace: its requests' lengths come from the file, and no prefixes, "
                "sessions or shares are drawn (a class's name, priority, SLO and pools are read)"
            )
        field = path.removeprefix("workload.arrival").lstrip(".")
        if path.startswith("workload.arrival.") and field.split(".")[0] not in TRACE_ARRIVAL_FIELDS:
            return (
                f"{path}: unused with a trace: its arrivals come from the file (workload.trace.time_scale "
                "replays it faster or slower; workload.arrival.max_in_flight caps the requests in flight)"
            )
    return None
