"""Specialisation risk over time: what each portfolio costs per period as the served model changes.

For each period of a `Lifetime` (engine.planning.lifetime_spec) the base scenario is changed to
that period's model and workload, its load is drawn over the sizing window, and each pool of each
portfolio is re-sized from the same step model the planner uses (`engine.planning.sizing`:
prefill seconds per request, the decode batch that fits KV memory and meets the TPOT target): a
chip's fit to the new model, whether its weights fit at all, at which tensor-parallel degree, how
many instances the load needs. No simulation runs; the counts are the planner's lower bounds.

- A flexible pool (GPUs) is re-bought or re-rented every period at the cheapest degree that
  serves, and billed per chip-hour under the lifetime's cost basis (rent, or ownership at TDP).
- A dedicated pool (an ASIC) is bought once, sized for the first period, and owned: its capital
  accrues straight-line over the amortisation years whether it serves or not, plus hosting and
  energy (TDP while serving, idle power while idle). In a later period it serves what its fleet
  can: the model must be in one of its designed precisions and fit in its chips at some degree;
  the decode it cannot serve goes to the fallback chip, bought per period. A fleet that serves
  nothing in a period is written off (its remaining book value charged in that period, then gone)
  or kept idle, as the lifetime's ``stranded`` says.

Cost per million tokens is a period's bill over its output tokens (rate x mean output x seconds);
the lifetime's total is the sum of the periods' bills over the sum of their tokens. The
assumptions, in words: docs/lifetime.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from engine.catalog.entries import Catalog, shared_catalog
from engine.catalog.specs import HardwareSpec
from engine.core.errors import ScenarioError
from engine.costmodel import ownership
from engine.costmodel.ownership import CostBasis
from engine.planning.candidates import SearchSpace, instance_kinds, planning_scenario
from engine.planning.lifetime_spec import MAX_SIZING_REQUESTS, Lifetime, Period, PoolChoice, Portfolio
from engine.planning.sizing import Demand, InstanceRates, Kind, demand, instance_of, instance_rates
from engine.scenario import codec as scenario_io
from engine.scenario.model import Scenario
from engine.scenario.resolve import scenario_catalog
from engine.serving.workload import generate

HOURS_PER_MONTH = ownership.HOURS_PER_YEAR / 12.0
"""Hours of one month of round-the-clock service (730)."""


@dataclass(frozen=True)
class Sized:
    """A pool in one period: its instance kind (chip and layout), instances, per-instance rate, or why it cannot serve.

    `rate` is requests/s for prefill, decode tokens/s for decode.
    """

    hardware: str
    kind: Kind | None = None
    instances: int = 0
    rate: float = 0.0
    problem: str = ""

    @property
    def chips(self) -> int:
        """Chips the pool holds."""
        return self.kind.chips * self.instances if self.kind is not None else 0

    def layout(self) -> str:
        """The layout alone: ``tp2``, ``tp1 dp8 ep8``."""
        return self.kind.layout() if self.kind is not None else "-"

    def label(self) -> str:
        """``h100-sxm tp2 x3`` (or ``-`` when the pool holds nothing)."""
        return f"{self.kind.label()} x{self.instances}" if self.kind is not None and self.instances else "-"


@dataclass(frozen=True)
class PeriodLoad:
    """One period as every portfolio sizes it: its scenario, its demand and its output tokens/s."""

    period: Period
    start_month: float
    scenario: Scenario
    demand: Demand
    rates: dict[Kind, InstanceRates] = field(default_factory=dict, compare=False, repr=False)
    """Each instance kind's rates once sized (portfolios share their prefill and fallback chips)."""

    @property
    def decode_tokens_per_s(self) -> float:
        """Output tokens/s the load asks."""
        return self.demand.rate_rps * self.demand.mean_output_tokens

    def tokens(self) -> float:
        """Output tokens the period delivers."""
        return self.decode_tokens_per_s * self.period.months * HOURS_PER_MONTH * 3600.0


