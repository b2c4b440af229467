"""The summary's breakdowns: per class, the prefix cache, the edge site, the way in, and the bill.

Each takes the run's records and its per-request columns (`metrics.request_columns`) and returns
one section of the summary (`metrics.summary` assembles them): `class_summary` (each class's
requests, latencies and SLO), `cache_summary` (hits by tier, tokens saved), `edge_summary` (what the
edge served, offloaded, and its power), `way_in_summary` (network and control-plane time, and
their shares of TTFT), `cost_summary` (the bill per hour, per request and per
million output tokens, split by role and, when owned, by kind).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.calibration.software import level_of
from engine.costmodel import ownership
from engine.scenario.resolve import Resolved
from engine.serving import edge
from engine.serving.cache import TIERS
from engine.serving.ledger import COMPLETED, FAILED, REJECTED, SEGMENT_COLUMNS, Records
from engine.serving.stats import nan_mean, nan_sum, percentiles
from engine.serving.summary import Cache, ClassSummary, Cost, Edge, WayIn
from engine.serving.timeline import billed_seconds, pool_bill_usd

if TYPE_CHECKING:
    from engine.serving.autoscale import ScalingLog


def edge_summary(resolved: Resolved, rec: Records, columns: dict[str, Any], mask: np.ndarray) -> Edge:
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
            "edge": percentiles(ttft_ms[local & done]),
            "offloaded": percentiles(ttft_ms[mask & done & (site != "edge")]),
        },
        "power_budget_w": spec.power_budget_w,
        "site_idle_w": idle_w,
        "peak_site_power_w": peak_w,
        "offload_latency_ms": spec.offload_latency_ms,
    }


def way_in_summary(resolved: Resolved, columns: dict[str, Any], done: np.ndarray) -> WayIn:
    """Network and control-plane time of the window's completed requests, and their shares of TTFT."""
    net_ms = columns["network_s"][done] * 1e3
    ctl_ms = columns["control_s"][done] * 1e3
    ttft_ms = columns["ttft_s"][done] * 1e3
    total = float(ttft_ms.sum())
    some = len(ttft_ms) > 0
    return {
        "user_rtt_ms": resolved.scenario.network.user_rtt_ms,
        "network_ms_mean": float(net_ms.mean()) if some else None,
        "control_plane_ms_mean": float(ctl_ms.mean()) if some else None,
        "ttft_ms_mean": float(ttft_ms.mean()) if some else None,
        "network_share_of_ttft": float(net_ms.sum()) / total if total > 0 else None,
        "control_plane_share_of_ttft": float(ctl_ms.sum()) / total if total > 0 else None,
    }


def cache_summary(resolved: Resolved, rec: Records, columns: dict[str, Any], mask: np.ndarray) -> Cache:
    """Prefix-cache hit rates (per tier and class), prefill compute saved and bytes moved.

    The rates are over the requests not rejected: a prompt turned away (longer than the context, or
    by admission) is never looked up, and counting it read 67% on an agentic trace whose served
    prompts found 94% (a trace replay review)."""
    sc = resolved.scenario
    mask = mask & (rec.outcome != REJECTED)
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
) -> dict[str, ClassSummary]:
    """Per class: counts, latency percentiles at the SLO percentile, attainment and pass/fail."""
    out: dict[str, ClassSummary] = {}
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
        e2e_ok, e2e_p = True, None  # an E2E target counts in the verdict as in attainment (docs/metrics.md)
        if spec.slo.e2e_ms and n_rows:
            e2e = np.where(completed, columns["e2e_s"][rows], np.inf)
            e2e_p = float(np.percentile(e2e, pct, method="higher"))
            e2e_ok = e2e_p <= spec.slo.e2e_ms / 1e3
        # a class with no request in the window has nothing to miss: it does not fail the run (a rare
        # class that drew none at some rate made a capacity search fail there, 41% low: a review), and
        # it has no attainment (None)
        passes = n_rows == 0 or (
            ttft_p is not None
            and ttft_p <= spec.slo.ttft_ms / 1e3
            and (tpot_p is None or tpot_p <= spec.slo.tpot_ms / 1e3)
            and (not spec.slo.tbt_ms or tbt_p is None or tbt_p <= spec.slo.tbt_ms / 1e3)
            and e2e_ok
        )
        out[spec.name] = {
            "requests": n_rows,
            "completed": int(completed.sum()),
            "rejected": int((outcome == REJECTED).sum()),
            "failed": int((outcome == FAILED).sum()),
            "percentile": pct,
            "ttft_ms_at_percentile": ttft_p * 1e3 if ttft_p is not None and math.isfinite(ttft_p) else None,
            "tpot_ms_at_percentile": tpot_p * 1e3 if tpot_p is not None and math.isfinite(tpot_p) else None,
            "max_tbt_ms_at_percentile": tbt_p * 1e3 if tbt_p is not None and math.isfinite(tbt_p) else None,
            "slo_attainment": nan_mean(columns["met_slo"][rows]) if n_rows else None,
            "passes": bool(passes),
        }
        if spec.slo.e2e_ms:
            finite = e2e_p is not None and math.isfinite(e2e_p)
            out[spec.name]["e2e_ms_at_percentile"] = e2e_p * 1e3 if finite and e2e_p is not None else None
    return out


