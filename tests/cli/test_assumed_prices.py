"""A cost that rests on a price the catalog assumes says so wherever it is compared (a capacity planner's
review: `compare` called the side billed at an assumed price better on cost, and only its JSON said why)."""

from __future__ import annotations

import pytest

from engine.cli import main as cli


def test_compare_says_a_side_billed_at_an_assumed_price(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["compare", "decode-asic", "--set", "duration_s=20"]) == 0
    out = capsys.readouterr().out
    assert "A is billed at a price the catalog assumes, not a published rate: decode-asic $1.80/h" in out
    assert "B is billed at" not in out  # the counterpart's H100 rent is cited
