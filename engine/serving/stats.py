"""Column statistics as pandas takes them (NaN skipped), in numpy: what the summary is built from.

The summary is computed without pandas, so a command-line run never loads it; these helpers keep
its figures equal to what the per-request table's pandas columns would give (sums and means skip
NaN, counts by reason sort as ``value_counts`` does).
"""

from __future__ import annotations

import math

import numpy as np

from engine.serving.summary import LatencyStats, Percentiles


def by_reason(reasons: list[str], selected: np.ndarray) -> dict[str, int]:
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


def nan_free(values: np.ndarray) -> tuple[np.ndarray, int]:
    """(values with NaN as 0, how many are not NaN): pandas' way of skipping NaN in sums."""
    if values.dtype.kind != "f":
        return values, len(values)
    nan = np.isnan(values)
    missing = int(np.count_nonzero(nan))
    return (np.where(nan, 0.0, values) if missing else values), len(values) - missing


def nan_sum(values: np.ndarray) -> float:
    """The sum of a float column, NaN skipped, as pandas' ``Series.sum`` takes it."""
    kept, _ = nan_free(values)
    return float(kept.sum(dtype=np.float64))


def nan_mean(values: np.ndarray) -> float:
    """The mean of a float or boolean column, NaN skipped, as pandas' ``Series.mean`` takes it."""
    kept, count = nan_free(values)
    total = kept.sum(dtype=np.float64 if values.dtype.kind == "f" else np.int64)
    return float(total / np.float64(count)) if count > 0 else math.nan


def percentile(values: np.ndarray, q: float) -> float | None:
    """The q-th percentile of the finite values (None when there are none).

    numpy's default (linear) percentile, with its arithmetic step for step, so every figure is the
    same to the last bit (tests/serving/test_stats.py); ``np.percentile`` itself calls
    ``np.unique``, whose first call imports ``numpy.ma`` (46 M instructions, 1% of a whole run).
    """
    v = values[np.isfinite(values)]
    n = len(v)
    if not n:
        return None
    at = (n - 1) * (q / 100)  # numpy's virtual index, (n - 1) * quantile
    if at >= n - 1:  # numpy takes the last value twice, at index -1 (so t = at + 1)
        a = b = float(v.max())
        t = at + 1
    elif at < 0:
        a = b = float(v.min())
        t = at
    else:
        lo = math.floor(at)
        a, b = np.partition(v, (lo, lo + 1))[lo : lo + 2].tolist()
        t = at - lo
    diff = b - a
    return float(b - diff * (1 - t) if t >= 0.5 else a + diff * t)  # numpy's _lerp


def percentiles(values: np.ndarray) -> Percentiles:
    """The p50, p90 and p99 of the finite values (each None when there are none)."""
    return {"p50": percentile(values, 50), "p90": percentile(values, 90), "p99": percentile(values, 99)}


def latency_stats(values: np.ndarray) -> LatencyStats:
    """`percentiles` and the mean of the values (the mean None when none is finite)."""
    return {**percentiles(values), "mean": float(np.nanmean(values)) if np.isfinite(values).any() else None}
