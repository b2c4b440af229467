"""Shared fixtures: the catalog and a few instances everyone uses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

from engine.catalog.entries import Catalog, load_catalog
from engine.costmodel.perf import Instance

settings.register_profile("ci", max_examples=60, deadline=None)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


SLOW_FOLDER = Path(__file__).resolve().parent / "app"
"""The folder whose tests are all `slow`: the real browser, and every dashboard page (AppTest runs a page's
script and its simulations; most of these tests take seconds, the planner's tens of seconds)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests under `SLOW_FOLDER` slow (`make quick` runs ``-m "not slow"``)."""
    for item in items:
        if Path(item.path).resolve().is_relative_to(SLOW_FOLDER):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="session")
def h100_70b_tp4(catalog: Catalog) -> Instance:
    return Instance(model=catalog.model("llama-3.1-70b"), hardware=catalog.chip("h100-sxm"), tp=4)


@pytest.fixture(scope="session")
def reference_fit(catalog: Catalog) -> tuple[list, dict, object]:
    """Every usable reference point, the profiles fitted to them and the MoE terms fitted with those
    (`crossval.fit_experts`, ~25 s of CPU): computed once per test process for the tests that read
    the whole fit. Read-only. Each of xdist's two processes computes it once where its tests land
    there, as it does test_calibrate.py's validation report: distributing whole modules instead
    (--dist loadscope) took the suite from 9-10 to 15 minutes, and with pytest 9.2 xdist 3.8's
    loadgroup does not group (it sets `item._nodeid`, which pytest no longer reads)."""
    from engine.calibration import calibrate, crossval, reference

    points = reference.usable_points(catalog)
    fits = calibrate.reference_fits(points, catalog)
    experts = crossval.fit_experts(points, catalog, fits)
    assert experts is not None
    return points, fits, experts
