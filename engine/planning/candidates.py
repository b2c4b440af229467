"""What the planner searches over, and the deployments it builds from it.

`SearchSpace` is the user's bounds (chips, layouts, modes, counts, budget, simulations). An instance
kind is a chip and a layout (`instance_kinds`); a *shape* is a deployment without its instance
counts (`shapes`); `with_deployment` and `with_portfolio` turn a shape or a portfolio and its
counts into a scenario to simulate, on the planning window (`planning_scenario`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.catalog.model_spec import ModelSpec
from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.core.no_bool import real_number
from engine.planning.portfolio import (
    Portfolio,
    pool_entry,
    portfolio_overrides,
)
from engine.planning.sizing import (
    Kind,
    Mode,
    Shape,
)
from engine.scenario import codec as scenario_io
from engine.scenario.arrival import Arrival
from engine.scenario.model import Scenario
from engine.scenario.resolve import scenario_catalog
from engine.serving.work_load import session_ramp
from engine.serving.workload import rate_factor

MAX_POWER_BUDGET_KW = 1_000_000.0
MIN_PLANNING_WINDOW_S = 10.0
"""The shortest planning window a plan, a capacity search or a lifetime's sizing takes: a queue that
builds over seconds passes a shorter one (chat-colocated's capacity read 40.6 req/s over 1 s, 17.5 over
600 s, where `plan` already refused under 10 s: a review)."""
"""The largest power budget a plan takes, kW (a gigawatt: the scenario's `power_cap_kw` bound)."""
PP_MIN_TP = 4
"""The smallest tensor-parallel group a planned pipeline stage has: below it, a larger tp does better."""


def _listed(values: tuple[int, ...]) -> str:
    """'0, 3' for a refusal's 'got' (it read '(0,)', a Python tuple: a review)."""
    return ", ".join(map(str, values)) or "none"


@dataclass(frozen=True, kw_only=True)
class SearchSpace:
    """What the planner may choose from, and how hard it may look.

    `hardware`: catalog ids allowed in any pool (empty: the chips the scenario already uses).
    `tp`: tensor-parallel degrees. `pp`: pipeline stages, a degree above 1 paired with each tp of
    at least `PP_MIN_TP` (a pipeline spans nodes once tensor parallelism fills one). `ep` (MoE
    models only): expert-parallel groups of this many chips per stage, each laid out as tp in
    `ep_tp` chips per attention rank and dp = ep / tp data-parallel ranks, the experts spread over
    every chip (DeepSeek's layout); a group larger than the model's expert count is skipped.
    `mixed_hardware`: a disaggregated deployment may put prefill and decode on different chips.
    `duration_s`: the planning runs' arrival window (shorter than the scenario's keeps it fast).
    `finalists`: shapes searched to a passing deployment even when a cheaper one is known, so the
    Pareto frontier has points beyond the winner; `frontier_extra`: extra runs of the winner with
    more decode (or mixed) instances, tracing throughput against interactivity.
    `power_budget_kw`: the most the deployment's chips may draw, every one at its TDP (what a site
    provisions for them); a candidate over it is not tried (docs/planner.md, "Power budget").
    `portfolio`: for a workload of two or more classes, also try portfolios after the search: the
    best disaggregated prefill pool, and a decode pool of its own chip per class
    (`engine.planning.portfolio`); off by default.
    """

    hardware: tuple[str, ...] = ()
    modes: tuple[Mode, ...] = ("colocated", "disaggregated")
    tp: tuple[int, ...] = (1, 2, 4, 8)
    pp: tuple[int, ...] = (1, 2)
    ep: tuple[int, ...] = (8, 16)
    ep_tp: tuple[int, ...] = (1, 2)
    mixed_hardware: bool = True
    max_instances_per_pool: int = 64
    budget_usd_per_hour: float | None = None
    power_budget_kw: float | None = None
    duration_s: float | None = 120.0
    max_simulations: int = 120
    max_simulations_per_shape: int = 12
    finalists: int = 3
    frontier_extra: int = 2
    portfolio: bool = False

    def __post_init__(self) -> None:
        for name in ("hardware", "modes", "tp", "pp", "ep", "ep_tp"):
            value = getattr(self, name)
            # a bare 'h200' would be searched as 'h', '2', '0', '0'
            if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)):
                raise ScenarioError(f"space.{name}: a tuple of values, e.g. ({value!r},) (got {value!r})")
        if not self.modes or any(m not in ("colocated", "disaggregated") for m in self.modes):
            raise ScenarioError(
                f"space.modes: choose from colocated, disaggregated (got {', '.join(map(str, self.modes))})"
            )
        if not self.tp or any(t < 1 or t > bounds.MAX_TP for t in self.tp):
            raise ScenarioError(f"space.tp: each must be in [1, {bounds.MAX_TP}] (got {_listed(self.tp)})")
        if not self.pp or any(p < 1 or p > bounds.MAX_PP for p in self.pp):
            raise ScenarioError(f"space.pp: each must be in [1, {bounds.MAX_PP}] (got {_listed(self.pp)})")
        if any(e < 2 or e > bounds.MAX_TP for e in self.ep):
            raise ScenarioError(f"space.ep: each must be in [2, {bounds.MAX_TP}] (got {_listed(self.ep)})")
        if not self.ep_tp or any(t < 1 or t > bounds.MAX_TP for t in self.ep_tp):
            raise ScenarioError(
                f"space.ep_tp: each must be in [1, {bounds.MAX_TP}] (got {_listed(self.ep_tp)})"
            )
        if not 1 <= self.max_instances_per_pool <= bounds.MAX_INSTANCES // 2:
            raise ScenarioError(
                f"space.max_instances_per_pool: must be in [1, {bounds.MAX_INSTANCES // 2}] "
                f"(got {self.max_instances_per_pool})"
            )
        budget = self.budget_usd_per_hour
        if budget is not None and not 0 < budget <= bounds.MAX_BUDGET_USD_PER_HOUR:  # inf is not "no budget"
            raise ScenarioError(
                f"space.budget_usd_per_hour: must be in (0, {bounds.MAX_BUDGET_USD_PER_HOUR:,.0f}] (got {budget:,g})"
            )
        power = self.power_budget_kw
        if power is not None and not 0 < power <= MAX_POWER_BUDGET_KW:
            raise ScenarioError(
                f"space.power_budget_kw: must be in (0, {MAX_POWER_BUDGET_KW:g}] (got {power})"
            )
        if (
            self.duration_s is not None
            and not MIN_PLANNING_WINDOW_S <= self.duration_s <= bounds.MAX_DURATION_S
        ):
            raise ScenarioError(
                f"space.duration_s: must be in [{MIN_PLANNING_WINDOW_S:g}, {bounds.MAX_DURATION_S:g}] "
                f"(got {self.duration_s})"
            )
        if not 1 <= self.max_simulations <= 2000:
            raise ScenarioError(f"space.max_simulations: must be in [1, 2000] (got {self.max_simulations})")
        if not 1 <= self.max_simulations_per_shape <= 200:
            raise ScenarioError(
                f"space.max_simulations_per_shape: must be in [1, 200] (got {self.max_simulations_per_shape})"
            )
        if not 0 <= self.finalists <= 50:  # (one message named both fields whichever was off: a review)
            raise ScenarioError(f"space.finalists: must be in [0, 50] (got {self.finalists})")
        if not 0 <= self.frontier_extra <= 10:
            raise ScenarioError(f"space.frontier_extra: must be in [0, 10] (got {self.frontier_extra})")


