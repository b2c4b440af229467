"""A benchmark fit matched to the simulator's replay of each file's own requests.

The fit's predictor (`engine.calibration.predictor`) prices a file at its steady state: its mean
load as a fixed number in flight (at a rate, Little's law), its mean lengths, and each prompt's
prefill spread thinly over every decode step. The simulator that replays the file
(`engine.observe.playback`) runs each prompt in a step of its own, long and compute-bound, which
stalls the decodes beside it, and takes the file's own send times, whose bursts queue prompts
behind each other. For vllm_bench_detailed.json (4 req/s, 1,031-token prompts, 64 out, 2 in
flight) the replay reads TPOT and TTFT about 10% above the steady state at any profile: a profile
fitted to the steady state replayed that file 10% slow, where the shipped vLLM profile replayed it
within 5% (a review).

So the fit is refined as a fixed point. Each point's target is its measured figure times
steady / replayed at the last profile (what the steady state misses at this load, taken to be
missed alike at the next profile), and the profile is refitted to those targets by the same fit.
After `ROUNDS` rounds the profile whose replays miss the measured figures least (squared log error,
as the fit's) is kept, the steady-state fit among the candidates, so refining never makes a
file's replay worse. Each round replays every file once: a calibration costs `ROUNDS` + 1 replays
of each file, and one more for its held-out error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from engine.calibration import calibrate
from engine.calibration.measurements import Measurement
from engine.calibration.predictor import predict
from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile
from engine.core.errors import ScenarioError
from engine.observe.observation import Observation
from engine.observe.playback import Deployment, Replay, replay

ROUNDS = 2
"""Refits against the replays after the steady-state fit (two bring the fixtures' replays within 1%)."""

Files = Mapping[str, tuple[Observation, Sequence[Measurement]]]
"""Each file's name, its observation and its calibration points."""


@dataclass(frozen=True)
class Refined:
    """The profile kept, its table, and the targets it was fitted to."""

    fit: calibrate.Fit
    """The kept profile; its table's `predicted` is each point as the file's replay reads it."""
    targets: dict[str, list[Measurement]]
    """Each file's points with the values the kept profile was fitted to (the measured ones at the
    steady-state fit): a held-out fit is made to the other files' targets."""
    unreplayed: dict[str, str]
    """Files the simulator could not replay and why: their points are priced by the steady state."""


def _figure(rep: Replay, obs: Observation, m: Measurement, count: int) -> float | None:
    """Point `m` as the replay of its file reads it (mean TPOT, or ITL where the file gave that;
    mean TTFT; output tokens per second per instance)."""
    if m.kind == "throughput":
        figure, share = "output_tok_s", 1.0 / count
    elif m.kind == "tpot":
        figure, share = ("tpot" if obs.measured.tpot is not None else "itl"), 1.0
    else:
        figure, share = m.kind, 1.0
    row = rep.table[(rep.table["figure"] == figure) & (rep.table["stat"] == "mean")]
    return None if row.empty else float(row["simulated"].iloc[0]) * share


def replayed(
    obs: Observation,
    pts: Sequence[Measurement],
    dep: Deployment,
    catalog: Catalog,
    profile: CalibrationProfile,
) -> list[float]:
    """Each of a file's points as its replay at `profile` reads it (the steady state's where it
    reads none); raises ScenarioError where the file cannot be replayed."""
    rep = replay(obs, replace(dep, profile=profile), catalog)
    out = []
    for m in pts:
        got = _figure(rep, obs, m, dep.count)
        out.append(predict(m, catalog, profile) if got is None or got <= 0 else got)
    return out


def _replay_all(
    files: Files, dep: Deployment, catalog: Catalog, profile: CalibrationProfile, skip: dict[str, str]
) -> dict[str, list[float]]:
    """Every file's points replayed at `profile`; a file that cannot be replayed is priced by the
    steady state and named in `skip` with why."""
    out: dict[str, list[float]] = {}
    for name, (obs, pts) in files.items():
        if not pts:
            continue
        if name not in skip:
            try:
                out[name] = replayed(obs, pts, dep, catalog, profile)
                continue
            except ScenarioError as exc:  # (its file named once: the note names it)
                skip[name] = str(exc).removeprefix(f"{name}: ")
        out[name] = [predict(m, catalog, profile) for m in pts]
    return out


def _loss(files: Files, sims: Mapping[str, list[float]]) -> float:
    """Squared log error of the replayed figures against the measured ones."""
    return sum(
        math.log(s / m.value) ** 2
        for name, (_, pts) in files.items()
        if pts
        for m, s in zip(pts, sims[name], strict=True)
    )


def _retargeted(
    files: Files, sims: Mapping[str, list[float]], catalog: Catalog, profile: CalibrationProfile
) -> dict[str, list[Measurement]]:
    """Each point's next target: measured x steady / replayed at `profile` (what the steady state
    misses there, to be missed alike at the next profile)."""
    return {
        name: [
            replace(m, value=m.value * predict(m, catalog, profile) / s)
            for m, s in zip(pts, sims[name], strict=True)
        ]
        for name, (_, pts) in files.items()
        if pts
    }


def refine(files: Files, dep: Deployment, catalog: Catalog, source: str) -> Refined:
    """The profile fitted to every file's points, refined against their replays (module doc)."""
    skip: dict[str, str] = {}
    targets = {name: list(pts) for name, (_, pts) in files.items() if pts}
    profile = calibrate.fit([p for ps in targets.values() for p in ps], catalog, source).profile
    sims = _replay_all(files, dep, catalog, profile, skip)
    best = (_loss(files, sims), profile, sims, targets)
    for _ in range(ROUNDS):
        targets = _retargeted(files, sims, catalog, profile)
        profile = calibrate.fit([p for ps in targets.values() for p in ps], catalog, source).profile
        sims = _replay_all(files, dep, catalog, profile, skip)
        loss = _loss(files, sims)
        if loss < best[0]:
            best = (loss, profile, sims, targets)
    _, profile, sims, kept = best
    every = [m for _, pts in files.values() for m in pts]
    got = [s for name, (_, pts) in files.items() if pts for s in sims[name]]
    t = calibrate.table(every, catalog, profile)
    t["predicted"] = got
    t["error"] = [g / m.value - 1.0 for g, m in zip(got, every, strict=True)]
    t["abs_error"] = t["error"].abs()
    return Refined(calibrate.Fit(profile=profile, table=t), kept, skip)


def held_out(
    files: Files, name: str, refined: Refined, dep: Deployment, catalog: Catalog
) -> list[tuple[Measurement, float]] | None:
    """File `name`'s points against its replay at the profile fitted to the other files' targets
    (each point with its error, predicted / measured - 1); None where no other file has points."""
    rest = [p for other, ps in refined.targets.items() if other != name for p in ps]
    obs, pts = files[name]
    if not pts or not rest:
        return None
    without = calibrate.fit(rest, catalog, "held out").profile
    try:
        got = replayed(obs, pts, dep, catalog, without)
    except ScenarioError:
        got = [predict(m, catalog, without) for m in pts]
    return [(m, g / m.value - 1.0) for m, g in zip(pts, got, strict=True)]
