"""From what happened to what it means: latencies, SLOs, goodput, utilisation, cost, energy.

Definitions (docs/metrics.md repeats them):

- Window: requests that arrive in [warmup_s, duration_s) are measured; the run drains until they
  all end. Offline and closed-loop runs measure every request; their window is the makespan.
- TTFT = first token - arrival (queueing and KV transfer included); TPOT = (completion - first
  token) / (output tokens - 1), undefined for one-token outputs; E2E = completion - arrival.
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
- Energy: per chip, idle power plus (TDP - idle) x roofline utilisation (the larger of the
  compute and bandwidth fractions) while it iterates.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from engine.scenario.model import Scenario
from engine.scenario.resolve import Resolved
from engine.serving.cache import TIERS
from engine.serving.sim import COMPLETED, FAILED, OUTCOMES, REJECTED, SEGMENT_COLUMNS, Records
from engine.serving.workload import Requests

PERCENTILES = (50, 90, 99)


def request_table(resolved: Resolved, reqs: Requests, rec: Records) -> pd.DataFrame:
    """One row per request: class, times, tokens, instances, outcome and latencies."""
    n = len(rec.outcome)
    sc = resolved.scenario
    names = np.array([c.name for c in sc.workload.classes])
    arr = rec.arrival_s
    out = reqs.output_tokens[:n]
    ttft = rec.first_token_s - arr
    e2e = rec.completion_s - arr
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out > 1, (rec.completion_s - rec.first_token_s) / (out - 1), np.nan)
    return pd.DataFrame(
        {
            "request": np.arange(n),
            "class": names[reqs.cls[:n]],
            "arrival_s": arr,
            "first_token_s": rec.first_token_s,
            "completion_s": rec.completion_s,
            "prompt_tokens": reqs.prompt_tokens[:n],
            "output_tokens": out,
            "prefill_instance": rec.prefill_instance,
            "decode_instance": rec.decode_instance,
            "kv_transfer_s": rec.transfer_s,
            "outcome": [OUTCOMES[int(o)] for o in rec.outcome],
            "cache_hit_tokens": rec.cache_hit_tokens.sum(axis=1),
            "retries": rec.retries,
            "preemptions": rec.preemptions,
            "reason": rec.reason,
            "ttft_s": ttft,
            "tpot_s": tpot,
            "e2e_s": e2e,
        }
    )


def with_slo(table: pd.DataFrame, resolved: Resolved) -> pd.DataFrame:
    """The request table with a `met_slo` column."""
    sc = resolved.scenario
    ttft_t = {c.name: c.slo.ttft_ms / 1e3 for c in sc.workload.classes}
    tpot_t = {c.name: c.slo.tpot_ms / 1e3 for c in sc.workload.classes}
    e2e_t = {c.name: (c.slo.e2e_ms / 1e3 if c.slo.e2e_ms else math.inf) for c in sc.workload.classes}
    cls = table["class"]

    def target(by_class: dict[str, float]) -> pd.Series:
        # as floats: mapping an empty column of class names would leave it a column of strings
        return cls.map(by_class).astype(float)

    ok = (table["outcome"] == "completed") & (table["ttft_s"] <= target(ttft_t))
    ok &= table["tpot_s"].isna() | (table["tpot_s"] <= target(tpot_t))
    ok &= table["e2e_s"] <= target(e2e_t)
    return table.assign(met_slo=ok.to_numpy())


def whole_run(scenario: Scenario) -> bool:
    """True for loads measured over the whole run (offline batches and closed loops)."""
    return scenario.workload.trace is None and scenario.workload.arrival.kind in ("offline", "closed_loop")


def measured_mask(scenario: Scenario, table: pd.DataFrame) -> pd.Series:
    """Mask of the requests the metrics count: those arriving in [warmup_s, duration_s)."""
    if whole_run(scenario):
        return pd.Series(True, index=table.index)
    return (table["arrival_s"] >= scenario.warmup_s) & (table["arrival_s"] < scenario.duration_s)


def window(resolved: Resolved, table: pd.DataFrame, rec: Records) -> tuple[pd.Series, float, float]:
    """(mask of measured requests, window start, window length in seconds)."""
    sc = resolved.scenario
    mask = measured_mask(sc, table)
    if whole_run(sc):
        return mask, 0.0, max(rec.end_s, 1e-9)
    return mask, sc.warmup_s, sc.duration_s - sc.warmup_s


def _by_reason(win: pd.DataFrame, outcome: str) -> dict[str, int]:
    """Requests of one outcome in the window, counted by reason."""
    reasons = win.loc[win["outcome"] == outcome, "reason"]
    return {str(k): int(v) for k, v in reasons.value_counts().items()}


def _pct(values: np.ndarray, q: float) -> float | None:
    v = values[np.isfinite(values)]
    return float(np.percentile(v, q)) if len(v) else None


def _cumulative(t0: np.ndarray, t1: np.ndarray, amount: np.ndarray, at: np.ndarray) -> np.ndarray:
    """∫ from 0 to `at` of the rate that spreads each `amount` uniformly over [t0, t1]."""
    if len(t0) == 0:
        return np.zeros_like(at)
    dur = np.maximum(t1 - t0, 1e-12)
    rate = amount / dur
    times = np.concatenate([t0, t1])
    dr = np.concatenate([rate, -rate])
    order = np.argsort(times, kind="stable")
    times, dr = times[order], dr[order]
    level = np.cumsum(dr)
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(times))])
    return np.interp(at, times, area, left=0.0, right=area[-1])


def pool_series(resolved: Resolved, rec: Records, edges: np.ndarray) -> dict[int, dict[str, np.ndarray]]:
    """Per pool: the cumulative integrals of each quantity at `edges` (for bins and means)."""
    seg = rec.segments
    cols = {c: i for i, c in enumerate(SEGMENT_COLUMNS)}
    pool_of = np.array([p for p, _, _ in rec.servers])
    out: dict[int, dict[str, np.ndarray]] = {}
    for pool in resolved.pools:
        rows = seg[pool_of[seg[:, cols["server"]].astype(int)] == pool.index] if len(seg) else seg
        t0, t1 = rows[:, cols["t0"]], rows[:, cols["t1"]]
        dt = t1 - t0
        out[pool.index] = {
            "flops": _cumulative(t0, t1, rows[:, cols["flops"]], edges),
            "bytes": _cumulative(t0, t1, rows[:, cols["bytes"]], edges),
            "prefill_s": _cumulative(t0, t1, rows[:, cols["prefill_s"]], edges),
            "busy": _cumulative(t0, t1, dt, edges),
            "kv": _cumulative(t0, t1, rows[:, cols["kv_tokens"]] * dt, edges),
            "batch": _cumulative(t0, t1, rows[:, cols["batch"]] * dt, edges),
            "waiting": _cumulative(t0, t1, rows[:, cols["waiting"]] * dt, edges),
        }
    return out


def timeseries(resolved: Resolved, rec: Records) -> pd.DataFrame:
    """Per pool and time bin: utilisations, KV memory, queue depth and running batch."""
    res = resolved.scenario.resolution_s
    end = max(rec.end_s, res)
    nbins = int(min(math.ceil(end / res), 20_000))
    edges = np.linspace(0.0, nbins * res, nbins + 1)
    cum = pool_series(resolved, rec, edges)
    frames = []
    for pool in resolved.pools:
        c = cum[pool.index]
        inst = pool.instance
        n = pool.spec.count
        width = np.diff(edges)
        peak_f = inst.chips * inst.hardware.peak_flops(inst.weights) * n
        peak_b = inst.chips * inst.hardware.memory_tb_s * 1e12 * n
        kv_cap = max(inst.kv_capacity_tokens * n, 1)
        busy = np.diff(c["busy"])
        frames.append(
            pd.DataFrame(
                {
                    "t_s": edges[:-1],
                    "pool": pool.spec.name,
                    "role": pool.spec.role,
                    "compute_util": np.diff(c["flops"]) / (peak_f * width),
                    "bandwidth_util": np.diff(c["bytes"]) / (peak_b * width),
                    "busy": busy / (n * width),
                    "kv_memory": np.diff(c["kv"]) / (kv_cap * width),
                    "queue_depth": np.diff(c["waiting"]) / width,
                    "batch_size": np.divide(
                        np.diff(c["batch"]), busy, out=np.zeros_like(busy), where=busy > 0
                    ),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def summary(resolved: Resolved, reqs: Requests, rec: Records, table: pd.DataFrame) -> dict[str, Any]:
    """The summary figures of one run (the JSON the CLI prints)."""
    mask, lo, span = window(resolved, table, rec)
    win = table[mask]
    done = win[win["outcome"] == "completed"]
    out: dict[str, Any] = {}
    out["requests"] = {
        "total": len(win),
        "completed": int((win["outcome"] == "completed").sum()),
        "rejected": int((win["outcome"] == "rejected").sum()),
        "failed": int((win["outcome"] == "failed").sum()),
        "rejected_by_reason": _by_reason(win, "rejected"),
        "failed_by_reason": _by_reason(win, "failed"),
    }
    lat: dict[str, dict[str, float | None]] = {}
    for name, col in (("ttft", "ttft_s"), ("tpot", "tpot_s"), ("e2e", "e2e_s")):
        vals = done[col].to_numpy(dtype=float) * 1e3
        lat[name] = {f"p{q}": _pct(vals, q) for q in PERCENTILES}
        lat[name]["mean"] = float(np.nanmean(vals)) if np.isfinite(vals).any() else None
    out["latency_ms"] = lat
    met = int(win["met_slo"].sum())
    out["slo_attainment"] = met / len(win) if len(win) else 0.0
    out["goodput_rps"] = met / span
    out["throughput_rps"] = len(done) / span
    out["throughput_tokens_per_s"] = {
        "input": float(done["prompt_tokens"].sum()) / span,
        "output": float(done["output_tokens"].sum()) / span,
    }
    out["classes"] = class_summary(resolved, win)
    # utilisation over the window
    # one pass over the iterations: integrals at 0, the window's start and end, and the drain's end
    series = pool_series(resolved, rec, np.array([0.0, lo, lo + span, max(rec.end_s, 1e-9)]))
    cum = {p: {k: v[1:3] for k, v in q.items()} for p, q in series.items()}
    cum_all = {p: {k: v[[0, 3]] for k, v in q.items()} for p, q in series.items()}
    util: dict[str, dict[str, float]] = {}
    energy_j = 0.0
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
        # energy over the whole run: idle power always, dynamic power by roofline utilisation
        ca = cum_all[pool.index]
        total_s = max(rec.end_s, 1e-9)
        hw = inst.hardware
        chips = inst.chips * n
        f_all = float(ca["flops"][1]) / (inst.chips * hw.peak_flops(inst.weights))
        b_all = float(ca["bytes"][1]) / (inst.chips * hw.memory_tb_s * 1e12)
        active_chip_s = max(f_all, b_all) * inst.chips  # chip-seconds at full roofline utilisation
        energy_j += hw.idle_w * chips * total_s + (hw.tdp_w - hw.idle_w) * active_chip_s
    out["utilization"] = util
    out["cost"] = cost_summary(resolved, rec, table, cum_all)
    all_done = table[table["outcome"] == "completed"]
    out_tokens = float(all_done["output_tokens"].sum())
    out["energy"] = {
        "joules": energy_j,
        "joules_per_output_token": energy_j / out_tokens if out_tokens else None,
    }
    out["window_s"] = span
    out["drain_end_s"] = rec.end_s
    out["cache"] = cache_summary(resolved, reqs, rec, table, mask)
    counters = rec.counters
    out["scheduler"] = {
        "preemptions": int(counters.get("preemptions", 0)),
        "recomputed_tokens": int(counters.get("recomputed_tokens", 0)),
        "swapped_bytes": float(counters.get("swapped_bytes", 0.0)),
        "retried": int(counters.get("retried", 0)),
        "role_switches": int(counters.get("role_switches", 0)),
    }
    out["kv_transfer_ms"] = {
        "mean": float(done["kv_transfer_s"].mean() * 1e3) if len(done) else None,
        "p99": _pct(done["kv_transfer_s"].to_numpy(dtype=float) * 1e3, 99),
    }
    return out


def cache_summary(
    resolved: Resolved, reqs: Requests, rec: Records, table: pd.DataFrame, mask: pd.Series
) -> dict[str, Any]:
    """Prefix-cache hit rates (per tier and class), prefill compute saved and bytes moved."""
    sc = resolved.scenario
    hits = rec.cache_hit_tokens[mask.to_numpy()]
    prompts = table.loc[mask, "prompt_tokens"].to_numpy(dtype=float)
    total = float(prompts.sum())
    model = resolved.model
    kvb = model.kv_bytes_per_token(sc.model.kv)
    m = hits.sum(axis=1).astype(float)
    saved = float(np.sum(2.0 * model.matmul_params() * m + model.attention_flops_per_pair() * m * m / 2.0))
    by_class = {}
    classes = table.loc[mask, "class"].to_numpy()
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
        "load_ms_mean": float(np.mean(rec.cache_load_s[mask.to_numpy()]) * 1e3) if len(hits) else 0.0,
        "kv_transfer_tokens_saved": int(rec.counters.get("transfer_tokens_saved", 0)),
    }


def class_summary(resolved: Resolved, win: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per class: counts, latency percentiles at the SLO percentile, attainment and pass/fail."""
    out: dict[str, dict[str, Any]] = {}
    for spec in resolved.scenario.workload.classes:
        rows = win[win["class"] == spec.name]
        pct = spec.slo.percentile
        completed = rows["outcome"] == "completed"
        ttft = np.where(completed, rows["ttft_s"].to_numpy(dtype=float), np.inf)
        tpot = rows.loc[completed, "tpot_s"].to_numpy(dtype=float)
        tpot = np.concatenate([tpot[np.isfinite(tpot)], np.full(int((~completed).sum()), np.inf)])
        # "higher": an observed value, never an interpolation with a rejected request's infinity
        ttft_p = float(np.percentile(ttft, pct, method="higher")) if len(ttft) else None
        tpot_p = float(np.percentile(tpot, pct, method="higher")) if len(tpot) else None
        passes = (
            len(rows) > 0
            and ttft_p is not None and ttft_p <= spec.slo.ttft_ms / 1e3
            and (tpot_p is None or tpot_p <= spec.slo.tpot_ms / 1e3)
        )  # fmt: skip
        out[spec.name] = {
            "requests": len(rows),
            "completed": int(completed.sum()),
            "rejected": int((rows["outcome"] == "rejected").sum()),
            "failed": int((rows["outcome"] == "failed").sum()),
            "percentile": pct,
            "ttft_ms_at_percentile": ttft_p * 1e3 if ttft_p is not None and math.isfinite(ttft_p) else None,
            "tpot_ms_at_percentile": tpot_p * 1e3 if tpot_p is not None and math.isfinite(tpot_p) else None,
            "slo_attainment": float(rows["met_slo"].mean()) if len(rows) else 0.0,
            "passes": bool(passes),
        }
    return out


