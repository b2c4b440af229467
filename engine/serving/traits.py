"""`trait`: marks a part of a class kept in a module of its own (`BatchFormation`, `Outage`).

To Python it does nothing. To mypyc (docs/performance.md, "A compiled hot path with mypyc") it
says the class is a trait: a native class may inherit from one class and any number of traits,
so the instance (`engine.serving.instance.Server`) compiles with its two parts. mypy_extensions
comes with mypy; without it (an install without the test tools) the stand-in below is used.
"""

from __future__ import annotations

from typing import TypeVar

_T = TypeVar("_T")

try:
    from mypy_extensions import trait
except ImportError:  # pragma: no cover - an install without mypy

    def trait(cls: _T) -> _T:
        """The class itself (what mypy_extensions' `trait` returns when the code is not compiled)."""
        return cls


__all__ = ["trait"]
