"""Bands: where about two in three real deployments land, from the cost model's held-out misses.

A band is a range of the ratio predicted / measured that a figure's real value is expected to
fall in: between its 16th and 84th percentiles over measurements the model was not fitted to
(each source left out in turn, `engine.calibration.crossval`). Its two sides are the data's, so a
model that runs a chip slow shows a band on one side of the figure.

**Groups, most specific first.** A point's band comes from the first of these groups that holds
at least `MIN_POINTS` held-out points from at least `MIN_SOURCES` sources (one publication's
spread says nothing about the next one's, and two publications' middle is one bias against the
other's):

1. its chip, basis, stack, kind of figure and model class (dense or MoE), only where the chip's
   bias is one-sided (at least `ONE_SIDED` of its points on one side of 1);
2. its basis, stack, kind and model class;
3. its basis, kind and model class;
4. its kind and model class;
5. its kind;
6. every point.

**Widening.** Percentiles of the held-out points describe those points; a new source differs from
every one of them (sources disagree more than the points of one source do), so the raw
16th-84th range holds well under two in three of a new source's points. Each group's range is
widened around its median, in log space, by one factor per kind of figure: the smallest factor
with which 68% of the points, each judged against the range of the *other* sources' points, land
inside, below 1 (a narrowing) where the other sources' raw range already holds more
(leave-one-source-out within the data the bands are fitted to; a kind with fewer than
`MIN_KIND_POINTS` points takes the factor of every point). Asymmetry and the groups' medians stay.

**Coverage, out of sample.** A band fitted to the points it is judged on holds ~68% of them by
construction. `coverage` instead leaves each source out, fits every band (groups and widening)
to the other sources alone, and counts the left-out source's points inside their band: nested
cross-validation, the share a new publication should expect. `make validate` prints it per kind.
The unit is the source for both families, the chip-out one too (a chip without data): leaving each
chip out instead measured 7-10% on TPOT, whose four chips (the MI300X 81% of the points, missing the
other way from the rest) cannot measure two in three (docs/validation.md, docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from engine.calibration.band_lookup import FIELDS, KINDS, LEVELS, MIN_KIND_POINTS, group_key

QUANTILES = (0.16, 0.84)
"""The percentiles a band spans: about two in three of a normal spread."""
TARGET = QUANTILES[1] - QUANTILES[0]
"""The share of held-out points a band aims to hold."""
COVERAGE_RANGE = (0.60, 0.76)
"""Out-of-sample coverage a kind with `MIN_KIND_POINTS` points or more must show (issue 30)."""
MIN_POINTS = 8
"""Fewest held-out points behind a group's band."""
MIN_SOURCES = 3
"""Fewest sources behind a group's band. Two were too few (2026-12-02): a group of two sources
whose misses fall on opposite sides places its band between them, so with one of three left out the
band sits on the other's side (dense other-stack throughput: TensorRT-LLM's points, 0.85-0.99 of the
measured, against dstack's vLLM V0 and vLLM's [1.04, 1.48]); docs/calibration.md, "Bands on three
sources"."""
ONE_SIDED = 0.8
"""Share of a chip's points on one side of 1 above which its bias is one-sided (its own band)."""


@dataclass(frozen=True)
class Band:
    """A group's band: the 16th and 84th percentile ratio predicted / measured, widened."""

    low: float
    high: float
    points: int
    group: str

    def contains(self, ratio: float) -> bool:
        """Whether a ratio predicted / measured lands inside."""
        return self.low <= ratio <= self.high

    def real(self) -> tuple[float, float]:
        """Where the real figure lands against the predicted one, as (fall, rise): relative
        changes, signed (both negative when the model runs high on every point)."""
        return 1.0 / self.high - 1.0, 1.0 / self.low - 1.0


@dataclass(frozen=True)
class Spread:
    """A group's raw spread: 16th, 50th and 84th percentile log ratio, points, sources, share above 1."""

    q16: float
    q50: float
    q84: float
    points: int
    sources: int
    above: float


