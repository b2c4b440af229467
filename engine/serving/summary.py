"""The shape of a run's summary: the JSON `python -m engine run --json` prints, as TypedDicts.

`metrics.summary` builds a `Summary` (its sections from `engine.serving.breakdowns`); every engine
function that reads one takes it typed, so mypy checks each key read. The JSON shape is the contract
(CLI JSON, exports, golden files), hence TypedDicts and not dataclasses: a summary is a plain dict.
Each field's docstring gives its meaning and unit; `tools/summary_fields.py` lists them all in docs/metrics.md.
"""

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

from engine.calibration.trust import CalibrationDoc
from engine.serving.timeline import AutoscaleSummary

__all__ = [
    "Cache",
    "CalibrationDoc",
    "ClassSummary",
    "Client",
    "Cost",
    "Edge",
    "EdgeTtft",
    "Energy",
    "KvTransferMs",
    "LatencyKind",
    "LatencyMs",
    "LatencyStats",
    "Percentiles",
    "PoolPower",
    "PoolUtilization",
    "PowerCap",
    "RequestCounts",
    "Rising",
    "Scheduler",
    "Shortfall",
    "Standing",
    "Summary",
    "TokenRates",
    "WayIn",
    "latency_shortfall",
    "rate_span_s",
    "shortfall_rps",
]


class Percentiles(TypedDict):
    """Percentiles of a latency, in ms (None when no request has the figure)."""

    p50: float | None
    """Median, ms."""
    p90: float | None
    """90th percentile, ms."""
    p99: float | None
    """99th percentile, ms."""


class LatencyStats(TypedDict):
    """Percentiles and mean of a latency over the window's completed requests, in ms."""

    p50: float | None
    """Median, ms (None when no request has the figure)."""
    p90: float | None
    """90th percentile, ms."""
    p99: float | None
    """99th percentile, ms."""
    mean: float | None
    """Mean, ms (None when no request has the figure)."""


class RequestCounts(TypedDict):
    """The window's requests by outcome."""

    total: int
    """Requests arriving in the window (every request for a whole-run load)."""
    completed: int
    """Of those, completed."""
    rejected: int
    """Of those, turned away at arrival (see `rejected_by_reason`)."""
    failed: int
    """Of those, admitted but not finished (e.g. their instance lost under the fail policy)."""
    rejected_by_reason: dict[str, int]
    """Rejected requests counted by reason, most first."""
    failed_by_reason: dict[str, int]
    """Failed requests counted by reason, most first."""


class LatencyMs(TypedDict):
    """Latency distributions, ms."""

    ttft: LatencyStats
    """Time to first token (queueing and KV transfer included), per completed request."""
    tpot: LatencyStats
    """Time per output token after the first, per completed request with more than one token."""
    e2e: LatencyStats
    """Arrival to completion, per completed request."""
    max_tbt: LatencyStats
    """Each completed request's largest gap between two of its tokens."""
    tbt: LatencyStats
    """Gap before every token decoded in the window, token-weighted (Mooncake's TBT)."""


class TokenRates(TypedDict):
    """Tokens of completed window requests per second of the window."""

    input: float
    """Prompt tokens per second."""
    output: float
    """Output tokens per second."""


class ClassSummary(TypedDict):
    """One request class over the window, judged at its SLO percentile."""

    requests: int
    """The class's requests in the window."""
    completed: int
    """Of those, completed."""
    rejected: int
    """Of those, rejected."""
    failed: int
    """Of those, failed."""
    percentile: float
    """The class's SLO percentile (e.g. 99)."""
    ttft_ms_at_percentile: float | None
    """TTFT at that percentile, ms; rejected and failed requests count as infinitely late (None: infinite)."""
    tpot_ms_at_percentile: float | None
    """TPOT at that percentile, ms (None: infinite or no request)."""
    max_tbt_ms_at_percentile: float | None
    """Largest token gap at that percentile, ms (None: infinite or no request)."""
    e2e_ms_at_percentile: NotRequired[float | None]
    """End-to-end latency at that percentile, ms, where the class sets an E2E target (None: infinite or no
    request; absent without a target): `run` said a class failing on the largest gap and E2E failed on the
    gap alone (a review)."""
    slo_attainment: float | None
    """Share of the class's window requests that met their SLO, 0-1 (None: no request in the window)."""
    passes: bool
    """True when TTFT, TPOT (and the largest token gap and the end-to-end latency, where targeted) at
    the percentile are within target, or when the class has no request in the window (nothing to judge,
    nothing missed)."""


