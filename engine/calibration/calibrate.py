"""Calibration: fit a chip's achievable fractions and overhead to measured timings.

A measurement is one of three kinds, on one model and instance (chip x tp, precisions):

- ``prefill``: the time of one prompt's prefill alone (ms);
- ``decode``: the time of one decode step of `batch` requests at `context_tokens` (ms);
- ``throughput``: an offline run's output tokens/s with every request of fixed prompt and output
  length queued at once (TensorRT-LLM's ``trtllm-bench`` tables).

Throughput is predicted by the steady state of continuous batching: B requests in flight, B
limited by the batch cap, the per-iteration token budget (B decode tokens plus the prefill
tokens B * ISL / OSL that keep the batch full) and the KV capacity (B * (ISL + OSL) tokens). An
iteration then runs B decodes at mean context ISL + OSL / 2 and those prefill tokens; the rate
is B / t_iteration.

The fit minimises the squared log error over a grid of (eta_compute, eta_bandwidth,
overhead_ms), refined twice around the best point: robust, dependency-free, and fast because the
cost model's compute and memory parts scale as 1/eta.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from engine.calibration.measurements import (
    MAX_ETA_BANDWIDTH,
    MAX_ETA_COMPUTE,
    MIN_ETA_COMPUTE,
    Measurement,
    read_reference_csv,
    stack_of,
)
from engine.calibration.moe_fit import (  # the MoE terms' fit, read through this module too
    EXPERT_FIGURES as EXPERT_FIGURES,
)
from engine.calibration.moe_fit import EXPERTS_CHECKED_ONLY as EXPERTS_CHECKED_ONLY
from engine.calibration.moe_fit import ExpertFit as ExpertFit
from engine.calibration.moe_fit import fit_experts as fit_experts
from engine.calibration.moe_fit import is_moe as is_moe
from engine.calibration.moe_fit import vendor_of as vendor_of
from engine.calibration.predictor import Parts, measured_instance, predict, unit_instance, unit_parts
from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile
from engine.core import datafiles
from engine.core.errors import ScenarioError
from engine.costmodel.perf import roof

POOR_FIT = 0.5
"""A median miss of a fit's own points past which it is said not to be used as it stands (`Fit.problem`)."""
IMPOSSIBLE_MISS = 10.0
"""A miss of one point (ten times the measured figure) that no chip's speed explains, only the data."""


@dataclass(frozen=True)
class Fit:
    """A fitted profile and its errors on the points it was fitted to."""

    profile: CalibrationProfile
    table: pd.DataFrame

    @property
    def median_abs_error(self) -> float:
        """Median of |predicted / measured - 1|."""
        return float(self.table["abs_error"].median())

    @property
    def worst_abs_error(self) -> float:
        """Largest |predicted / measured - 1|."""
        return float(self.table["abs_error"].max())

    def problem(self) -> str:
        """Why this fit is not to be used as it stands ('' where none): a median miss past `POOR_FIT` of
        its own points says the measurements are ones no profile can meet (a timing faster than the chip's
        roofline allows, or in another unit than its column says). A prefill of 0.0001 ms gave the profile
        limits and a worst miss of 22,938,454.5%, offered for use with no word (a review)."""
        return poor_fit(list(self.table["abs_error"]), units="their column says", where="the file")


def poor_fit(
    errors: list[float], named: list[str] | None = None, units: str = "they say", where: str = "the files"
) -> str:
    """Why a fit missing its own points (`errors`, |predicted / measured - 1|) is not to be used as it
    stands, '' where it is not: a median past `POOR_FIT`, or one point past `IMPOSSIBLE_MISS`. With
    `named` (the points' signed misses in words, for a fit of a few points, where a median of two means
    nothing) each is said. A CSV's fit (`Fit.problem`) and a benchmark file's (`FileFit.problem`) say it
    so."""
    if not errors:
        return ""
    column = pd.Series(errors, dtype=float)  # (a NaN left out, as the table's own median and max leave it)
    median, worst = float(column.median()), float(column.max())
    if median <= POOR_FIT and worst <= IMPOSSIBLE_MISS:
        return ""
    by = ", ".join(named) if named else f"a median of {median:,.1%} (worst {worst:,.1%})"
    return (
        f"this fit misses its own measurements by {by}: no profile meets them, so some are faster than the "
        f"chip's roofline allows or in another unit than {units}; check {where} before using the chip"
    )


