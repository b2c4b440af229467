"""The MoE step model's terms, fitted per serving stack to the MoE reference rows.

A MoE point is predicted with the dense profile its chip and stack get (the dense layers'
rates and overhead) and three terms of its own (`predictor.MOE_TERMS`, docs/cost-model.md):

- `eta_experts`: the rate the routed experts' weight streaming reaches against the dense layers'
  (the bytes of the experts a batch touches, 1 - (1 - k/E)^tokens per layer);
- `eta_experts_compute`: the rate their math reaches against the dense layers' (their FLOPs):
  a prompt's pass through grouped GEMMs of block-scaled FP8 experts is compute-bound and reaches
  far less of the tensor cores than a dense GEMM, while a decode step streams the same experts'
  weights near the dense rate (docs/calibration.md, "The experts' math and weight streaming");
- `moe_layer_ms`: a fixed cost per MoE layer and iteration (routing, token permutation, the
  grouped kernels' launches), which sets a decode step at low load: DeepSeek-R1 at one client on
  eight B200s decodes a token in 9.2 ms where its weights take under 1 ms to read;
- `span_step_ms`: a fixed cost per iteration of a tensor-parallel group that spans machines (the
  stack's multi-node executor: each step's schedule sent to the remote workers, their ranks waited
  on), fitted in a stack's own terms where its points hold such a group (vLLM's: Tencent's TP16
  over two H20 machines), so that the stack's layer cost is set by its one-machine points;
  `SPAN_DEFAULT_MS` elsewhere, the shared terms included (docs/calibration.md, "A per-step cost
  over machines": the stacks that borrow the shared terms held out better with them as they were).

Each stack whose MoE points come from two sources or more gets its own terms; the others (and a
stack left with one source when its other source is held out) take the terms fitted to their chip
vendor's points of every stack (`VENDOR_MIN_SOURCES`), else those fitted to every point together.
Within a stack with terms of its own, the points of each chip vendor get terms of their own where
the stack's points span vendors (`vendor_of`): a stack runs other kernels on another vendor's chips
(SGLang's MoE layer calls sgl-kernel's CUDA kernels on NVIDIA and AITER's or vLLM's ROCm ops on AMD:
`_is_hip` / `_use_aiter` in
`python/sglang/srt/layers/moe/fused_moe_triton/fused_moe.py`), so its fixed cost per MoE layer is
the (stack, vendor) pair's, not the stack's: the SGLang cookbook's DeepSeek decodes a one-client
token in 9.2 ms on eight B200s (SGLang 0.5.6) and 24 ms on eight MI300X (0.5.7 on ROCm)
(docs/calibration.md, "SGLang's terms per chip vendor"). A vendor's terms, within a stack or across
stacks, need one source, not two: a (stack, vendor) group held out keeps its other source at most,
and the other vendor's or the pooled terms held out worse than that one source's (docs/calibration.md,
"One source of the chip's vendor over the pooled terms").

The fit is the least squared log error over a grid per term, searched one term at a time from the
grids' middles until no step lowers it (coordinate descent: three terms make the full grid too
large to walk at every fold of the cross-validation), then once more over half steps around the
best.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from engine.calibration.measurements import Figure, Measurement
from engine.calibration.predictor import predict
from engine.calibration.trust import pick_experts_terms
from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile
from engine.costmodel import perf

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

VENDOR_MIN_SOURCES = 1
"""Sources a chip vendor's MoE points need for terms of their own, within a stack whose points span
vendors or across every stack: one. The vendor's kernels (ROCm's against CUDA's) set the fixed cost
per MoE layer more than the harness does; held out, one source of the vendor beat the other vendors'
pooled terms (docs/calibration.md, "One source of the chip's vendor over the pooled terms")."""

GRIDS: dict[str, tuple[float, ...]] = {
    "eta_experts": tuple(round(0.1 * i, 2) for i in range(2, 11)),
    "eta_experts_compute": (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0),
    "moe_layer_ms": (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8),
    "span_step_ms": (0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 15.0, 20.0, 25.0, 30.0),
}
"""Each term's grid (the layer cost's reaches 0.8 ms: vLLM's fit sat at the old grid's 0.3 ms edge)."""
TERMS: tuple[str, ...] = tuple(GRIDS)

SPAN_DEFAULT_MS = 0.0
"""`span_step_ms` where a stack's points hold no TP group over machines (a fold with Tencent's rows
left out, a stack without such rows) and in the shared terms: no other source measures it, and the
all-reduces' own crossing (`perf.SCALE_OUT_LATENCY_US`, the ring per NIC) is modelled apart, so
nothing is added. Published figures put the parts in tens of µs (Ray Compiled Graphs' overhead per
execution, an all-reduce between InfiniBand nodes), none gives the whole (docs/calibration.md, "The
cost of a TP group over machines, against published measurements")."""


def spans_machines(m: Measurement, catalog: Catalog) -> bool:
    """True for a point whose tensor-parallel group spans machines (`perf.spans_machines`)."""
    return perf.spans_machines(catalog.chip(m.hardware), m.tp)


def vendor_of(m: Measurement, catalog: Catalog) -> str:
    """The vendor of a point's chip, lower case (the key of a stack's terms per vendor)."""
    return catalog.chip(m.hardware).vendor.lower()


def is_moe(m: Measurement, catalog: Catalog) -> bool:
    """True for a point on a Mixture-of-Experts model."""
    return catalog.model(m.model).moe is not None


@dataclass(frozen=True)
class StackTerms:
    """The MoE terms fitted to one stack's points (or to every stack's: the shared pair)."""

    eta_experts: float
    eta_experts_compute: float
    moe_layer_ms: float
    span_step_ms: float | None
    """None: the stack's points hold no TP group over machines (the shared figure applies)."""
    ids: tuple[str, ...]
    sources: int

    def update(self) -> dict[str, float]:
        """The profile fields these terms set."""
        return {k: getattr(self, k) for k in TERMS if getattr(self, k) is not None}


@dataclass(frozen=True)
class ExpertFit:
    """The MoE terms shared by every stack, those of the stacks with enough sources, and the fit's
    log errors (each fitted point with its stack's terms)."""

    eta_experts: float
    eta_experts_compute: float
    moe_layer_ms: float
    span_step_ms: float
    ids: tuple[str, ...]
    log_errors: tuple[float, ...]
    stacks: dict[str, StackTerms] = field(default_factory=dict)
    vendors: dict[tuple[str, str], StackTerms] = field(default_factory=dict)
    """(stack, chip vendor) -> the terms fitted to that vendor's points of the stack, where the stack
    has terms of its own and its points span vendors (module docstring)."""
    by_vendor: dict[str, StackTerms] = field(default_factory=dict)
    """Chip vendor -> the terms fitted to that vendor's points of every stack, where the points span
    vendors: what a stack without terms of its own runs with on that vendor's chips."""

    def shared(self) -> dict[str, float]:
        """The terms shared by every stack without its own."""
        return {k: getattr(self, k) for k in TERMS}

    def terms(self, stack: str, vendor: str | None = None) -> dict[str, float]:
        """The profile fields a MoE point of `stack` on a chip of `vendor` is predicted with, by the
        rule the shipped tables are read with (`trust.pick_experts_terms`)."""
        v = vendor or ""
        own, pair, theirs = self.stacks.get(stack), self.vendors.get((stack, v)), self.by_vendor.get(v)
        return pick_experts_terms(self.shared(), *(t.update() if t else None for t in (own, pair, theirs)))

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


Terms = tuple[float, ...]
"""Values of `TERMS`, in order."""


def _search(
    idx: Sequence[int], logs: Callable[[int, Terms], float], grids: Sequence[Sequence[float]]
) -> Terms:
    """The grid point of least squared log error over the points `idx`: one term at a time, from
    the grids' middles, until no single step lowers it."""

    def sse(vals: Terms) -> float:
        return sum(logs(i, vals) ** 2 for i in idx)

    at = [len(g) // 2 for g in grids]
    best = sse(tuple(g[i] for g, i in zip(grids, at, strict=True)))
    moved = True
    while moved:
        moved = False
        for j, grid in enumerate(grids):
            for i in range(len(grid)):
                cand = [*at[:j], i, *at[j + 1 :]]
                v = sse(tuple(g[k] for g, k in zip(grids, cand, strict=True)))
                if v < best - 1e-12:
                    best, at, moved = v, cand, True
    return tuple(g[i] for g, i in zip(grids, at, strict=True))


def _best(idx: Sequence[int], logs: Callable[[int, Terms], float], span: bool) -> Terms:
    """`_search` over `GRIDS`, then over half steps around its best (within each grid's range);
    `span` False (no point of `idx` spans machines): `span_step_ms` held at `SPAN_DEFAULT_MS`."""
    grids = [g if k != "span_step_ms" or span else (SPAN_DEFAULT_MS,) for k, g in GRIDS.items()]
    coarse = _search(idx, logs, grids)
    fine = []
    for g, v in zip(grids, coarse, strict=True):
        k = g.index(v)
        lo, hi = g[max(k - 1, 0)], g[min(k + 1, len(g) - 1)]
        fine.append(sorted({round(lo + (v - lo) / 2, 4), v, round(v + (hi - v) / 2, 4)}))
    return _search(idx, logs, fine)


Memo = dict[tuple[Measurement, str, Terms], float]
"""Log errors already predicted, by point, dense profile (its JSON) and terms: one `Memo` passed to
every fit of one catalog (the cross-validation's folds) predicts a point once for each profile and
terms, where a fold leaves the point's dense profile as the full fit has it."""


def fit_experts(
    points: Sequence[Measurement],
    catalog: Catalog,
    profile_of: Callable[[Measurement], CalibrationProfile],
    memo: Memo | None = None,
) -> ExpertFit | None:
    """The MoE terms of least squared log error over the MoE points' `EXPERT_FIGURES`, each point
    predicted with `profile_of(point)` (the dense profile its chip and stack get); per stack where
    its points come from `MIN_SOURCES` sources, shared otherwise. None without such points.
    `memo`: a `Memo` shared with other fits to the same `catalog`, else one for this fit alone."""
    pts = [
        (m, profile_of(m))
        for m in points
        if is_moe(m, catalog) and m.figure in EXPERT_FIGURES and m.stack not in EXPERTS_CHECKED_ONLY
    ]
    if not pts:
        return None
    known: Memo = {} if memo is None else memo
    dense = [p.model_dump_json() for _, p in pts]

    def logs(i: int, vals: Terms) -> float:
        m, p = pts[i]
        key = (m, dense[i], vals)
        got = known.get(key)  # one lookup: hashing the point is a third of a hit's time
        if got is None:
            prof = p.model_copy(update=dict(zip(TERMS, vals, strict=True)))
            got = known[key] = math.log(predict(m, catalog, prof) / m.value)
        return got

    every = range(len(pts))
    spans = {i for i in every if spans_machines(pts[i][0], catalog)}
    shared = _best(every, logs, False)  # the shared terms keep SPAN_DEFAULT_MS (module docstring)

    def own(idx: list[int], least: int = MIN_SOURCES) -> StackTerms | None:
        sources = len({pts[i][0].source_key for i in idx})
        if sources < least:
            return None
        own_span = bool(spans.intersection(idx))
        e, c, ms, sp = _best(idx, logs, own_span)
        ids_own = tuple(pts[i][0].id for i in idx)
        return StackTerms(e, c, ms, sp if own_span else None, ids=ids_own, sources=sources)

    vendor = [vendor_of(m, catalog) for m, _ in pts]
    stacks: dict[str, StackTerms] = {}
    vendors: dict[tuple[str, str], StackTerms] = {}
    for st in sorted({m.stack for m, _ in pts}):
        idx = [i for i in every if pts[i][0].stack == st]
        if (terms := own(idx)) is None:
            continue
        stacks[st] = terms
        for vd in sorted({vendor[i] for i in idx}):
            sub = [i for i in idx if vendor[i] == vd]
            if len(sub) < len(idx) and (terms := own(sub, VENDOR_MIN_SOURCES)) is not None:
                vendors[(st, vd)] = terms
    by_vendor: dict[str, StackTerms] = {}
    for vd in sorted(set(vendor)):
        sub = [i for i in every if vendor[i] == vd]
        if len(sub) < len(pts) and (terms := own(sub, VENDOR_MIN_SOURCES)) is not None:
            by_vendor[vd] = terms
    ids = tuple(m.id for m, _ in pts)
    e, c, ms, sp = shared
    fit = ExpertFit(e, c, ms, sp, ids=ids, log_errors=(), stacks=stacks, vendors=vendors, by_vendor=by_vendor)
    errors = tuple(logs(i, tuple(fit.terms(pts[i][0].stack, vendor[i])[k] for k in TERMS)) for i in every)
    return replace(fit, log_errors=errors)
