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
search assumes more instances never hurt (a DESIGN.md invariant); it is exact under that
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

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from engine.calibration.trust import Calibration
from engine.catalog.entries import Catalog
from engine.catalog.specs import ModelSpec
from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.costmodel.stacks import STACK_NAMES, runs_only_on
from engine.planning.calibrations import chip_calibrations, slowdowns, speedups, trust_columns
from engine.planning.portfolio import (
    MAX_POOLS,
    Portfolio,
    PortfolioBound,
    class_demand,
    decode_choices,
    grow,
    pool_entry,
    portfolio_bounds,
    portfolio_overrides,
)
from engine.planning.sizing import (
    Bound,
    Demand,
    InstanceRates,
    Kind,
    Mode,
    Shape,
    demand,
    instance_of,
    instance_rates,
    lower_bound,
)
from engine.scenario import codec as scenario_io
from engine.scenario.model import Scenario
from engine.scenario.resolve import scenario_catalog
from engine.serving.metrics import measured_mask
from engine.serving.run import SimResult, simulate
from engine.serving.workload import generate

Progress = Callable[[int, int, str], None]
"""A progress callback: (simulations done, simulation budget, what is running)."""

Rule = Literal["percentile", "attainment"]
"""What makes a run pass: every class at its SLO percentile, or a share of requests within their SLO."""
RULES: tuple[Rule, ...] = ("percentile", "attainment")
DEFAULT_ATTAINMENT = 0.9
"""The attainment rule's default share: DistServe's 90% of requests within their SLO."""
PP_MIN_TP = 4
"""The smallest tensor-parallel group a planned pipeline stage has: below it, a larger tp does better."""


# --- pass rules ------------------------------------------------------------------------------


def check_rule(rule: str, attainment: float) -> None:
    """Refuse an unknown rule, or an attainment share outside (0, 1], naming the field."""
    if rule not in RULES:
        raise ScenarioError(f"rule: choose {' or '.join(RULES)} (got {rule!r})")
    if not 0.0 < attainment <= 1.0:
        raise ScenarioError(
            f"attainment: a share of requests in (0, 1], e.g. 0.9 for 90% (got {attainment:g})"
        )


def rule_text(rule: Rule, attainment: float = DEFAULT_ATTAINMENT) -> str:
    """What passing means under a rule, in words."""
    if rule == "attainment":
        return f"at least {attainment:.0%} of requests within their SLO"
    return "every class within its TTFT and TPOT targets at its SLO percentile"


def run_passes(
    summary: dict[str, Any], rule: Rule = "percentile", attainment: float = DEFAULT_ATTAINMENT
) -> bool:
    """Whether one run's summary passes under a rule.

    ``percentile`` (MLPerf's): every class passes (`engine.serving.metrics`: its TTFT and TPOT at
    its SLO percentile within target, rejected and failed requests infinitely late).
    ``attainment`` (DistServe's): the run's `slo_attainment` (requests that met their class's
    SLO, per request, over all requests of the window) is at least `attainment`. Under either
    rule an unsustainable run (`summary["unsustainable"]`: its queue grows through the window,
    `engine.serving.saturation`) never passes: its percentiles are set by the run's length.
    """
    if summary.get("unsustainable"):
        return False
    if rule == "attainment":
        return bool(summary["slo_attainment"] >= attainment - 1e-12)
    return all(c["passes"] for c in summary["classes"].values())


def phase_attainment(res: SimResult) -> tuple[float, float]:
    """Shares of a run's measured requests within their class's TTFT target and within its TPOT target.

    A request that did not complete misses both; one without a TPOT (a one-token answer) meets
    it. The attainment rule blames a pool with them, as the percentile rule does with its verdicts.
    """
    _, ttft_met, tpot_met = _phases_met(res)
    if not len(ttft_met):
        return 0.0, 0.0
    return float(ttft_met.mean()), float(tpot_met.mean())


