"""The planner: the cheapest deployment that meets every class's SLO at a target load.

A *shape* is a deployment without its instance counts: colocated (one mixed pool of instances
of one kind) or disaggregated (a prefill pool of one kind and a decode pool of another). An
instance kind is a chip and a layout (`instance_kinds`): tensor parallelism alone, a pipeline of
pp stages of tp >= 4 chips, and for MoE models expert parallelism over tp x dp chips with
data-parallel attention (``tp1 dp8 ep8``). The cost model's sizing of each instance kind
(`engine.planning.sizing`) gives a lower bound on the counts, hence on the cost, of every
deployment of a shape. Shapes are pruned without simulation when their weights do not fit, when
one decode step at batch 1 already misses a TPOT target, when a class's percentile prompt alone
misses its TTFT target, when more than the SLO's tail of requests could never fit in KV memory,
or when the lower bound exceeds the budget. The rest are visited cheapest bound first (branch and bound): the simulator
confirms each one, searching counts upward from the bound (colocated: galloping, then
bisection; disaggregated: cheapest pair first, growing the pool the failure points at), and
once a deployment passes, every shape whose bound is not below its cost is bounded out. The
search assumes more instances never hurt (a docs/definitions.md invariant); it is exact under that
assumption, within the simulation budget, for the seed and the planning window.

With `SearchSpace.portfolio`, a workload of two or more classes is then offered portfolios
(`engine.planning.portfolio`): the best disaggregated prefill pool, and a decode pool of its own
kind per class, the class pinned to it; they are searched the same way, below the best cost.

Every candidate and run says how sure its numbers are: whether its chips have a profile fitted
under the scenario's serving stack (`engine.calibration.trust`), and the error to expect
(`trust_columns`); an uncalibrated chip is planned with a conservative profile, never a flattering one.

What "passes" means is a rule (`run_passes`): ``percentile`` (the default, MLPerf's): every class
has its TTFT and TPOT within target at its SLO percentile; ``attainment`` (DistServe's): at least a
share X (default 0.9) of all requests meet their own class's SLO. Under the attainment rule the
cost model prunes and bounds with a relaxed demand (`rule_demand`), never stricter than the rule.

The highest rate a given deployment sustains is `engine.planning.capacity`'s question.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from engine.calibration.trust import Calibration
from engine.catalog.entries import Catalog, unknown_text
from engine.catalog.model_spec import ModelSpec
from engine.core.errors import ScenarioError
from engine.core.numbers import json_plain
from engine.costmodel.stacks import STACK_NAMES, runs_only_on
from engine.planning.calibrations import chip_calibrations, slowdowns, speedups
from engine.planning.candidates import (
    PP_MIN_TP,
    SearchSpace,
    instance_kinds,
    planning_scenario,
    session_lead_s,
    shapes,
    split_label,
)
from engine.planning.frontier import mark_frontiers
from engine.planning.objective import Objective, check_objective
from engine.planning.pick_tie import better_held
from engine.planning.plan_notes import (
    Cut,
    budget_note,
    cut,
    kv_room_notes,
    method_notes,
    no_build_note,
    over_budget_note,
    power_note,
    run_notes,
    spare_notes,
)
from engine.planning.portfolio import (
    Portfolio,
    PortfolioBound,
)
from engine.planning.portfolio_search import search_portfolios
from engine.planning.ran import Ran
from engine.planning.rules import DEFAULT_ATTAINMENT, Rule, check_rule, rule_demand, rule_text
from engine.planning.search import Progress, Search, decode_columns
from engine.planning.sizing import (
    Bound,
    Demand,
    Kind,
    Shape,
    demand,
    instance_of,
    instance_rates,
    lower_bound,
)
from engine.planning.verdict import Verdict, decide, group_of
from engine.scenario import codec as scenario_io
from engine.scenario.model import Scenario
from engine.scenario.naming import named
from engine.scenario.resolve import scenario_catalog

# --- the plan --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """The planner's answer: the cheapest passing deployment, every candidate, the frontiers.

    `candidates`: one row per shape with its lower bound and what became of it (``pruned: ...``,
    ``bounded`` by a cheaper passing deployment, ``simulated``, ``unexplored`` once the budget ran
    out). `runs`: one row per simulation over the planning window (`SearchSpace.duration_s`; index =
    run number): counts, cost, whether every class passed, goodput, output tokens/s per chip,
    tokens/s per user (1 / mean TPOT); `verdict` quotes the choice's full-length run, whose figures
    differ from its row's. The frontiers are the Pareto-optimal runs: `frontier_cost` cost/hour
    against goodput over every run; `frontier_throughput` goodput tokens/s per chip (the output of
    requests that met their SLO) against tokens/s/user over the runs that pass (all runs if none
    does). `chosen` marks the cheapest passing run.
    """

    target_rps: float
    duration_s: float
    """The planning window each run measures."""
    best: Scenario | None
    """The chosen deployment's scenario, named for what it runs ("llama-3.1-70b on 5 b200 prefill + ...,
    edited from <the planned scenario's name>"), its description saying whose it is and without the
    planned scenario's lesson (a notebook user read the preset's "twelve H100s" lesson on a B200 plan: a
    review); `scenario_of(best_run)` is the same run under the planned scenario's name."""
    best_run: int | None
    candidates: pd.DataFrame
    runs: pd.DataFrame
    frontier_cost: pd.DataFrame
    frontier_throughput: pd.DataFrame
    scenarios: tuple[Scenario, ...]
    pruned: int
    bounded: int
    simulated: int
    feasible: int
    exhaustive: bool
    """Whether the search ran every shape it meant to within its simulation budget."""
    notes: tuple[str, ...] = ()
    """What the search left out or could not do: said as warnings."""
    method: tuple[str, ...] = ()
    """How the runs were made (a session lead, a site power cap as the power budget): said as information."""
    calibration: tuple[Calibration, ...] = ()
    """The calibration of each chip the search could use, under the scenario's serving stack."""
    rule: Rule = "percentile"
    """What passing meant (`run_passes`), with `attainment` the share the attainment rule asked for."""
    attainment: float = DEFAULT_ATTAINMENT
    slowdown: dict[str, float] = field(default_factory=dict)
    """Empty for a plan as modelled; for a plan with `slowed` chips, how much longer each chip's
    iterations ran (its band's pessimistic edge, `slowdowns`)."""
    objective: Objective = "usd_per_hour"
    """What the choice minimises (`engine.planning.objective`)."""
    risk_aware: bool = False
    """True when the choice had to pass with every chip at its band's pessimistic edge too."""
    verdict: Verdict | None = None
    """Each chip's best deployment, verified at full length, and the choice (`engine.planning.verdict`)."""
    session_lead_s: float = 0.0
    """How much earlier than its window each planning run starts, unmeasured, for its multi-turn
    sessions to ramp up to the target rate (`candidates.planning_scenario`); 0.0 without sessions."""
    settled: bool = True
    """Whether no shape the budget left unsearched or cut short could be better than the choice, its
    cost-model bound being no better (`plan_notes.Cut`): true where `exhaustive`, and where the budget
    stopped the search past every shape that could have won."""
    unsearched_from: float = math.inf
    """The best cost-model bound (in the objective) among the shapes the budget left; inf: none."""
    ran: Ran | None = field(default=None, repr=False, compare=False)
    """What its searches simulated, for the margin's slowed search to reuse (`engine.planning.ran`)."""

    @property
    def speedup(self) -> dict[str, float]:
        """For a plan with `slowed` chips: each chip's band's optimistic edge (`speedups`), for the
        margin's rerun with faster chips; empty for a plan as modelled."""
        return speedups(self.calibration) if self.slowdown else {}

    @property
    def best_usd_per_hour(self) -> float | None:
        """Cost per hour of the chosen deployment."""
        return None if self.best_run is None else float(self.runs["usd_per_hour"].iloc[self.best_run])

    def scenario_of(self, run: int) -> Scenario:
        """The full scenario of one simulated run: the user's window, the target load."""
        return self.scenarios[run]

    def to_json(self) -> dict[str, Any]:
        """The plan as plain data (what ``python -m engine plan --json`` prints)."""
        best = None
        if self.best is not None and self.best_run is not None:
            best = {
                **self.runs.iloc[self.best_run].to_dict(),
                "deployment": scenario_io.to_data(self.best)["deployment"],
            }
            pins = {c.name: list(c.pools) for c in self.best.workload.classes if c.pools}
            if pins:  # a portfolio pins each class to its decode pool (workload.classes[i].pools)
                best["class_pools"] = pins
        counts = {"shapes": len(self.candidates), "pruned": self.pruned, "bounded": self.bounded}
        counts |= {"simulated": self.simulated, "feasible": self.feasible}
        doc = {
            "target_rps": self.target_rps,
            "duration_s": self.duration_s,
            "session_lead_s": self.session_lead_s,
            "rule": self.rule,
            "attainment": self.attainment,
            "passes_when": rule_text(self.rule, self.attainment),
            "best": best,
            "counts": counts,
            "exhaustive": self.exhaustive,
            "settled": self.settled,
            "unsearched_from": self.unsearched_from if math.isfinite(self.unsearched_from) else None,
            "notes": list(self.notes),
            "method": list(self.method),
            "calibration": {c.hardware: c.as_dict() for c in self.calibration},
            **({"slowdown": dict(self.slowdown)} if self.slowdown else {}),
            "objective": self.objective,
            "risk_aware": self.risk_aware,
            "verdict": None if self.verdict is None else self.verdict.to_json(),
            "frontier_cost": self.frontier_cost.to_dict(orient="records"),
            "frontier_throughput": self.frontier_throughput.to_dict(orient="records"),
            "candidates": self.candidates.to_dict(orient="records"),
            "runs": self.runs.to_dict(orient="records"),
        }
        return json_plain(doc)  # type: ignore[no-any-return]