def _loss_grid(
    ps: Sequence[Parts], measured: Sequence[float], ef: np.ndarray, eb: np.ndarray, oh: np.ndarray
) -> np.ndarray:
    """Sum of squared log errors over a grid of (eta_F, eta_B, overhead) (axes 0, 1, 2)."""
    loss = np.zeros((ef.size, eb.size, oh.size))
    inv_f = (1.0 / ef)[:, None]
    inv_b = (1.0 / eb)[None, :]
    ohs = oh / 1000.0
    for p, meas in zip(ps, measured, strict=True):
        s = p.segments
        # (segments, F, B) roofline times, summed with weights: shape (F, B)
        both = roof(
            s[:, 1, None, None] * inv_f[None] + s[:, 4, None, None], s[:, 2, None, None] * inv_b[None]
        )
        # MLA's absorbed decode attention on its own roof (0 for standard heads)
        both = both + roof(s[:, 5, None, None] * inv_f[None], s[:, 6, None, None] * inv_b[None])
        base = np.tensordot(s[:, 0], both + s[:, 3, None, None], axes=1)
        t = base[:, :, None] + s[:, 0].sum() * p.overhead_scale * ohs[None, None, :]
        pred = p.numerator / t if p.throughput else t * 1000.0
        r2 = np.log(pred / meas) ** 2
        loss += r2 if ROBUST is None else 2.0 * ROBUST**2 * (np.sqrt(1.0 + r2 / ROBUST**2) - 1.0)
    return loss


def _grid_fit(
    ps: Sequence[Parts],
    measured: Sequence[float],
    fix_overhead_ms: float | None,
    fix_eta_bandwidth: float | None,
    prior: tuple[float, float] = (0.5, 0.75),
) -> tuple[float, float, float]:
    """The (eta_F, eta_B, overhead_ms) of least squared log error: a grid refined three times."""
    lo = np.array([MIN_ETA_COMPUTE, 0.2, 0.0])
    hi = np.array([MAX_ETA_COMPUTE, MAX_ETA_BANDWIDTH, 80.0 if fix_overhead_ms is None else 0.0])
    best = (0.5, 0.8, 0.0)
    for _ in range(4):
        ef = np.linspace(lo[0], hi[0], 40)
        eb = np.linspace(lo[1], hi[1], 40) if fix_eta_bandwidth is None else np.array([fix_eta_bandwidth])
        oh = np.linspace(lo[2], hi[2], 41) if fix_overhead_ms is None else np.array([fix_overhead_ms])
        loss = _loss_grid(ps, measured, ef, eb, oh)
        loss += PRIOR_WEIGHT * (
            np.log(ef / prior[0])[:, None, None] ** 2 + np.log(eb / prior[1])[None, :, None] ** 2
        )
        i, j, k = np.unravel_index(int(np.argmin(loss)), loss.shape)
        best = (float(ef[i]), float(eb[j]), float(oh[k]))
        span = (hi - lo) / 8.0
        lo = np.maximum([MIN_ETA_COMPUTE, 0.05, 0.0], np.array(best) - span)
        hi = np.minimum([MAX_ETA_COMPUTE, MAX_ETA_BANDWIDTH, 1000.0], np.array(best) + span)
    return best


def fit(
    points: Sequence[Measurement],
    catalog: Catalog,
    source: str,
    fix_overhead_ms: float | None = None,
    fix_eta_bandwidth: float | None = None,
    prior: tuple[float, float] = (0.5, 0.75),
) -> Fit:
    """Fit eta_compute, eta_bandwidth and overhead_ms of one chip to its measurements."""
    if not points:
        raise ScenarioError("calibration: no measurements to fit")
    chips = {p.hardware for p in points}
    if len({FAMILY.get(c, c) for c in chips}) != 1:
        raise ScenarioError(f"calibration: fit one chip (or one chip family) at a time (got {sorted(chips)})")
    # a MoE point is decomposed with its experts as fast as the dense layers, as the profile says
    ps = [
        unit_parts(m, inst, unit_instance(inst, None))
        for m in points
        for inst in (measured_instance(m, catalog),)
    ]
    best = _grid_fit(ps, [m.value for m in points], fix_overhead_ms, fix_eta_bandwidth, prior)
    profile = CalibrationProfile(
        eta_compute=round(best[0], 3),
        eta_bandwidth=round(best[1], 3),
        overhead_ms=round(best[2], 2),
        source=source,
        # MoE points were timed with experts as fast as the dense layers: the fractions hold their
        # slowness, which the shipped experts' factor must not add a second time
        eta_experts=1.0 if any(is_moe(m, catalog) for m in points) else None,
    )
    return Fit(profile=profile, table=table(points, catalog, profile))


