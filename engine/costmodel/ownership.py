"""What a chip-hour costs: rented at its catalog price, or owned (total cost of ownership).

A scenario's `cost` (a `CostBasis`) says how its chips are paid for. ``rent`` bills every chip at
its catalog price per hour (`HardwareSpec.usd_per_hour`), idle or not. ``own`` bills three kinds
of cost instead:

- **capital**: the chip's purchase price plus its share of the server (host CPUs, memory, NICs,
  chassis), straight-line over `amortisation_years` of round-the-clock life, per chip-hour:
  ``(capex_usd + server_capex_usd) / (years * 8760)``; a chip bought and left idle costs the same;
- **hosting**: colocation space, power and cooling capacity, priced per kW of provisioned IT power
  per month; a chip provisions ``tdp_w * server_power_factor`` (its server's share of the rack);
- **energy**: the energy the run draws (`engine.costmodel.power`, chips only) times the site's PUE
  times the price of a kWh: this is the only part that grows with the work done.

A chip whose stack is not mature (`engine.costmodel.maturity`) adds a fourth, **porting**: the
one-off engineering of the (chip, stack) pair, engineer-months at a price each, straight-line over
the same amortisation years, per hour of the deployment (`porting_usd_per_hour`); zero unless a
pool states its maturity or the basis states the chip's engineer-months.

Capital and hosting accrue per chip-hour like rent; energy depends on what the chips do, so the
planner, which prices shapes before simulating them, uses `chip_hour_usd` with the chip's idle
power (a lower bound of the bill) and the simulation charges the energy it measures.
Defaults and their sources: docs/cost-model.md, "Ownership (TCO) mode".
"""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
from collections.abc import Iterable
from typing import Annotated, Literal

from pydantic import Field

from engine.catalog.entries import list_priced, price_assumed
from engine.catalog.specs import ID_PATTERN, Frozen, HardwareSpec
from engine.core.errors import ScenarioError
from engine.costmodel.maturity import LEVELS, USD_PER_ENGINEER_MONTH

HOURS_PER_YEAR = 8760.0
"""Hours of one year of round-the-clock life."""
J_PER_KWH = 3.6e6
"""Joules in one kilowatt-hour."""
MONTHS_PER_YEAR = 12.0

CostMode = Literal["rent", "own"]
"""How chips are paid for: rented per chip-hour, or owned (capital, energy, hosting)."""
ChipId = Annotated[str, Field(pattern=ID_PATTERN)]
ChipUsd = Annotated[float, Field(gt=0, le=10_000_000)]
ChipRent = Annotated[float, Field(gt=0, le=10_000)]
"""A chip-hour's rent, USD (an 8-GPU server's on-demand hour is about $100), up to the ceiling of a chip's
own `usd_per_hour` (a custom chip could be priced to $10,000 an hour and restated only to $1,000: a review)."""
ServerUsd = Annotated[float, Field(ge=0, le=10_000_000)]
EngineerMonths = Annotated[float, Field(ge=0, le=10_000)]

KINDS = ("capital", "energy", "hosting")
"""The kinds of an owned deployment's bill (cache capacity is billed apart, per GB-hour)."""


