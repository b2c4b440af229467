"""Power budgets: a site's or a pool's cap in kW, turned into a power limit on every chip.

A cap is what the operator can enforce on the chips themselves (``nvidia-smi -pl``): each chip's
power limit. A pool's own cap (`Pool.power_cap_kw`) is shared equally by its chips (at its most
instances, an autoscaled pool's `count`). The site's cap (`Deployment.power_cap_kw`) covers every
data-centre pool (an edge site has its own budget, `deployment.edge`): every chip is limited to
the same share of its TDP, the share at which all of them together draw the cap when flat out.
With both, a chip's limit is the lower of the two. A limit at or above the TDP changes nothing.
The chip's clock under its limit, and what it slows, is `engine.costmodel.power_cap`.

Chips only, as the power model (`engine.costmodel.power`): the server around them (CPUs, fans,
NICs: `cost.server_power_factor`) is not in the cap. Default: no cap, and nothing changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from engine.catalog.specs import HardwareSpec
from engine.core.errors import ScenarioError
from engine.costmodel import power_cap

PowerCapKw = Annotated[float, Field(ge=0.001, le=1_000_000)] | None
"""A power cap in kW (1 W to 1 GW); unset: none."""


@dataclass(frozen=True)
class ChipLimit:
    """One pool's chips under their power limit."""

    limit_w: float
    """Each chip's power limit, W."""
    clock: float
    """The clock factor it holds a chip flat out to (`power_cap.clock_at_limit`)."""
    cap_kw: float
    """The pool's cap: the limit times its chips, kW."""


@dataclass(frozen=True)
class CappedPool:
    """What the budget needs of a pool: its name, tier, cap, chip and chips (at its most instances)."""

    name: str
    tier: str
    cap_kw: float | None
    hardware: HardwareSpec
    chips: int


def chip_limits(site_cap_kw: float | None, pools: Sequence[CappedPool]) -> list[ChipLimit | None]:
    """Each pool's chip limit under the site's and its own cap (None: uncapped), or a ScenarioError
    naming the field when a cap leaves a chip below `power_cap.MIN_CLOCK`."""
    dc = [p for p in pools if p.tier == "datacenter"]
    site_tdp_w = sum(p.hardware.tdp_w * p.chips for p in dc)
    share = None if site_cap_kw is None or site_tdp_w <= 0 else site_cap_kw * 1e3 / site_tdp_w
    out: list[ChipLimit | None] = []
    for i, p in enumerate(pools):
        limits: list[tuple[float, str]] = []
        if p.cap_kw is not None:
            limits.append((p.cap_kw * 1e3 / p.chips, f"deployment.pools[{i}].power_cap_kw"))
        if share is not None and p.tier == "datacenter":
            limits.append((share * p.hardware.tdp_w, "deployment.power_cap_kw"))
        if not limits:
            out.append(None)
            continue
        limit_w, field = min(limits)
        if limit_w >= p.hardware.tdp_w:
            out.append(None)
            continue
        clock = power_cap.clock_at_limit(p.hardware, limit_w)
        if clock < power_cap.MIN_CLOCK:
            _refuse(
                field, p, limit_w, site_tdp_w, site_cap_kw if field == "deployment.power_cap_kw" else None
            )
        out.append(ChipLimit(limit_w=limit_w, clock=clock, cap_kw=limit_w * p.chips / 1e3))
    return out


def _refuse(field: str, p: CappedPool, limit_w: float, site_tdp_w: float, site_cap_kw: float | None) -> None:
    """The one-line refusal of a cap too tight for the relation: the figure, and the least that works."""
    least_w = power_cap.limit_for_clock(p.hardware, power_cap.MIN_CLOCK)
    if site_cap_kw is not None:
        least_kw = least_w / p.hardware.tdp_w * site_tdp_w / 1e3
        got = f"{site_cap_kw:g} kW holds each {p.hardware.id} of pool {p.name!r} to {limit_w:.0f} W"
    else:
        least_kw = least_w * p.chips / 1e3
        got = f"{limit_w * p.chips / 1e3:g} kW holds each of pool {p.name!r}'s {p.chips} {p.hardware.id} to "
        got += f"{limit_w:.0f} W"
    # the least cap first: a toast cut the line before it, behind 'view more' (a browser review)
    raise ScenarioError(
        f"{field}: the least cap is {least_kw:.3g} kW (or use fewer chips): {got}, below the {least_w:.0f} W at "
        f"which it would run at {power_cap.MIN_CLOCK:.0%} of its clock (TDP {p.hardware.tdp_w:g} W, idle "
        f"{p.hardware.idle_w:g} W)"
    )
