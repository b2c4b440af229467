"""Confidence over seeds: what several runs of one scenario say together, as plain data.

One run is one draw of the workload. Running the same scenario with seeds ``seed, seed+1, ...``
(as ``python -m engine run X --replications N`` does through `engine.serving.run.replicate`) tells how
much of a figure is the deployment and how much is the draw. This module computes, from the
runs' results:

- per figure, the mean over seeds and its two-sided 95% Student-t interval (`Interval`), the same
  numbers `engine.serving.run.replicate` gives on the command line;
- per latency metric and class, a CDF band: at each fraction of requests, the mean latency over
  seeds (the seeds' quantile curves averaged) and the lowest and highest seed (min–max band);
- for two scenarios, which differences are *within noise*: their 95% intervals overlap, or for a
  paired comparison (the same requests in each seed) the seeds' differences' interval holds 0.

It simulates nothing itself (the caller runs or caches the seeds) and never imports streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from engine.explain import compare_table
from engine.explain.presentation import ALL_CLASSES, LATENCY_COLUMNS, Metric, late_values
from engine.explain.sustain import saturated
from engine.scenario.model import Scenario
from engine.serving.metrics import measured_mask
from engine.serving.run import SEED_LIMIT, SimResult, clipped, flatten, same_span, seed_values, t_quantile
from engine.serving.summary import LatencyKind, latency_shortfall, shortfall_rps

METRICS: tuple[Metric, ...] = ("ttft", "tpot", "max_tbt", "e2e")
"""The latency metrics a replicated result carries a CDF band for."""

HEADLINE_PATHS: dict[str, str] = {
    "ttft_p99_ms": "latency_ms.ttft.p99",
    "tpot_p99_ms": "latency_ms.tpot.p99",
    "slo_attainment": "slo_attainment",
    "goodput_rps": "goodput_rps",
    "usd_per_request": "cost.usd_per_request",
    "usd_per_million_output_tokens": "cost.usd_per_million_output_tokens",
    "throughput_rps": "throughput_rps",
}
"""Each headline figure (`engine.explain.presentation.headline` keys, plus throughput) and its summary path."""


@dataclass(frozen=True, kw_only=True)
class Interval:
    """A figure over seeds: its mean and two-sided 95% confidence interval (NaN bounds for one seed)."""

    mean: float
    low: float
    high: float
    n: int

    @property
    def half_width(self) -> float:
        """The t-interval's half-width, the ``± x`` of ``mean ± x`` (NaN for one seed): the wider side,
        as an interval kept to its figure's range (`engine.serving.run.clipped`) loses only the other."""
        return max(self.mean - self.low, self.high - self.mean)

    def overlaps(self, other: Interval) -> bool:
        """Whether the two intervals share a point (False when either has no width to compare)."""
        if not all(math.isfinite(v) for v in (self.low, self.high, other.low, other.high)):
            return False
        return self.low <= other.high and other.low <= self.high


def seed_scenarios(scenario: Scenario, n: int) -> list[Scenario]:
    """The `n` scenarios of a replication: seeds ``seed, seed+1, ...`` (the first is `scenario` itself)."""
    if n < 1:
        raise ValueError(f"replications must be at least 1, not {n}")
    return [scenario] + [
        scenario.model_copy(update={"seed": (scenario.seed + i) % SEED_LIMIT}) for i in range(1, n)
    ]


def interval(values: Sequence[float | None]) -> Interval | None:
    """Mean and 95% t-interval of the finite values (None when there are none).

    The same formula as `engine.serving.run.replicate`: mean ± t(0.975, n−1) · s / √n, except that a spread
    below float rounding (1e-9 of the mean) counts as none.
    """
    vals = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if not len(vals):
        return None
    mean = float(vals.mean())
    if len(vals) < 2:
        return Interval(mean=mean, low=math.nan, high=math.nan, n=1)
    spread = float(vals.std(ddof=1))
    if spread <= 1e-9 * abs(mean):  # equal values but for float rounding (a bill that no seed changes)
        spread = 0.0
    half = t_quantile(len(vals) - 1) * spread / math.sqrt(len(vals))
    return Interval(mean=mean, low=mean - half, high=mean + half, n=len(vals))


