"""The size budget: rooms stay small, and today's excess may only shrink.

Product code (engine/, ui/, app_pages/, app.py) is measured against four limits: a file of at
most 600 lines, a function of at most 80, no ``# fmt: skip``, no line over 120 characters. What
exceeded them when the budget was set is listed in ``tools/size_allowance.toml``; an allowance may
only shrink. The check fails when

- a file, function or count goes past its limit and has no allowance, or past its allowance;
- an allowance is looser than the tree (something was shrunk: ``--update`` writes the tighter
  figures, and never loosens one).

Run: ``python tools/size_budget.py`` (``make lint`` does), ``--update`` after shrinking something,
``--totals`` for the four totals.
"""

from __future__ import annotations

import argparse
import ast
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALLOWANCE = ROOT / "tools" / "size_allowance.toml"
SOURCES = ("engine", "ui", "app_pages", "app.py")
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
MAX_LINE_CHARS = 120
FMT_SKIP = "# fmt: skip"
KINDS = ("files", "functions", "fmt_skip", "long_lines")
"""The four measures: lines of a file over the limit, lines of a function over the limit (keyed
``path::qualified.name``), ``# fmt: skip`` comments per file, lines over the limit per file."""


@dataclass
class Excess:
    """What a tree exceeds, per kind: key -> measure (only keys past their limit)."""

    files: dict[str, int] = field(default_factory=dict)
    functions: dict[str, int] = field(default_factory=dict)
    fmt_skip: dict[str, int] = field(default_factory=dict)
    long_lines: dict[str, int] = field(default_factory=dict)

    def kind(self, name: str) -> dict[str, int]:
        """The measures of one kind."""
        table: dict[str, int] = getattr(self, name)
        return table

    def totals(self) -> dict[str, int]:
        """How many files, functions, skips and long lines exceed the budget."""
        return {
            "files": len(self.files),
            "functions": len(self.functions),
            "fmt_skip": sum(self.fmt_skip.values()),
            "long_lines": sum(self.long_lines.values()),
        }


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, int]]:
    """(qualified name, lines) of every function in a module, nested ones included."""
    out: list[tuple[str, int]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            name = f"{prefix}{node.name}"
            if not isinstance(node, ast.ClassDef):
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                out.append((name, (node.end_lineno or node.lineno) - start + 1))
            out.extend(_functions(node, name + "."))
    return out


def measure(root: Path, sources: tuple[str, ...] = SOURCES) -> Excess:
    """The excess of the Python files under `sources` (relative to `root`)."""
    excess = Excess()
    paths: list[Path] = []
    for src in sources:
        p = root / src
        paths.extend(sorted(p.rglob("*.py")) if p.is_dir() else [p] if p.exists() else [])
    for path in paths:
        key = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        if len(lines) > MAX_FILE_LINES:
            excess.files[key] = len(lines)
        skips = sum(FMT_SKIP in line for line in lines)
        if skips:
            excess.fmt_skip[key] = skips
        long = sum(len(line) > MAX_LINE_CHARS for line in lines)
        if long:
            excess.long_lines[key] = long
        for name, n in _functions(ast.parse(text, filename=key)):
            if n > MAX_FUNCTION_LINES:
                excess.functions[f"{key}::{name}"] = n
    return excess


def load(path: Path = ALLOWANCE) -> Excess:
    """The allowance file's figures (an absent file allows nothing)."""
    if not path.exists():
        return Excess()
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return Excess(**{k: {str(a): int(b) for a, b in data.get(k, {}).items()} for k in KINDS})


def problems(tree: Excess, allowed: Excess) -> tuple[list[str], list[str]]:
    """(what exceeds its allowance, which allowances are looser than the tree)."""
    limits = {"files": MAX_FILE_LINES, "functions": MAX_FUNCTION_LINES, "fmt_skip": 0, "long_lines": 0}
    words = {
        "files": "lines (a file may have 600)",
        "functions": "lines (a function may have 80)",
        "fmt_skip": "'# fmt: skip' comments (none allowed)",
        "long_lines": "lines over 120 characters (none allowed)",
    }
    over, loose = [], []
    for kind in KINDS:
        have, allow = tree.kind(kind), allowed.kind(kind)
        for key, n in sorted(have.items()):
            cap = allow.get(key, limits[kind])
            if n > cap:
                was = f"its allowance is {cap}" if key in allow else "it has no allowance"
                over.append(f"{key}: {n} {words[kind]}; {was}")
        for key, cap in sorted(allow.items()):
            n = have.get(key, limits[kind])
            if n < cap:
                loose.append(f"{kind} {key}: allowance {cap}, now {n}")
    return over, loose


def write(path: Path, tree: Excess, allowed: Excess) -> None:
    """Write the tighter of the tree's figures and the old allowance (never a looser one)."""
    heads = {
        "files": "files over 600 lines: the most lines each may have",
        "functions": "functions over 80 lines (path::name): the most lines each may have",
        "fmt_skip": "'# fmt: skip' comments per file",
        "long_lines": "lines over 120 characters per file",
    }
    out = [
        "# The size budget's allowance: what exceeded it when it was set. It may only shrink;",
        "# `python tools/size_budget.py --update` writes tighter figures after a change shrinks one.",
    ]
    for kind in KINDS:
        have, allow = tree.kind(kind), allowed.kind(kind)
        out += ["", f"[{kind}]  # {heads[kind]}"]
        for key in sorted(set(have) & set(allow)):
            out.append(f'"{key}" = {min(have[key], allow[key])}')
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Check the tree against the allowance; 1 when it fails, with what to do."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--update", action="store_true", help="tighten the allowance to the tree (never loosen)")
    ap.add_argument(
        "--totals", action="store_true", help="print the four totals of the tree and the allowance"
    )
    ap.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    ap.add_argument("--init", action="store_true", help=argparse.SUPPRESS)  # set the allowance to the tree
    args = ap.parse_args(argv)
    path = args.root / "tools" / "size_allowance.toml"
    tree = measure(args.root)
    allowed = load(path)
    if args.init:
        write(path, tree, tree)
        return 0
    if args.totals:
        print("tree:     ", tree.totals())
        print("allowance:", allowed.totals())
    over, loose = problems(tree, allowed)
    if args.update and not over:
        write(path, tree, allowed)
        print(f"size budget: allowance tightened ({len(loose)} figures)")
        return 0
    for line in over:
        print(f"size budget: {line}", file=sys.stderr)
    for line in loose:
        print(f"size budget: shrunk, tighten the allowance with --update: {line}", file=sys.stderr)
    if over or loose:
        return 1
    print(f"size budget: within the allowance {allowed.totals()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
