"""From what happened to what it means: latencies, SLOs, goodput, utilisation, cost, energy.

Definitions (docs/metrics.md repeats them):

- Window: requests that arrive in [warmup_s, duration_s) are measured; the run drains until they
  all end. Offline and closed-loop runs measure every request; their window is the makespan.
- TTFT = first token - arrival (queueing and KV transfer included); TPOT = (completion - first
  token) / (output tokens - 1), undefined for one-token outputs; E2E = completion - arrival.
- Gaps between tokens: `max_tbt` is each request's largest gap between two of its tokens (a
  decode step stalled by a prompt shows here, not in the mean TPOT); `tbt` is the distribution
  of the gap before every decoded token of the window (token-weighted, Mooncake's TBT).
- A request meets its SLO when it completed and its TTFT and TPOT (and E2E, if the class sets a
  deadline) are within target. `slo_attainment` = met / all requests in the window (rejected and
  failed ones count as misses); `goodput_rps` = met per second of the window. A class passes
  when its SLO percentile of TTFT and of TPOT is within target, rejected and failed requests
  counting as infinitely late.
- Utilisation per pool, time-weighted: `compute` = achieved / peak FLOP/s, `bandwidth` =
  achieved / peak HBM bytes/s, `busy` = fraction of time iterating, `kv_memory` = KV tokens
  held / KV capacity.
- Cost: every chip is billed at its price from t = 0 to the end of the drain, idle or not (an
  autoscaled pool's rented instances from request to stop, `engine.serving.timeline`); cache tiers
  at their GB-hour price. Per request = bill / completed requests.
- Energy: per chip, idle power all the time, plus while it iterates a fitted share of its
  dynamic range (TDP - idle) and a fitted energy per HBM byte and per FLOP, at most TDP
  (`engine.costmodel.power`, fitted to ML.ENERGY measurements).

All of it is numpy over the run's records and the per-request columns (`request_columns`): a
summary lays out no table, so ``python -m engine run --json`` never loads pandas.
`engine.serving.tables` lays the same columns out as the per-request table, and builds the time
series, when a result's tables are first read. Sums and means are taken as pandas takes them
(NaN skipped, the same pairwise sums), so the figures are those the tables give.
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

import numpy as np

from engine.costmodel import power
from engine.scenario.model import Scenario
from engine.scenario.resolve import Resolved
from engine.serving.breakdowns import cache_summary, class_summary, cost_summary, edge_summary, way_in_summary
from engine.serving.ceiling import due_s
from engine.serving.gaps import largest_gaps, token_gaps
from engine.serving.instance import RECONFIG_COUNTER
from engine.serving.ledger import (
    COMPLETED,
    FAILED,
    OUTCOMES,
    REJECTED,
    SEGMENT_COLUMNS,
    Records,
)
from engine.serving.stats import by_reason, latency_stats, nan_mean, percentile
from engine.serving.summary import (
    Client,
    Edge,
    Energy,
    LatencyMs,
    LatencyStats,
    PoolPower,
    PoolUtilization,
    PowerCap,
    Rising,
    Scheduler,
    Shortfall,
    Standing,
    Summary,
    WayIn,
)
from engine.serving.timeline import AutoscaleSummary, autoscale_summary, on_instances
from engine.serving.workload import Requests, whole_run


def request_columns(resolved: Resolved, reqs: Requests, rec: Records) -> dict[str, Any]:
    """One entry per column of the per-request table, in its order, `met_slo` last.

    Class, times, tokens, instances, outcome and latencies, as `engine.serving.tables`
    lays them out.
    """
    n = len(rec.outcome)
    sc = resolved.scenario
    names = np.array([c.name for c in sc.workload.classes])
    arr = rec.arrival_s
    out = rec.output_tokens  # as delivered: a request capped while degraded has its capped length
    ttft = rec.first_token_s - arr
    e2e = rec.completion_s - arr
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out > 1, (rec.completion_s - rec.first_token_s) / (out - 1), np.nan)
    tbt = largest_gaps(rec, out)
    return {
        "request": np.arange(n),
        "class": names[reqs.cls[:n]],
        "arrival_s": arr,
        "first_token_s": rec.first_token_s,
        "completion_s": rec.completion_s,
        "prompt_tokens": reqs.prompt_tokens[:n],
        "output_tokens": out,
        "capped_tokens": reqs.output_tokens[:n] - out,
        "prefill_instance": rec.prefill_instance,
        "decode_instance": rec.decode_instance,
        "kv_transfer_s": rec.transfer_s,
        "kv_wait_s": rec.transfer_wait_s,
        "outcome": [OUTCOMES[o] for o in rec.outcome.tolist()],  # Python ints: no numpy scalar each
        "cache_hit_tokens": rec.cache_hit_tokens.sum(axis=1),
        "retries": rec.retries,
        "preemptions": rec.preemptions,
        "reason": rec.reason,
        "ttft_s": ttft,
        "tpot_s": tpot,
        "e2e_s": e2e,
        "max_tbt_s": tbt,
        **({"site": np.array(rec.site)} if rec.site is not None else {}),  # with an edge site only
        **_way_in_columns(rec),
        # with a ceiling on requests in flight only: the wait at the client before the send
        **({"client_wait_s": rec.client_wait_s} if rec.client_wait_s is not None else {}),
        "met_slo": met_slo(resolved, reqs.cls[:n], rec.outcome, ttft, tpot, e2e, tbt),
    }


def met_slo(
    resolved: Resolved,
    cls: np.ndarray,
    outcome: np.ndarray,
    ttft: np.ndarray,
    tpot: np.ndarray,
    e2e: np.ndarray,
    tbt: np.ndarray | None = None,
) -> np.ndarray:
    """Per request: completed, and TTFT, TPOT (where defined), E2E and the largest gap between two
    tokens (where the class sets a TBT target) within its class's targets."""
    classes = resolved.scenario.workload.classes
    ttft_t = {c.name: c.slo.ttft_ms / 1e3 for c in classes}
    tpot_t = {c.name: c.slo.tpot_ms / 1e3 for c in classes}
    e2e_t = {c.name: (c.slo.e2e_ms / 1e3 if c.slo.e2e_ms else math.inf) for c in classes}
    tbt_t = {c.name: (c.slo.tbt_ms / 1e3 if c.slo.tbt_ms else math.inf) for c in classes}

    def target(by_class: dict[str, float]) -> np.ndarray:
        # each request's target, looked up by its class's name
        return np.array([by_class[c.name] for c in classes], dtype=float)[cls]

    ok = (outcome == COMPLETED) & (ttft <= target(ttft_t))
    ok &= np.isnan(tpot) | (tpot <= target(tpot_t))
    ok &= e2e <= target(e2e_t)
    if tbt is not None and any(c.slo.tbt_ms for c in classes):
        ok &= np.isnan(tbt) | (tbt <= target(tbt_t))
    return ok