def layout(m: Measurement) -> str:
    """How a point's chips are split when not plain tensor parallelism: ' (tp1 dp8 ep8, MTP 3 at 80%)'."""
    if m.plain:
        return ""
    chips = " ".join([f"tp{m.tp}"] + [f"{k}{v}" for k, v in (("dp", m.dp), ("ep", m.ep)) if v > 1])
    spec = f", MTP {m.speculation[0]} at {m.speculation[1]:.0%}" if m.speculation is not None else ""
    return f" ({chips}{spec})"


def describe(m: Measurement) -> str:
    """A short label of a point's setup: 'decode b1 ctx 512', 'tpot c8 20000/2000', ..."""
    io = f"{m.prompt_tokens}/{m.output_tokens}"
    if m.kind == "prefill":
        return f"prefill {m.prompt_tokens} tok"
    if m.kind == "decode":
        return f"decode b{m.batch} ctx {m.context_tokens}"
    if m.kind == "batch_latency" or m.static:
        return f"{m.kind.replace('_', ' ')} b{m.batch} {io}"
    load = f"c{m.concurrency}" if m.concurrency else "offline"
    return f"{'' if m.kind == 'throughput' else m.kind + ' '}{load} {io}".strip()


def table(
    points: Iterable[Measurement], catalog: Catalog, profile: CalibrationProfile | None = None
) -> pd.DataFrame:
    """Setup, measured, predicted and error for each point.

    Without an explicit profile, each point uses its chip's profile for the point's stack when
    the chip has one (e.g. ``trtllm``), and the profile the trust rules give it otherwise; a MoE
    point's also takes the shipped experts' factor (`trust.with_experts`), and a MoE TTFT the
    shipped first-token latency of its stack, as every run of a MoE model pays it
    (`engine.calibration.first_token`; `make validate` adds its own fit the same way).
    """
    from engine.calibration import trust  # the rules of a chip without its own profile

    rows = []
    for m in points:
        inst = measured_instance(m, catalog)
        stack = stack_of(m)
        own = inst.hardware.profiles.get(stack)
        moe = is_moe(m, catalog)
        if own is not None and moe:
            own = trust.with_experts(own, stack, inst.hardware.vendor)
        prof = profile or own or trust.calibration(inst.hardware, stack, catalog, moe=moe)[0]
        pred = predict(m, catalog, prof) + (_first_token_ms(stack) if moe and m.kind == "ttft" else 0.0)
        setup = f"{m.model} {m.tp * m.dp}x{m.hardware} {m.weights}{layout(m)}"
        what = describe(m)
        rows.append(
            {
                "id": m.id, "setup": setup, "point": what, "kind": m.kind, "unit": m.unit,
                "profile": "given" if profile else (stack if own else f"{stack} (by rule)"),
                "measured": m.value, "predicted": pred, "error": pred / m.value - 1.0,
                "abs_error": abs(pred / m.value - 1.0),
            }
        )  # fmt: skip
    return pd.DataFrame(rows)


def _first_token_ms(stack: str) -> float:
    """The shipped MoE first-token latency under `stack` (0 before presets/calibration.toml has one)."""
    from engine.calibration import trust

    found = trust.first_token_ms(stack)
    return 0.0 if found is None else found[0]


# --- the shipped profiles -------------------------------------------------------------------

STACKS = {
    "splitwise": "Splitwise characterization", "trtllm": "TensorRT-LLM", "vllm": "vLLM", "vllm-v0": "vLLM V0", "sglang": "SGLang",
    "user": "user", "vllm-ascend": "vLLM-Ascend", "mindie": "MindIE",
}  # fmt: skip
"""Serving stacks the reference measurements come from, by profile name."""

