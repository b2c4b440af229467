"""The summary's column statistics against the numpy and pandas functions they stand in for."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.serving.stats import percentile

FINITE = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)
QS = st.one_of(st.sampled_from([0, 1, 50, 90, 95, 99, 99.9, 100]), st.floats(min_value=0, max_value=100))


@settings(max_examples=400, deadline=None)
@given(st.lists(FINITE, min_size=1, max_size=60), QS)
def test_percentile_is_numpys_to_the_bit(values: list[float], q: float) -> None:
    got = percentile(np.array(values), q)
    want = float(np.percentile(np.array(values), q))
    assert got is not None
    assert got == want and math.copysign(1, got) == math.copysign(1, want), (got, want)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 1001, 9692])
def test_percentile_of_latency_like_columns(n: int) -> None:
    rng = np.random.default_rng(n)
    column = rng.lognormal(-1.0, 1.2, n)
    column[rng.random(n) < 0.1] = np.nan  # a column's undefined rows are skipped
    for q in (50, 90, 99, 99.9):
        finite = column[np.isfinite(column)]
        want = float(np.percentile(finite, q)) if len(finite) else None
        assert percentile(column, q) == want


def test_percentile_of_nothing_finite_is_none() -> None:
    assert percentile(np.array([np.nan, np.inf]), 50) is None
    assert percentile(np.array([]), 50) is None