def porting_usd_per_hour(resolved: Resolved) -> dict[int, float]:
    """Each pool's share of the amortised porting of its chip (`ownership.porting_usd_per_hour`): the
    one-off cost of a (chip, stack) pair is paid once per deployment, shared among its pools by chips."""
    pools, basis = resolved.scenario.deployment.pools, resolved.scenario.cost
    chips: dict[str, int] = {}
    for p in resolved.pools:
        chips[p.spec.hardware] = chips.get(p.spec.hardware, 0) + p.chips
    return {
        p.index: ownership.porting_usd_per_hour(p.spec.hardware, level_of(pools, p.spec.hardware), basis)
        * p.chips
        / chips[p.spec.hardware]
        for p in resolved.pools
    }


def _bills(
    resolved: Resolved,
    hours: float,
    energy_by_pool: dict[int, float] | None,
    scaling: ScalingLog | None = None,
) -> tuple[list[float], float, float, float, dict[str, float]]:
    """(each pool's bill, the cache's $/h, the deployment's $/h, the whole bill, an owned bill by kind)."""
    sc = resolved.scenario
    basis = sc.cost
    cache_per_hour = 0.0
    if sc.cache.enabled:
        # the host tier is each instance's DRAM, billed while its instance is (rented and autoscaled:
        # its billed instance-hours; owned: every slot all along, as capital is charged)
        per_inst_gb = sc.cache.host.capacity_gb if sc.cache.host.enabled else 0.0
        log = scaling if basis.mode == "rent" else None
        instance_hours = sum(
            billed_seconds(log, p.index, 0.0, math.inf) / 3600.0
            if log is not None and p.index in log.slots
            else p.spec.count * hours
            for p in resolved.pools
        )
        pooled_gb = sc.cache.pooled.capacity_gb if sc.cache.pooled.enabled else 0.0
        cache_per_hour = (per_inst_gb * instance_hours / hours + pooled_gb) * sc.cache.usd_per_gb_hour
    kinds = {k: 0.0 for k in ownership.KINDS}
    if basis.mode == "rent" and scaling is not None:  # autoscaled pools pay for their billed instance-hours
        pool_bills = [pool_bill_usd(resolved, scaling, p.index, hours) for p in resolved.pools]
        bill = sum(pool_bills) + cache_per_hour * hours
        per_hour = bill / hours
    elif basis.mode == "rent":
        pool_bills = [p.usd_per_hour * hours for p in resolved.pools]
        per_hour = sum(p.usd_per_hour for p in resolved.pools) + cache_per_hour
        bill = per_hour * hours
    else:
        # owned: capital and hosting accrue per chip-hour, energy is what the pool drew (with PUE)
        pool_bills = []
        porting = porting_usd_per_hour(resolved)
        for p in resolved.pools:
            capital = p.chips * ownership.capital_usd_per_chip_hour(p.hardware, basis) * hours
            hosting = p.chips * ownership.hosting_usd_per_chip_hour(p.hardware, basis) * hours
            energy = ownership.energy_usd((energy_by_pool or {}).get(p.index, 0.0), basis)
            kinds["capital"] += capital
            kinds["hosting"] += hosting
            kinds["energy"] += energy
            if port := porting.get(p.index, 0.0) * hours:  # a kind of its own only where a port is paid
                kinds["porting"] = kinds.get("porting", 0.0) + port
            pool_bills.append(capital + hosting + energy + port)
        bill = sum(pool_bills) + cache_per_hour * hours
        per_hour = bill / hours
    return pool_bills, cache_per_hour, per_hour, bill, kinds


