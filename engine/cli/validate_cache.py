"""What `validate` computes, kept on disk between runs (`engine.core.diskcache`).

The validation report of the shipped reference data (`engine.calibration.validation.report`, a few
minutes) and the simulator's reruns with its fit (`simulated`, a minute more) depend only on the
engine's source, the catalog's files, the reference data and the versions of Python and the
libraries that compute them. `key` is the digest of all of them, so a second `validate` with
nothing changed reads both from the cache, a second process asking meanwhile waits for the first,
and a change to any of them computes them again. The tests share one cache folder among their
processes and the README's `fengong validate` (tests/conftest.py).
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from engine.calibration import validation
from engine.catalog.entries import catalog_dirs, load_catalog
from engine.core import datafiles, diskcache
from engine.explain import end_to_end

LIBRARIES = ("numpy", "pandas", "simpy", "pydantic")
"""The libraries whose arithmetic or parsing the report's figures go through."""


def inputs() -> list[Path]:
    """The folders the report and its reruns are computed from: the engine's source, the catalog's
    folders (the shipped presets and `FENGONG_CATALOG`'s) and the reference data."""
    return [Path(__file__).resolve().parents[1], *catalog_dirs(), datafiles.data_dir() / "reference"]


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def key(roots: list[Path] | None = None) -> str:
    """The digest of `inputs()` (or `roots`) and of the Python and `LIBRARIES` versions."""
    versions = [f"python {sys.version}", *(f"{n} {_version(n)}" for n in LIBRARIES)]
    return diskcache.digest(inputs() if roots is None else roots, versions)


def simulated(rep: validation.Report, catalog: Any) -> tuple[Any, Any]:
    """(the open-loop rows rerun end to end, the points rerun) by the simulator, both with the
    report's fit (`engine.explain.end_to_end`). The reruns are the fitted dense points and, marked
    `moe`, the tensor-parallel MoE points with the experts' factor and the first-token latency."""
    points = [r.point for r in rep.rows if r.point is not None]
    fits = rep.fits
    rows = [r.open_loop for r in rep.rows if r.open_loop is not None]
    e2e = end_to_end.frame(end_to_end.checks(catalog, rows, points, fits))
    reruns = end_to_end.point_reruns(catalog, points, fits)
    if rep.experts is not None:
        moe = end_to_end.point_reruns(catalog, points, fits, rep.experts.terms, rep.first_token.ms)
        reruns = pd.concat([reruns, moe], ignore_index=True)
    return e2e, reruns


def report(*, fresh: bool = False, digest: str | None = None) -> validation.Report:
    """`validation.report` of the shipped catalog, from the cache where its inputs are unchanged;
    `fresh` computes it again. `digest` is `key()` where the caller has it already (`validate`
    keys the report and its reruns with one); the catalog is loaded only to compute."""
    return diskcache.cached(
        "validation-report", digest or key(), lambda: validation.report(load_catalog()), fresh=fresh
    )


def reruns(rep: validation.Report, *, fresh: bool = False, digest: str | None = None) -> tuple[Any, Any]:
    """`simulated` of `rep`, which is `report()`'s, from the cache where the inputs are unchanged;
    `fresh` computes them again; `digest` as for `report`."""
    return diskcache.cached(
        "validation-reruns", digest or key(), lambda: simulated(rep, load_catalog()), fresh=fresh
    )
