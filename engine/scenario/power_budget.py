"""Power budgets: a site's or a pool's cap in kW, turned into a power limit on every chip.

A cap is what the operator can enforce on the chips themselves (``nvidia-smi -pl``): each chip's
power limit. A pool's own cap (`Pool.power_cap_kw`) is shared equally by its chips (at its most
instances, an autoscaled pool's `count`). The site's cap (`Deployment.power_cap_kw`) is the total
over every data-centre pool (an edge site has its own budget, `deployment.edge`): a pool with a cap
of its own keeps it (what it can draw: its cap, or its chips' TDP where that is lower), and the rest
of the site's cap is shared by the other data-centre pools, every chip of theirs limited to the same
share of its TDP, the share at which all of them together draw that rest when flat out. Pools whose
own caps sum over the site's are refused, naming both fields. (Until 2026-12-07 a chip took the
lower of its pool's limit and the site's share of its TDP, so a pool given more than that share
was held to it, unsaid: the site's 6 kW given 600 W a prefill chip and 400 W a decode chip read as
500 W each; docs/decisions.md.) A limit at or above the TDP changes nothing.
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
from engine.core.numbers import directed
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
    own_w = sum(min(p.cap_kw * 1e3, p.hardware.tdp_w * p.chips) for p in dc if p.cap_kw is not None)
    rest_tdp_w = sum(p.hardware.tdp_w * p.chips for p in dc if p.cap_kw is None)
    if site_cap_kw is not None and own_w > site_cap_kw * 1e3 * (1 + 1e-9):
        _over_site(site_cap_kw, pools, own_w)
    left_kw = None if site_cap_kw is None else site_cap_kw - own_w / 1e3
    share = None if left_kw is None or rest_tdp_w <= 0 else left_kw * 1e3 / rest_tdp_w
    out: list[ChipLimit | None] = []
    for i, p in enumerate(pools):
        if p.cap_kw is not None:
            limit_w, field = p.cap_kw * 1e3 / p.chips, f"deployment.pools[{i}].power_cap_kw"
        elif share is not None and p.tier == "datacenter":
            limit_w, field = share * p.hardware.tdp_w, "deployment.power_cap_kw"
        else:
            out.append(None)
            continue
        if limit_w >= p.hardware.tdp_w:
            out.append(None)
            continue
        clock = power_cap.clock_at_limit(p.hardware, limit_w)
        if clock < power_cap.MIN_CLOCK:
            site = None if site_cap_kw is None or p.cap_kw is not None else (site_cap_kw, own_w / 1e3)
            _refuse(field, p, limit_w, rest_tdp_w, site, _own_fields(pools))
        out.append(ChipLimit(limit_w=limit_w, clock=clock, cap_kw=limit_w * p.chips / 1e3))
    return out


def _over_site(site_cap_kw: float, pools: Sequence[CappedPool], own_w: float) -> None:
    """The refusal of pools' own caps that sum over the site's, naming both fields."""
    fields = _own_fields(pools)
    raise ScenarioError(
        f"deployment.power_cap_kw: the site's {site_cap_kw:g} kW is less than the {own_w / 1e3:.3g} kW its "
        f"pools' own caps let them draw ({fields}): the site's cap is the total, which the pools' caps share; "
        "raise it or lower theirs"
    )


def _sig(kw: float, up: bool) -> str:
    """`kw` to three significant figures rounded up (a least) or down (a most), so that the figure a
    refusal offers works: 'the least cap is 6 kW' stood over a refusal of 6 kW (6.0018)."""
    return f"{directed(kw, 3, up):.3g}"  # (every figure offered is above 0: `room` is checked, a least is)


def _own_fields(pools: Sequence[CappedPool]) -> str:
    """The fields of the pools with caps of their own, comma-separated."""
    return ", ".join(
        f"deployment.pools[{i}].power_cap_kw" for i, p in enumerate(pools) if p.cap_kw is not None
    )


def _refuse(
    field: str,
    p: CappedPool,
    limit_w: float,
    rest_tdp_w: float,
    site: tuple[float, float] | None,
    own_fields: str = "",
) -> None:
    """The one-line refusal of a cap too tight for the relation: the figure, and the least that works
    (`site`: the site's cap and what the pools with caps of their own take of it, kW; `own_fields`, theirs)."""
    least_w = power_cap.limit_for_clock(p.hardware, power_cap.MIN_CLOCK)
    fix = "or use fewer chips"
    if site is not None:
        site_cap_kw, own_kw = site
        rest_kw = least_w / p.hardware.tdp_w * rest_tdp_w / 1e3  # what the others need at the least
        least_kw = rest_kw + own_kw
        got = f"{site_cap_kw:g} kW holds each {p.hardware.id} of pool {p.name!r} to {limit_w:.0f} W"
        # the other way out: the pools' own caps (the page filed it under one, unnamed: a browser review)
        if own_kw > 0:
            if (room := site_cap_kw - rest_kw) > 0:
                fix = (
                    f"or the pools' own caps at most {_sig(room, up=False)} kW together ({own_fields}), {fix}"
                )
            got += (
                f" after the {own_kw:.3g} kW the pools with caps of their own may draw (each its cap, or its "
                "chips' TDP where lower)"
            )
    else:
        least_kw = least_w * p.chips / 1e3
        got = f"{limit_w * p.chips / 1e3:g} kW holds each of pool {p.name!r}'s {p.chips} {p.hardware.id} to "
        got += f"{limit_w:.0f} W"
    # the least cap first: a toast cut the line before it, behind 'view more' (a browser review)
    raise ScenarioError(
        f"{field}: the least cap is {_sig(least_kw, up=True)} kW ({fix}): {got}, below the {least_w:.0f} W at "
        f"which it would run at {power_cap.MIN_CLOCK:.0%} of its clock (TDP {p.hardware.tdp_w:g} W, idle "
        f"{p.hardware.idle_w:g} W)"
    )