class PoolUtilization(TypedDict):
    """One pool's time-weighted utilisation over the window, each 0-1."""

    compute: float
    """Achieved / peak FLOP/s."""
    bandwidth: float
    """Achieved / peak memory bytes/s (HBM; a chip with an SRAM tier: its SRAM's peak)."""
    busy: float
    """Share of instance-time spent iterating."""
    kv_memory: float
    """KV tokens the requests hold / KV capacity (a block several requests read from the HBM cache counts once)."""


class Cost(TypedDict):
    """The bill: every chip from t = 0 to the end of the drain, idle or not."""

    mode: Literal["rent", "own"]
    """'rent' (hourly prices) or 'own' (capital, hosting, energy)."""
    basis: str
    """The cost basis in words."""
    usd_per_hour: float
    """The deployment's cost per hour, USD/h."""
    usd_total: float
    """The whole run's bill, USD."""
    usd_per_request: float | None
    """Bill / completed requests, USD (None when none completed)."""
    usd_per_million_output_tokens: float | None
    """Bill per million output tokens of completed requests, USD (None when none)."""
    usd_per_request_by_part: dict[str, float | None]
    """`usd_by_part` per completed request, USD (each None when none completed)."""
    usd_by_part: dict[str, float]
    """The bill by role, USD, adding up to `usd_total`: prefill (a colocated pool's split by its prefill
    time), decode, kv_transfer (the sending chips' time while KV crosses the link), cache (host and
    pooled tiers at their GB-hour price)."""
    usd_by_pool: NotRequired[dict[str, float]]
    """Each pool's bill, USD (a portfolio of more than one pool only)."""
    assumed_prices: NotRequired[dict[str, str]]
    """The chips billed at a price the catalog assumes rather than cites, by id, each with that price
    ('$3.20/h' rented, '$30,000' to buy, owned): a bill to check against a quote (absent where none is)."""
    list_prices: NotRequired[dict[str, str]]
    """The rented chips billed at their cloud's list price (TPUs, Inferentia2), by id, each with that price,
    where the GPUs are priced on the neocloud basis, several times below their own list (absent where none is)."""
    prefill_share_by_pool: NotRequired[dict[str, float]]
    """Each colocated pool's share of its busy time spent on prefill, by which its bill is split
    between prefill and decode (a deployment with a colocated pool beside other pools only)."""
    usd_by_kind: NotRequired[dict[str, float]]
    """Owned cost only: the bill by kind, USD, adding up to `usd_total`: capital (depreciated purchase),
    energy (drawn, with PUE), hosting (space, cooling, operations), cache, and porting (the one-off porting
    of a chip's stack, amortised like capital) only where a pool states a maturity or the basis months."""
    usd_per_request_by_kind: NotRequired[dict[str, float | None]]
    """Owned cost only: `usd_by_kind` per completed request, USD (each None when none completed)."""


class Energy(TypedDict):
    """Energy over the whole run (`engine.costmodel.power`)."""

    joules: float
    """Every chip's energy, J (with the designs reconfigurable chips loaded: `reconfig_j`)."""
    joules_per_output_token: float | None
    """Energy per output token of completed requests, J (None when none)."""
    mean_kw: NotRequired[float | None]
    """Every chip's mean power over the run (its drain included): `joules` over `drain_end_s`, kW; the
    chips alone, idle included, no servers or cooling (what a site's power budget is set against; an
    uncapped site showed none: a review)."""


class Cache(TypedDict):
    """The prefix cache over the window."""

    enabled: bool
    """True when the scenario enables the prefix cache."""
    hit_rate: float
    """Prompt tokens found in cache / prompt tokens, 0-1, over the requests not rejected (a prompt turned
    away is never looked up)."""
    hit_rate_by_tier: dict[str, float]
    """The hit rate by tier (hbm, host, pooled), 0-1, over the requests not rejected."""
    hit_rate_by_class: dict[str, float]
    """The hit rate by request class, 0-1, over the class's requests not rejected."""
    bytes_by_tier: dict[str, float]
    """KV bytes served from each tier, bytes."""
    prefill_flops_saved: float
    """Prefill compute the hits saved, FLOPs."""
    load_ms_mean: float
    """Mean time bringing host or pooled hits into HBM before the prefill, per window request not rejected,
    ms."""
    kv_transfer_tokens_saved: int
    """Prompt tokens whose KV the decode instance already held, so they did not cross the link, tokens."""


