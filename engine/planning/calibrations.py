"""Which calibration each chip of a plan runs with, the columns that say so, and the band's edges
the planner's margin runs the chips at (`engine.calibration.trust`, `engine.calibration.bands`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from engine.calibration import software
from engine.calibration.trust import BASIS_TEXT, Calibration
from engine.catalog.entries import Catalog
from engine.scenario.model import Scenario


def chip_calibrations(scenario: Scenario, cat: Catalog, chips: Sequence[str]) -> dict[str, Calibration]:
    """The calibration each chip runs with under the scenario's stack (a profile the scenario pins kept, at
    the software maturity its pools state)."""
    pools = scenario.deployment.pools
    profiles = {p.hardware: p.profile for p in pools if p.profile is not None}
    moe = cat.models[scenario.model.id].moe is not None
    stack = scenario.deployment.stack
    custom = {h.id for h in scenario.custom_hardware}
    return {
        h: software.calibration(
            cat.hardware[h], stack, cat, profiles.get(h), software.level_of(pools, h), moe, h in custom
        )[1]
        for h in chips
    }


def slowdowns(calibrations: Iterable[Calibration]) -> dict[str, float]:
    """Per chip, how much longer than modelled a pessimistic plan runs its iterations: the
    pessimistic edge of its throughput band (`Calibration.edges`; 0 where no band is shown)."""
    return {c.hardware: c.edges()[0] for c in calibrations}


def speedups(calibrations: Iterable[Calibration]) -> dict[str, float]:
    """Per chip with a throughput band, its optimistic edge (`Calibration.edges`, usually below 0)."""
    return {c.hardware: c.edges()[1] for c in calibrations if "throughput" in c.band}


def trust_columns(prefill: Calibration, *decode: Calibration) -> dict[str, Any]:
    """A deployment's calibration as table columns.

    ``calibrated``: every chip has a profile fitted under the stack; ``calibration``: that
    (``calibrated``, or ``partly calibrated: <why>`` for a MoE model's shared experts' factor), or
    ``uncalibrated: <chip> (<basis>)``; ``throughput_error`` (over every chip), ``ttft_error`` (the
    prefill chip's), ``tpot_error`` (the decode chips', the largest of a portfolio's): median
    held-out errors, NaN where unknown; ``<kind>_fall`` and ``<kind>_rise`` over the same chips:
    the band (where the real figure lands against the modelled one, signed; NaN where none is
    shown). A portfolio is as sure as its least calibrated pool.
    """
    chips = list({c.hardware: c for c in (prefill, *decode)}.values())
    off = [c for c in chips if not c.fitted]
    mark = (
        "uncalibrated: " + ", ".join(f"{c.hardware} ({BASIS_TEXT[c.basis]})" for c in off)
        if off
        else "partly calibrated: " + "; ".join(sorted({c.partial_text for c in chips if c.partial}))
        if any(c.partial for c in chips)
        else "calibrated"
    )

    def known(errors: Sequence[float | None]) -> float:
        have = [e for e in errors if e is not None]
        return max(have) if have else math.nan

    def band(figure: str, cals: Sequence[Calibration]) -> dict[str, float]:
        found = [r for c in cals if (r := c.real_band(figure)) is not None]
        return {
            f"{figure}_fall": min(r[0] for r in found) if found else math.nan,
            f"{figure}_rise": max(r[1] for r in found) if found else math.nan,
        }

    return {
        "calibrated": not off,
        "calibration": mark,
        "throughput_error": known([c.error("throughput") for c in chips]),
        "ttft_error": known([prefill.error("ttft")]),
        "tpot_error": known([d.error("tpot") for d in decode]),
        **band("throughput", chips),
        **band("ttft", [prefill]),
        **band("tpot", decode),
    }
