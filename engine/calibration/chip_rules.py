"""Which rule gives a chip its calibration profile when it has no fit of its own (`engine.calibration.trust`):
the chips on one die, the newer dies of a fitted architecture, the chips left to the transfer and why,
and the serving stacks a stack borrows from, closest first. Plain tables, no imports: a test keeps the
catalog and them in step, so a new chip cannot arrive without a rule."""

from __future__ import annotations

TRANSFER_CHIPS: dict[str, str] = {
    "a100-80g": "no serving-stack measurements of the A100 in the reference data (Splitwise's harness only)",
    "a800-80g": "same silicon as the A100, which has no serving-stack fit",
    "b300": "a new die (Blackwell Ultra), no measurements in the reference data",
    "groq-lpu": "no serving-stack measurements in the reference data (Groq serves tokens, not chips)",
    "l4": "its only reference rows serve a vision model the catalog lacks",
    "mi355x": "a new die (CDNA 4), no public measurements in the reference data",
    **dict.fromkeys(
        ("gaudi3", "inferentia2", "jetson-agx-orin", "l40s", "qualcomm-ai100-std", "qualcomm-ai100-ultra"),
        "no public measurements in the reference data",
    ),
    **dict.fromkeys(
        ("tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x", "trainium2"),
        "no public measurements in the reference data",
    ),
}
"""Catalog chips whose factors come by conservative transfer (rule 4), and why. Every catalog chip is
fitted, on the same silicon as a fitted chip, illustrative, or listed here: a test keeps the catalog
and these tables in step, so a new chip cannot arrive without a rule."""

SAME_SILICON: dict[str, str] = {
    "h200": "h100-sxm",
    "h800-sxm": "h100-sxm",
    "h20": "h100-sxm",
    "gh200": "h100-sxm",
    "a800-80g": "a100-80g",
    "gb200": "b200",
    "mi325x": "mi300x",
    "gb300": "b300",
}
"""Chips built on the same die as another catalog chip (docs/calibration.md cites each)."""

SAME_ARCHITECTURE: dict[str, str] = {"b300": "b200"}
"""A newer die of a fitted chip's architecture (Blackwell Ultra after Blackwell: the same BF16 and FP8
peaks, 8 TB/s, more memory and FP4), whose transfer (rule 5) takes that chip's fractions under the
stack rather than the quartiles, keeping the transfer's basis, mark and band: the quartiles made a
B300 decode and prefill about 30% slower than the B200 whose peaks it shares, and ranked it below
it (an infrastructure engineer's review, 2026-12-07). Its same-silicon chips follow it (GB300)."""

STACK_ORDER = ("trtllm", "vllm", "vllm-v0", "sglang")
"""Production stacks."""

RELATED: dict[str, tuple[str, ...]] = {
    "vllm": ("vllm-v0", "sglang", "trtllm"),
    "vllm-v0": ("vllm", "sglang", "trtllm"),
    "sglang": ("vllm", "vllm-v0", "trtllm"),
    "trtllm": ("vllm", "sglang", "vllm-v0"),
    "vllm-ascend": ("mindie",),
    "mindie": ("vllm-ascend",),
}
"""For a stack with no fit on a chip, the other stacks whose profile it borrows, closest first."""

PLATFORM_STACKS: dict[tuple[str, str], str] = {("ascend", "vllm"): "vllm-ascend"}
"""(chip id prefix, stack) -> the stack as it runs there: vLLM on an Ascend NPU is vLLM-Ascend, vLLM
with Huawei's hardware plugin (`vllm serve`), so the chip's vLLM-Ascend fit is its vLLM fit."""


def native_stack(chip: str, stack: str) -> str:
    """`stack` as it runs on `chip` (`PLATFORM_STACKS`)."""
    return next((n for (pre, s), n in PLATFORM_STACKS.items() if s == stack and chip.startswith(pre)), stack)
