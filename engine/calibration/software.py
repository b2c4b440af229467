"""Software maturity as a layer of trust: a chip's profile and band under a stack that is not mature.

`engine.calibration.trust` picks the profile a chip runs with under a stack and how sure it is.
A pool may also state how mature that stack is on that chip (`Pool.maturity`,
`engine.costmodel.maturity`): a vendor stack with partial kernel coverage, or a new port. Then
its profile's fractions and overhead take the level's factors (`maturity.derated`), the band
beside its figures widens by the level's factor on each side (`maturity.widened`), and the
calibration's rule says so. The basis mark stays the rule's (a fitted chip's measured profile,
derated, is still built on that fit), so the trust marks and their expected errors keep their
meaning; the rule text and the wider band carry the maturity. Unset, nothing changes: a chip
fitted under the stack counts as ``measured``, any other keeps its rule's numbers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Protocol

from engine.calibration import trust
from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile, HardwareSpec
from engine.costmodel import maturity


def matured(
    prof: CalibrationProfile, cal: trust.Calibration, level: str | None
) -> tuple[CalibrationProfile, trust.Calibration]:
    """A chip's (profile, calibration) under a stack of maturity `level` (unchanged when None or measured)."""
    if level is None or level == "measured":
        return prof, cal
    lv = maturity.LEVELS[level]
    note = (
        f"software maturity '{level}' ({lv.text}): compute fraction x{lv.compute:g}, bandwidth fraction "
        f"x{lv.bandwidth:g}, overhead x{lv.overhead:g}, band widened x{lv.widen:g} (docs/calibration.md)"
    )
    cal = dataclasses.replace(
        cal, rule=f"{cal.rule}; {note}", band=maturity.widened(cal.band, level), maturity=level
    )
    return maturity.derated(prof, level), cal


def calibration(
    hw: HardwareSpec,
    stack: str,
    catalog: Catalog,
    profile_name: str | None = None,
    level: str | None = None,
    moe: bool = False,
    custom: bool = False,
) -> tuple[CalibrationProfile, trust.Calibration]:
    """`trust.calibration` with the stack's maturity on the chip applied (`matured`)."""
    prof, cal = trust.calibration(hw, stack, catalog, profile_name, moe=moe, custom=custom)
    return matured(prof, cal, level)


def effective_chip(
    hw: HardwareSpec,
    stack: str,
    catalog: Catalog,
    profile_name: str | None = None,
    level: str | None = None,
    moe: bool = False,
    custom: bool = False,
) -> tuple[HardwareSpec, str, trust.Calibration]:
    """`trust.effective_chip` with the stack's maturity applied: the spec carries the derated profile."""
    spec, name, cal = trust.effective_chip(hw, stack, catalog, profile_name, moe=moe, custom=custom)
    if level is None or level == "measured":
        return spec, name, cal
    prof, cal = matured(spec.profiles[name], cal, level)
    return spec.model_copy(update={"profiles": {**spec.profiles, name: prof}}), name, cal


class PoolLevel(Protocol):
    """What `level_of` reads of a pool (`engine.scenario.model.Pool`)."""

    @property
    def hardware(self) -> str: ...

    @property
    def maturity(self) -> str | None: ...


def level_of(pools: Iterable[PoolLevel], chip: str) -> str | None:
    """The maturity the scenario's pools state for `chip` (the first pool of it that states one): the
    planner's candidates and chip tables run a chip as the scenario's pools of it do."""
    return next((p.maturity for p in pools if p.hardware == chip and p.maturity is not None), None)


def level_choice(level: str | None) -> str:
    """A maturity option in a few words with its effect, short enough for a pool card's select."""
    if level is None:
        return "as calibrated (no change)"
    lv = maturity.LEVELS[level]
    if lv.compute == lv.bandwidth == lv.overhead == 1.0:
        return f"{level} (×1, no porting)"
    # the bandwidth too: "compute ×0.5" alone hid the ×0.6 that sets decode (a review); the overhead and the
    # porting's months in the caption under the select (`level_effect`: an option fits a 300 px card in
    # about 36 characters)
    return f"{level} (compute ×{lv.compute:g}, bw ×{lv.bandwidth:g})"


def level_effect(
    prof: CalibrationProfile,
    cal: trust.Calibration,
    level: str | None,
    stack: str,
    usd_per_engineer_month: float,
) -> str:
    """What maturity `level` does to a pool whose chip runs `prof` by calibration `cal` under `stack`
    (`trust.calibration`, before any maturity), in a sentence with the pool's own numbers."""
    # which peak: '0.55 of peak' beside an FP8 model read as its FP8 one (a review: the roofline's 775 of 1,979)
    now = (
        f"compute {prof.eta_compute:.2f} of its BF16 peak and bandwidth {prof.eta_bandwidth:.2f} of its peak"
    )
    if level is None:
        return f"No change: the chip's own rule, {maturity.label(None, cal.fitted)}: {now}, no porting cost."
    if level == "measured":
        rule = (
            "as its fit says"
            if cal.fitted
            else f"though no fit under {stack} backs it, so its numbers still come by rule"
        )
        return f"Asserts {stack} is mature on this chip ({rule}): {now} as calibrated, no porting cost."
    lv, new = maturity.LEVELS[level], maturity.derated(prof, level)
    return (
        f"{lv.text.capitalize()}: compute {prof.eta_compute:.2f} → {new.eta_compute:.2f}, bandwidth "
        f"{prof.eta_bandwidth:.2f} → {new.eta_bandwidth:.2f}, overhead ×{lv.overhead:g}, band ×{lv.widen:g} "
        f"each side; porting {lv.engineer_months:g} engineer-months "
        f"(${lv.engineer_months * usd_per_engineer_month:,.0f}, billed when the chips are owned)."
    )
