"""A profile fitted to the user's own benchmark: calibrated under the stack it was fitted under.

`fengong calibrate` and the Hardware page's "Calibrate from your benchmark" (`engine.observe`) fit
a chip's profile to the user's files and write it with a source starting "user's own", the stack
the benchmark ran under (`CalibrationProfile.stack`) and the band of the fit's own held-out errors
(`CalibrationProfile.band`: each file predicted by the profile fitted to the others). Such a
profile, run under its stack, is *calibrated* (basis ``own``) and carries that band, not the
shipped tables': the user measured this chip, and the band says how well the fit predicted their
files. A figure those errors give no band (one file, one point, fewer than three held-out points of
it) takes the catalog's fitted chips' band, and the mark says so (**decision**, 2026-12-06: it was
shown with no band at all, surer-looking than any catalog chip, a review). Run under another stack,
it is a fit of another stack (basis ``other_stack``, the shipped band of that rule).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from engine.calibration.band_lookup import bands_for
from engine.catalog.specs import CalibrationProfile
from engine.costmodel.stacks import STACK_NAMES

OWN_PREFIX = "user's own"
"""How the source of a profile fitted to the user's own benchmark starts (`engine.observe.fit_files`)."""

NO_HELD_OUT = (
    "no held-out error of its own (one file, or one point): the band is the catalog's fitted chips' "
    "(fit two or more files, or three points a figure, for its own)"
)
"""The caveat of an own fit with no held-out error at all (`CalibrationProfile.band` unset)."""
FEW_HELD_OUT = (
    "too few held-out points for a band of its own (three per figure): "
    "the band is the catalog's fitted chips'"
)
"""The caveat of an own fit whose held-out points made no band (`CalibrationProfile.band` empty)."""

Terms = tuple[Literal["own", "other_stack"], str, dict[str, tuple[float, float]], dict[str, float], str]
"""(basis, rule, band, expected error per figure, caveat) of an own fit."""


def is_own(profile: CalibrationProfile) -> bool:
    """True for a profile fitted to the user's own benchmark under a stated stack."""
    return profile.source.startswith(OWN_PREFIX) and profile.stack is not None


def own_terms(
    chip: str, profile: CalibrationProfile, stack: str, native: Callable[[str, str], str], moe: bool = False
) -> Terms | None:
    """How sure an own fit is when `chip` runs it under `stack` (the fit's stack and `stack` compared as
    they run on the chip, `native`: vLLM on an Ascend NPU is vLLM-Ascend); None for any other profile."""
    if profile.stack is None or not is_own(profile):
        return None
    fitted = STACK_NAMES.get(profile.stack, profile.stack)
    if native(chip, profile.stack) != native(chip, stack):
        rule = f"your own {fitted} fit used for {STACK_NAMES.get(stack, stack)} (no fit of yours under it)"
        return "other_stack", rule, bands_for(chip, stack, "other_stack", moe), {}, ""
    own: dict[str, tuple[float, float]] = {f: (lo, hi) for f, (lo, hi) in (profile.band or {}).items()}
    # a figure the fit's held-out errors give no band takes the catalog's fitted chips' (how far a fitted
    # profile misses held out): a one-point fit printed its figures bare, as if surer than any (a review)
    band = {**bands_for(chip, stack, "fitted", moe), **own}
    errors = {f: max(abs(1.0 / hi - 1.0), abs(1.0 / lo - 1.0)) for f, (lo, hi) in band.items()}
    caveat = NO_HELD_OUT if profile.band is None else FEW_HELD_OUT if not own else _borrowed(band, own)
    rule = f"your own benchmark under {fitted}: {profile.source[len(OWN_PREFIX) :].lstrip(': ')}"
    return "own", rule, band, errors, caveat


def calibrate_hint(chip: str, stack: str, custom: bool = False, software: str = "") -> str:
    """Where to fit one's own benchmark of `chip` under `stack`: the Hardware page and the command line.

    A `custom` chip (a scenario's own entry) is unknown to the command line until its entry is a file
    of a catalog directory: the command names the directory (``FENGONG_CATALOG``) that makes it known.
    `software`: what the chip really runs where it is not the stack (a compiler-placed chip's vendor
    runtime, `Calibration.software`): the benchmark is of that, and the stack only files the fit
    where the scenario's stack finds it."""
    command = f"fengong calibrate RESULT.json --hardware {chip} --stack {stack}"
    after = (
        f"; the benchmark is of {software}, and --stack {stack} only files the fit where the scenario's stack "
        "finds it (the run keeps that stack's scheduler defaults)"
        if software
        else ""
    )
    if custom:
        command = (
            f"FENGONG_CATALOG=DIR {command}, with the chip's entry saved as DIR/hardware/{chip}.toml (the "
            "catalog entry the Hardware page downloads; the command line knows only catalog chips)"
        )
    return (
        'the Hardware page\'s "Calibrate from your benchmark" (a vllm bench serve, SGLang bench_serving or AIPerf '
        f"result, or a /metrics scrape), or {command} (which also takes a CSV of timings, docs/calibration.md)"
        f"{after}"
    )


def _borrowed(band: dict[str, tuple[float, float]], own: dict[str, tuple[float, float]]) -> str:
    """'throughput: the catalog's fitted chips' band ...' for the figures whose band is not the fit's own."""
    others = [f for f in band if f not in own]
    if not others:
        return ""
    return f"{', '.join(others)}: the catalog's fitted chips' band (no held-out errors of its own)"
