"""Kernel ceilings on one GPU: what fraction of its datasheet peaks plain kernels reach.

Run on the device machine (torch with CUDA): `python bench/device/h200_kernels.py OUT.csv`.
Measures, with CUDA events over repeated launches after a warm-up:
- dense GEMM throughput in BF16 and FP8 (torch._scaled_mm, per-tensor scales) at the shapes of
  Llama-3.1-70B's projections (K=8192, N=8192/10240/28672) for 1 to 16,384 tokens;
- HBM bandwidth: a device-to-device copy of 8 GiB, and a BF16 GEMV streaming a 2 GiB matrix;
- attention: torch's scaled_dot_product_attention (FlashAttention backend) for prefill (causal,
  64 query heads, 8 KV heads, head dim 128) at 1K-32K tokens, and a decode step (one query per
  sequence) over 2K-32K contexts at batch 32.
Each row: kind, dtype, shape, seconds per call, achieved TFLOP/s or GB/s. The project never needs
this script; its output (data/reference/kernels-h200.csv) documents a sanity bound for the
fitted profiles (docs/calibration.md).
"""

from __future__ import annotations

import csv
import sys
from typing import Any

import torch
import torch.nn.functional as F


def timed(fn: Any, *args: Any, reps: int = 20, **kwargs: Any) -> float:
    """Seconds per call of fn(*args, **kwargs), after a warm-up."""
    for _ in range(3):
        fn(*args, **kwargs)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn(*args, **kwargs)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1000.0 / reps


def main(out: str) -> None:
    dev = torch.device("cuda")
    rows = []
    name = torch.cuda.get_device_name(0)
    k = 8192
    for n in (8192, 10240, 28672):
        w16 = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        w8 = w16.to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device=dev)
        for m in (1, 16, 64, 256, 1024, 4096, 16384):
            x16 = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            x8 = x16.to(torch.float8_e4m3fn)
            flops = 2.0 * m * n * k
            t = timed(torch.matmul, x16, w16.t())
            rows.append(["gemm", "bf16", f"{m}x{k}x{n}", t, flops / t / 1e12, ""])
            if m % 16 == 0:
                t8 = timed(torch._scaled_mm, x8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                rows.append(["gemm", "fp8", f"{m}x{k}x{n}", t8, flops / t8 / 1e12, ""])
        del w16, w8
    src = torch.empty(8 * 2**30, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    t = timed(dst.copy_, src, reps=10)
    rows.append(["copy", "u8", "8GiB", t, "", 2 * src.numel() / t / 1e9])
    del src, dst
    mat = torch.randn(32768, 32768, device=dev, dtype=torch.bfloat16)
    vec = torch.randn(32768, 1, device=dev, dtype=torch.bfloat16)
    t = timed(torch.matmul, mat, vec, reps=20)
    rows.append(["gemv", "bf16", "32768x32768", t, "", mat.numel() * 2 / t / 1e9])
    del mat, vec
    h, kv, d = 64, 8, 128
    for s in (1024, 4096, 16384, 32768):
        q = torch.randn(1, h, s, d, device=dev, dtype=torch.bfloat16)
        kk = torch.randn(1, kv, s, d, device=dev, dtype=torch.bfloat16).repeat_interleave(h // kv, dim=1)
        v = torch.randn_like(kk)
        t = timed(F.scaled_dot_product_attention, q, kk, v, is_causal=True, reps=5)
        flops = 4.0 * h * d * s * s / 2  # causal: half the pairs, QK^T and PV
        rows.append(["attn_prefill", "bf16", f"s{s}", t, flops / t / 1e12, ""])
        del q, kk, v
    b = 32
    for c in (2048, 8192, 32768):
        q = torch.randn(b, h, 1, d, device=dev, dtype=torch.bfloat16)
        kk = torch.randn(b, kv, c, d, device=dev, dtype=torch.bfloat16)
        v = torch.randn_like(kk)
        t = timed(F.scaled_dot_product_attention, q, kk, v, enable_gqa=True, reps=10)
        kv_bytes = 2 * b * kv * c * d * 2
        rows.append(["attn_decode", "bf16", f"b{b}c{c}", t, "", kv_bytes / t / 1e9])
        del q, kk, v
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["device", "kind", "dtype", "shape", "seconds", "tflops", "gb_s"])
        for r in rows:
            w.writerow([name, *r])
    for r in rows:
        print(r)


if __name__ == "__main__":
    main(sys.argv[1])