def _phases_met(res: SimResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per measured request: its class, and whether it met its class's TTFT and its TPOT target
    (one that did not complete misses both; one without a TPOT meets it)."""
    t = res.requests
    t = t[measured_mask(res.scenario, t)]
    classes = res.scenario.workload.classes
    done = (t["outcome"] == "completed").to_numpy()
    ttft_t = t["class"].map({c.name: c.slo.ttft_ms / 1e3 for c in classes}).to_numpy(dtype=float)
    tpot_t = t["class"].map({c.name: c.slo.tpot_ms / 1e3 for c in classes}).to_numpy(dtype=float)
    ttft, tpot = t["ttft_s"].to_numpy(dtype=float), t["tpot_s"].to_numpy(dtype=float)
    return t["class"].to_numpy(), done & (ttft <= ttft_t), done & (np.isnan(tpot) | (tpot <= tpot_t))


def class_verdicts(res: SimResult, rule: Rule, attainment: float) -> tuple[list[bool], list[bool]]:
    """Per class, in class order: whether its TTFT and whether its TPOT held, under a rule.

    ``percentile``: the class's TTFT and TPOT at its SLO percentile within target. ``attainment``:
    at least the share X of the class's own requests within each target (an approximation: the
    rule counts all requests together). A portfolio search blames each class's pools with them.
    """
    s = res.summary
    classes = res.scenario.workload.classes
    if rule == "attainment":
        cls, ttft_met, tpot_met = _phases_met(res)
        ttft_ok, tpot_ok = [], []
        for c in classes:
            mine = cls == c.name
            ttft_ok.append(not mine.any() or float(ttft_met[mine].mean()) >= attainment - 1e-12)
            tpot_ok.append(not mine.any() or float(tpot_met[mine].mean()) >= attainment - 1e-12)
        return ttft_ok, tpot_ok
    per = [(c.slo, s["classes"][c.name]) for c in classes]
    return (
        [
            v["ttft_ms_at_percentile"] is not None and v["ttft_ms_at_percentile"] <= slo.ttft_ms
            for slo, v in per
        ],
        [v["tpot_ms_at_percentile"] is None or v["tpot_ms_at_percentile"] <= slo.tpot_ms for slo, v in per],
    )


def rule_demand(d: Demand, rule: Rule, attainment: float) -> Demand:
    """The demand the cost model prunes and bounds with under a rule.

    ``percentile``: as drawn. ``attainment``: only a share 1 - X of all requests may miss, so a
    class with a share s of the requests may lose (1 - X) / s of its own: its prompts are checked
    at percentile 100 (1 - (1 - X) / s), and not at all when the whole class may miss. A decode
    step may exceed the TPOT targets of up to 1 - X of the requests, so every TPOT target is
    raised to the tightest one that more than 1 - X of the requests hold. The pruning is then
    never stricter than the rule.
    """
    if rule != "attainment" or not len(d.cls):
        return d
    miss = 1.0 - attainment
    n_classes = len(d.ttft_target_s)
    share = np.bincount(d.cls, minlength=n_classes) / len(d.cls)
    pct = tuple(100.0 * attainment if s <= miss else 100.0 * (1.0 - miss / s) for s in share)
    ttft = tuple(math.inf if s <= miss else t for s, t in zip(share, d.ttft_target_s, strict=True))
    targets = np.asarray(d.tpot_target_s, dtype=float)[d.cls]
    levels = np.unique(targets)
    below = np.array([np.mean(targets < t) for t in levels])
    tightest = float(levels[below <= miss + 1e-12].max())
    tpot = tuple(max(t, tightest) for t in d.tpot_target_s)
    return replace(d, percentile=pct, ttft_target_s=ttft, tpot_target_s=tpot)


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
    duration_s: float | None = 120.0
    max_simulations: int = 120
    max_simulations_per_shape: int = 12
    finalists: int = 3
    frontier_extra: int = 2
    portfolio: bool = False

    def __post_init__(self) -> None:
        if not self.modes or any(m not in ("colocated", "disaggregated") for m in self.modes):
            raise ScenarioError(f"space.modes: choose from colocated, disaggregated (got {self.modes})")
        if not self.tp or any(t < 1 or t > bounds.MAX_TP for t in self.tp):
            raise ScenarioError(f"space.tp: each must be in [1, {bounds.MAX_TP}] (got {self.tp})")
        if not self.pp or any(p < 1 or p > bounds.MAX_PP for p in self.pp):
            raise ScenarioError(f"space.pp: each must be in [1, {bounds.MAX_PP}] (got {self.pp})")
        if any(e < 2 or e > bounds.MAX_TP for e in self.ep):
            raise ScenarioError(f"space.ep: each must be in [2, {bounds.MAX_TP}] (got {self.ep})")
        if not self.ep_tp or any(t < 1 or t > bounds.MAX_TP for t in self.ep_tp):
            raise ScenarioError(f"space.ep_tp: each must be in [1, {bounds.MAX_TP}] (got {self.ep_tp})")
        if not 1 <= self.max_instances_per_pool <= bounds.MAX_INSTANCES // 2:
            raise ScenarioError(
                f"space.max_instances_per_pool: must be in [1, {bounds.MAX_INSTANCES // 2}] "
                f"(got {self.max_instances_per_pool})"
            )
        budget = self.budget_usd_per_hour
        if budget is not None and not 0 < budget <= bounds.MAX_BUDGET_USD_PER_HOUR:  # inf is not "no budget"
            raise ScenarioError(
                f"space.budget_usd_per_hour: must be in (0, {bounds.MAX_BUDGET_USD_PER_HOUR:g}] (got {budget})"
            )
        if self.duration_s is not None and not 10.0 <= self.duration_s <= bounds.MAX_DURATION_S:
            raise ScenarioError(
                f"space.duration_s: must be in [10, {bounds.MAX_DURATION_S:g}] (got {self.duration_s})"
            )
        if not 1 <= self.max_simulations <= 2000:
            raise ScenarioError(f"space.max_simulations: must be in [1, 2000] (got {self.max_simulations})")
        if not 1 <= self.max_simulations_per_shape <= 200:
            raise ScenarioError(
                f"space.max_simulations_per_shape: must be in [1, 200] (got {self.max_simulations_per_shape})"
            )
        if not 0 <= self.finalists <= 50 or not 0 <= self.frontier_extra <= 10:
            raise ScenarioError("space.finalists: must be in [0, 50]; space.frontier_extra in [0, 10]")


# --- the plan --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """The planner's answer: the cheapest passing deployment, every candidate, the frontiers.

    `candidates`: one row per shape with its lower bound and what became of it (``pruned: ...``,
    ``bounded`` by a cheaper passing deployment, ``simulated``, ``unexplored`` once the budget ran
    out). `runs`: one row per simulation (index = run number): counts, cost, whether every class
    passed, goodput, output tokens/s per chip, tokens/s per user (1 / mean TPOT). The frontiers
    are the Pareto-optimal runs: `frontier_cost` cost/hour against goodput over every run;
    `frontier_throughput` output tokens/s/chip against tokens/s/user over the runs that pass
    (all runs if none does). `chosen` marks the cheapest passing run.
    """

    target_rps: float
    duration_s: float
    best: Scenario | None
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
    notes: tuple[str, ...] = ()
    calibration: tuple[Calibration, ...] = ()
    """The calibration of each chip the search could use, under the scenario's serving stack."""
    rule: Rule = "percentile"
    """What passing meant (`run_passes`), with `attainment` the share the attainment rule asked for."""
    attainment: float = DEFAULT_ATTAINMENT
    slowdown: dict[str, float] = field(default_factory=dict)
    """Empty for a plan as modelled; for a plan with `slowed` chips, how much longer each chip's
    iterations ran (its band's pessimistic edge, `slowdowns`)."""

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
        return {
            "target_rps": self.target_rps,
            "duration_s": self.duration_s,
            "rule": self.rule,
            "attainment": self.attainment,
            "passes_when": rule_text(self.rule, self.attainment),
            "best": best,
            "counts": counts,
            "exhaustive": self.exhaustive,
            "notes": list(self.notes),
            "calibration": {c.hardware: c.as_dict() for c in self.calibration},
            **({"slowdown": dict(self.slowdown)} if self.slowdown else {}),
            "frontier_cost": self.frontier_cost.to_dict(orient="records"),
            "frontier_throughput": self.frontier_throughput.to_dict(orient="records"),
            "candidates": self.candidates.to_dict(orient="records"),
            "runs": self.runs.to_dict(orient="records"),
        }