def _kinds(space: SearchSpace, chips: Sequence[str], model: ModelSpec) -> list[Kind]:
    """The instance kinds to plan with (`instance_kinds`); none is refused in words (an empty grid died in a
    KeyError deep in the plan's tables: a review)."""
    kinds = instance_kinds(space, chips, model)
    if not kinds:
        raise ScenarioError(
            f"space.pp: no instance layout to try: a pipeline degree above 1 pairs only with a tp of {PP_MIN_TP} "
            f"or more (tp {', '.join(map(str, space.tp))}; pp {', '.join(map(str, space.pp))}): add pp 1, or a "
            f"tp of {PP_MIN_TP} or more"
        )
    return kinds


def _chips(scenario: Scenario, space: SearchSpace, cat: Catalog) -> tuple[str, ...]:
    """The chips the plan may use: the space's, else the scenario's (each one the catalog knows)."""
    chips = space.hardware or tuple(dict.fromkeys(p.hardware for p in scenario.deployment.pools))
    unknown = [h for h in chips if h not in cat.hardware]
    if unknown:
        raise ScenarioError(f"space.hardware: {unknown_text('hardware', unknown[0], cat.hardware)}")
    return chips


def _bounds(
    candidates: list[Shape],
    search: Search,
    d: Demand,
    space: SearchSpace,
    barred: dict[str, str],
    stack: str,
    budget: float,
    notes: list[str],
) -> list[Bound]:
    """Each shape's lower bound, pruned where its stack cannot run a chip or it is over the budget
    (or the power budget: what that left out is added to `notes`, with the figure)."""
    out = []
    for shape in candidates:
        b = lower_bound(shape, search.rates, d, space.max_instances_per_pool)
        if not b.pruned and (hit := {shape.prefill.hardware, shape.decode.hardware} & set(barred)):
            b = replace(b, pruned=f"{STACK_NAMES.get(stack, stack)} runs on {barred[min(hit)]}")
        if not b.pruned and b.usd_per_hour > budget:
            b = replace(b, pruned=f"over budget (at least ${b.usd_per_hour:,.2f}/h)")
        if not b.pruned and (kw := search.kw(shape, b.counts)) > search.power_budget_kw:
            b = replace(b, pruned=f"over the power budget (at least {kw:,.1f} kW at TDP)")
        out.append(b)
    notes += power_note(search, out, space.power_budget_kw) + over_budget_note(out, budget)
    return out


