"""The lengths a benchmark drew for its requests, where its harness draws them from a range.

SGLang's `bench_serving` (the SGLang cookbook's client: calibration-moe-sources.md S2) builds its
random dataset with `--random-range-ratio` 0.0 by default, so each request's lengths are uniform
below the requested ones: `sample_random_requests` draws the inputs `np.random.randint(1, L_in + 1,
size=n)`, then the outputs `np.random.randint(lo, L_out + 1, size=n)` (lo 0 in SGLang 0.5.6, 1 in
0.5.7 on), with numpy's legacy generator seeded by `--seed` (default 1; the cookbook's commands
set none). Those draws reproduce every cookbook block's stated mean actual lengths to the row's
decimal (1000/1000 over 80 prompts: 495.85 and 509.06 against 495.9 and 509.1; over 10 prompts
610.1 and 421.0), so a row is replayed with its own requests' lengths, not only their means.

The predictor is closed-form, so the requests are summarised as `CLASSES` x `CLASSES` length
classes: the sorted inputs and outputs each cut into `CLASSES` groups of (nearly) equal size, a
class at its group's mean, weighted by the share of requests in both groups (the draws are
independent). The classes keep the means of the draws (up to rounding to whole tokens).
"""

from __future__ import annotations

import numpy as np

BENCH_SERVING_SEED = 1
"""`sglang.bench_serving --seed`'s default, which seeds numpy's legacy generator (`np.random.seed`)."""

CLASSES = 4
"""Groups each of the input and the output lengths is cut into (16 length classes a point)."""

MEAN_DIGITS = 1
"""The stated means' decimals (calibration-moe-sources.md: totals over successful requests)."""

Classes = tuple[tuple[int, int, float], ...]
"""(prompt tokens, output tokens, share of the requests) of each length class."""


def bench_serving(
    requested_in: int, requested_out: int, prompts: int, out_low: int
) -> tuple[np.ndarray, np.ndarray]:
    """The input and output lengths `bench_serving`'s random dataset draws at range ratio 0.0."""
    rng = np.random.RandomState(BENCH_SERVING_SEED)  # the legacy stream np.random.seed(1) starts
    inputs = rng.randint(1, requested_in + 1, size=prompts)
    outputs = rng.randint(out_low, requested_out + 1, size=prompts)
    return inputs, outputs


def matching_draws(
    requested: tuple[int, int], prompts: int, means: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray] | None:
    """The draws whose means are the stated ones (to their decimal), trying both releases' lowest
    output length; None when neither reproduces them (another seed or harness: lengths unknown)."""
    tol = 0.5 * 10.0**-MEAN_DIGITS + 1e-9
    for out_low in (0, 1):
        inputs, outputs = bench_serving(requested[0], requested[1], prompts, out_low)
        if abs(inputs.mean() - means[0]) <= tol and abs(outputs.mean() - means[1]) <= tol:
            return inputs, outputs
    return None


def _groups(values: np.ndarray, k: int) -> list[tuple[float, float]]:
    """(mean, share) of `values` sorted and cut into `k` groups of nearly equal size."""
    parts = [p for p in np.array_split(np.sort(values), min(k, len(values))) if len(p)]
    return [(float(p.mean()), len(p) / len(values)) for p in parts]


def classes(inputs: np.ndarray, outputs: np.ndarray, k: int | None = None) -> Classes:
    """The requests as length classes (`Classes`): every input group with every output group, each
    cut in `k` groups (None: `CLASSES`)."""
    k = CLASSES if k is None else k
    return tuple(
        (max(1, round(i)), max(1, round(o)), wi * wo)
        for i, wi in _groups(inputs, k)
        for o, wo in _groups(outputs, k)
    )
