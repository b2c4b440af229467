"""The summary's column statistics: numpy's percentile without numpy.ma, bit for bit."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.serving.stats import linear_percentile, percentile

QS = (0, 1, 12.5, 33.3, 50, 90, 99, 99.9, 100)


def _same(got: float, want: float) -> bool:
    """Equal as floats bit for bit (so -0.0 differs from 0.0)."""
    return got.hex() == float(want).hex()


@pytest.mark.parametrize("n", [1, 2, 3, 7, 100, 1001, 9692])
def test_linear_percentile_is_numpys_bit_for_bit(n: int) -> None:
    """Latencies, ties, negatives and signed zeros: every percentile the same float as np.percentile's."""
    rng = np.random.default_rng(n)
    cases = [
        rng.lognormal(-3.0, 1.5, n),
        rng.integers(0, 4, n).astype(float),  # many ties
        rng.normal(0.0, 1e6, n),
        np.where(rng.random(n) < 0.5, -0.0, 0.0),
        np.full(n, 0.1),
    ]
    for values in cases:
        for q in QS:
            want = np.percentile(values, q)
            got = linear_percentile(values.copy(), q)
            assert _same(got, want), (n, q, got, float(want))


def test_linear_percentile_leaves_its_input_alone() -> None:
    """The summary reads a column again after its percentiles: it must not come back reordered."""
    values = np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    linear_percentile(values, 50)
    assert values.tolist() == [3.0, 1.0, 2.0, 5.0, 4.0]


def test_percentile_skips_what_is_not_finite() -> None:
    """NaN and infinities are left out; none left is None."""
    values = np.array([np.nan, 1.0, np.inf, 3.0, -np.inf])
    assert percentile(values, 50) == 2.0
    assert percentile(np.array([np.nan, np.inf]), 50) is None


def test_a_run_summary_loads_no_masked_arrays() -> None:
    """np.percentile and np.unique import numpy.ma (about 10 ms); a summary needs neither."""
    code = (
        "import sys; from engine.cli.main import main; "
        "main(['run', 'chat-disaggregated', '--json', '--set', 'duration_s=30']); "
        "sys.stderr.write(str('numpy.ma' in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr.strip() == "False"


FINITE = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)
HYP_QS = st.one_of(st.sampled_from([0, 1, 50, 90, 95, 99, 99.9, 100]), st.floats(min_value=0, max_value=100))


@settings(max_examples=400, deadline=None)
@given(st.lists(FINITE, min_size=1, max_size=60), HYP_QS)
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
