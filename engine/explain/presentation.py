"""What a result looks like, as plain data: CDF points, SLO tails and costs (the Compare table: `compare_table`).

The dashboard draws; this module computes. Every function takes pieces of a `SimResult` (the
per-request table, the summary, the scenario) and returns a DataFrame or plain numbers with units
in the names, so the same numbers back the charts, the exports and the tests.

Which requests count follows docs/metrics.md: requests that arrive in ``[warmup_s, duration_s)``
(offline and closed-loop loads: all of them); latencies are over completed ones; rejected and
failed requests count as misses, and as infinitely late when a percentile is taken against a target.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from engine.explain.bill import goodput_per_usd
from engine.explain.rejections import reason_words
from engine.explain.sustain import figure_notes
from engine.scenario.model import Scenario
from engine.serving.metrics import measured_mask
from engine.serving.run import flatten
from engine.serving.summary import rate_span_s

Metric = Literal["ttft", "tpot", "max_tbt", "e2e"]
"""A latency metric of one request (`max_tbt`: its largest gap between two tokens)."""

LATENCY_COLUMNS: dict[str, str] = {"ttft": "ttft_s", "tpot": "tpot_s", "max_tbt": "max_tbt_s", "e2e": "e2e_s"}
"""The request-table column (seconds) of each latency metric."""

ALL_CLASSES = "all"
"""The label of the curve over every class together (drawn when there are several)."""


def usd_decimals(usd: float) -> int:
    """Places a dollar figure is shown to: two from $0.10, else three significant figures and at
    least five places ($0.00691, $0.000540, $0.0000309: a cost that small still reads to 1%)."""
    if usd >= 0.1:
        return 2
    if usd <= 0 or not math.isfinite(usd):
        return 5
    return max(5, 2 - math.floor(math.log10(usd)))


def usd_text(usd: float | None) -> str:
    """Dollars to `usd_decimals` places ('–' for none)."""
    if usd is None or not math.isfinite(usd):
        return "–"
    return f"${usd:,.{usd_decimals(usd)}f}"


DURATION_UNITS = ((9_999.5, "ms", 1.0), (599_950.0, "s", 1000.0), (35_997_000.0, "min", 60_000.0))
"""(below, unit, milliseconds a unit): where a duration shown to its unit's decimals would round up
to the next unit's; hours beyond."""


def duration_unit(ms: float) -> tuple[str, float]:
    """The unit a duration of `ms` milliseconds reads in (`duration_text`), and its size in ms."""
    for below, unit, size in DURATION_UNITS:
        if ms < below:
            return unit, size
    return "h", 3_600_000.0


def duration_text(ms: float | None) -> str:
    """A duration given in milliseconds, in the unit a reader takes in at a glance: ms below ten
    seconds (one decimal below 100 ms), seconds below ten minutes, then minutes and hours."""
    if ms is None or not math.isfinite(ms):
        return "–"
    unit, size = duration_unit(ms)
    return f"{ms / size:,.{duration_places(ms)}f} {unit}"


def target_text(target_ms: float | None, value_ms: float | None) -> str:
    """A target beside its figure, in the figure's unit where the figure reads in a larger one: 'E2E p90
    = 10.1 s (target 5.0 s)', where it read '(target 5,000 ms)' (a review); the SLO page's verdicts and
    the advisor's both write it so."""
    if target_ms is None or value_ms is None or not math.isfinite(value_ms) or not math.isfinite(target_ms):
        return duration_text(target_ms)
    unit, size = duration_unit(value_ms)
    # its own unit where the figure's reads it as nothing: '10.0 h against 0.0 h' for a 1,000 ms target (a
    # browser review)
    if size <= duration_unit(target_ms)[1] or target_ms / size < 0.1:
        return duration_text(target_ms)
    return f"{target_ms / size:,.1f} {unit}"


def duration_places(ms: float) -> int:
    """The decimals `duration_text` writes a duration of `ms` milliseconds with, in its unit
    (`duration_unit`): two below 1 ms (a TTFT target of 0.05 ms read 0.1 ms: a review), one below
    100 ms, none for other ms, one in s, min and h."""
    if duration_unit(ms)[0] != "ms":
        return 1
    return 2 if abs(ms) < 0.995 else 1 if ms < 99.95 else 0


