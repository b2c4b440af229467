"""What ``run --out`` writes: each run's tables, summary and scenario, and a replication's intervals.

A destination that cannot be written is refused with the flag named (`--out`), never a traceback.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.cli.common import dumps
from engine.core.errors import ScenarioError
from engine.scenario import codec as scenario_io
from engine.scenario import naming
from engine.scenario.model import Scenario
from engine.serving.run import SimResult


def write_outputs(res: SimResult, out: Path | str, fmt: str = "csv", *, field: str = "out") -> None:
    """Write a run's tables, summary and scenario into the folder `out`, as ``run --out`` does.

    The per-request and time-series tables in `fmt` (csv, or parquet); summary.json names the
    scenario, its seed and the engine's version, scenario.toml reruns it (a result's own DataFrames
    carry none of them). `field`: what a refusal calls `out` (the CLI's "--out"; Python's argument
    by default: a notebook user was told of a flag they never typed)."""
    if fmt not in ("csv", "parquet"):
        raise ScenarioError(f"fmt: csv or parquet (got {fmt!r})")
    out = Path(out)
    if (edited := _as_edited(res.scenario)) is not res.scenario:
        res = dataclasses.replace(res, scenario=edited)
    try:
        _write_outputs(res, out, fmt)
    except OSError as exc:
        named = f"{field} {out}" if field.startswith("--") else f"{field}={str(out)!r}"
        raise ScenarioError(
            f"{named}: cannot write there ({exc.strerror or type(exc).__name__}); name a folder"
        ) from None


def _as_edited(sc: Scenario) -> Scenario:
    """A scenario under a preset's name that is not that preset (`apply_overrides` keeps the name), named
    as `run --set` names it, "edited from" the preset, without the preset's lesson, whose figures are
    the preset's own (a review: the API's export carried them where `run --out`'s did not). Another seed
    alone is a replication, not an edit: `run --replications --out` writes each seed under its name."""
    for preset in scenario_io.preset_names():
        base = scenario_io.load_preset(preset)
        if base.name == sc.name:
            return naming.named(sc, base.model_copy(update={"seed": sc.seed}), preset)
    return sc


def write_replications(runs: Sequence[SimResult], doc: dict[str, Any], out: Path, fmt: str) -> None:
    """Write each replication's files under ``seed-<N>/`` and the intervals as ``replications.json``."""
    for res in runs:
        write_outputs(res, out / f"seed-{res.scenario.seed}", fmt, field="--out")
    try:
        (out / "replications.json").write_text(dumps(doc), encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(
            f"--out {out}: cannot write there ({exc.strerror or type(exc).__name__})"
        ) from None


def _write_outputs(res: SimResult, out: Path, fmt: str) -> None:
    from engine.core.safecsv import safe_csv

    out.mkdir(parents=True, exist_ok=True)
    for name, frame in (("requests", res.requests), ("timeseries", res.timeseries)):
        if fmt == "parquet":
            frame.to_parquet(out / f"{name}.parquet", index=False)
        else:
            (out / f"{name}.csv").write_text(safe_csv(frame), encoding="utf-8")
    doc = res.to_json()
    (out / "summary.json").write_text(dumps(doc), encoding="utf-8")
    (out / "scenario.toml").write_text(scenario_io.dumps_toml(res.scenario), encoding="utf-8")