@dataclass(frozen=True)
class LifetimeResult:
    """Per portfolio and period: the pools' sizes, the bill by part, tokens and cost per million tokens.

    `periods` has one row per (portfolio, period); `totals` one row per portfolio, whose bill is
    the sum of its periods' (`total_usd`) over the sum of their tokens.
    """

    lifetime: Lifetime
    periods: pd.DataFrame
    totals: pd.DataFrame

    def to_json(self) -> dict[str, Any]:
        """Plain data for the CLI."""
        return {
            "lifetime": self.lifetime.name,
            "base": self.lifetime.base,
            "months": self.lifetime.months,
            "stranded": self.lifetime.stranded,
            "cost_basis": self.lifetime.cost.label(),
            "periods": self.periods.to_dict(orient="records"),
            "totals": self.totals.to_dict(orient="records"),
            "summary": summary_line(self),
            "notes": precision_notes(self) + assumed_price_notes(self),
        }


# --- sizing ----------------------------------------------------------------------------------


def period_loads(lt: Lifetime, catalog: Catalog | None = None) -> list[PeriodLoad]:
    """Each period's scenario (the base changed to its model and settings) and its drawn demand."""
    base = scenario_io.load_preset(lt.base)
    out, start, drawn = [], 0.0, 0.0
    for i, p in enumerate(lt.periods):
        over = {"model": p.model.model_dump(exclude_none=True), **p.set}
        try:
            scen = scenario_io.apply_overrides(base, over, merge=False)
            scen = planning_scenario(scen, scen.workload.arrival.rate_rps, lt.sizing_window_s)
            scenario_catalog(scen, catalog).model(p.model.id)
        except ScenarioError as exc:
            raise ScenarioError(f"periods[{i}] ({p.name}): {exc}") from None
        drawn += scen.workload.arrival.rate_rps * scen.duration_s  # with any multi-turn sessions' lead
        if drawn > MAX_SIZING_REQUESTS:
            raise ScenarioError(
                f"sizing_window_s: {lt.sizing_window_s:g} s of every period's load draws over "
                f"{MAX_SIZING_REQUESTS:,} requests in all; shorten it (10 to 3600 s) or lower the rates"
            )
        out.append(PeriodLoad(p, start, scen, demand(scen, generate(scen))))
        start += p.months
    return out


def kinds(choice: PoolChoice, load: PeriodLoad, cat: Catalog) -> list[Kind]:
    """The instance kinds a pool may use for the period's model: its tp degrees, and for a MoE model
    its expert-parallel groups laid out as the planner lays them (`engine.planning.candidates`)."""
    space = SearchSpace(tp=choice.tp, pp=(1,), ep=choice.ep)
    return instance_kinds(space, [choice.hardware], cat.models[load.period.model.id])


def _rates(load: PeriodLoad, cat: Catalog, k: Kind) -> InstanceRates:
    """One instance kind's rates for a period (sized once), or its problem when the layout is impossible."""
    if k not in load.rates:
        try:
            load.rates[k] = instance_rates(instance_of(load.scenario, cat, *k), load.demand)
        except ScenarioError as exc:
            why = str(exc)
            load.rates[k] = InstanceRates(
                k.hardware, k.tp, k.chips, math.inf, 0, prefill_problem=why, decode_problem=why
            )
    return load.rates[k]


def precision_problem(hw: HardwareSpec, load: PeriodLoad) -> str:
    """Why a dedicated chip cannot run the period's weights: not one of its designed precisions."""
    weights = load.period.model.weights
    if weights in hw.tflops:
        return ""
    return f"designed for {', '.join(sorted(hw.tflops))} weights, not {weights}"


def _phase_rate(r: InstanceRates, phase: str) -> tuple[float, str]:
    """An instance's rate for a phase (req/s for prefill, tokens/s for decode) and its problem."""
    if phase == "prefill":
        rate, problem = 1.0 / r.prefill_s_per_request, r.prefill_problem
    else:
        rate, problem = r.decode_tokens_per_s, r.decode_problem
    return (0.0, problem or "serves nothing") if problem or rate <= 0 else (rate, "")


