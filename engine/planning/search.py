"""The planner's search: simulating candidate deployments of a shape, count by count.

`Search` keeps the simulation budget and every run's row (`run_row`: costs, latencies, verdict,
calibration); colocated shapes search counts by galloping then bisection, disaggregated ones the
cheapest pair first, growing the pool the failure points at. `engine.planning.plan` orders the
shapes and assembles the answer.
"""

from __future__ import annotations

import heapq
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any

from engine.calibration.trust import Calibration
from engine.catalog.entries import Catalog
from engine.core.errors import ScenarioError
from engine.planning.calibrations import trust_columns
from engine.planning.candidates import (
    SearchSpace,
    extra_degrees,
    split_label,
    with_deployment,
    with_portfolio,
)
from engine.planning.objective import OBJECTIVES, UNBOUNDED, Objective, bound_value, row_value, unit_weights
from engine.planning.plan_work import check_plan_work
from engine.planning.portfolio import (
    Portfolio,
    PortfolioBound,
    grow,
)
from engine.planning.ran import Key, Ran, Verdicts
from engine.planning.rules import DEFAULT_ATTAINMENT, Rule, class_verdicts, phase_attainment, run_passes
from engine.planning.runner import ClusterRunner, LocalRunner, Runner
from engine.planning.sizing import (
    Bound,
    Demand,
    InstanceRates,
    Kind,
    Shape,
)
from engine.scenario.model import Scenario
from engine.serving.run import SimResult, simulate
from engine.serving.summary import latency_shortfall, shortfall_rps, unbounded
from engine.serving.workload import Requests, generate

Progress = Callable[[int, int, str], None]
"""A progress callback: (simulations done, simulation budget, what is running)."""

_DRAWN: OrderedDict[str, Requests] = OrderedDict()
"""A worker's requests by planning scenario (`evaluate`): drawn once per plan, not once per run;
the last `DRAWN_PLANS` plans' (a worker may serve several sessions' plans at once)."""
DRAWN_PLANS = 4
_DRAWING = threading.Lock()


def _drawn(base: Scenario) -> Requests:
    """The requests every run of the plan on `base` serves, drawn on this worker once."""
    key = base.model_dump_json()
    with _DRAWING:
        if key in _DRAWN:
            _DRAWN.move_to_end(key)
            return _DRAWN[key]
    reqs = generate(base)  # deterministic: the same seed draws the same requests anywhere
    with _DRAWING:
        _DRAWN[key] = reqs
        while len(_DRAWN) > DRAWN_PLANS:
            _DRAWN.popitem(last=False)
    return reqs