def hardware_choice(scenario: Scenario, text: str) -> tuple[str, ...]:
    """Chips a plan may use, from a comma list of catalog ids or "all" (every non-illustrative chip).

    An empty text means the chips the scenario already uses (`SearchSpace.hardware` empty).
    """
    if text.strip() == "all":
        return tuple(sorted(h.id for h in scenario_catalog(scenario).hardware.values() if not h.illustrative))
    return tuple(h.strip() for h in text.split(",") if h.strip())


def planning_scenario(scenario: Scenario, target_rps: float, duration_s: float | None) -> Scenario:
    """The scenario at the target load over the planning window, faults left out."""
    if not 0 < target_rps <= bounds.MAX_RATE_RPS:
        raise ScenarioError(f"target_rps: must be in (0, {bounds.MAX_RATE_RPS:g}] (got {target_rps})")
    wl = scenario.workload
    if wl.trace is not None or wl.arrival.kind not in ("poisson", "gamma"):
        got = "a trace" if wl.trace is not None else wl.arrival.kind
        raise ScenarioError(
            f"workload.arrival.kind: planning needs an open-loop load, poisson or gamma (got {got})"
        )
    over: dict[str, Any] = {"workload.arrival.rate_rps": float(target_rps), "faults": []}
    if duration_s is not None:
        over["duration_s"] = float(duration_s)
        over["warmup_s"] = min(scenario.warmup_s, float(duration_s) / 4)
    return scenario_io.apply_overrides(scenario, over)


def with_deployment(scenario: Scenario, shape: Shape, counts: tuple[int, int]) -> Scenario:
    """`scenario` with its pools replaced by a shape at given counts (profiles kept per chip).

    Class pins (`workload.classes[i].pools`) are cleared: they named the pools this replaces.
    """
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
    return scenario_io.apply_overrides(scenario, over)


def with_portfolio(scenario: Scenario, pf: Portfolio, counts: Sequence[int]) -> Scenario:
    """`scenario` deployed as a portfolio at given counts: a prefill pool, a decode pool per class.

    Each class is pinned to its own decode pool (``decode-<class>``), its other pins cleared.
    """
    return scenario_io.apply_overrides(scenario, portfolio_overrides(pf, counts, _profiles(scenario)))


