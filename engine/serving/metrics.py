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
- Cost: every chip is billed at its price from t = 0 to the end of the drain, idle or not;
  cache tiers at their GB-hour price. Per request = bill / completed requests.
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
from typing import Any

import numpy as np

from engine.costmodel import ownership, power
from engine.scenario.model import Scenario
from engine.scenario.resolve import Resolved
from engine.serving import edge
from engine.serving.cache import TIERS
from engine.serving.gaps import PERCENTILES, largest_gaps, token_gaps
from engine.serving.ledger import COMPLETED, FAILED, OUTCOMES, REJECTED, SEGMENT_COLUMNS, Records
from engine.serving.workload import Requests


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
        "outcome": [OUTCOMES[int(o)] for o in rec.outcome],
        "cache_hit_tokens": rec.cache_hit_tokens.sum(axis=1),
        "retries": rec.retries,
        "preemptions": rec.preemptions,
        "reason": rec.reason,
        "ttft_s": ttft,
        "tpot_s": tpot,
        "e2e_s": e2e,
        "max_tbt_s": tbt,
        **({"site": np.array(rec.site)} if rec.site is not None else {}),  # with an edge site only
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


def whole_run(scenario: Scenario) -> bool:
    """True for loads measured over the whole run (offline batches and closed loops)."""
    return scenario.workload.trace is None and scenario.workload.arrival.kind in ("offline", "closed_loop")


def measured_mask(scenario: Scenario, table: Any) -> Any:
    """Mask of the requests the metrics count: those arriving in [warmup_s, duration_s).

    `table` is the per-request table (the mask is a Series) or its columns (an array).
    """
    arrival = table["arrival_s"]
    inside = (arrival >= scenario.warmup_s) & (arrival < scenario.duration_s)
    return inside | whole_run(scenario)


def window(resolved: Resolved, table: Any, rec: Records) -> tuple[Any, float, float]:
    """(mask of measured requests, window start, window length in seconds)."""
    sc = resolved.scenario
    mask = measured_mask(sc, table)
    if whole_run(sc):
        return mask, 0.0, max(rec.end_s, 1e-9)
    return mask, sc.warmup_s, sc.duration_s - sc.warmup_s


def _by_reason(reasons: list[str], selected: np.ndarray) -> dict[str, int]:
    """Selected requests counted by reason: most first, ties in order of first appearance.

    The order pandas' ``value_counts`` gives (a stable descending sort of the counts).
    """
    counts: dict[str, int] = {}
    for i in np.flatnonzero(selected).tolist():
        counts[reasons[i]] = counts.get(reasons[i], 0) + 1
    keys = list(counts)
    values = np.array([counts[k] for k in keys], dtype=np.int64)
    # pandas' descending sort: reverse, sort ascending, reverse back
    index = np.arange(len(values))[::-1]
    order = index[values[::-1].argsort(kind="quicksort")][::-1]
    return {str(keys[i]): int(values[i]) for i in order.tolist()}


def _nan_free(values: np.ndarray) -> tuple[np.ndarray, int]:
    """(values with NaN as 0, how many are not NaN): pandas' way of skipping NaN in sums."""
    if values.dtype.kind != "f":
        return values, len(values)
    nan = np.isnan(values)
    missing = int(np.count_nonzero(nan))
    return (np.where(nan, 0.0, values) if missing else values), len(values) - missing


def _sum(values: np.ndarray) -> float:
    """The sum of a float column, NaN skipped, as pandas' ``Series.sum`` takes it."""
    kept, _ = _nan_free(values)
    return float(kept.sum(dtype=np.float64))


def _mean(values: np.ndarray) -> float:
    """The mean of a float or boolean column, NaN skipped, as pandas' ``Series.mean`` takes it."""
    kept, count = _nan_free(values)
    total = kept.sum(dtype=np.float64 if values.dtype.kind == "f" else np.int64)
    return float(total / np.float64(count)) if count > 0 else math.nan


def _pct(values: np.ndarray, q: float) -> float | None:
    v = values[np.isfinite(values)]
    return float(np.percentile(v, q)) if len(v) else None