def measured_mask(scenario: Scenario, table: Any) -> Any:
    """Mask of the requests the metrics count: those arriving in [warmup_s, duration_s).

    `table` is the per-request table (the mask is a Series) or its columns (an array). Under a
    client's ceiling on requests in flight a request arrives when it falls due (it was offered in
    the window even where the ceiling held it until after), though its latencies count from its send.
    """
    arrival = due_s(table["arrival_s"], table.get("client_wait_s"))
    inside = (arrival >= scenario.warmup_s) & (arrival < scenario.duration_s)
    return inside | whole_run(scenario)


def window(resolved: Resolved, table: Any, rec: Records) -> tuple[Any, float, float]:
    """(mask of measured requests, window start, window length in seconds)."""
    sc = resolved.scenario
    mask = measured_mask(sc, table)
    if whole_run(sc):
        return mask, 0.0, max(rec.end_s, 1e-9)
    return mask, sc.warmup_s, sc.duration_s - sc.warmup_s


_QUANTITIES = ("flops", "bytes", "prefill_s", "busy", "kv", "batch", "waiting")
"""What `pool_series` integrates: the iterations' amounts, and busy time and KV, batch and queue times seconds."""


def _integrals(seg: np.ndarray, rows: np.ndarray | None, at: np.ndarray) -> dict[str, np.ndarray]:
    """Per quantity, ∫ from 0 to each of `at` of the rate that spreads each iteration's amount
    uniformly over its [t0, t1]; `rows` (indices, ascending) selects the pool's iterations of `seg`
    (columns SEGMENT_COLUMNS; None: all of them).

    The columns are read one at a time and every quantity reuses the same two buffers, so a run
    of millions of iterations needs a few arrays of its length, not a copy of its records.
    """

    def col(name: str) -> np.ndarray:
        i = SEGMENT_COLUMNS.index(name)
        return seg[:, i] if rows is None else seg[rows, i]

    t0, t1 = col("t0"), col("t1")
    if len(t0) == 0:
        return {k: np.zeros_like(at) for k in _QUANTITIES}
    dt = t1 - t0
    dur = np.maximum(dt, 1e-12)
    times = np.concatenate([t0, t1])
    del t0, t1
    order = np.argsort(times, kind="stable")  # the same for every quantity: sorted once
    times = times[order]
    steps = np.diff(times)
    m = len(dt)
    spread, level = np.empty(2 * m), np.empty(2 * m)
    out = {}
    for key in _QUANTITIES:
        if key == "busy":
            amount = dt
        elif key in ("kv", "batch", "waiting"):  # levels held over the iteration: times its length
            amount = col({"kv": "kv_tokens"}.get(key, key)) * dt
        else:
            amount = col(key)
        np.divide(amount, dur, out=spread[:m])  # the rate, then its end: +rate at t0, -rate at t1
        np.negative(spread[:m], out=spread[m:])
        np.take(spread, order, out=level, mode="clip")
        np.cumsum(level, out=level)
        np.multiply(level[:-1], steps, out=spread[:-1])
        level[0] = 0.0  # the area under the level up to each time
        np.cumsum(spread[:-1], out=level[1:])
        out[key] = np.interp(at, times, level, left=0.0, right=level[-1])
    return out


