"""A chip's dense peaks by precision, checked in order: a narrower precision runs at least as fast."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ORDER = (("bf16", "fp8"), ("fp8", "fp4"), ("bf16", "fp4"))
"""Each precision beside a narrower one whose peak may not be below it (BF16 beside FP4 too: with FP8
left out, an FP4 peak of 0.5 beside BF16's 989 was taken, and FP4 weights ran the chip at 100% compute:
a review)."""


def check_peaks(tflops: Mapping[Any, float]) -> None:
    """Raise ValueError naming the first narrower precision whose peak is below a wider one's: a custom
    chip's FP8 peak of 100 beside its BF16 989 was saved, and its FP8 weights ran slower than BF16 would
    (a review)."""
    for wide, narrow in ORDER:
        if wide in tflops and narrow in tflops and tflops[narrow] < tflops[wide]:
            raise ValueError(
                f"tflops.{narrow}: {tflops[narrow]:g} is below the {wide} peak ({tflops[wide]:g}); a narrower "
                f"precision runs at least as fast on the same chip (leave {narrow} out where it has no such path)"
            )