def cdf_points(values: np.ndarray, max_points: int = 400, of: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(sorted values, cumulative fraction) of an empirical CDF, thinned to about `max_points`; the
    fraction is of `of` requests where more than the finite values (the rest never came: the curve
    stops below 100%).

    The thinning keeps the tail: points are spread evenly in fraction and, as densely again,
    geometrically towards the top, so p99 and p99.9 stay exact steps of the curve.
    """
    v = np.sort(np.asarray(values, dtype=float)[np.isfinite(values)])
    n = len(v)
    total = max(of, n)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    if n <= max_points:
        return v, np.arange(1, n + 1) / total
    half = max(max_points // 2, 2)
    marks = np.array([0.5, 0.9, 0.95, 0.99, 0.999, 0.9999])  # the usual percentiles, exactly
    probs = np.concatenate([np.linspace(0.0, 1.0, half), 1.0 - np.geomspace(1.0 / n, 0.5, half), marks])
    idx = np.unique(np.clip(np.ceil(probs * n).astype(np.int64) - 1, 0, n - 1))
    return v[idx], (idx + 1) / total


def latency_cdfs(
    scenario: Scenario, requests: pd.DataFrame, metric: Metric, max_points: int = 400
) -> pd.DataFrame:
    """Per class (and over all classes when there are several): CDF points of one latency, in ms.

    Columns: ``class``, ``latency_ms``, ``fraction``. The requests of the window, a rejected or failed
    one never arriving (its curve stops below 100%, crossing a target where the SLO pages' percentile
    does: the fraction was of completed requests, and a run that rejected 7% of a class reached 100%,
    a review); a completed request without the latency (a one-token answer's TPOT) is left out.
    """
    col = LATENCY_COLUMNS[metric]
    rows = requests[measured_mask(scenario, requests)]
    names = [c.name for c in scenario.workload.classes]
    groups: list[tuple[str, pd.DataFrame]] = []
    if len(names) > 1:
        groups.append((ALL_CLASSES, rows))
    for name in names:
        groups.append((name, rows[rows["class"] == name]))
    frames = []
    for name, part in groups:
        vals = late_values(part, col)
        x, y = cdf_points(vals * 1e3, max_points, len(vals))
        frames.append(pd.DataFrame({"class": name, "latency_ms": x, "fraction": y}))
    return pd.concat(frames, ignore_index=True)


def slo_targets(scenario: Scenario) -> pd.DataFrame:
    """Per class and metric: the latency target in ms and the percentile it is asked at."""
    rows = []
    for c in scenario.workload.classes:
        rows.append(
            {"class": c.name, "metric": "ttft", "target_ms": c.slo.ttft_ms, "percentile": c.slo.percentile}
        )
        rows.append(
            {"class": c.name, "metric": "tpot", "target_ms": c.slo.tpot_ms, "percentile": c.slo.percentile}
        )
        if c.slo.e2e_ms is not None:
            rows.append(
                {"class": c.name, "metric": "e2e", "target_ms": c.slo.e2e_ms, "percentile": c.slo.percentile}
            )
        if c.slo.tbt_ms is not None:
            rows.append(
                {
                    "class": c.name,
                    "metric": "max_tbt",
                    "target_ms": c.slo.tbt_ms,
                    "percentile": c.slo.percentile,
                }
            )
    return pd.DataFrame(rows, columns=["class", "metric", "target_ms", "percentile"])


def late_values(rows: pd.DataFrame, col: str) -> np.ndarray:
    """A latency column where requests that did not complete count as infinitely late (never
    answered); a completed one without the latency (a one-token answer's TPOT or gap) is left out."""
    done = (rows["outcome"] == "completed").to_numpy()
    vals = np.where(done, rows[col].to_numpy(dtype=float), np.inf)
    return vals[~(done & np.isnan(vals))]


def _within(vals: np.ndarray, target_s: float) -> float:
    return float(np.mean(vals <= target_s)) if len(vals) else math.nan


def _at(vals: np.ndarray, pct: float) -> float | None:
    if not len(vals):
        return None
    v = float(np.percentile(vals, pct, method="higher"))
    return v * 1e3 if math.isfinite(v) else None


def slo_tail(scenario: Scenario, requests: pd.DataFrame) -> pd.DataFrame:
    """Per class: attainment, each latency at the SLO percentile, and where its tail breaks.

    ``ttft_holds_to_pct`` is the share of the class's requests (in percent) whose TTFT is within
    target, rejected and failed ones counting as late: the percentile up to which the target
    holds. The class passes when its TTFT and TPOT at the SLO percentile are within target, and,
    where the class sets ``slo.tbt_ms`` or ``slo.e2e_ms``, its largest gap between tokens and its
    end-to-end latency too: the summary's verdict
    (`class_summary`, docs/metrics.md). ``breaks`` names the metric(s) that fall short, or is empty
    when the class passes.
    """
    win = requests[measured_mask(scenario, requests)]
    out = []
    for c in scenario.workload.classes:
        rows = win[win["class"] == c.name]
        pct = c.slo.percentile
        ttft = late_values(rows, "ttft_s")
        tpot = late_values(rows, "tpot_s")
        ttft_hold = _within(ttft, c.slo.ttft_ms / 1e3) * 100
        tpot_hold = _within(tpot, c.slo.tpot_ms / 1e3) * 100 if len(tpot) else 100.0
        tbt = late_values(rows, "max_tbt_s")
        ttft_at, tpot_at, tbt_at = _at(ttft, pct), _at(tpot, pct), _at(tbt, pct)
        ttft_ok = ttft_at is not None and ttft_at <= c.slo.ttft_ms
        tpot_ok = not len(tpot) or (tpot_at is not None and tpot_at <= c.slo.tpot_ms)
        tbt_ok = not c.slo.tbt_ms or not len(tbt) or (tbt_at is not None and tbt_at <= c.slo.tbt_ms)
        e2e_at = _at(late_values(rows, "e2e_s"), pct) if c.slo.e2e_ms else None
        e2e_ok = not c.slo.e2e_ms or not len(rows) or (e2e_at is not None and e2e_at <= c.slo.e2e_ms)
        verdicts = (("TTFT", ttft_ok), ("TPOT", tpot_ok), ("TBT", tbt_ok), ("E2E", e2e_ok))
        broken = [name for name, ok in verdicts if not ok]
        out.append(
            {
                "class": c.name,
                "requests": len(rows),
                "percentile": pct,
                "slo_attainment": float(rows["met_slo"].mean()) if len(rows) else None,
                "ttft_target_ms": c.slo.ttft_ms,
                "ttft_at_percentile_ms": ttft_at,
                "ttft_holds_to_pct": ttft_hold,
                "tpot_target_ms": c.slo.tpot_ms,
                "tpot_at_percentile_ms": tpot_at,
                "tpot_holds_to_pct": tpot_hold,
                "tbt_target_ms": c.slo.tbt_ms or None,
                "max_tbt_at_percentile_ms": tbt_at,
                "e2e_target_ms": c.slo.e2e_ms or None,
                "e2e_at_percentile_ms": e2e_at,
                "passes": not len(rows) or not broken,  # no request: nothing missed (`class_summary`)
                "breaks": " and ".join(broken) if len(rows) else "no requests: not judged",
            }
        )
    return pd.DataFrame(out)


TAIL_PERCENTILES: tuple[float, ...] = tuple(
    sorted({*np.linspace(50.0, 90.0, 21).round(2), *(100.0 - np.geomspace(10.0, 0.01, 40)).round(4)})
)
"""Percentiles a tail (quantile) curve is drawn at: even to p90, then ever closer to p100."""


def tail_curves(
    scenario: Scenario,
    requests: pd.DataFrame,
    metric: Metric,
    percentiles: Sequence[float] = TAIL_PERCENTILES,
) -> pd.DataFrame:
    """Per class: the latency (ms) at each percentile, requests that did not complete counting as late.

    Columns ``class``, ``percentile``, ``latency_ms`` (infinite where the percentile falls on
    rejected or failed requests: the curve leaves the chart there). Where some did not complete, the
    curve's last finite point is where they start, the share that completed at its slowest latency (on
    the percentiles' grid alone it stopped at p91.6 beside a verdict holding to p92.9: a review).
    """
    col = LATENCY_COLUMNS[metric]
    win = requests[measured_mask(scenario, requests)]
    frames = []
    for c in scenario.workload.classes:
        vals = late_values(win[win["class"] == c.name], col)
        if not len(vals):
            continue
        pcts = list(percentiles)
        lat = np.percentile(vals, pcts, method="higher") * 1e3
        done = vals[np.isfinite(vals)]
        if 0 < len(done) < len(vals):
            stop = 100.0 * len(done) / len(vals)
            # a grid point just under it can fall on the first late request ('higher' of the two
            # around it): the slowest answered one there, so the line runs on to its end
            lat = np.where((np.array(pcts) < stop) & ~np.isfinite(lat), float(done.max()) * 1e3, lat)
            at = int(np.searchsorted(pcts, stop))
            pcts.insert(at, stop)
            lat = np.insert(lat, at, float(done.max()) * 1e3)
        frames.append(pd.DataFrame({"class": c.name, "percentile": pcts, "latency_ms": lat}))
    if not frames:
        return pd.DataFrame(columns=["class", "percentile", "latency_ms"])
    return pd.concat(frames, ignore_index=True)


def headline(summary: Mapping[str, Any]) -> dict[str, float | None]:
    """The few numbers the live strip shows (None where the run has no value)."""
    lat = summary.get("latency_ms", {})
    cost = summary.get("cost", {})
    span = rate_span_s(summary) if summary.get("window_s") is not None else None
    return {
        "ttft_p99_ms": lat.get("ttft", {}).get("p99"),
        "tpot_p99_ms": lat.get("tpot", {}).get("p99"),
        "slo_attainment": summary.get("slo_attainment"),  # None: no request in the window, nothing judged
        "usd_per_request": cost.get("usd_per_request"),
        "usd_per_million_output_tokens": cost.get("usd_per_million_output_tokens"),
        "goodput_rps": summary.get("goodput_rps"),
        "goodput_per_usd": goodput_per_usd(summary, span),
    }


def edge_line(summary: Mapping[str, Any]) -> str | None:
    """One line on the edge site: served locally, offloaded (by reason), peak site power against the
    budget; None for a run without an edge site."""
    e = summary.get("edge")
    if not e:
        return None
    words = {"rule": "by the rule", "saturated": "with the site full", "power": "for power"}
    reasons = ", ".join(f"{v:,} {words.get(k, k)}" for k, v in e["offloaded_by_reason"].items() if v)
    ttft = e.get("ttft_ms", {})

    def p90(where: str) -> str:
        v = ttft.get(where, {}).get("p90")
        return f"{v:,.0f} ms" if v is not None else "none"

    return (
        f"Edge site: {e['local_share']:.1%} of requests served locally, {e['offloaded_share']:.1%} offloaded"
        + (f" ({reasons})" if reasons else "")
        + f" · TTFT p90 {p90('edge')} at the edge, {p90('offloaded')} offloaded (the WAN's "
        + f"{e['offload_latency_ms']:g} ms included) · peak site power {e['peak_site_power_w']:.1f} W of a "
        + f"{e['power_budget_w']:g} W budget (idle {e['site_idle_w']:.0f} W)"
    )


def summary_rows(summary: Mapping[str, Any]) -> pd.DataFrame:
    """The summary's numbers as ``figure`` / ``value`` rows (dotted names, e.g. ``latency_ms.ttft.p99``);
    for a run whose latencies grow with its length, a ``note`` on each latency: `GROWS`, or `LEVEL`
    for one that stays level (`engine.explain.sustain`), so no latency of it stands bare here either."""
    flat = flatten(dict(summary))
    out = pd.DataFrame({"figure": list(flat), "value": list(flat.values())})
    notes = figure_notes(summary, list(flat))
    return out if notes is None else out.assign(note=notes)


TIER_LABELS = {"hbm": "HBM", "host": "host DRAM", "pooled": "pooled store"}


def _cache_label(key: str) -> str:
    """A reader's name for a flattened cache-summary key."""
    group, _, name = key.partition(".")
    if group == "hit_rate_by_tier":
        return TIER_LABELS.get(name, name)
    if group == "hit_rate_by_class":
        return f"class {name}"
    return "all tiers" if key == "hit_rate" else key


def cache_rates(summary: Mapping[str, Any]) -> pd.DataFrame:
    """Hit rates and other fractions the summary reports for the prefix cache (empty when none).

    `figure` is a reader's label ("all tiers", "HBM", "class chat", ...); `key` the summary's.
    """
    cache = summary.get("cache")
    if not isinstance(cache, Mapping):
        return pd.DataFrame(columns=["figure", "value", "key"])
    flat = flatten(dict(cache))
    rows = [
        (_cache_label(k), v, k)
        for k, v in flat.items()
        if any(w in k for w in ("hit", "rate", "fraction", "ratio", "share")) and 0.0 <= v <= 1.0
    ]
    return pd.DataFrame(rows, columns=["figure", "value", "key"])


def _scaled(value: float, unit: str, steps: Sequence[tuple[float, str]]) -> str:
    """`value` in the largest prefix of `steps` (scale, prefix) it reaches, e.g. 9.8e18 FLOP -> "9.8 EFLOP"."""
    scale, prefix = next(((f, p) for f, p in steps if abs(value) >= f), steps[-1])
    return f"{value / scale:,.1f} {prefix}{unit}"


_FLOP_STEPS = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1.0, ""))
_BYTE_STEPS = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1.0, ""))


