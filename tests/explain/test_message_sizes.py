"""Messages about untrusted input stay short, and a target keeps a unit it can be read in (a browser review:
a 40 MB first line and a 20 MB class label were quoted whole, stalling the page for minutes; a 1,000 ms
target beside a TTFT of ten hours read "0.0 h")."""

from __future__ import annotations

from engine.core.text import clipped
from engine.explain.presentation import target_text
from engine.explain.trace_files import trace_problem


def test_a_huge_first_line_is_named_in_a_few_hundred_characters() -> None:
    said = trace_problem("upload.csv", "x" * 5_000_000 + ",y" * 100_000)
    assert said.startswith("not a CSV trace Fengong reads: its header has x") and len(said) < 600


def test_clipped_keeps_both_ends_around_an_ellipsis() -> None:
    assert clipped("short") == "short"
    cut = clipped("a" * 30 + "b" * 30)
    assert cut.startswith("a") and cut.endswith("b") and "…" in cut and len(cut) <= 40


def test_a_target_far_below_its_figure_keeps_its_own_unit() -> None:
    assert target_text(1000.0, 10 * 3_600_000.0) == "1,000 ms"  # not '0.0 h'
    assert target_text(5000.0, 10_100.0) == "5.0 s"  # a figure in seconds: the target in seconds too
