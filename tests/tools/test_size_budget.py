"""The size budget (tools/size_budget.py): a new excess fails the lint, and allowances only shrink."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _budget() -> ModuleType:
    spec = importlib.util.spec_from_file_location("size_budget", ROOT / "tools" / "size_budget.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["size_budget"] = module
    spec.loader.exec_module(module)
    return module


def _tree(root: Path, files: dict[str, str], allowance: str = "") -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "tools").mkdir(exist_ok=True)
    (root / "tools" / "size_allowance.toml").write_text(allowance, encoding="utf-8")
    return root


def _function(lines: int) -> str:
    return "def f() -> None:\n" + "    x = 1\n" * (lines - 1)


def test_the_repository_is_within_its_allowance() -> None:
    assert _budget().main([]) == 0


def test_each_new_excess_fails_and_says_what(tmp_path: Path, capsys: object) -> None:
    budget = _budget()
    ok = {"engine/a.py": _function(80) + "y = 2  # short\n"}
    assert budget.main(["--root", str(_tree(tmp_path / "ok", ok))]) == 0
    cases = {
        "long file": ("x = 1\n" * 601, "601 lines (a file may have 600)"),
        "long function": (_function(81), "engine/a.py::f: 81 lines"),
        "fmt skip": ("x = (1, 2)  # fmt: skip\n", "1 '# fmt: skip'"),
        "long line": ("x = '" + "a" * 120 + "'\n", "1 lines over 120 characters"),
    }
    for label, (text, words) in cases.items():
        root = _tree(tmp_path / label.replace(" ", "_"), {"engine/a.py": text})
        assert budget.main(["--root", str(root)]) == 1, label
        assert words in capsys.readouterr().err, label  # type: ignore[attr-defined]


def test_an_allowance_holds_its_figure_and_only_shrinks(tmp_path: Path, capsys: object) -> None:
    budget = _budget()
    allowance = '[fmt_skip]\n"engine/a.py" = 2\n'
    two = "x = (1, 2)  # fmt: skip\ny = (3, 4)  # fmt: skip\n"
    assert budget.main(["--root", str(_tree(tmp_path / "held", {"engine/a.py": two}, allowance))]) == 0
    three = two + "z = (5, 6)  # fmt: skip\n"
    assert budget.main(["--root", str(_tree(tmp_path / "grown", {"engine/a.py": three}, allowance))]) == 1
    one = "x = (1, 2)  # fmt: skip\n"
    root = _tree(tmp_path / "shrunk", {"engine/a.py": one}, allowance)
    assert budget.main(["--root", str(root)]) == 1  # the allowance must be tightened
    assert "tighten the allowance" in capsys.readouterr().err  # type: ignore[attr-defined]
    assert budget.main(["--root", str(root), "--update"]) == 0
    assert '"engine/a.py" = 1' in (root / "tools" / "size_allowance.toml").read_text()
    assert budget.main(["--root", str(root)]) == 0