def _profiles(scenario: Scenario) -> dict[str, str | None]:
    """The calibration profile the scenario's pools pin per chip."""
    return {p.hardware: p.profile for p in scenario.deployment.pools if p.profile is not None}


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


def _extra_degrees(shape: Shape) -> int:
    """How many parallelism degrees beyond tensor parallelism a shape's pools use."""
    kinds = {shape.prefill, shape.decode}
    return sum((k.pp > 1) + (k.dp > 1) + (k.ep > 1) for k in kinds)


def split_label(shape: Shape | Portfolio, counts: Sequence[int]) -> str:
    """The P:D split of a deployment: ``5P:2D``, ``8M`` for a colocated pool, ``3P:2D|4D`` for a portfolio."""
    if isinstance(shape, Portfolio):
        return shape.split(counts)
    return f"{counts[0]}M" if shape.mode == "colocated" else f"{counts[0]}P:{counts[1]}D"


def run_row(
    res: SimResult,
    shape: Shape | Portfolio,
    counts: tuple[int, ...],
    rule: Rule = "percentile",
    attainment: float = DEFAULT_ATTAINMENT,
) -> dict[str, Any]:
    """One planning run as a table row: deployment, cost, SLO verdicts, throughput, interactivity.

    `passes` follows the rule (`run_passes`); `ttft_ok` and `tpot_ok` say which phase fell short
    under it: each class's percentile, or the share of requests within each target.
    """
    s = res.summary
    specs = [(c.slo, s["classes"][c.name]) for c in res.scenario.workload.classes]
    if rule == "attainment":
        ttft_share, tpot_share = phase_attainment(res)
        ttft_ok = ttft_share >= attainment - 1e-12
        tpot_ok = tpot_share >= attainment - 1e-12
    else:
        ttft_ok = all(
            c["ttft_ms_at_percentile"] is not None and c["ttft_ms_at_percentile"] <= slo.ttft_ms
            for slo, c in specs
        )
        tpot_ok = all(
            c["tpot_ms_at_percentile"] is None or c["tpot_ms_at_percentile"] <= slo.tpot_ms
            for slo, c in specs
        )
    chips = sum(p.count * p.chips_per_instance for p in res.scenario.deployment.pools)
    colo = shape.mode == "colocated"
    util = s["utilization"]
    out_tps = s["throughput_tokens_per_s"]["output"]
    tpot_mean = s["latency_ms"]["tpot"]["mean"]
    return {
        "mode": shape.mode,
        "shape": shape.label(),
        "split": split_label(shape, counts),
        "prefill_hardware": None if colo else shape.prefill.hardware,
        "prefill_tp": 0 if colo else shape.prefill.tp,
        "prefill_layout": None if colo else shape.prefill.layout(),
        "prefill_instances": 0 if colo else counts[0],
        **_decode_columns(shape, counts),
        "mixed_hardware": shape.prefill.hardware if colo else None,
        "mixed_tp": shape.prefill.tp if colo else 0,
        "mixed_layout": shape.prefill.layout() if colo else None,
        "mixed_instances": counts[0] if colo else 0,
        "chips": chips,
        "usd_per_hour": s["cost"]["usd_per_hour"],
        "passes": run_passes(s, rule, attainment),
        "shortfall_rps": (s.get("unsustainable") or {}).get("shortfall_rps"),  # None: it keeps up
        "ttft_ok": ttft_ok,
        "tpot_ok": tpot_ok,
        "slo_attainment": s["slo_attainment"],
        "goodput_rps": s["goodput_rps"],
        "output_tokens_per_s": out_tps,
        "output_tokens_per_s_per_chip": out_tps / chips,
        # the output tokens of requests that met their SLO: a run that falls behind still completes
        # what was offered, and only this shows how little of it was worth serving
        "goodput_tokens_per_s_per_chip": (
            out_tps * s["goodput_rps"] / s["throughput_rps"] / chips if s["throughput_rps"] else 0.0
        ),
        "tpot_ms_mean": tpot_mean,
        "tokens_per_s_per_user": 1e3 / tpot_mean if tpot_mean else math.nan,
        "ttft_ms_p90": s["latency_ms"]["ttft"]["p90"],
        "tpot_ms_p90": s["latency_ms"]["tpot"]["p90"],
        "usd_per_million_output_tokens": s["cost"]["usd_per_million_output_tokens"],
        "prefill_busy": util["mixed" if colo else "prefill"]["busy"],
        "decode_kv_memory": (
            max(util[name]["kv_memory"] for name in shape.pool_names())
            if isinstance(shape, Portfolio)
            else util["mixed" if colo else "decode"]["kv_memory"]
        ),
    }