FAMILY = {"h100-sxm": "hopper", "h200": "hopper"}
"""Chips fitted together: the same GPU die and software, differing only in memory.

H200 is an H100 with more and faster HBM. Fitted alone on its four throughput points, its
bandwidth fraction is not identifiable and came out far below H100's, which would make the
faster chip slower at decode. One profile per (family, stack) keeps them physically consistent.
"""

BANDWIDTH_FROM = {("b200", "trtllm"): "h100-sxm"}
"""(chip, stack) fits whose points cannot identify the bandwidth fraction: a sibling's is used.

B200's TensorRT-LLM points are large-batch FP4 runs, bound mostly by compute; fitted freely, its
bandwidth fraction came out at 0.28 (2.2 TB/s of 8), which would make a B200 decode slower than
a single H100. The same stack on Hopper, whose points pin it down, gives the fraction used
instead; only eta_compute is fitted.
"""

FIXED_OVERHEAD_MS = {"trtllm": 3.0}
"""Per-iteration overhead held fixed when fitting a stack whose data cannot separate it.

TensorRT-LLM's published numbers are offline throughputs at large batch only: they cannot tell a
fixed per-iteration cost from a per-token one. Fitted freely, the overhead absorbs per-token
costs (about 13 ms on H100), which would make batch-1 decode nearly twice as slow as the stack
really is. Assumption: with CUDA graphs and an overlapped scheduler, the overhead per iteration
of an 80-layer model is about 3 ms (scaled by layers like every overhead); the fractions are
fitted with it held there.
"""

PRIOR_WEIGHT = 0.02
ROBUST: float | None = None
POOLED_PRIOR = False
"""Weak prior of every fit: eta_compute 0.5, eta_bandwidth 0.75, weight 0.02 on their squared log.

It decides only what the points cannot: four batch-1 decode steps say nothing of the compute
fraction, which would otherwise land on the grid's edge. Against a single point's squared log
error of 0.01 to 0.1 it moves identified factors by a few percent at most.
"""


def kv_oversubscribed(m: Measurement, catalog: Catalog) -> bool:
    """True for a static batch whose requests that run at once (at most the batch cap), grown to full
    length, overflow the KV room: the stack then preempts. A burst of more requests than the cap
    runs in waves, which the predictor models."""
    static = m.static or m.kind == "batch_latency"  # as `unit_parts` runs them
    at_once = min(m.batch, m.max_batch)
    return (
        static
        and at_once * (m.prompt_tokens + m.output_tokens) > measured_instance(m, catalog).kv_capacity_tokens
    )


def reference_fits(points: Sequence[Measurement], catalog: Catalog) -> dict[tuple[str, str], Fit]:
    """Fitted profiles per (chip, stack) from the reference points, as shipped in the catalog.

    Dense-model points only: MoE points check how the dense profiles carry to expert layers (their
    kernels, routing imbalance and all-to-all), which they would otherwise bend. Static batches
    that overflow the KV room are checked, not fitted: the stack preempts and recomputes, which
    the predictor's waves do not reproduce, and a fit would take the difference for slow chips
    (dstack's 32K-token H100 batches pulled the compute fraction to 0.14). Each (chip family,
    stack) with at least two points is fitted; stacks in `FIXED_OVERHEAD_MS` keep their overhead
    fixed and fit the two fractions. A chip with a single point is not fitted: it serves as a
    held-out check of a sibling chip's profile.
    """
    groups: dict[tuple[str, str], list[Measurement]] = {}
    for m in points:
        if is_moe(m, catalog) or kv_oversubscribed(m, catalog):
            continue
        groups.setdefault((FAMILY.get(m.hardware, m.hardware), stack_of(m)), []).append(m)
    from engine.calibration.trust import STACK_ORDER  # the serving stacks (a research harness is not one)

    first = _fit_groups(groups, catalog, {})
    # second pass: what a group's points cannot tell is drawn towards the same chip's fits under
    # the other serving stacks (Splitwise's harness, whose fixed costs no stack has, informs none)
    serving = {k: f for k, f in first.items() if k[1] in STACK_ORDER}
    priors: dict[tuple[str, str], tuple[float, float]] = {}
    pooled = (
        float(np.median([f.profile.eta_compute for f in serving.values()])) if serving else 0.5,
        float(np.median([f.profile.eta_bandwidth for f in serving.values()])) if serving else 0.75,
    )
    for key in groups:
        chip_fits = [f.profile for (c, s), f in serving.items() if FAMILY.get(c, c) == key[0] and s != key[1]]
        priors[key] = (
            (
                float(np.mean([p.eta_compute for p in chip_fits])),
                float(np.mean([p.eta_bandwidth for p in chip_fits])),
            )
            if chip_fits
            else pooled
        )
    return _fit_groups(groups, catalog, priors)


