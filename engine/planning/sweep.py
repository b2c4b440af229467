"""Sweeps: one scenario over a grid of field values and seeds, run on any executor.

A sweep is the cartesian product of `vary` (field path -> values, the paths `--set` uses)
times `seeds` seeds (scenario.seed, seed + 1, ...). Every point is validated before anything
runs, so a bad combination fails at once with the field's name. Points are independent, so they
run through a `concurrent.futures.Executor`: a local process pool (the CLI's default), or a Dask
cluster (`distributed.Client(address).get_executor()` has the same interface), or none (in this
process: `sweep`'s default). Each task carries the scenario as plain data and returns plain data, so any worker
that can import the engine can run it.

The result is one tidy table, one row per run in grid order whatever order the runs finish
in: the varied values as columns named by their paths, the seed, then every numeric summary
figure flattened to dotted names (`latency_ms.ttft.p99`, `classes.chat.passes`, ...) by
`engine.serving.run.flatten`. Same scenario, grid and seeds: the same table.

A sweep is bounded by the sum of its runs' estimates (docs/definitions.md), as a plan is: `sweep_events` adds
up each grid point's work-bound event estimate (times its seeds), and a sweep over
`bounds.MAX_PLAN_EVENTS` is refused before any run, with the figure and how many runs of this size
would fit; `check_work=False` (`--no-work-limit`) lifts it with the per-run bound.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, cast

import pandas as pd

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.core.no_bool import whole_number
from engine.core.safecsv import safe_csv
from engine.scenario import codec as scenario_io
from engine.scenario.model import Scenario
from engine.scenario.workload import unused_with_trace
from engine.serving.run import ENGINE_VERSION, SEED_LIMIT, flatten, simulate
from engine.serving.work_bound import estimate, in_words

MAX_POINTS = 10_000
"""Runs in one sweep (grid points times seeds)."""

Progress = Callable[[int, int], None]
"""A progress callback: (runs finished, runs in all)."""


def grid(vary: Mapping[str, Sequence[Any]], seeds: int = 1, first_seed: int = 0) -> list[dict[str, Any]]:
    """The sweep's points in order: each a mapping of path -> value, plus ``seed``."""
    if not whole_number(seeds) or not 1 <= seeds <= 1000:  # (1.5 died in a TypeError: a review)
        raise ScenarioError(f"seeds: a whole number in [1, 1000] (got {seeds!r})")
    if not isinstance(vary, Mapping) or any(not isinstance(p, str) for p in vary):
        raise ScenarioError(
            "vary: field path -> the values to vary over, e.g. {'workload.arrival.rate_rps': [8, 16]} "
            f"(got {vary if not isinstance(vary, Mapping) else next(p for p in vary if not isinstance(p, str))!r})"
        )
    if "seed" in vary:
        raise ScenarioError("seed: vary seeds with --seeds N (seeds=N in Python): runs seed, seed + 1, ...")
    # a notebook's numpy range (np.linspace(4, 5, 3)) as the plain numbers it holds; not a Sequence
    vary = {p: cast(Any, v).tolist() if getattr(v, "ndim", None) == 1 else v for p, v in vary.items()}
    for path, values in vary.items():
        scenario_io.parse_path(path)
        if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence):
            # a bare 'h200' would be varied over its letters, a number would fail without naming the field
            raise ScenarioError(
                f"{path}: the values to vary over, as a list, e.g. [{values!r}] (got {values!r})"
            )
        if not len(values):
            raise ScenarioError(f"{path}: --vary (vary in Python) needs at least one value")
    paths = list(vary)
    size = seeds
    for values in vary.values():
        size *= len(values)
    if size > MAX_POINTS:
        raise ScenarioError(f"vary: {size:,} runs in the grid; the limit is {MAX_POINTS:,}")
    points = []
    for combo in itertools.product(*(list(vary[p]) for p in paths)):
        for s in range(seeds):
            seed = (first_seed + s) % SEED_LIMIT  # past the bound wraps to 0, as `replicate` does
            points.append({**dict(zip(paths, combo, strict=True)), "seed": seed})
    return points


def parse_vary(items: Sequence[str]) -> dict[str, list[Any]]:
    """``["path=v1,v2", ...]`` to path -> values (each value a TOML literal or bare text)."""
    out: dict[str, list[Any]] = {}
    for item in items:
        path, sep, text = item.partition("=")
        if not sep or not path.strip():
            raise ScenarioError(f"--vary {item!r}: expected path=v1,v2,...")
        parts = _split_values(text)
        if any(
            not p.strip() for p in parts
        ):  # '5,,6' ran two values, the empty one dropped unsaid (a review)
            raise ScenarioError(
                f"--vary {path.strip()}: an empty value in {text!r}; give each value once, comma-apart"
            )
        values = [scenario_io.parse_override("--vary", path, v) for v in parts]
        twice = [parts[i].strip() for i, v in enumerate(values) if v in values[:i]]
        if twice:  # '8,8' ran two identical grid points (a review)
            raise ScenarioError(
                f"--vary {path.strip()}: {twice[0]} given twice in {text!r}; give each value once"
            )
        if path.strip() in out:
            raise ScenarioError(f"--vary {path.strip()}: given twice")
        out[path.strip()] = values
    return out


def _split_values(text: str) -> list[str]:
    """Split on commas outside brackets and quotes (so ``[1,2]`` or ``"a,b"`` stay whole)."""
    parts, depth, quote, cur = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    parts.append(cur)
    return parts


