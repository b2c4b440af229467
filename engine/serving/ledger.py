"""The request ledger: every request's state during a run, and the rule that it ends exactly once.

Per-request state lives in parallel Python lists indexed by request id (a scalar read or write
of a numpy array costs several times more, and the event handlers do little else); the
simulation hands the lists its instances read to them once, and `columns` turns them into the
arrays of the run's `Records` at the end.

A request ends exactly once (`end`): completed, rejected or failed, the last two with a reason
(`REASONS`, plus the admission policies' own). Ending publishes "ended" to the subscribers of
`on_end` (the closed loop's clients send their next request then), so the ledger calls nobody
above it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import chain
from struct import pack_into
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from engine import policies
from engine.core.traits import mypyc_attr

# (Final: C statics in the compiled build, not module-dict lookups)
_new_view: Final = tuple.__new__
_REQUEST_VIEW: Final = policies.RequestView

if TYPE_CHECKING:
    from engine.scenario.resolve import Resolved
    from engine.serving.autoscale import ScalingLog
    from engine.serving.host import Clock
    from engine.serving.workload import Requests

# outcomes and reasons are Final: the compiled build uses their values where they are read
PENDING: Final = 0
COMPLETED: Final = 1
REJECTED: Final = 2
FAILED: Final = 3
UNSENT: Final = 4
"""A session's turn never sent (the turn before it was not served, or ended too late for it to
come within the window): left out of the run's records (`without_unsent`)."""
OUTCOMES = {PENDING: "pending", COMPLETED: "completed", REJECTED: "rejected", FAILED: "failed"}
SEGMENT_COLUMNS = (
    "server",
    "t0",
    "t1",
    "flops",
    "bytes",
    "kv_tokens",
    "batch",
    "waiting",
    "prefill_s",
    "decodes",
    "steps",
    "first_gap_s",
    "step_s",
)
"""Columns of the per-iteration records. A segment that produced tokens (`decodes` requests for
`steps` steps) records the gap before its first step's tokens (from the batch's previous decode
step: a prompt-only iteration in between is a stall) and its mean step time."""
TOO_LONG: Final = "too_long_for_kv"
OVER_CONTEXT: Final = "longer_than_context"
TOO_LONG_LIVE: Final = "too_long_for_live_kv"
NO_INSTANCE: Final = "no_instance_up"
NO_DECODE: Final = "no_decode_instance"
LOST: Final = "instance_lost"
UNFINISHED: Final = "unfinished_at_end"
DEGRADED: Final = "degraded"
LINK_DOWN: Final = "link_down"
REASONS = {
    OVER_CONTEXT: "its prompt and output together are longer than the model's context (`max_context`)",
    TOO_LONG: "the request needs more KV memory than any instance of its role has",
    TOO_LONG_LIVE: "too long for the KV memory of every instance it could be sent to now (decode: ever again)",
    NO_INSTANCE: "no instance that takes new requests is up",
    NO_DECODE: "no decode instance is up or will come back (disaggregated)",
    LOST: "its instance failed and the fault fails requests in flight",
    UNFINISHED: "still in flight when the run ended (a safety net: a correct run never needs it)",
    DEGRADED: "shed while the deployment was degraded: its class is below deployment.degrade.shed_below_priority",
    LINK_DOWN: "its prefill pool's KV link was down and the fault rejects hand-offs (faults[i].link_down)",
}
"""Why the simulator rejects or fails a request (admission policies add their own reasons)."""