def hardware_choice(scenario: Scenario, text: str) -> tuple[str, ...]:
    """Chips a plan may use, from a comma list of catalog ids or "all" (every non-illustrative chip).

    An empty text means the chips the scenario already uses (`SearchSpace.hardware` empty).
    """
    if text.strip() == "all":
        return tuple(sorted(h.id for h in scenario_catalog(scenario).hardware.values() if not h.illustrative))
    return tuple(h.strip() for h in text.split(",") if h.strip())


def planning_scenario(
    scenario: Scenario, target_rps: float, duration_s: float | None, *, keep_faults: bool = False
) -> Scenario:
    """The scenario at the target load over the planning window (`duration_s`; None: the scenario's
    own), faults left out (a plan is for the healthy fleet) unless `keep_faults` (a capacity search:
    the scenario's deployment as written, its faults at their times in the window).

    Multi-turn sessions start from none at t = 0 and take a while to send the asked rate
    (`session_ramp`): a run of them starts that ramp early, its warm-up lengthened to cover it, so
    that the window it measures is at the steady load the plan is for.
    """
    if not real_number(target_rps):  # '20' fails to compare
        raise ScenarioError(
            f"target_rps: a number, in (0, {bounds.MAX_RATE_RPS:g}] req/s (got {target_rps!r})"
        )
    if not 0 < target_rps <= bounds.MAX_RATE_RPS:
        raise ScenarioError(f"target_rps: must be in (0, {bounds.MAX_RATE_RPS:g}] (got {target_rps})")
    wl = scenario.workload
    if wl.trace is not None or wl.arrival.kind not in ("poisson", "gamma"):
        got = "a trace" if wl.trace is not None else wl.arrival.kind
        # a trace's own load is its arrivals: how far it scales is a sweep of its time scale (a review)
        how = (
            "; to size for a trace, sweep its pace: `fengong sweep SCENARIO --vary "
            "workload.trace.time_scale=1,2,4` replays it 1, 2 and 4 times as fast"
            if wl.trace is not None
            else ""
        )
        raise ScenarioError(
            f"workload.arrival.kind: planning needs an open-loop load, poisson or gamma (got {got}){how}"
        )
    if duration_s is not None and (
        not real_number(duration_s) or not MIN_PLANNING_WINDOW_S <= duration_s <= bounds.MAX_DURATION_S
    ):
        # checked as given: -5 was refused as its warm-up's -3.75, 1e9 cut to a day unsaid (a review)
        raise ScenarioError(
            f"duration_s: the planning window must be from {MIN_PLANNING_WINDOW_S:g} to "
            f"{bounds.MAX_DURATION_S:,.0f} s (got {duration_s!r})"
        )
    window = scenario.duration_s if duration_s is None else float(duration_s)
    warmup = planning_warmup_s(scenario.warmup_s, duration_s)
    early = session_lead_s(scenario, duration_s)
    over: dict[str, Any] = {"workload.arrival.rate_rps": float(target_rps), "faults": []}
    if keep_faults:  # those the window meets (`unmet_faults` says the others); a session lead moves them
        over["faults"] = [
            f.model_dump() | {"at_s": min(f.at_s + early, bounds.MAX_DURATION_S)}
            for f in scenario.faults
            if f.at_s < window
        ]
    if duration_s is not None or early > 0:
        over["duration_s"] = min(window + early, bounds.MAX_DURATION_S)
        over["warmup_s"] = warmup + early
    if early > 0 and wl.arrival.shape != "flat":
        over |= _shape_after(wl.arrival, window, early)
    try:
        return scenario_io.apply_overrides(scenario, over, merge=False)
    except ScenarioError as err:  # a duration the user never set: say where it comes from
        if early > 0 and str(err).startswith("workload.arrival.rate_rps:"):
            raise ScenarioError(
                f"{err} (the duration is the {window:g} s planning window and the {early:g} s before it that its "
                'multi-turn sessions take to ramp up, docs/planner.md, "Sessions")'
            ) from None
        raise


