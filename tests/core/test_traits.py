"""`engine.core.traits`: `trait` and `mypyc_attr` leave a class as it is, with or without mypy installed."""

from __future__ import annotations

import importlib
import sys

import pytest

from engine.core import traits
from engine.serving.batching import BatchFormation
from engine.serving.instance import Server
from engine.serving.outage import Outage


def test_the_instance_keeps_its_two_parts_as_plain_bases() -> None:
    assert Server.__mro__[1:3] == (BatchFormation, Outage)


def test_without_mypy_extensions_the_stand_in_returns_the_class(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mypy_extensions", None)  # its import now raises ImportError
    try:
        reloaded = importlib.reload(traits)
        stand_in, attr = reloaded.trait, reloaded.mypyc_attr
        assert stand_in.__module__ == attr.__module__ == "engine.core.traits"

        class Part:
            x = 1

        assert stand_in(Part) is Part
        assert attr(native_class=False)(Part) is Part
    finally:
        monkeypatch.undo()
        importlib.reload(traits)
    assert traits.trait.__module__ == traits.mypyc_attr.__module__ == "mypy_extensions"
