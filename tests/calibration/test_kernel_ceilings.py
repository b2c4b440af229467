"""Fitted profiles stay below what plain kernels reach on the same silicon (measured on an H200).

data/reference/kernels-h200.csv holds this project's own kernel measurements on one H200
(bench/device/h200_kernels.py): BF16 and FP8 GEMMs at Llama-3.1-70B's shapes, HBM streaming
(copy, GEMV, FlashAttention decode) and FlashAttention prefill. A serving stack runs those kernels
and more (scheduling, sampling, communication), so a profile fitted to serving measurements on a
Hopper chip that reached a higher fraction of peak than the kernels themselves would mean the fit
absorbed something else (a wrong peak, a misread row).
"""

from __future__ import annotations

import pandas as pd
import pytest

from engine.catalog.entries import load_catalog
from engine.core import datafiles

HOPPER = ("h100-sxm", "h200", "h800-sxm", "h20", "gh200")  # one die family: the H200's kernels bound them


@pytest.fixture(scope="module")
def ceilings() -> dict[str, float]:
    kernels = pd.read_csv(datafiles.data_dir() / "reference" / "kernels-h200.csv")
    h200 = load_catalog().hardware["h200"]
    gemm = kernels[kernels["kind"] == "gemm"]
    return {
        "bf16": float(gemm.loc[gemm["dtype"] == "bf16", "tflops"].max()) / h200.tflops["bf16"],
        "fp8": float(gemm.loc[gemm["dtype"] == "fp8", "tflops"].max()) / h200.tflops["fp8"],
        "bandwidth": float(kernels["gb_s"].max()) / (h200.memory_tb_s * 1000.0),
        "attention": float(kernels.loc[kernels["kind"] == "attn_prefill", "tflops"].max())
        / h200.tflops["bf16"],
    }


def test_the_measured_ceilings_are_plausible(ceilings: dict[str, float]) -> None:
    # large GEMMs reach most of the peak, FP8 a little less of its (twice as high) peak than BF16
    assert 0.6 < ceilings["fp8"] < ceilings["bf16"] < 1.0
    assert 0.7 < ceilings["bandwidth"] <= 1.0
    assert ceilings["attention"] < ceilings["bf16"]  # FlashAttention runs below dense GEMM


def test_fitted_hopper_profiles_stay_below_the_kernel_ceilings(ceilings: dict[str, float]) -> None:
    cat = load_catalog()
    checked = 0
    for chip in HOPPER:
        for name, p in cat.hardware[chip].profiles.items():
            if not p.source.startswith("fitted"):
                continue
            checked += 1
            assert p.eta_compute <= ceilings["bf16"], (chip, name, p.eta_compute)
            assert p.eta_bandwidth <= ceilings["bandwidth"], (chip, name, p.eta_bandwidth)
    assert checked >= 4  # H100's four stacks and H200's TensorRT-LLM profile at least


def test_the_low_precision_matmul_speed_up_is_the_measured_one(ceilings: dict[str, float]) -> None:
    """The cost model's GEMM fractions are these measurements (rounded), not fitted numbers."""
    from engine.costmodel import perf

    assert abs(perf.MATMUL_FRACTION_BF16 - ceilings["bf16"]) <= 0.001
    assert abs(perf.MATMUL_FRACTION_LOW - ceilings["fp8"]) <= 0.001


def test_the_unhidden_share_is_the_measured_one() -> None:
    """`perf.UNHIDDEN_FRACTION` is the H200 GEMMs' own: near the ridge (compute and memory times
    within a factor of two), a GEMM takes the longer of the two plus this share of the shorter."""
    import numpy as np

    from engine.costmodel import perf

    kernels = pd.read_csv(datafiles.data_dir() / "reference" / "kernels-h200.csv")
    gemm = kernels[kernels["kind"] == "gemm"]
    stream = float(kernels.loc[kernels["kind"] == "gemv", "gb_s"].max()) * 1e9  # a weight matrix's read rate
    shares = []
    for dtype, width in (("bf16", 2), ("fp8", 1)):
        rows = gemm[gemm["dtype"] == dtype]
        best = float(rows["tflops"].max()) * 1e12
        for shape, seconds in zip(rows["shape"], rows["seconds"], strict=True):
            m, k, n = (int(x) for x in shape.split("x"))
            compute = 2.0 * m * n * k / best
            memory = (n * k * width + 2 * (m * k + m * n)) / stream
            lo, hi = sorted((compute, memory))
            if lo >= hi / 2.0:
                shares.append((seconds - hi) / lo)
    assert len(shares) == 6  # 256 tokens, three shapes, two precisions
    assert min(shares) > 0.0 and max(shares) < 1.0  # the two overlap, but not wholly
    assert abs(perf.UNHIDDEN_FRACTION - float(np.median(shares))) <= 0.005
