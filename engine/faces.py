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
        value = documented(getattr(importlib.import_module(module), renamed.get(name, name)), module)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return list(names)

    return __getattr__, __dir__


def documented(value: Any, module: str) -> Any:
    """`value` as a face offers it: a function compiled by mypyc (`engine.core.native`) has lost its
    docstring and its signature's types, so that ``help(engine.iteration_cost)`` said nothing (a
    review); it is offered through a plain wrapper carrying both, read from its source. Anything
    else, and the pure modules' functions, are returned as they are. The engine's own calls do not
    go through faces: the hot path calls the compiled function itself."""
    if getattr(value, "__doc__", None) is not None or type(value).__name__ != "builtin_function_or_method":
        return value
    from engine.core.native import COMPILED, source_of

    if module not in COMPILED:
        return value
    import ast
    import functools
    import inspect

    tree = ast.parse(source_of(module).read_text(encoding="utf-8"))
    node = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == value.__name__), None)
    if node is None:
        return value
    typed = {
        a.arg: ast.unparse(a.annotation)
        for a in ast.walk(node.args)
        if isinstance(a, ast.arg) and a.annotation
    }
    signature = inspect.signature(value)
    signature = signature.replace(
        parameters=[p.replace(annotation=typed.get(p.name, p.empty)) for p in signature.parameters.values()],
        return_annotation=ast.unparse(node.returns) if node.returns else signature.empty,
    )

    @functools.wraps(value)
    def face(*args: Any, **kwargs: Any) -> Any:
        return value(*args, **kwargs)

    face.__doc__ = ast.get_docstring(node)
    face.__signature__ = signature  # type: ignore[attr-defined]
    return face