def cost_summary(
    resolved: Resolved, rec: Records, table: pd.DataFrame, cum_all: dict[int, dict[str, np.ndarray]]
) -> dict[str, Any]:
    """The bill, per hour, per request and per million output tokens, and where it went."""
    sc = resolved.scenario
    hours = max(rec.end_s, 1e-9) / 3600.0
    cache_gb = 0.0
    if sc.cache.enabled:
        per_inst = sc.cache.host.capacity_gb if sc.cache.host.enabled else 0.0
        cache_gb = per_inst * sum(p.spec.count for p in resolved.pools) + (
            sc.cache.pooled.capacity_gb if sc.cache.pooled.enabled else 0.0
        )
    cache_per_hour = cache_gb * sc.cache.usd_per_gb_hour
    per_hour = sum(p.usd_per_hour for p in resolved.pools) + cache_per_hour
    bill = per_hour * hours
    split = {"prefill": 0.0, "decode": 0.0, "kv_transfer": 0.0, "cache": cache_per_hour * hours}
    done = table[table["outcome"] == "completed"]
    for pool in resolved.pools:
        pool_bill = pool.usd_per_hour * hours
        if pool.spec.role == "prefill":
            chip_rate = pool.instance.chips * pool.hardware.usd_per_hour / 3600.0
            transfer = min(pool_bill, float(table["kv_transfer_s"].sum()) * chip_rate)
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
    n_done = len(done)
    out_tok = float(done["output_tokens"].sum())
    return {
        "usd_per_hour": per_hour,
        "usd_total": bill,
        "usd_per_request": bill / n_done if n_done else None,
        "usd_per_million_output_tokens": bill / out_tok * 1e6 if out_tok else None,
        "usd_per_request_by_part": {k: (v / n_done if n_done else None) for k, v in split.items()},
        "usd_by_part": split,
    }


__all__ = ["COMPLETED", "FAILED", "REJECTED", "request_table", "summary", "timeseries", "with_slo"]
