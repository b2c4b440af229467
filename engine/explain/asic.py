"""Should a phase get its own chip? The specialisation (ASIC) test and what it reads from a run.

`specialisation(result, model_change_months)` asks the questions that decide whether a phase
deserves its own chip (an ASIC): is its computation stable (months between model changes, a user
input, against `STABLE_MONTHS`), is it large (its share of the chip-hours the run kept busy,
against `LARGE_SHARE`: an idle pool's provisioned hours are no case for a chip), and is its
bottleneck clear (the share of its work bound by one resource,
against `CLEAR_SHARE`: prefill per request from the cost model, decode per busy time bin from the
measured batch and KV memory; a phase bound by its stack's fixed cost per step, `FIXED_COST`,
has a software bottleneck, which no chip built for it would cut). Three yeses: worth considering;
two: borderline; fewer: not worth it.
The seeds' fourth question, is its software ready (`engine.explain.software.software_answer`: the
maturity of the phase's chips' stack, and the amortised porting against their bill), costs one yes
when the answer is no; not rated (no maturity stated, numbers by rule) it costs nothing and says so.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.catalog.entries import Catalog
from engine.core.errors import ScenarioError
from engine.costmodel.iteration import decode_cost, prefill_cost
from engine.explain.software import software_answer
from engine.scenario.resolve import Resolved, resolve
from engine.serving.run import SimResult

STABLE_MONTHS = 12.0
"""Months between model changes from which a phase's computation counts as stable (assumption:
a specialised chip takes 18-24 months to build and must then run unchanged work for a year or
more to pay back; shorter model cycles change the shapes it was tuned for)."""
LARGE_SHARE = 0.30
"""Share of the fleet's chip-hours from which a phase counts as large (assumption)."""
CLEAR_SHARE = 0.80
"""Share of a phase's work bound by one resource from which its bottleneck counts as clear."""
KV_FULL = 0.90
"""KV memory in use, as a fraction of what reservations allow, from which a bin is KV-bound."""
FIXED_COST = "fixed cost"
"""What binds an iteration whose stack's fixed cost per step (`IterationCost.overhead_s`: launches,
synchronisation, scheduling) is longer than its compute, memory and link times: software, not
silicon. Without it the 910B's decode, 35 ms of a 49 ms step its stack's fixed cost, read "bandwidth
binds 100% of its work" and "an ASIC for decode is worth considering, built around bandwidth", beside
a lesson that says its stack, not the chip, sets its pace (a review)."""


def _binds(comp: np.ndarray, mem: np.ndarray, comm: np.ndarray, fixed: np.ndarray | float) -> np.ndarray:
    """What binds each iteration: the longest of its link, compute, memory times and fixed cost."""
    kind = np.where(comm > np.maximum(comp, mem), "link", np.where(comp >= mem, "compute", "bandwidth"))
    return np.where(np.asarray(fixed) > np.maximum(np.maximum(comp, mem), comm), FIXED_COST, kind)


def window_bins(result: SimResult) -> pd.DataFrame:
    """The run's time bins inside its window (open-loop loads; every bin for batch and closed loops)."""
    sc = result.scenario
    ts = result.timeseries
    open_loop = sc.workload.trace is not None or sc.workload.arrival.kind in ("poisson", "gamma")
    if not open_loop:
        return ts
    return ts[(ts["t_s"] >= sc.warmup_s) & (ts["t_s"] < sc.duration_s)]


def hold_ratio(result: SimResult) -> float:
    """KV in use over KV reserved for a typical request: (prompt + output / 2) / (prompt + output),
    the prompt less what it reads from the HBM prefix cache (shared with the requests reading it,
    held and reserved once, not per request)."""
    r = result.requests
    p, o = float(r["prompt_tokens"].mean()), float(r["output_tokens"].mean())
    p *= 1.0 - result.summary["cache"]["hit_rate_by_tier"]["hbm"]
    return (p + o / 2.0) / (p + o) if p + o > 0 else 1.0


def server_pools(res: Resolved) -> np.ndarray:
    """Each server's pool index, by server index (the simulation lays each pool's `count` servers
    out in pool order, an autoscaled pool's every slot included)."""
    return np.repeat([p.index for p in res.pools], [p.spec.count for p in res.pools]).astype(np.int64)


