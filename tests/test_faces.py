"""The engine's package faces: what each exports, that it loads lazily, and that the UI uses only them.

Each engine package's ``__init__`` is its face: ``__all__`` lists exactly the names it offers, each
loaded on first use from the module that defines it (so ``import engine.explain`` stays cheap). The
dashboard (``app.py``, ``ui/``, ``app_pages/``) imports only these faces, never a module inside a
package; import-linter's third contract holds the same from the import graph.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = sorted(p.parent.name for p in (ROOT / "engine").glob("*/__init__.py") if p.parent.name != "cli")
FACES = ["engine"] + [f"engine.{p}" for p in PACKAGES]
LAZY = [f for f in FACES if f != "engine.policies"]  # importing policies registers the built-in ones
BOILERPLATE = {"annotations", "TYPE_CHECKING", "Any"}  # what every face imports for itself


def submodules(face: ModuleType) -> set[str]:
    """The names of the modules and packages directly inside `face`."""
    return {m.name for m in pkgutil.iter_modules(face.__path__)}


def public_names(face: ModuleType) -> set[str]:
    """The names `face` defines publicly: its lazy table, and any other public value it holds."""
    held = {n for n, v in vars(face).items() if not n.startswith("_") and not inspect.ismodule(v)}
    return (held - BOILERPLATE) | set(getattr(face, "_API", {}))


@pytest.mark.parametrize("name", FACES)
def test_all_is_exactly_the_public_names(name: str) -> None:
    face = importlib.import_module(name)
    exported = set(face.__all__) - {"__version__"}
    assert len(face.__all__) == len(set(face.__all__)), "a name listed twice"
    assert exported == public_names(face)
    assert not exported & submodules(face), "a name that is also a module would be shadowed by it"
    assert not [n for n in exported if n.startswith("_")]


@pytest.mark.parametrize("name", FACES)
def test_every_name_resolves_and_dir_lists_them(name: str) -> None:
    face = importlib.import_module(name)
    for n in face.__all__:
        value = getattr(face, n)
        assert not inspect.ismodule(value), f"{name}.{n} is a module: export its names instead"
    if hasattr(face, "_API"):
        assert dir(face) == sorted(face.__all__)
        with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
            face.not_a_name  # noqa: B018


@pytest.mark.parametrize("name", FACES)
def test_every_public_function_says_what_it_does(name: str) -> None:
    """help() on a public function shows its docstring and typed signature, compiled or not: mypyc
    drops both, so `engine.iteration_cost` had none in the default (compiled) build (a review)."""
    face = importlib.import_module(name)
    for n in face.__all__:
        value = getattr(face, n)
        if inspect.isroutine(value):
            assert (value.__doc__ or "").strip(), f"{name}.{n} has no docstring"
            first = next(iter(inspect.signature(value).parameters.values()), None)
            assert first is None or first.annotation is not inspect.Parameter.empty, f"{name}.{n} is untyped"
    cost = importlib.import_module("engine.costmodel.iteration").iteration_cost
    if (cost.__doc__ or "") == "":  # the compiled build: the face offers a documented wrapper of it
        assert importlib.import_module("engine").iteration_cost.__wrapped__ is cost


@pytest.mark.parametrize("name", LAZY)
def test_importing_a_face_loads_none_of_its_modules(name: str) -> None:
    # engine.faces is the loading mechanism every face shares, not one of a package's modules
    code = (
        f"import sys, {name}; "
        f"print(sorted(m for m in sys.modules if m.startswith('{name}.') and m != 'engine.faces'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("chosen", [None, "4"])
def test_numpy_loads_with_one_blas_thread_unless_the_user_chose(chosen: str | None) -> None:
    """`import engine` asks OpenBLAS for one thread (its spinning threads cost a cold start about
    0.07 s of CPU on two cores); a count the user set is kept, and numpy loaded after the engine
    sees it."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if chosen is not None:
        env["OPENBLAS_NUM_THREADS"] = chosen
    code = (
        "import os, engine; assert 'numpy' not in __import__('sys').modules; "
        "print(os.environ['OPENBLAS_NUM_THREADS'])"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (chosen or "1")


def inner_imports(source: str) -> list[str]:
    """The imports in `source` that reach inside an engine package rather than through its face."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("engine.") and a.name not in FACES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "engine":
            module = node.module or ""
            if module not in FACES:
                found.append(module)
            elif module != "engine":
                inner = submodules(importlib.import_module(module))
                found += [f"{module}.{a.name}" for a in node.names if a.name in inner]
    return found


def test_the_checker_sees_each_way_of_reaching_inside() -> None:
    source = (
        "from engine.scenario.model import Scenario\n"
        "from engine.explain import presentation as pr\n"
        "import engine.core.bounds\n"
        "from engine import explain, simulate\n"
        "from engine.explain import duration_text\n"
    )
    assert inner_imports(source) == [
        "engine.scenario.model",
        "engine.explain.presentation",
        "engine.core.bounds",
    ]


def test_the_ui_imports_only_the_faces() -> None:
    files = [
        ROOT / "app.py",
        *sorted((ROOT / "ui").rglob("*.py")),
        *sorted((ROOT / "app_pages").rglob("*.py")),
    ]
    reached = {str(f.relative_to(ROOT)): inner_imports(f.read_text()) for f in files}
    assert {f: r for f, r in reached.items() if r} == {}


def test_the_api_says_what_an_argument_of_the_wrong_type_should_be() -> None:
    """Wrong-typed arguments died in TypeErrors and AttributeErrors from deep inside (a review); each
    is a ScenarioError naming the argument and what it takes."""
    import pytest

    import engine
    from engine.core.errors import ScenarioError

    sc = engine.apply_overrides(engine.load_preset("chat-colocated"), {"duration_s": 10.0})
    cases = [
        (
            lambda: engine.sweep(sc, {"workload.arrival.rate_rps": [1.0]}, seeds=1.5),
            r"^seeds: a whole number",
        ),
        (lambda: engine.sweep(sc, None), r"^vary: field path -> the values"),  # type: ignore[arg-type]
        (lambda: engine.sweep(sc, {("a",): [1]}), r"^vary: field path"),  # type: ignore[dict-item]
        (lambda: engine.simulate(sc, slowdown={"h100-sxm": "x"}), r"^slowdown: chip id -> a number"),  # type: ignore[dict-item]
        (lambda: engine.simulate(sc, catalog="x"), r"^catalog: a Catalog"),  # type: ignore[arg-type]
        (lambda: engine.capacity(sc, low_rps="5"), r"^low_rps: must be a positive rate"),  # type: ignore[arg-type]
        (lambda: engine.plan(sc, 10.0, "x"), r"^space: a SearchSpace"),  # type: ignore[arg-type]
        (lambda: engine.load_scenario(5), r"^path: a scenario file's path"),  # type: ignore[arg-type]
    ]
    for call, said in cases:
        with pytest.raises(ScenarioError, match=said):
            call()
    with pytest.raises(
        ScenarioError, match=r"^model_change_months: must be in \(0, 600\] months \(got '12'\)"
    ):
        engine.advise(engine.simulate(sc), "12")  # type: ignore[arg-type]
