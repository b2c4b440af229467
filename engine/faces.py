"""How a package's face offers its names: each loaded from the module that defines it, on first use.

Every engine package's ``__init__`` is a face (docs/architecture.md, Public API): a table of its
public names and their modules (`_API`), the names a face gives under another name (`_RENAMED`), and
``__all__``. `lazy` turns those into the module's ``__getattr__`` and ``__dir__`` (PEP 562), so
``import engine.explain`` costs nothing until a name is read, and a name read once is kept in the
module. Mypy sees the names through each face's ``if TYPE_CHECKING:`` imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy(
    package: str,
    api: Mapping[str, str],
    renamed: Mapping[str, str],
    names: Sequence[str],
    namespace: dict[str, Any],
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A face's ``__getattr__`` (load `name` from its module in `api`, keep it in `namespace`) and
    ``__dir__`` (exactly `names`)."""

    def __getattr__(name: str) -> Any:
        module = api.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), renamed.get(name, name))
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return list(names)

    return __getattr__, __dir__