_SHAPE_POINTS = 513
"""Points a built-in rate shape is drawn with when a session lead moves it (`_shape_after`)."""


def _shape_after(arrival: Arrival, window: float, early: float) -> dict[str, Any]:
    """Overrides that keep a rate shape on the window once a session lead of `early` seconds comes
    before it: explicit points, the lead at the window's first rate, the shape as it was after it
    (a built-in one is spread over the duration, which the lead lengthens; explicit points are
    times, which it moves)."""
    if arrival.shape == "points":
        times = np.array([p.at_s for p in arrival.points])
    else:
        times = np.linspace(0.0, window, _SHAPE_POINTS)
    factors = rate_factor(arrival, window, times)
    start = float(rate_factor(arrival, window, np.zeros(1))[0])
    moved = [
        {"at_s": float(t + early), "factor": float(f)}
        for t, f in zip(times, factors, strict=True)
        if t + early <= bounds.MAX_DURATION_S
    ]
    return {
        "workload.arrival.shape": "points",
        "workload.arrival.peak_hour": None,
        "workload.arrival.points": [{"at_s": 0.0, "factor": start}, *moved],
    }


def on_window(scenario: Scenario, run: Scenario, target_rps: float, duration_s: float | None) -> Scenario:
    """`run` (a deployment planned from `scenario`, on its full-length window) on the planning
    window a search of `scenario` used: the same duration, warm-up and arrivals. Planning `run`
    itself again would not give it: its warm-up already holds a session lead."""
    base = planning_scenario(scenario, target_rps, duration_s)
    arrival = {"arrival": base.workload.arrival}
    return run.model_copy(
        update={
            "duration_s": base.duration_s,
            "warmup_s": base.warmup_s,
            "workload": run.workload.model_copy(update=arrival),
        }
    )