class Scheduler(TypedDict):
    """What the scheduler and the disruptions did over the run (counts unless said)."""

    preemptions: int
    """Requests evicted from a running batch."""
    recomputed_tokens: int
    """Tokens computed again after preemption, tokens."""
    swapped_bytes: float
    """KV swapped out to host memory, bytes."""
    retried: int
    """Retries: requests started again after their instance failed (each retry counts)."""
    role_switches: int
    """Role switches the elastic role controller started."""
    role_drains: int
    """Instances marked draining (to switch role, or to go home after a spike)."""
    role_restores: int
    """Instances sent back to their pool's role after a spike."""
    link_faults: int
    """KV link faults that struck."""
    fallbacks: int
    """Fallbacks: decode instances turned colocated (whole requests) with no prefill instance up."""
    degraded_arrivals: int
    """New arrivals while a degrade trigger held (each shed or capped by its class)."""
    capped_requests: int
    """Requests whose output was capped while degraded."""
    capped_tokens: int
    """Output tokens cut by those caps, tokens."""


class KvTransferMs(TypedDict):
    """KV transfer time of completed window requests, ms."""

    mean: float | None
    """Mean, ms (None when none completed, or the deployment is colocated: it moves no KV cache)."""
    p99: float | None
    """99th percentile, ms (None when no transfer, or the deployment is colocated)."""


class EdgeTtft(TypedDict):
    """TTFT of completed window requests by where they were served, ms."""

    edge: Percentiles
    """Served at the edge site."""
    offloaded: Percentiles
    """Offloaded to the cloud."""


class Edge(TypedDict):
    """The edge site over the window (a deployment with an edge site only)."""

    requests: int
    """The window's requests."""
    local: int
    """Served at the edge."""
    local_completed: int
    """Served at the edge and completed."""
    offloaded: int
    """Offloaded to the cloud."""
    offloaded_by_reason: dict[str, int]
    """Offloaded, by reason (rule, saturated, power)."""
    local_share: float
    """local / requests, 0-1."""
    offloaded_share: float
    """offloaded / requests, 0-1."""
    ttft_ms: EdgeTtft
    """TTFT by site, ms."""
    power_budget_w: float
    """The site's power budget, W."""
    site_idle_w: float
    """The site's idle power, W."""
    peak_site_power_w: float
    """The site's peak power over the recorded iterations, W."""
    offload_latency_ms: float
    """The added latency of offloading a request, ms."""


class PoolPower(TypedDict):
    """One capped pool's power limit, the clock it imposes, and what the pool drew."""

    cap_kw: float
    """The pool's cap: each chip's limit times its chips (at its most instances), kW."""
    chip_limit_w: float
    """Each chip's power limit, W."""
    clock_factor: float
    """Core clock under the limit over nominal, 0-1: compute runs this much slower (`engine.costmodel.power_cap`)."""
    bandwidth_factor: float
    """Achievable HBM bandwidth under the limit over nominal, 0-1."""
    mean_kw: float
    """The pool's mean power over the run (energy / the run's length), kW; never above `cap_kw`."""


class PowerCap(TypedDict):
    """Power caps and what was drawn under them (a scenario with a cap only)."""

    site_cap_kw: float | None
    """The site's cap on its data-centre chips, kW (None: pool caps only)."""
    site_mean_kw: float
    """The data-centre chips' mean power over the run, kW."""
    pools: dict[str, PoolPower]
    """Per capped pool (by name); a pool whose limit is at or above its TDP is not listed."""


class WayIn(TypedDict):
    """What the window's completed requests paid on their way in (a scenario whose network or
    control plane costs time only): the network to the first serving site and the decision."""

    user_rtt_ms: float
    """The scenario's round trip from the user to the first serving site, ms."""
    network_ms_mean: float | None
    """Mean time on the network (uplink, gateway, round trip, an offload's trip), ms."""
    control_plane_ms_mean: float | None
    """Mean routing/scheduling decision and KV-index lookup time, ms."""
    ttft_ms_mean: float | None
    """Mean TTFT of the same requests, ms (the shares' denominator)."""
    network_share_of_ttft: float | None
    """Network time over TTFT, summed over the requests, 0-1."""
    control_plane_share_of_ttft: float | None
    """Control-plane time over TTFT, summed over the requests, 0-1."""


class Client(TypedDict):
    """The client's ceiling on requests in flight (`workload.arrival.max_in_flight` set only): the
    window's requests (those sent in it) that waited for a slot."""

    max_in_flight: int
    """The ceiling, requests."""
    held: int
    """Window requests that waited at the client for a slot before being sent."""
    wait_ms_mean: float | None
    """Their mean wait, ms (None when none waited): not in their TTFT or E2E, which count from the send."""
    wait_ms_max: float | None
    """The longest wait, ms (None when none waited)."""