def _trace_frontier(search: Search, best: dict[str, Any], space: SearchSpace) -> None:
    """The winner with more decode (or mixed) instances, one at a time: the frontier beyond it,
    within the budgets (priced, then as run: more instances only bill more)."""
    won, (n_p, n_d) = next(k for k, v in search.index.items() if v == best["run"])
    for extra in range(1, space.frontier_extra + 1):
        more = (n_p + extra, 0) if won.mode == "colocated" else (n_p, n_d + extra)
        if max(more) > space.max_instances_per_pool or not search.affordable(won, more):
            break
        row = search.run(won, more)
        if row is None or row["over_budget"]:
            break


def plan(
    scenario: Scenario,
    target_rps: float,
    space: SearchSpace | None = None,
    *,
    catalog: Catalog | None = None,
    progress: Progress | None = None,
    check_work: bool = True,
    rule: Rule = "percentile",
    attainment: float = DEFAULT_ATTAINMENT,
    slowed: bool = False,
    executor: Executor | None = None,
    objective: Objective = "usd_per_hour",
    risk_aware: bool = True,
    verify: bool = True,
    prior: Ran | None = None,
) -> Plan:
    """The cheapest deployment whose simulated run passes at `target_rps` (by `objective`).

    Passing follows `rule` (`run_passes`): ``percentile``, every class's TTFT and TPOT within
    target at its SLO percentile; ``attainment``, at least `attainment` of the requests within their
    SLO. `check_work=False` lifts the work bounds on each run (engine.serving.work_bound) and on the
    whole plan (`plan_work`). `slowed` runs every chip as much slower than modelled as its throughput
    band's pessimistic edge says (`slowdowns`): the cheapest deployment that passes even so, the
    margin for the model's error (docs/planner.md, "Margin"; the bounds stay the modelled chips',
    lower, so still bounds). `executor` runs the simulations there (`engine.planning.runner`).
    `objective`: what "cheapest" minimises; `risk_aware`: the choice passes at the bands' edge too;
    `verify`: each chip's pick rerun at full length (`engine.planning.objective`, `.verdict`).
    `prior`: what an earlier plan on the same scenario ran (`Plan.ran`; the margin passes its plan's).
    """
    space, cat = _checked(scenario, space, catalog, rule, attainment, objective, slowed and risk_aware)
    chips = _chips(scenario, space, cat)
    full = planning_scenario(scenario, target_rps, None)
    search = Search(
        planning_scenario(scenario, target_rps, space.duration_s),
        full, {}, space, cat, progress, check_work, rule, attainment, executor,
    )  # fmt: skip
    search.lead_s = session_lead_s(scenario, space.duration_s)
    search.full_lead_s = session_lead_s(scenario, None)
    search.calibrations = chip_calibrations(search.base, cat, chips)
    if slowed:
        search.slowdown = slowdowns(search.calibrations.values())
    search.reuse(prior)  # an earlier plan's runs (the margin's: its plan's), where they are this search's
    d = search.demand = rule_demand(demand(search.base, search.reqs), rule, attainment)
    kinds = _kinds(space, chips, cat.models[scenario.model.id])
    search.rates.update(
        {k: instance_rates(instance_of(search.base, cat, *k), d, search.base.cost) for k in kinds}
    )
    notes = search.aim(objective)
    budget = space.budget_usd_per_hour if space.budget_usd_per_hour is not None else math.inf
    stack = scenario.deployment.stack
    barred = {h: only for h in chips if (only := runs_only_on(stack, cat.hardware[h]))}
    all_bounds = _bounds(shapes(space, kinds), search, d, space, barred, stack, budget, notes)
    status: dict[Shape | Portfolio, str] = {b.shape: f"pruned: {b.pruned}" for b in all_bounds if b.pruned}
    # cheapest bound first; at a tie the simpler layouts (fewer of pp, dp, ep above 1), then by name
    live = sorted((b for b in all_bounds if not b.pruned), key=search.order)
    cap = budget * (1 + 1e-9)
    search.budget = cap
    found: dict[Shape | Portfolio, int] = {}
    groups = _branch_and_bound(search, live, status, found)
    best = min(groups.values(), key=search.value, default=None)
    if best is not None:
        _trace_frontier(search, best, space)
    portfolios: list[PortfolioBound] = []
    if space.portfolio:
        portfolios, best, said = search_portfolios(
            search, d, kinds, set(barred), live, cap, status, found, best
        )
        if best is not None and isinstance(pf := _shape_of(search, best), Portfolio):
            groups[group_of(pf)] = best
        notes += said
    verdict, best, left = _decided(search, groups, best, (live, status, found), notes, risk_aware, verify)
    notes += budget_note(search, budget) + _scenario_notes(scenario, space)
    out = _assemble(target_rps, space, all_bounds, status, found, search, best, portfolios, notes, verify)
    out = replace(out, settled=left.settled, unsearched_from=left.least)
    return replace(out, objective=objective, risk_aware=risk_aware, verdict=verdict, ran=search.ran())


