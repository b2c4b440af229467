"""Honest error bars: how far the cost model misses on data it was not fitted to.

Three ways to hold data back, each refitting every profile without it and predicting it with
the rule a chip without a fit would get (`engine.calibration.trust`):

- **leave one source out** (LOSO): a publication's rows are predicted from the others. This is
  the error to expect on a calibrated chip and stack when a new measurement arrives;
- **leave one chip out** (LOCO): a chip's rows are predicted with no data of that chip, so the
  same-silicon rule (or a transfer) supplies its factors;
- **leave one family out** (LOFO): every chip of the same silicon is removed together, so only
  the conservative transfer (or another stack) is left: the error of an unmeasured chip.

MoE points are kept out of the dense fits (their kernels run at other fractions of peak than
dense ones); they fit one factor of their own, the routed experts' rate against the dense layers'
(`calibrate.fit_experts`), which leaving their source out refits too. `expected_error_table` condenses it all into the per-basis,
per-figure medians the app shows as error bars (presets/calibration.toml).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.calibration import calibrate, first_token, measurements, moe_fit, predictor, trust
from engine.calibration.calibrate import Fit
from engine.calibration.measurements import Measurement
from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile


def silicon_of(chip: str) -> frozenset[str]:
    """The chips sharing `chip`'s die, itself included (`trust.SAME_SILICON`)."""
    return frozenset({chip, *trust.siblings_of(chip)})


def fitted_lookup(fits: dict[tuple[str, str], Fit]) -> trust.Lookup:
    """(chip, stack) -> the profile fitted to it in `fits`, or None (what the trust rules consult)."""

    def fitted(c: str, st: str) -> CalibrationProfile | None:
        f = fits.get((c, st))
        return f.profile if f is not None else None

    return fitted


def rule_profile(chip: str, stack: str, fits: dict[tuple[str, str], Fit]) -> tuple[CalibrationProfile, str]:
    """The profile (and its basis) the trust rules give `chip` under `stack`, from a set of fits."""
    found = trust.borrowed_profile(chip, stack, fitted_lookup(fits))
    if found is not None:
        return found[0], found[1]
    pool = trust.distinct([f.profile for (c, s), f in fits.items() if s == stack])
    if len(pool) < trust.MIN_TRANSFER_POOL:
        pool = trust.distinct([f.profile for (c, s), f in fits.items() if s in trust.STACK_ORDER])
    return trust.conservative(pool, "profiles"), "transfer"


@dataclass(frozen=True)
class Prediction:
    """One point predicted under one validation scheme."""

    point: Measurement
    predicted: float
    basis: str
    first_token_ms: float = 0.0
    """The MoE first-token latency included in `predicted` (`first_token`; 0 for other points)."""

    @property
    def error(self) -> float:
        """predicted / measured - 1."""
        return self.predicted / self.point.value - 1.0


def fit_experts(
    points: Sequence[Measurement],
    catalog: Catalog,
    fits: dict[tuple[str, str], Fit],
    memo: moe_fit.Memo | None = None,
) -> calibrate.ExpertFit | None:
    """`calibrate.fit_experts` with each MoE point's dense profile given by the rules from `fits`
    (`memo`: predictions shared with the other fits to `catalog`, `moe_fit.Memo`)."""
    return calibrate.fit_experts(
        points, catalog, lambda m: rule_profile(m.hardware, measurements.stack_of(m), fits)[0], memo
    )


def _predict(
    points: Sequence[Measurement],
    fits: dict[tuple[str, str], Fit],
    catalog: Catalog,
    experts: calibrate.ExpertFit | None = None,
    first: first_token.FirstToken = first_token.NONE,
) -> list[Prediction]:
    out = []
    for m in points:
        prof, basis = rule_profile(m.hardware, measurements.stack_of(m), fits)
        extra = 0.0
        if experts is not None and calibrate.is_moe(m, catalog):
            vendor = calibrate.vendor_of(m, catalog)
            prof = prof.model_copy(update=experts.terms(measurements.stack_of(m), vendor))
            extra = first.ms(measurements.stack_of(m)) if m.kind == "ttft" else 0.0
        out.append(Prediction(m, predictor.predict(m, catalog, prof) + extra, basis, extra))
    return out


