"""A run with autoscaled pools over time: instance-hours, scale events, cold starts, and a timeline.

From the autoscalers' log (`engine.serving.autoscale.ScalingLog`) and the per-request columns:

- instance-seconds per pool: the billed stretches (request to stop), cut to any span;
- scale events: ups (instances requested, or taken back while draining) and downs (drains, and
  starts cancelled), each listed with its time and pool;
- cold starts: while any instance of an autoscaled pool is starting, arrivals meet a deployment
  short of what its autoscaler asked for; those that miss their SLO are counted apart;
- the timeline: per bin (a minute, coarser for long runs: at most `MAX_BINS`) of the run from 0 to
  the end of its drain, the window's requests arriving in it and those that met their SLO, each
  pool's mean billed instances and its instance-hours, and the chips' bill in it. Summed over
  its bins, the timeline gives the summary's totals (requests, met, instance-hours, the pools' bill).

Owned deployments (`cost.mode = "own"`) pay capital and hosting for every slot whether on or
off (the chips are theirs); only rent follows the instances billed.

Any run whose window spans `MIN_BINS` minutes or more, autoscaled or not, also has an `OverTime`
(`over_time`, built when a result's tables are laid out, `engine.serving.tables`): the same bins
with each pool's busy fraction and its power drawn, the SLO attainment the classes' percentiles
ask for, and the autoscalers' decisions when there are any. It is not part of the summary, so a
fixed deployment's summary is the same as before it existed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from engine.costmodel import power
from engine.serving.ceiling import due_s

if TYPE_CHECKING:
    from engine.scenario.resolve import Resolved
    from engine.serving.autoscale import ScalingLog

BIN_S = 60.0
"""The timeline's bin: a minute."""
MAX_BINS = 1500
"""At most this many bins (a longer run's bins are whole minutes, as many as it takes)."""
MIN_BINS = 5
"""A run's window must span this many bins (five minutes) to have an `OverTime`: fewer points say
nothing a run's totals do not."""
UPS = ("request", "undrain")
DOWNS = ("drain", "cancel")


class ScaledPool(TypedDict):
    """One autoscaled pool over the run."""

    instance_hours: float
    """Billed instance-hours, from each instance's request to its stop (or the run's end), h."""
    slots: int
    """The most instances it may have (the pool's count)."""
    min_instances: int
    """The fewest instances it may have."""
    peak_instances: int
    """The most instances billed at once."""
    cold_start_s: float
    """From request to serving: start-up + weights / load bandwidth + warm-up (+ a reconfigurable
    chip's reconfig_s), s."""
    capacity_rps: float
    """Requests per second one instance serves within the tightest TTFT and TPOT targets (cost model)."""


class Timeline(TypedDict):
    """Per bin of the run (bin_s wide; the last one may be shorter)."""

    bin_s: float
    """Width of a bin: a minute, or whole minutes for a run of more than `MAX_BINS` minutes, s."""
    t_s: list[float]
    """Each bin's start, s."""
    requests: list[int]
    """Window requests arriving in the bin."""
    met: list[int]
    """Of them, those that met their SLO."""
    slo_attainment: list[float | None]
    """met / requests (None for a bin without requests)."""
    instances: dict[str, list[float]]
    """Per pool: mean instances billed over the bin (fixed pools: their count)."""
    instance_hours: dict[str, list[float]]
    """Per pool: instance-hours billed in the bin."""
    usd: list[float]
    """The chips' rent in the bin (every pool; cache tiers not included), $."""


class AutoscaleSummary(TypedDict):
    """What the autoscalers did and what it cost (runs with an autoscaled pool only)."""

    pools: dict[str, ScaledPool]
    """Per autoscaled pool (by name)."""
    scale_ups: int
    """Instances requested or taken back while draining."""
    scale_downs: int
    """Instances drained or cancelled while starting."""
    events: list[tuple[float, str, str]]
    """(time s, pool, action): request, ready, cancel, drain, undrain, stop."""
    requests_during_cold_start: int
    """Window requests that arrived while an instance of an autoscaled pool was starting."""
    misses_during_cold_start: int
    """Of them, those that missed their SLO."""
    timeline: Timeline
    """Per minute of the run: requests, SLO attainment, instances per pool, the bill."""


