"""Software maturity: how far a chip's serving stack is from a mature, measured one, and what a port costs.

A chip runs as fast as its kernels let it. The same silicon runs a new model markedly slower
under an early stack than under the stack a year of tuning later (fused attention, tuned GEMMs,
graphs that hide launches), so a pool states the maturity of its (chip, stack) pair
(`Pool.maturity`):

- ``measured``: a mature stack with a measured calibration profile. The profile's fractions
  stand as they are (factor 1). A chip fitted under the scenario's stack is this level whether or
  not the pool says so;
- ``vendor``: the chip vendor's own stack with partial kernel coverage (some operators fall back
  to generic kernels, no graph capture): the fractions of peak times 0.8 (compute) and 0.85
  (bandwidth), the per-iteration overhead times 1.5, and its band widened by a factor 1.25 on
  each side;
- ``port``: a new port of the model to the chip: fractions times 0.5 and 0.6, overhead times 2,
  band widened by 1.5 on each side.

Unset (the default), a pool keeps exactly the numbers its calibration rule gives it today
(`engine.calibration.trust`): no factor, no porting cost.

**Sources of the factors.** NVIDIA's TensorRT-LLM doubled the H100's GPT-J throughput over the
stack of six weeks before (NVIDIA, "TensorRT-LLM supercharges LLM inference on H100", Sept
2023), and the H100 nearly tripled its GPT-J result between MLPerf Inference v3.1 and v4.0 on
software alone (NVIDIA, "H200 and TensorRT-LLM set MLPerf LLM inference records", March 2024):
a stack a year from maturity runs at about 1/2 to 1/3 of the mature one, so a port's fractions
take the middle, 0.5 of the compute fraction, and its band is widened by 1.5 to cover 1.33x to
3x. Bandwidth-bound decode suffers less than compute-bound prefill (a streaming read needs no
tuned tiles): 0.6 and 0.85 (assumption: no study separates the two). The vendor level
(assumption: between the two, from the reports that MI300X under early ROCm vLLM builds ran
FP8 GEMMs slower than BF16 for want of tuned kernels, and that GEMM tuning alone moved its
throughput by several times on some shapes; Nscale, "MI300X GEMM tuning", 2024) and the
overheads (assumption: launch overhead doubles without graph capture and fused small kernels)
carry no measurement and are marked so in docs/calibration.md.

**Porting cost.** A one-off engineering effort per (chip, stack): engineer-months at a price per
engineer-month (`CostBasis.porting_engineer_months`, `CostBasis.usd_per_engineer_month`). The
defaults by level (assumption: 0 for a measured stack, 6 engineer-months to fill a vendor
stack's missing kernels for one model, 24 to port and tune a model on a new stack, from the
team sizes vendors quote for bring-up; illustrative) apply only where a pool sets its maturity.
Ownership amortises it like capital, straight-line over the basis' amortisation years, per hour
of the deployment (not per chip: the effort does not grow with the fleet), shared among the
chip's pools by chips (`engine.costmodel.ownership.porting_usd_per_hour`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.catalog.specs import CalibrationProfile

Maturity = Literal["measured", "vendor", "port"]
"""How mature a chip's serving stack is: measured (mature), vendor (partial kernels), port (new)."""

MATURITIES: tuple[Maturity, ...] = ("measured", "vendor", "port")
"""The levels, most mature first."""


@dataclass(frozen=True)
class Level:
    """What one maturity level does to a profile, its band and the bill."""

    compute: float
    """Factor on the profile's compute fraction (`eta_compute`)."""
    bandwidth: float
    """Factor on the profile's bandwidth fraction (`eta_bandwidth`)."""
    overhead: float
    """Factor on the profile's per-iteration overhead (`overhead_ms`)."""
    widen: float
    """Factor each side of the band is widened by: low / widen, high x widen (ratio predicted / measured)."""
    engineer_months: float
    """Default one-off porting effort of the (chip, stack) pair, engineer-months."""
    text: str
    """The level in words."""


LEVELS: dict[str, Level] = {
    "measured": Level(1.0, 1.0, 1.0, 1.0, 0.0, "a mature stack with a measured profile"),
    "vendor": Level(0.8, 0.85, 1.5, 1.25, 6.0, "a vendor stack with partial kernel coverage"),
    "port": Level(0.5, 0.6, 2.0, 1.5, 24.0, "a new port"),
}
"""Each level's factors and default porting effort (sources in the module docstring)."""

USD_PER_ENGINEER_MONTH = 25_000.0
"""Default price of an engineer-month (assumption: a fully loaded systems engineer at about
$300,000 a year; illustrative, set `cost.usd_per_engineer_month`)."""


def derated(prof: CalibrationProfile, level: str) -> CalibrationProfile:
    """`prof` run under a stack of maturity `level`: its fractions and overhead times the level's
    factors (the same profile for ``measured``), its source saying so."""
    lv = LEVELS[level]
    if lv.compute == lv.bandwidth == lv.overhead == 1.0:
        return prof
    return prof.model_copy(
        update={
            "eta_compute": prof.eta_compute * lv.compute,
            "eta_bandwidth": prof.eta_bandwidth * lv.bandwidth,
            "overhead_ms": min(prof.overhead_ms * lv.overhead, 1000.0),
            "source": f"{prof.source}; derated for {lv.text} (software maturity '{level}', docs/calibration.md)",
        }
    )


def widened(band: dict[str, tuple[float, float]], level: str) -> dict[str, tuple[float, float]]:
    """A band (ratio predicted / measured per figure) widened for maturity `level`: each side moved
    out by the level's factor, in log space, around the figure the derated profile predicts."""
    w = LEVELS[level].widen
    return {f: (round(lo / w, 3), round(hi * w, 3)) for f, (lo, hi) in band.items()}


def label(level: str | None, fitted: bool) -> str:
    """The level a pool runs at, in words: its own, else 'measured' for a fitted chip, else its rule's."""
    if level is not None:
        return f"{level} ({LEVELS[level].text})"
    return "measured (fitted under this stack)" if fitted else "not rated (numbers by its calibration rule)"


__all__ = [
    "LEVELS",
    "MATURITIES",
    "USD_PER_ENGINEER_MONTH",
    "Level",
    "Maturity",
    "derated",
    "label",
    "widened",
]