def figure_intervals(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Interval]:
    """Per numeric figure of the summaries (dotted paths, as `engine.serving.run.flatten` names them): its interval."""
    flat = [flatten(dict(s)) for s in summaries]
    same_span(summaries, flat)  # one kind of rate over seeds some of which are unsustainable, as `replicate`
    keys = sorted(set().union(*flat)) if flat else []
    out: dict[str, Interval] = {}
    for key in keys:
        per_seed = seed_values(flat, key)
        if any(
            v is None for v in per_seed
        ):  # none in some seed (an infinite percentile): no mean, as `replicate`
            continue
        iv = interval(per_seed)
        if iv is not None:
            low, high = clipped(key, iv.low, iv.high)  # as `replicate` keeps it: no share below 0 or above 1
            out[key] = replace(iv, low=low, high=high)
    return out


def headline_intervals(figures: Mapping[str, Interval]) -> dict[str, Interval | None]:
    """The headline figures' intervals (None where the runs have no value), by headline key."""
    return {key: figures.get(path) for key, path in HEADLINE_PATHS.items()}


def mean_summary(figures: Mapping[str, Interval]) -> dict[str, Any]:
    """A nested summary whose numbers are the means over seeds (for `engine.explain.presentation` functions)."""
    out: dict[str, Any] = {}
    for path, iv in figures.items():
        *parents, leaf = path.split(".")
        node = out
        for part in parents:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):  # a name with a dot clashed with a leaf: skip it
                break
            node = child
        else:
            node[leaf] = iv.mean
    return out