def cost_summary(
    resolved: Resolved,
    rec: Records,
    columns: dict[str, Any],
    cum_all: dict[int, dict[str, np.ndarray]],
    energy_by_pool: dict[int, float] | None = None,
) -> Cost:
    """The bill, per hour, per request and per million output tokens, and where it went.

    ``usd_by_part`` splits it by role (prefill, decode, KV transfer, cache) in either mode; an
    owned deployment (`scenario.cost.mode` ``own``) also splits it by kind (``usd_by_kind``:
    capital, energy, hosting, cache, and porting where a chip's stack is being ported). Both splits add up
    to ``usd_total``.
    """
    basis = resolved.scenario.cost
    hours = max(rec.end_s, 1e-9) / 3600.0
    pool_bills, cache_per_hour, per_hour, bill, kinds = _bills(resolved, hours, energy_by_pool, rec.scaling)
    split = {"prefill": 0.0, "decode": 0.0, "kv_transfer": 0.0, "cache": cache_per_hour * hours}
    completed = rec.outcome == COMPLETED
    senders = sum(1 for p in resolved.pools if p.spec.role == "prefill")
    pool_of = np.array([pool for pool, _, _ in rec.servers], dtype=np.int64)
    mixed: dict[str, float] = {}  # each colocated pool's share of its busy time on prefill
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
            carried = nan_sum(sent) - nan_sum(waited)
            transfer = min(pool_bill, max(carried, 0.0) * chip_rate)
            split["kv_transfer"] += transfer
            split["prefill"] += pool_bill - transfer
        elif pool.spec.role == "decode":
            split["decode"] += pool_bill
        else:
            c = cum_all[pool.index]
            busy = float(c["busy"][1])
            share = float(c["prefill_s"][1]) / busy if busy > 0 else 0.5
            mixed[pool.spec.name] = share
            split["prefill"] += pool_bill * share
            split["decode"] += pool_bill * (1.0 - share)
    n_done = int(np.count_nonzero(completed))
    out_tok = float(columns["output_tokens"][completed].sum())
    out: Cost = {
        "mode": basis.mode,
        "basis": basis.label(),
        "usd_per_hour": per_hour,
        "usd_total": bill,
        "usd_per_request": bill / n_done if n_done else None,
        "usd_per_million_output_tokens": bill / out_tok * 1e6 if out_tok else None,
        "usd_per_request_by_part": {k: (v / n_done if n_done else None) for k, v in split.items()},
        "usd_by_part": split,
    }
    if assumed := ownership.assumed_prices((p.hardware for p in resolved.pools), basis):
        out["assumed_prices"] = assumed  # a chip whose price the catalog assumes (no published rate)
    if listed := ownership.list_prices((p.hardware for p in resolved.pools), basis):
        out["list_prices"] = listed  # a cloud's list price, where the GPUs are on the neocloud basis
    if len(resolved.pools) > 1:  # a portfolio: each pool's bill (one pool's is the whole bill)
        out["usd_by_pool"] = {p.spec.name: b for p, b in zip(resolved.pools, pool_bills, strict=True)}
    if mixed and len(resolved.pools) > 1:  # (a lone colocated pool's share is the bill's: `usd_by_part`)
        out["prefill_share_by_pool"] = mixed
    if basis.mode == "own":
        # only in own mode: a rent-mode summary keeps its numeric keys (golden results, exports)
        out["usd_by_kind"] = {**kinds, "cache": split["cache"]}
        out["usd_per_request_by_kind"] = {
            k: (v / n_done if n_done else None) for k, v in out["usd_by_kind"].items()
        }
    return out
