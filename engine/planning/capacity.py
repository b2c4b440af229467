"""Capacity: the highest arrival rate at which a scenario's deployment passes its SLOs.

Two definitions of passing (`engine.planning.rules.run_passes`): ``percentile`` (the default,
MLPerf's server-scenario rule), every class with its TTFT and TPOT within target at its SLO
percentile; ``attainment`` (DistServe's goodput), at least a share X (default 90%) of all
requests each meeting its class's TTFT and TPOT targets. Bisection on
`workload.arrival.rate_rps` from a bracket the cost model suggests (`analytic_capacity_rps`),
within a fixed number of simulations; every run is kept. An unsustainable run (its backlog grows
through the window) fails under either rule, so the search stops below the rate it cannot sustain.
The runs keep the scenario's faults at their times (a plan leaves them out: it is for the healthy
fleet), so the capacity of a drill is the deployment's with its losses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal
from typing import Any

import pandas as pd

from engine.catalog.entries import Catalog
from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.core.no_bool import real_number, whole_number
from engine.core.numbers import rate_down, rate_up
from engine.planning.candidates import planning_scenario, session_lead_s
from engine.planning.plan_notes import lead_note
from engine.planning.rules import DEFAULT_ATTAINMENT, Rule, check_rule, rule_demand, rule_text, run_passes
from engine.planning.search import Progress
from engine.planning.sizing import demand, instance_of, instance_rates
from engine.scenario import codec as scenario_io
from engine.scenario.model import Scenario
from engine.scenario.resolve import scenario_catalog
from engine.serving import work_bound
from engine.serving.run import simulate
from engine.serving.summary import Summary, classes_pass, shortfall_rps
from engine.serving.workload import generate


@dataclass(frozen=True)
class Capacity:
    """The highest tested arrival rate that passed under the rule, and the runs that showed it.

    `capacity_rps` is 0 when even the lowest rate tried failed; `failed_rps` is the lowest rate
    seen failing whose window held a request (a window with none is not judged: it neither passes nor
    fails; None if none failed: the true capacity may be higher). `work_bound_rps` is the
    highest rate the work bound lets a run of this window simulate, where that capped the search
    below the request-row limit (None where it did not); `note` says in words what bounded the
    answer (a given bound that passed or failed, the work bound), empty when nothing did. `runs` has one row per
    simulation: rate, whether it passed under `rule`, whether every class passed at its
    percentile, its shortfall in req/s when unsustainable (None when it keeps up: such a run never
    passes, `engine.serving.saturation`), goodput and SLO attainment.
    """

    capacity_rps: float
    failed_rps: float | None
    estimate_rps: float
    runs: pd.DataFrame
    simulations: int
    rule: Rule = "percentile"
    attainment: float = DEFAULT_ATTAINMENT
    work_bound_rps: float | None = None
    note: str = ""
    seeds: int = 1
    """The seeds a rate had to pass in, each of them (the scenario's seed and the next ones)."""
    ran_out: bool = False
    """Whether the search stopped at its simulations' budget before any rate passed or it reached rates
    whose windows hold no request: the capacity is then below `failed_rps`, not 0 (a review)."""

    def to_json(self) -> dict[str, Any]:
        """Plain data for the CLI."""
        return {
            "capacity_rps": self.capacity_rps,
            "failed_rps": self.failed_rps,
            "estimate_rps": self.estimate_rps,
            "rule": self.rule,
            "attainment": self.attainment,
            "passes_when": rule_text(self.rule, self.attainment),
            "simulations": self.simulations,
            "work_bound_rps": self.work_bound_rps,
            "note": self.note,
            "ran_out": self.ran_out,
            "seeds": self.seeds,
            "runs": self.runs.to_dict(orient="records"),
        }


def analytic_capacity_rps(scenario: Scenario, catalog: Catalog | None = None) -> float:
    """The cost model's (optimistic) highest rate for the scenario's own deployment."""
    return _analytic(scenario, scenario_catalog(scenario, catalog))[0]


def _analytic(
    scenario: Scenario, cat: Catalog, rule: Rule = "percentile", attainment: float = DEFAULT_ATTAINMENT
) -> tuple[float, list[str]]:
    """The cost model's (optimistic) highest rate for the scenario's own deployment, and what it finds
    missed at any load, pool by pool (`instance_rates`' problems under the rule's relaxed demand, as the
    planner prunes with: a prompt alone past its TTFT target at its percentile, a decode step at batch 1
    past TPOT)."""
    d = demand(scenario, generate(scenario))
    judged = rule_demand(d, rule, attainment)
    prefill_rps = decode_rps = mixed_rps = 0.0
    roles = {p.role for p in scenario.deployment.pools}
    problems: list[str] = []
    for p in scenario.deployment.pools:
        inst = instance_of(scenario, cat, p.hardware, p.tp, p.pp, p.dp, p.ep)
        r = instance_rates(inst, d)
        per_p = 1.0 / r.prefill_s_per_request if r.prefill_s_per_request > 0 else math.inf
        per_d = r.decode_tokens_per_s / max(d.mean_output_tokens, 1e-9)
        if p.role == "prefill":
            prefill_rps += p.count * per_p
        elif p.role == "decode":
            decode_rps += p.count * per_d
        else:
            mixed_rps += p.count * min(per_p, per_d)
        rj = r if judged is d else instance_rates(inst, judged)
        problems += [
            f"{p.name}: {why}"
            for role, why in (("prefill", rj.prefill_problem), ("decode", rj.decode_problem))
            if why and p.role in (role, "mixed")
        ]
    rps = mixed_rps if roles == {"mixed"} else min(prefill_rps, decode_rps)
    return rps, list(dict.fromkeys(problems))


MIN_BEYOND = 5
"""The requests a capacity's run must hold beyond its SLO percentile (at p90, 50 requests in the window)
for its pass to be judged (`_thin_note`): a 120 s window at 0.053 req/s held six, all within target, and
read as a capacity although the TTFT target was missed nearly idle (an infrastructure engineer's review)."""


def _may_miss(scenario: Scenario, rule: Rule, attainment: float) -> float:
    """The share of requests a run may miss and still pass: past the tightest class percentile, or 1 - X."""
    if rule == "attainment":
        return 1 - attainment
    return 1 - max(c.slo.percentile for c in scenario.workload.classes) / 100


def _thin_note(
    runs: pd.DataFrame, capacity_rps: float, beyond: float, problems: Sequence[str], window_s: float
) -> str:
    """Where the capacity's run held too few requests beyond its percentile (`beyond`: the share a pass
    may miss) to judge it, that it did, with what the cost model finds missed at any load; else ''."""
    held = runs.loc[runs["rate_rps"] == capacity_rps, "requests"] if capacity_rps > 0 else None
    n = int(held.iloc[0]) if held is not None and len(held) else None
    missed = f"; the cost model finds a target missed at any load ({'; '.join(problems)})" if problems else ""
    if n is not None and n * beyond < MIN_BEYOND:
        return (
            f"the capacity found rests on {n:,} request{'s' if n != 1 else ''} in its {window_s:g} s window, of "
            f"which a pass may miss {beyond:.0%} (under {MIN_BEYOND} requests): its pass is chance, not capacity"
            f"{missed} (a longer window, --duration-s, judges more requests)"
        )
    return f"no rate tried passed{missed}" if capacity_rps == 0 and problems else ""


def _bracket_and_bisect(
    passes: Callable[[float], bool],
    budget_left: Callable[[], bool],
    probe: float,
    low_rps: float | None,
    high_rps: float | None,
    top: float,
    rel_tol: float,
) -> None:
    """Run each given bound, then double or halve from `probe` until a passing and a failing rate
    bracket the capacity (at most `top`), then bisect until the bracket is within `rel_tol`;
    `passes` records every run.

    A given `high_rps` that passes ends the search (the capacity is at least it); a given
    `low_rps` that fails becomes the failing end, and the search halves below it."""
    lo: float | None = None
    hi: float | None = None
    if high_rps is not None:
        if passes(high_rps):
            return
        hi = high_rps
    if low_rps is not None and budget_left():
        if passes(low_rps):
            lo = low_rps
        else:
            hi = low_rps
    if lo is not None and hi is None:
        probe = min(top, lo * 2.0)
    elif hi is not None and lo is None:
        probe = hi / 2.0
    while budget_left() and (lo is None or hi is None):
        if lo is not None and lo >= top:
            break
        if passes(probe):
            lo = probe
            probe = min(top, probe * 2.0 if hi is None else (probe + hi) / 2)
        else:
            hi = probe
            probe = probe / 2.0 if lo is None else (probe + lo) / 2
    while lo is not None and hi is not None and budget_left() and (hi - lo) > rel_tol * hi:
        mid = (lo + hi) / 2.0
        if passes(mid):
            lo = mid
        else:
            hi = mid


PROBE_FIGURES = 6
"""Significant figures of each rate the capacity search simulates: the rate `capacity` prints, whole."""


def printed_rate(rate: float) -> float:
    """`rate` cut (never raised: a probe stays within the work bound) to `PROBE_FIGURES` significant figures:
    each probe runs at it, so that `run` at the printed rate draws the same requests ('15.768 req/s passes
    (89.6%)' reran at 90.6%, only 15.767507899958868 gave 89.6%: a review)."""
    if not (math.isfinite(rate) and rate > 0):
        return rate
    # in decimal, from the rate's shortest repr: 8.2 * 1e5 is 819999.99... in binary, which floored to 8.19999
    step = Decimal(10) ** (math.floor(math.log10(rate)) - PROBE_FIGURES + 1)
    return float(Decimal(repr(rate)).quantize(step, rounding=ROUND_FLOOR))


WORK_STEP = 0.99
"""How far below a rate the search tries next where the drawn requests of a run at it exceed the
work bound that their expectation met (a few percent on a short window)."""


def work_bound_rps(base: Scenario, top: float) -> float | None:
    """The highest rate up to `top` whose run of `base` the work bound admits, or None where `top`
    itself is admitted or no rate is (a run then says why: the bound is not the rate's).

    Bisection on the expected work (`engine.serving.work_bound.estimate`, milliseconds a rate), then
    down by `WORK_STEP` until the requests a run at the rate draws are admitted, as `simulate`
    checks them."""

    def at(rate: float) -> Scenario:
        return scenario_io.apply_overrides(base, {"workload.arrival.rate_rps": rate})

    if not work_bound.estimate(at(top)).problems():
        return None
    lo, hi = 0.0, top
    for _ in range(30):  # the work grows with the rate: bisect to 1e-9 of `top`
        mid = (lo + hi) / 2.0
        if work_bound.estimate(at(mid)).problems():
            hi = mid
        else:
            lo = mid
    for _ in range(20):
        if lo <= 0:
            return None
        run = at(lo)
        if not work_bound.estimate(run, generate(run)).problems():
            return lo
        lo *= WORK_STEP
    return None


def _check_search(
    max_simulations: int, rel_tol: float, low_rps: float | None, high_rps: float | None
) -> None:
    """Refuse a search's settings outside their ranges, naming the field."""
    if not whole_number(max_simulations) or not 2 <= max_simulations <= 100:
        # (2.5 ran 3 simulations: a review)
        raise ScenarioError(f"max_simulations: a whole number in [2, 100] (got {max_simulations!r})")
    if not real_number(rel_tol) or not 0 < rel_tol < 1:
        raise ScenarioError(f"rel_tol: must be in (0, 1) (got {rel_tol!r})")
    for name, v in (("low_rps", low_rps), ("high_rps", high_rps)):  # ('5' died in a TypeError: a review)
        if v is not None and not (real_number(v) and math.isfinite(v) and v > 0):
            raise ScenarioError(f"{name}: must be a positive rate in req/s (got {v!r})")
    if low_rps is not None and high_rps is not None and low_rps >= high_rps:
        raise ScenarioError(
            f"low_rps ({low_rps:g} req/s) must be below high_rps ({high_rps:g} req/s): they bracket the search"
        )


def _bracket_notes(
    capacity_rps: float,
    failed_rps: float | None,
    low_rps: float | None,
    high_rps: float | None,
    work_top: float | None,
    duration_s: float,
    lead: str = "",
) -> list[str]:
    """How the runs were made (`lead`: a multi-turn sessions' lead before each window, `lead_note`)
    and what bounded the answer: a given bound that passed or failed, or the work bound's top."""
    notes = [lead] if lead else []
    if high_rps is not None and failed_rps is None and capacity_rps >= high_rps:
        notes.append(
            f"high_rps {high_rps:.3g} req/s passed: the capacity is at least that (not searched above)"
        )
    if low_rps is not None and failed_rps is not None and failed_rps <= low_rps:
        below = (
            f"{rate_down(capacity_rps)} req/s passed" if capacity_rps > 0 else "no rate tried below it passed"
        )
        notes.append(f"low_rps {low_rps:.3g} req/s failed: the capacity is below it ({below})")
    if work_top is not None and failed_rps is None and capacity_rps >= work_top:
        notes.append(
            f"the search stopped at {work_top:.3g} req/s, the most the work bound lets a "
            f"{duration_s:g} s run simulate: the capacity may be higher (a shorter window, "
            "or check_work=False / --no-work-limit, lifts it)"
        )
    return notes


def _below(failed_rps: float | None) -> str:
    return f"the capacity is below {rate_up(failed_rps or 0.0)} req/s, not 0 (more simulations search lower)"


def _ran_out(runs: pd.DataFrame, capacity_rps: float, failed_rps: float | None, max_simulations: int) -> bool:
    """Whether the search spent its simulations before any rate passed, and above the rates whose
    windows hold no request (`Capacity.ran_out`)."""
    return (
        not capacity_rps
        and failed_rps is not None
        and len(runs) >= max_simulations
        and not runs["slo_attainment"].isna().any()
    )


RUN_COLUMNS = (
    "rate_rps",
    "passes",
    "classes_pass",
    "shortfall_rps",
    "rising_rps",
    "standing_requests",
    "goodput_rps",
    "slo_attainment",
    "requests",
    "seed",
    "seeds_passed",
    "classes_at_percentile",
    "classes_highest_over_seeds",
)
"""The capacity search's table of the rates it simulated (`_row`)."""


def _row(rate: float, ok: bool, s: Summary) -> dict[str, Any]:
    """One rate the capacity search simulated: whether it passed, and its figures."""
    return {
        "rate_rps": rate,
        "passes": ok,
        "classes_pass": classes_pass(s),
        "shortfall_rps": shortfall_rps(s),
        "rising_rps": rising["rise_rps"] if (rising := s.get("queue_rising")) else None,  # not counted
        "standing_requests": stood["standing_requests"] if (stood := s.get("at_capacity")) else None,  # fails
        "goodput_rps": s["goodput_rps"],
        "slo_attainment": s["slo_attainment"],
        "requests": s["requests"]["total"],
        # each class's latencies at its SLO percentile: what `capacity` holds against its latency bands
        "classes_at_percentile": _at_percentile(s),
    }


def _at_percentile(s: Summary) -> dict[str, dict[str, Any]]:
    """Each class's TTFT and TPOT at its SLO percentile in a run's summary."""
    keys = ("ttft_ms_at_percentile", "tpot_ms_at_percentile")
    return {name: {k: c.get(k) for k in keys} for name, c in (s.get("classes") or {}).items()}


def _probe(
    at: Scenario,
    cat: Catalog,
    seeds: int,
    check_work: bool,
    slowdown: Mapping[str, float] | None,
    rule: Rule,
    attainment: float,
) -> dict[str, Any]:
    """One rate's row: its runs with seeds seed, seed + 1, ... until one fails or `seeds` passed, the
    figures the deciding seed's (the failing one, else the last), and each class's highest latencies over
    the seeds run apart (`classes_highest_over_seeds`, each figure's own highest)."""
    worst: dict[str, dict[str, Any]] = {}  # each class's highest latencies over the seeds run
    for k in range(seeds):
        run = at if k == 0 else scenario_io.apply_overrides(at, {"seed": at.seed + k})
        res = simulate(run, cat, check_work=check_work, slowdown=slowdown)
        worst = _worst(worst, _at_percentile(res.summary))
        # a probe whose queue is still rising at its window's end is not counted as sustained: a
        # longer window may mark it unsustainable (H200s at 29.5 req/s passed, unsustainable at 240 s);
        # nor one at its capacity (`run_passes` fails it)
        ok = run_passes(res.summary, rule, attainment) and not res.summary.get("queue_rising")
        if not ok:
            break
    row = _row(at.workload.arrival.rate_rps, ok, res.summary) | {"seed": run.seed, "seeds_passed": k + ok}
    return row | {"classes_highest_over_seeds": worst}


def _worst(
    worst: dict[str, dict[str, Any]], now: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Each class's latencies at its percentile, the higher of `worst` and `now` (a capacity's note quoted the
    last seed's of three, where `run` at that rate gives the first's: a code review)."""
    out = {name: dict(c) for name, c in worst.items()}
    for name, c in now.items():
        mine = out.setdefault(name, {})
        for key, v in c.items():
            if v is not None and (mine.get(key) is None or v > mine[key]):
                mine[key] = v
    return out


def capacity(
    scenario: Scenario,
    *,
    max_simulations: int = 10,
    rel_tol: float = 0.03,
    low_rps: float | None = None,
    high_rps: float | None = None,
    duration_s: float | None = None,
    catalog: Catalog | None = None,
    progress: Progress | None = None,
    check_work: bool = True,
    rule: Rule = "percentile",
    attainment: float = DEFAULT_ATTAINMENT,
    slowdown: Mapping[str, float] | None = None,
    seeds: int = 1,
) -> Capacity:
    """Bisection on `workload.arrival.rate_rps` for the highest rate that passes under `rule`, in
    every one of `seeds` seeds (the scenario's and the next ones) where more than one.

    ``percentile``: every class passes at its SLO percentile. ``attainment``: at least
    `attainment` (a share in (0, 1]) of the requests meet their class's SLO. `check_work=False`
    lifts the work bound on each run (engine.serving.work_bound), as `simulate`'s does;
    `slowdown` (chip id -> e) runs every chip 1 + e times as long (`simulate`'s; the CLI's margin runs
    the two of `engine.explain.margin.run_edges(scenario)`, each chip's throughput band's edges)."""
    check_rule(rule, attainment)
    _check_search(max_simulations, rel_tol, low_rps, high_rps)
    if not whole_number(seeds) or not 1 <= seeds <= bounds.MAX_REPLICATIONS:
        raise ScenarioError(f"seeds: a whole number from 1 to {bounds.MAX_REPLICATIONS} (got {seeds!r})")
    base = planning_scenario(scenario, scenario.workload.arrival.rate_rps, duration_s, keep_faults=True)
    cat = scenario_catalog(base, catalog)
    top = min(bounds.MAX_RATE_RPS, 0.95 * bounds.MAX_REQUESTS / base.duration_s)
    work_top = work_bound_rps(base, top) if check_work else None
    top = printed_rate(top if work_top is None else work_top)  # the bounds as probed: the notes compare them
    high_rps = None if high_rps is None else min(printed_rate(high_rps), top)
    if low_rps is not None and low_rps >= top:
        low_rps = None  # at or past the most that can be simulated: the search starts at `top`
    estimate, problems = _analytic(base, cat, rule, attainment)
    rows: list[dict[str, Any]] = []

    def passes(rate: float) -> bool:
        rate = printed_rate(rate)  # as printed, so that `run` at it draws the same requests
        if progress:
            progress(len(rows), max_simulations, f"{rate:.3g} req/s")
        at = scenario_io.apply_overrides(base, {"workload.arrival.rate_rps": rate})
        row = _probe(at, cat, seeds, check_work, slowdown, rule, attainment)
        rows.append(row)
        return bool(row["passes"])

    probe = min(top, estimate if math.isfinite(estimate) and estimate > 0 else 1.0)
    _bracket_and_bisect(passes, lambda: len(rows) < max_simulations, probe, low_rps, high_rps, top, rel_tol)
    runs = pd.DataFrame(rows, columns=RUN_COLUMNS)
    ok = runs.loc[runs["passes"], "rate_rps"]
    # a rate whose window held no request failed nothing: it was not judged ('fails at 0.0013 req/s')
    bad = runs.loc[~runs["passes"].astype(bool) & runs["slo_attainment"].notna(), "rate_rps"]
    capacity_rps = float(ok.max()) if len(ok) else 0.0
    failed_rps = float(bad.min()) if len(bad) else None
    lead = lead_note(base, early) if (early := session_lead_s(scenario, duration_s)) > 0 else ""
    stopped = None if work_top is None else top  # (as probed)
    notes = _bracket_notes(capacity_rps, failed_rps, low_rps, high_rps, stopped, base.duration_s, lead)
    if ran_out := _ran_out(runs, capacity_rps, failed_rps, max_simulations):
        notes.append(
            f"no rate tried passed within the {max_simulations} simulations allowed: {_below(failed_rps)}"
        )
    if thin := _thin_note(
        runs, capacity_rps, _may_miss(base, rule, attainment), problems, base.duration_s - early
    ):
        notes.append(thin)
    return Capacity(
        capacity_rps=capacity_rps,
        failed_rps=failed_rps,
        estimate_rps=estimate,
        runs=runs,
        simulations=int((runs["seeds_passed"] + ~runs["passes"].astype(bool)).sum()),
        rule=rule,
        attainment=attainment,
        work_bound_rps=work_top,
        note="; ".join(notes),
        ran_out=ran_out,
        seeds=seeds,
    )