def _decode_columns(shape: Shape | Portfolio, counts: Sequence[int]) -> dict[str, Any]:
    """A run's decode columns; a portfolio's decode pools joined (one column per pool would vary)."""
    if isinstance(shape, Portfolio):
        tps = {k.tp for k in shape.decode}
        return {
            "decode_hardware": ", ".join(dict.fromkeys(k.hardware for k in shape.decode)),
            "decode_tp": tps.pop() if len(tps) == 1 else 0,  # 0: the pools differ
            "decode_layout": " | ".join(
                f"{c}: {k.layout()}" for c, k in zip(shape.classes, shape.decode, strict=True)
            ),
            "decode_instances": sum(counts[1:]),
        }
    colo = shape.mode == "colocated"
    return {
        "decode_hardware": None if colo else shape.decode.hardware,
        "decode_tp": 0 if colo else shape.decode.tp,
        "decode_layout": None if colo else shape.decode.layout(),
        "decode_instances": 0 if colo else counts[1],
    }


class _Search:
    """Mutable state of one planning search: the runs so far and the budget left."""

    def __init__(
        self,
        base: Scenario,
        full: Scenario,
        rates: dict[Kind, InstanceRates],
        space: SearchSpace,
        cat: Catalog,
        progress: Progress | None,
        check_work: bool = True,
        rule: Rule = "percentile",
        attainment: float = DEFAULT_ATTAINMENT,
    ) -> None:
        self.base, self.full, self.rates, self.space, self.cat = base, full, rates, space, cat
        self.check_work = check_work
        self.rule, self.attainment = rule, attainment
        self.reqs = generate(base)  # every candidate serves the very same requests
        self.progress = progress
        self.rows: list[dict[str, Any]] = []
        self.scenarios: list[Scenario] = []
        self.index: dict[tuple[Shape | Portfolio, tuple[int, ...]], int] = {}
        self.out_of_budget = False
        self.calibrations: dict[str, Calibration] = {}
        self.verdicts: dict[int, tuple[list[bool], list[bool], list[float]]] = {}
        """A portfolio run's per-class TTFT and TPOT verdicts and its decode pools' KV memory."""
        self.slowdown: dict[str, float] = {}
        """Per chip, how much slower than its profile every run makes it (empty: as modelled)."""

    def cost(self, shape: Shape | Portfolio, counts: tuple[int, ...]) -> float:
        """Cost per hour of a shape (or portfolio) at given counts."""
        kinds = shape.kinds() if isinstance(shape, Portfolio) else (shape.prefill, shape.decode)
        return sum(n * self.rates[k].usd_per_hour for k, n in zip(kinds, counts, strict=False))

    def deploy(self, scenario: Scenario, shape: Shape | Portfolio, counts: tuple[int, ...]) -> Scenario:
        """`scenario` with a shape's (or a portfolio's) pools at given counts."""
        if isinstance(shape, Portfolio):
            return with_portfolio(scenario, shape, counts)
        return with_deployment(scenario, shape, (counts[0], counts[1]))

    def run(self, shape: Shape | Portfolio, counts: tuple[int, ...]) -> dict[str, Any] | None:
        """Simulate one deployment (memoised); None once the simulation budget is spent."""
        if (shape, counts) in self.index:
            return self.rows[self.index[shape, counts]]
        if len(self.rows) >= self.space.max_simulations:
            self.out_of_budget = True
            return None
        if self.progress:
            label = f"{shape.label()} {split_label(shape, counts)}"
            self.progress(len(self.rows), self.space.max_simulations, label)
        res = simulate(
            self.deploy(self.base, shape, counts),
            self.cat,
            requests=self.reqs,
            check_work=self.check_work,
            slowdown=self.slowdown,
        )
        row = {
            "run": len(self.rows),
            **run_row(res, shape, counts, self.rule, self.attainment),
            **self.trust(shape),
        }
        if isinstance(shape, Portfolio):
            ttft_ok, tpot_ok = class_verdicts(res, self.rule, self.attainment)
            kv = [res.summary["utilization"][name]["kv_memory"] for name in shape.pool_names()]
            self.verdicts[len(self.rows)] = (ttft_ok, tpot_ok, kv)
        self.index[shape, counts] = len(self.rows)
        self.rows.append(row)
        self.scenarios.append(self.deploy(self.full, shape, counts))
        return row

    def trust(self, shape: Shape | Portfolio) -> dict[str, Any]:
        """The calibration columns of a shape or portfolio (`trust_columns`)."""
        kinds = shape.kinds() if isinstance(shape, Portfolio) else (shape.prefill, shape.decode)
        return trust_columns(*(self.calibrations[k.hardware] for k in kinds))

    def search(self, b: Bound, cap_usd: float) -> dict[str, Any] | None:
        """The cheapest passing counts of a shape below `cap_usd`, from its lower bound up."""
        return self._gallop(b, cap_usd) if b.shape.mode == "colocated" else self._best_first(b, cap_usd)

    def _gallop(self, b: Bound, cap_usd: float) -> dict[str, Any] | None:
        """Colocated: n, n+1, n+3, n+7, ... until one passes, then bisect down to the fewest."""
        most = self.space.max_instances_per_pool
        if math.isfinite(cap_usd):
            most = min(most, math.ceil(cap_usd / self.rates[b.shape.prefill].usd_per_hour - 1e-9) - 1)
        lo, hi, n, step, sims = b.counts[0] - 1, 0, b.counts[0], 1, 0
        best: dict[str, Any] | None = None
        while sims < self.space.max_simulations_per_shape and ((best is None and lo < most) or hi - lo > 1):
            n = min(n, most) if best is None else (lo + hi) // 2
            row = self.run(b.shape, (n, 0))
            sims += 1
            if row is None:
                break
            if row["passes"]:
                hi, best = n, row
            else:
                lo, n, step = n, n + step, step * 2
        return best

    def _best_first(self, b: Bound, cap_usd: float) -> dict[str, Any] | None:
        """Disaggregated: the cheapest untried (P, D) first, growing the pool the failure blames.

        A missed TTFT grows prefill (and decode too when its KV memory is half full or more:
        finished prompts may be waiting for decode memory); a missed TPOT grows decode.
        """
        heap = [(self.cost(b.shape, b.counts), b.counts)]
        seen = {b.counts}
        sims = 0
        while heap and sims < self.space.max_simulations_per_shape:
            cost, (n_p, n_d) = heapq.heappop(heap)
            if cost >= cap_usd:
                break
            row = self.run(b.shape, (n_p, n_d))
            sims += 1
            if row is None or row["passes"]:
                return row
            grow = []
            if not row["ttft_ok"]:
                grow.append((n_p + 1, n_d))
            if not row["tpot_ok"] or (not row["ttft_ok"] and row["decode_kv_memory"] >= 0.5):
                grow.append((n_p, n_d + 1))
            for nxt in grow or [(n_p + 1, n_d), (n_p, n_d + 1)]:  # neither blamed: grow both
                if nxt not in seen and max(nxt) <= self.space.max_instances_per_pool:
                    seen.add(nxt)
                    heapq.heappush(heap, (self.cost(b.shape, nxt), nxt))
        return None

    def search_portfolio(self, b: PortfolioBound, cap_usd: float) -> dict[str, Any] | None:
        """A portfolio's cheapest passing counts below `cap_usd`: cheapest untried counts first,
        growing the pools each class's failure blames (`engine.planning.portfolio.grow`)."""
        heap = [(self.cost(b.portfolio, b.counts), b.counts)]
        seen = {b.counts}
        sims = 0
        while heap and sims < self.space.max_simulations_per_shape:
            cost, counts = heapq.heappop(heap)
            if cost >= cap_usd:
                break
            row = self.run(b.portfolio, counts)
            sims += 1
            if row is None or row["passes"]:
                return row
            for nxt in grow(counts, *self.verdicts[int(row["run"])]):
                if nxt not in seen and max(nxt) <= self.space.max_instances_per_pool:
                    seen.add(nxt)
                    heapq.heappush(heap, (self.cost(b.portfolio, nxt), nxt))
        return None


