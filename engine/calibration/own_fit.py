"""A CSV of the user's own timings, fitted and marked as theirs (`fengong calibrate FILE.csv`, the About page).

The fit is the shipped profiles' (`calibrate.fit`). What makes it the user's own, as a benchmark fit
is (`engine.observe.fit_files`, `engine.calibration.own`): a source starting "user's own", the stack
the timings were measured under (a CSV does not say: the user does, `--stack` or the page's choice)
and the band of the fit's held-out errors. A CSV is one file, so its points are held out instead:
each point predicted by the profile fitted to the others (in at most `FOLDS` folds, so a large file
costs ten refits, not one per point); a figure with `MIN_BAND_POINTS` such errors gets the 16th to
84th percentile of predicted / measured as its band, as the shipped bands and the benchmark fits do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from engine.calibration import calibrate
from engine.calibration.measurements import FIGURE_OF, Measurement
from engine.calibration.own import OWN_PREFIX
from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile

FOLDS = 10
"""Most refits for the held-out errors: point i is held out in fold i mod FOLDS."""

MIN_BAND_POINTS = 3
"""Held-out errors of a figure below which it carries no band (as a benchmark fit)."""


def band_ratio(error: float) -> float:
    """A held-out error (predicted / measured - 1) as the ratio a band stores, within its bounds."""
    return round(min(max(1.0 + float(error), 0.01), 100.0), 3)


def own_profile(
    profile: CalibrationProfile, stack: str, band: Mapping[str, tuple[float, float]] | None
) -> CalibrationProfile:
    """`profile` marked the user's own under `stack`, with `band` (None: no held-out error at all)."""
    source = profile.source if profile.source.startswith(OWN_PREFIX) else f"{OWN_PREFIX}: {profile.source}"
    data = {
        **profile.model_dump(),
        "source": source,
        "stack": stack,
        "band": None if band is None else dict(band),
    }
    return CalibrationProfile.model_validate(data)


def held_out_errors(points: Sequence[Measurement], catalog: Catalog) -> list[tuple[str, float]]:
    """(figure, predicted / measured - 1) of each point, predicted by the profile fitted without it."""
    k = min(len(points), FOLDS)
    out: list[tuple[str, float]] = []
    if k < 2:
        return out
    for fold in range(k):
        held = [p for i, p in enumerate(points) if i % k == fold]
        rest = [p for i, p in enumerate(points) if i % k != fold]
        without = calibrate.fit(rest, catalog, "held out").profile
        t = calibrate.table(held, catalog, without)
        out += [(FIGURE_OF[kind], float(e)) for kind, e in zip(t["kind"], t["error"], strict=True)]
    return out


def band_of(errors: Sequence[tuple[str, float]]) -> dict[str, tuple[float, float]] | None:
    """Per figure with enough held-out errors, the 16th to 84th percentile as ratios; None without any."""
    if not errors:
        return None
    band: dict[str, tuple[float, float]] = {}
    for figure in sorted({f for f, _ in errors}):
        e = [x for f, x in errors if f == figure]
        if len(e) >= MIN_BAND_POINTS:
            lo, hi = np.percentile(e, [16, 84])
            band[figure] = (band_ratio(lo), band_ratio(hi))
    return band


def fit_own(points: Sequence[Measurement], catalog: Catalog, name: str, stack: str) -> calibrate.Fit:
    """`points` (one chip's rows of the user's CSV `name`) fitted, the profile marked as the user's own."""
    whole = calibrate.fit(points, catalog, f"fitted to {len(points)} measurements in {name}")
    band = band_of(held_out_errors(points, catalog))
    return calibrate.Fit(profile=own_profile(whole.profile, stack, band), table=whole.table)
