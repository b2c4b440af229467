"""No import loop among the serving simulation's modules, type-only imports included.

STYLE.md asks that imports point down only; import-linter holds that between packages, and this
test holds it inside `engine.serving`, where the actors (ledger, fleet, KV ledger, front door,
instances, trace readers, the work bound) are rooms of one package. grimp's graph counts every
import statement: at module level, inside functions, and under ``if TYPE_CHECKING`` (a loop of
type hints is still a loop in the design, even when Python never runs it).
"""

from __future__ import annotations

import sys
import textwrap
from itertools import pairwise
from pathlib import Path

import grimp
import pytest

PACKAGE = "engine.serving"


def graph_of(package: str) -> grimp.ImportGraph:
    """The import graph of a top-level package, imports under ``if TYPE_CHECKING`` counted."""
    return grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)


def find_cycle(graph: grimp.ImportGraph, package: str) -> list[str] | None:
    """One import cycle among `package` and its modules (its first module repeated last), or None."""
    inside = {m for m in graph.modules if m == package or m.startswith(package + ".")}
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & inside) for m in sorted(inside)}
    done: set[str] = set()
    for root in sorted(inside):
        if root in done:
            continue
        path = [root]
        todo = [iter(edges[root])]
        while todo:  # depth first; `path` is the chain of imports from root being walked
            nxt = next(todo[-1], None)
            if nxt is None:
                done.add(path.pop())
                todo.pop()
            elif nxt in path:
                return [*path[path.index(nxt) :], nxt]
            elif nxt not in done:
                path.append(nxt)
                todo.append(iter(edges[nxt]))
    return None


def describe(graph: grimp.ImportGraph, cycle: list[str]) -> str:
    """The cycle as one line per import: importer, line number and the statement."""
    lines = []
    for importer, imported in pairwise(cycle):
        for d in graph.get_import_details(importer=importer, imported=imported)[:1]:
            lines.append(f"{importer}:{d['line_number']}: {d['line_contents']}")
    return "\n".join(lines)


def test_no_import_cycle_among_the_serving_modules() -> None:
    graph = graph_of("engine")
    cycle = find_cycle(graph, PACKAGE)
    if cycle is not None:
        print(f"import cycle: {' -> '.join(cycle)}\n{describe(graph, cycle)}")
    assert cycle is None, f"import cycle: {' -> '.join(cycle)}\n{describe(graph, cycle)}"
    assert len([m for m in graph.modules if m.startswith(PACKAGE + ".")]) > 10  # the package was walked


def test_a_cycle_of_type_hints_only_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard above would miss type-only loops if grimp dropped ``if TYPE_CHECKING`` imports."""
    pkg = tmp_path / "loopy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from loopy import b\n")
    (pkg / "b.py").write_text(
        textwrap.dedent(
            """\
            from typing import TYPE_CHECKING

            if TYPE_CHECKING:
                from loopy.a import thing
            """
        )
    )
    (pkg / "c.py").write_text("from loopy import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        graph = graph_of("loopy")
    finally:
        sys.modules.pop("loopy", None)
    cycle = find_cycle(graph, "loopy")
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {"loopy.a", "loopy.b"}
    assert "loopy.b:4: from loopy.a import thing" in describe(graph, cycle)
    graph.remove_import(importer="loopy.b", imported="loopy.a")
    assert find_cycle(graph, "loopy") is None