def _integrals(rows: np.ndarray, at: np.ndarray) -> dict[str, np.ndarray]:
    """Per quantity, ∫ from 0 to each of `at` of the rate that spreads each iteration's amount
    uniformly over its [t0, t1]; `rows` are the pool's iterations (columns SEGMENT_COLUMNS)."""
    cols = {c: i for i, c in enumerate(SEGMENT_COLUMNS)}
    t0, t1 = rows[:, cols["t0"]], rows[:, cols["t1"]]
    dt = t1 - t0
    amounts = {
        "flops": rows[:, cols["flops"]],
        "bytes": rows[:, cols["bytes"]],
        "prefill_s": rows[:, cols["prefill_s"]],
        "busy": dt,
        "kv": rows[:, cols["kv_tokens"]] * dt,
        "batch": rows[:, cols["batch"]] * dt,
        "waiting": rows[:, cols["waiting"]] * dt,
    }
    if len(t0) == 0:
        return {k: np.zeros_like(at) for k in amounts}
    dur = np.maximum(dt, 1e-12)
    times = np.concatenate([t0, t1])
    order = np.argsort(times, kind="stable")  # the same for every quantity: sorted once
    times = times[order]
    steps = np.diff(times)
    out = {}
    for key, amount in amounts.items():
        rate = amount / dur
        level = np.cumsum(np.concatenate([rate, -rate])[order])
        area = np.concatenate([[0.0], np.cumsum(level[:-1] * steps)])
        out[key] = np.interp(at, times, area, left=0.0, right=area[-1])
    return out


def pool_series(resolved: Resolved, rec: Records, edges: np.ndarray) -> dict[int, dict[str, np.ndarray]]:
    """Per pool: the cumulative integrals of each quantity at `edges` (for bins and means).

    The quantities: FLOPs, bytes, prefill seconds, busy seconds, and KV tokens, batch size and
    queue depth times seconds.
    """
    seg = rec.segments
    server = SEGMENT_COLUMNS.index("server")
    pool_of = np.array([p for p, _, _ in rec.servers])
    out: dict[int, dict[str, np.ndarray]] = {}
    for pool in resolved.pools:
        rows = seg[pool_of[seg[:, server].astype(int)] == pool.index] if len(seg) else seg
        out[pool.index] = _integrals(rows, edges)
    return out


