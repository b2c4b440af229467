"""The MoE step model's terms, fitted per serving stack to the MoE reference rows.

A MoE point is predicted with the dense profile its chip and stack get (the dense layers'
rates and overhead) and two terms of its own (`predictor.MOE_TERMS`, docs/cost-model.md):

- `eta_experts`: the rate the routed experts' kernels reach against the dense layers' (their
  FLOPs and the bytes of the experts a batch touches, 1 - (1 - k/E)^tokens per layer);
- `moe_layer_ms`: a fixed cost per MoE layer and iteration (routing, token permutation, the
  grouped kernels' launches), which sets a decode step at low load: DeepSeek-R1 at one client on
  eight B200s decodes a token in 9.2 ms where its weights take under 1 ms to read.

Each stack whose MoE points come from two sources or more gets its own pair; the others (and a
stack left with one source when its other source is held out) take the pair fitted to every
stack's points together. The fit is the least squared log error over a grid (coarse, then
finer around the best), as the dense profiles' (`calibrate._grid_fit`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from engine.calibration.measurements import Figure, Measurement
from engine.calibration.predictor import predict
from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile

EXPERT_FIGURES: tuple[Figure, ...] = ("throughput", "tpot")
"""The MoE figures the terms are fitted to. TTFT is predicted, not fitted: at one client the
cookbook's and Tencent's TTFTs are 100-300 ms for prompts a MoE prefill runs in a few tens of ms
(a cost per request, outside the iterations), and under load it counts time spent queued."""

EXPERTS_CHECKED_ONLY: tuple[str, ...] = ("vllm-ascend", "mindie")
"""Stacks whose MoE rows check the terms but are not fitted to them: the Ascend 910B's
(docs/calibration.md, 'Ascend 910B'): seven rows on a dense profile of five points from one
source."""

MIN_SOURCES = 2
"""Sources a stack's MoE points need for terms of its own (one source cannot be told from its harness)."""

_ETA = tuple(round(0.1 * i, 2) for i in range(1, 11))
_LAYER_MS = (0.0, 0.05, 0.1, 0.2, 0.3)


def is_moe(m: Measurement, catalog: Catalog) -> bool:
    """True for a point on a Mixture-of-Experts model."""
    return catalog.model(m.model).moe is not None


@dataclass(frozen=True)
class StackTerms:
    """The MoE terms fitted to one stack's points (or to every stack's: the shared pair)."""

    eta_experts: float
    moe_layer_ms: float
    ids: tuple[str, ...]
    sources: int

    def update(self) -> dict[str, float]:
        """The profile fields these terms set."""
        return {"eta_experts": self.eta_experts, "moe_layer_ms": self.moe_layer_ms}


@dataclass(frozen=True)
class ExpertFit:
    """The MoE terms shared by every stack, those of the stacks with enough sources, and the fit's
    log errors (each fitted point with its stack's terms)."""

    eta_experts: float
    moe_layer_ms: float
    ids: tuple[str, ...]
    log_errors: tuple[float, ...]
    stacks: dict[str, StackTerms] = field(default_factory=dict)

    def terms(self, stack: str) -> dict[str, float]:
        """The profile fields a MoE point of `stack` is predicted with."""
        own = self.stacks.get(stack)
        return own.update() if own else {"eta_experts": self.eta_experts, "moe_layer_ms": self.moe_layer_ms}

    @property
    def median_abs_error(self) -> float:
        """Median |predicted / measured - 1| over the fitted points."""
        return float(np.median(np.abs(np.expm1(self.log_errors))))

    @property
    def source(self) -> str:
        """Where the shared terms come from, for a profile's source text."""
        return (
            f"fitted to {len(self.ids)} MoE throughput and TPOT measurements ({', '.join(self.ids)}), "
            "with the dense profiles each borrows (docs/calibration.md)"
        )


Pred = Callable[[int, float, float], float]


def _best(idx: Sequence[int], logs: Callable[[int, float, float], float]) -> tuple[float, float]:
    """(eta_experts, moe_layer_ms) of least squared log error over the points `idx`."""

    def sse(e: float, ms: float) -> float:
        return sum(logs(i, e, ms) ** 2 for i in idx)

    coarse = min(((e, ms) for e in _ETA for ms in _LAYER_MS), key=lambda p: sse(*p))
    e0, ms0 = coarse
    fine = [
        (round(e, 3), round(ms, 4))
        for e in (e0 - 0.05, e0 - 0.025, e0, e0 + 0.025, e0 + 0.05)
        for ms in (ms0 - 0.025, ms0, ms0 + 0.025)
        if 0.05 <= e <= 1.0 and ms >= 0.0
    ]
    return min(fine, key=lambda p: sse(*p))


def fit_experts(
    points: Sequence[Measurement], catalog: Catalog, profile_of: Callable[[Measurement], CalibrationProfile]
) -> ExpertFit | None:
    """The MoE terms of least squared log error over the MoE points' `EXPERT_FIGURES`, each point
    predicted with `profile_of(point)` (the dense profile its chip and stack get); per stack where
    its points come from `MIN_SOURCES` sources, shared otherwise. None without such points."""
    pts = [
        (m, profile_of(m))
        for m in points
        if is_moe(m, catalog) and m.figure in EXPERT_FIGURES and m.stack not in EXPERTS_CHECKED_ONLY
    ]
    if not pts:
        return None
    memo: dict[tuple[int, float, float], float] = {}

    def logs(i: int, e: float, ms: float) -> float:
        key = (i, e, ms)
        if key not in memo:
            m, p = pts[i]
            prof = p.model_copy(update={"eta_experts": e, "moe_layer_ms": ms})
            memo[key] = math.log(predict(m, catalog, prof) / m.value)
        return memo[key]

    every = range(len(pts))
    eta, ms = _best(every, logs)
    stacks: dict[str, StackTerms] = {}
    for st in sorted({m.stack for m, _ in pts}):
        idx = [i for i in every if pts[i][0].stack == st]
        sources = len({pts[i][0].source_key for i in idx})
        if sources >= MIN_SOURCES:
            e_s, ms_s = _best(idx, logs)
            stacks[st] = StackTerms(e_s, ms_s, tuple(pts[i][0].id for i in idx), sources)
    fit = ExpertFit(eta, ms, tuple(m.id for m, _ in pts), (), stacks)
    errors = tuple(logs(i, *_pair(fit, pts[i][0].stack)) for i in every)
    return ExpertFit(eta, ms, fit.ids, errors, stacks)


def _pair(fit: ExpertFit, stack: str) -> tuple[float, float]:
    t = fit.terms(stack)
    return t["eta_experts"], t["moe_layer_ms"]