def billed_seconds(log: ScalingLog, pool: int, lo: float, hi: float) -> float:
    """Instance-seconds a pool was billed within [lo, hi)."""
    return sum(max(0.0, min(b, hi) - max(a, lo)) for _, p, a, b in log.billed if p == pool)


def billed_per_bin(log: ScalingLog, pool: int, edges: np.ndarray) -> np.ndarray:
    """Instance-seconds a pool was billed in each bin between consecutive `edges`."""
    lo, hi = edges[:-1], edges[1:]
    out = np.zeros(len(lo))
    for _, p, a, b in log.billed:
        if p == pool:
            out += np.clip(np.minimum(b, hi) - np.maximum(a, lo), 0.0, None)
    return out


def starting_spans(log: ScalingLog) -> list[tuple[float, float]]:
    """The stretches during which some instance was starting (requested, not yet ready or cancelled)."""
    opened: dict[int, float] = {}
    spans: list[tuple[float, float]] = []
    for t, _, action, srv in log.events:
        if action == "request":
            opened[srv] = t
        elif action in ("ready", "cancel") and srv in opened:
            spans.append((opened.pop(srv), t))
    spans += [(a, math.inf) for a in opened.values()]
    return spans


def bin_edges(end_s: float, window_end_s: float | None = None) -> np.ndarray:
    """The timeline's bin edges from 0 to `end_s`: minutes (whole minutes, at most `MAX_BINS` of them),
    and an edge where the window ends (`window_end_s`) when it falls inside one, so that no bin holds
    both the window's last seconds and the drain's: a window of 5.5 minutes drew its last half-minute's
    arrivals spread over the drain's bin too (a review)."""
    width = BIN_S * max(1, math.ceil(end_s / BIN_S / MAX_BINS))
    edges = np.arange(0.0, end_s, width)
    edges = np.append(edges, end_s) if len(edges) else np.array([0.0, max(end_s, 1e-9)])
    if (
        window_end_s is not None
        and edges[0] < window_end_s < edges[-1]
        and not np.isclose(edges, window_end_s).any()
    ):
        edges = np.sort(np.append(edges, window_end_s))
    return edges


def _pool_rate_usd_s(resolved: Resolved, pool: int) -> float:
    p = resolved.pools[pool]
    return p.instance.chips * p.hardware.usd_per_hour / 3600.0