def _decided(
    search: Search,
    groups: dict[str, dict[str, Any]],
    best: dict[str, Any] | None,
    bounds: tuple[Sequence[Bound], dict[Shape | Portfolio, str], dict[Shape | Portfolio, int]],
    notes: list[str],
    risk_aware: bool,
    verify: bool,
) -> tuple[Verdict | None, dict[str, Any] | None, Cut]:
    """The verdict where one is asked for (`decide`), the choice's run (else the nominal `best`), and
    what the simulation budget left of the search (`cut`); their notes added to `notes`."""
    verdict = None
    if verify or risk_aware:
        verdict = decide(search, groups, *bounds, risk_aware=risk_aware, verify=verify)
        best = search.rows[verdict.chosen_run] if verdict.chosen_run is not None else None
        notes += verdict.notes
    search.runner.close()  # hints never asked for
    left = cut(search, groups, best)
    notes += left.notes(search) + kv_room_notes(search, best) + spare_notes(search, best)
    return verdict, best, left


def _scenario_notes(scenario: Scenario, space: SearchSpace) -> list[str]:
    """What a plan leaves out of the scenario (faults, autoscaling) and the chips searched its stack cannot run."""
    chips = space.hardware or [p.hardware for p in scenario.deployment.pools]
    return faults_left_out(scenario) + scaling_left_out(scenario) + no_build_note(scenario, chips)


