"""Shared fixtures: the catalog and a few instances everyone uses."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from engine.catalog.entries import Catalog, load_catalog
from engine.costmodel.perf import Instance

settings.register_profile("ci", max_examples=60, deadline=None)
settings.register_profile("dev", max_examples=30, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="session")
def h100_70b_tp4(catalog: Catalog) -> Instance:
    return Instance(model=catalog.model("llama-3.1-70b"), hardware=catalog.chip("h100-sxm"), tp=4)
