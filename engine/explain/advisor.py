"""The advisor: where each phase sits on each chip's roofline, what binds a run, and why.

Three reports, each a plain value:

- `roofline_table(scenario)` (`engine.explain.rooflines`): every catalog chip's phases on its
  roofline for the scenario's model and workload.
- `findings(result)`: plain-language statements from a simulated run's numbers (utilisation,
  the time series, the request table, the bill by part), each with a severity and the figures
  behind it. Thresholds are stated where they are used; they are judgement, not physics. A pool
  whose chip has no profile fitted under the run's serving stack is one too: its numbers rest on
  a rule (`engine.calibration.trust`), and the finding says which, with the error to expect.
- `specialisation(result, model_change_months)` (`engine.explain.asic`, re-exported
  here): whether a phase deserves its own chip (an ASIC): stable, large, clear bottleneck.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from engine.calibration.mark import OWN_MISS_TEXT, Calibration
from engine.calibration.own import calibrate_hint
from engine.catalog.entries import Catalog
from engine.catalog.specs import Precision
from engine.core.errors import ScenarioError
from engine.core.no_bool import real_number
from engine.explain import sustain
from engine.explain.asic import (
    CLEAR_SHARE,
    KV_FULL,
    LARGE_SHARE,
    STABLE_MONTHS,
    hold_ratio,
    own_prefill_cost,
    phase_bottlenecks,
    phase_chip_hours,
    request_pools,
    specialisation,
    window_bins,
)
from engine.explain.confidence import errors_text, partly, pool_marks, real_bands, uncalibrated
from engine.explain.event_findings import event_findings
from engine.explain.finding import SEVERITY_ORDER as SEVERITY_ORDER
from engine.explain.finding import Finding as Finding
from engine.explain.finding import Severity as Severity
from engine.explain.link_fault import link_fix
from engine.explain.pd_ratio import prefill_findings
from engine.explain.queue_action import queue_action, ttft_within
from engine.explain.rejections import rejection_finding
from engine.explain.rooflines import roofline_table
from engine.explain.slo_findings import slo_findings
from engine.explain.targets import under_first_token
from engine.explain.way_in import ignored_ceiling, way_in_s
from engine.scenario.model import Scenario
from engine.scenario.resolve import Resolved, resolve, scenario_catalog
from engine.serving.run import SimResult

# --- findings --------------------------------------------------------------------------------


def kv_bound_share(result: SimResult, pool: str) -> float:
    """Fraction of a pool's window time bins whose KV memory is as full as reservations allow."""
    bins = window_bins(result)
    rows = bins[bins["pool"] == pool]
    if rows.empty:
        return 0.0
    return float((rows["kv_memory"] >= KV_FULL * hold_ratio(result)).mean())


def _bigger_memory(cat: Catalog, hw_id: str, prefills: Precision | None = None) -> str:
    """Chips with more memory and no less bandwidth (and, for a pool that also prefills, no less compute
    on its weights, `prefills`): the cheapest per GB of the same vendor, then of any. A mixed pool whose
    bill was 79% prefill was offered an H20 (96 GiB, a seventh of an H100's compute: a note)."""
    cur = cat.hardware[hw_id]
    options = sorted(
        (
            h
            for h in cat.hardware.values()
            if h.memory_gb > cur.memory_gb
            and h.memory_tb_s >= cur.memory_tb_s
            and not h.illustrative
            and (prefills is None or h.peak_flops(prefills) >= cur.peak_flops(prefills))
        ),
        key=lambda h: h.usd_per_hour / h.memory_gb,
    )
    picks = [h for h in options if h.vendor == cur.vendor][:1]
    picks += [h for h in options if h not in picks][: 2 - len(picks)]
    return " or ".join(f"{h.id} ({h.memory_gb:g} GiB)" for h in picks) or "a chip with more memory"