def planning_warmup_s(warmup_s: float, duration_s: float | None) -> float:
    """The warm-up a planning run keeps of a scenario's `warmup_s`: all of it over the scenario's own
    window (`duration_s` None), at most a quarter of a planning window."""
    return warmup_s if duration_s is None else min(warmup_s, float(duration_s) / 4)


def session_lead_s(scenario: Scenario, duration_s: float | None) -> float:
    """How much earlier than its window a planning run of `scenario` starts (`planning_scenario`):
    the multi-turn sessions' ramp less the warm-up the run has anyway; 0.0 without sessions."""
    return max(0.0, session_ramp(scenario).seconds - planning_warmup_s(scenario.warmup_s, duration_s))


def window_text(run: Scenario, lead_s: float) -> str:
    """A planning run's window as a verdict names it: its length and, for multi-turn sessions, the
    lead before it that covers their ramp (`session_lead_s`: simulated, not measured)."""
    if lead_s <= 0:
        return f"{run.duration_s:g} s"
    return f"{run.duration_s - lead_s:g} s after a {lead_s:g} s lead for the sessions' ramp"


def no_edge_site(scenario: Scenario) -> None:
    """Refuse a scenario with an edge site: a planned deployment replaces its pools, the edge ones too, and
    the site's rule was then refused as if the scenario lacked them ('an edge site needs at least one pool
    with tier edge' for edge-offload, which has one: a review)."""
    if scenario.deployment.edge is not None:
        raise ScenarioError(
            "deployment.edge: the planner sizes a data centre's pools and does not plan an edge site in front of "
            "it; plan the scenario without deployment.edge and its edge pools, or size this one with capacity"
        )