def cache_figures(summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(label, value, help) for the cache's other figures: work saved, bytes moved, load time.

    The load time and the transfer saving are listed only when non-zero (no host or pooled
    tier, or a colocated deployment, has none of either).
    """
    cache = summary.get("cache")
    if not isinstance(cache, Mapping):
        return []
    moved = cache.get("bytes_by_tier", {})
    from_tiers = ", ".join(
        f"{TIER_LABELS.get(t, t)} {_scaled(b, 'B', _BYTE_STEPS)}" for t, b in moved.items() if b > 0
    )
    out = [
        (
            "Prefill compute saved",
            _scaled(cache.get("prefill_flops_saved", 0.0), "FLOP", _FLOP_STEPS),
            "FLOPs the cached prefixes did not have to recompute, over the measured window.",
        ),
        (
            "KV read from cache",
            _scaled(sum(moved.values()), "B", _BYTE_STEPS),
            f"Bytes of KV cache served by hits, by tier: {from_tiers or 'none'}.",
        ),
    ]
    if cache.get("load_ms_mean", 0.0) > 0:
        out.append(
            (
                "Mean load time",
                f"{cache['load_ms_mean']:,.2f} ms",
                "Time to bring host or pooled hits into HBM before the prefill, averaged over requests (HBM hits cost none).",
            )
        )
    if cache.get("kv_transfer_tokens_saved", 0) > 0:
        out.append(
            (
                "Transfer saved",
                f"{cache['kv_transfer_tokens_saved']:,} tokens",
                "Prompt tokens whose KV the decode instance already held, so they did not cross the link.",
            )
        )
    return out


def scheduler_figures(summary: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(label, value, help) for what overload protection, preemption, faults and elastic roles did.

    Only figures that happened (non-zero) are listed; empty when none did.
    """
    sched = summary.get("scheduler")
    sched = sched if isinstance(sched, Mapping) else {}
    requests = summary.get("requests", {})
    out: list[tuple[str, str, str]] = []
    for key, verb, help_text in (
        (
            "rejected_by_reason",
            "Rejected",
            "Requests turned away at arrival, by reason (never silently dropped).",
        ),
        ("failed_by_reason", "Failed", "Admitted requests that could not be finished, by reason."),
    ):
        reasons = requests.get(key, {}) or {}
        for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1]):
            out.append((f"{verb}: {reason_words(reason)}", f"{count:,}", help_text))
    rows = (
        (
            "preemptions",
            "Preemptions",
            "{:,}",
            "Running requests taken off an instance when KV memory ran out.",
        ),
        (
            "recomputed_tokens",
            "Tokens recomputed",
            "{:,}",
            "Prefill redone for preempted requests (recompute).",
        ),
        ("swapped_bytes", "Swapped over PCIe", None, "KV moved out to host memory and back (swap)."),
        (
            "retried",
            "Retried after a fault",
            "{:,}",
            "Requests restarted from the beginning after their instance was lost.",
        ),
        (
            "link_faults",
            "KV link faults",
            "{:,}",
            "Times a pool's KV link was slowed or taken down (faults of kind link).",
        ),
        (
            "role_switches",
            "Role switches",
            "{:,}",
            "Elastic roles: instances moved between prefill and decode.",
        ),
        (
            "capped_requests",
            "Answers capped (degrade)",
            "{:,}",
            "Requests admitted while degraded, their output cut to deployment.degrade.max_output_tokens.",
        ),
        (
            "capped_tokens",
            "Output tokens cut (degrade)",
            "{:,}",
            "Output tokens the caps removed (what the users did not get).",
        ),
    )
    for key, label, fmt, help_ in rows:
        value = sched.get(key, 0) or 0
        if value:
            out.append((label, _scaled(value, "B", _BYTE_STEPS) if fmt is None else fmt.format(value), help_))
    return out