def _more_memory(cat: Catalog, hw_id: str, role: str, weights: Precision) -> str:
    """The chips to offer a KV-bound pool: a mixed pool's prefill needs their compute too."""
    if role != "mixed":
        return f"more decode memory (e.g. {_bigger_memory(cat, hw_id)})"
    return (
        "more memory on a chip with no less compute, as this pool prefills too "
        f"(e.g. {_bigger_memory(cat, hw_id, weights)})"
    )


def findings(result: SimResult, catalog: Catalog | None = None) -> list[Finding]:
    """Plain-language findings from one run's numbers, most severe first."""
    res = resolve(result.scenario, catalog)
    cat = scenario_catalog(result.scenario, catalog)
    s = result.summary
    out: list[Finding] = []
    if (behind := sustain.line(s)) and (mark := s["unsustainable"]):  # first: it qualifies the rest
        numbers = {k: mark[k] for k in ("shortfall_rps", "offered_rps", "sustained_rps")}
        out.append(Finding("critical", "saturation", behind, numbers))
    rising = sustain.rising_line(s)
    if said := ignored_ceiling(wl := result.scenario.workload):
        out.append(
            Finding("warning", "client", said, {"max_in_flight": float(wl.arrival.max_in_flight or 0)})
        )
    if ramp := sustain.ramp_line(result.scenario, sustain.mean_e2e_s(s)):
        out.append(
            Finding("warning" if ramp[1] < 0.9 else "info", "sessions", ramp[0], {"load_share": ramp[1]})
        )
    out += slo_findings(result)
    for said in under_first_token(result.scenario, res).values():  # a target no request can meet
        out.append(Finding("warning", "unmeetable", said[:1].upper() + said[1:] + ".", {}))
    pools = _pool_findings(result, res, cat)
    if rising and (rise := s.get("queue_rising")) and not any(f.topic == "overload" for f in pools):
        # said by a pool's queue growing through the window already, which reads it as the load's (a review)
        numbers = {k: rise[k] for k in ("rise_rps", "risen_requests", "offered_rps")}
        out.append(Finding("warning", "rising", rising, numbers))
    elif rising and (stood := s.get("at_capacity")):  # first: it qualifies the latencies that follow
        out.insert(0, Finding("critical", "capacity", rising, cast("dict[str, float]", stood)))
    out += pools
    out += _latency_findings(result, res)
    out += calibration_findings(result)
    out += event_findings(result)
    if rejected := rejection_finding(result, res):
        out.append(rejected)
    parts = s["cost"]["usd_by_part"]
    total = sum(parts.values())
    kinds = s["cost"].get("usd_by_kind", {})  # an owned deployment's bill by kind
    owned = (
        "; owned: " + ", ".join(f"{k} {v / total:.0%}" for k, v in kinds.items() if v > 0)
        if kinds and total > 0
        else ""
    )
    if total > 0:
        top, bill = max(parts, key=lambda k: parts[k]), f"${s['cost']['usd_per_hour']:,.2f}/h bill"
        shares = [*sorted((round(v / total, 2) for v in parts.values() if v > 0), reverse=True), 0.0]
        # an even split is no finding of a part's ("decode takes 50% of the bill (prefill 50%, decode 50%)")
        lead = f"{top.replace('_', ' ')} takes {shares[0]:.0%} of the {bill}"
        lead = f"the {bill} splits evenly" if shares[0] == shares[1] else lead
        out.append(
            Finding(
                "info",
                "cost",
                # the bill's amount before the word: "of the bill ($102.40/h; ...)" read as the part's cost
                f"{lead} ("
                + ", ".join(f"{k.replace('_', ' ')} {v / total:.0%}" for k, v in parts.items() if v > 0)
                + ")"
                + owned
                + ".",
                {f"share_{k}": v / total for k, v in parts.items()},
            )
        )
    return sorted(out, key=lambda f: SEVERITY_ORDER[f.severity])