def _fit_groups(
    groups: dict[tuple[str, str], list[Measurement]],
    catalog: Catalog,
    priors: dict[tuple[str, str], tuple[float, float]],
) -> dict[tuple[str, str], Fit]:
    fits: dict[tuple[str, str], Fit] = {}
    # chips that borrow a sibling's bandwidth fraction are fitted after the sibling
    order = sorted(groups.items(), key=lambda kv: ((kv[1][0].hardware, kv[0][1]) in BANDWIDTH_FROM, kv[0]))
    for key, pts in order:
        stack = key[1]
        if len(pts) < 2:
            continue
        ids = ", ".join(p.id for p in pts)
        chips = sorted({p.hardware for p in pts})
        src = f"fitted to {STACKS.get(stack, stack)} measurements {ids} (data/reference/calibration*.csv)"
        if len(chips) > 1:
            src += f"; one profile for {' and '.join(chips)} (same GPU die and stack)"
        fixed = FIXED_OVERHEAD_MS.get(stack)
        if fixed is not None:
            src += f"; overhead held at {fixed} ms (assumption, docs/calibration.md)"
        sibling = BANDWIDTH_FROM.get((chips[0], stack)) if len(chips) == 1 else None
        eta_b = fits[(sibling, stack)].profile.eta_bandwidth if sibling and (sibling, stack) in fits else None
        if eta_b is not None:
            src += (
                f"; eta_bandwidth taken from the {sibling} {stack} fit (not identifiable from these points)"
            )
        prior = priors.get(key, (0.5, 0.75))
        result = fit(pts, catalog, src, fix_overhead_ms=fixed, fix_eta_bandwidth=eta_b, prior=prior)
        for chip in chips:
            fits[(chip, stack)] = result
    return fits


def profile_toml(name: str, profile: CalibrationProfile) -> str:
    """A ``[profiles.<name>]`` table as TOML text."""
    src = profile.source.replace("\\", "\\\\").replace('"', '\\"')
    return (
        f"[profiles.{name}]\n"
        f"eta_compute = {profile.eta_compute}\n"
        f"eta_bandwidth = {profile.eta_bandwidth}\n"
        f"overhead_ms = {profile.overhead_ms}\n"
        + (f"eta_experts = {profile.eta_experts}\n" if profile.eta_experts is not None else "")
        + f'source = "{src}"\n'
    )


def with_profile(text: str, name: str, profile: CalibrationProfile, make_default: bool) -> str:
    """A hardware entry's TOML text with a profile added or replaced (other text kept)."""
    lines = text.splitlines()
    out: list[str] = []
    skip = False
    for line in lines:
        if line.strip().startswith("["):
            skip = line.strip() == f"[profiles.{name}]"
        if not skip and not (make_default and line.startswith("default_profile")):
            out.append(line)
    if make_default:
        first_table = next(i for i, ln in enumerate(out) if ln.strip().startswith("["))
        out.insert(first_table, f'default_profile = "{name}"')
    body = "\n".join(out).rstrip() + "\n\n" + profile_toml(name, profile)
    return body


def reference_csv() -> Path | None:
    """The reference measurements shipped with the project (data/reference/calibration.csv), if present."""
    path = datafiles.data_dir() / "reference" / "calibration.csv"
    return path if path.is_file() else None


def reference_points() -> list[Measurement]:
    """The shipped reference measurements, read; ScenarioError when they are missing."""
    path = reference_csv()
    if path is None:
        raise ScenarioError(
            "reference data not found: data/reference/calibration.csv is missing from the project"
        )
    return read_reference_csv(path)
