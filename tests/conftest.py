"""Shared fixtures: the catalog and a few instances everyone uses."""

from __future__ import annotations

import os
from collections.abc import Iterator
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


SLOW_FIXTURES = frozenset({"report", "simulated", "reference_fit"})
"""Fixtures whose tests are all `slow`: the validation report and its reruns (test_calibrate.py:
about two minutes of one process), the whole reference fit with its MoE terms (this file: about
25 s), which `make quick` would otherwise compute on every run."""


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With ``-m pure`` alone (`make unit`'s rerun on the pure-Python modules), skip reading the test
    modules that never name the mark: collecting all of them cost a third of the rerun's CPU for
    its 17 tests (docs/performance.md, "The suite under ten minutes"). A module that marks a test
    `pure` in any way (a decorator, `pytestmark`, a `pytest.param`) names it and is collected."""
    if config.option.markexpr != "pure" or collection_path.suffix != ".py":
        return None
    if not collection_path.name.startswith("test_"):
        return None
    return "pure" not in collection_path.read_text(encoding="utf-8") or None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests under `SLOW_FOLDER`, and those that ask for one of `SLOW_FIXTURES` (directly or
    through another fixture), slow (`make quick` runs ``-m "not slow"``). Where the compiled build
    runs (engine.core.native), skip the tests marked `pure`: they patch what compiled code calls
    directly, so the patch would not be seen; `make unit` runs them again with FENGONG_PURE=1."""
    from engine.core import native

    compiled = native.active()
    for item in items:
        needs = set(getattr(item, "fixturenames", ()))
        if Path(item.path).resolve().is_relative_to(SLOW_FOLDER) or needs & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)
        if compiled and item.get_closest_marker("pure") is not None:
            item.add_marker(pytest.mark.skip(reason="patches compiled code: runs with FENGONG_PURE=1"))


@pytest.fixture(scope="session", autouse=True)
def _one_cache_per_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """FENGONG_CACHE_DIR for this run (`engine.core.diskcache`): one folder under pytest's base temp
    shared by xdist's processes (each process's own base temp is a folder of the run's), so the
    validation report and its reruns are computed once a run, by whichever process asks first,
    and read by the others and by the README's `fengong validate` (which inherits the variable);
    never the user's own cache, and never one kept from an earlier run."""
    from engine.core import diskcache

    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "fengong-cache"
    before = os.environ.get(diskcache.ENV_VAR)
    os.environ[diskcache.ENV_VAR] = str(folder)
    yield folder
    if before is None:
        os.environ.pop(diskcache.ENV_VAR, None)
    else:
        os.environ[diskcache.ENV_VAR] = before


@pytest.fixture(scope="session", autouse=True)
def _streamlit_setup_once() -> Iterator[None]:
    """What every AppTest would repeat (the scan for custom components, each page's bytecode) done
    once a process (tests/app/harness.py's `streamlit_setup_once`)."""
    from tests.app.harness import streamlit_setup_once

    with pytest.MonkeyPatch.context() as patch:
        streamlit_setup_once(patch)
        yield


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="session")
def h100_70b_tp4(catalog: Catalog) -> Instance:
    return Instance(model=catalog.model("llama-3.1-70b"), hardware=catalog.chip("h100-sxm"), tp=4)


@pytest.fixture(scope="session")
def reference_fit(catalog: Catalog) -> tuple[list, dict, object]:
    """Every usable reference point, the profiles fitted to them and the MoE terms fitted with those
    (`crossval.fit_experts`, ~25 s of CPU) for the tests that read the whole fit. Read-only.
    Computed once a run and kept in the run's cache (`_one_cache_per_run`), keyed as the validation
    report is (`validate_cache.key`), so xdist's second process reads it instead of fitting it
    again, as it does test_calibrate.py's validation report: distributing whole modules instead
    (--dist loadscope) took the suite from 9-10 to 15 minutes, and with pytest 9.2 xdist 3.8's
    loadgroup does not group (it sets `item._nodeid`, which pytest no longer reads)."""
    from engine.calibration import calibrate, crossval, reference
    from engine.cli import validate_cache
    from engine.core import diskcache

    def fit() -> tuple[list, dict, object]:
        points = reference.usable_points(catalog)
        fits = calibrate.reference_fits(points, catalog)
        return points, fits, crossval.fit_experts(points, catalog, fits)

    points, fits, experts = diskcache.cached("reference-fit", validate_cache.key(), fit)
    assert experts is not None
    return points, fits, experts