class CostBasis(Frozen):
    """How the deployment is paid for, and the knobs of ownership (used when `mode` is ``own``)."""

    mode: CostMode = Field(
        default="rent", description="rent: catalog price per chip-hour; own: capital, energy, hosting"
    )
    amortisation_years: Annotated[float, Field(ge=0.5, le=15)] = Field(
        default=5.0, description="Years the chips and servers are written off over, straight-line (Amazon: 5)"
    )
    usd_per_kwh: Annotated[float, Field(ge=0, le=2)] = Field(
        default=0.08, description="Price of electricity (US industrial average, EIA: about $0.08/kWh)"
    )
    pue: Annotated[float, Field(ge=1, le=3)] = Field(
        default=1.58,
        description="Site power over IT power: cooling and power losses (Uptime 2023 average: 1.58)",
    )
    hosting_usd_per_kw_month: Annotated[float, Field(ge=0, le=5_000)] = Field(
        default=184.0, description="Colocation per kW of provisioned power per month (CBRE H2 2024: $184)"
    )
    server_power_factor: Annotated[float, Field(ge=1, le=4)] = Field(
        default=1.8,
        description="Provisioned server power per chip over the chip's TDP (DGX H100: 10.2 kW / 8 x 700 W)",
    )
    usd_per_hour: Annotated[dict[ChipId, ChipRent], Field(max_length=32)] = Field(
        default_factory=dict,
        description="Rent per chip-hour per chip id (rent mode), replacing the catalog's: your quote",
    )
    capex_usd: Annotated[dict[ChipId, ChipUsd], Field(max_length=32)] = Field(
        default_factory=dict, description="Purchase price per chip id, replacing the catalog's"
    )
    server_capex_usd: Annotated[dict[ChipId, ServerUsd], Field(max_length=32)] = Field(
        default_factory=dict, description="Server share per chip id, replacing the catalog's"
    )

    porting_engineer_months: Annotated[dict[ChipId, EngineerMonths], Field(max_length=32)] = Field(
        default_factory=dict,
        description="One-off porting effort per chip id under the scenario's stack, replacing its "
        "maturity level's default (docs/calibration.md, Software maturity)",
    )
    usd_per_engineer_month: Annotated[float, Field(ge=0, le=1_000_000)] = Field(
        default=USD_PER_ENGINEER_MONTH,
        description="Price of one engineer-month of porting (assumption: $300,000 a year fully loaded)",
    )

    def __hash__(self) -> int:
        return hash(self.model_dump_json())

    def label(self) -> str:
        """The basis in a few words, e.g. ``own: 5-year amortisation, $0.08/kWh, PUE 1.58``."""
        if self.mode == "rent":
            yours = ", ".join(f"{c} ${p:,.2f}" for c, p in sorted(self.usd_per_hour.items()))
            return "rent: catalog price per chip-hour" + (f"; yours for {yours}" if yours else "")
        return (
            f"own: {self.amortisation_years:g}-year amortisation, ${self.usd_per_kwh:g}/kWh, "
            f"PUE {self.pue:g}, hosting ${self.hosting_usd_per_kw_month:g}/kW-month"
        )


def assumed_parts(hw: HardwareSpec, basis: CostBasis) -> tuple[bool, bool]:
    """Owned, whether the catalog assumes the chip's purchase price and whether its server share (a part the
    scenario gives is the user's own, `price_assumed`)."""
    chip = price_assumed(hw, True, hw.id in basis.capex_usd, server_given=True)
    server = price_assumed(hw, True, capex_given=True, server_given=hw.id in basis.server_capex_usd)
    return chip, server


def assumed_prices(chips: Iterable[HardwareSpec], basis: CostBasis) -> dict[str, str]:
    """The chips billed at a price the catalog assumes rather than cites (`price_assumed`), by id, each
    with that price: its hourly rent, or owned, its purchase price (where the basis gives none)."""
    own = basis.mode == "own"
    out = {}
    for hw in sorted({h.id: h for h in chips}.values(), key=lambda h: h.id):
        if not own:
            if price_assumed(hw):
                out[hw.id] = f"${hw.usd_per_hour:,.2f}/h"
            continue
        # owned: only the parts the catalog assumes (a cited $27,500, or the user's own $20,000, read as
        # assumed beside an assumed server share: a code review)
        chip, server = assumed_parts(hw, basis)
        if (chip or server) and hw.capex_usd:
            price, share = capex_usd(hw, basis)
            parts = [f"${price:,.0f} a chip"] if chip else []
            parts += [f"${share:,.0f} {'its' if chip else 'a'} server share"] if server else []
            out[hw.id] = " and ".join(parts)
    return out