def pareto(frame: pd.DataFrame, x: str, y: str, *, maximize_x: bool, maximize_y: bool) -> pd.Series:
    """True for the rows no other row beats on both `x` and `y` (ties kept)."""
    xs = frame[x].to_numpy(dtype=float) * (1 if maximize_x else -1)
    ys = frame[y].to_numpy(dtype=float) * (1 if maximize_y else -1)
    keep = np.isfinite(xs) & np.isfinite(ys)
    for i in np.nonzero(keep)[0]:
        keep[i] = not ((xs >= xs[i]) & (ys >= ys[i]) & ((xs > xs[i]) | (ys > ys[i]))).any()
    return pd.Series(keep, index=frame.index)


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
) -> Plan:
    """The cheapest deployment whose simulated run passes at `target_rps`.

    Passing follows `rule` (`run_passes`): ``percentile``, every class's TTFT and TPOT within
    target at its SLO percentile; ``attainment``, at least `attainment` of the requests within
    their SLO. `check_work=False` lifts the work bound on each run (engine.serving.work_bound),
    as `simulate`'s does. `slowed` runs every chip as much slower than modelled as its expected
    throughput band's pessimistic edge says (`slowdowns`): the cheapest deployment that passes even so, the
    margin a buyer can add for the model's error (docs/planner.md, "Margin"). The cost model's
    bounds stay those of the modelled chips: lower than the slowed ones, so still bounds.
    """
    check_rule(rule, attainment)
    space = space or SearchSpace()
    cat = scenario_catalog(scenario, catalog)
    if scenario.model.id not in cat.models:
        raise ScenarioError(f"model.id: unknown model {scenario.model.id!r}")
    chips = space.hardware or tuple(dict.fromkeys(p.hardware for p in scenario.deployment.pools))
    unknown = [h for h in chips if h not in cat.hardware]
    if unknown:
        known = ", ".join(sorted(cat.hardware))
        raise ScenarioError(f"space.hardware: unknown hardware {unknown[0]!r}; known: {known}")
    full = planning_scenario(scenario, target_rps, None)
    search = _Search(
        planning_scenario(scenario, target_rps, space.duration_s),
        full, {}, space, cat, progress, check_work, rule, attainment,
    )  # fmt: skip
    search.calibrations = chip_calibrations(search.base, cat, chips)
    if slowed:
        search.slowdown = slowdowns(search.calibrations.values())
    d = rule_demand(demand(search.base, search.reqs), rule, attainment)
    kinds = instance_kinds(space, chips, cat.models[scenario.model.id])
    search.rates.update(
        {k: instance_rates(instance_of(search.base, cat, *k), d, search.base.cost) for k in kinds}
    )
    budget = space.budget_usd_per_hour if space.budget_usd_per_hour is not None else math.inf
    all_bounds = []
    stack = scenario.deployment.stack
    barred = {h: only for h in chips if (only := runs_only_on(stack, cat.hardware[h]))}
    for shape in shapes(space, kinds):
        b = lower_bound(shape, search.rates, d, space.max_instances_per_pool)
        if not b.pruned and (hit := {shape.prefill.hardware, shape.decode.hardware} & set(barred)):
            b = replace(b, pruned=f"{STACK_NAMES.get(stack, stack)} runs on {barred[min(hit)]}")
        if not b.pruned and b.usd_per_hour > budget:
            b = replace(b, pruned=f"over budget (at least ${b.usd_per_hour:,.2f}/h)")
        all_bounds.append(b)
    status: dict[Shape | Portfolio, str] = {b.shape: f"pruned: {b.pruned}" for b in all_bounds if b.pruned}
    # cheapest bound first; at a tie the simpler layouts (fewer of pp, dp, ep above 1), then by name
    live = sorted(
        (b for b in all_bounds if not b.pruned),
        key=lambda b: (b.usd_per_hour, _extra_degrees(b.shape), b.shape.label()),
    )
    found: dict[Shape | Portfolio, int] = {}
    best: dict[str, Any] | None = None
    cap = budget * (1 + 1e-9)
    searched_modes: set[str] = set()
    for i, b in enumerate(live):
        best_cost = best["usd_per_hour"] if best else math.inf
        # finalists are searched to a passing point even above the best, for the frontier
        finalist = (i < space.finalists or b.shape.mode not in searched_modes) and b.usd_per_hour < cap
        if search.out_of_budget:
            status[b.shape] = "unexplored"
        elif b.usd_per_hour >= min(best_cost, cap) and not finalist:
            status[b.shape] = "bounded"
        else:
            row = search.search(b, cap if finalist else min(best_cost, cap))
            status[b.shape] = "simulated"
            searched_modes.add(b.shape.mode)
            if row is not None:
                found[b.shape] = int(row["run"])
                best = row if best is None or row["usd_per_hour"] < best["usd_per_hour"] else best
    if best is not None:  # the winner with more decode (or mixed) instances traces the frontier
        won, (n_p, n_d) = next(k for k, v in search.index.items() if v == best["run"])
        for extra in range(1, space.frontier_extra + 1):
            more = (n_p + extra, 0) if won.mode == "colocated" else (n_p, n_d + extra)
            if max(more) > space.max_instances_per_pool or search.run(won, more) is None:
                break
    notes: list[str] = []
    portfolios: list[PortfolioBound] = []
    if space.portfolio:
        portfolios, best, notes = _portfolios(search, d, kinds, set(barred), live, cap, status, found, best)
    return _assemble(target_rps, space, all_bounds, status, found, search, best, portfolios, notes)