def request_pools(res: Resolved, servers: np.ndarray, default: int) -> np.ndarray:
    """Each request's pool from the server index it ran on (`server_pools`); `default` where it ran
    on none (-1) or on a server the pools do not lay out."""
    pool_of = server_pools(res)
    pools = np.full(len(servers), default, dtype=np.int64)
    known = (servers >= 0) & (servers < len(pool_of))
    pools[known] = pool_of[servers[known]]
    return pools


def own_prefill_cost(res: Resolved, done: pd.DataFrame) -> tuple[np.ndarray, ...]:
    """Each request's prefill (time, compute, memory, communication, fixed cost, s) on the pool of the
    server that prefilled it: an edge NPU's prompt costs what it costs there, not on the data centre's chip."""
    tokens = done["prompt_tokens"].to_numpy(dtype=float)
    first = done["prefill_instance"].to_numpy(dtype=np.int64)
    entry = next(p for p in res.pools if p.spec.role in ("prefill", "mixed"))
    pools = request_pools(res, first, entry.index)  # no prefilling server: the first prefill pool
    out = tuple(np.zeros(len(done)) for _ in range(5))
    for p in res.pools:
        mine = pools == p.index
        if mine.any():
            c = prefill_cost(p.instance, tokens[mine])
            for arr, part in zip(
                out, (c.time_s, c.compute_s, c.memory_s, c.comm_s, c.overhead_s), strict=True
            ):
                arr[mine] = np.asarray(part, dtype=float)
    return out


def phase_chip_hours(
    result: SimResult, catalog: Catalog | None = None, busy: bool = False
) -> dict[str, float]:
    """Chip-hours of the run spent on prefill and on decode: an autoscaled pool's billed instance-hours,
    a fixed pool's count over the run; a colocated pool's split between the phases by its share of
    busy time on prefill (`Cost.prefill_share_by_pool` beside other pools, else the bill's). With
    `busy`, each pool's hours times the share of the window it ran iterations (`utilization.busy`):
    the chip-hours the phase's work kept busy, what a fleet sized to it would need."""
    res = resolve(result.scenario, catalog)
    used = result.summary.get("utilization", {})
    hours = max(float(result.summary["drain_end_s"]), 1e-9) / 3600.0
    parts = result.summary["cost"]["usd_by_part"]
    mixed_prefill = parts["prefill"] / max(parts["prefill"] + parts["decode"], 1e-12)
    own = result.summary["cost"].get("prefill_share_by_pool", {})  # each colocated pool's, beside others
    scaled = result.summary.get("autoscale", {}).get("pools", {})
    out = {"prefill": 0.0, "decode": 0.0}
    for p in res.pools:
        if p.spec.name in scaled:  # billed while requested, starting or serving, not at its ceiling
            ch = p.instance.chips * scaled[p.spec.name]["instance_hours"]
        else:
            ch = p.chips * hours
        if busy and (u := used.get(p.spec.name)) is not None:
            ch *= float(u["busy"])
        if p.spec.role == "prefill":
            out["prefill"] += ch
        elif p.spec.role == "decode":
            out["decode"] += ch
        else:
            share = own.get(p.spec.name, mixed_prefill)
            out["prefill"] += ch * share
            out["decode"] += ch * (1 - share)
    return out


def phase_bottlenecks(result: SimResult, catalog: Catalog | None = None) -> dict[str, dict[str, float]]:
    """Per phase: the share of its work each resource binds (prefill per request, decode per bin)."""
    res = resolve(result.scenario, catalog)
    r = result.requests
    done = r[r["outcome"] == "completed"]
    out: dict[str, dict[str, float]] = {}
    if len(done):
        t, comp, mem, comm, fixed = own_prefill_cost(res, done)
        kind = _binds(comp, mem, comm, fixed)
        if result.scenario.deployment.mode == "disaggregated":
            kind = np.where(done["kv_transfer_s"].to_numpy(dtype=float) > t, "link", kind)
        out["prefill"] = _shares(kind, t)
    bins = window_bins(result)
    kinds, weights = [], []
    hold = hold_ratio(result)
    ctx = float(r["prompt_tokens"].mean() + r["output_tokens"].mean() / 2.0) if len(r) else 0.0
    for p in res.pools:
        if p.spec.role not in ("decode", "mixed"):
            continue
        rows = bins[(bins["pool"] == p.spec.name) & (bins["busy"] > 0)]
        if rows.empty:
            continue
        batch = np.maximum(rows["batch_size"].to_numpy(dtype=float).round(), 1.0)
        dc = decode_cost(p.instance, batch, ctx)
        comp, mem, comm = (np.asarray(x, dtype=float) for x in (dc.compute_s, dc.memory_s, dc.comm_s))
        k = _binds(comp, mem, comm, dc.overhead_s)
        k = np.where(rows["kv_memory"].to_numpy(dtype=float) >= KV_FULL * hold, "kv_capacity", k)
        kinds.append(k)
        weights.append(rows["busy"].to_numpy(dtype=float))
    if kinds:
        out["decode"] = _shares(np.concatenate(kinds), np.concatenate(weights))
    return out


