"""The list of every summary field in docs/metrics.md, generated from `engine.serving.summary`'s TypedDicts.

Each field's path, type and docstring, between the markers of docs/metrics.md. Run:
``python tools/summary_fields.py`` (it rewrites the list; tests/serving/test_summary.py keeps it current).
"""

import ast
import inspect
import sys
import types
import typing
from pathlib import Path
from typing import Literal, NotRequired, TypedDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.serving.summary import Summary


def _docstrings(td: type) -> dict[str, str]:
    """Each field's attribute docstring in a TypedDict's source, its TypedDict bases' first."""
    module = sys.modules[td.__module__]
    node = ast.parse(inspect.getsource(td)).body[0]
    assert isinstance(node, ast.ClassDef)
    out: dict[str, str] = {}
    for base in node.bases:
        parent = getattr(module, base.id, None) if isinstance(base, ast.Name) else None
        if parent is not None and parent is not TypedDict and typing.is_typeddict(parent):
            out |= _docstrings(parent)
    for stmt, nxt in zip(node.body, node.body[1:], strict=False):
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
            out[stmt.target.id] = " ".join(str(nxt.value.value).split())
    return out


def _name(tp: object) -> str:
    """A type as written in the source, short (no module prefixes)."""
    if isinstance(tp, type) and not typing.get_args(tp):
        return "None" if tp is type(None) else tp.__name__
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_name(a) for a in args)
    if origin is Literal:
        return "Literal[" + ", ".join(repr(a) for a in args) + "]"
    return f"{getattr(origin, '__name__', str(origin))}[{', '.join(_name(a) for a in args)}]"


def _nested(tp: object) -> type | None:
    """The TypedDict a field holds (directly, as a dict's values, or beside None), if any."""
    if typing.is_typeddict(tp):
        return tp  # type: ignore[return-value]
    for arg in typing.get_args(tp):
        inner = _nested(arg)
        if inner is not None:
            return inner
    return None


def fields(td: type = Summary, prefix: str = "") -> list[tuple[str, str, bool, str]]:
    """Every field path under `td` (a dict's keys as ``<name>``): (path, type, required, docstring)."""
    hints = typing.get_type_hints(td, globalns=vars(sys.modules[td.__module__]), include_extras=True)
    docs = _docstrings(td)
    out: list[tuple[str, str, bool, str]] = []
    for key, tp in hints.items():
        required = key in td.__required_keys__  # type: ignore[attr-defined]
        bare = typing.get_args(tp)[0] if typing.get_origin(tp) is NotRequired else tp
        path = f"{prefix}{key}"
        out.append((path, _name(bare), required, docs.get(key, "")))
        inner = _nested(bare)
        if inner is not None:
            keyed = typing.get_origin(bare) is dict
            out += fields(inner, f"{path}.<name>." if keyed else f"{path}.")
    return out


BEGIN = "<!-- summary-fields:begin -->"
"""docs/metrics.md's marker before the generated field list."""
END = "<!-- summary-fields:end -->"
"""docs/metrics.md's marker after it."""


def markdown() -> str:
    """The table of every summary field for docs/metrics.md (between its generated markers)."""
    lines = ["| Field | Type | Meaning |", "| --- | --- | --- |"]
    for path, tp, required, doc in fields():
        tp = tp.replace("|", "\\|")
        lines.append(f"| `{path}` | {tp}{'' if required else ' (optional)'} | {doc} |")
    return "\n".join(lines) + "\n"


def update_doc(path: str) -> bool:
    """Write `markdown()` between the markers of a Markdown file (docs/metrics.md); True if it changed."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    head, sep, rest = text.partition(BEGIN + "\n")
    _, sep2, tail = rest.partition(END)
    if not sep or not sep2:
        raise ValueError(f"{path} lacks the markers {BEGIN} ... {END}")
    new = head + sep + markdown() + sep2 + tail
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(new)
    return new != text


if __name__ == "__main__":  # python tools/summary_fields.py [docs/metrics.md]: regenerate the field list
    print("updated" if update_doc(sys.argv[1] if len(sys.argv) > 1 else "docs/metrics.md") else "current")