def fit_first_token(
    points: Sequence[Measurement],
    catalog: Catalog,
    fits: dict[tuple[str, str], Fit],
    experts: calibrate.ExpertFit | None,
) -> first_token.FirstToken:
    """`first_token.fit` with each one-client MoE TTFT predicted as `_predict` does (`fits`, `experts`)."""
    if experts is None:
        return first_token.NONE
    return first_token.fit(points, catalog, lambda m: _predict([m], fits, catalog, experts)[0].predicted)


def _held_out(
    points: Sequence[Measurement],
    catalog: Catalog,
    key: Callable[[Measurement], object],
    moe: bool = False,
    folds: dict[object, calibrate.ExpertFit] | None = None,
    memo: moe_fit.Memo | None = None,
) -> list[Prediction]:
    """Each group of `key` left out in turn, its dense points predicted with the profiles refitted
    without it (with `moe`, its MoE points too, with the dense profiles they borrow and the experts'
    factor refitted so: one refit serves both). `folds`, where given, receives each fold's MoE terms
    under its left-out key; `memo` is passed to each fold's MoE fit."""
    out: list[Prediction] = []
    for k in sorted({key(m) for m in points}, key=str):
        kept = [m for m in points if key(m) != k]
        held = [m for m in points if key(m) == k and (moe or not calibrate.is_moe(m, catalog))]
        if held:
            fits = calibrate.reference_fits(kept, catalog)
            # the MoE terms only where a held-out point needs them (the dense folds do not)
            needed = moe and any(calibrate.is_moe(m, catalog) for m in held)
            experts = fit_experts(kept, catalog, fits, memo) if needed else None
            first = fit_first_token(kept, catalog, fits, experts) if needed else first_token.NONE
            if folds is not None and experts is not None:
                folds[k] = experts
            out.extend(_predict(held, fits, catalog, experts, first))
    return out


def cross_validate(
    points: Sequence[Measurement],
    catalog: Catalog,
    fits: dict[tuple[str, str], Fit] | None = None,
    experts: calibrate.ExpertFit | None = None,
    folds: dict[object, calibrate.ExpertFit] | None = None,
    memo: moe_fit.Memo | None = None,
) -> dict[str, list[Prediction]]:
    """Predictions of every dense point under fit, LOSO, LOCO and LOFO, and of MoE points under the
    fit and with their source left out (`moe_loso`: with the dense LOSO, every usable point held out).
    `fits` and `experts`: the fit to every point, where the caller has it already; `folds` receives
    the MoE terms refitted without each source (keyed by the source left out); `memo` is shared by
    every MoE fit (`moe_fit.Memo`)."""
    if fits is None:
        fits = calibrate.reference_fits(points, catalog)
    if experts is None:
        experts = fit_experts(points, catalog, fits, memo)
    dense = [m for m in points if not calibrate.is_moe(m, catalog)]
    moe = [m for m in points if calibrate.is_moe(m, catalog)]
    by_source = _held_out(points, catalog, lambda m: m.source_key, moe=True, folds=folds, memo=memo)
    return {
        "fit": _predict(dense, fits, catalog),
        "loso": [p for p in by_source if not calibrate.is_moe(p.point, catalog)],
        "loco": _held_out(points, catalog, lambda m: m.hardware),
        "lofo": _held_out(points, catalog, lambda m: min(silicon_of(m.hardware))),
        "moe": _predict(moe, fits, catalog, experts, fit_first_token(points, catalog, fits, experts)),
        "moe_loso": [p for p in by_source if calibrate.is_moe(p.point, catalog)],
    }


def frame(preds: dict[str, list[Prediction]]) -> pd.DataFrame:
    """One row per (scheme, point): chip, stack, figure, source, measured, predicted, error."""
    rows = []
    for scheme, ps in preds.items():
        for p in ps:
            m = p.point
            rows.append(
                {
                    "scheme": scheme,
                    "id": m.id,
                    "chip": m.hardware,
                    "stack": measurements.stack_of(m),
                    "figure": m.figure,
                    "kind": m.kind,
                    "source": m.source_key,
                    "model": m.model,
                    "basis": p.basis,
                    "measured": m.value,
                    "predicted": p.predicted,
                    "error": p.error,
                    "abs_error": abs(p.error),
                    "first_token_ms": p.first_token_ms,
                }
            )
    return pd.DataFrame(rows)