def _shares(kind: np.ndarray, weight: np.ndarray) -> dict[str, float]:
    total = float(weight.sum())
    if total <= 0:
        return {}
    return {str(k): float(weight[kind == k].sum()) / total for k in np.unique(kind)}


def _fixed_text(res: Resolved, phase: str, share: float) -> str:
    """A phase bound by its fixed cost per step: a software bottleneck where the chips' profiles are
    fitted to measurements of their stack (the 910B's under vLLM-Ascend); an assumed figure otherwise
    (the Groq LPU's 3 ms, tuned to one public throughput), which says nothing of the stack."""
    roles = (phase, "mixed")
    measured = all(p.calibration.basis in ("fitted", "own") for p in res.pools if p.spec.role in roles)
    if measured:
        return (
            f"a software bottleneck (its stack's fixed cost per step binds {share:.0%} of its work: a better "
            "stack, not a chip built for the phase, would cut it)"
        )
    return (
        f"no clear bottleneck (a fixed cost per step binds {share:.0%} of its work, an assumed figure for its "
        "chips, not a measured one: no resource a chip would be built around)"
    )


def specialisation(
    result: SimResult, model_change_months: float, catalog: Catalog | None = None
) -> pd.DataFrame:
    """Per phase: stable? large? clear bottleneck? software ready? with the numbers, and a verdict on an ASIC."""
    if not 0 < model_change_months <= 600:
        raise ScenarioError(f"model_change_months: must be in (0, 600] (got {model_change_months})")
    # the chip-hours each phase keeps busy, not those provisioned: an idle prefill pool (73% of the time)
    # read 'large (50% of chip-hours)' and 'an ASIC for prefill is worth considering' beside the advisor's
    # 'the P:D ratio is too high' (a browser review)
    hours = phase_chip_hours(result, catalog, busy=True)
    total = sum(hours.values()) or 1.0
    binds = phase_bottlenecks(result, catalog)
    res = resolve(result.scenario, catalog)
    rows = []
    for phase in ("prefill", "decode"):
        shares = binds.get(phase, {})
        resource = max(shares, key=lambda k: shares[k]) if shares else "none"
        bshare = shares.get(resource, 0.0)
        stable = model_change_months >= STABLE_MONTHS
        large = hours[phase] / total >= LARGE_SHARE
        fixed = resource == FIXED_COST and bshare >= CLEAR_SHARE  # not a resource a chip is built around
        clear = bshare >= CLEAR_SHARE and not fixed
        yes = int(stable) + int(large) + int(clear)
        sw = software_answer(result, res, phase)
        yes -= int(sw.ready is False)  # software that is not ready costs one yes
        verdict = "worth considering" if yes == 3 else ("borderline" if yes == 2 else "not worth it")
        text = (
            f"{phase}: {'stable' if stable else 'not stable'} (a model change every {model_change_months:g} "
            f"months; {STABLE_MONTHS:g} needed), {'large' if large else 'small'} ({hours[phase] / total:.0%} of "
            f"the deployment's busy chip-hours; {LARGE_SHARE:.0%} needed), "
            + (
                _fixed_text(res, phase, bshare)
                if fixed
                else f"{'clear' if clear else 'mixed'} bottleneck ({resource} binds {bshare:.0%} of its work; "
                f"{CLEAR_SHARE:.0%} needed)"
            )
            + f", {sw.text}: an ASIC for {phase} is {verdict}"
            + (f", built around {resource.replace('_', ' ')}." if yes == 3 else ".")
        )
        rows.append(
            {
                "phase": phase,
                "stable": stable,
                "model_change_months": model_change_months,
                "large": large,
                "chip_hours": hours[phase],
                "chip_hours_share": hours[phase] / total,
                "bottleneck_clear": clear,
                "binding_resource": resource,
                "binding_share": bshare,
                "software_ready": sw.ready,
                "maturity": sw.maturity,
                "porting_usd": sw.porting_usd,
                "porting_share": sw.porting_share,
                "verdict": verdict,
                "text": text,
            }
        )
    return pd.DataFrame(rows)
