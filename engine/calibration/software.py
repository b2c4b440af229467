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
