"""Calibrating from benchmark results: each file's figures as calibration points, one profile fitted
to them by the same code as the shipped profiles (`engine.calibration.calibrate.fit`), each file
left out in turn for its held-out error.

A serving benchmark gives no step timings, only what requests saw. What it says is turned into
the measurement kinds the steady-state predictor already models (`engine.calibration.measurements`):

- ``tpot``: the run's mean TPOT (AIPerf's inter-token latency; a Prometheus scrape's mean time
  per output token), at the run's concurrency and mean lengths: a decode step at that batch;
- ``ttft``: the mean TTFT at the same concurrency (a lockstep round when the clients started
  together on identical requests, `Measurement.lockstep`);
- ``throughput``: output tokens per second, for a closed loop only (an open loop's throughput is
  its offered load, which says nothing of the chip).

The concurrency is the stated one (``--max-concurrency``, AIPerf's ``--concurrency``); for an open
loop at a rate, the mean number of requests in flight by Little's law: request rate x mean E2E.
On `count` instances each is taken to serve an equal share (concurrency and throughput divided).

The predictor prices these points at the file's steady state, which the simulator replaying the
file's own requests does not reach (prompts prefilled in steps of their own, arrivals in bursts):
the profile is then refined until the replays match (`engine.observe.refine`), and each file's
held-out error is its replay at the profile fitted to the other files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from engine.calibration.measurements import FIGURE_OF, Measurement
from engine.calibration.own_fit import band_ratio
from engine.catalog.entries import Catalog, entry_to_toml
from engine.catalog.specs import CalibrationProfile, HardwareSpec
from engine.core.errors import ScenarioError
from engine.observe import refine
from engine.observe.observation import Observation
from engine.observe.playback import Deployment, guess_model


def open_loop(obs: Observation) -> bool:
    """Whether the run sent requests at a finite rate (a concurrency beside it is only a ceiling)."""
    rate = obs.setup.rate_rps
    return bool(rate) and math.isfinite(rate or 0.0) and not obs.setup.all_at_once


def mean_e2e_ms(obs: Observation) -> float | None:
    """The run's mean end-to-end latency: stated, else TTFT + TPOT x (output - 1) (vLLM's
    `--save-result` keeps TTFT, TPOT and ITL only unless asked for E2E)."""
    m, out = obs.measured, obs.setup.output_tokens
    if m.e2e is not None and m.e2e.mean_ms is not None:
        return m.e2e.mean_ms
    tpot = m.tpot if m.tpot is not None else m.itl
    if m.ttft is None or m.ttft.mean_ms is None or tpot is None or tpot.mean_ms is None or out is None:
        return None
    return m.ttft.mean_ms + tpot.mean_ms * max(out - 1.0, 0.0)


def concurrency(obs: Observation, count: int = 1) -> int | None:
    """Requests in flight per instance: a closed loop's stated concurrency; at a rate, rate x mean
    E2E (Little's law), no more than a stated ceiling (`--max-concurrency` beside a rate), nor than
    the requests sent."""
    s, m = obs.setup, obs.measured
    cap = s.concurrency or None
    if s.requests:
        cap = min(cap, s.requests) if cap else None
    if cap and not open_loop(obs):
        return max(1, round(cap / count))
    rate = m.request_rps or s.rate_rps
    e2e = mean_e2e_ms(obs)
    if rate and math.isfinite(rate) and e2e is not None:
        little = rate * e2e / 1000.0
        return max(1, round((min(little, cap) if cap else little) / count))
    return max(1, round(cap / count)) if cap else None


def why_no_points(obs: Observation) -> str:
    """Why a file gives no calibration point (`points` returned nothing): what it does not state."""
    s = obs.setup
    if s.prompt_tokens is None or s.output_tokens is None:
        return "states no prompt or output lengths"
    if concurrency(obs) is None:
        return "states no concurrency, and no rate with an E2E or TTFT and TPOT: give --concurrency or --rate"
    return "states no TTFT, TPOT or throughput"


def points(obs: Observation, dep: Deployment, catalog: Catalog) -> list[Measurement]:
    """What one file says, as calibration points on `dep` (empty when it states too little)."""
    model = dep.model or guess_model(obs.setup.model, catalog)
    if model is None:
        raise ScenarioError(f"{obs.source}: give the model (the file names {obs.setup.model!r})")
    s, m = obs.setup, obs.measured
    c = concurrency(obs, dep.count)
    if c is None or s.prompt_tokens is None or s.output_tokens is None:
        return []
    same = obs.rows is None or (np.ptp(obs.rows.prompt_tokens) == 0 and np.ptp(obs.rows.output_tokens) == 0)
    closed = bool(s.concurrency) and not open_loop(obs)  # at a rate, throughput is the offered load
    base = Measurement(
        id=obs.source,
        model=model,
        hardware=dep.hardware,
        tp=dep.tp,
        weights=dep.weights,
        kv=dep.kv,
        kind="tpot",
        value=1.0,
        unit="ms",
        prompt_tokens=max(1, round(s.prompt_tokens)),
        output_tokens=max(1, round(s.output_tokens)),
        concurrency=c,
        stack=dep.stack,
        source=f"{obs.source} ({obs.format})",
        prompts=s.requests or 0,
        lockstep=closed and same and s.rate_rps is None,  # the clients start together, in step
    )
    tpot = m.tpot if m.tpot is not None else m.itl
    out: list[Measurement] = []
    if tpot is not None and tpot.mean_ms:
        out.append(replace(base, id=f"{obs.source}:tpot", value=tpot.mean_ms))
    if m.ttft is not None and m.ttft.mean_ms:
        out.append(replace(base, id=f"{obs.source}:ttft", kind="ttft", value=m.ttft.mean_ms))
    if closed and m.output_tok_s:
        out.append(
            replace(
                base,
                id=f"{obs.source}:throughput",
                kind="throughput",
                value=m.output_tok_s / dep.count,
                unit="tok/s",
            )
        )
    return out


BAND_COLUMNS: tuple[str, ...] = ("figure", "points", "low", "high", "coverage")
"""Columns of a fit's bands."""


FITTED_FACTORS = 3
"""What a profile fit sets from the points: the compute and bandwidth fractions and the overhead."""


@dataclass(frozen=True)
class FileFit:
    """A profile fitted to every file's points, the fit's table, and each file's held-out error."""

    profile: CalibrationProfile
    table: pd.DataFrame
    held_out: pd.DataFrame
    """file, points, median |error| of its points as its replay reads them at the profile fitted without it (None
    when no other file has points), and why a file gave no point (`why_no_points`; None where it did)."""
    bands: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(BAND_COLUMNS)))
    """The band each figure carries (`held_out_bands`): figure, points, low, high, coverage."""
    notes: tuple[str, ...] = ()
    """What the fit could not do as it does for most files (a file the simulator could not replay)."""

    @property
    def thin_note(self) -> str | None:
        """What a fit to too few points cannot say: with no more points than the factors it fits (the
        compute and bandwidth fractions and the overhead), it passes through them whatever the chip
        does elsewhere, and one file gives no held-out error to judge it by; None where there are more."""
        points = len(self.table)
        files = int((self.held_out["points"] > 0).sum()) if "points" in self.held_out else 0
        if points > FITTED_FACTORS and files > 1:
            return None
        few = (
            f"{points} point{'s' if points != 1 else ''} for {FITTED_FACTORS} factors"
            if points <= FITTED_FACTORS
            else ""
        )
        one = "one file, so no held-out error" if files <= 1 else ""
        matches = "it says" if self.problem() else "it matches these runs and says"  # (not where it misses)
        return (
            f"A thin fit ({'; '.join(w for w in (few, one) if w)}): {matches} little of "
            "other loads. Fit runs at other concurrencies and lengths, each in its own file, before trusting it."
        )

    def problem(self) -> str:
        """Why this fit is not to be used as it stands ('' where none), by the rule a CSV's fit follows
        (`calibrate.Fit.problem`): a file's TTFTs of 0.1 ms missed by +22,825% under a warning that the
        thin fit 'matches these runs' (a review)."""
        from engine.calibration.calibrate import poor_fit

        if "error" not in self.table or not len(self.table):
            return ""
        signed = [float(e) for e in self.table["error"]]
        few = (
            len(signed) <= FITTED_FACTORS and "point" in self.table
        )  # each named: a median of two means nothing
        named = (
            [f"{e:+,.1%} ({p})" for e, p in zip(signed, self.table["point"], strict=True)] if few else None
        )
        return poor_fit([abs(e) for e in signed], named)

    @property
    def held_out_median(self) -> float | None:
        """Median over files of their held-out median |error| (None with fewer than two files)."""
        v = self.held_out["held_out_abs_error"].dropna()
        return None if v.empty else float(v.median())