def summary(df: pd.DataFrame, by: Sequence[str] = ("chip", "stack", "figure")) -> pd.DataFrame:
    """Median and p90 of |error| per group and scheme (fit, loso, loco, lofo, moe)."""
    g = df.groupby([*by, "scheme"])["abs_error"]
    out = pd.DataFrame({"n": g.size(), "median": g.median(), "p90": g.quantile(0.9)}).reset_index()
    return out.pivot_table(index=list(by), columns="scheme", values=["n", "median", "p90"])


def headline(df: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Overall median and p90 |error| per scheme."""
    return {
        str(s): {
            "n": float(len(g)),
            "median": float(g["abs_error"].median()),
            "p90": float(np.quantile(g["abs_error"], 0.9)),
        }
        for s, g in df.groupby("scheme")
    }


def by_source(df: pd.DataFrame, scheme: str = "loso") -> pd.DataFrame:
    """Leave-one-source-out per source and the rule its points were predicted by: points, median
    and p90 |error|, and the median signed error (+: the model over-predicts the figure), largest
    median first. Which publications carry the held-out miss, and whether a second source helps.
    `scheme`: "loso" (the dense points) or "moe_loso" (the MoE points)."""
    held = df[df["scheme"] == scheme]
    if held.empty:
        return pd.DataFrame(columns=["source", "basis", "n", "median", "p90", "signed"])
    g = held.groupby(["source", "basis"])
    out = pd.DataFrame(
        {
            "n": g.size(),
            "median": g["abs_error"].median(),
            "p90": g["abs_error"].quantile(0.9),
            "signed": g["error"].median(),
        }
    ).reset_index()
    return out.sort_values(["median", "source"], ascending=[False, True], ignore_index=True)


def beyond(df: pd.DataFrame, bound: float) -> tuple[int, int, int, pd.Series]:
    """What holds a p90 above `bound`: of the held-out points (every usable one, dense and MoE,
    each with its source left out), (points, how many miss by more than `bound`, the most that
    may while the p90 stays within it, those misses counted per source, largest first).

    np.quantile puts the p90 of n values at position 0.9 (n - 1) of the sorted errors, between
    two of them; it is within `bound` whenever every value from position ceil(0.9 (n - 1)) down
    is, so (n - 1) - ceil(0.9 (n - 1)) misses are allowed for certain (14 of 149)."""
    held = df[df["scheme"].isin(["loso", "moe_loso"])]
    n = len(held)
    allowed = max(0, (n - 1) - int(np.ceil(0.9 * (n - 1) - 1e-9))) if n else 0
    over = held[held["abs_error"] > bound]
    counts = over.groupby("source").size().sort_values(ascending=False, kind="stable")
    return n, len(over), allowed, counts


MIN_ROWS = 3
"""Fewest held-out rows behind a per-figure expected error; with fewer, the basis' overall median."""


def expected_error_table(df: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per basis and figure, the median |error| of held-out predictions made on that basis.

    Held-out predictions (LOSO, LOCO, LOFO) are grouped by the rule that supplied their
    profile: a row left out with its source but whose chip and stack keep other data measures
    'fitted'; one whose chip lost all its data and took a sibling's profile measures
    'same_silicon'; and so on. MoE rows give their own row, held out with their source (their
    experts' factor is fitted to them). Rounded to 1%.
    """
    held = df[df["scheme"].isin(["loso", "loco", "lofo"])]
    out: dict[str, dict[str, float]] = {}
    groups = {b: held[held["basis"] == b] for b in ("fitted", "same_silicon", "other_stack", "transfer")}
    groups["moe"] = df[df["scheme"] == "moe_loso"]
    for basis, sub in groups.items():
        if sub.empty:
            continue
        overall = round(float(sub["abs_error"].median()), 2)
        row = {}
        for figure in ("throughput", "ttft", "tpot"):
            g = sub[sub["figure"] == figure]
            row[figure] = round(float(g["abs_error"].median()), 2) if len(g) >= MIN_ROWS else overall
        out[basis] = row
    # a rule's error bar is never narrower than a fitted chip's: the rows behind a rule can be few
    # and unusually consistent (same silicon: Hopper under TensorRT-LLM only)
    fitted = out.get("fitted", {})
    for basis, row in out.items():
        if basis != "fitted":
            for figure, v in row.items():
                row[figure] = max(v, fitted.get(figure, 0.0))
    return out