def _portfolios(
    search: _Search,
    d: Demand,
    kinds: Sequence[Kind],
    barred: set[str],
    live: Sequence[Bound],
    cap: float,
    status: dict[Shape | Portfolio, str],
    found: dict[Shape | Portfolio, int],
    best: dict[str, Any] | None,
) -> tuple[list[PortfolioBound], dict[str, Any] | None, list[str]]:
    """After the search: decode pools by class (`engine.planning.portfolio`), below the best cost.

    The prefill pool (kind and count) is the cheapest passing disaggregated run's, else the
    cheapest disaggregated bound's. Each class's decode kinds are sized on its own requests;
    candidate portfolios are searched cheapest bound first and bounded out, as shapes are, by the
    best deployment so far. Returns the candidates, the best run and notes.
    """
    classes = search.base.workload.classes
    space = search.space
    if len(classes) < 2 or "disaggregated" not in space.modes or len(classes) + 1 > MAX_POOLS:
        why = f"{len(classes)} request class{'es' if len(classes) != 1 else ''}"
        if "disaggregated" not in space.modes:
            why = "the disaggregated mode is not searched"
        elif len(classes) + 1 > MAX_POOLS:
            why = f"{len(classes)} classes need more than {MAX_POOLS} pools"
        return (
            [],
            best,
            [f"no portfolio tried: it needs two to {MAX_POOLS - 1} classes, disaggregated ({why})"],
        )
    passing = [
        (r["usd_per_hour"], k, c)
        for (k, c), i in search.index.items()
        if isinstance(k, Shape) and k.mode == "disaggregated" and (r := search.rows[i])["passes"]
    ]
    if passing:
        _, anchor, counts = min(passing, key=lambda x: x[0])
        prefill, n_p = anchor.prefill, counts[0]
    else:
        disagg = [b for b in live if b.shape.mode == "disaggregated"]
        if not disagg:
            return [], best, ["no portfolio tried: no disaggregated shape survived the cost model"]
        prefill, n_p = disagg[0].shape.prefill, disagg[0].counts[0]
    usable = [
        k
        for k in kinds
        if k.hardware not in barred and (space.mixed_hardware or k.hardware == prefill.hardware)
    ]
    choices = []
    for c in range(len(classes)):
        dc = class_demand(d, c)
        rates = {
            k: instance_rates(instance_of(search.base, search.cat, *k), dc, search.base.cost) for k in usable
        }
        choices.append(decode_choices(rates, dc, space.max_instances_per_pool))
    if not all(choices):
        return [], best, ["no portfolio tried: a class has no decode kind that can serve it alone"]
    bounds_ = portfolio_bounds(
        prefill, n_p, search.rates[prefill].usd_per_hour, [c.name for c in classes], choices
    )
    for b in bounds_:
        best_cost = best["usd_per_hour"] if best else math.inf
        if b.usd_per_hour > cap:
            status[b.portfolio] = f"pruned: over budget (at least ${b.usd_per_hour:,.2f}/h)"
        elif search.out_of_budget:
            status[b.portfolio] = "unexplored"
        elif b.usd_per_hour >= min(best_cost, cap):
            status[b.portfolio] = "bounded"
        else:
            row = search.search_portfolio(b, min(best_cost, cap))
            status[b.portfolio] = "simulated"
            if row is not None:
                found[b.portfolio] = int(row["run"])
                best = row if best is None or row["usd_per_hour"] < best["usd_per_hour"] else best
    return bounds_, best, []