def pool_series(resolved: Resolved, rec: Records, edges: np.ndarray) -> dict[int, dict[str, np.ndarray]]:
    """Per pool: the cumulative integrals of each quantity at `edges` (for bins and means).

    The quantities: FLOPs, bytes, prefill seconds, busy seconds, and KV tokens, batch size and
    queue depth times seconds.
    """
    seg = rec.segments
    server = SEGMENT_COLUMNS.index("server")
    pool_of = np.array([p for p, _, _ in rec.servers])
    row_pool = pool_of[seg[:, server].astype(int)] if len(seg) else None
    out: dict[int, dict[str, np.ndarray]] = {}
    for pool in resolved.pools:
        # the pool's rows by index: each column read by a mask would find them again (20 times slower)
        rows = np.flatnonzero(row_pool == pool.index) if row_pool is not None else None
        out[pool.index] = _integrals(seg, rows, edges)
    return out


def _utilisation_and_energy(
    resolved: Resolved, rec: Records, lo: float, span: float
) -> tuple[dict[str, PoolUtilization], dict[int, dict[str, np.ndarray]], float, dict[int, float]]:
    """(utilisation per pool over the window, integrals over the run, energy in J, energy by pool)."""
    # one pass over the iterations: integrals at 0, the window's start and end, and the drain's end
    series = pool_series(resolved, rec, np.array([0.0, lo, lo + span, max(rec.end_s, 1e-9)]))
    cum = {p: {k: v[1:3] for k, v in q.items()} for p, q in series.items()}
    cum_all = {p: {k: v[[0, 3]] for k, v in q.items()} for p, q in series.items()}
    util: dict[str, PoolUtilization] = {}
    energy_j = 0.0
    energy_by_pool: dict[int, float] = {}
    for pool in resolved.pools:
        c = cum[pool.index]
        inst = pool.instance
        # instances on (an autoscaled pool's billed ones, on average): over the window, over the run
        n = on_instances(rec.scaling, pool.spec.count, pool.index, lo, lo + span)
        n_run = on_instances(rec.scaling, pool.spec.count, pool.index, 0.0, max(rec.end_s, 1e-9))
        peak_f = inst.chips * inst.hardware.peak_flops(inst.weights) * n
        peak_b = inst.chips * inst.hardware.peak_memory_tb_s * 1e12 * n

        def d(key: str, c: dict[str, np.ndarray] = c) -> float:
            return float(c[key][1] - c[key][0])

        util[pool.spec.name] = {
            "compute": min(1.0, d("flops") / (peak_f * span)) if n > 0 else 0.0,
            "bandwidth": min(1.0, d("bytes") / (peak_b * span)) if n > 0 else 0.0,
            "busy": min(1.0, d("busy") / (n * span)) if n > 0 else 0.0,
            "kv_memory": min(1.0, d("kv") / (max(inst.kv_capacity_tokens, 1) * n * span)) if n > 0 else 0.0,
        }
        # energy over the whole run (engine.costmodel.power): idle power always, and while
        # iterating a fitted share of the dynamic range plus energy per byte and per FLOP moved.
        # While an instance iterates every chip of it works: its tp chips, each data-parallel
        # rank, and (micro-batches in flight) every pipeline stage; bubbles count as busy.
        ca = cum_all[pool.index]
        energy_by_pool[pool.index] = power.run_energy_j(
            inst.hardware,
            chips=inst.chips * pool.spec.count,
            span_s=max(rec.end_s, 1e-9) * (n_run / pool.spec.count if n_run != pool.spec.count else 1.0),
            busy_chip_s=float(ca["busy"][1]) * inst.chips,
            bytes_moved=float(ca["bytes"][1]),
            flops=float(ca["flops"][1]),
            clock=inst.clock,
            limit_w=pool.power_limit.limit_w if pool.power_limit is not None else None,
        )
        # reconfigurable chips: the energy of every design they loaded (`Server.reconfigure`)
        energy_by_pool[pool.index] += rec.counters.get(f"{RECONFIG_COUNTER}.{pool.index}", 0.0)
        energy_j += energy_by_pool[pool.index]
    return util, cum_all, energy_j, energy_by_pool