def frame(preds: pd.DataFrame, schemes: Iterable[str]) -> pd.DataFrame:
    """The held-out points of `schemes` from `crossval.frame`: source, model (dense or moe), basis,
    stack, chip, figure, ratio and log ratio. A prediction two schemes make alike counts once: a chip
    with no sibling in the data is left out alone and with its family, the same refit, the same
    ratio; counted twice it weighed double in the bands' percentiles and in their coverage."""
    held = preds[preds["scheme"].isin(list(schemes))]
    out = held[["id", "source", "basis", "stack", "chip", "figure"]].copy()
    out["model"] = np.where(held["scheme"].str.startswith("moe"), "moe", "dense")
    out["ratio"] = 1.0 + held["error"].to_numpy()
    out["log_ratio"] = np.log(out["ratio"])
    same = out.assign(rounded=out["ratio"].round(9)).duplicated(["id", "figure", "rounded"])
    return out[~same.to_numpy()].reset_index(drop=True)


def spreads(points: pd.DataFrame) -> dict[str, Spread]:
    """Every group of every level (`LEVELS`) that can carry a band, by `group_key`.

    Grouped as `points.groupby(list(level))` groups them (the groups in sorted order of their
    keys, a row with a missing key field in none), on plain lists: pandas took 77 ms a call, most
    of the validation report's bands (`coverage` calls this once per source left out per fold)."""
    n = len(points)
    values = {f: points[f].tolist() for f in FIELDS}
    missing = {f: points[f].isna().to_numpy() for f in FIELDS}
    na_source = points["source"].isna().tolist()
    sources = [None if na else s for s, na in zip(points["source"].tolist(), na_source, strict=True)]
    above_one = (points["ratio"].to_numpy(dtype=float) > 1.0).tolist()
    log_ratio = points["log_ratio"].to_numpy(dtype=float)
    out: dict[str, Spread] = {}
    for level in LEVELS:
        members: dict[tuple[object, ...], list[int]] = {}  # nunique leaves a missing source out: None
        for i in range(n):
            if not any(missing[f][i] for f in level):
                members.setdefault(tuple(values[f][i] for f in level), []).append(i)
        for group in sorted(members):  # (the level of no fields: one group, every row)
            rows = members[group]
            n_sources = len({sources[i] for i in rows} - {None})
            if len(rows) < MIN_POINTS or n_sources < MIN_SOURCES:
                continue
            above = sum(above_one[i] for i in rows) / len(rows)
            if "chip" in level and 1.0 - ONE_SIDED < above < ONE_SIDED:
                continue  # a chip whose misses fall both ways takes its stack's band
            q16, q50, q84 = np.quantile(log_ratio[rows], (QUANTILES[0], 0.5, QUANTILES[1]))
            key = group_key(level, {f: values[f][rows[0]] for f in FIELDS})
            out[key] = Spread(float(q16), float(q50), float(q84), len(rows), n_sources, above)
    return out


def find(groups: Mapping[str, object], point: Mapping[str, object]) -> str | None:
    """The key of the first group of `LEVELS` in `groups` that `point` belongs to (None: none)."""
    for level in LEVELS:
        key = group_key(level, point)
        if key in groups:
            return key
    return None


def score(s: Spread, log_ratio: float) -> float:
    """How many times its group's half-spread a point lies from the group's median, on its side."""
    if log_ratio >= s.q50:
        return (log_ratio - s.q50) / max(s.q84 - s.q50, 1e-9)
    return (s.q50 - log_ratio) / max(s.q50 - s.q16, 1e-9)


def _records(points: pd.DataFrame) -> list[dict[str, object]]:
    return points.to_dict(orient="records")  # type: ignore[return-value]


def source_out_scores(points: pd.DataFrame) -> pd.DataFrame:
    """Each point's `score` against the group it falls in when its source is left out: figure, score."""
    rows = []
    for src in points["source"].unique():
        rest = spreads(points[points["source"] != src])
        for p in _records(points[points["source"] == src]):
            key = find(rest, p)
            if key is not None:
                log_ratio = float(p["log_ratio"])  # type: ignore[arg-type]
                rows.append({"figure": p["figure"], "score": score(rest[key], log_ratio)})
    return pd.DataFrame(rows, columns=["figure", "score"])


def widening(points: pd.DataFrame) -> dict[str, float]:
    """Per kind (and '*' for every point): the factor a band's half-spreads are multiplied by so that
    `TARGET` of the points land inside the band of the other sources' points. Below 1 where the other
    sources' raw spread already holds more than `TARGET` of a source's points: a band that holds more
    than it says is as wrong as one that holds less (a floor at 1 had TTFT's out-of-sample coverage
    at 76.6%, over `COVERAGE_RANGE`; docs/decisions.md)."""
    sc = source_out_scores(points)
    if sc.empty:
        return {"*": 1.0}
    out = {"*": float(np.quantile(sc["score"], TARGET))}
    for figure, g in sc.groupby("figure"):
        if len(g) >= MIN_KIND_POINTS:
            out[str(figure)] = float(np.quantile(g["score"], TARGET))
    return out