class Shortfall(TypedDict):
    """An unsustainable run's mark: rates over the window's second half (`engine.serving.saturation`)."""

    shortfall_rps: float
    """How fast the backlog grows (requests offered and not taken up per second), req/s."""
    offered_rps: float
    """The offered arrival rate, req/s."""
    sustained_rps: float
    """offered - shortfall: what the deployment kept up with, req/s."""
    rates_over_s: NotRequired[float]
    """Seconds the run's rates (throughput, goodput) are over: from the window's start until its
    requests completed, where the window alone would read them as the rate offered, s."""
    at_client: NotRequired[bool]
    """Under a client's ceiling on requests in flight (`workload.arrival.max_in_flight`): True when the
    backlog waits at the client alone (the servers' queue does not grow), so the latencies, timed
    from the send, do not grow with the run's length (absent otherwise)."""
    steady: NotRequired[list[str]]
    """The latency kinds (of ``tpot``, ``max_tbt``, ``tbt``; with a backlog decoding, ``ttft`` too) that
    stay level through the window's second half although the backlog grows
    (`engine.serving.saturation.steady`): a backlog before the first token leaves a token's pace once
    decoding free to stay level, one decoding leaves the first token free. E2E always grows, and TTFT
    with a backlog before the first token; absent (a mark written before this key existed): every
    latency grows."""
    backlog: NotRequired[Literal["decoding"]]
    """Where the backlog grows: absent, in the queue before the first token; ``decoding``, among the
    requests decoding (the batches grow and each step takes longer, while no queue forms: a decode
    pool whose memory holds every request; `engine.serving.saturation.decoding_shortfall`)."""
    after_loss_s: NotRequired[float]
    """Where instances lost in the window failed the requests they held, the time the last such loss
    ended: the rates and the rule are over the second half of the span after it (the loss emptied the
    queue the rule reads; `saturation.after_losses`)."""
    handed_on: NotRequired[bool]
    """Beside ``after_loss_s``, where the loss failed no request (they were handed on, or a class spilled
    to another pool) and the window showed no backlog: the span after it, the smaller deployment the
    loss left, falls behind (`saturation.judged`)."""
    before_loss_s: NotRequired[float]
    """Where the span after such a loss is too short to judge (a pool back only after the window),
    when the first of them began: the rates and the rule are over the second half of the span before
    it (`saturation.after_losses`)."""


class Rising(TypedDict):
    """A queue still rising at the window's end, too late in it to be called unsustainable: it rose
    through the window's second half without draining, but began rising in that half
    (`engine.serving.saturation.judged`)."""

    rise_rps: float
    """How fast the queue rose over the window's second half, req/s."""
    risen_requests: float
    """By how many requests it rose there (the fitted line's rise)."""
    offered_rps: float
    """The offered arrival rate over the same half window, req/s."""


class Standing(TypedDict):
    """A queue that never emptied through the window's second half: the deployment at its capacity,
    with no trend to call it unsustainable by (`engine.serving.saturation.judged`)."""

    standing_requests: float
    """The fewest requests waiting for their first token at any time of the window's second half."""
    standing_s: float
    """That floor in seconds of arrivals at the offered rate."""
    offered_rps: float
    """The offered arrival rate over the same half window, req/s."""


class Summary(TypedDict):
    """One run's summary figures (docs/metrics.md defines them)."""

    requests: RequestCounts
    """The window's requests by outcome."""
    latency_ms: LatencyMs
    """Latency distributions, ms."""
    slo_attainment: float | None
    """Window requests that met their SLO / window requests (rejected and failed count as misses), 0-1
    (None: no request in the window, nothing to judge)."""
    goodput_rps: float
    """Requests that met their SLO per second of the window (of an unsustainable run: those served from
    the window's start until the window's last request completed, per second of that time), req/s."""
    goodput_output_tokens_per_s: float
    """Output tokens of the requests that met their SLO per second of the same span, tokens/s."""
    throughput_rps: float
    """Completed window requests per second of the window (of an unsustainable run: every request
    completed from the window's start until the window's last one did, per second of that time), req/s."""
    throughput_tokens_per_s: TokenRates
    """Token throughput of completed window requests over the same span, tokens/s."""
    classes: dict[str, ClassSummary]
    """Per request class (by name)."""
    utilization: dict[str, PoolUtilization]
    """Per pool (by name), over the window."""
    calibration: dict[str, CalibrationDoc]
    """Per pool (by name): the chip's calibration under its stack."""
    cost: Cost
    """The bill."""
    energy: Energy
    """Energy over the whole run."""
    window_s: float
    """The measured window's length (the makespan for a whole-run load), s."""
    drain_end_s: float
    """The end of the billed run: when the last request ended, and for an open loop not before the
    window's end (`duration_s`), s."""
    cache: Cache
    """The prefix cache."""
    scheduler: Scheduler
    """Scheduler and disruption counts."""
    kv_transfer_ms: KvTransferMs
    """KV transfer time per request, ms: from the prefill's end to the KV cache landing on the decode
    instance, the wait for the link included (the bill's `kv_transfer` part counts the crossing alone)."""
    edge: NotRequired[Edge]
    """The edge site (a deployment with an edge site only)."""
    way_in: NotRequired[WayIn]
    """The network and control plane on the way in (only when either costs time)."""
    client: NotRequired[Client]
    """The client's ceiling on requests in flight (a scenario that sets one only)."""
    power_cap: NotRequired[PowerCap]
    """Power caps, the clock they impose and the power drawn (a scenario with a cap only)."""
    autoscale: NotRequired[AutoscaleSummary]
    """What the autoscalers did, cold starts, and the timeline (a deployment with an autoscaled pool only)."""
    unsustainable: Shortfall | None
    """None when the run reaches a steady state, else by how much its backlog grows."""
    queue_rising: NotRequired[Rising]
    """A run not marked unsustainable whose queue was still rising at the window's end, too late in
    the window to tell an overload from a burst (absent otherwise): a longer window tells."""
    at_capacity: NotRequired[Standing]
    """A run neither marked nor rising whose queue never emptied through the window's second half:
    no headroom, its latencies set by how far the queue wandered (absent otherwise)."""


