"""The front door: `simulate(scenario) -> SimResult`, and replications over seeds.

A SimResult is a plain value: the scenario, the per-request table, the per-pool time series,
the summary figures, and what the run cost to compute (events, wall time). It carries the seed
and the engine version so exported results say where they came from.

Before simulating, `simulate` estimates the run's work from its drawn requests and refuses one
over the documented bounds (`engine.serving.work_bound`); `check_work=False` lifts that for trusted
local runs (the CLI's ``--no-work-limit``).
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.catalog.entries import Catalog
from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.core.no_bool import real_number, whole_number
from engine.scenario.model import Scenario, validate
from engine.scenario.resolve import Resolved, resolve, scenario_catalog, slowed
from engine.serving import metrics, saturation, work_bound
from engine.serving.ledger import Records
from engine.serving.sim import Simulation
from engine.serving.summary import Summary, rate_span_s
from engine.serving.timeline import OverTime
from engine.serving.workload import Requests, generate

if TYPE_CHECKING:
    import pandas as pd

ENGINE_VERSION = "0.1.0"
COLLECT_AFTER = 50_000
"""Requests from which `simulate` collects the finished simulation's cycles before computing the
summary (a few tens of ms at a million requests; smaller runs leave it to Python's collector)."""


class RunTables:
    """A run's per-request table and time series, laid out the first time either is read.

    Laying them out loads pandas and costs more than the summary, which needs neither; so a run
    that only reports its summary (``python -m engine run --json``, a planner's sweep) never
    does. Pickled (Streamlit's cache, process pools), it carries the tables themselves.
    """

    def __init__(self, resolved: Resolved, rec: Records, columns: dict[str, Any]) -> None:
        self.rows = len(rec.outcome)
        self._source: tuple[Resolved, Records, dict[str, Any]] | None = (resolved, rec, columns)
        self._requests: pd.DataFrame | None = None
        self._timeseries: pd.DataFrame | None = None
        self._over_time: OverTime | None = None

    def requests(self) -> pd.DataFrame:
        """One row per request (`engine.serving.tables.request_table`)."""
        if self._requests is None:
            self._lay_out()
        assert self._requests is not None
        return self._requests

    def timeseries(self) -> pd.DataFrame:
        """Per pool and time bin (`engine.serving.tables.timeseries`)."""
        if self._timeseries is None:
            self._lay_out()
        assert self._timeseries is not None
        return self._timeseries

    def over_time(self) -> OverTime | None:
        """The run minute by minute, when its window spans several minutes (`engine.serving.tables.over_time`)."""
        if self._source is not None:
            self._lay_out()
        return self._over_time

    def _lay_out(self) -> None:
        from engine.serving import tables  # pandas comes in here, when a table is first read

        assert self._source is not None
        resolved, rec, columns = self._source
        self._requests = tables.request_table(columns)
        self._timeseries = tables.timeseries(resolved, rec)
        self._over_time = tables.over_time(resolved, rec, columns)
        self._source = None

    def __getstate__(self) -> dict[str, Any]:
        if self._source is not None:
            self._lay_out()
        return self.__dict__


@dataclass(frozen=True)
class SimResult:
    """Everything one simulation produced.

    `requests` and `timeseries` are laid out (and pandas loaded) when first read (`RunTables`).
    """

    scenario: Scenario
    summary: Summary
    events: int
    wall_s: float
    tables: RunTables = field(repr=False, compare=False)
    engine_version: str = ENGINE_VERSION
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def requests(self) -> pd.DataFrame:
        """One row per request: class, times, tokens, instances, outcome, latencies, met_slo."""
        return self.tables.requests()

    @property
    def timeseries(self) -> pd.DataFrame:
        """Per pool and time bin: utilisations, KV memory, queue depth and running batch."""
        return self.tables.timeseries()

    @property
    def over_time(self) -> OverTime | None:
        """Per minute: SLO attainment, instances, busy fraction and power per pool, the autoscalers'
        decisions (None for a window under five minutes)."""
        return self.tables.over_time()

    def to_json(self) -> dict[str, Any]:
        """The summary document with provenance (what `python -m engine run --json` prints)."""
        doc = dict(self.summary)
        doc["sim"] = {
            "wall_s": self.wall_s,
            "events": self.events,
            "events_per_request": self.events / max(self.tables.rows, 1),
            "requests_simulated": self.tables.rows,
        }
        doc["scenario"] = {"name": self.scenario.name, "seed": self.scenario.seed}
        doc["engine_version"] = self.engine_version
        return doc


def _check_slowdown(scenario: Scenario, catalog: Catalog | None, slowdown: Mapping[str, float]) -> None:
    """Refuse a slowdown that names no chip of the catalog: it was never applied, unsaid (a review)."""
    if not isinstance(slowdown, Mapping) or (bad := [k for k, e in slowdown.items() if not real_number(e)]):
        got = repr(slowdown[bad[0]]) if isinstance(slowdown, Mapping) else type(slowdown).__name__
        raise ScenarioError(f"slowdown: chip id -> a number e above -1, e.g. {{'h100-sxm': 0.3}} (got {got})")
    known = scenario_catalog(scenario, catalog).hardware
    if unknown := sorted(str(k) for k in slowdown if k not in known):
        raise ScenarioError(
            f"slowdown: no chip {', '.join(map(repr, unknown))} in the catalog (a slowdown maps a chip's id to e "
            "above -1, each of its iterations taking 1 + e times as long, e.g. {'h100-sxm': 0.3})"
        )


def _check_requests(scenario: Scenario, requests: Requests) -> None:
    """Refuse requests that cannot be this scenario's: not `Requests`, a class it lacks, arrivals past its
    window (a 300 s draw run in a 30 s scenario billed and counted what the scenario never said, and a
    three-class draw in a one-class scenario raised an IndexError: a review)."""
    if not isinstance(requests, Requests):  # a result's table, for one
        raise ScenarioError(
            f"requests: the Requests that engine.serving.workload.generate(scenario) draws, not a "
            f"{type(requests).__name__} (the same seed draws the same requests: leave it out)"
        )
    n_classes = len(scenario.workload.classes)
    if len(requests) and int(requests.cls.max()) >= n_classes:
        raise ScenarioError(
            f"requests: they name class {int(requests.cls.max())} where this scenario has {n_classes}: draw them "
            "from this scenario (engine.serving.workload.generate(scenario))"
        )
    last = float(requests.arrival_s.max()) if len(requests) else 0.0
    if last > scenario.duration_s:
        raise ScenarioError(
            f"requests: they arrive until {last:,.1f} s, past this scenario's {scenario.duration_s:g} s window: draw "
            "them from this scenario (engine.serving.workload.generate(scenario))"
        )


def simulate(
    scenario: Scenario,
    catalog: Catalog | None = None,
    requests: Requests | None = None,
    *,
    check_work: bool = True,
    slowdown: Mapping[str, float] | None = None,
) -> SimResult:
    """Run one scenario. `requests` may be given to replay the exact same requests: the `Requests`
    that `engine.serving.workload.generate(scenario)` draws (a run draws them from the scenario's
    seed, so two runs of one seed already replay the same requests), not a result's table.

    A run whose estimated work exceeds the bounds raises `work_bound.WorkBoundError` (a
    ScenarioError) before it starts, unless `check_work` is False. `slowdown` (chip id -> e)
    runs each chip 1 + e times slower than its profile (`resolve.slowed`: the planner's margin).
    """
    if not isinstance(scenario, Scenario):  # a preset's name, a path, a dict: say what it takes
        raise ScenarioError(
            f"scenario: a Scenario (engine.load_preset('chat-colocated'), engine.load_scenario(path)), not a "
            f"{type(scenario).__name__}"
        )
    if catalog is not None and not isinstance(catalog, Catalog):  # ('x' died in an AttributeError: a review)
        raise ScenarioError(
            f"catalog: a Catalog (engine.load_catalog()) or None, not a {type(catalog).__name__}"
        )
    # checked again, not trusted: one made with pydantic's `model_copy` skips its checks (a warm-up past the
    # window read a window of -20 s and a goodput of -0.0: a review); the run keeps the object it was given
    validate(scenario.model_dump(warnings=False))
    resolved = resolve(scenario, catalog)
    if slowdown:
        _check_slowdown(scenario, catalog, slowdown)
        resolved = slowed(resolved, slowdown)
    if requests is not None:
        _check_requests(scenario, requests)
    reqs = requests if requests is not None else generate(scenario)
    if check_work:
        work_bound.check(scenario, reqs)
    t0 = time.perf_counter()
    rec = Simulation(resolved, reqs).run()
    wall = time.perf_counter() - t0
    if len(reqs) >= COLLECT_AFTER:
        # the finished run's per-request state sits in reference cycles (instances and the
        # simulation hold each other): free it before the summary's arrays take its place
        gc.collect()
    res = result_of(resolved, reqs, rec, wall)
    if (source := getattr(reqs, "source", None)) is not None and hasattr(source, "window"):
        res.extra["trace_window"] = source.window()  # how the file met the window (`engine.notes`)
    return res


def result_of(resolved: Resolved, reqs: Requests, rec: Records, wall: float) -> SimResult:
    """The SimResult of a finished simulation: summary and provenance; its tables are laid out on first read."""
    n = len(rec.outcome)
    if rec.kept is not None:  # multi-turn sessions: the turns sent, at the times they were sent
        reqs = reqs.as_sent(rec.kept, rec.arrival_s, rec.prompt_tokens)
    elif n < len(reqs):  # a closed loop issued fewer requests than were drawn
        reqs = Requests(
            arrival_s=rec.arrival_s,
            cls=reqs.cls[:n],
            prompt_tokens=reqs.prompt_tokens[:n],
            output_tokens=reqs.output_tokens[:n],
            prefix_group=reqs.prefix_group[:n],
            prefix_tokens=reqs.prefix_tokens[:n],
            session=reqs.session[:n],
            reused_tokens=reqs.reused_tokens[:n],
            block_tokens=reqs.block_tokens,
        )
    columns = metrics.request_columns(resolved, reqs, rec)
    # unsustainable: None when the run reaches a steady state; else its shortfall (engine.serving.saturation)
    shortfall, rising, standing = saturation.judged(resolved.scenario, rec, resolved.first_token_s)
    if shortfall is not None and not shortfall.get("at_client"):  # which latencies grow with it
        decode = {"tpot": columns["tpot_s"], "max_tbt": columns["max_tbt_s"]}
        if shortfall.get("backlog") == "decoding":  # no queue before the first token: TTFT may stay level
            decode = {"ttft": columns["ttft_s"], **decode}
        window = metrics.measured_mask(resolved.scenario, columns)  # what the summary's figures are over
        pcts = np.array([c.slo.percentile for c in resolved.scenario.workload.classes])  # by class index
        shortfall["steady"] = saturation.steady(
            resolved.scenario, rec.arrival_s, reqs.cls[:n], decode, window, pcts
        )
    return SimResult(
        scenario=resolved.scenario,
        summary=metrics.summary(resolved, rec, columns, shortfall, rising, standing),
        events=rec.events,
        wall_s=wall,
        tables=RunTables(resolved, rec, columns),
    )


# --- replications -------------------------------------------------------------------------

_T975 = {
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    12: 2.179,
    15: 2.131,
    20: 2.086,
    25: 2.060,
    30: 2.042,
    40: 2.021,
    60: 2.000,
    120: 1.980,
}


def t_quantile(dof: int) -> float:
    """Two-sided 95% Student t quantile for `dof` degrees of freedom."""
    if dof <= 0:
        return math.nan
    keys = [k for k in _T975 if k <= dof]
    # the nearest tabled dof below, so wider between tabled ones; a tabled value is cut to three decimals,
    # at most 0.02% under the true quantile (t(4) 2.776 against 2.7764: a review read 'never narrower')
    return _T975[max(keys)]


def flatten(doc: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Numeric leaves of a nested summary as ``a.b.c`` keys."""
    out: dict[str, float] = {}
    for k, v in doc.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict):
            out.update(flatten(v, key))
        elif isinstance(v, bool) or (isinstance(v, int | float) and v is not None):
            out[key] = float(v)
    return out


def seed_values(flat: Sequence[Mapping[str, float]], key: str) -> list[float | None]:
    """Each seed's value of a flattened figure (`flatten`): None where the seed has none (a None
    leaf, or the figure absent with its parent: a section the run did not have), but 0 for a count by
    reason that seed never saw (`rejected_by_reason.<reason>`)."""
    absent = 0.0 if "_by_reason." in key else None
    return [f.get(key, absent) for f in flat]


SEED_LIMIT = 2**31
"""Seeds are below this (the scenario's bound); a run of seeds past it wraps to 0."""


def replicate(
    scenario: Scenario, n: int, catalog: Catalog | None = None, *, check_work: bool = True
) -> tuple[list[SimResult], dict[str, Any]]:
    """Run `n` seeds (seed, seed+1, ...) and give each figure's mean and 95% interval.

    Returns the runs and a dict from each summary figure's dotted name (``latency_ms.ttft.p99``) to
    ``{"mean", "ci95_low", "ci95_high", "n"}`` (and ``missing``, ``over`` where some seeds lack it);
    with ``n = 1`` the interval is NaN (one run has no spread). Booleans and constants are averaged
    like any figure (``cache.enabled`` reads 1.0 or 0.0); a figure the same in every seed has that value as
    its mean and both ends of its interval.

    A figure that is None or absent in some seeds (a class's percentile that fell on rejected
    requests: infinite; a shortfall only some seeds have) has no mean: its mean and interval are None,
    `n` counts the seeds with a value and `missing` the rest (`seed_values`). A trace's requests do
    not depend on the seed: replicating it is refused."""
    if not whole_number(n) or not 1 <= n <= bounds.MAX_REPLICATIONS:
        raise ScenarioError(f"replications: a whole number from 1 to {bounds.MAX_REPLICATIONS} (got {n!r})")
    if n > 1 and scenario.workload.trace is not None:
        raise ScenarioError(
            "replications: a trace's requests are the same whatever the seed, so every replication "
            "would be the same run (an interval of zero width): replicate a generated workload"
        )
    runs = [  # seeds past the scenario's bound wrap to 0, as the dashboard's (a top seed failed on the second)
        simulate(
            scenario.model_copy(update={"seed": (scenario.seed + i) % SEED_LIMIT}),
            catalog,
            check_work=check_work,
        )
        for i in range(n)
    ]
    flat = [flatten(r.summary) for r in runs]
    rebased = same_span([r.summary for r in runs], flat)
    keys = sorted(set().union(*flat))
    stats: dict[str, Any] = {}
    for key in keys:
        per_seed = seed_values(flat, key)
        vals = np.array([v for v in per_seed if v is not None and math.isfinite(v)])
        if gone := sum(v is None for v in per_seed):
            stats[key] = {"mean": None, "ci95_low": None, "ci95_high": None, "n": len(vals), "missing": gone}
            continue
        if len(vals) == 0:
            continue
        mean = float(vals.mean())
        half = (
            float(t_quantile(len(vals) - 1) * vals.std(ddof=1) / math.sqrt(len(vals)))
            if len(vals) > 1
            else math.nan
        )
        if len(vals) > 1 and bool((vals == vals[0]).all()):  # the same in every seed: that value, no spread
            # (a band's 0.09 read "0.08999999999999997 to 0.09000000000000005" from the mean's rounding: a review)
            mean, half = float(vals[0]), 0.0
        low, high = clipped(key, mean - half, mean + half)
        stats[key] = {"mean": mean, "ci95_low": low, "ci95_high": high, "n": len(vals)}
        if rebased and key.startswith(RATED):
            stats[key]["over"] = "window"
    return runs, stats


RATED = ("goodput_rps", "goodput_output_tokens_per_s", "throughput_rps", "throughput_tokens_per_s.")
"""A summary's rates over `rate_span_s`: the window, or an unsustainable run's served span."""


def same_span(summaries: Sequence[Mapping[str, Any]], flat: list[dict[str, float]]) -> bool:
    """Where some seeds are unsustainable and others not, each seed's rates (`RATED`) put over its window
    in `flat` (True), so that their mean is of one kind: an unsustainable run's rates are over the span it
    served, the others' over the window, and portfolio-decode-loss's four seeds averaged a goodput of 12.4
    req/s from 11.5 to 12.0 over about 750 s and 14.7 over 600 s, where over the window all four read
    14.4 to 15.0 (a review). Seeds alike (all marked, or none) keep their own."""
    marked = [s.get("unsustainable") is not None for s in summaries]
    if all(marked) or not any(marked):
        return False
    for f, s in zip(flat, summaries, strict=True):
        window = float(s.get("window_s") or 0.0)
        if window > 0:
            scale = rate_span_s(s) / window
            f.update({k: v * scale for k, v in f.items() if k.startswith(RATED)})
    return True


def is_share(key: str) -> bool:
    """Whether a flattened summary figure is a share of a whole (SLO attainment, a utilisation, a
    cache hit rate, a class's pass flag: the share of seeds it passed in), which lies in [0, 1]."""
    return key.endswith(("slo_attainment", ".passes")) or key.startswith(("utilization.", "cache.hit_rate"))


def clipped(key: str, low: float, high: float) -> tuple[float, float]:
    """A t-interval kept to the range its figure can take. Every figure of a run's summary is a count,
    a rate, a time, a cost or a share, none below zero, and a share at most one: two seeds whose SLO
    attainment was 0 and 1.3% gave [-1.6%, 2.8%] (a review); the mean stays the seeds'."""
    low = max(low, 0.0)
    return low, min(high, 1.0) if is_share(key) else high