def _fractions(n: int, max_points: int) -> np.ndarray:
    """Fractions of requests to sample a CDF at: even, then denser towards the top (as `cdf_points`)."""
    half = max(max_points // 2, 2)
    marks = np.array([0.5, 0.9, 0.95, 0.99, 0.999, 0.9999])
    probs = np.concatenate([np.linspace(0.0, 1.0, half), 1.0 - np.geomspace(1.0 / n, 0.5, half), marks])
    return np.unique(np.clip(probs, 1.0 / n, 1.0))


def _latency_groups(scenario: Scenario, requests: pd.DataFrame, metric: Metric) -> dict[str, np.ndarray]:
    """Per class (and over all classes when several): the latencies of the window's requests, ms, a
    rejected or failed one's infinite (it never came, as `presentation.latency_cdfs` counts it); a
    completed one without the latency (a one-token answer's TPOT) left out."""
    col = LATENCY_COLUMNS[metric]
    rows = requests[measured_mask(scenario, requests)]
    names = [c.name for c in scenario.workload.classes]
    groups: dict[str, np.ndarray] = {}
    if len(names) > 1:
        groups[ALL_CLASSES] = late_values(rows, col) * 1e3
    for name in names:
        groups[name] = late_values(rows[rows["class"] == name], col) * 1e3
    return groups


def cdf_band(
    scenario: Scenario, tables: Sequence[pd.DataFrame], metric: Metric, max_points: int = 400
) -> pd.DataFrame:
    """Per class: the seeds' latency CDFs as one mean curve with a min–max band, in ms.

    At each fraction of requests ``fraction``, every seed's latency at that quantile (the smallest
    latency whose empirical CDF reaches it) is taken; ``latency_ms`` is their mean, ``low_ms`` and
    ``high_ms`` the lowest and highest seed, ``seeds`` how many seeds had requests of the class.
    Columns also match `engine.explain.presentation.latency_cdfs` (``class``, ``latency_ms``,
    ``fraction``), so a band frame can stand in for a CDF frame.
    """
    per_seed = [_latency_groups(scenario, t, metric) for t in tables]
    names = list(per_seed[0]) if per_seed else []
    frames = []
    for name in names:
        runs = [g[name] for g in per_seed if len(g.get(name, ()))]
        if not runs:
            continue
        p = _fractions(min(len(r) for r in runs), max_points)
        q = np.array([np.quantile(r, p, method="inverted_cdf") for r in runs])
        came = np.isfinite(q).all(axis=0)  # the curve stops where a seed's requests never came
        if not came.any():
            continue
        q = q[:, came]
        frames.append(
            pd.DataFrame(
                {
                    "class": name,
                    "latency_ms": q.mean(axis=0),
                    "fraction": p[came],
                    "low_ms": q.min(axis=0),
                    "high_ms": q.max(axis=0),
                    "seeds": len(runs),
                }
            )
        )
    if not frames:
        return pd.DataFrame(columns=["class", "latency_ms", "fraction", "low_ms", "high_ms", "seeds"])
    return pd.concat(frames, ignore_index=True)


@dataclass(frozen=True, kw_only=True)
class Replicas:
    """What N seeds of one scenario say together: figure intervals and latency CDF bands."""

    scenario: Scenario
    seeds: tuple[int, ...]
    figures: dict[str, Interval]
    headline: dict[str, Interval | None]
    bands: dict[str, pd.DataFrame]
    shortfalls: tuple[float | None, ...] = ()
    """Each seed's shortfall in req/s where its run was unsustainable (`summary.unsustainable`), else None."""
    growing: tuple[float | None, ...] | None = None
    """Each seed's shortfall where its latencies grow with it (`latency_shortfall`: not where a
    client's ceiling holds the backlog), else None; None: as `shortfalls`."""
    steady: frozenset[str] = frozenset()
    """The latency kinds that stay level in every seed whose latencies grow (`Shortfall.steady`)."""
    saturated: tuple[bool, ...] = ()
    """Each seed's costs at saturation (`sustain.saturated`: unsustainable, at capacity or its queue still
    rising at the window's end): the bill over full batches, in every mean over the seeds."""
    per_seed: dict[str, tuple[float | None, ...]] = field(default_factory=dict)
    """Each figure's value in each seed, in `seeds`' order (by the paths of `figures`): a paired
    comparison tests the seeds' differences (`compare_with_noise`)."""

    @property
    def n(self) -> int:
        """How many seeds were run."""
        return len(self.seeds)

    def worst_shortfall(self) -> float | None:
        """The largest shortfall of any seed: a figure set by the run's length in one seed is in every
        mean over the seeds (None: every seed kept up)."""
        short = [s for s in self.shortfalls if s is not None]
        return max(short) if short else None

    def worst_growing(self, kind: LatencyKind | None = None) -> float | None:
        """`worst_shortfall` over the seeds whose latencies grow with it (None: no seed's do), of
        `kind` where given (None where that latency stays level in every such seed)."""
        short = [s for s in (self.shortfalls if self.growing is None else self.growing) if s is not None]
        return max(short) if short and kind not in self.steady else None

    def level(self, kind: LatencyKind) -> bool:
        """Whether a latency of `kind` stays level in every seed whose other latencies grow."""
        return self.worst_growing() is not None and kind in self.steady

    def mean_summary(self) -> dict[str, Any]:
        """The summary of means (see `mean_summary`), marked unsustainable where any seed was; a class
        passes where it passed in every seed (Compare's bills are judged on it: the first seed alone
        called a side that failed in three seeds of four a cheaper winner, a review)."""
        out = mean_summary(self.figures)
        for name, c in (out.get("classes") or {}).items():
            if isinstance(c, dict) and "passes" in c:
                every = self.figures[f"classes.{name}.passes"].mean  # the share of seeds it passed in
                c["passes"] = every is not None and every >= 1.0 - 1e-12
        worst = self.worst_shortfall()
        if worst is not None:
            out["unsustainable"] = {"shortfall_rps": worst}
            if self.worst_growing() is None:  # every backlog at its client
                out["unsustainable"]["at_client"] = True
            elif self.steady:
                out["unsustainable"]["steady"] = sorted(self.steady)
        return out


def summarize(results: Sequence[SimResult], max_points: int = 400) -> Replicas:
    """Bring the runs of one scenario over several seeds together (the first run's scenario names it)."""
    if not results:
        raise ValueError("no runs to summarize")
    figures = figure_intervals([r.summary for r in results])
    flat = [flatten(dict(r.summary)) for r in results]
    sc = results[0].scenario
    tables = [r.requests for r in results]
    return Replicas(
        scenario=sc,
        seeds=tuple(r.scenario.seed for r in results),
        figures=figures,
        headline=headline_intervals(figures),
        bands={m: cdf_band(sc, tables, m, max_points) for m in METRICS},
        shortfalls=tuple(shortfall_rps(r.summary) for r in results),
        growing=tuple(latency_shortfall(r.summary) for r in results),
        saturated=tuple(saturated(r.summary) for r in results),
        steady=_steady([r.summary for r in results]),
        per_seed={key: tuple(seed_values(flat, key)) for key in figures},
    )


def _steady(summaries: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The latency kinds level in every summary whose latencies grow (none where no summary's grow)."""
    marks = [s["unsustainable"] for s in summaries if latency_shortfall(s) is not None]
    if not marks:
        return frozenset()
    return frozenset.intersection(*(frozenset(m.get("steady", ())) for m in marks))


NOISE = "within noise"
"""The `compare_with_noise` verdict for a difference smaller than the seeds' spread."""


def paired_noise(a: Replicas, b: Replicas, path: str) -> bool | None:
    """Whether the seeds' differences B - A of a figure are within noise: their 95% t-interval holds 0
    (None where either side lacks the figure's value in a seed, or the two ran other seeds)."""
    va, vb = a.per_seed.get(path), b.per_seed.get(path)
    if va is None or vb is None or a.seeds != b.seeds or len(va) != len(vb) or len(va) < 2:
        return None
    if any(x is None or y is None for x, y in zip(va, vb, strict=True)):
        return None
    diff = interval([y - x for x, y in zip(va, vb, strict=True) if x is not None and y is not None])
    if diff is None or not (math.isfinite(diff.low) and math.isfinite(diff.high)):
        return None
    return diff.low <= 0.0 <= diff.high


WAYS = {label: way for label, _path, _unit, way in compare_table.COMPARED}
"""Which way each compared figure is better (`compare_table.COMPARED`)."""


def _judged(noise: bool, known: bool, better: str, figure: str, change: Any) -> str:
    """A figure's verdict over seeds: `NOISE` for a side's lead the seeds could explain, and the side
    whose lead they say is real where the one seed's rule called it the same (a change under 0.5%: 99.72%
    against 100.00% SLO attainment read 'same' where every seed missed on A alone, a review)."""
    if noise and better in ("A", "B"):
        return NOISE
    if known and not noise and better == "same" and change is not None and change == change and change != 0:
        return "B" if (change < 0) == (WAYS[figure] == "lower") else "A"
    return better


def compare_with_noise(a: Replicas, b: Replicas, paired: bool = False) -> pd.DataFrame:
    """`engine.explain.compare_table.compare` of the two means, with each side's ± and a noise flag.

    Adds ``a_ci95`` and ``b_ci95`` (the half-widths of the 95% intervals) and ``within_noise``; ``better``
    reads `NOISE` for a difference within noise. Two sides on other requests are within noise where
    their intervals overlap; `paired` sides (the same requests in each seed: `pairing.unpaired` False)
    where the seeds' differences' interval holds 0 (`paired_noise`): B's goodput lower in every one of
    three seeds read "within noise" beside its SLO attainment, lower by the same requests, read real
    (a review).
    """
    table = compare_table.compare(a.mean_summary(), b.mean_summary())
    paths = {label: path for label, path, *_ in compare_table.COMPARED}
    ia = [a.figures.get(paths[f]) for f in table["figure"]]
    ib = [b.figures.get(paths[f]) for f in table["figure"]]
    table["a_ci95"] = [x.half_width if x is not None else None for x in ia]
    table["b_ci95"] = [x.half_width if x is not None else None for x in ib]
    noise = [x is not None and y is not None and x.overlaps(y) for x, y in zip(ia, ib, strict=True)]
    known = [x is not None and y is not None for x, y in zip(ia, ib, strict=True)]
    if paired:
        diffs = [paired_noise(a, b, paths[f]) for f in table["figure"]]
        noise = [n if d is None else d for n, d in zip(noise, diffs, strict=True)]
        known = [k or d is not None for k, d in zip(known, diffs, strict=True)]
    table["within_noise"] = noise
    told = zip(noise, known, table["better"], table["figure"], table["change"], strict=True)
    table["better"] = [_judged(*t) for t in told]
    order = [
        "figure",
        "unit",
        "a",
        "a_ci95",
        "b",
        "b_ci95",
        "change",
        "change_pct",
        "change_points",
        "better",
        "within_noise",
    ]
    return table[order]