def faults_left_out(scenario: Scenario) -> list[str]:
    """The note that a scenario's faults are left out of every planning run (`planning_scenario`):
    said, not silent (a plan of portfolio-decode-loss is the healthy portfolio's)."""
    n = len(scenario.faults)
    if not n:
        return []
    return [
        f"the scenario's {n} fault{'s are' if n > 1 else ' is'} left out: a plan is for the healthy fleet "
        "(fengong drill runs the faults on the chosen deployment)"
    ]


def scaling_left_out(scenario: Scenario) -> list[str]:
    """The note that a scenario's autoscaled pools are planned as fixed fleets: a plan of day-autoscaled
    answered a fixed fleet's $/h with no word of the autoscaler it dropped (a review)."""
    scaled = [p.name for p in scenario.deployment.pools if p.autoscale is not None]
    if not scaled:
        return []
    return [
        f"pool{'s' if len(scaled) > 1 else ''} {', '.join(scaled)} autoscale{'' if len(scaled) > 1 else 's'} in the "
        "scenario; a plan sizes fixed pools for the target rate, so its bill is a fixed fleet's all run "
        "(the scenario's own run gives the autoscaled bill)"
    ]


def _checked(
    scenario: Scenario,
    space: SearchSpace | None,
    catalog: Catalog | None,
    rule: Rule,
    attainment: float,
    objective: str,
    slowed_risk: bool,
) -> tuple[SearchSpace, Catalog]:
    """The plan's inputs checked: its space (the default one if none) and catalog. A site power cap
    is the plan's power budget (the lower of the two): no candidate tried is slowed or refused by it."""
    check_rule(rule, attainment)
    check_objective(objective)
    if slowed_risk:
        raise ScenarioError(
            "risk_aware: a plan with slowed chips is already at the bands' edge; pass risk_aware=False"
        )
    if space is not None and not isinstance(space, SearchSpace):  # ('x' died in an AttributeError: a review)
        raise ScenarioError(
            f"space: a SearchSpace (engine.SearchSpace(...)) or None, not a {type(space).__name__}"
        )
    cat = scenario_catalog(scenario, catalog)
    if scenario.model.id not in cat.models:
        raise ScenarioError(f"model.id: unknown model {scenario.model.id!r}")
    space = space or SearchSpace()
    if (site := scenario.deployment.power_cap_kw) is not None:
        space = replace(space, power_budget_kw=min(site, space.power_budget_kw or site))
    return space, cat