def distinct_sources(observations: Sequence[Observation]) -> list[Observation]:
    """The files, each named apart: a name given twice (runA/result.json, runB/result.json) is
    numbered ('result.json (2)'), so no file's points stand in for another's."""
    seen: dict[str, int] = {}
    out = []
    for o in observations:
        seen[o.source] = seen.get(o.source, 0) + 1
        out.append(o if seen[o.source] == 1 else replace(o, source=f"{o.source} ({seen[o.source]})"))
    return out


def fit_files(observations: Sequence[Observation], dep: Deployment, catalog: Catalog) -> FileFit:
    """One profile for (`dep.hardware`, `dep.stack`) fitted to every file, and each file left out."""
    named = {o.source: o for o in distinct_sources(observations)}
    per_file = {name: points(o, dep, catalog) for name, o in named.items()}
    every = [p for ps in per_file.values() for p in ps]
    if not every:
        raise ScenarioError(
            "calibrate: no file states a concurrency or rate with TTFT, TPOT or throughput to fit"
        )
    names = ", ".join(per_file)
    source = (
        f"user's own: fitted to {len(every)} points from {names} on {dep.count}x {dep.hardware} tp{dep.tp} "
        f"{dep.stack} (fengong calibrate; engine.observe)"
    )
    files = {name: (named[name], pts) for name, pts in per_file.items()}
    whole = refine.refine(files, dep, catalog, source)
    rows, errors = [], []
    for name, pts in per_file.items():
        got = refine.held_out(files, name, whole, dep, catalog)
        err = None if got is None else float(np.median([abs(e) for _, e in got]))
        errors += [(name, FIGURE_OF[m.kind], e) for m, e in got or []]
        why = why_no_points(named[name]) if not pts else None
        rows.append({"file": name, "points": len(pts), "held_out_abs_error": err, "why": why})
    held = pd.DataFrame(errors, columns=["file", "figure", "error"])
    bands = held_out_bands(held)
    return FileFit(
        marked(whole.fit.profile, dep.stack, bands, bool(errors)),
        whole.fit.table,
        pd.DataFrame(rows),
        bands,
        tuple(
            f"{name}: not replayed ({why}); fitted by its steady state"
            for name, why in whole.unreplayed.items()
        ),
    )