def run_point(data: dict[str, Any], overrides: dict[str, Any], check_work: bool = True) -> dict[str, Any]:
    """Simulate one point of a sweep (a worker's task): flattened numeric summary figures, or, where
    the engine refuses the point (the work bound, a chip that cannot hold the model there), its
    `error`: the point's row says why, and the other points still run."""
    scen = scenario_io.apply_overrides(scenario_io.from_data(data), overrides)
    try:
        res = simulate(scen, check_work=check_work)
    except ScenarioError as exc:
        return {"error": str(exc)[:500]}
    out: dict[str, Any] = flatten(res.summary)
    out["sim.events"] = float(res.events)
    return out


def sweep_events(runs: Sequence[Scenario]) -> float:
    """The sweep's estimated simulated events: each run's work-bound estimate, computed once per grid
    point whatever its seed (the seed draws other requests of the same settings)."""
    per_point: dict[str, float] = {}
    total = 0.0
    for run in runs:
        key = run.model_dump_json(exclude={"seed"})
        if key not in per_point:
            try:
                per_point[key] = estimate(run).events
            except ScenarioError:  # refused when it runs: its row will say why (`run_point`)
                per_point[key] = 0.0
        total += per_point[key]
    return total


def check_sweep_work(runs: Sequence[Scenario]) -> float:
    """`sweep_events`, or ScenarioError with the figure and the runs that would fit when over the limit."""
    events = sweep_events(runs)
    limit = float(bounds.MAX_PLAN_EVENTS)
    if events > limit:
        fit = int(len(runs) * limit / events)
        raise ScenarioError(
            f"sweep work: about {in_words(events)} simulated events over {len(runs):,} runs, "
            f"{events / limit:.1f}x the limit ({in_words(limit)}); lower the grid's values or the seeds to about "
            f"{fit:,} runs of this size, or shorten the window (or lift the limit: --no-work-limit, "
            "check_work=False)"
        )
    return events


def local_executor(workers: int | None = None) -> ProcessPoolExecutor:
    """A process pool of `workers` processes (default: the machine's cores)."""
    n = workers or os.cpu_count() or 1
    if not 1 <= n <= 256:
        raise ScenarioError(f"workers: must be in [1, 256] (got {n})")
    return ProcessPoolExecutor(max_workers=n)


def sweep(
    scenario: Scenario,
    vary: Mapping[str, Sequence[Any]],
    *,
    seeds: int = 1,
    executor: Executor | None = None,
    progress: Progress | None = None,
    check_work: bool = True,
) -> pd.DataFrame:
    """Run the grid; one row per run in grid order (`executor` None: in this process).

    `vary` maps a field path (as `apply_overrides` takes it, e.g. ``"workload.arrival.rate_rps"``) to
    the values to try, ``{"workload.arrival.rate_rps": [8, 16, 24]}``; the grid is every combination
    of them, times `seeds` seeds (the scenario's seed and the next ones; not a path of `vary`). The
    result is a tidy DataFrame: one row per run, the varied paths and ``seed`` as columns, then every
    numeric summary figure under its dotted name (``latency_ms.ttft.p99``, ``cost.usd_per_request``,
    ``classes.chat.passes``). `check_work=False` lifts the work bound on each run
    (engine.serving.work_bound), as `simulate`'s does.
    """
    points = grid(vary, seeds, scenario.seed)
    data = scenario_io.to_data(scenario)
    tasks = []
    runs = []
    for pt in points:
        over = {p: v for p, v in pt.items() if p != "seed"}
        over["seed"] = pt["seed"]
        runs.append(scenario_io.apply_overrides(scenario, over))  # fail fast, naming the field
        tasks.append(over)
    if runs and (why := unused_with_trace(runs[0].workload, vary)):
        raise ScenarioError(f"vary {why}")
    if seeds > 1 and any(r.workload.trace is not None for r in runs):
        raise ScenarioError(
            "seeds: a trace's requests are the same whatever the seed, so each seed would repeat one run; "
            "sweep a trace with --seeds 1 (seeds=1)"
        )
    if check_work:
        check_sweep_work(runs)  # the whole sweep, before any run
    results: list[dict[str, Any] | None] = [None] * len(tasks)
    done = 0
    if executor is None:
        for i, over in enumerate(tasks):
            results[i] = run_point(data, over, check_work)
            done += 1
            if progress:
                progress(done, len(tasks))
    else:
        futures: dict[Future[dict[str, Any]], int] = {
            executor.submit(run_point, data, over, check_work): i for i, over in enumerate(tasks)
        }
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            done += 1
            if progress:
                progress(done, len(tasks))
    failed = any("error" in res for res in results if res is not None)
    rows = []
    for pt, res in zip(points, results, strict=True):
        assert res is not None
        rows.append({**pt, **({"error": ""} if failed else {}), **res})
    frame = pd.DataFrame(rows)
    frame.attrs["scenario"] = scenario_io.dumps_json(scenario)
    frame.attrs["engine_version"] = ENGINE_VERSION
    return frame


def write(frame: pd.DataFrame, path: str) -> None:
    """Write a sweep table: parquet (with the scenario and engine version as metadata) or CSV."""
    if path.lower().endswith(".csv"):
        Path(path).write_text(safe_csv(frame), encoding="utf-8")
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(_uniform(frame), preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[b"fengong.scenario"] = str(frame.attrs.get("scenario", "")).encode()
    meta[b"fengong.engine_version"] = str(frame.attrs.get("engine_version", ENGINE_VERSION)).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)


def _uniform(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns of mixed Python types (a varied list or table) as text, so parquet can hold them."""
    out = frame.copy()
    out.attrs = {}
    for col in out.columns:
        if (
            out[col].dtype == object
            and not out[col].map(lambda v: isinstance(v, str | int | float | bool)).all()
        ):
            out[col] = out[col].map(repr)
    return out