def evaluate(
    scenario: Scenario,
    cat: Catalog,
    requests: Requests | Scenario,
    shape: Shape | Portfolio,
    counts: tuple[int, ...],
    check_work: bool,
    slowdown: dict[str, float],
    rule: Rule,
    attainment: float,
) -> tuple[dict[str, Any], Verdicts | None]:
    """One planning simulation: its row (`run_row`) and, for a portfolio, its per-class verdicts.

    `requests` are the drawn requests, or the planning scenario they are drawn from (on a cluster's
    worker: the same seed draws the same requests, kept for the plan's next runs).
    """
    if isinstance(requests, Scenario):
        requests = _drawn(requests)
    res = simulate(scenario, cat, requests=requests, check_work=check_work, slowdown=slowdown)
    verdicts = None
    if isinstance(shape, Portfolio):
        ttft_ok, tpot_ok = class_verdicts(res, rule, attainment)
        verdicts = (
            ttft_ok,
            tpot_ok,
            [res.summary["utilization"][n]["kv_memory"] for n in shape.pool_names()],
        )
    return run_row(res, shape, counts, rule, attainment), verdicts


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
    if rule == "attainment":
        ttft_share, tpot_share = phase_attainment(res)
        ttft_ok = ttft_share >= attainment - 1e-12
        tpot_ok = tpot_share >= attainment - 1e-12
    else:  # every class's percentile within its targets (`class_verdicts`)
        each_ttft, each_tpot = class_verdicts(res, rule, attainment)
        ttft_ok, tpot_ok = all(each_ttft), all(each_tpot)
    chips = res.scenario.deployment.chips
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
        **decode_columns(shape, counts),
        "mixed_hardware": shape.prefill.hardware if colo else None,
        "mixed_tp": shape.prefill.tp if colo else 0,
        "mixed_layout": shape.prefill.layout() if colo else None,
        "mixed_instances": counts[0] if colo else 0,
        "chips": chips,
        "usd_per_hour": s["cost"]["usd_per_hour"],
        "passes": run_passes(s, rule, attainment),
        "shortfall_rps": shortfall_rps(s),  # None: it keeps up
        # None: its queue emptied; else the fewest it held (at its capacity: `run_passes` fails it)
        "standing_requests": stood["standing_requests"] if (stood := s.get("at_capacity")) else None,
        # None: its latencies do not grow with the run (it keeps up, or a client's ceiling holds the backlog)
        "grows_rps": latency_shortfall(s),
        "tpot_grows_rps": latency_shortfall(s, "tpot"),  # None also where its TPOT stays level
        "ttft_grows_rps": latency_shortfall(s, "ttft"),  # None also where its TTFT stays level (`backlog`)
        "ttft_ok": ttft_ok,
        "tpot_ok": tpot_ok,
        "slo_attainment": s["slo_attainment"],
        "goodput_rps": s["goodput_rps"],
        "output_tokens_per_s": out_tps,
        "output_tokens_per_s_per_chip": out_tps / chips,
        # the output tokens of requests that met their SLO: a run that falls behind still completes
        # what was offered, and only this shows how little of it was worth serving
        "goodput_tokens_per_s_per_chip": s["goodput_output_tokens_per_s"] / chips,
        "tpot_ms_mean": tpot_mean,
        "tokens_per_s_per_user": 1e3 / tpot_mean if tpot_mean else math.nan,
        "ttft_ms_p90": s["latency_ms"]["ttft"]["p90"],
        "tpot_ms_p90": s["latency_ms"]["tpot"]["p90"],
        **at_slo(res),
        "usd_per_million_output_tokens": s["cost"]["usd_per_million_output_tokens"],
        "usd_per_request": s["cost"]["usd_per_request"],
        # mean power over the run: every chip's energy over the time to the last request's end
        "power_w": s["energy"]["joules"] / s["drain_end_s"] if s["drain_end_s"] > 0 else math.nan,
        "prefill_busy": util["mixed" if colo else "prefill"]["busy"],
        "decode_kv_memory": (
            max(util[name]["kv_memory"] for name in shape.pool_names())
            if isinstance(shape, Portfolio)
            else util["mixed" if colo else "decode"]["kv_memory"]
        ),
    }


def at_slo(res: SimResult) -> dict[str, Any]:
    """Latencies in the SLO's own terms: each class's TTFT and TPOT at its SLO percentile.

    ``classes_at_slo``: per class, its percentile, the two figures (None: infinite, or no TPOT)
    and its targets; ``ttft_ms_at_slo`` and ``tpot_ms_at_slo`` the highest over the classes (NaN
    for an infinite one), ``slo_percentile`` the classes' percentile (the highest if they differ).
    """
    per: dict[str, dict[str, Any]] = {}
    endless = False  # a class's TPOT at its percentile infinite: on requests that never completed
    for c in res.scenario.workload.classes:
        cs = res.summary["classes"][c.name]
        if not cs["requests"]:  # no request in the window: nothing at its percentile (not judged)
            continue
        endless |= unbounded(cs, "tpot_ms_at_percentile")
        per[c.name] = {
            "percentile": c.slo.percentile,
            "ttft_ms": cs["ttft_ms_at_percentile"],
            "tpot_ms": cs["tpot_ms_at_percentile"],
            "ttft_target_ms": c.slo.ttft_ms,
            "tpot_target_ms": c.slo.tpot_ms,
        }

    def worst(key: str) -> float:
        vals = [v[key] for v in per.values()]
        if (key == "ttft_ms" and any(v is None for v in vals)) or (key == "tpot_ms" and endless):
            return math.nan  # a request never served: infinitely late
        have = [float(v) for v in vals if v is not None]
        return max(have) if have else math.nan

    return {
        "slo_percentile": max(c.slo.percentile for c in res.scenario.workload.classes),
        "ttft_ms_at_slo": worst("ttft_ms"),
        "tpot_ms_at_slo": worst("tpot_ms"),
        "classes_at_slo": per,
    }


def decode_columns(shape: Shape | Portfolio, counts: Sequence[int]) -> dict[str, Any]:
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


