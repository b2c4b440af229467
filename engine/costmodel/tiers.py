"""Memory tiers of an instance: where its weights and KV cache live, and how long reading them takes.

A chip may state on-chip SRAM before its main memory (HBM on most chips) and DDR after it
(`HardwareSpec.memory_tiers`: SambaNova's SN40L has all three). An instance places its weights
first, from the fastest tier on, then the activations' reserve, then the KV cache, each tier
filled to its capacity (chips x GiB x mem_fraction) before the next one takes the rest. An
iteration reads each byte at its own tier's bandwidth (a pipeline stage's chips x TB/s x eta_B):

- the weights it streams are spread over their tiers as the weights are held (a MoE model's
  touched experts included), so they cost a fixed time per byte (`MemoryTiers.weight_s_per_byte`);
- the KV it reads and writes is taken from the start of the KV region on: the running requests'
  cache fills the fast tier that the weights left free, then spills to the next one.

So a model that fits in the SRAM of its chips reads its weights at SRAM speed (where dataflow
chips win: decode), and a long context spills its KV to the slower tier (where they lose).
Offsets are per data-parallel rank (its chips, its copy of the weights), since each rank reads
its own. A chip without an SRAM or DDR tier never comes here: its iteration reads bytes over its
one bandwidth, as before (docs/cost-model.md, "Memory tiers").
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.catalog.specs import GIB, HardwareSpec


@dataclass(frozen=True)
class MemoryTiers:
    """An instance's memory tiers in fill order, with its weights and KV placed in them."""

    names: tuple[str, ...]
    """Tier names in fill order ('sram', 'hbm', 'ddr')."""
    capacity_bytes: tuple[float, ...]
    """Bytes each tier holds for one data-parallel rank (all its chips, at mem_fraction)."""
    bytes_per_s: tuple[float, ...]
    """Achievable read rate of each tier for one pipeline stage (tp chips at eta_B)."""
    weight_bytes: float
    """Weight bytes one rank holds, placed from the first tier on."""
    kv_start_bytes: float
    """Offset at which the KV cache begins: the weights plus the activations' reserve."""

    @classmethod
    def build(
        cls,
        hw: HardwareSpec,
        *,
        chips_per_rank: int,
        tp: int,
        mem_fraction: float,
        eta_bandwidth: float,
        weight_bytes: float,
        reserve_bytes: float,
    ) -> MemoryTiers:
        """The tiers of one rank of `chips_per_rank` chips, `tp` per stage (`Instance.memory_tiers`)."""
        tiers = hw.memory_tiers()
        return cls(
            names=tuple(name for name, _, _ in tiers),
            capacity_bytes=tuple(chips_per_rank * gb * GIB * mem_fraction for _, gb, _ in tiers),
            bytes_per_s=tuple(tp * tb_s * 1e12 * eta_bandwidth for _, _, tb_s in tiers),
            weight_bytes=weight_bytes,
            kv_start_bytes=weight_bytes + reserve_bytes,
        )

    def span_s(self, start: Any, stop: Any) -> Any:
        """Seconds to read the bytes at offsets [start, stop), each at its tier's rate (arrays too).

        Bytes beyond the last tier's capacity are read at its rate (a capacity check refuses such
        an instance before it serves; this keeps the function total)."""
        total: Any = 0.0
        lo = 0.0
        last = len(self.capacity_bytes) - 1
        for i, (size, rate) in enumerate(zip(self.capacity_bytes, self.bytes_per_s, strict=True)):
            hi = math.inf if i == last else lo + size
            overlap = np.maximum(np.minimum(stop, hi) - np.maximum(start, lo), 0.0)
            total = total + overlap / rate
            lo = hi
        return total

    @functools.cached_property
    def weight_s_per_byte(self) -> float:
        """Seconds per weight byte streamed: the weights' mean over the tiers that hold them."""
        if self.weight_bytes <= 0:
            return 1.0 / self.bytes_per_s[0]
        return float(self.span_s(0.0, self.weight_bytes)) / self.weight_bytes

    def read_s(self, weight_bytes: Any, kv_bytes: Any) -> Any:
        """Seconds an iteration spends reading `weight_bytes` of weights and `kv_bytes` of KV."""
        start = self.kv_start_bytes
        return np.asarray(weight_bytes) * self.weight_s_per_byte + self.span_s(
            start, start + np.asarray(kv_bytes)
        )

    def weight_shares(self) -> dict[str, float]:
        """Fraction of the weights each tier holds (what the Hardware page and the catalog show)."""
        out, lo, last = {}, 0.0, len(self.names) - 1
        for i, (name, size) in enumerate(zip(self.names, self.capacity_bytes, strict=True)):
            hi = math.inf if i == last else lo + size
            held = max(min(self.weight_bytes, hi) - lo, 0.0)
            out[name] = held / self.weight_bytes if self.weight_bytes > 0 else 0.0
            lo = hi
        return out

    def kv_tier_tokens(self, kv_bytes_per_token: float) -> dict[str, int]:
        """Tokens of KV cache each tier holds beside the weights and the reserve (per rank)."""
        out, lo = {}, 0.0
        for name, size in zip(self.names, self.capacity_bytes, strict=True):
            free = max(lo + size - max(self.kv_start_bytes, lo), 0.0)
            out[name] = int(free // kv_bytes_per_token) if kv_bytes_per_token > 0 else 0
            lo += size
        return out
