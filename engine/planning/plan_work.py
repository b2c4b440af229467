"""A plan's total simulated work, estimated before any simulation, and the bound on it.

`simulate` refuses one over-large run (`engine.serving.work_bound`); a plan is many runs, so a
form that accepts 600 req/s over a 300 s window with 400 simulations and the margin on asks for
hours of CPU from one click although each of its runs is within bounds. docs/definitions.md: "A plan or
sweep is bounded by the sum of its runs' estimates."

The estimate (`plan_work`): every planning run serves the same requests (the target rate over the
planning window), so each costs about the same events: the work bound's event estimate of the
planning scenario deployed in the heaviest mode the search allows (disaggregated runs take two
events a request more; colocated chunked prefill one per chunk). A plan runs at most
`max_simulations` of them (finalists, frontier runs and portfolios included); its margin repeats
the search with slowed chips (at most as many again) and reruns the choice twice (slowed and
faster). The verdict (`engine.planning.verdict`) adds, when risk-aware, a slowed search of at
most `max_simulations` runs, and for each chip group it checks (`verdict_groups`, at most
`MAX_GROUPS`) up to `VERIFY_TRIES` + 1 runs of its pick in the planning window and, when verified,
as many at the scenario's own window (twice as many risk-aware: each also at the bands' edge), where
the margin's two reruns then are too, and (risk-aware) the nominal cheapest once and up to
`CHEAPER_TRIES` other shapes where the would-be winner moved up; `full_runs` adds further full-window
runs. The sum is compared with `bounds.MAX_PLAN_EVENTS`, measured as about ten minutes of one core of
the reference machine (docs/planner.md, "Bounded work"). The estimate is an upper bound on the runs
(most plans stop well before their budget), not a prediction of the wall time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.core.numbers import round_down
from engine.planning.candidates import SearchSpace, planning_scenario, planning_warmup_s, with_deployment
from engine.planning.sizing import Kind, Shape
from engine.scenario.model import Scenario
from engine.serving.work_bound import estimate, in_words
from engine.serving.work_load import session_ramp

MIN_WINDOW_S = 10.0
"""The shortest planning window offered as a fix (the command line's lower bound on --duration-s)."""
MARGIN_RERUNS = 2
"""Single runs a margin adds besides its slowed search: the choice slowed, and faster."""
MAX_GROUPS = 12
"""The most chip groups a verdict checks and verifies (the cheapest nominal ones): a plan over many
chips with mixing allowed has a group per pairing, and each costs full-length runs."""
VERIFY_TRIES = 3
"""How many times a pick that fails its full-length run moves up before the verdict gives up on it."""
CHEAPER_TRIES = 2
"""How many other shapes the verdict checks over their full-length runs at the edge, cheapest first, where
the would-be winner moved up to hold there (`verdict_rows.Picks.cheaper`; each up to 2 x (`VERIFY_TRIES` + 1)
full-length runs)."""


LEVERS: dict[str, str] = {
    "target_rps": "target_rps",
    "duration_s": "space.duration_s (the planning window)",
    "max_simulations": "space.max_simulations",
    "margin": "plan without the margin",
    "risk": "risk_aware=False",
    "lift": "check_work=False",
}
"""What a refusal tells the Python caller to change; the CLI and the page pass their own names."""


class PlanWorkError(ScenarioError):
    """A plan whose estimated total work exceeds `bounds.MAX_PLAN_EVENTS`."""


@dataclass(frozen=True)
class PlanWork:
    """A plan's estimated work: events per run, runs at most, and the total against the limit."""

    requests: float
    """Requests of one planning run (target rate x planning window)."""
    events_per_run: float
    runs: int
    """Planning runs at most: the search's budget, doubled with the margin, plus its reruns and
    the verdict's (its slowed search and its picks' runs)."""
    full_runs: int
    events_per_full_run: float
    margin: bool
    limit: float
    risk_aware: bool = False
    fixed_runs: int = 0
    """Of `runs`, those that do not scale with `max_simulations` (the margin's reruns, the picks' runs)."""
    ramp_s: float = 0.0
    """The sessions' ramp each run starts with, unmeasured (`session_ramp`; 0 without sessions)."""
    warmup_s: float = 0.0
    """The scenario's own warm-up: a run keeps at most a quarter of its window of it, and its session
    lead is the ramp less that (`session_lead_s`)."""

    def _lead(self, window: float) -> float:
        return max(0.0, self.ramp_s - planning_warmup_s(self.warmup_s, window))

    def _shorter_window(self, window: float, factor: float) -> int:
        """The longest window whose run (the window and its session lead, which grows as the window's
        own warm-up shrinks) is `factor` of this one's: a run's events scale with both."""
        want = (window + self._lead(window)) * factor
        lo, hi = 0.0, window
        for _ in range(50):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mid + self._lead(mid) <= want else (lo, mid)
        return math.floor(lo)

    @property
    def events(self) -> float:
        """The plan's estimated events in all."""
        return self.events_per_run * self.runs + self.events_per_full_run * self.full_runs

    @property
    def over(self) -> bool:
        return self.events > self.limit

    @property
    def cpu_seconds(self) -> float:
        """The estimate as seconds of one core at the measured rate (`bounds.PLAN_EVENTS_PER_S`)."""
        return self.events / bounds.PLAN_EVENTS_PER_S

    def text(self) -> str:
        """One line: the estimate, its runs and the limit."""
        share = self.events / self.limit
        # two decimals near 1 ('1.0x the limit' read as within it: a review)
        of = (
            f"{share:.2f}x the limit"
            if 1 < share < 10
            else f"{share:.1f}x the limit"
            if share > 1
            else (f"{share:.0%} of the limit")
        )
        return (
            f"about {in_words(self.events)} simulated events ({self.runs:,} runs at most of about "
            f"{self.requests:,.0f} requests{', the margin included' if self.margin else ''}; "
            f"up to about {duration(self.cpu_seconds)} of one core, a bound: most searches stop far short of "
            f"it), {of} ({in_words(self.limit)})"
        )

    def problem(
        self, space: SearchSpace, target_rps: float, names: Mapping[str, str] | None = None
    ) -> str | None:
        """The refusal, naming what to reduce and to what, or None within the limit.

        Each lever offered brings the plan within the limit alone (the events scale about
        linearly with the rate, the window and the simulations). `names` relabels the levers
        (`LEVERS`' keys) for the command line or the page.
        """
        if not self.over:
            return None
        name = {**LEVERS, **(names or {})}
        factor = self.limit / self.events
        window = space.duration_s or 0.0
        # the window moves the planning runs only: the full-length runs keep the scenario's own window, so
        # scaling all of it ('--duration-s to 106 s') offered windows still over the limit (a review)
        room = self.limit - self.events_per_full_run * self.full_runs
        shorter = self._shorter_window(window, room / (self.events_per_run * self.runs)) if room > 0 else 0
        searches = self.runs - self.fixed_runs
        per_sim = (
            self.limit
            - self.events_per_full_run * self.full_runs
            - self.events_per_run * (self.runs - searches)
        )
        sims = math.floor(per_sim / (self.events_per_run * searches / space.max_simulations))
        fixes = [
            f"{name['target_rps']} to {round_down(target_rps * factor):g} req/s",  # never over the limit
            f"{name['duration_s']} to {shorter} s" if shorter >= MIN_WINDOW_S else "",
            f"{name['max_simulations']} to {sims}" if sims >= 1 else "",
            name["margin"]
            if self.margin
            and self.events - self.events_per_run * (space.max_simulations + MARGIN_RERUNS) <= self.limit
            else "",
            name["risk"]
            if self.risk_aware and self.events - self.events_per_run * space.max_simulations <= self.limit
            else "",
        ]
        return (
            f"plan work: {self.text()}; lower one of: "
            + ", ".join(f for f in fixes if f)
            + f" (or lift the limit: {name['lift']})"
        )

    def to_json(self) -> dict[str, float | int | bool]:
        return {
            "events": self.events,
            "limit": self.limit,
            "runs": self.runs,
            "events_per_run": self.events_per_run,
            "requests_per_run": self.requests,
            "full_runs": self.full_runs,
            "events_per_full_run": self.events_per_full_run,
            "risk_aware": self.risk_aware,
            "margin": self.margin,
            "cpu_seconds": self.cpu_seconds,
        }


def duration(seconds: float) -> str:
    """A rough duration: 40 s, 12 min, 3.5 h."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _events(scenario: Scenario, space: SearchSpace) -> tuple[float, float]:
    """(requests, events) of one run of `scenario`, in the heaviest mode the search allows."""
    chip = scenario.deployment.pools[0].hardware
    kind = Kind(chip, 1)
    most, n = 0.0, 0.0
    for mode in space.modes:
        deployed = with_deployment(
            scenario, Shape(mode, kind, kind), (1, 1 if mode == "disaggregated" else 0)
        )
        est = estimate(deployed)
        most, n = max(most, est.events), est.requests
    return n, most


def plan_work(
    scenario: Scenario,
    target_rps: float,
    space: SearchSpace | None = None,
    *,
    margin: bool = False,
    full_runs: int = 0,
    risk_aware: bool = False,
    verify: bool = False,
) -> PlanWork:
    """The estimated work of planning `scenario` at `target_rps` over `space` (no simulation).

    `risk_aware` and `verify` count the verdict's runs as `plan` makes them with the same options.
    Costs a few milliseconds: the requests are estimated from the workload's settings, not drawn.
    """
    space = space or SearchSpace()
    base = planning_scenario(scenario, target_rps, space.duration_s)
    n, per_run = _events(base, space)
    groups = verdict_groups(scenario, space) if risk_aware or verify else 0
    picks = groups * (VERIFY_TRIES + 1)
    searches = space.max_simulations * (1 + margin + risk_aware)
    # verified, each pick's full-length run is made as modelled and, risk-aware, again at the bands'
    # edge, and the margin reruns the choice over the window its figures are quoted from
    reruns = MARGIN_RERUNS if margin else 0
    # the picks' planning runs past the budget, as `verdict.decide` allows them (risk-aware, with the
    # other shapes `Picks.cheaper` may try)
    fixed = picks + groups * (CHEAPER_TRIES if risk_aware else 0) + (0 if verify else reruns)
    # (risk-aware, the nominal cheapest once more at full length, for its premium over the same window, and
    # the other shapes checked where the would-be winner moved up to hold at the edge)
    cheaper = 1 + CHEAPER_TRIES * 2 * (VERIFY_TRIES + 1) if risk_aware else 0
    full_runs += picks * (1 + risk_aware) + reruns + cheaper if verify else 0
    per_full = _events(planning_scenario(scenario, target_rps, None), space)[1] if full_runs else 0.0
    limit = float(bounds.MAX_PLAN_EVENTS)
    ramp = session_ramp(scenario).seconds
    args = (margin, limit, risk_aware, fixed, ramp, scenario.warmup_s)
    return PlanWork(n, per_run, searches + fixed, full_runs, per_full, *args)


def verdict_groups(scenario: Scenario, space: SearchSpace) -> int:
    """How many chip groups the verdict may check (`engine.planning.verdict.group_of`): one per chip,
    one per prefill -> decode pairing of two chips when mixing is allowed, the portfolios; at most
    `MAX_GROUPS`."""
    n = len(space.hardware or {p.hardware for p in scenario.deployment.pools})
    pairs = n * (n - 1) if space.mixed_hardware and "disaggregated" in space.modes else 0
    return min(MAX_GROUPS, n + pairs + (1 if space.portfolio else 0))


def check_plan_work(
    scenario: Scenario,
    target_rps: float,
    space: SearchSpace | None = None,
    *,
    margin: bool = False,
    full_runs: int = 0,
    risk_aware: bool = False,
    verify: bool = False,
    names: Mapping[str, str] | None = None,
) -> PlanWork:
    """`plan_work`, or PlanWorkError naming the figure and what to reduce when over the limit."""
    space = space or SearchSpace()
    work = plan_work(
        scenario, target_rps, space, margin=margin, full_runs=full_runs, risk_aware=risk_aware, verify=verify
    )
    problem = work.problem(space, target_rps, names)
    if problem:
        raise PlanWorkError(problem)
    return work