@mypyc_attr(native_class=False)  # pickled, compared and read with `vars`: a plain class when compiled
@dataclass(frozen=True)
class Records:
    """What happened, per request and per iteration, as arrays (the metrics module reads it)."""

    arrival_s: np.ndarray
    first_token_s: np.ndarray
    completion_s: np.ndarray
    outcome: np.ndarray
    reason: list[str]
    prefill_instance: np.ndarray
    decode_instance: np.ndarray
    transfer_s: np.ndarray
    transfer_wait_s: np.ndarray  # of transfer_s: the part spent queued for the sender's link
    cache_hit_tokens: np.ndarray  # (requests, 3): tokens served from HBM, host, pooled
    cache_load_s: np.ndarray
    retries: np.ndarray
    preemptions: np.ndarray
    segments: np.ndarray  # columns: SEGMENT_COLUMNS
    servers: list[tuple[int, int, str]]  # (pool index, index in pool, starting role) per server
    kv_capacity: np.ndarray  # tokens, per server
    events: int
    end_s: float  # the run's end, billed: the last request's end; an open loop's not before its window's
    tokens_emitted: int  # output tokens produced by iterations (checked against completed outputs)
    tokens_discarded: int  # tokens produced and then lost to a fault (retried from the start)
    kv_peak: np.ndarray  # most KV tokens reserved at once, per server
    counters: dict[str, float]
    output_tokens: np.ndarray  # delivered output length per request: the drawn one, or capped while degraded
    site: list[str] | None = None  # with an edge site: where each request was served (`edge.SITES`)
    network_s: np.ndarray | None = None  # with a network or control plane that costs: `way_in`'s per request
    control_s: np.ndarray | None = None
    client_wait_s: np.ndarray | None = None
    """With a ceiling on requests in flight (`Arrival.max_in_flight`): each request's wait at the
    client for a slot, seconds (`arrival_s` is when it was sent, after the wait)."""
    stalls: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    """One row per preemption that ended in the request rejoining a batch: (request, server, the end
    of the batch's last decode step before it was taken off, when it rejoined). Its next token comes
    with the server's next decode step; `gaps.largest_gaps` counts the stall as a gap."""
    scaling: ScalingLog | None = None
    """With autoscaled pools: the autoscalers' events and each instance's billed stretches."""
    kept: np.ndarray | None = None
    """With multi-turn sessions: the ids of the drawn requests these records are (those sent, in
    order; `without_unsent`), else None (the first `len(outcome)` ids)."""
    kv_left: np.ndarray | None = None
    """Set only where a run ended with every request ended and some instance still holding KV (its
    reservation, its shared blocks, its pins, per server): a leak in the KV ledger's books, which
    the tests' invariants check never happens. None for every sound run."""
    prompt_tokens: np.ndarray | None = None
    """With multi-turn sessions: each turn's prompt as sent, shorter than drawn by what degrading cut
    from the answers before it (their context holds only what was generated)."""
    failed_s: np.ndarray | None = None
    """Where any request failed: when each failed one did (NaN for the others; a request still
    unfinished when the run stopped, the run's last instant), else None. The saturation rule counts
    a failed request in the queue until then: one held by a pool lost after the window was counted
    as leaving on arrival, which hid the window's backlog (a review)."""