def _pool_findings(result: SimResult, res: Resolved, cat: Catalog) -> list[Finding]:
    out = []
    util = result.summary["utilization"]
    bins = window_bins(result)
    counts = {p.spec.role: p.spec.count for p in res.pools}
    for pool in res.pools:
        name, role = pool.spec.name, pool.spec.role
        u = util[name]
        label = f"the {name} pool" if name == role or role == "mixed" else f"the {role} pool ({name})"
        backlog = _queue_growth(bins[bins["pool"] == name])  # (first, last quarter) when it grows
        if role in ("decode", "mixed"):
            share = kv_bound_share(result, name)
            if share >= 0.2:
                # its share of the bill says how far the advice reaches (a reviewer read it as the
                # whole deployment's, where prefill held 75% of the bill)
                bills, total = result.summary["cost"].get("usd_by_pool"), result.summary["cost"]["usd_total"]
                part = f"{bills[name] / total:.0%} of the bill" if bills and name in bills and total else ""
                billed = (
                    (f"{label[:-1]}, {part})" if label.endswith(")") else f"{label} ({part})")
                    if part
                    else label
                )
                out.append(
                    Finding(
                        "warning",
                        "kv_capacity",
                        f"{billed} is KV-capacity bound {share:.0%} of the time: "
                        f"{_more_memory(cat, pool.hardware.id, role, result.scenario.model.weights)} or "
                        "fewer concurrent long requests would help.",
                        {
                            "kv_bound_share": share,
                            "kv_memory": u["kv_memory"],
                            "memory_gb": pool.hardware.memory_gb,
                        },
                    )
                )
        if role == "prefill":
            out += prefill_findings(
                result, name, pool.spec.count, counts.get("decode", 0), u["busy"], backlog
            )
        if role == "decode" and (headroom := _decode_headroom(result, pool, u, bins)) is not None:
            out.append(headroom)
        if backlog is not None:
            out.append(_overload(label, backlog, bool(result.summary.get("unsustainable"))))
    return out


def in_step(scenario: Scenario) -> bool:
    """Whether a scenario's closed-loop clients stay in step: started together, no think time to
    jitter them, and every class's prompt and output lengths constant."""
    arr = scenario.workload.arrival
    return (
        arr.kind == "closed_loop"
        and arr.clients > 1
        and arr.start_ramp_s(scenario.duration_s) == 0
        and (arr.think_time_s == 0 or arr.think == "constant")
        and scenario.workload.trace is None
        and all(c.input.kind == "constant" and c.output.kind == "constant" for c in scenario.workload.classes)
    )


def _overload(label: str, backlog: tuple[float, float], behind: bool) -> Finding:
    """A pool whose queue grows through the window: the load past what it serves where the run is
    unsustainable (`behind`), else no headroom. It said 'the load exceeds what the deployment can serve'
    under 'At capacity: ... a little more load makes it unsustainable' for chat-disaggregated at 30 req/s,
    which the saturation rule (completions against arrivals) found kept pace (a browser review)."""
    first, last = backlog
    grew = f"the queue of {label} grows through the window ({first:,.0f} -> {last:,.0f} requests waiting)"
    if behind:
        text = f"{grew}: the load exceeds what the deployment can serve."
    else:
        text = (
            f"{grew}: it has no headroom. The run as a whole is at its capacity rather than past it (its "
            "completions kept pace with its arrivals), and a little more load makes it unsustainable."
        )
    numbers = {"queue_first_quarter": first, "queue_last_quarter": last}
    return Finding("critical" if behind else "warning", "overload", text, numbers)


def _queue_growth(bins: pd.DataFrame) -> tuple[float, float] | None:
    """(mean queue depth of the window's first quarter, of its last) when the queue grows through
    the window (more than 5 waiting at the end, and twice the start), else None."""
    if len(bins) < 8:
        return None
    q = len(bins) // 4
    first, last = float(bins["queue_depth"].iloc[:q].mean()), float(bins["queue_depth"].iloc[-q:].mean())
    return (first, last) if last > 5 and last > 2 * first else None