def scheduler_counts(counters: dict[str, float]) -> Scheduler:
    """What the scheduler and the disruptions did: preemptions, retries, role switches, fallbacks, degrading."""
    return {
        "preemptions": int(counters.get("preemptions", 0)),
        "recomputed_tokens": int(counters.get("recomputed_tokens", 0)),
        "swapped_bytes": float(counters.get("swapped_bytes", 0.0)),
        "retried": int(counters.get("retried", 0)),
        "role_switches": int(counters.get("role_switches", 0)),
        "role_drains": int(counters.get("role_drains", 0)),
        "role_restores": int(counters.get("role_restores", 0)),
        "link_faults": int(counters.get("link_faults", 0)),
        "fallbacks": int(counters.get("fallbacks", 0)),
        "degraded_arrivals": int(counters.get("degraded_arrivals", 0)),
        "capped_requests": int(counters.get("capped_requests", 0)),
        "capped_tokens": int(counters.get("capped_tokens", 0)),
    }


def _way_in_columns(rec: Records) -> dict[str, np.ndarray]:
    # network and control-plane time per request, when the scenario charges any (`way_in`)
    if rec.network_s is None or rec.control_s is None:
        return {}
    return {"network_s": rec.network_s, "control_s": rec.control_s}


class _WayInSection(TypedDict, total=False):
    way_in: WayIn


class _EdgeSection(TypedDict, total=False):
    edge: Edge


def _edge_section(
    resolved: Resolved, rec: Records, columns: dict[str, Any], mask: np.ndarray
) -> _EdgeSection:
    # the summary's `edge` key, with an edge site only
    return {"edge": edge_summary(resolved, rec, columns, mask)} if rec.site is not None else {}


def _way_in_section(resolved: Resolved, columns: dict[str, Any], done: np.ndarray) -> _WayInSection:
    # the summary's `way_in` key, when the scenario's network or control plane costs time
    return {"way_in": way_in_summary(resolved, columns, done)} if "network_s" in columns else {}


class _ClientSection(TypedDict, total=False):
    client: Client