def _assemble(
    target_rps: float,
    space: SearchSpace,
    all_bounds: list[Bound],
    status: dict[Shape | Portfolio, str],
    found: dict[Shape | Portfolio, int],
    search: _Search,
    best: dict[str, Any] | None,
    portfolios: Sequence[PortfolioBound] = (),
    notes_in: Sequence[str] = (),
) -> Plan:
    cand = pd.DataFrame(
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
                **{
                    k: v for k, v in _decode_columns(b.portfolio, b.counts).items() if k != "decode_instances"
                },
                "lower_bound_split": b.portfolio.split(b.counts),
                "lower_bound_usd_per_hour": b.usd_per_hour,
                "status": status.get(b.portfolio, "unexplored"),
                "best_run": found.get(b.portfolio, -1),
                **search.trust(b.portfolio),
            }
            for b in portfolios
        ]
    )
    runs = pd.DataFrame(search.rows)
    best_run = int(best["run"]) if best else None
    notes = list(notes_in)
    if search.out_of_budget:
        notes.append(
            f"stopped at the simulation budget ({space.max_simulations}); a cheaper deployment may exist"
        )
    if best is None:
        notes.append(
            f"no simulated deployment passed at the target load ({rule_text(search.rule, search.attainment)})"
        )
    if runs.empty:
        frontier_cost = frontier_tput = runs
    else:
        runs["chosen"] = runs["run"] == (best_run if best_run is not None else -1)
        runs["on_cost_frontier"] = pareto(
            runs, "usd_per_hour", "goodput_rps", maximize_x=False, maximize_y=True
        )
        pool = runs[runs["passes"]] if runs["passes"].any() else runs
        on = pareto(
            pool, "tokens_per_s_per_user", "goodput_tokens_per_s_per_chip", maximize_x=True, maximize_y=True
        )
        runs["on_throughput_frontier"] = runs["run"].isin(pool.loc[on, "run"])
        cols = ["run", "mode", "shape", "split", "chips", "passes", "chosen", "calibrated", "calibration",
                "throughput_error"]  # fmt: skip
        frontier_cost = runs.loc[runs["on_cost_frontier"], [*cols, "usd_per_hour", "goodput_rps"]]
        frontier_cost = frontier_cost.sort_values("usd_per_hour").reset_index(drop=True)
        tput_cols = [
            *cols, "tpot_error", "tokens_per_s_per_user", "goodput_tokens_per_s_per_chip", "output_tokens_per_s_per_chip",
        ]  # fmt: skip
        frontier_tput = runs.loc[runs["on_throughput_frontier"], tput_cols]
        frontier_tput = frontier_tput.sort_values("tokens_per_s_per_user").reset_index(drop=True)
    statuses = list(status.values())
    return Plan(
        target_rps=target_rps,
        duration_s=search.base.duration_s,
        best=search.scenarios[best_run] if best_run is not None else None,
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
        calibration=tuple(search.calibrations.values()),
        rule=search.rule,
        attainment=search.attainment,
        slowdown=dict(search.slowdown),
    )