def calibration_findings(result: SimResult) -> list[Finding]:
    """One warning per chip (and rule) of the run that is uncalibrated under its serving stack, and
    a note per fitted chip whose MoE experts run at the shared factor (partly calibrated).

    It names the pools, the chip, the rule its profile came by and the expected error, and says
    how to calibrate it: fit the user's own measurements of that chip under that stack.
    """
    groups: dict[tuple[str, str], list[str]] = {}
    cals, custom = {}, {h.id for h in result.scenario.custom_hardware}  # custom: the CLI lacks them
    for m in uncalibrated(pool_marks(result.scenario, result.summary)):
        groups.setdefault((m.hardware, m.calibration.rule), []).append(m.pool)
        cals[m.hardware, m.calibration.rule] = m.calibration
    out = []
    for (hw, rule), pools in groups.items():
        cal = cals[hw, rule]
        stack, hint = cal.under, calibrate_hint(hw, cal.stack, hw in custom, cal.software)
        which = f"pools {', '.join(pools)}" if len(pools) > 1 else f"pool {pools[0]}"
        out.append(
            Finding(
                "warning",
                "calibration",
                # what to expect and what to do first, then the rule's terms: the rule of a MoE model ran ten
                # lines before anything a user could act on (a browser review)
                f"{hw} ({which}) is uncalibrated under {stack} ({errors_text(real_bands(cal))}). To calibrate "
                f"it, fit your own benchmark of it: {hint}. Its "
                f"profile comes by a rule, not from measurements of {hw} under {stack}: {rule}.",
                band_numbers(cal),
            )
        )
    shared: dict[str, list[str]] = {}
    for m in partly(pool_marks(result.scenario, result.summary)):
        shared.setdefault(m.hardware, []).append(m.pool)
        cals[m.hardware, ""] = m.calibration
    for hw, pools in shared.items():
        cal = cals[hw, ""]
        stack, hint = cal.under, calibrate_hint(hw, cal.stack, hw in custom, cal.software)
        which = f"pools {', '.join(pools)}" if len(pools) > 1 else f"pool {pools[0]}"
        if cal.shared_experts:
            why = (
                f"its dense layers are fitted to measurements of {hw}, but the model's routed experts stream their "
                f"weights at {cal.experts:.0%} of the dense layers' rate, with terms fitted to many chips' MoE "
                "measurements (per stack, and chip vendor, where two sources allow)"
                + (f"; and {OWN_MISS_TEXT} ({cal.caveat})" if cal.own_miss else "")
            )
            fit = f"To give {hw} its own, fit your benchmark of a MoE model: {hint}."
        else:  # derated for maturity, or a fit that misses the chip's own results
            why = cal.partial_text + (f" ({cal.caveat})" if cal.caveat else "")
            fit = f"Fit your own benchmark of it: {hint}."
        out.append(
            Finding(  # a fit that misses the chip's own results is a warning as an uncalibrated chip is (a review)
                "warning" if cal.own_miss else "info",
                "calibration",
                f"{hw} ({which}) is partly calibrated under {stack} ({errors_text(real_bands(cal))}). {fit} "
                f"Why partly: {why}.",
                band_numbers(cal),
            )
        )
    return out


def band_numbers(cal: Calibration) -> dict[str, float]:
    """A calibration finding's numbers: each band the sentence quotes, its fall and rise ('throughput band
    low (%)': −43%). They were each kind's median miss (0.24 under a band of −43% to +76%), unlabelled,
    and a TTFT and an energy error where no band's coverage was measured (a review)."""
    out: dict[str, float] = {}
    for f, (lo, hi) in real_bands(cal).items():
        out[f"{f}_band_low_pct"], out[f"{f}_band_high_pct"] = lo, hi
    return out