def _client_section(resolved: Resolved, rec: Records, mask: np.ndarray) -> _ClientSection:
    # the summary's `client` key, with a ceiling on requests in flight only (`engine.serving.ceiling`)
    cap = resolved.scenario.workload.arrival.max_in_flight
    if rec.client_wait_s is None or cap is None:
        return {}
    waits = rec.client_wait_s[mask]
    waits = waits[waits > 0]
    held = len(waits) > 0
    return {
        "client": {
            "max_in_flight": cap,
            "held": len(waits),
            "wait_ms_mean": float(waits.mean() * 1e3) if held else None,
            "wait_ms_max": float(waits.max() * 1e3) if held else None,
        }
    }


class _AutoscaleSection(TypedDict, total=False):
    autoscale: AutoscaleSummary


def _autoscale_section(
    resolved: Resolved, rec: Records, columns: dict[str, Any], mask: np.ndarray
) -> _AutoscaleSection:
    # the summary's `autoscale` key, with an autoscaled pool only (other runs' summaries are unchanged)
    if rec.scaling is None:
        return {}
    return {"autoscale": autoscale_summary(resolved, rec.scaling, columns, mask, rec.end_s)}


class _PowerCapSection(TypedDict, total=False):
    power_cap: PowerCap


def _power_cap_section(
    resolved: Resolved, rec: Records, energy_by_pool: dict[int, float]
) -> _PowerCapSection:
    # the summary's `power_cap` key, with a cap only (other runs' summaries are unchanged)
    dep = resolved.scenario.deployment
    if dep.power_cap_kw is None and all(p.spec.power_cap_kw is None for p in resolved.pools):
        return {}
    run_s = max(rec.end_s, 1e-9)
    pools: dict[str, PoolPower] = {}
    for p in resolved.pools:
        if p.power_limit is not None:
            pools[p.spec.name] = {
                "cap_kw": p.power_limit.cap_kw,
                "chip_limit_w": p.power_limit.limit_w,
                "clock_factor": p.instance.clock,
                "bandwidth_factor": p.instance.bandwidth_scale,
                "mean_kw": energy_by_pool[p.index] / run_s / 1e3,
            }
    site = sum(energy_by_pool[p.index] for p in resolved.pools if p.spec.tier == "datacenter")
    return {
        "power_cap": {"site_cap_kw": dep.power_cap_kw, "site_mean_kw": site / run_s / 1e3, "pools": pools}
    }


def _rated(
    resolved: Resolved, rec: Records, done: np.ndarray, lo: float, span: float, short: Shortfall | None
) -> tuple[np.ndarray, float]:
    """(requests the rates count, seconds they are over): the window's completed requests over the
    window; for an unsustainable open loop, every request completed from the window's start until
    the last of the window's did, over that time. Its window's requests complete long after the
    window (under a client's ceiling, 9,692 due in a 600 s window took 92 minutes), and over the
    window alone they read as the rate offered, not the rate served; requests from before the window
    (a warm-up) that complete in that time count too, since the deployment served them then."""
    if short is None or whole_run(resolved.scenario) or not done.any():
        return done, span
    end = float(rec.completion_s[done].max())
    completed = rec.outcome == COMPLETED
    with np.errstate(invalid="ignore"):
        rated = completed & (rec.completion_s >= lo) & (rec.completion_s <= end)
    return rated, max(span, end - lo)


def _energy_section(energy_j: float, out_tokens: float, end_s: float) -> Energy:
    """The run's energy, per output token and as the chips' mean power over the run (`summary.Energy`)."""
    return {
        "joules": energy_j,
        "joules_per_output_token": energy_j / out_tokens if out_tokens else None,
        "mean_kw": energy_j / end_s / 1e3 if end_s > 0 else None,
    }


