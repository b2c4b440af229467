"""`trait`: marks a part of a class kept in a module of its own (`BatchFormation`, `Outage`).

To Python it does nothing. To mypyc (docs/performance.md, "A compiled hot path with mypyc") it
says the class is a trait: a native class may inherit from one class and any number of traits,
so the instance (`engine.serving.instance.Server`) compiles with its two parts. mypy_extensions
comes with mypy; without it (an install without the test tools) the stand-ins below are used.
`mypyc_attr(native_class=False)` keeps a class of a compiled module a plain Python class (the
records and cost values that are pickled, compared and read with `vars`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")

try:
    from mypy_extensions import mypyc_attr, trait
except ImportError:  # pragma: no cover - an install without mypy

    def trait(cls: _T) -> _T:
        """The class itself (what mypy_extensions' `trait` returns when the code is not compiled)."""
        return cls

    def mypyc_attr(*attrs: str, **kwattrs: object) -> Callable[[_T], _T]:
        """A decorator that returns its class (what mypy_extensions' `mypyc_attr` gives uncompiled)."""
        return lambda cls: cls


__all__ = ["mypyc_attr", "trait"]