def marked(
    profile: CalibrationProfile, stack: str, bands: pd.DataFrame, held_out: bool
) -> CalibrationProfile:
    """`profile` carrying the stack it was fitted under and its held-out band as ratios predicted /
    measured (`CalibrationProfile.band`: None without any held-out error, as with one file), so it
    is marked the user's own calibration under that stack (`engine.calibration.own`)."""
    rows = bands.to_dict(orient="records")
    band = (
        {str(r["figure"]): (band_ratio(r["low"]), band_ratio(r["high"])) for r in rows} if held_out else None
    )
    return CalibrationProfile.model_validate({**profile.model_dump(), "stack": stack, "band": band})


MIN_BAND_POINTS = 3
"""Held-out points of a figure below which it carries no band."""


def held_out_bands(errors: pd.DataFrame) -> pd.DataFrame:
    """Per figure, the band of held-out errors (16th to 84th percentile of predicted / measured - 1,
    as the shipped bands) and its coverage: each file's errors tested against the band of the other
    files' (how often held-out data fell inside a band it did not help make; None with one file)."""
    out = []
    for figure, part in errors.groupby("figure", sort=True):
        if len(part) < MIN_BAND_POINTS:
            continue
        lo, hi = np.percentile(part["error"], [16, 84])
        inside, tested = 0, 0
        for name, own in part.groupby("file"):
            others = part[part["file"] != name]["error"]
            if len(others) >= 2:
                a, b = np.percentile(others, [16, 84])
                inside += int(((own["error"] >= a) & (own["error"] <= b)).sum())
                tested += len(own)
        out.append(
            {
                "figure": figure,
                "points": len(part),
                "low": float(lo),
                "high": float(hi),
                "coverage": inside / tested if tested else None,
            }
        )
    return pd.DataFrame(out, columns=list(BAND_COLUMNS))


def entry_with(
    chip: HardwareSpec, profile: CalibrationProfile, name: str, new_id: str | None = None
) -> HardwareSpec:
    """`chip` as a catalog entry of the user's own (`<chip>-<name>` unless `new_id`), `profile` its default
    under `name`, its other profiles kept: what `fengong calibrate` writes and the dashboard adds."""
    entry = chip.model_copy(
        update={
            "id": new_id or f"{chip.id}-{name}",
            "profiles": {**chip.profiles, name: profile},
            "default_profile": name,
        }
    )
    return HardwareSpec.model_validate(entry.model_dump(by_alias=True))


def entry_toml(entry: HardwareSpec) -> str:
    """A hardware entry as the TOML file a catalog directory takes."""
    return entry_to_toml(entry)