def _decode_headroom(
    result: SimResult, pool: Any, u: Mapping[str, Any], bins: pd.DataFrame
) -> Finding | None:
    """A decode pool with room to spare: TPOT at most half its target even with the pool's chips at
    their throughput band's pessimistic edge (its iterations that much longer, as the planner's
    margin slows them), and KV memory neither binding nor half used. As modelled alone it told a
    one-instance B200 pool at 49% of its target that it "could take more load, or run on fewer
    chips" where the planner's checks with slower chips failed it (a walkthrough)."""
    edge = max(pool.calibration.edges()[0], 0.0)
    ratio, pct = _tpot_margin(result)
    name = pool.spec.name
    if not (ratio * (1 + edge) < 0.5 and kv_bound_share(result, name) < 0.05 and u["kv_memory"] < 0.5):
        return None
    mine = bins[bins["pool"] == name]
    batch = float(mine["batch_size"].mean()) if len(mine) else 0.0
    at_edge = f" ({ratio * (1 + edge):.0%} with its chips at their band's pessimistic edge, {edge:+.0%} time)"
    return Finding(
        "info",
        "decode_headroom",
        f"decode has headroom: TPOT {pct} is at most {ratio:.0%} of its target{at_edge if edge else ''}, batches "
        f"average {batch:.0f} requests and KV memory is {u['kv_memory']:.0%} used; "
        + (
            "fewer decode instances (bigger batches) would raise throughput per chip."
            if pool.spec.count > 1
            else "its one instance could take more load, or run on fewer chips."
        ),
        {
            "tpot_over_target": ratio,
            "mean_batch": batch,
            "kv_memory": u["kv_memory"],
            "bandwidth_util": u["bandwidth"],
            "slowdown_at_edge": edge,
        },
    )


def _tpot_margin(result: SimResult) -> tuple[float, str]:
    """The largest ratio of a class's TPOT at its SLO percentile to its target, and that percentile
    ('p90'; 'at the SLO percentiles' where the classes' differ): "TPOT is at most 35% of its target"
    read as every request's beside a p99 at 42% (a review)."""
    specs = {c.name: c for c in result.scenario.workload.classes}
    ratios = [
        c["tpot_ms_at_percentile"] / specs[n].slo.tpot_ms
        for n, c in result.summary["classes"].items()
        if c["tpot_ms_at_percentile"] is not None
    ]
    pcts = {f"p{c.slo.percentile:g}" for c in specs.values()}
    return (max(ratios) if ratios else math.inf), (pcts.pop() if len(pcts) == 1 else "at the SLO percentiles")


def _latency_findings(result: SimResult, res: Resolved) -> list[Finding]:
    out: list[Finding] = []
    r = result.requests
    done = r[r["outcome"] == "completed"]
    if done.empty:
        return out
    ttft_sum = float(done["ttft_s"].sum())
    if result.scenario.deployment.mode == "disaggregated" and ttft_sum > 0:
        share = float(done["kv_transfer_s"].sum()) / ttft_sum
        out.append(
            Finding(
                "warning" if share >= 0.2 else "info",
                "kv_transfer",
                f"KV transfer takes {share:.0%} of TTFT (mean {done['kv_transfer_s'].mean() * 1e3:,.1f} ms "
                "per request)" + (link_fix(result, done) if share >= 0.2 else "."),
                {
                    "kv_transfer_share_of_ttft": share,
                    "kv_transfer_ms_mean": float(done["kv_transfer_s"].mean() * 1e3),
                },
            )
        )
    service = own_prefill_cost(res, done)[0]  # on the chip that prefilled it (an edge NPU is no H100)
    # the user's trip and the first-token latency (`Resolved.first_token_s`): neither is a queue
    ttft = done["ttft_s"].to_numpy(dtype=float) - way_in_s(done) - res.first_token_s
    wait = np.maximum(ttft - service - done["kv_transfer_s"].to_numpy(dtype=float), 0.0)
    if ttft_sum > 0:
        share = float(wait.sum()) / ttft_sum
        if share >= 0.5:
            batch = (
                result.scenario.workload.trace is None and result.scenario.workload.arrival.kind == "offline"
            )
            out.append(
                Finding(
                    "info" if batch or ttft_within(result) else "warning",
                    "queueing",
                    f"requests spend {share:.0%} of their TTFT waiting (in queues, or for decode memory) "
                    "rather than being prefilled"
                    + (
                        ": an offline batch puts every request in the queue at t = 0, so most of its TTFT is "
                        "its turn; the batch's makespan and cost are its figures."
                        if batch
                        else "."
                        if in_step(result.scenario)
                        else queue_action(result, wait, done)
                    ),
                    {"queueing_share_of_ttft": share, "ttft_ms_mean": float(done["ttft_s"].mean() * 1e3)},
                )
            )
            if in_step(result.scenario):
                arr = result.scenario.workload.arrival
                out.append(
                    Finding(
                        "info",
                        "lockstep",
                        f"the {arr.clients:,} clients start together and send identical requests, so they stay "
                        "in step: each round's prompts arrive at once and wait for each other's prefill (as "
                        "bench_serving's random dataset at range ratio 1 runs). Users drift apart; a start "
                        "ramp (ramp_s), think times or varied lengths would spread them.",
                        {"clients": arr.clients, "queueing_share_of_ttft": share},
                    )
                )
    out.extend(_tpot_findings(result, res, done))
    return out