def list_prices(chips: Iterable[HardwareSpec], basis: CostBasis) -> dict[str, str]:
    """Rented chips billed at their cloud's list price (`list_priced`: TPUs, Inferentia2), by id, each with
    that price: beside GPUs on the neocloud basis they look cheaper than a like-for-like quote would make
    them (an H100 lists at about 5x its $2.49 basis; a catalog review). A rent of yours is yours."""
    if basis.mode == "own":
        return {}
    listed = [
        hw for hw in {h.id: h for h in chips}.values() if list_priced(hw) and hw.id not in basis.usd_per_hour
    ]
    return {hw.id: f"${hw.usd_per_hour:,.2f}/h" for hw in sorted(listed, key=lambda h: h.id)}


def capex_usd(hw: HardwareSpec, basis: CostBasis) -> tuple[float, float]:
    """Purchase price of one chip and its share of the server: the basis's override, else the catalog's."""
    chip = basis.capex_usd.get(hw.id, hw.capex_usd)
    server = basis.server_capex_usd.get(hw.id, hw.server_capex_usd)
    if chip is None:
        raise ScenarioError(
            f"cost.capex_usd.{hw.id}: {hw.id} has no purchase price in the catalog; set one "
            f"(0 < price <= 10000000 USD) to cost it in 'own' mode, or use cost.mode=rent"
        )
    return float(chip), float(server or 0.0)


def capital_usd_per_chip_hour(hw: HardwareSpec, basis: CostBasis) -> float:
    """Chip plus server share, straight-line over the amortisation years, per hour of life."""
    chip, server = capex_usd(hw, basis)
    return (chip + server) / (basis.amortisation_years * HOURS_PER_YEAR)


def hosting_usd_per_chip_hour(hw: HardwareSpec, basis: CostBasis) -> float:
    """Colocation of the chip's provisioned IT power (TDP x server power factor), per hour."""
    kw = hw.tdp_w * basis.server_power_factor / 1e3
    return kw * basis.hosting_usd_per_kw_month * MONTHS_PER_YEAR / HOURS_PER_YEAR


def energy_usd(joules: float, basis: CostBasis) -> float:
    """The electricity bill of chip energy drawn, with the site's overhead (PUE)."""
    return joules / J_PER_KWH * basis.pue * basis.usd_per_kwh


def porting_usd(chip: str, level: str | None, basis: CostBasis) -> float:
    """One-off porting cost of `chip` under the scenario's stack: the basis' engineer-months for the
    chip, else its maturity level's default (none when the pool states no level), times the price."""
    default = LEVELS[level].engineer_months if level is not None else 0.0
    return basis.porting_engineer_months.get(chip, default) * basis.usd_per_engineer_month


def porting_usd_per_hour(chip: str, level: str | None, basis: CostBasis) -> float:
    """The porting cost amortised straight-line over the basis' years, per hour of the deployment."""
    return porting_usd(chip, level, basis) / (basis.amortisation_years * HOURS_PER_YEAR)


def chip_hour_usd(hw: HardwareSpec, basis: CostBasis, power_w: float | None = None) -> float:
    """One chip-hour under the basis: its rent, or capital + hosting + energy at `power_w`.

    `power_w` defaults to the chip's idle power, so an owned chip-hour priced before a run is a
    lower bound of what the run will bill (the planner ranks and prunes with it).
    """
    if basis.mode == "rent":
        return hw.usd_per_hour
    watts = hw.idle_w if power_w is None else power_w
    return (
        capital_usd_per_chip_hour(hw, basis)
        + hosting_usd_per_chip_hour(hw, basis)
        + energy_usd(watts * 3600.0, basis)
    )


__all__ = [
    "KINDS",
    "CostBasis",
    "CostMode",
    "capex_usd",
    "capital_usd_per_chip_hour",
    "chip_hour_usd",
    "energy_usd",
    "hosting_usd_per_chip_hour",
    "porting_usd",
    "porting_usd_per_hour",
]
