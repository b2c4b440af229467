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
    """The q-th percentile of the finite values (None when there are none): `linear_percentile`."""
    v = values[np.isfinite(values)]
    return linear_percentile(v, q) if len(v) else None


def linear_percentile(v: np.ndarray, q: float) -> float:
    """``float(np.percentile(v, q))`` of non-empty finite values, the same float.

    numpy's default ("linear") method, step for step: the virtual index (n - 1) * (q / 100), the
    two order statistics either side of it (an index at or past the last is -1, as in numpy), and
    their interpolation from the nearer one. np.percentile finds those order statistics through
    ``np.unique``, whose check for masked arrays imports ``numpy.ma`` (about 50 M instructions,
    10 ms, in a ``run --json`` process that needs nothing else of it); `np.partition` finds them
    here. tests/serving/test_stats.py holds it to np.percentile bit for bit.
    """
    n = len(v)
    virtual = (n - 1) * (q / 100)
    if virtual >= n - 1:
        below = above = -1
    else:
        below = math.floor(virtual)
        above = below + 1
    # numpy's own partition points, so that equal values (0.0 and -0.0) land where they land there
    part = np.partition(v, sorted({0, -1, below, above}))
    a, b = float(part[below]), float(part[above])
    gamma = virtual - below
    diff = b - a
    return b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma


def percentiles(values: np.ndarray) -> Percentiles:
    """The p50, p90 and p99 of the finite values (each None when there are none)."""
    return {"p50": percentile(values, 50), "p90": percentile(values, 90), "p99": percentile(values, 99)}


def latency_stats(values: np.ndarray) -> LatencyStats:
    """`percentiles` and the mean of the values (the mean None when none is finite)."""
    return {**percentiles(values), "mean": float(np.nanmean(values)) if np.isfinite(values).any() else None}