def size_pool(load: PeriodLoad, cat: Catalog, choice: PoolChoice, phase: str, need: float) -> Sized:
    """The layout among the choice's that serves `need` (req/s or tokens/s) with the fewest chips.

    A chip's price does not depend on the layout, so the fewest chips is also the cheapest; at
    equal chips the first layout (smaller tp first). None serves: the last layout's problem is said.
    """
    best, problem = None, ""
    for k in kinds(choice, load, cat):
        rate, problem = _phase_rate(_rates(load, cat, k), phase)
        if problem:
            continue
        n = max(1, math.ceil(need / rate - 1e-9))
        if best is None or n * k.chips < best.chips:
            best = Sized(choice.hardware, k, n, rate)
    return best if best is not None else Sized(choice.hardware, problem=problem)


def fleet_serves(load: PeriodLoad, cat: Catalog, choice: PoolChoice, fleet: int, need: float) -> Sized:
    """What a fixed fleet of `fleet` dedicated chips serves of `need` decode tokens/s at its best layout.

    Instances run at their full rate up to what the load needs; the layout serving the most (at
    equal service, the fewest chips) wins. Cannot serve (precision, weights not fitting the fleet in
    any layout): no instance, and the reason.
    """
    hw = cat.hardware[choice.hardware]
    if why := precision_problem(hw, load):
        return Sized(hw.id, problem=why)
    best, best_key, inside, beyond = None, (0.0, 0), "", ""
    for k in kinds(choice, load, cat):
        if k.chips > fleet:  # a layout the fleet cannot fill
            beyond = beyond or f"needs {k.layout()} or more, over the {fleet} chips owned"
            continue
        rate, why = _phase_rate(_rates(load, cat, k), "decode")
        if why:
            inside = why
            continue
        n = min(fleet // k.chips, max(1, math.ceil(need / rate - 1e-9)))
        key = (min(need, n * rate), -n * k.chips)
        if best is None or key > best_key:
            best, best_key = Sized(hw.id, k, n, rate), key
    problem = "; ".join(x for x in (inside, beyond) if x)
    return best if best is not None else Sized(hw.id, problem=problem)


# --- the bill --------------------------------------------------------------------------------


def _flex_usd_per_chip_hour(hw: HardwareSpec, basis: CostBasis) -> float:
    """A flexible chip-hour: its rent, or owned at TDP (a pool sized to its load runs near full)."""
    return ownership.chip_hour_usd(hw, basis, None if basis.mode == "rent" else hw.tdp_w)


def _depreciation(capex: float, basis: CostBasis, start: float, months: float) -> float:
    """Straight-line depreciation of `capex` over [start, start + months), ending at the amortisation's end."""
    life = basis.amortisation_years * 12.0
    return capex * (min(start + months, life) - min(start, life)) / life


def book_value(capex: float, basis: CostBasis, month: float) -> float:
    """What is left to write off of `capex` bought at month 0, at `month`."""
    return capex * max(0.0, 1.0 - month / (basis.amortisation_years * 12.0))


@dataclass
class Fleet:
    """A dedicated fleet through the life: its chips, its purchase price, and whether it is gone."""

    hw: HardwareSpec
    chips: int
    capex_usd: float
    gone: bool = False


def _buy_fleet(pf: Portfolio, j: int, first: PeriodLoad, cat: Catalog, basis: CostBasis) -> Fleet:
    """The dedicated fleet: the chips asked, else what the first period's decode needs."""
    hw = cat.hardware[pf.decode.hardware]
    chips = pf.decode.chips
    if chips is None:
        why = precision_problem(hw, first)
        sized = (
            Sized(hw.id, problem=why)
            if why
            else size_pool(first, cat, pf.decode, "decode", first.decode_tokens_per_s)
        )
        if sized.problem:
            raise ScenarioError(
                f"portfolios[{j}].decode: {hw.id} cannot serve the first period ({sized.problem}); a dedicated "
                "chip is sized for the first period's model, or set chips"
            )
        chips = sized.chips
    try:
        chip, server = ownership.capex_usd(hw, basis)
    except ScenarioError as exc:
        raise ScenarioError(f"portfolios[{j}].decode: {exc}") from None
    return Fleet(hw, chips, chips * (chip + server))


NO_FLEET: dict[str, Any] = {
    "dedicated": "",
    "dedicated_label": "-",
    "dedicated_chips_owned": 0,
    "dedicated_chips_used": 0,
    "dedicated_capital_usd": 0.0,
    "dedicated_running_usd": 0.0,
    "written_off_usd": 0.0,
}
"""A period's dedicated-fleet columns when there is none (or it is gone)."""


def _dedicated(fleet: Fleet, load: PeriodLoad, pf: Portfolio, cat: Catalog, lt: Lifetime) -> dict[str, Any]:
    """A period of a dedicated fleet: what it serves, its bill, and its write-off when stranded."""
    basis, p, hours = lt.cost, load.period, load.period.months * HOURS_PER_MONTH
    out: dict[str, Any] = {**NO_FLEET, "served_tokens_per_s": 0.0}
    if fleet.gone:
        return out | {"dedicated": "written off earlier", "dedicated_label": "-"}
    sized = fleet_serves(load, cat, pf.decode, fleet.chips, load.decode_tokens_per_s)
    if not sized.instances and lt.stranded == "write-off":
        fleet.gone = True
        written = book_value(fleet.capex_usd, basis, load.start_month)
        return out | {
            "dedicated": f"written off: {sized.problem}",
            "dedicated_label": "-",
            "written_off_usd": written,
        }
    used, hw = sized.chips, fleet.hw
    running_per_h = ownership.hosting_usd_per_chip_hour(hw, basis) * fleet.chips + ownership.energy_usd(
        (used * hw.tdp_w + (fleet.chips - used) * hw.idle_w) * 3600.0, basis
    )
    served = min(load.decode_tokens_per_s, sized.instances * sized.rate)
    if not sized.instances:
        status = f"kept idle: {sized.problem}"
    elif served < load.decode_tokens_per_s * (1 - 1e-9):
        status = f"serves {served / load.decode_tokens_per_s:.0%} at {sized.layout()}"
    else:
        status = f"serves all at {sized.layout()}"
    return out | {
        "dedicated": status,
        "dedicated_label": sized.label(),
        "dedicated_chips_owned": fleet.chips,
        "dedicated_chips_used": used,
        "dedicated_capital_usd": _depreciation(fleet.capex_usd, basis, load.start_month, p.months),
        "dedicated_running_usd": running_per_h * hours,
        "served_tokens_per_s": served,
    }


def _period_row(
    pf: Portfolio, j: int, load: PeriodLoad, cat: Catalog, lt: Lifetime, fleet: Fleet | None
) -> dict[str, Any]:
    """One portfolio in one period: pools sized, the bill by part, tokens and $ per million tokens."""
    p, d, hours = load.period, load.demand, load.period.months * HOURS_PER_MONTH
    row: dict[str, Any] = {
        "portfolio": pf.name,
        "period": p.name,
        "start_month": load.start_month,
        "months": p.months,
        "model": p.model.id,
        "weights": p.model.weights,
    }
    prefill = size_pool(load, cat, pf.prefill, "prefill", d.rate_rps)
    need = load.decode_tokens_per_s
    if fleet is not None:
        row |= _dedicated(fleet, load, pf, cat, lt)
        need = max(0.0, need - row.pop("served_tokens_per_s"))
        flex = pf.fallback
    else:
        row |= NO_FLEET
        flex = pf.decode
    decode = size_pool(load, cat, flex, "decode", need) if flex is not None and need > 0 else Sized("-")
    for pool, sized in (("prefill", prefill), ("decode", decode)):
        if sized.problem:
            where = "fallback" if pool == "decode" and fleet is not None else pool
            raise ScenarioError(
                f"portfolios[{j}].{where}: {sized.hardware} cannot serve period {p.name!r} in any layout "
                f"allowed ({sized.problem}); allow larger tp or ep"
            )
    row |= {
        "prefill_label": prefill.label(),
        "decode_label": decode.label(),
        "prefill_chips": prefill.chips,
        "decode_chips": decode.chips,
        "prefill_usd": prefill.chips
        * hours
        * _flex_usd_per_chip_hour(cat.hardware[prefill.hardware], lt.cost),
        "decode_usd": decode.chips * hours * _flex_usd_per_chip_hour(cat.hardware[decode.hardware], lt.cost)
        if decode.instances
        else 0.0,
    }
    row["total_usd"] = sum(row[k] for k in PARTS)
    row["output_tokens"] = load.tokens()
    row["usd_per_million_tokens"] = row["total_usd"] / (row["output_tokens"] / 1e6)
    return row


PARTS = ("prefill_usd", "decode_usd", "dedicated_capital_usd", "dedicated_running_usd", "written_off_usd")
"""The parts of a period's bill; they add up to its `total_usd`."""


def run_lifetime(lt: Lifetime, catalog: Catalog | None = None) -> LifetimeResult:
    """Every portfolio through every period of the lifetime: the bill per period and in total."""
    loads = period_loads(lt, catalog)
    cat = scenario_catalog(loads[0].scenario, catalog)
    for j, pf in enumerate(lt.portfolios):
        for pool, choice in (("prefill", pf.prefill), ("decode", pf.decode), ("fallback", pf.fallback)):
            if choice is not None and choice.hardware not in cat.hardware:
                raise ScenarioError(f"portfolios[{j}].{pool}.hardware: unknown chip {choice.hardware!r}")
    rows = []
    for j, pf in enumerate(lt.portfolios):
        fleet = _buy_fleet(pf, j, loads[0], cat, lt.cost) if pf.dedicated else None
        for load in loads:
            rows.append(_period_row(pf, j, load, cat, lt, fleet))
        if fleet is not None:
            rows[-1]["book_value_end_usd"] = (
                0.0 if fleet.gone else book_value(fleet.capex_usd, lt.cost, lt.months)
            )
    periods = pd.DataFrame(rows)
    if "book_value_end_usd" not in periods:
        periods["book_value_end_usd"] = math.nan
    return LifetimeResult(lt, periods.drop(columns="book_value_end_usd"), _totals(periods))


def _totals(periods: pd.DataFrame) -> pd.DataFrame:
    """One row per portfolio: the sum of its periods' bills and tokens, and the write-off."""
    g = periods.groupby("portfolio", sort=False)
    out = g[[*PARTS, "total_usd", "output_tokens"]].sum()
    out["usd_per_million_tokens"] = out["total_usd"] / (out["output_tokens"] / 1e6)
    out["book_value_end_usd"] = g["book_value_end_usd"].last().fillna(0.0)
    return out.reset_index()


def kept_idle_at_end(res: LifetimeResult, portfolio: str) -> bool:
    """Whether a portfolio's dedicated chips serve nothing in the life's last period (kept idle)."""
    last = res.periods.loc[res.periods["portfolio"] == portfolio, "dedicated"]
    return bool(len(last)) and str(last.iloc[-1]).startswith("kept idle")


SIZING_NOTE = (
    "Each period's pools are sized by the cost model, not simulated: the counts are lower bounds that "
    "leave out queueing at the target percentile, optimistic alike for every portfolio; `fengong plan` "
    "(the Planner) confirms one period's deployment with the simulator (docs/lifetime.md)."
)
"""What a lifetime's counts are, said beside its figures (a review ran a period's GPU deployment and
found it failing its SLO, with nothing in the output to say the counts were not simulated)."""


def assumed_price_notes(res: LifetimeResult, catalog: Catalog | None = None) -> list[str]:
    """The chips of the life billed at prices the catalog assumes (`ownership.assumed_prices`): the
    flexible ones on the life's basis, a dedicated one owned whatever the basis. A decode ASIC's assumed
    $15,000 and $10,000 server share set its depreciation, its $60,000 write-off and the headline, and
    nothing said they were assumed (a capacity planner's review)."""
    cat = catalog or shared_catalog()
    basis = res.lifetime.cost
    choices = [
        c for pf in res.lifetime.portfolios for c in (pf.prefill, pf.decode, pf.fallback) if c is not None
    ]
    flexible = [cat.hardware[c.hardware] for c in choices if not c.dedicated and c.hardware in cat.hardware]
    dedicated = [cat.hardware[c.hardware] for c in choices if c.dedicated and c.hardware in cat.hardware]
    out = []
    if said := ownership.assumed_prices(flexible, basis):
        out.append(
            f"assumed prices, not published ones ({'owned' if basis.mode == 'own' else 'rented'}): "
            + ", ".join(f"{chip} {price}" for chip, price in said.items())
        )
    if said := ownership.assumed_prices(dedicated, basis.model_copy(update={"mode": "own"})):
        out.append(
            "assumed purchase prices of the dedicated chips (owned whatever the basis), which set their "
            "depreciation and any write-off: " + ", ".join(f"{chip} {price}" for chip, price in said.items())
        )
    return out


def precision_notes(res: LifetimeResult, catalog: Catalog | None = None) -> list[str]:
    """Each period whose weights a flexible (not dedicated) chip of the life has no units for: it runs
    them through its next wider path (docs/cost-model.md), where a dedicated chip serves only the
    precisions it was designed for (`precision_problem`). The H100 served DeepSeek-V3's FP4 weights
    unsaid beside a decode ASIC written off for the same weights (an infrastructure engineer's review)."""
    cat = catalog or shared_catalog()
    flexible = dict.fromkeys(
        c.hardware
        for pf in res.lifetime.portfolios
        for c in (pf.prefill, pf.decode, pf.fallback)
        if c is not None and not c.dedicated
    )
    out = []
    for period in res.lifetime.periods:
        w = period.model.weights
        short = [h for h in flexible if h in cat.hardware and w not in cat.hardware[h].tflops]
        if short:
            out.append(
                f"{period.name}: {', '.join(short)} {'has' if len(short) == 1 else 'have'} no {w} units, so "
                f"{period.model.id}'s {w} weights run through the next wider path there (docs/cost-model.md); "
                "a dedicated chip serves only the precisions it was designed for (docs/lifetime.md)"
            )
    return out


def summary_line(res: LifetimeResult) -> str:
    """The lifetime in one sentence: each portfolio's $/M tokens over the life, any write-off, and the
    book value its dedicated chips still hold at the end (reported, not billed)."""
    parts = []
    for _, t in res.totals.iterrows():
        text = f"{t['portfolio']} ${t['usd_per_million_tokens']:.3f} per million output tokens"
        if t["written_off_usd"] > 0:
            when = res.periods[
                (res.periods["portfolio"] == t["portfolio"]) & (res.periods["written_off_usd"] > 0)
            ]
            text += (
                f" (${t['written_off_usd']:,.0f} of capital written off at month "
                f"{when['start_month'].iloc[0]:g}, {when['period'].iloc[0]})"
            )
        if t["book_value_end_usd"] > 0:  # stranded or not, capital the bill above does not hold
            text += (
                f" (${t['book_value_end_usd']:,.0f} of book value left at month {res.lifetime.months:g}, "
                f"not billed; its chips {'kept idle' if kept_idle_at_end(res, t['portfolio']) else 'still serving'})"
            )
        parts.append(text)
    return f"Over {res.lifetime.months:g} months: " + "; ".join(parts) + "."


def headline_line(res: LifetimeResult) -> str:
    """Which portfolio is the cheaper over the whole life, and by how much: per million output
    tokens (and in percent) and in dollars over the life, against each other portfolio."""
    t = res.totals.sort_values("usd_per_million_tokens", kind="stable")
    best = t.iloc[0]
    head = f"Over {res.lifetime.months:g} months"
    if len(t) < 2:
        return f"{head} {best['portfolio']} costs ${best['usd_per_million_tokens']:.3f} per million output tokens."
    others = []
    for _, o in t.iloc[1:].iterrows():
        less = 1.0 - best["usd_per_million_tokens"] / o["usd_per_million_tokens"]
        book = float(best.get("book_value_end_usd", 0.0) or 0.0)
        owed = (
            f", with ${book:,.0f} of {best['portfolio']}'s capital still on the books" if book > 0.5 else ""
        )
        others.append(
            f"{o['portfolio']}'s ${o['usd_per_million_tokens']:.3f} ({less:.1%} less, "
            f"${o['total_usd'] - best['total_usd']:,.0f} less in all{owed})"
        )
    return (
        f"{head} {best['portfolio']} is the cheaper: ${best['usd_per_million_tokens']:.3f} per million output "
        "tokens against " + "; ".join(others) + "."
    )