def with_deployment(scenario: Scenario, shape: Shape, counts: tuple[int, int]) -> Scenario:
    """`scenario` with its pools replaced by a shape at given counts (profiles and maturity kept per chip).

    Class pins (`workload.classes[i].pools`) are cleared: they named the pools this replaces.
    """
    no_edge_site(scenario)
    profiles = _profiles(scenario)

    def pool(name: str, kind: Kind, count: int) -> dict[str, Any]:
        return pool_entry(name, name, kind, count, profiles)

    if shape.mode == "colocated":
        pools = [pool("mixed", shape.prefill, counts[0])]
    else:
        pools = [pool("prefill", shape.prefill, counts[0]), pool("decode", shape.decode, counts[1])]
    over: dict[str, Any] = {"deployment.mode": shape.mode, "deployment.pools": pools, "faults": []}
    over |= unpinned(scenario)
    if shape.mode == "colocated":  # elastic roles switch prefill and decode instances: none here
        over["scheduler.elastic.enabled"] = False
    return scenario_io.apply_overrides(scenario, over, merge=False)


def with_portfolio(scenario: Scenario, pf: Portfolio, counts: Sequence[int]) -> Scenario:
    """`scenario` deployed as a portfolio at given counts: a prefill pool, a decode pool per class.

    Each class is pinned to its own decode pool (``decode-<class>``), its other pins cleared.
    """
    no_edge_site(scenario)
    return scenario_io.apply_overrides(
        scenario, portfolio_overrides(pf, counts, _profiles(scenario)), merge=False
    )


def _profiles(scenario: Scenario) -> dict[str, dict[str, str]]:
    """What the scenario's pools pin per chip: its calibration profile (the last pool's that names one)
    and its stack's software maturity (the first pool's that states one, as `software.level_of`)."""
    out: dict[str, dict[str, str]] = {}
    for p in scenario.deployment.pools:
        if p.profile is not None:
            out.setdefault(p.hardware, {})["profile"] = p.profile
        if p.maturity is not None:
            out.setdefault(p.hardware, {}).setdefault("maturity", p.maturity)
    return out


def unpinned(scenario: Scenario) -> dict[str, Any]:
    """Overrides that clear the classes' pool pins: they name pools a planned deployment replaces."""
    return {f"workload.classes[{i}].pools": [] for i, c in enumerate(scenario.workload.classes) if c.pools}


def instance_kinds(space: SearchSpace, chips: Sequence[str], model: ModelSpec) -> list[Kind]:
    """The instance kinds the search space allows on each chip for a model (`SearchSpace`)."""
    out: list[Kind] = []
    for hw in chips:
        for tp in sorted(set(space.tp)):
            out += [Kind(hw, tp, pp) for pp in sorted(set(space.pp)) if pp == 1 or tp >= PP_MIN_TP]
        if model.moe is None:
            continue
        for group in sorted(e for e in set(space.ep) if e <= model.moe.experts):
            out += [Kind(hw, tp, 1, group // tp, group) for tp in sorted(set(space.ep_tp)) if group % tp == 0]
    return list(dict.fromkeys(out))


def shapes(space: SearchSpace, kinds: Sequence[Kind]) -> list[Shape]:
    """Every shape the search space allows over the given instance kinds."""
    out: list[Shape] = []
    if "colocated" in space.modes:
        out += [Shape("colocated", k, k) for k in kinds]
    if "disaggregated" in space.modes:
        pairs = [(p, d) for p in kinds for d in kinds if space.mixed_hardware or p.hardware == d.hardware]
        out += [Shape("disaggregated", p, d) for p, d in pairs]
    return out


def extra_degrees(shape: Shape) -> int:
    """How many parallelism degrees beyond tensor parallelism a shape's pools use."""
    kinds = {shape.prefill, shape.decode}
    return sum((k.pp > 1) + (k.dp > 1) + (k.ep > 1) for k in kinds)


def split_label(shape: Shape | Portfolio, counts: Sequence[int]) -> str:
    """The P:D split of a deployment: ``5P:2D``, ``8 mixed`` for a colocated pool of eight instances (``8M``
    read as eight million: "b200 tp8 1M", a review), ``3P:2D|4D`` for a portfolio."""
    if isinstance(shape, Portfolio):
        return shape.split(counts)
    return f"{counts[0]} mixed" if shape.mode == "colocated" else f"{counts[0]}P:{counts[1]}D"