class RequestLedger:
    """Every request's state in parallel lists, and how many were issued and have ended."""

    def __init__(self, resolved: Resolved, reqs: Requests, env: Clock) -> None:
        sc = resolved.scenario
        n = len(reqs)
        self.env = env
        self.reqs = reqs
        self.classes = sc.workload.classes
        # read-only inputs (`output` is capped while degraded, `pf_target` by a recompute)
        self.prompt: list[int] = reqs.prompt_tokens.tolist()
        self.output: list[int] = reqs.output_tokens.tolist()
        self.pf_target: list[int] = list(self.prompt)  # the same int objects: no second copy of a million
        self.closed = reqs.closed_loop_clients > 0
        nan = math.nan
        # a closed loop's arrivals are set as its clients send them
        self.arrival: list[float] = [nan] * n if self.closed else reqs.arrival_s.astype(float).tolist()
        self.issued = 0 if self.closed else n  # requests sent so far
        self.ended = 0  # requests closed so far
        self.last_end_s = 0.0  # when the latest of them ended (the clock only moves forward)
        self.prefilled: list[int] = [0] * n
        self.context: list[int] = [0] * n
        self.first_token: list[float] = [nan] * n
        self.completion: list[float] = [nan] * n
        self.outcome: list[int] = [PENDING] * n
        self.reason = [""] * n
        self.prefill_inst: list[int] = [-1] * n
        self.decode_inst: list[int] = [-1] * n
        self.transfer: list[float] = [0.0] * n
        self.transfer_wait: list[float] = [0.0] * n
        self.prefill_start: list[float] = [0.0] * n
        self.hits: list[tuple[int, ...]] = [(0, 0, 0)] * n
        self.load_s: list[float] = [0.0] * n
        self.retries: list[int] = [0] * n
        self.preemptions: list[int] = [0] * n
        self.resume: list[int] = [-1] * n  # tokens left after a recompute, else -1
        self.failed_at: dict[int, float] = {}  # when each failed request failed (`Records.failed_s`)
        self.views: list[policies.RequestView | None] = [None] * n
        self.stalled: dict[int, float] = {}  # preempted, not yet back: the end of its last decode step
        self.stalls: list[tuple[int, int, float, float]] = []  # (request, server, stalled since, rejoined)
        self.cls: list[int] = reqs.cls.tolist()  # each request's class (a numpy scalar read costs more)
        self.priority: list[int] = [self.classes[c].priority for c in self.cls]
        self.top_priority = max(c.priority for c in self.classes)
        # per class: the tightest TTFT target of the classes above it, which admission protects by
        # shedding this class first; under strict priority the classes above overtake it anyway
        self.guard_ttft: list[float] = [
            math.inf
            if sc.scheduler.queue.name == "priority"
            else min(
                (o.slo.ttft_ms / 1000.0 for o in self.classes if o.priority > c.priority), default=math.inf
            )
            for c in self.classes
        ]
        self.on_end: list[Callable[[float], None]] = []  # told the time whenever a request ends
        # generated multi-turn sessions: each turn's next turn (-1: none) and think time before it;
        # a later turn is sent when the one before it ends (`on_turn`, the front door's)
        self.follow: list[int] | None = None
        self.follow_up: list[bool] = []  # with sessions: True for a session's later turns
        self.gap: list[float] = []
        self.sent = 0  # open loops: requests sent so far (with sessions their ids are not in time order)
        self.on_turn: Callable[[int, float, bool, int], None] | None = None
        if reqs.turn_gap_s is not None and not self.closed:
            self.follow = self.sessions(reqs)
            self.gap = reqs.turn_gap_s.tolist()
        # per class: (priority, TTFT target s, TPOT target s), as its requests' views carry them
        self.class_terms: list[tuple[int, float, float]] = [
            (c.priority, c.slo.ttft_ms / 1000.0, c.slo.tpot_ms / 1000.0) for c in self.classes
        ]

    def sessions(self, reqs: Requests) -> list[int]:
        """Each request's session's next turn among the ids (-1: its last); a later turn is marked in
        `follow_up`, its arrival unknown (NaN) until it is sent."""
        follow = [-1] * len(self.arrival)
        self.follow_up = [False] * len(self.arrival)
        last: dict[int, int] = {}
        nan = math.nan
        for rid, s in enumerate(reqs.session.tolist()):
            prev = last.get(s, -1)
            if prev >= 0:
                follow[prev] = rid
                self.follow_up[rid] = True
                self.arrival[rid] = nan
            last[s] = rid
        return follow

    def unsend(self, rid: int) -> None:
        """A session's turn and every later one are never sent: closed, without telling anyone."""
        follow = self.follow
        assert follow is not None
        while rid >= 0:
            assert self.outcome[rid] == PENDING, f"request {rid} ended twice"
            self.outcome[rid] = UNSENT
            self.ended += 1
            rid = follow[rid]

    def end(self, rid: int, outcome: int, reason: str = "") -> None:
        """Close a request exactly once (a request that does not complete says why)."""
        assert self.outcome[rid] == PENDING, f"request {rid} ended twice"
        assert outcome == COMPLETED or reason, f"request {rid} ended without a reason"
        self.outcome[rid] = outcome
        self.ended += 1
        self.reason[rid] = reason
        self.views[rid] = None  # policies see only live requests: a million ended ones' views cost 170 MB
        now = self.env.now
        self.last_end_s = now
        if outcome == COMPLETED:
            self.completion[rid] = now
        elif outcome == FAILED:
            self.failed_at[rid] = now
        for hook in self.on_end:
            hook(now)
        follow = self.follow
        if follow is not None and follow[rid] >= 0 and self.on_turn is not None:
            cut = int(self.reqs.output_tokens[rid]) - self.output[rid]  # an answer capped while degraded
            self.on_turn(follow[rid], now, outcome == COMPLETED, cut)

    def close_unfinished(self) -> None:
        """The safety net: fail whatever is still pending, without telling the subscribers."""
        for rid in range(self.issued):
            if self.outcome[rid] == PENDING:  # not through `end`: a closed loop must not send more
                if self.arrival[rid] != self.arrival[rid]:  # a session's turn never sent (NaN)
                    self.outcome[rid] = UNSENT
                else:
                    self.outcome[rid] = FAILED
                    self.reason[rid] = UNFINISHED
                    self.failed_at[rid] = self.env.now
                self.ended += 1

    def request_view(self, rid: int) -> policies.RequestView:
        """What a policy sees of a request (built once per request)."""
        view = self.views[rid]
        if view is None:
            c = self.cls[rid]
            priority, ttft_s, tpot_s = self.class_terms[c]
            arrival = self.arrival[rid]
            # (the tuple built directly: the named tuple's own constructor is a Python call)
            fields = (
                rid,
                c,
                priority,
                arrival,
                self.prompt[rid],
                self.output[rid],
                arrival + ttft_s,
                self.top_priority,
                self.guard_ttft[c],
                tpot_s,
                -1.0,
            )
            view = self.views[rid] = _new_view(_REQUEST_VIEW, fields)
        return view

    def retried(self, rid: int) -> None:
        """A request goes back to the start after its instance was lost: nothing of it is kept."""
        self.retries[rid] += 1
        self.stalled.pop(rid, None)  # a stall before the fault is not a gap of the retry
        self.pf_target[rid] = self.prompt[rid]
        self.prefilled[rid] = 0
        self.resume[rid] = -1
        self.first_token[rid] = math.nan
        self.decode_inst[rid] = -1  # the retry is placed anew

    def columns(self) -> dict[str, Any]:
        """The per-request fields of `Records`, as arrays over the requests issued.

        The run is over: each record list is emptied once it is an array (the lists of a million
        requests hold about 100 MB of float objects), so the two are never all held at once.
        """
        n = self.issued
        return {
            "arrival_s": _take(self.arrival, n, np.float64),
            "first_token_s": _take(self.first_token, n, np.float64),
            "completion_s": _take(self.completion, n, np.float64),
            "outcome": _take(self.outcome, n, np.int8),
            "reason": self.reason[:n],
            "prefill_instance": _take(self.prefill_inst, n, np.int64),
            "decode_instance": _take(self.decode_inst, n, np.int64),
            "transfer_s": _take(self.transfer, n, np.float64),
            "transfer_wait_s": _take(self.transfer_wait, n, np.float64),
            "cache_hit_tokens": _take(self.hits, n, np.int64, 3),
            "cache_load_s": _take(self.load_s, n, np.float64),
            "retries": _take(self.retries, n, np.int64),
            "preemptions": _take(self.preemptions, n, np.int64),
            "output_tokens": _packed(self.output, n, np.int64),
            "stalls": np.array(self.stalls, dtype=float).reshape(-1, 4),
            "failed_s": _failed_times(self.failed_at, n),
        }