def _tpot_findings(result: SimResult, res: Resolved, done: pd.DataFrame) -> list[Finding]:
    """A colocated run's TPOT spread: its chips' (`chip_mix`), or prefills sharing its iterations."""
    out: list[Finding] = []
    if result.scenario.deployment.mode != "colocated":
        return out
    tp = done["tpot_s"].dropna()
    tpot_misses = [
        spec.name for spec in result.scenario.workload.classes
        if (result.summary["classes"][spec.name]["tpot_ms_at_percentile"] or 0.0) > spec.slo.tpot_ms
    ]  # fmt: skip
    if len(tp) >= 10 and float(tp.median()) > 0:
        ratio = float(tp.quantile(0.99) / tp.median())
        if ratio > 1.5 or tpot_misses:
            why = f" and {', '.join(tpot_misses)} misses its TPOT target" if tpot_misses else ""
            mix, own, medians = _chip_mix(done, res)
            if mix:
                out.append(
                    Finding(
                        "warning",
                        "chip_mix",
                        f"TPOT differs by chip more than by what shares an iteration (TPOT p99 is {ratio:.1f}x "
                        f"its median{why}; each pool's own p99 at most {own:.1f}x its median): median {mix}. "
                        "Pinning the tightest class to the faster pool, or resizing the slower one, would steady "
                        "it.",
                        # the chips' medians the sentence quotes, beside the run's (a review: only the run's)
                        {
                            "tpot_p99_over_p50": ratio,
                            "tpot_ms_p50": float(tp.median() * 1e3),
                            **{f"tpot_ms_median_on_{chip}": v * 1e3 for chip, v in medians.items()},
                        },
                    )
                )
            if not mix or own > 1.5:  # a pool's own spread is its iterations' still
                # without chunking whole prompts stall the decodes: 'a smaller chunk_tokens' advised a knob
                # that was off (a review)
                chunked = result.scenario.batching().chunked_prefill
                what = "prefill chunks share" if chunked else "whole prompts (chunked prefill off) take"
                knob = (
                    "a smaller chunk_tokens"
                    if chunked
                    else "chunked prefill (deployment.batching.chunked_prefill)"
                )
                out.append(
                    Finding(
                        "warning" if tpot_misses or _tpot_near_target(result, tp) else "info",
                        "interference",
                        f"{what} iterations with decodes (TPOT p99 is {(own if mix else ratio):.1f}x "
                        f"its median{' in a pool' if mix else ''}{why}): disaggregating prefill and decode, or "
                        f"{knob}, would steady TPOT.",
                        {
                            "tpot_p99_over_p50": own if mix else ratio,
                            "tpot_ms_p50": float(tp.median() * 1e3),
                        },
                    )
                )
    return out


