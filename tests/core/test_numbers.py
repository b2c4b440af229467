"""A rate in a sentence reads the same on every page and command."""

from __future__ import annotations

from engine.core import rate2


def test_a_rate_reads_two_significant_figures_and_whole_numbers_from_ten() -> None:
    """'short by 1.5e+02 req/s' stood in capacity's table and the planner's words (a review)."""
    assert [rate2(x) for x in (3.44, 0.0612, 12.6, 148.7, 1234.0)] == ["3.4", "0.061", "13", "149", "1,234"]


def test_plain_never_writes_an_exponent_above_a_million() -> None:
    """offline-batch's one-hour TTFT target read '(target 3.6e+06 ms)' (a CLI review)."""
    from engine.core.numbers import plain

    assert [plain(v) for v in (30, 1000.0, 0.5, 3_600_000.0, 1234567.0, 0.25)] == [
        "30",
        "1,000",
        "0.5",
        "3,600,000",
        "1,234,567",
        "0.25",
    ]