def _per_bin(times: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """How many of `times` fall in each bin of `edges` (the last bin closed, as np.histogram's)."""
    return np.histogram(times, bins=edges)[0] if len(times) else np.zeros(len(edges) - 1, dtype=np.int64)


def timeline(
    resolved: Resolved,
    log: ScalingLog | None,
    arrival: np.ndarray,
    met: np.ndarray,
    end_s: float,
    window_end_s: float | None = None,
) -> Timeline:
    """Per-bin requests, SLO attainment, instances and bill (`arrival`, `met`: the window's requests;
    `log`: the autoscalers', None for a fixed deployment; `window_end_s`: `bin_edges`' split)."""
    edges = bin_edges(end_s, window_end_s)
    widths = np.diff(edges)
    counts = _per_bin(arrival, edges)
    # a request arriving exactly at the end still belongs in the last bin (histogram closes it too)
    hits = _per_bin(arrival[met], edges)
    instances: dict[str, list[float]] = {}
    hours: dict[str, list[float]] = {}
    usd = np.zeros(len(widths))
    for p in resolved.pools:
        if log is not None and p.index in log.slots:
            secs = billed_per_bin(log, p.index, edges)
        else:
            secs = widths * p.spec.count
        instances[p.spec.name] = (secs / widths).tolist()
        hours[p.spec.name] = (secs / 3600.0).tolist()
        usd += secs * _pool_rate_usd_s(resolved, p.index)
    return {
        "bin_s": float(widths.max()),  # (not the first: a bin may end early where the window does)
        "t_s": edges[:-1].tolist(),
        "requests": counts.astype(int).tolist(),
        "met": hits.astype(int).tolist(),
        "slo_attainment": [float(h / c) if c else None for h, c in zip(hits, counts, strict=True)],
        "instances": instances,
        "instance_hours": hours,
        "usd": usd.tolist(),
    }


def _peak(log: ScalingLog, pool: int) -> int:
    steps = sorted(
        [(a, 1) for _, p, a, _ in log.billed if p == pool]
        + [(b, -1) for _, p, _, b in log.billed if p == pool]
    )
    now = most = 0
    for _, d in steps:
        now += d
        most = max(most, now)
    return most


def _due(columns: dict[str, Any]) -> np.ndarray:
    """When each request fell due (`ceiling.due_s`): the demand per minute is what was offered, not
    what a client's ceiling let through."""
    return np.asarray(due_s(np.asarray(columns["arrival_s"], dtype=float), columns.get("client_wait_s")))


def autoscale_summary(
    resolved: Resolved, log: ScalingLog, columns: dict[str, Any], mask: np.ndarray, end_s: float
) -> AutoscaleSummary:
    """The summary's `autoscale` section."""
    arrival = _due(columns)[mask]
    met = np.asarray(columns["met_slo"])[mask].astype(bool)
    spans = starting_spans(log)
    cold = np.zeros(len(arrival), dtype=bool)
    for a, b in spans:
        cold |= (arrival >= a) & (arrival < b)
    pools: dict[str, ScaledPool] = {}
    for p in resolved.pools:
        spec = p.spec.autoscale
        if spec is None:
            continue
        pools[p.spec.name] = {
            "instance_hours": billed_seconds(log, p.index, 0.0, math.inf) / 3600.0,
            "slots": p.spec.count,
            "min_instances": spec.min_instances,
            "peak_instances": _peak(log, p.index),
            "cold_start_s": log.cold_start_s[p.index],
            "capacity_rps": log.capacity_rps[p.index],
        }
    names = [p.spec.name for p in resolved.pools]
    return {
        "pools": pools,
        "scale_ups": sum(1 for e in log.events if e[2] in UPS),
        "scale_downs": sum(1 for e in log.events if e[2] in DOWNS),
        "events": [(t, names[p], action) for t, p, action, _ in log.events],
        "requests_during_cold_start": int(np.count_nonzero(cold)),
        "misses_during_cold_start": int(np.count_nonzero(cold & ~met)),
        "timeline": timeline(resolved, log, arrival, met, end_s),
    }


def pool_bill_usd(resolved: Resolved, log: ScalingLog | None, pool: int, hours: float) -> float:
    """A pool's rent over the run: its billed instance-hours when it autoscales, else every instance all along."""
    p = resolved.pools[pool]
    if log is None or pool not in log.slots:
        return p.usd_per_hour * hours
    return billed_seconds(log, pool, 0.0, math.inf) * _pool_rate_usd_s(resolved, pool)


def on_instances(log: ScalingLog | None, count: int, pool: int, lo: float, hi: float) -> float:
    """Mean instances of a pool on over [lo, hi): billed ones when it autoscales, else its count."""
    if log is None or pool not in log.slots or hi <= lo:
        return float(count)
    return billed_seconds(log, pool, lo, hi) / (hi - lo)


class OverTime(TypedDict):
    """A run per bin of its timeline, any deployment (what the Results page's "Over time" panel draws)."""

    bin_s: float
    """Width of a bin (a minute, or whole minutes for a long run), s."""
    t_s: list[float]
    """Each bin's start, s."""
    requests: list[int]
    """Window requests arriving in the bin."""
    arrived: list[int]
    """Every request arriving in the bin, a warm-up's too: the demand the instances billed meet (the chart
    of instances read 0 requests a minute through agentic-cache's warm-up while they were busy: a review)."""
    slo_attainment: list[float | None]
    """Of them, the share that met their SLO (None for a bin without requests)."""
    target: float
    """The attainment the classes' SLO percentiles ask for: each window request's class percentile, averaged."""
    instances: dict[str, list[float]]
    """Per pool: mean instances on (billed) over the bin (a fixed pool: its count)."""
    instance_hours: dict[str, float]
    """Per pool: instance-hours billed over the run."""
    busy: dict[str, list[float]]
    """Per pool: the fraction of its instances' time on spent running iterations, over the bin."""
    power_kw: dict[str, list[float]]
    """Per pool: mean power its chips drew over the bin (`engine.costmodel.power`), kW."""
    events: list[tuple[float, str, str]]
    """The autoscalers' decisions (time s, pool, action), as the summary's `autoscale.events` (fixed pools: none)."""
    end_s: float
    """The run's end, where the last bin ends (it may be shorter than the others), s."""
    window_end_s: float
    """Where the measured window ends, s: an open loop's duration, after which the run drains (no new
    arrivals, the last requests finish: the simulation's end, not the load's); a whole run's end."""


def attainment_target(resolved: Resolved, classes: np.ndarray) -> float:
    """The SLO attainment the classes ask for: the mean of each request's class percentile (`classes`: names).

    A class passes when its percentile of TTFT and of TPOT is within target, so about that share of
    its requests meet their SLO when it just passes; below it, a minute's attainment is short of
    what the SLO asks, above it there is room.
    """
    pct = {c.name: c.slo.percentile / 100.0 for c in resolved.scenario.workload.classes}
    if len(classes) == 0:
        return float(np.mean(list(pct.values())))
    return float(np.mean([pct.get(str(c), 0.0) for c in classes]))


def _pool_energy_j(resolved: Resolved, pool: int, on_s: np.ndarray, c: dict[str, np.ndarray]) -> np.ndarray:
    """A pool's chips' energy per bin (J), from its instance-seconds on and the iterations' integrals `c`,
    as the summary's energy takes it over the whole run (`power.run_energy_j`), a power cap's clock and
    limit included."""
    p = resolved.pools[pool]
    inst = p.instance
    busy, moved, flops = np.diff(c["busy"]), np.diff(c["bytes"]), np.diff(c["flops"])
    return np.array(
        [
            power.run_energy_j(
                inst.hardware,
                chips=inst.chips,
                span_s=float(on_s[b]),
                busy_chip_s=float(busy[b]) * inst.chips,
                bytes_moved=float(moved[b]),
                flops=float(flops[b]),
                clock=inst.clock,
                limit_w=p.power_limit.limit_w if p.power_limit is not None else None,
            )
            for b in range(len(on_s))
        ]
    )


def over_time(
    resolved: Resolved,
    log: ScalingLog | None,
    columns: dict[str, Any],
    mask: np.ndarray,
    end_s: float,
    integrals: dict[int, dict[str, np.ndarray]],
    window_end_s: float,
) -> OverTime:
    """The run per bin of `bin_edges(end_s, window_end_s)`: `integrals` are `metrics.pool_series` at
    those edges; the window ends at `window_end_s` (the drain follows it)."""
    due = _due(columns)
    arrival = due[mask]
    met = np.asarray(columns["met_slo"])[mask].astype(bool)
    tl = timeline(resolved, log, arrival, met, end_s, window_end_s)
    edges = bin_edges(end_s, window_end_s)
    widths = np.diff(edges)
    arrived = _per_bin(due, edges)
    busy: dict[str, list[float]] = {}
    kw: dict[str, list[float]] = {}
    for p in resolved.pools:
        on_s = np.asarray(tl["instance_hours"][p.spec.name]) * 3600.0
        c = integrals[p.index]
        busy_s = np.diff(c["busy"])
        busy[p.spec.name] = np.clip(
            np.divide(busy_s, on_s, out=np.zeros_like(busy_s), where=on_s > 0), 0, 1
        ).tolist()
        kw[p.spec.name] = (_pool_energy_j(resolved, p.index, on_s, c) / widths / 1e3).tolist()
    names = [p.spec.name for p in resolved.pools]
    return {
        "bin_s": tl["bin_s"],
        "t_s": tl["t_s"],
        "requests": tl["requests"],
        "arrived": arrived.astype(int).tolist(),
        "slo_attainment": tl["slo_attainment"],
        "target": attainment_target(resolved, np.asarray(columns["class"])[mask]),
        "instances": tl["instances"],
        "instance_hours": {k: float(sum(v)) for k, v in tl["instance_hours"].items()},
        "busy": busy,
        "power_kw": kw,
        "events": [(t, names[p], action) for t, p, action, _ in log.events] if log is not None else [],
        "end_s": float(end_s),
        "window_end_s": float(min(window_end_s, end_s)),
    }