@dataclass(frozen=True)
class Table:
    """Every group's band, as fitted to one set of held-out points."""

    bands: dict[str, Band]
    widening: dict[str, float]

    def lookup(self, model: str, basis: str, stack: str, chip: str, figure: str) -> Band | None:
        """The band of a figure: its most specific group (`LEVELS`); None when no group has one."""
        point = {"model": model, "basis": basis, "stack": stack, "chip": chip, "figure": figure}
        key = find(self.bands, point)
        return None if key is None else self.bands[key]


def fit(points: pd.DataFrame) -> Table:
    """The bands of every group of `points` (`spreads`), widened per kind (`widening`)."""
    k = widening(points)
    out = {}
    for key, s in spreads(points).items():
        figure = key.rsplit(":", 1)[1]
        w = k.get(figure, k["*"])
        low, high = np.exp(s.q50 - w * (s.q50 - s.q16)), np.exp(s.q50 + w * (s.q84 - s.q50))
        out[key] = Band(round(float(low), 3), round(float(high), 3), s.points, key)
    return Table(out, k)


def check(points: pd.DataFrame, table: Table) -> pd.DataFrame:
    """`points` with the band each falls in under `table` (group, low, high) and whether it is inside."""
    rows = []
    for p in _records(points):
        b = table.lookup(*(str(p[f]) for f in FIELDS))
        rows.append(
            {
                **p,
                "group": b.group if b else None,
                "low": b.low if b else np.nan,
                "high": b.high if b else np.nan,
                "inside": bool(b.contains(float(p["ratio"]))) if b else False,  # type: ignore[arg-type]
            }
        )
    return pd.DataFrame(rows)


def coverage(points: pd.DataFrame) -> pd.DataFrame:
    """Out of sample: each source's points checked against the bands fitted without that source
    (`check`'s columns). The share inside is the coverage a new source should expect."""
    parts = [
        check(points[points["source"] == src], fit(points[points["source"] != src]))
        for src in sorted(points["source"].unique())
    ]
    return pd.concat(parts, ignore_index=True) if parts else check(points, Table({}, {"*": 1.0}))


def own_points(preds: pd.DataFrame) -> dict[str, tuple[float, float, int]]:
    """Per group of every field (`group_key` with every `FIELDS` one: a chip under a stack and basis,
    a model class, a kind of figure): the middle two in three of the ratios predicted / measured of
    the chip's own published results as the shipped profiles predict them (the fit's predictions,
    in sample), as (low, high, points): their 16th and 84th percentiles, or with one or two points
    their least and largest. A band never leaves out this range (`band_lookup.bands_for`): the
    Ascend 910B's fitted profile predicts 0.28-0.82 of its own four throughputs, where the pooled
    band it took claimed 0.77-1.29 (a review)."""
    points = frame(preds, ["fit", "moe"])
    out: dict[str, tuple[float, float, int]] = {}
    for keys, g in points.groupby(list(FIELDS)):
        r = g["ratio"].to_numpy(dtype=float)
        low, high = np.quantile(r, QUANTILES) if len(r) >= 3 else (r.min(), r.max())
        out[":".join(str(k) for k in keys)] = (round(float(low), 3), round(float(high), 3), len(r))
    return out


def summary(checked: pd.DataFrame, by: Iterable[str] = ("figure",)) -> dict[str, dict[str, float]]:
    """Per group of `by` (joined by ':'): points and the share inside their band."""
    cols = list(by)
    out: dict[str, dict[str, float]] = {}
    for key, g in checked.groupby(cols):
        name = ":".join(str(k) for k in (key if isinstance(key, tuple) else (key,)))
        out[name] = {"points": float(len(g)), "coverage": float(g["inside"].mean())}
    return out


def shown(cov: Mapping[str, Mapping[str, float]]) -> tuple[str, ...]:
    """The kinds whose bands are shown: those whose coverage was measured on `MIN_KIND_POINTS` or more."""
    return tuple(f for f in KINDS if cov.get(f, {}).get("points", 0) >= MIN_KIND_POINTS)


def within_target(cov: Mapping[str, float]) -> bool:
    """Whether a kind's measured coverage lies in `COVERAGE_RANGE`."""
    lo, hi = COVERAGE_RANGE
    return lo <= cov["coverage"] <= hi
