"""The summary's column statistics: numpy's percentile without numpy.ma, bit for bit."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

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
