"""Saturation: whether a run's queue grows through its window (offered load above what it sustains).

A run whose arrivals outpace what its deployment serves never reaches a steady state: its queue
grows for as long as it runs, so its latency percentiles are set by the run's length (run twice
as long and the p99 TTFT roughly doubles) and say nothing about the deployment. Such a run is
*unsustainable* (docs/definitions.md, docs/metrics.md), and its summary says by how much it falls short.

The test reads the run's records, numpy only. The queue is the number of requests that have
arrived (fallen due at the client, where a ceiling on requests in flight holds some there) and not
yet had their first token (a rejected or failed request leaves it when it
arrives, or at its first token if it had one). It counts a prompt waiting on an instance, one
being prefilled, and in a split deployment one waiting for decode memory or its KV transfer: the
first token is delivered once the decode instance holds the cache. Requests that are decoding
are not queued: a running batch that fills up is a deployment reaching its steady state, which
can take longer than a long answer, not a backlog.

The queue is sampled at `SAMPLES` evenly spaced times over the second half of the window (the
first half lets the batches fill and the queue settle) and a straight line fitted by least
squares. The run is unsustainable when the line rises by

- at least `TREND_SDS` times the queue's scatter around it (a trend, not a burst or a wander: a
  sustainable queue near capacity rises and falls, an overloaded one rises throughout),
- at least `MIN_GROWTH_REQUESTS` requests (a handful of requests is no backlog), and
- at least `MIN_SHORTFALL_SHARE` of the offered rate (a queue that gains one request in a
  hundred arrivals is too close to call),

and the queue grew before that half and never drains in it: its least value there is at least
`ONSET_SHARE` of its rise (for a steady rise, one that began before 40% of the window), and it
never falls from a peak by `DRAIN_SHARE` of its rise. A queue that grows through the window has
gained much of its backlog by the middle (all of it that the batches' filling, about one answer's
length, leaves: a 120 s window at 1.4 times the load sustained starts its rise near a third of the
way in); one that empties in the second half and fills again is a burst (a load at 97% of what the
deployment sustains, with bursty arrivals, does that), or a load that only outgrew the deployment
late in the window, too late to tell from a burst. A queue that passes every test but the onset's
is said as still rising (`judged`, the summary's ``queue_rising``) rather than left unsaid: an
overload whose rise accelerates (batches grow, steps slow) can start slowly enough to fail the
onset in a short window (an H200 pool at 30 req/s of 2,048-token prompts over 120 s: least 40
against a rise of 222) and pass it over a longer one.

The slope is the shortfall: requests per second that arrive and are not taken up, the offered
rate (arrivals per second over the same half window) minus the rate the deployment sustains.
The queue is before the first token, so TTFT and E2E grow with it; a token's pace once decoding
need not (`steady`): each latency of ``tpot`` and ``max_tbt`` is level when, in every class, the p90
of the requests that arrived in the last third of the half window is within `STEADY_RISE` above
that of those that arrived in its first third (at least `STEADY_MIN_REQUESTS` in each, else it
cannot be told and counts as growing: a preempted request that queues again behind a growing
backlog, for one, makes it grow), and the window's figure at each of `STEADY_PERCENTILES` and at
each class's SLO percentile is within `STEADY_RISE` of the half window's, each where the half
window holds `STEADY_TAIL_REQUESTS` beyond it (a start that decodes at another pace than the
saturated one makes the window's figure depend on its length: chat-colocated at 80 req/s reads a
TPOT p99 of 569 ms over 120 s and 386 ms over 360 s); ``tbt`` (every gap between tokens) is level
when both are.

A backlog can also grow where the queue's rule does not see it (`decoding_shortfall`, the second
rule). A decode pool whose memory holds every request it is handed forms no queue: it batches them
all, each step takes longer as the batch grows, and the tokens emitted per second level off below
those offered, so TPOT and E2E grow with the run's length while nothing queues (decode-asic at 24
req/s: TPOT p90 427 ms against 24 ms at 16). And once its memory fills, the backlog moves on into
the queue, too late in the window for the queue's onset test. A run the first rule does not mark
is unsustainable when

- the requests in the system (arrived and not completed; a rejected or failed one leaves at its
  first token, or on arrival without one) pass the queue's trend, least-rise and drain tests over
  the same half window (not the onset's: requests in the system never settle near none, a steady
  load keeps its batches full),
- the tokens the batches emit per second fall short of the decode tokens offered per second over
  the half window (each admitted arrival's answer less its first token, which its prefill gives)
  by at least `DECODING_SHORTFALL_SHARE` and `DECODING_SHORTFALL_SES` standard errors of that
  offer (`_tokens`: the arrivals' count wanders as their gaps do, the answers' lengths as they
  do), in the half window's first third and in its last: behind from the start of that half, not
  a late burst,
- and the emission has levelled off: it gains at most `EMISSION_GAIN` of the offer from the first
  third to the last, and the gap left in the last third is at least `CLOSING` times that gain.
  Batches still filling gain on the offer (portfolio-chat-batch's long batch answers fill for
  minutes, and keep up over 1,200 s), and a shortfall read while they fill is too large.

Its shortfall is the offered rate's share that the emission leaves undone (the slope of the
requests in the system counts batches still filling too). Where the queue does not rise, the mark
says the backlog is among the requests decoding (``backlog: "decoding"``) and TTFT is tested for
level like the decode latencies (a split deployment's first token comes from its prefill pool and
may not grow). A load within about 3% of what the batches sustain can go unmarked (decode-asic at
22 req/s over 1,200 s, 2% short there).

A run that neither rule marks may still stand at its capacity: its queue before the first token
never falls below `MIN_GROWTH_REQUESTS` requests, nor below `STANDING_S` seconds of arrivals,
anywhere in the half window (`_standing`, the summary's ``at_capacity``). A deployment that keeps
up with a little to spare empties its queue again and again (every preset at its own load falls to
none); one that never does has no headroom: its queue wanders without a trend it can be told by
(chat-disaggregated at 30 req/s over 600 s: 293 requests at the least, a rise of 45 against a
scatter of 73), its latencies are set by how far the wander went (p90 TTFT 17.5 s over 600 s,
27.6 s over 3,600 s: a review), and a little more load makes it unsustainable (31 req/s is). Said,
with what stood, not marked: no latency is hidden, but no plan or capacity search counts it as
passing.

Offline batches and closed loops are never unsustainable in this sense (`metrics.whole_run`):
a batch is all present at t = 0 and measured to its makespan, and a closed loop's clients wait
for their answers, so it cannot overrun the deployment however slow it is.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from engine.scenario.model import Scenario
from engine.serving.ceiling import due_s
from engine.serving.ledger import FAILED, REJECTED, SEGMENT_COLUMNS, Records
from engine.serving.metrics import whole_run
from engine.serving.summary import Rising, Shortfall, Standing

SAMPLES = 256
"""Times at which the queue is sampled over the second half of the window."""
TREND_SDS = 4.0
"""The rise over the half window, in standard deviations of the queue around the fitted line."""
MIN_GROWTH_REQUESTS = 10.0
"""The least rise over the half window, in requests, that counts as a backlog."""
MIN_SHORTFALL_SHARE = 0.01
"""The least shortfall, as a share of the offered rate, that counts."""
ONSET_SHARE = 0.2
"""The queue's least value over the half window, as a share of its rise there, that says the rise
began before that half (a steady rise from 40% of the window or earlier)."""
STANDING_S = 1.0
"""A queue that never falls below this many seconds of arrivals (nor `MIN_GROWTH_REQUESTS`) through the
half window stands at the deployment's capacity (`_standing`): requests being prefilled count in the
queue too, and a second of arrivals is more than the prefills under way hold at any preset's own load
(each preset's queue falls to none)."""
DRAIN_SHARE = 0.5
"""The largest fall from a running peak over the half window, as a share of its rise there, that
says the queue drained (a burst) rather than grew."""


STEADY_PERCENTILES = (90.0, 99.0)
"""The percentiles of a decode latency compared between the window and its second half (`steady`):
those the pages show."""
STEADY_TAIL_REQUESTS = 3
"""Requests a class's half window needs beyond a percentile for that percentile to be compared
(`steady`): 300 for a p99, 3,000 for a p99.9; over fewer it is about their largest, noise."""
STEADY_RISE = 0.1
"""For a decode latency that does not grow (`steady`): the largest rise of its p90 from the half
window's first third of arrivals to its last, and the largest gap between the window's figure and
the half window's."""
STEADY_MIN_REQUESTS = 30
"""Requests each third of the half window needs, per class, to tell a level latency (`steady`)."""
DECODE_KINDS = ("tpot", "max_tbt")
"""The per-request latencies that may stay level while the queue before the first token grows."""
DECODING_SHORTFALL_SHARE = 0.03
"""For a backlog of requests decoding (`decoding_shortfall`): the least shortfall of the tokens the
batches emit per second, as a share of those offered, that says they fall behind (5% until the
standard error counted the arrivals' own wander: 3% marks decode-asic at 22 req/s over 2,400 s, 4.8%
short there, and no run of 270 swept nor of 35 that keep up more)."""
DECODING_SHORTFALL_SES = 3.0
"""... and in standard errors of the tokens offered per second (answers' lengths are heavy-tailed: a
half window of portfolio-chat-batch's 600 s offers 7% more tokens a second than its 1,200 s does)."""
EMISSION_GAIN = 0.05
"""For the second rule: the most the tokens emitted per second may gain from the half window's first
third to its last, as a share of those offered, for the batches to have levelled off (a 120 s window
of 2,048-token prompts on H200s gains 12% while its batches fill, its emission then 42% of the offer
where it levels at 83%: a shortfall read from it would be three times the one it settles at)."""
CLOSING = 4.0
"""For the second rule: batches still filling gain on the tokens offered; they are behind when the
gap left in the half window's last third is at least this many times what they gained from its
first third (at that pace they would not close it within a window and a third; the overloads
measured leave five times or more what they gain, moe-deepseek-dp-ep's 3,000-token answers at
10 req/s 5.7 times)."""


Trend = tuple[float, float, float, float, float]
"""`queue_trend`'s figures: offered rate, slope in req/s, then in requests: scatter around the fitted
line, least value, and largest fall from a running peak."""


def queue_trend(scenario: Scenario, rec: Records, at_server: bool = False) -> Trend | None:
    """(offered rate, queue slope in req/s, then in requests: scatter around the fitted line, least
    queue, and largest fall from a running peak) over the second half of the window; None for a
    whole-run load or a half window without arrivals. `at_server`: the queue the servers see (from
    each request's send), leaving out what a client's ceiling holds back."""
    sent = rec.arrival_s
    # with a ceiling on requests in flight, a request is offered when it falls due at the client
    # and queued from then (`engine.serving.ceiling`): the backlog waits there instead
    arrival = sent if at_server else due_s(sent, rec.client_wait_s)
    return _trend(
        scenario, arrival, np.where(np.isfinite(rec.first_token_s), rec.first_token_s, _gone_s(rec))
    )


def _gone_s(rec: Records) -> np.ndarray:
    """When each request left without an answer: a failed one when it failed (`Records.failed_s`), a
    rejected one on arrival (it is rejected there, or after a wait the records do not keep)."""
    if rec.failed_s is None:
        return rec.arrival_s
    return np.where(np.isnan(rec.failed_s), rec.arrival_s, rec.failed_s)


def _trend(scenario: Scenario, arrival: np.ndarray, left: np.ndarray) -> Trend | None:
    """`queue_trend`'s figures for the requests that arrived (`arrival`) and have not yet `left`."""
    if whole_run(scenario):
        return None
    start = scenario.warmup_s + (scenario.duration_s - scenario.warmup_s) / 2.0
    half_s = scenario.duration_s - start
    offered = int(np.count_nonzero((arrival >= start) & (arrival < scenario.duration_s)))
    if half_s <= 0 or offered == 0:
        return None
    times = np.linspace(start, scenario.duration_s, SAMPLES)
    queued = np.searchsorted(np.sort(arrival), times, side="right") - np.searchsorted(
        np.sort(left), times, side="right"
    )
    x = times - times.mean()
    y = queued - queued.mean()
    slope = float((x * y).sum() / (x * x).sum())
    scatter = float(np.sqrt(np.mean((y - slope * x) ** 2)))
    drained = float((np.maximum.accumulate(queued) - queued).max())
    return offered / half_s, slope, scatter, float(queued.min()), drained


def decoding_shortfall(scenario: Scenario, rec: Records, queue: Trend | None) -> Shortfall | None:
    """The run's shortfall when the requests in it pile up while its batches emit fewer tokens than
    are offered (the second rule above; `queue`: `queue_trend`'s, as `judged` has it), else None.
    Its backlog is ``decoding`` where the queue before the first token does not rise."""
    if queue is None:
        return None
    arrival = due_s(rec.arrival_s, rec.client_wait_s)
    system = _in_system(scenario, rec, arrival)
    if system is None or not _rises(scenario, system)[0]:
        return None
    offered, se, first, last = _tokens(scenario, rec, arrival)
    least = max(DECODING_SHORTFALL_SHARE * offered, DECODING_SHORTFALL_SES * se, 1e-9)
    if offered - first < least or offered - last < least:  # behind from the half window's start
        return None
    gain = last - first
    if gain > EMISSION_GAIN * offered or offered - last < CLOSING * gain:  # still filling
        return None
    # the requests not taken up: the offered rate's share that the batches' emission leaves undone
    # (the slope of the requests in the system counts batches still filling too, and the queue's
    # misses what piles up among the requests decoding before memory fills)
    offered_rps = queue[0]
    slope_rps = offered_rps * (offered - last) / offered
    queued = _rises(scenario, queue)[0]
    short: Shortfall = {
        "shortfall_rps": slope_rps,
        "offered_rps": offered_rps,
        "sustained_rps": offered_rps - slope_rps,
    }
    if not queued:
        short["backlog"] = "decoding"
    if rec.client_wait_s is not None:
        at_server = _in_system(scenario, rec, rec.arrival_s)
        if at_server is not None and not _rises(scenario, at_server)[0]:
            short["at_client"] = True
    return short


def _in_system(scenario: Scenario, rec: Records, arrival: np.ndarray) -> Trend | None:
    """`_trend` of the requests in the system: arrived (`arrival`) and not completed (a rejected one
    leaves at its first token, or on arrival without one; a failed one when it failed)."""
    left = np.where(np.isfinite(rec.completion_s), rec.completion_s, rec.first_token_s)
    if rec.failed_s is not None:
        left = np.where(np.isnan(rec.failed_s), left, rec.failed_s)
    # what is left unknown never failed and never answered: rejected, it left on arrival
    return _trend(scenario, arrival, np.where(np.isnan(left), rec.arrival_s, left))


def _tokens(scenario: Scenario, rec: Records, arrival: np.ndarray) -> tuple[float, float, float, float]:
    """Over the second half of the window, per second: the decode tokens offered (each admitted
    arrival's answer but its first token, which its prefill gives; a failed request's answer is never
    asked of the batches) and their standard error, then
    the tokens the batches emitted in the half window's first third and in its last.

    The error is a compound count's, how far the half window's offer wanders from the load's own:
    the arrivals' count varies as their gaps do (its variance about the squared coefficient of
    variation of the gaps times the count: one for Poisson arrivals, more for bursty ones) and each
    answer's length as the answers' lengths do."""
    start = scenario.warmup_s + (scenario.duration_s - scenario.warmup_s) / 2.0
    half_s = scenario.duration_s - start
    mine = (arrival >= start) & (arrival < scenario.duration_s) & ~np.isin(rec.outcome, (REJECTED, FAILED))
    tokens = np.maximum(rec.output_tokens[mine].astype(float) - 1.0, 0.0)
    se = 0.0
    if len(tokens) > 2:
        gaps = np.diff(np.sort(arrival[mine]))
        cv2 = float(gaps.var() / gaps.mean() ** 2) if gaps.mean() > 0 else 1.0
        se = float(np.sqrt(len(tokens) * (cv2 * tokens.mean() ** 2 + tokens.var()))) / half_s
    seg = rec.segments
    t0, t1 = seg[:, _COL["t0"]], seg[:, _COL["t1"]]
    emitted = seg[:, _COL["decodes"]] * seg[:, _COL["steps"]]  # spread evenly over the segment

    def rate(a: float, b: float) -> float:
        overlap = np.clip(np.minimum(t1, b) - np.maximum(t0, a), 0.0, None)
        return float((emitted * overlap / np.maximum(t1 - t0, 1e-12)).sum()) / (b - a)

    third = half_s / 3.0
    return (
        float(tokens.sum()) / half_s,
        se,
        rate(start, start + third),
        rate(scenario.duration_s - third, scenario.duration_s),
    )


_COL = {name: i for i, name in enumerate(SEGMENT_COLUMNS)}


def unsustainable(scenario: Scenario, rec: Records) -> Shortfall | None:
    """The run's shortfall when its backlog grows through the window (either rule above), else None."""
    return judged(scenario, rec)[0]


def judged(
    scenario: Scenario, rec: Records, fixed_s: float = 0.0
) -> tuple[Shortfall | None, Rising | None, Standing | None]:
    """The run's shortfall (`unsustainable`) and, for a run without one, whether its queue was still
    rising at the window's end (`Rising`: every test of the rule above holds but the onset's), and
    whether it stood at its capacity (`Standing`, for a run with neither; `fixed_s`: a latency every
    request pays before its first token beyond its iterations, `Resolved.first_token_s`).

    Under a client's ceiling on requests in flight the backlog may wait at the client alone: the
    servers' own queue (from the sends) then stays bounded, and so do the latencies timed from the
    send; the mark says so (``at_client``) and the pages print those latencies as they are.

    A lost pool that failed the requests it held empties the queue (each leaves it when it fails,
    `Records.failed_s`): the rule then judges the span after the last such loss ended, where the
    queue starts afresh, or where that span is short the span before the first (`after_losses`). A
    loss that failed nothing (its requests handed on, or a class spilling to another pool) leaves a
    smaller deployment whose backlog starts at the loss: where the window shows none, the span after
    the last loss is judged too (portfolio-decode-loss over 600 s, losing its chat decode pool for
    good at 300 s, read 'still rising' on one seed of four where the others, with the same growth
    after the loss, were marked: a review)."""
    own = scenario
    scenario = after_losses(scenario, rec)
    trend = queue_trend(scenario, rec)
    short = _shortfall(scenario, trend)
    if short is None:
        behind = decoding_shortfall(scenario, rec, trend)
        if behind is not None:
            _span_said(behind, own, scenario)
            return behind, None, None
        if scenario != own:
            # judged over a span beside a loss: a queue still rising or standing is said of the window, as
            # its words read (they said 'in the window's second half' of another span: two reviews), and the
            # window is judged whole first (it read Rising where the window falls 4.2 req/s behind)
            scenario, trend = own, queue_trend(own, rec)
            if (whole := _shortfall(own, trend)) is not None:
                return whole, None, None
        elif (span := _after_last_loss(own, rec)) is not None and (late := _marked(span, rec)) is not None:
            _span_said(late, own, span)  # a loss that failed nothing: the smaller deployment after it
            late["handed_on"] = True
            return late, None, None
        rising = _rising(scenario, trend)
        return (
            None,
            rising,
            (_standing(trend, fixed_s + _way_in_s(scenario, rec)) if rising is None else None),
        )
    at_server = None if rec.client_wait_s is None else queue_trend(scenario, rec, True)
    if at_server is not None and _shortfall(scenario, at_server) is None:
        short["at_client"] = True
    _span_said(short, own, scenario)
    return short, None, None


def _span_said(mark: Shortfall, own: Scenario, judged: Scenario) -> None:
    """A mark judged over a span other than the window says which, with the rates (`after_losses`)."""
    if judged.warmup_s != own.warmup_s:
        mark["after_loss_s"] = judged.warmup_s
    if judged.duration_s != own.duration_s:  # the loss's time (the span ends the instant before it)
        mark["before_loss_s"] = round(judged.duration_s, 6)


AFTER_LOSS_SHARE = 1.0 / 3.0
"""The least share of the measured window the span after a loss (or before one) must keep to be
judged instead of it."""


def after_losses(scenario: Scenario, rec: Records) -> Scenario:
    """The scenario the rule judges: its own, or where instances lost in the window failed requests, one
    whose measured window starts when the last such loss ended (a loss for good: when it began), if that
    leaves at least `AFTER_LOSS_SHARE` of the window. prefill-loss-nofallback at 40 req/s, 2.5 times
    what it sustains: the loss at 240 s failed the 4,155 requests queued, the queue restarted from none
    and read 'began rising within that half, too late' over 600 s beside a TTFT p90 of 166 s printed
    bare (a review). Where the span after the last loss is shorter (a pool back only after the window),
    the window ends instead when the first such loss began, if the span before it is long enough: the
    same preset over 300 s at 60 req/s read no mark at all, its queue emptied at 240 s."""
    if whole_run(scenario) or not np.any(rec.outcome == FAILED):
        return scenario
    if (span := _after_last_loss(scenario, rec)) is not None:
        return span
    window = scenario.duration_s - scenario.warmup_s
    first = min((at for at, _ in _losses(scenario)), default=None)
    if first is not None and first - scenario.warmup_s >= AFTER_LOSS_SHARE * window:
        # up to the instant before it failed them
        return scenario.model_copy(update={"duration_s": float(np.nextafter(first, -np.inf))})
    return scenario


def _losses(scenario: Scenario) -> list[tuple[float, float]]:
    """(start, end) of each loss of instances in the measured window (a loss for good ends as it starts)."""
    return [
        (f.at_s, f.at_s + (f.duration_s or 0.0))
        for f in scenario.faults
        if f.kind == "instances"
        and scenario.warmup_s <= f.at_s < scenario.duration_s  # (one at warmup_s: a review)
    ]


def _after_last_loss(scenario: Scenario, rec: Records) -> Scenario | None:
    """The scenario measured from the end of its last loss of instances, where that span keeps
    `AFTER_LOSS_SHARE` of the window and something arriving in it is served (a pool lost for good with no
    fallback served nothing after it, and that empty span read no mark beside a TTFT p90 of 56 s: a
    review); None otherwise or without a loss."""
    losses = _losses(scenario)
    if whole_run(scenario) or not losses:
        return None
    start = max(end for _, end in losses)
    window = scenario.duration_s - scenario.warmup_s
    after = (rec.arrival_s >= start) & (rec.arrival_s < scenario.duration_s)
    if scenario.duration_s - start >= AFTER_LOSS_SHARE * window and np.any(
        np.isfinite(rec.first_token_s[after])
    ):
        return scenario.model_copy(update={"warmup_s": start})
    return None


def _marked(scenario: Scenario, rec: Records) -> Shortfall | None:
    """The shortfall either rule finds over a scenario's window (the client's share of it unsaid)."""
    trend = queue_trend(scenario, rec)
    return _shortfall(scenario, trend) or decoding_shortfall(scenario, rec, trend)


def _standing(trend: Trend | None, fixed_s: float) -> Standing | None:
    """The queue's floor over the half window where it never fell below `MIN_GROWTH_REQUESTS` nor
    `STANDING_S` of arrivals (the deployment at its capacity), else None. The requests every one holds
    there however light the load, for `fixed_s` (a first-token latency, the way in from the user), are
    not a queue and are taken off first: a 5 s first-token latency at 4 req/s kept 20 in it, and
    read as at capacity with 3% of the compute busy (a review)."""
    if trend is None:
        return None
    offered_rps = trend[0]
    least = trend[3] - offered_rps * fixed_s
    if least < max(MIN_GROWTH_REQUESTS, STANDING_S * offered_rps):
        return None
    return {"standing_requests": least, "standing_s": least / offered_rps, "offered_rps": offered_rps}


def _way_in_s(scenario: Scenario, rec: Records) -> float:
    """The mean time the requests of the half window took on their way in (`Records.network_s`: the
    user's round trip, uplink and gateway), 0 without a network that costs."""
    if rec.network_s is None:
        return 0.0
    start = scenario.warmup_s + (scenario.duration_s - scenario.warmup_s) / 2.0
    mine = (rec.arrival_s >= start) & (rec.arrival_s < scenario.duration_s)
    return float(rec.network_s[mine].mean()) if mine.any() else 0.0


def _rises(scenario: Scenario, trend: Trend) -> tuple[bool, float]:
    """Whether the queue rises through the half window without draining, onset aside (the rule
    above), and by how many requests its fitted line rises there."""
    offered_rps, slope_rps, scatter, _, drained = trend
    growth = slope_rps * (scenario.duration_s - scenario.warmup_s) / 2.0
    rises = (
        growth >= max(TREND_SDS * scatter, MIN_GROWTH_REQUESTS)
        and slope_rps >= MIN_SHORTFALL_SHARE * offered_rps
        and drained < DRAIN_SHARE * growth  # else it drained and filled again: a burst
    )
    return rises, growth


def _rising(scenario: Scenario, trend: Trend | None) -> Rising | None:
    """A queue that rose through the half window without draining but began rising in it: an
    overload that began late in the window, or a burst at its end; too late to tell which."""
    if trend is None:
        return None
    rises, growth = _rises(scenario, trend)
    if not rises:
        return None
    return {"rise_rps": trend[1], "risen_requests": growth, "offered_rps": trend[0]}


def _shortfall(scenario: Scenario, trend: Trend | None) -> Shortfall | None:
    if trend is None:
        return None
    offered_rps, slope_rps, _, least, _ = trend
    rises, growth = _rises(scenario, trend)
    if not rises or least < ONSET_SHARE * growth:  # it began in this half: a burst, or too late to tell
        return None
    return {
        "shortfall_rps": slope_rps,
        "offered_rps": offered_rps,
        "sustained_rps": offered_rps - slope_rps,
    }


def steady(
    scenario: Scenario,
    arrival_s: np.ndarray,
    cls: np.ndarray,
    figures: dict[str, np.ndarray],
    window: np.ndarray | None = None,
    slo_percentiles: np.ndarray | None = None,
) -> list[str]:
    """The latency kinds of an unsustainable run that stay level (the rule above): `figures` holds
    each request's ``tpot`` and ``max_tbt`` in seconds (NaN where it has none; with a backlog
    decoding its ``ttft`` too, tested the same way), `cls` its class
    index, `arrival_s` its arrival, `window` the requests the summary counts (`metrics.measured_mask`;
    None: those arriving in [warmup_s, duration_s)), `slo_percentiles` each class's SLO percentile (by
    class index: the class's figure the pages show is at it; None: p90 and p99 only)."""
    start = scenario.warmup_s + (scenario.duration_s - scenario.warmup_s) / 2.0
    third = (scenario.duration_s - start) / 3.0
    if window is None:
        window = (arrival_s >= scenario.warmup_s) & (arrival_s < scenario.duration_s)
    parts = (
        (arrival_s >= start) & (arrival_s < start + third),  # the half window's first third
        (arrival_s >= scenario.duration_s - third) & (arrival_s < scenario.duration_s),  # its last
        (arrival_s >= start) & (arrival_s < scenario.duration_s),  # the half window
        window,  # what the summary's figures are over
    )
    pcts = (lambda c: ()) if slo_percentiles is None else (lambda c: (float(slo_percentiles[c]),))
    level = [kind for kind in figures if _level(figures[kind], cls, parts, pcts)]
    return level + (["tbt"] if set(DECODE_KINDS) <= set(level) else [])


def _level(
    values: np.ndarray,
    cls: np.ndarray,
    parts: tuple[np.ndarray, ...],
    pcts: Callable[[int], tuple[float, ...]],
) -> bool:
    """Per class: the last third's p90 no more than `STEADY_RISE` above the first third's, and the
    window's p90, p99 and the class's SLO percentile (`pcts`) within `STEADY_RISE` of the half
    window's (a start that decodes slower or faster than the saturated pace makes the window's
    figure depend on its length); each only where the half window holds `STEADY_TAIL_REQUESTS`
    beyond it (over fewer it is about the largest, noise: a third's p99 of 30 requests called a
    level TPOT growing in one run of six, a review)."""
    ok = np.isfinite(values)
    for c in np.unique(cls[parts[-1] & ok]):  # every class the window counts
        mine = ok & (cls == c)
        early, late, second, whole = (values[mine & m] for m in parts)
        if min(len(early), len(late)) < STEADY_MIN_REQUESTS:
            return False
        if np.percentile(late, 90.0) > (1.0 + STEADY_RISE) * np.percentile(early, 90.0):
            return False
        for q in (*STEADY_PERCENTILES, *pcts(int(c))):
            if len(second) * (1.0 - q / 100.0) < STEADY_TAIL_REQUESTS:
                continue
            h, w = float(np.percentile(second, q)), float(np.percentile(whole, q))
            if abs(w - h) > STEADY_RISE * h:
                return False
    return True