TPOT_NEAR_TARGET = 0.5
"""A TPOT spread is a warning where the run's TPOT p99 comes within this share of the tightest class
target (or a class misses it); further below, the spread costs no SLO and is said as information
(offline-batch: p99 111 ms, 1.5 times its median, against a 1,000 ms target). pipeline-llama-405b's
p99 of 765 ms (twice its 378 ms median) stays a warning: it is near its target's 1,000 ms."""


def _tpot_near_target(result: SimResult, tp: pd.Series) -> bool:
    tightest = min(c.slo.tpot_ms for c in result.scenario.workload.classes) / 1e3
    return float(tp.quantile(0.99)) >= TPOT_NEAR_TARGET * tightest


def _chip_mix(done: pd.DataFrame, res: Resolved) -> tuple[str, float, dict[str, float]]:
    """(each chip's median TPOT, '8.6 ms on h100-sxm, 50.5 ms on ascend-910b'; the largest of the
    pools' own p99 / median; each chip's median in s, fastest first) where the pools' chips differ and
    their medians lie further apart than any pool's own TPOT spreads: the whole run's spread is then
    the chips', which disaggregation would not remove; ('', 0, {}) otherwise."""
    if len({p.hardware.id for p in res.pools}) < 2:
        return "", 0.0, {}
    pools = request_pools(res, done["decode_instance"].to_numpy(dtype=np.int64), -1)
    tpot = done["tpot_s"].to_numpy(dtype=float)
    medians: dict[str, float] = {}
    spread = 0.0
    for p in res.pools:
        mine = tpot[(pools == p.index) & np.isfinite(tpot)]
        if len(mine) < 10 or (mid := float(np.median(mine))) <= 0:
            continue
        spread = max(spread, float(np.quantile(mine, 0.99)) / mid)
        medians[p.hardware.id] = max(medians.get(p.hardware.id, 0.0), mid)
    if len(medians) < 2 or max(medians.values()) / min(medians.values()) <= max(spread, 1.5):
        return "", 0.0, {}
    ordered = sorted(medians.items(), key=lambda kv: kv[1])
    return ", ".join(f"{v * 1e3:.1f} ms on {chip}" for chip, v in ordered), spread, dict(ordered)


@dataclass(frozen=True)
class Advice:
    """All three reports for one scenario and its run."""

    roofline: pd.DataFrame
    findings: tuple[Finding, ...]
    specialisation: pd.DataFrame

    def to_json(self) -> dict[str, Any]:
        """Plain data for the CLI."""
        return {
            "roofline": self.roofline.to_dict(orient="records"),
            "findings": [
                {"severity": f.severity, "topic": f.topic, "text": f.text, "numbers": dict(f.numbers)}
                for f in self.findings
            ],
            "specialisation": self.specialisation.to_dict(orient="records"),
        }


def advise(
    result: SimResult, model_change_months: float = STABLE_MONTHS, catalog: Catalog | None = None
) -> Advice:
    """Rooflines for the run's model, findings from its numbers, and the specialisation test."""
    if not isinstance(result, SimResult):  # a Scenario, for one: it advises on a run
        raise ScenarioError(
            f"result: a run's SimResult (engine.simulate(scenario)), not a {type(result).__name__}"
        )
    months = model_change_months  # ('12' died in a TypeError: a review)
    if not real_number(months) or not math.isfinite(months) or months <= 0:
        raise ScenarioError(f"model_change_months: must be in (0, 600] months (got {months!r})")
    return Advice(
        roofline=roofline_table(result.scenario, catalog),
        findings=tuple(findings(result, catalog)),
        specialisation=specialisation(result, model_change_months, catalog),
    )


__all__ = [
    "CLEAR_SHARE",
    "LARGE_SHARE",
    "STABLE_MONTHS",
    "Advice",
    "Finding",
    "advise",
    "calibration_findings",
    "findings",
    "in_step",
    "kv_bound_share",
    "phase_bottlenecks",
    "phase_chip_hours",
    "specialisation",
]