class Search:
    """Mutable state of one planning search: the runs so far and the budget left.

    With `check_work`, a search whose total work is over the bound (`plan_work`) is refused when it
    is made, before any simulation; with an `executor`, its simulations run there, ahead of need
    (`engine.planning.runner.ClusterRunner`), the decisions unchanged.
    """

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
        executor: Executor | None = None,
        requests: Requests | None = None,
    ) -> None:
        if check_work:  # the whole search is bounded before its requests are drawn (`plan_work`)
            check_plan_work(base, base.workload.arrival.rate_rps, space)
        self.base, self.full, self.rates, self.space, self.cat = base, full, rates, space, cat
        self.check_work = check_work
        self.rule, self.attainment = rule, attainment
        # every candidate serves the very same requests
        self.reqs = generate(base) if requests is None else requests
        self.allowance = 0
        """Runs allowed past `SearchSpace.max_simulations`: the verdict's picks on the planning window."""
        self.progress = progress
        self.rows: list[dict[str, Any]] = []
        self.scenarios: list[Scenario] = []
        self.index: dict[tuple[Shape | Portfolio, tuple[int, ...]], int] = {}
        self.out_of_budget = False
        self.cut: dict[Shape | Portfolio, float] = {}
        """The shapes (and portfolios) the budget left unsearched or cut short, each with its bound in
        the objective (`cost`): a deployment of one is never better than it (`engine.planning.plan_notes.cut`)."""
        self.lead_s = 0.0
        """How much earlier than its window each run starts for its sessions' ramp (`session_lead_s`)."""
        self.full_lead_s = 0.0
        """The same for the full-length runs (over the scenario's own window and warm-up)."""
        self.full_rows: dict[tuple[Any, ...], dict[str, Any]] = {}
        """The verdict's full-length runs by (shape, counts, at the bands' edge): a would-be winner
        verified again at the edge reuses its run as modelled (`engine.planning.verdict`)."""
        self.calibrations: dict[str, Calibration] = {}
        self.verdicts: dict[int, Verdicts] = {}
        """A portfolio run's per-class TTFT and TPOT verdicts and its decode pools' KV memory."""
        self.slowdown: dict[str, float] = {}
        """Per chip, how much slower than its profile every run makes it (empty: as modelled)."""
        self.runner: Runner = LocalRunner() if executor is None else ClusterRunner(executor)
        """Where the simulations run (`engine.planning.runner`); the search's decisions never depend on it."""
        self.budget = math.inf
        """The budget per hour (a hair above the user's, for rounding): no counts beyond it are tried."""
        self.power_budget_kw = (
            math.inf if space.power_budget_kw is None else space.power_budget_kw * (1 + 1e-9)
        )
        """The power budget (a hair above the user's): no counts whose chips draw more at TDP are tried."""
        self.objective: Objective = "usd_per_hour"
        self.weights: dict[Kind, float] = {}
        """Per instance kind, the least an instance adds to the objective (`unit_weights`);
        empty: its price per hour."""
        self.failed: frozenset[Key] = frozenset()
        """For a search with slowed chips: deployments whose run as modelled failed (`settle`)."""
        self.skipped: set[Key] = set()
        """Deployments `settle` found failing without simulating them; they count against the budget."""
        self.known: dict[Key, tuple[dict[str, Any], Verdicts | None]] = {}
        """Runs an earlier search made on the same requests and slowdown (`reuse`), used instead of simulating."""
        self.reused = 0
        """Runs taken from `known` rather than simulated."""
        self.demand: Demand | None = None
        """What the load asks (`sizing.demand`, under the rule): for the slowed search's own bounds."""
        self.edge: Search | None = None
        """The search with every chip at its band's edge that the verdict ran from this one, if any."""

    def cost(self, shape: Shape | Portfolio, counts: tuple[int, ...]) -> float:
        """The objective's lower bound of a shape (or portfolio) at given counts (cost per hour by
        default): the order counts are tried in, and what is compared with a cap."""
        kinds = shape.kinds() if isinstance(shape, Portfolio) else (shape.prefill, shape.decode)
        return bound_value(kinds, counts, self.weights or {k: self.rates[k].usd_per_hour for k in kinds})

    def order(self, b: Bound) -> tuple[float, float, int, str]:
        """Where a shape's bound comes in the search: cheapest bound first (in the objective), then
        the cheapest price; at a tie the simpler layouts (fewer of pp, dp, ep above 1), then by name."""
        return (self.cost(b.shape, b.counts), b.usd_per_hour, extra_degrees(b.shape), b.shape.label())

    def aim(self, objective: Objective) -> list[str]:
        """Minimise `objective`: each instance kind's least share of it (`unit_weights`); an objective
        whose bound is not valid (`UNBOUNDED`) gets 0, so no shape is bounded out by it, and a note."""
        self.objective = objective
        if objective in UNBOUNDED:
            self.weights = dict.fromkeys(self.rates, 0.0)
            return [
                f"the cost model's bound of {OBJECTIVES[objective]} is not valid: searched without pruning"
            ]
        self.weights = unit_weights(objective, self.rates, self.cat, self.reqs)
        return []

    def usd(self, shape: Shape | Portfolio, counts: tuple[int, ...]) -> float:
        """Cost per hour of a shape (or portfolio) at given counts, for the budget."""
        kinds = shape.kinds() if isinstance(shape, Portfolio) else (shape.prefill, shape.decode)
        return sum(n * self.rates[k].usd_per_hour for k, n in zip(kinds, counts, strict=False))

    def kw(self, shape: Shape | Portfolio, counts: tuple[int, ...]) -> float:
        """The most a shape's (or portfolio's) chips draw at given counts, every chip at its TDP, kW:
        what the site provisions for them (`SearchSpace.power_budget_kw`)."""
        kinds = shape.kinds() if isinstance(shape, Portfolio) else (shape.prefill, shape.decode)
        return (
            sum(
                n * k.chips * self.cat.hardware[k.hardware].tdp_w for k, n in zip(kinds, counts, strict=False)
            )
            / 1e3
        )

    def affordable(self, shape: Shape | Portfolio, counts: tuple[int, ...]) -> bool:
        """True when the counts are within the budget per hour and the power budget."""
        return self.usd(shape, counts) < self.budget and self.kw(shape, counts) <= self.power_budget_kw

    def priced(self, row: dict[str, Any]) -> dict[str, Any]:
        """`row` held to the budget by what its run billed: ``over_budget`` when its simulated cost per
        hour exceeds the budget, and then it does not pass (``meets_slo`` keeps the SLO's verdict). The
        bounds price an owned chip at its idle power (`ownership.chip_hour_usd`), below a run's bill, so
        a deployment they let through can still bill more than the budget."""
        meets = bool(row.get("meets_slo", row["passes"]))
        over = bool(row["usd_per_hour"] > self.budget)
        return row | {"passes": meets and not over, "meets_slo": meets, "over_budget": over}

    def value(self, row: dict[str, Any]) -> float:
        """A run's figure of the objective (`row_value`)."""
        return row_value(row, self.objective)

    def deploy(self, scenario: Scenario, shape: Shape | Portfolio, counts: tuple[int, ...]) -> Scenario:
        """`scenario` with a shape's (or a portfolio's) pools at given counts."""
        if isinstance(shape, Portfolio):
            return with_portfolio(scenario, shape, counts)
        return with_deployment(scenario, shape, (counts[0], counts[1]))

    def _spent(self) -> bool:
        """True when the budget is spent: runs made, and deployments settled without one (`settle`)."""
        return len(self.rows) + len(self.skipped) >= self.space.max_simulations + self.allowance

    def run(self, shape: Shape | Portfolio, counts: tuple[int, ...]) -> dict[str, Any] | None:
        """Simulate one deployment (memoised; an earlier search's run of it reused, `reuse`); None
        once the simulation budget is spent."""
        key = (shape, counts)
        if key in self.index:
            return self.rows[self.index[key]]
        if key not in self.skipped and self._spent():  # a skipped one was counted when it was settled
            self.out_of_budget = True
            return None
        self.skipped.discard(key)
        if self.progress:
            label = f"{shape.label()} {split_label(shape, counts)}"
            self.progress(len(self.rows), self.space.max_simulations, label)
        if key in self.known:
            before, verdicts = self.known[key]
            out = {k: v for k, v in before.items() if k != "run"}
            self.reused += 1
        else:
            out, verdicts = self.runner.result(key, evaluate, *self._task(shape, counts))
        row = self.priced({"run": len(self.rows), **out, **self.trust(shape)})
        if verdicts is not None:
            self.verdicts[len(self.rows)] = verdicts
        self.index[shape, counts] = len(self.rows)
        self.rows.append(row)
        self.scenarios.append(self.deploy(self.full, shape, counts))
        return row

    def settle(self, shape: Shape | Portfolio, counts: tuple[int, ...]) -> dict[str, Any] | None:
        """Whether a deployment passes, as `run` says, except that a slowed search does not simulate
        one that failed as modelled (`failed`): a slower chip never passes where the modelled one
        failed (docs/definitions.md: a faster chip is never slower), so it fails (``{"passes": False}``, no
        row). It counts against the budget as its run would have, so the search's path is the same."""
        key = (shape, counts)
        if key not in self.failed or key in self.index:
            return self.run(shape, counts)
        if key not in self.skipped:
            if self._spent():
                self.out_of_budget = True
                return None
            self.skipped.add(key)
        return {"passes": False}

    def reuse(self, prior: Ran | None) -> None:
        """Take what an earlier plan's searches ran (`Ran`; None: nothing), where it was on the same
        planning scenario, catalog and rule: its runs with this search's slowdown, used instead of
        simulating, and, for a search whose chips are all slowed (none faster), its failures as modelled."""
        if prior is None:
            return
        mine = (self.base, self.rule, self.attainment, self.check_work)
        if (prior.base, prior.rule, prior.attainment, prior.check_work) != mine:
            return
        if prior.cat is not self.cat and prior.cat != self.cat:
            return
        if prior.slowdown == self.slowdown:
            self.known = prior.slowed
        if self.slowdown and min(self.slowdown.values()) >= 0:
            self.failed = prior.failed

    def failures(self) -> frozenset[Key]:
        """The deployments this search ran that failed."""
        return frozenset(k for k, i in self.index.items() if not self.rows[i]["passes"])

    def ran(self) -> Ran:
        """What this search (and the slowed search its verdict ran, `edge`) simulated, as `Ran`."""
        slow = self if self.slowdown else self.edge
        runs = (
            {} if slow is None else {k: (slow.rows[i], slow.verdicts.get(i)) for k, i in slow.index.items()}
        )
        return Ran(
            base=self.base,
            cat=self.cat,
            rule=self.rule,
            attainment=self.attainment,
            check_work=self.check_work,
            failed=frozenset() if self.slowdown else self.failures(),
            slowdown={} if slow is None else dict(slow.slowdown),
            slowed=runs,
            reused=self.reused,
            skipped=len(self.skipped),
        )

    def _task(self, shape: Shape | Portfolio, counts: tuple[int, ...]) -> tuple[Any, ...]:
        """`evaluate`'s arguments for one deployment (a cluster's workers draw the requests themselves)."""
        reqs = self.base if self.runner.speculates else self.reqs
        deployed = self.deploy(self.base, shape, counts)
        return (
            deployed,
            self.cat,
            reqs,
            shape,
            counts,
            self.check_work,
            dict(self.slowdown),
            self.rule,
            self.attainment,
        )

    def ahead(self, shape: Shape | Portfolio, *points: tuple[int, ...]) -> None:
        """Hint the runner at deployments the search will likely simulate next (no effect on the search)."""
        if not self.runner.speculates:
            return
        for counts in points:
            key = (shape, counts)
            if key in self.index or key in self.known or key in self.failed:
                continue
            if not 0 < max(counts) <= self.space.max_instances_per_pool:
                continue
            try:
                task = self._task(shape, counts)
            except ScenarioError:  # the search meets the same error when (and if) it asks for the run
                continue
            self.runner.ahead((shape, counts), evaluate, *task)

    def ahead_shapes(self, live: Sequence[Bound], i: int, best_usd: float, shapes: int = 4) -> None:
        """Hint the lower-bound counts of the shapes the plan will likely search after `live[i]`: the
        next `shapes` that are finalists or whose bound is below the best cost so far."""
        if self.runner.speculates:
            likely = [
                b for j, b in enumerate(live[i:], i) if j < self.space.finalists or b.usd_per_hour < best_usd
            ]
            for b in likely[: shapes + 1]:
                self.ahead(b.shape, b.counts)

    def trust(self, shape: Shape | Portfolio) -> dict[str, Any]:
        """The calibration columns of a shape or portfolio (`trust_columns`)."""
        kinds = shape.kinds() if isinstance(shape, Portfolio) else (shape.prefill, shape.decode)
        return trust_columns(*(self.calibrations[k.hardware] for k in kinds))

    def search(self, b: Bound, cap: float) -> dict[str, Any] | None:
        """The cheapest passing counts of a shape below `cap` (in the objective's
        units; `budget_usd_per_hour` applies too), from its lower bound up."""
        return self._gallop(b, cap) if b.shape.mode == "colocated" else self._best_first(b, cap)

    def _gallop(self, b: Bound, cap: float) -> dict[str, Any] | None:
        """Colocated: n, n+1, n+3, n+7, ... until one passes, then bisect down to the fewest."""
        most = self.space.max_instances_per_pool
        for limit, unit in (
            (cap, self.cost(b.shape, (1, 0))),
            (self.budget, self.usd(b.shape, (1, 0))),
            (self.power_budget_kw * (1 + 1e-9), self.kw(b.shape, (1, 0))),  # the power budget is inclusive
        ):
            if math.isfinite(limit) and unit > 0:
                most = min(most, math.ceil(limit / unit - 1e-9) - 1)
        lo, hi, n, step, sims = b.counts[0] - 1, 0, b.counts[0], 1, 0
        best: dict[str, Any] | None = None
        while sims < self.space.max_simulations_per_shape and ((best is None and lo < most) or hi - lo > 1):
            n = min(n, most) if best is None else (lo + hi) // 2
            # next: bisect below n if it passes; gallop (or bisect) above it if it fails
            likely = [(lo + n) // 2] if n - lo > 1 else []
            likely += [min(n + step, most)] if best is None else [(n + hi) // 2] if hi - n > 1 else []
            self.ahead(b.shape, (n, 0), *((c, 0) for c in likely))
            row = self.settle(b.shape, (n, 0))
            sims += 1
            if row is None or (best is None and row.get("over_budget")):
                break  # more instances bill more
            if row["passes"]:
                hi, best = n, row
            else:
                lo, n, step = n, n + step, step * 2
        return best

    def _best_first(self, b: Bound, cap: float) -> dict[str, Any] | None:
        """Disaggregated: the cheapest untried (P, D) first, growing the pool the failure blames.

        A missed TTFT grows prefill (and decode too when its KV memory is half full or more:
        finished prompts may be waiting for decode memory); a missed TPOT grows decode.
        """
        heap = [(self.cost(b.shape, b.counts), b.counts)]
        seen = {b.counts}
        sims = 0
        while heap and sims < self.space.max_simulations_per_shape:
            cost, (n_p, n_d) = heapq.heappop(heap)
            if cost >= cap:
                break
            # next: either pool grown, then the cheapest pairs already queued
            likely = [(n_p + 1, n_d), (n_p, n_d + 1), *(c for _, c in heapq.nsmallest(2, heap))]
            self.ahead(b.shape, (n_p, n_d), *likely)
            row = self.run(b.shape, (n_p, n_d))
            sims += 1
            if row is None or row["passes"]:
                return row
            if row["over_budget"]:
                continue  # either pool grown bills more
            grow = []
            if not row["ttft_ok"]:
                grow.append((n_p + 1, n_d))
            if not row["tpot_ok"] or (not row["ttft_ok"] and row["decode_kv_memory"] >= 0.5):
                grow.append((n_p, n_d + 1))
            for nxt in grow or [(n_p + 1, n_d), (n_p, n_d + 1)]:  # neither blamed: grow both
                if nxt not in seen and max(nxt) <= self.space.max_instances_per_pool:
                    seen.add(nxt)
                    if self.affordable(b.shape, nxt):
                        heapq.heappush(heap, (self.cost(b.shape, nxt), nxt))
        return None

    def search_portfolio(self, b: PortfolioBound, cap: float) -> dict[str, Any] | None:
        """A portfolio's cheapest passing counts below `cap`: cheapest untried counts first,
        growing the pools each class's failure blames (`engine.planning.portfolio.grow`)."""
        heap = [(self.cost(b.portfolio, b.counts), b.counts)]
        seen = {b.counts}
        sims = 0
        while heap and sims < self.space.max_simulations_per_shape:
            cost, counts = heapq.heappop(heap)
            if cost >= cap:
                break
            row = self.run(b.portfolio, counts)
            sims += 1
            if row is None or row["passes"]:
                return row
            if row["over_budget"]:
                continue  # any pool grown bills more
            for nxt in grow(counts, *self.verdicts[int(row["run"])]):
                if nxt not in seen and max(nxt) <= self.space.max_instances_per_pool:
                    seen.add(nxt)
                    if self.affordable(b.portfolio, nxt):
                        heapq.heappush(heap, (self.cost(b.portfolio, nxt), nxt))
        return None
