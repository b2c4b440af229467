"""Is a chip's software ready? A deployment's porting costs, and the ASIC test's software question.

The seeds warn that a chip can be fast while its software stack is hard to use. A pool states the
maturity of its chip's stack (`Pool.maturity`, `engine.costmodel.maturity`): its profile is
derated and its band widened for it (`engine.calibration.software`), and a one-off porting effort
(engineer-months at a price each, `CostBasis`) falls due. `porting(resolved)` lists that effort
per chip, amortised as ownership amortises it (`engine.costmodel.ownership.porting_usd_per_hour`).

`software_answer` is the specialisation test's fourth question (`engine.explain.asic`):
is the phase's software ready? Ready where every chip of the phase runs a measured stack (stated,
or fitted under the scenario's stack); for a vendor stack or a new port, ready only while its
amortised porting costs less than `PORTING_SHARE` of what the phase's chips cost per hour (a
specialised chip built to save 10-30% of the bill (the decode-ASIC preset: 27%) cannot carry a
port that costs more than a tenth of it); not rated where no chip states a level and a chip's
numbers come by rule (illustrative, transferred): the answer then says how to state it.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.calibration.software import level_of
from engine.catalog.entries import Catalog
from engine.costmodel import maturity, ownership
from engine.explain.confidence import stack_name
from engine.scenario.model import Scenario
from engine.scenario.resolve import Resolved, ResolvedPool, resolve
from engine.serving.breakdowns import porting_usd_per_hour
from engine.serving.run import SimResult

PORTING_SHARE = 0.10
"""Amortised porting over the phase chips' hourly bill below which an immature stack counts as ready
(assumption: a tenth of the 10-30% a specialised chip is built to save)."""


@dataclass(frozen=True)
class Porting:
    """The one-off porting of one chip's stack in a deployment, and what ownership amortises of it."""

    hardware: str
    stack: str
    level: str | None
    engineer_months: float
    usd: float
    usd_per_hour: float
    years: float

    def line(self) -> str:
        """'decode-asic under vLLM, a new port: 24 engineer-months, $600,000, $13.70/h over 5 years'."""
        lv = maturity.LEVELS[self.level].text if self.level is not None else "maturity not stated"
        return (
            f"{self.hardware} under {stack_name(self.stack)}, {lv}: {self.engineer_months:g} engineer-months, "
            f"${self.usd:,.0f} one-off, ${self.usd_per_hour:,.2f}/h amortised over {self.years:g} years"
        )


def porting(resolved: Resolved) -> list[Porting]:
    """Each chip of the deployment with a porting cost (none unless a pool states a maturity or the
    cost basis states the chip's engineer-months), in pool order."""
    sc = resolved.scenario
    basis, pools = sc.cost, sc.deployment.pools
    out: list[Porting] = []
    for chip in dict.fromkeys(p.hardware for p in pools):
        level = level_of(pools, chip)
        usd = ownership.porting_usd(chip, level, basis)
        if usd > 0:
            months = usd / basis.usd_per_engineer_month if basis.usd_per_engineer_month else 0.0
            per_h = ownership.porting_usd_per_hour(chip, level, basis)
            out.append(
                Porting(chip, sc.deployment.stack, level, months, usd, per_h, basis.amortisation_years)
            )
    return out


def porting_lines(scenario: Scenario, catalog: Catalog | None = None) -> list[str]:
    """One line per chip the scenario ports (`Porting.line`), saying whether its bill carries it
    (owned: amortised beside capital; rented: not billed, the one-off stands apart)."""
    rows = porting(resolve(scenario, catalog))
    note = "" if scenario.cost.mode == "own" else "; not in a rented bill (cost.mode = own bills it)"
    return [f"{r.line()}{note}" for r in rows]


@dataclass(frozen=True)
class SoftwareAnswer:
    """The specialisation test's software question for one phase."""

    ready: bool | None
    """True: ready; False: not ready; None: not rated (no level stated, numbers by rule)."""
    maturity: str
    porting_usd: float
    porting_share: float | None
    """Amortised porting over the phase's chips' hourly bill (None when nothing is ported)."""
    text: str


def _bill_per_hour(result: SimResult, resolved: Resolved, pools: list[ResolvedPool]) -> float:
    """What `pools` cost per hour of the run, without their porting (an owned bill carries it)."""
    cost = result.summary["cost"]
    hours = max(float(result.summary["drain_end_s"]), 1e-9) / 3600.0
    by_pool = cost.get("usd_by_pool") or {resolved.pools[0].spec.name: cost["usd_total"]}
    ported = porting_usd_per_hour(resolved) if cost["mode"] == "own" else {}
    return sum(by_pool.get(p.spec.name, 0.0) / hours - ported.get(p.index, 0.0) for p in pools)


def software_answer(result: SimResult, resolved: Resolved, phase: str) -> SoftwareAnswer:
    """Is the software of the chips that run `phase` (its own pools, or the colocated ones) ready?"""
    sc = resolved.scenario
    mine = [p for p in resolved.pools if p.spec.role in (phase, "mixed")]
    stated = [p.spec.maturity for p in mine if p.spec.maturity is not None]
    worst = max(stated, key=maturity.MATURITIES.index) if stated else None
    chips = list(dict.fromkeys(p.spec.hardware for p in mine))
    ports = {r.hardware: r for r in porting(resolved) if r.hardware in chips}
    usd = float(sum(r.usd for r in ports.values()))
    bill_h = _bill_per_hour(result, resolved, mine)
    per_h = sum(r.usd_per_hour for r in ports.values())
    share = per_h / bill_h if ports and bill_h > 0 else None
    stack = stack_name(sc.deployment.stack)
    if worst in ("vendor", "port"):
        ready = share is None or share < PORTING_SHARE
        cost = f"{share:.0%} of its chips' bill" if share is not None else "no porting cost stated"
        text = (
            f"software {'ready' if ready else 'not ready'} ({', '.join(chips)} under {stack}: "
            f"{maturity.LEVELS[worst].text}, porting ${usd:,.0f} amortised, {cost}; under "
            f"{PORTING_SHARE:.0%} needed)"
        )
        return SoftwareAnswer(ready, worst, usd, share, text)
    unrated = [p for p in mine if p.spec.maturity is None and not p.calibration.fitted]
    if not unrated:  # each chip's stack as its fit measured it: vLLM on a 910B is vLLM-Ascend (a review)
        said = ", ".join(
            dict.fromkeys(f"{p.spec.hardware}: a measured {p.calibration.under} stack" for p in mine)
        )
        return SoftwareAnswer(True, "measured", usd, share, f"software ready ({said})")
    p = unrated[0]
    text = (
        f"software not rated ({p.spec.hardware}'s numbers come by rule under {p.calibration.under}: "
        # the setting by its name where it is set (the Strategy page's), its path for a file or --set:
        # a config path alone read as prose (a review)
        f"{p.calibration.rule.split(';')[0]}; state its software maturity: pool {p.spec.name}'s on the "
        f"Strategy page, deployment.pools[{p.index}].maturity in a file)"
    )
    return SoftwareAnswer(None, "not rated", usd, share, text)


__all__ = ["PORTING_SHARE", "Porting", "SoftwareAnswer", "porting", "porting_lines", "software_answer"]