def summary(
    resolved: Resolved,
    rec: Records,
    columns: dict[str, Any],
    unsustainable: Shortfall | None,
    rising: Rising | None = None,
    standing: Standing | None = None,
) -> Summary:
    """The summary figures of one run (the JSON the CLI prints), from its `request_columns`; `unsustainable`,
    `rising` and `standing` as `engine.serving.saturation.judged` says them (None: not so)."""
    mask, lo, span = window(resolved, columns, rec)
    completed = rec.outcome == COMPLETED
    done = mask & completed
    n_win = int(np.count_nonzero(mask))

    def stats(col: str) -> LatencyStats:
        return latency_stats(columns[col][done] * 1e3)

    lat: LatencyMs = {
        "ttft": stats("ttft_s"),
        "tpot": stats("tpot_s"),
        "e2e": stats("e2e_s"),
        "max_tbt": stats("max_tbt_s"),
        "tbt": token_gaps(rec, lo, max(lo + span, rec.end_s) if whole_run(resolved.scenario) else lo + span),
    }
    met = int(np.count_nonzero(columns["met_slo"][mask]))
    n_done = int(np.count_nonzero(done))
    # utilisation over the window, energy over the run
    util, cum_all, energy_j, energy_by_pool = _utilisation_and_energy(resolved, rec, lo, span)
    out_tokens = float(columns["output_tokens"][completed].sum())
    transfer = columns["kv_transfer_s"][done]
    split = resolved.scenario.deployment.mode == "disaggregated"
    rated, rate_s = _rated(resolved, rec, done, lo, span, unsustainable)
    met_rated = rated & mask & columns["met_slo"]  # the window's only: a warm-up's read 0.13 req/s at 0%
    if unsustainable is not None:  # says what its rates are over
        unsustainable = {**unsustainable, "rates_over_s": rate_s}
    out: Summary = {
        "requests": {
            "total": n_win,
            "completed": int(np.count_nonzero(done)),
            "rejected": int(np.count_nonzero(mask & (rec.outcome == REJECTED))),
            "failed": int(np.count_nonzero(mask & (rec.outcome == FAILED))),
            "rejected_by_reason": by_reason(rec.reason, mask & (rec.outcome == REJECTED)),
            "failed_by_reason": by_reason(rec.reason, mask & (rec.outcome == FAILED)),
        },
        "latency_ms": lat,
        "slo_attainment": met / n_win if n_win else None,
        "goodput_rps": int(np.count_nonzero(met_rated)) / rate_s,
        "goodput_output_tokens_per_s": float(columns["output_tokens"][met_rated].sum()) / rate_s,
        "throughput_rps": int(np.count_nonzero(rated)) / rate_s,
        "throughput_tokens_per_s": {
            "input": float(columns["prompt_tokens"][rated].sum()) / rate_s,
            "output": float(columns["output_tokens"][rated].sum()) / rate_s,
        },
        "classes": class_summary(resolved, rec, columns, mask),
        "utilization": util,
        "calibration": {pool.spec.name: pool.calibration.as_dict() for pool in resolved.pools},
        "cost": cost_summary(resolved, rec, columns, cum_all, energy_by_pool),
        "energy": _energy_section(energy_j, out_tokens, rec.end_s),
        "window_s": span,
        "drain_end_s": rec.end_s,
        "cache": cache_summary(resolved, rec, columns, mask),
        "scheduler": scheduler_counts(rec.counters),
        # a colocated run moves no KV cache: none, not a transfer of 0 ms (docs/metrics.md)
        "kv_transfer_ms": {
            "mean": float(nan_mean(transfer) * 1e3) if n_done and split else None,
            "p99": percentile(transfer * 1e3, 99) if split else None,
        },
        **_edge_section(resolved, rec, columns, mask),
        **_way_in_section(resolved, columns, done),
        **_client_section(resolved, rec, mask),
        **_power_cap_section(resolved, rec, energy_by_pool),
        **_autoscale_section(resolved, rec, columns, mask),
        "unsustainable": unsustainable,
        **_rising_section(rising, standing),
    }
    return out


class _RisingSection(TypedDict, total=False):
    queue_rising: Rising
    at_capacity: Standing


def _rising_section(rising: Rising | None, standing: Standing | None) -> _RisingSection:
    # the summary's `queue_rising` key, for a queue still rising at the window's end, too late to tell,
    # and `at_capacity`, for one that never emptied
    out: _RisingSection = {}
    if rising is not None:
        out["queue_rising"] = rising
    if standing is not None:
        out["at_capacity"] = standing
    return out


__all__ = ["COMPLETED", "FAILED", "REJECTED", "measured_mask", "request_columns", "summary", "whole_run"]