def _failed_times(failed_at: dict[int, float], n: int) -> np.ndarray | None:
    """`Records.failed_s` over the first `n` requests (None where none failed)."""
    if not failed_at:
        return None
    out = np.full(n, np.nan)
    for rid, at in failed_at.items():
        if rid < n:
            out[rid] = at
    return out


def _take(values: list[Any], n: int, dtype: Any, width: int = 1) -> np.ndarray:
    """The first `n` values as an array (`_packed`), the list emptied. (A module function, not a
    closure: compiled, a closure and its environment hold each other, a cycle left to the collector.)"""
    out = _packed(values, n, dtype, width)
    values.clear()
    return out


_CODES: Final = {np.float64: "d", np.int64: "q", np.int8: "b"}
"""`struct`'s native codes of the record columns' dtypes."""
_BLOCK_ROWS: Final = 65536
"""Rows packed per call (at most a 1.5 MB tuple of arguments)."""


def _packed(values: list[Any], n: int, dtype: Any, width: int = 1) -> np.ndarray:
    """`np.array(values[:n], dtype)` (rows of `width` values where `width` > 1), written by `struct`:
    each value as its C double (`PyFloat_AsDouble`, an int converted as `float` does) or C integer,
    the same array bit for bit at a third of numpy's per-element conversion. A block of rows at a
    time, so that the arguments' tuple stays small beside a million requests' lists."""
    out = np.empty((n, width) if width > 1 else n, dtype=dtype)
    code = _CODES[dtype]
    row_bytes = out.itemsize * width
    for at in range(0, n, _BLOCK_ROWS):
        block = values[at : min(at + _BLOCK_ROWS, n)]
        flat = block if width == 1 else list(chain.from_iterable(block))
        pack_into(f"@{len(flat)}{code}", out.data, at * row_bytes, *flat)
    return out


PER_REQUEST: Final = (
    "arrival_s",
    "first_token_s",
    "completion_s",
    "outcome",
    "prefill_instance",
    "decode_instance",
    "transfer_s",
    "transfer_wait_s",
    "cache_hit_tokens",
    "cache_load_s",
    "retries",
    "preemptions",
    "output_tokens",
)
"""The `Records` arrays with one row per request."""


def without_unsent(rec: Records) -> Records:
    """The records of the requests sent: a session's turns never sent left out, the stalls'
    request ids renumbered, and `kept` naming the drawn ids that remain."""
    keep = np.flatnonzero(rec.outcome != UNSENT)
    renumber = np.full(len(rec.outcome), -1, dtype=np.int64)
    renumber[keep] = np.arange(len(keep))
    stalls = rec.stalls.copy()
    if len(stalls):
        stalls[:, 0] = renumber[stalls[:, 0].astype(np.int64)]
    per_request = {k: getattr(rec, k)[keep] for k in PER_REQUEST}
    optional = {
        k: getattr(rec, k)[keep]
        for k in ("network_s", "control_s", "client_wait_s", "prompt_tokens", "failed_s")
        if getattr(rec, k) is not None
    }
    site = [rec.site[i] for i in keep.tolist()] if rec.site is not None else None
    reason = [rec.reason[i] for i in keep.tolist()]
    return replace(rec, **per_request, **optional, site=site, reason=reason, stalls=stalls, kept=keep)