def _shape_of(search: Search, row: dict[str, Any]) -> Shape | Portfolio:
    """The shape (or portfolio) of a run row."""
    return next(k for k, i in search.index.items() if i == int(row["run"]))[0]


def _branch_and_bound(
    search: Search,
    live: Sequence[Bound],
    status: dict[Shape | Portfolio, str],
    found: dict[Shape | Portfolio, int],
) -> dict[str, dict[str, Any]]:
    """Each shape, cheapest bound first, searched for its cheapest passing counts unless its
    group (`group_of`: a chip, or a pairing of two) already has a passing deployment no dearer
    than its bound: the best run of each group, by the objective (`Search.cost`, `Search.value`).

    Bounding per group rather than by the overall best keeps every chip's best deployment, so
    the verdict can set the chips side by side; the overall best is the cheapest of them."""
    space, cap = search.space, search.budget
    groups: dict[str, dict[str, Any]] = {}
    searched_modes: set[str] = set()
    for i, b in enumerate(live):
        g = group_of(b.shape)
        best_cost = search.value(groups[g]) if g in groups else math.inf
        bound = search.cost(b.shape, b.counts)
        # finalists are searched to a passing point even above the best, for the frontier
        finalist = (i < space.finalists or b.shape.mode not in searched_modes) and b.usd_per_hour < cap
        if search.out_of_budget:
            status[b.shape], search.cut[b.shape] = "unexplored", bound
        elif (bound >= best_cost or b.usd_per_hour >= cap) and not finalist:
            status[b.shape] = "bounded"
        else:
            search.ahead_shapes(live, i, best_cost)  # a cluster's runner starts them early; no effect here
            row = search.search(b, math.inf if finalist else best_cost)
            status[b.shape] = "simulated"
            if search.out_of_budget:  # its counts' search cut short: a cheaper passing count may be left
                search.cut[b.shape] = bound
            searched_modes.add(b.shape.mode)
            if row is not None:
                found[b.shape] = int(row["run"])
                if g not in groups or better_held(search, row, groups[g]):
                    groups[g] = row
    return groups