def shortfall_rps(summary: Mapping[str, Any]) -> float | None:
    """How fast an unsustainable run's backlog grows, req/s (None when the run keeps up).

    Any summary-like document: a run's `Summary`, its ``to_json()``, a replications mean."""
    mark = summary.get("unsustainable")
    return float(mark["shortfall_rps"]) if mark else None


def rate_span_s(summary: Mapping[str, Any]) -> float:
    """Seconds a summary's rates (throughput, goodput) are over: the window, or an unsustainable
    run's `rates_over_s`; goodput_rps x this is the count of requests it counts as met."""
    mark = summary.get("unsustainable") or {}
    return float(mark.get("rates_over_s") or summary.get("window_s") or 0.0)


LatencyKind = Literal["ttft", "tpot", "e2e", "max_tbt", "tbt"]
"""The latency kinds of `LatencyMs`."""


def latency_shortfall(summary: Mapping[str, Any], kind: LatencyKind | None = None) -> float | None:
    """The shortfall that makes a run's latency percentiles grow with its length: `shortfall_rps`,
    but None where a client's ceiling holds the backlog (``at_client``): the latencies, timed from
    the send, stay bounded while the wait before it grows (`Summary.client`). Given a `kind`, None
    too where that latency stays level while the backlog grows (`Shortfall.steady`); without one,
    the shortfall of the latencies that grow (E2E always does, and TTFT with a backlog before the
    first token)."""
    mark = summary.get("unsustainable")
    if not mark or mark.get("at_client") or (kind is not None and kind in mark.get("steady", ())):
        return None
    return float(mark["shortfall_rps"])


AtPercentile = Literal[
    "ttft_ms_at_percentile", "tpot_ms_at_percentile", "max_tbt_ms_at_percentile", "e2e_ms_at_percentile"
]


def unbounded(c: Mapping[str, Any], key: AtPercentile) -> bool:
    """Whether a class's figure at its SLO percentile is infinite (None where some of its requests
    did not complete, `within_target`) rather than a figure no request has."""
    return c[key] is None and c["rejected"] + c["failed"] > 0


def classes_pass(summary: Mapping[str, Any]) -> bool:
    """Every class of a run passes its SLO (`ClassSummary.passes`); a summary without classes (a mean
    over seeds) has nothing to miss."""
    return all(c.get("passes", True) for c in summary.get("classes", {}).values())


def within_target(c: Mapping[str, Any], key: AtPercentile, target_ms: float) -> bool:
    """Whether a class's figure at its SLO percentile (`ClassSummary`) is within `target_ms`.

    None stands for two things there: an infinite figure (the percentile fell on requests rejected
    or failed, which count as infinitely late) and no figure at all (no request of the class has
    one: single-token answers have no TPOT). A class whose every request completed cannot have an
    infinite one, and one with a request that did not has a figure at every percentile (that
    request's infinity), so None is infinite, and missed, exactly where some request did not
    complete. A class with no request in the window has nothing to miss (`ClassSummary.passes`)."""
    v = c[key]
    if v is not None:
        return float(v) <= target_ms
    if c.get("requests") == 0:
        return True
    return key != "ttft_ms_at_percentile" and not unbounded(c, key)
