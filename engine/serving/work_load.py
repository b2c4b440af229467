"""The load a scenario puts on the simulator: how many requests, and how long, before it runs.

`engine.serving.work_bound` estimates a run's work from a `Load`; this module finds that load
without simulating, in one of two ways:

- `from_requests`: from drawn requests (what `simulate` passes, and a trace's rows): their exact
  lengths, the prefill iterations of chunked prompts and the prefix-cache blocks they build;
  only a closed loop's issued count is estimated (each client about one request per think time).
- `expected`: from a generated workload's settings, nothing drawn: rate x window with the rate
  schedule's shape and multi-turn sessions cut at the window's end (`_session_turns`), the
  offline count, or a closed loop's clients x (window / think time + 1). Lengths are each
  distribution's mean and maximum (an empirical one sampled from its file); a multi-turn prompt
  grows by a turn's input and answer for each turn before it.

Each load also says which fields set its request count (`count_cause`), for the message that
names what to lower.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from engine.core import bounds
from engine.scenario.model import LengthDist, RequestClass, Scenario
from engine.serving.workload import Requests, rate_factor, sample_lengths


@dataclass(frozen=True)
class Load:
    """How many requests a run simulates and how long they are: what its work is estimated from."""

    rows: int  # request rows the run allocates
    n: float  # requests expected to be simulated
    prompt_mean: float
    prompt_max: float
    output_mean: float
    chunks_mean: float  # prefill iterations per request
    blocks: float  # sum of (2 prompt + output) / block tokens over simulated requests
    full_blocks: float  # sum of (prompt + output) / block tokens
    block_ids: float  # distinct block ids built
    block_tokens: int
    heavy: int  # the class with the longest prompts on average
    count_cause: str  # the fields that set the request count


def chunk_tokens(scenario: Scenario) -> int | None:
    """Tokens per prefill iteration of one prompt, when prompts are chunked."""
    if scenario.deployment.mode != "colocated":
        return None
    # each pool's, its chip's; the smallest: the most chunks a prompt may take (a bound's estimate)
    chunked = [b for b in map(scenario.pool_batching, scenario.deployment.pools) if b.chunked_prefill]
    return max(1, min(min(b.chunk_tokens, b.token_budget) for b in chunked)) if chunked else None


def _count_cause(scenario: Scenario, rows: int) -> str:
    wl = scenario.workload
    arr = wl.arrival
    if wl.trace is not None:
        # the count stands before it: '1,600,000 requests (workload.trace.path big.csv (1,600,000 requests in
        # the window))' said it twice, in brackets within brackets (a browser review)
        return f"workload.trace.path {wl.trace.path}, those in the window"
    if arr.kind == "offline":
        return f"workload.arrival.requests={arr.requests:,}"
    if arr.kind == "closed_loop":
        if arr.stop_after is not None:
            return f"workload.arrival.stop_after={arr.stop_after:,}"
        return (
            f"workload.arrival.clients={arr.clients:,} with think_time_s={arr.think_time_s:g} over "
            f"duration_s={scenario.duration_s:g}"
        )
    return f"workload.arrival.rate_rps={arr.rate_rps:g} over duration_s={scenario.duration_s:g}"


def _closed_loop_requests(scenario: Scenario, rows: int) -> float:
    """Requests a closed loop issues: each client about one per think time, within the rows.

    A uniform think time counts at its shortest, so a wide spread is not underestimated.
    """
    arr = scenario.workload.arrival
    think = arr.think_time_s * (1.0 - arr.think_spread if arr.think == "uniform" else 1.0)
    if think <= 0:
        return float(rows)
    return min(float(rows), arr.clients * (scenario.duration_s / think + 1.0))


def _group_ids(classes: tuple[RequestClass, ...], sessions: np.ndarray, bt: int) -> float:
    """Block ids of the shared-prefix chains: one chain per prefix group in use."""
    return float(
        sum(min(c.prefix.groups, s) * (c.prefix.tokens // bt) for c, s in zip(classes, sessions, strict=True))
    )


def from_requests(scenario: Scenario, reqs: Requests) -> Load:
    """The load of drawn requests (exact lengths; a closed loop's issued count estimated)."""
    rows = len(reqs)
    classes = scenario.workload.classes
    p = reqs.prompt_tokens.astype(np.int64)
    o = reqs.output_tokens.astype(np.int64)
    bt = max(int(reqs.block_tokens), 1)
    n = _closed_loop_requests(scenario, rows) if reqs.closed_loop_clients > 0 else float(rows)
    scale = n / rows if rows else 0.0
    c = chunk_tokens(scenario)
    chunks = float(((p + c - 1) // c).mean()) if c is not None and rows else 1.0
    counts = np.bincount(reqs.cls, minlength=len(classes))[: len(classes)]
    sums = np.bincount(reqs.cls, weights=p, minlength=len(classes))[: len(classes)]
    heavy = int(np.argmax(sums / np.maximum(counts, 1))) if rows else 0
    blocks = full = ids = 0.0
    if scenario.cache.enabled and rows:
        full_each = (p + o) // bt
        full = float(full_each.sum())
        blocks = full + float((p // bt).sum())
        if reqs.block_hashes is not None:
            ids = float(len(reqs.block_hashes))
        elif any(cl.multi_turn.turns_mean > 1 for cl in classes):
            chains = np.zeros(int(reqs.session.max()) + 1, dtype=np.int64)
            np.maximum.at(chains, reqs.session, full_each)
            sessions = np.bincount(
                reqs.cls[np.unique(reqs.session, return_index=True)[1]], minlength=len(classes)
            )
            ids = float(chains.sum()) + _group_ids(classes, sessions[: len(classes)], bt)
        else:
            ids = float(full) + _group_ids(classes, counts, bt)
    return Load(
        rows=rows,
        n=n,
        prompt_mean=float(p.mean()) if rows else 0.0,
        prompt_max=float(p.max()) if rows else 0.0,
        output_mean=float(o.mean()) if rows else 0.0,
        chunks_mean=chunks,
        blocks=blocks * scale,
        full_blocks=full * scale,
        block_ids=ids * scale,
        block_tokens=bt,
        heavy=heavy,
        count_cause=_count_cause(scenario, rows),
    )


def _length_stats(dist: LengthDist) -> tuple[float, float]:
    """(mean, max) of a length distribution (an empirical one is sampled from its file)."""
    if dist.kind == "constant":
        t = float(dist.tokens or 1)
        return t, t
    if dist.kind == "uniform":
        return dist.nominal_mean(), float(dist.high or 1)
    if dist.kind == "lognormal":
        return min(dist.nominal_mean(), float(dist.max_tokens)), float(dist.max_tokens)
    draws = sample_lengths(dist, 2048, np.random.default_rng(0))
    return float(draws.mean()), float(draws.max())


_GRID = 64  # points over the window at which multi-turn sessions are cut


def _session_turns(mean_turns: float, think_s: float, window_s: float) -> tuple[float, float]:
    """(turns per session, mean turn index) of geometric sessions started uniformly in the window.

    Turn k of a session started u seconds before the window ends arrives in it when k x think
    < u; with q = 1 - 1 / mean, the expected turns are sum q^k and the index sum k q^k over
    those k, averaged over u.
    """
    if mean_turns <= 1:
        return 1.0, 0.0
    q = 1.0 - 1.0 / mean_turns
    if think_s <= 0:
        return mean_turns, mean_turns - 1.0
    u = (np.arange(_GRID) + 0.5) / _GRID * window_s
    k = np.minimum(u / think_s + 1.0, 1e9)  # q^k is nil long before; keeps k q^k finite
    s0 = (1.0 - q**k) / (1.0 - q)
    s1 = q * (1.0 - k * q ** (k - 1.0) + (k - 1.0) * q**k) / (1.0 - q) ** 2
    turns = float(s0.mean())
    return turns, float(s1.mean()) / turns


def expected(scenario: Scenario) -> Load:
    """The load expected from a generated workload's settings (nothing drawn)."""
    wl = scenario.workload
    arr = wl.arrival
    classes = wl.classes
    shares = wl.shares()
    window = scenario.duration_s
    cap = float(bounds.MAX_TOKENS_PER_REQUEST)
    open_loop = arr.kind in ("poisson", "gamma")
    if open_loop:
        grid = np.linspace(0.0, window, 257)
        factor = float(np.mean(rate_factor(arr, window, grid)))
        mean_turns = sum(s * c.multi_turn.turns_mean for s, c in zip(shares, classes, strict=True))
        starts = arr.rate_rps * factor * window / mean_turns
    elif arr.kind == "offline":
        starts = float(arr.requests)
    else:
        starts = _closed_loop_requests(scenario, arr.closed_loop_rows())
    bt = scenario.cache.block_tokens
    c = chunk_tokens(scenario)
    n_c, p_c, o_c, chunk_c, ids_c, sess_c = [], [], [], [], [], []
    p_max = 0.0
    for share, cl in zip(shares, classes, strict=True):
        in_mean, in_max = _length_stats(cl.input)
        out_mean, _ = _length_stats(cl.output)
        turns, kbar = (
            _session_turns(cl.multi_turn.turns_mean, cl.multi_turn.think_time_s, window)
            if open_loop
            else (1.0, 0.0)
        )
        sessions = starts * share
        prompt = min(cap, cl.prefix.tokens + in_mean + (in_mean + out_mean) * kbar)
        last = min(cap, cl.prefix.tokens + (in_mean + out_mean) * turns)  # a session's last context
        # the longest prompt: the longest input after the most turns a session is likely to reach
        think = cl.multi_turn.think_time_s
        k_hi = min(window / think if think > 0 else math.inf, 5.0 * cl.multi_turn.turns_mean) if kbar else 0.0
        p_max = max(p_max, min(cap, cl.prefix.tokens + in_max + (in_mean + out_mean) * k_hi))
        n_c.append(sessions * turns)
        p_c.append(prompt)
        o_c.append(out_mean)
        chunk_c.append(max(1.0, prompt / c + 0.5) if c is not None else 1.0)
        ids_c.append(sessions * last / bt)
        sess_c.append(sessions)
    n_arr, p_arr, o_arr = np.array(n_c), np.array(p_c), np.array(o_c)
    n = float(n_arr.sum())
    weights = n_arr / n if n > 0 else np.zeros_like(n_arr)
    cache = scenario.cache.enabled
    rows = arr.closed_loop_rows() if arr.kind == "closed_loop" else round(n)
    return Load(
        rows=rows,
        n=n,
        prompt_mean=float(weights @ p_arr),
        prompt_max=p_max,
        output_mean=float(weights @ o_arr),
        chunks_mean=float(weights @ np.array(chunk_c)),
        blocks=float(n_arr @ (2.0 * p_arr + o_arr)) / bt if cache else 0.0,
        full_blocks=float(n_arr @ (p_arr + o_arr)) / bt if cache else 0.0,
        block_ids=(float(sum(ids_c)) + _group_ids(classes, np.array(sess_c), bt)) if cache else 0.0,
        block_tokens=bt,
        heavy=int(np.argmax(p_arr)),
        count_cause=_count_cause(scenario, rows),
    )


RAMP_SHARE = 0.95
"""The share of the sessions' steady load a session ramp reaches (`session_ramp`)."""
RAMP_CAP_S = 1800.0
"""The longest session ramp a planning run adds before its window (`SessionRamp.seconds`)."""


@dataclass(frozen=True)
class SessionRamp:
    """How an open loop's request rate climbs from t = 0 while its multi-turn sessions accumulate.

    `terms` holds, per class with sessions, (the share of all steady requests that are its later
    turns, its mean session length m): the load at t is 1 - sum(share x exp(-t / m)) of the steady
    load (a session's first turn is sent as it starts; its later ones come as sessions accumulate).
    """

    terms: tuple[tuple[float, float], ...] = ()

    def share_at(self, t_s: float) -> float:
        """The share of the steady load sent at `t_s`."""
        return 1.0 - sum(w * math.exp(-t_s / m) for w, m in self.terms)

    def load_share(self, start_s: float, end_s: float) -> float:
        """The mean share of the steady load sent over [start_s, end_s)."""
        if end_s <= start_s:
            return self.share_at(start_s)
        gone = sum(w * m * (math.exp(-start_s / m) - math.exp(-end_s / m)) for w, m in self.terms)
        return 1.0 - gone / (end_s - start_s)

    @functools.cached_property  # `seconds`, `reached` and the advisor's sentence each read it
    def wanted_s(self) -> float:
        """Whole seconds until the load reaches `RAMP_SHARE` of its steady value (0 without sessions)."""
        if self.share_at(0.0) >= RAMP_SHARE:
            return 0.0
        lo, hi = 0.0, 50.0 * max(m for _, m in self.terms)
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if self.share_at(mid) < RAMP_SHARE else (lo, mid)
        return float(math.ceil(hi))

    @property
    def seconds(self) -> float:
        """The ramp a planning run starts before its window: `wanted_s`, at most `RAMP_CAP_S`."""
        return min(self.wanted_s, RAMP_CAP_S)

    @property
    def reached(self) -> float:
        """The share of the steady load sent when `seconds` is over (below `RAMP_SHARE` when capped)."""
        return self.share_at(self.seconds)


def session_ramp(scenario: Scenario, latency_s: float | None = None) -> SessionRamp:
    """How an open loop's multi-turn sessions ramp up from none at t = 0 (no terms without them).

    Sessions start at `rate_rps / turns_mean` from t = 0, and each sends its next turn a think time
    after the previous one ended. With geometric turns (mean K) and a cycle of a think time and the
    turn's latency, a session started at s sends later turns at age a at a rate
    (1 - 1/K) / cycle x exp(-a / (K x cycle)), so the later turns' load approaches its steady value
    as 1 - exp(-t / m), m = K x cycle, the mean session length; first turns are steady from t = 0.
    `latency_s`: a turn's latency, measured (the advisor reads a run's mean E2E); unset, each
    class's SLO (its TTFT target and its mean output at its TPOT target, or its E2E deadline where
    lower): what a deployment that only just passes serves, so a faster one has ramped sooner.
    """
    wl = scenario.workload
    if wl.arrival.kind not in ("poisson", "gamma") or wl.trace is not None:
        return SessionRamp()
    weights = [share * cl.multi_turn.turns_mean for share, cl in zip(wl.shares(), wl.classes, strict=True)]
    total = sum(weights)
    terms = []
    for weight, cl in zip(weights, wl.classes, strict=True):
        k = cl.multi_turn.turns_mean
        if k <= 1:
            continue
        latency = latency_s
        if latency is None:
            slo = cl.slo
            latency_ms = slo.ttft_ms + max(_length_stats(cl.output)[0] - 1.0, 0.0) * slo.tpot_ms
            latency = min(latency_ms, slo.e2e_ms or math.inf) / 1000.0
        mean_s = k * (cl.multi_turn.think_time_s + latency)
        if mean_s > 0:
            terms.append((weight / total * (1.0 - 1.0 / k), mean_s))
    return SessionRamp(tuple(terms))