def _candidates(
    all_bounds: list[Bound],
    portfolios: Sequence[PortfolioBound],
    status: dict[Shape | Portfolio, str],
    found: dict[Shape | Portfolio, int],
    search: Search,
) -> pd.DataFrame:
    """Every shape and portfolio the search bounded: its lower bound, status and best run."""
    return pd.DataFrame(
        [
            {
                "mode": b.shape.mode,
                "shape": b.shape.label(),
                "prefill_hardware": b.shape.prefill.hardware,
                "prefill_tp": b.shape.prefill.tp,
                "prefill_layout": b.shape.prefill.layout(),
                "decode_hardware": b.shape.decode.hardware,
                "decode_tp": b.shape.decode.tp,
                "decode_layout": b.shape.decode.layout(),
                "lower_bound_split": split_label(b.shape, b.counts) if not b.pruned else None,
                "lower_bound_usd_per_hour": b.usd_per_hour,
                "lower_bound_objective": math.nan if b.pruned else search.cost(b.shape, b.counts),
                "status": status.get(b.shape, "unexplored"),
                "best_run": found.get(b.shape, -1),
                **search.trust(b.shape),
            }
            for b in all_bounds
        ]
        + [
            {
                "mode": b.portfolio.mode,
                "shape": b.portfolio.label(),
                "prefill_hardware": b.portfolio.prefill.hardware,
                "prefill_tp": b.portfolio.prefill.tp,
                "prefill_layout": b.portfolio.prefill.layout(),
                **{k: v for k, v in decode_columns(b.portfolio, b.counts).items() if k != "decode_instances"},
                "lower_bound_split": b.portfolio.split(b.counts),
                "lower_bound_usd_per_hour": b.usd_per_hour,
                "status": status.get(b.portfolio, "unexplored"),
                "best_run": found.get(b.portfolio, -1),
                **search.trust(b.portfolio),
            }
            for b in portfolios
        ]
    )


def _assemble(
    target_rps: float,
    space: SearchSpace,
    all_bounds: list[Bound],
    status: dict[Shape | Portfolio, str],
    found: dict[Shape | Portfolio, int],
    search: Search,
    best: dict[str, Any] | None,
    portfolios: Sequence[PortfolioBound] = (),
    notes_in: Sequence[str] = (),
    verify: bool = True,
) -> Plan:
    cand = _candidates(all_bounds, portfolios, status, found, search)
    runs = pd.DataFrame(search.rows)
    # None or req/s: NaN where none, in every plan (a column all None read None, one with a figure NaN)
    for col in ("shortfall_rps", "grows_rps", "tpot_grows_rps", "ttft_grows_rps"):
        if col in runs:
            runs[col] = runs[col].astype(float)
    best_run = int(best["run"]) if best else None
    by_status: dict[str, list[str]] = {}  # shapes pruned for one reason named together
    for shape, how in zip(cand["shape"], cand["status"], strict=True):
        by_status.setdefault(str(how), []).append(str(shape))
    reasons = [f"{', '.join(shapes)}: {how}" for how, shapes in by_status.items()]
    notes = [*notes_in, *run_notes(search, runs, best is not None, target_rps, reasons)]
    lead = search.lead_s
    runs, frontier_cost, frontier_tput = mark_frontiers(runs, search.objective, best_run)
    statuses = list(status.values())
    return Plan(
        target_rps=target_rps,
        duration_s=search.base.duration_s - lead,
        session_lead_s=lead,
        # named for what it runs, not the scenario it was planned from (`Plan.best`'s docstring)
        best=named(search.scenarios[best_run], search.base, search.base.name)
        if best_run is not None
        else None,
        best_run=best_run,
        candidates=cand,
        runs=runs,
        frontier_cost=frontier_cost,
        frontier_throughput=frontier_tput,
        scenarios=tuple(search.scenarios),
        pruned=sum(s.startswith("pruned") for s in statuses),
        bounded=statuses.count("bounded"),
        simulated=len(search.rows),
        feasible=int(runs["passes"].sum()) if len(runs) else 0,
        exhaustive=not search.out_of_budget,
        notes=tuple(notes),
        method=tuple(method_notes(search, space.power_budget_kw, target_rps, verify)),
        calibration=tuple(search.calibrations.values()),
        rule=search.rule,
        attainment=search.attainment,
        slowdown=dict(search.slowdown),
    )