def summary(resolved: Resolved, rec: Records, columns: dict[str, Any]) -> dict[str, Any]:
    """The summary figures of one run (the JSON the CLI prints), from its `request_columns`."""
    mask, lo, span = window(resolved, columns, rec)
    completed = rec.outcome == COMPLETED
    done = mask & completed
    n_win = int(np.count_nonzero(mask))
    out: dict[str, Any] = {}
    out["requests"] = {
        "total": n_win,
        "completed": int(np.count_nonzero(done)),
        "rejected": int(np.count_nonzero(mask & (rec.outcome == REJECTED))),
        "failed": int(np.count_nonzero(mask & (rec.outcome == FAILED))),
        "rejected_by_reason": _by_reason(rec.reason, mask & (rec.outcome == REJECTED)),
        "failed_by_reason": _by_reason(rec.reason, mask & (rec.outcome == FAILED)),
    }
    lat: dict[str, dict[str, float | None]] = {}
    for name, col in (("ttft", "ttft_s"), ("tpot", "tpot_s"), ("e2e", "e2e_s"), ("max_tbt", "max_tbt_s")):
        vals = columns[col][done] * 1e3
        lat[name] = {f"p{q}": _pct(vals, q) for q in PERCENTILES}
        lat[name]["mean"] = float(np.nanmean(vals)) if np.isfinite(vals).any() else None
    lat["tbt"] = token_gaps(rec, lo, max(lo + span, rec.end_s) if whole_run(resolved.scenario) else lo + span)
    out["latency_ms"] = lat
    met = int(np.count_nonzero(columns["met_slo"][mask]))
    n_done = int(np.count_nonzero(done))
    out["slo_attainment"] = met / n_win if n_win else 0.0
    out["goodput_rps"] = met / span
    out["throughput_rps"] = n_done / span
    out["throughput_tokens_per_s"] = {
        "input": float(columns["prompt_tokens"][done].sum()) / span,
        "output": float(columns["output_tokens"][done].sum()) / span,
    }
    out["classes"] = class_summary(resolved, rec, columns, mask)
    # utilisation over the window
    # one pass over the iterations: integrals at 0, the window's start and end, and the drain's end
    series = pool_series(resolved, rec, np.array([0.0, lo, lo + span, max(rec.end_s, 1e-9)]))
    cum = {p: {k: v[1:3] for k, v in q.items()} for p, q in series.items()}
    cum_all = {p: {k: v[[0, 3]] for k, v in q.items()} for p, q in series.items()}
    util: dict[str, dict[str, float]] = {}
    energy_j = 0.0
    energy_by_pool: dict[int, float] = {}
    for pool in resolved.pools:
        c = cum[pool.index]
        inst = pool.instance
        n = pool.spec.count
        peak_f = inst.chips * inst.hardware.peak_flops(inst.weights) * n
        peak_b = inst.chips * inst.hardware.memory_tb_s * 1e12 * n

        def d(key: str, c: dict[str, np.ndarray] = c) -> float:
            return float(c[key][1] - c[key][0])

        util[pool.spec.name] = {
            "compute": min(1.0, d("flops") / (peak_f * span)),
            "bandwidth": min(1.0, d("bytes") / (peak_b * span)),
            "busy": min(1.0, d("busy") / (n * span)),
            "kv_memory": min(1.0, d("kv") / (max(inst.kv_capacity_tokens, 1) * n * span)),
        }
        # energy over the whole run (engine.costmodel.power): idle power always, and while
        # iterating a fitted share of the dynamic range plus energy per byte and per FLOP moved.
        # While an instance iterates every chip of it works: its tp chips, each data-parallel
        # rank, and (micro-batches in flight) every pipeline stage; bubbles count as busy.
        ca = cum_all[pool.index]
        energy_by_pool[pool.index] = power.run_energy_j(
            inst.hardware, chips=inst.chips * n, span_s=max(rec.end_s, 1e-9),
            busy_chip_s=float(ca["busy"][1]) * inst.chips, bytes_moved=float(ca["bytes"][1]),
            flops=float(ca["flops"][1]),
        )  # fmt: skip
        energy_j += energy_by_pool[pool.index]
    out["utilization"] = util
    out["calibration"] = {pool.spec.name: pool.calibration.as_dict() for pool in resolved.pools}
    out["cost"] = cost_summary(resolved, rec, columns, cum_all, energy_by_pool)
    out_tokens = float(columns["output_tokens"][completed].sum())
    out["energy"] = {
        "joules": energy_j,
        "joules_per_output_token": energy_j / out_tokens if out_tokens else None,
    }
    out["window_s"] = span
    out["drain_end_s"] = rec.end_s
    out["cache"] = cache_summary(resolved, rec, columns, mask)
    counters = rec.counters
    out["scheduler"] = {
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
    transfer = columns["kv_transfer_s"][done]
    out["kv_transfer_ms"] = {
        "mean": float(_mean(transfer) * 1e3) if n_done else None,
        "p99": _pct(transfer * 1e3, 99),
    }
    if rec.site is not None:
        out["edge"] = edge_summary(resolved, rec, columns, mask)
    return out


def edge_summary(
    resolved: Resolved, rec: Records, columns: dict[str, Any], mask: np.ndarray
) -> dict[str, Any]:
    """Where the window's requests were served (edge, or offloaded by reason), TTFT by site, and the
    site's peak power (from the recorded iterations, `edge.site_power_w`) against its budget."""
    spec = resolved.scenario.deployment.edge
    assert spec is not None
    site = columns["site"]
    n = int(np.count_nonzero(mask))
    local = mask & (site == "edge")
    by_reason = {r: int(np.count_nonzero(mask & (site == f"offload_{r}"))) for r in edge.REASONS.values()}
    offloaded = sum(by_reason.values())
    seg = rec.segments
    idle_w, peak_w = edge.site_power_w(
        resolved, {c: seg[:, i] for i, c in enumerate(SEGMENT_COLUMNS)}, rec.servers
    )
    done = rec.outcome == COMPLETED
    ttft_ms = columns["ttft_s"] * 1e3
    return {
        "requests": n,
        "local": int(np.count_nonzero(local)),
        "local_completed": int(np.count_nonzero(local & done)),
        "offloaded": offloaded,
        "offloaded_by_reason": by_reason,
        "local_share": int(np.count_nonzero(local)) / n if n else 0.0,
        "offloaded_share": offloaded / n if n else 0.0,
        "ttft_ms": {
            "edge": {f"p{q}": _pct(ttft_ms[local & done], q) for q in PERCENTILES},
            "offloaded": {f"p{q}": _pct(ttft_ms[mask & done & (site != "edge")], q) for q in PERCENTILES},
        },
        "power_budget_w": spec.power_budget_w,
        "site_idle_w": idle_w,
        "peak_site_power_w": peak_w,
        "offload_latency_ms": spec.offload_latency_ms,
    }


def cache_summary(
    resolved: Resolved, rec: Records, columns: dict[str, Any], mask: np.ndarray
) -> dict[str, Any]:
    """Prefix-cache hit rates (per tier and class), prefill compute saved and bytes moved."""
    sc = resolved.scenario
    hits = rec.cache_hit_tokens[mask]
    prompts = columns["prompt_tokens"][mask].astype(float)
    total = float(prompts.sum())
    model = resolved.model
    kvb = model.kv_bytes_per_token(sc.kv_precision())
    m = hits.sum(axis=1).astype(float)
    saved = float(np.sum(2.0 * model.matmul_params() * m + model.attention_flops_per_pair() * m * m / 2.0))
    by_class = {}
    classes = columns["class"][mask]
    for spec in sc.workload.classes:
        sel = classes == spec.name
        denom = float(prompts[sel].sum())
        by_class[spec.name] = float(m[sel].sum()) / denom if denom else 0.0
    return {
        "enabled": sc.cache.enabled,
        "hit_rate": float(m.sum()) / total if total else 0.0,
        "hit_rate_by_tier": {
            t: float(hits[:, i].sum()) / total if total else 0.0 for i, t in enumerate(TIERS)
        },
        "hit_rate_by_class": by_class,
        "bytes_by_tier": {t: float(hits[:, i].sum()) * kvb for i, t in enumerate(TIERS)},
        "prefill_flops_saved": saved,
        "load_ms_mean": float(np.mean(rec.cache_load_s[mask]) * 1e3) if len(hits) else 0.0,
        "kv_transfer_tokens_saved": int(rec.counters.get("transfer_tokens_saved", 0)),
    }


def class_summary(
    resolved: Resolved, rec: Records, columns: dict[str, Any], mask: np.ndarray
) -> dict[str, dict[str, Any]]:
    """Per class: counts, latency percentiles at the SLO percentile, attainment and pass/fail."""
    out: dict[str, dict[str, Any]] = {}
    for spec in resolved.scenario.workload.classes:
        rows = mask & (columns["class"] == spec.name)
        n_rows = int(np.count_nonzero(rows))
        pct = spec.slo.percentile
        outcome = rec.outcome[rows]
        completed = outcome == COMPLETED
        ttft = np.where(completed, columns["ttft_s"][rows], np.inf)
        tpot = columns["tpot_s"][rows][completed]
        tpot = np.concatenate([tpot[np.isfinite(tpot)], np.full(int((~completed).sum()), np.inf)])
        # "higher": an observed value, never an interpolation with a rejected request's infinity
        ttft_p = float(np.percentile(ttft, pct, method="higher")) if len(ttft) else None
        tpot_p = float(np.percentile(tpot, pct, method="higher")) if len(tpot) else None
        tbt = columns["max_tbt_s"][rows][completed]
        tbt = np.concatenate([tbt[np.isfinite(tbt)], np.full(int((~completed).sum()), np.inf)])
        tbt_p = float(np.percentile(tbt, pct, method="higher")) if len(tbt) else None
        passes = (
            n_rows > 0
            and ttft_p is not None and ttft_p <= spec.slo.ttft_ms / 1e3
            and (tpot_p is None or tpot_p <= spec.slo.tpot_ms / 1e3)
            and (not spec.slo.tbt_ms or tbt_p is None or tbt_p <= spec.slo.tbt_ms / 1e3)
        )  # fmt: skip
        out[spec.name] = {
            "requests": n_rows,
            "completed": int(completed.sum()),
            "rejected": int((outcome == REJECTED).sum()),
            "failed": int((outcome == FAILED).sum()),
            "percentile": pct,
            "ttft_ms_at_percentile": ttft_p * 1e3 if ttft_p is not None and math.isfinite(ttft_p) else None,
            "tpot_ms_at_percentile": tpot_p * 1e3 if tpot_p is not None and math.isfinite(tpot_p) else None,
            "max_tbt_ms_at_percentile": tbt_p * 1e3 if tbt_p is not None and math.isfinite(tbt_p) else None,
            "slo_attainment": _mean(columns["met_slo"][rows]) if n_rows else 0.0,
            "passes": bool(passes),
        }
    return out


def cost_summary(
    resolved: Resolved,
    rec: Records,
    columns: dict[str, Any],
    cum_all: dict[int, dict[str, np.ndarray]],
    energy_by_pool: dict[int, float] | None = None,
) -> dict[str, Any]:
    """The bill, per hour, per request and per million output tokens, and where it went.

    ``usd_by_part`` splits it by role (prefill, decode, KV transfer, cache) in either mode; an
    owned deployment (`scenario.cost.mode` ``own``) also splits it by kind (``usd_by_kind``:
    capital, energy, hosting, cache). Both splits add up to ``usd_total``.
    """
    sc = resolved.scenario
    basis = sc.cost
    hours = max(rec.end_s, 1e-9) / 3600.0
    cache_gb = 0.0
    if sc.cache.enabled:
        per_inst = sc.cache.host.capacity_gb if sc.cache.host.enabled else 0.0
        cache_gb = per_inst * sum(p.spec.count for p in resolved.pools) + (
            sc.cache.pooled.capacity_gb if sc.cache.pooled.enabled else 0.0
        )
    cache_per_hour = cache_gb * sc.cache.usd_per_gb_hour
    kinds = {k: 0.0 for k in ownership.KINDS}
    if basis.mode == "rent":
        pool_bills = [p.usd_per_hour * hours for p in resolved.pools]
        per_hour = sum(p.usd_per_hour for p in resolved.pools) + cache_per_hour
        bill = per_hour * hours
    else:
        # owned: capital and hosting accrue per chip-hour, energy is what the pool drew (with PUE)
        pool_bills = []
        for p in resolved.pools:
            capital = p.chips * ownership.capital_usd_per_chip_hour(p.hardware, basis) * hours
            hosting = p.chips * ownership.hosting_usd_per_chip_hour(p.hardware, basis) * hours
            energy = ownership.energy_usd((energy_by_pool or {}).get(p.index, 0.0), basis)
            kinds["capital"] += capital
            kinds["hosting"] += hosting
            kinds["energy"] += energy
            pool_bills.append(capital + hosting + energy)
        bill = sum(pool_bills) + cache_per_hour * hours
        per_hour = bill / hours
    split = {"prefill": 0.0, "decode": 0.0, "kv_transfer": 0.0, "cache": cache_per_hour * hours}
    completed = rec.outcome == COMPLETED
    senders = sum(1 for p in resolved.pools if p.spec.role == "prefill")
    pool_of = np.array([pool for pool, _, _ in rec.servers], dtype=np.int64)
    for pool, pool_bill in zip(resolved.pools, pool_bills, strict=True):
        if pool.spec.role == "prefill":
            # the link is billed for what it carries (the sending chips' time while this request's
            # bytes cross after its prefill); time queued for the link is the prefill chips holding KV
            if basis.mode == "rent":
                chip_rate = pool.instance.chips * pool.hardware.usd_per_hour / 3600.0
            else:  # one instance's average cost per second of the run
                chip_rate = pool_bill / (pool.spec.count * hours * 3600.0)
            sent, waited = columns["kv_transfer_s"], columns["kv_wait_s"]
            if senders > 1:  # the transfers this pool sent
                first = np.asarray(columns["prefill_instance"])
                mine = (first >= 0) & (pool_of[np.maximum(first, 0)] == pool.index)
                sent, waited = sent[mine], waited[mine]
            carried = _sum(sent) - _sum(waited)
            transfer = min(pool_bill, max(carried, 0.0) * chip_rate)
            split["kv_transfer"] += transfer
            split["prefill"] += pool_bill - transfer
        elif pool.spec.role == "decode":
            split["decode"] += pool_bill
        else:
            c = cum_all[pool.index]
            busy = float(c["busy"][1])
            share = float(c["prefill_s"][1]) / busy if busy > 0 else 0.5
            split["prefill"] += pool_bill * share
            split["decode"] += pool_bill * (1.0 - share)
    n_done = int(np.count_nonzero(completed))
    out_tok = float(columns["output_tokens"][completed].sum())
    out: dict[str, Any] = {
        "mode": basis.mode,
        "basis": basis.label(),
        "usd_per_hour": per_hour,
        "usd_total": bill,
        "usd_per_request": bill / n_done if n_done else None,
        "usd_per_million_output_tokens": bill / out_tok * 1e6 if out_tok else None,
        "usd_per_request_by_part": {k: (v / n_done if n_done else None) for k, v in split.items()},
        "usd_by_part": split,
    }
    if len(resolved.pools) > 1:  # a portfolio: each pool's bill (one pool's is the whole bill)
        out["usd_by_pool"] = {p.spec.name: b for p, b in zip(resolved.pools, pool_bills, strict=True)}
    if basis.mode == "own":
        # only in own mode: a rent-mode summary keeps its numeric keys (golden results, exports)
        out["usd_by_kind"] = {**kinds, "cache": split["cache"]}
        out["usd_per_request_by_kind"] = {
            k: (v / n_done if n_done else None) for k, v in out["usd_by_kind"].items()
        }
    return out


__all__ = ["COMPLETED", "FAILED", "REJECTED", "measured_mask", "request_columns", "summary", "whole_run"]
