"""Parsers rebuilt from the stacks' flag lists in tests/planning/emit_flags/, for the export's tests.

Each `.flags` file names the flags a stack's own argument parser accepts (extracted by hand from the
source at the commit its header names) with the type that parser converts the value to. `parser`
builds an argparse parser from such files, so an emitted command parses only if every flag is in
the list and every value converts to the flag's type (an int flag given "0.9" fails, a choice flag
given a value outside its choices fails). `.keys` files list the key paths of a config file or
manifest, checked by `key_paths`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

FLAGS_DIR = Path(__file__).parent / "emit_flags"


class Refused(Exception):
    """The rebuilt parser refused a command."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit; a test wants the reason
        raise Refused(message)


def _entries(name: str) -> list[tuple[str, str]]:
    lines = (FLAGS_DIR / name).read_text(encoding="utf-8").splitlines()
    rows = [line.split(None, 1) for line in lines if line.strip() and not line.startswith("#")]
    return [(row[0], row[1] if len(row) > 1 else "") for row in rows]


def header(name: str) -> str:
    """The comment header of a flags or keys file (where its names come from)."""
    lines = (FLAGS_DIR / name).read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if line.startswith("#"))


def _bool_choice(value: str) -> str:
    raise argparse.ArgumentTypeError(f"a flag that takes no value was given {value!r}")


def parser(*names: str, positional_model: bool) -> _Parser:
    """An argparse parser accepting exactly the flags of the named `.flags` files."""
    p = _Parser(add_help=False, allow_abbrev=False)
    if positional_model:
        p.add_argument("model")
    seen: set[str] = set()
    for name in names:
        for flag, kind in _entries(name):
            if flag in seen:
                continue
            seen.add(flag)
            dest = "opt_" + flag.lstrip("-").replace("-", "_")
            if kind.endswith("!"):
                kind = kind[:-1]
                p.add_argument(flag, dest=dest, type=str, required=True)
            elif kind == "int":
                p.add_argument(flag, dest=dest, type=int)
            elif kind == "float":
                p.add_argument(flag, dest=dest, type=float)
            elif kind == "str":
                p.add_argument(flag, dest=dest, type=str)
            elif kind == "json":
                p.add_argument(flag, dest=dest, type=json.loads)
            elif kind == "bool":
                p.add_argument(flag, dest=dest, action="store_true")
            elif kind == "negbool":
                p.add_argument(flag, dest=dest, action=argparse.BooleanOptionalAction)
            elif kind.startswith("choice:"):
                p.add_argument(flag, dest=dest, choices=kind.removeprefix("choice:").split(","))
            else:
                raise ValueError(f"{name}: unknown type {kind!r} for {flag}")
    return p


def config_keys(name: str) -> dict[str, str]:
    """Dotted key -> type of a config-file `.keys` file (lines "a.b type")."""
    return dict(_entries(name))


def manifest_keys(name: str) -> set[str]:
    """The key paths (' :: '-joined) of a manifest `.keys` file."""
    lines = (FLAGS_DIR / name).read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def key_paths(doc: Any, wildcard_under: tuple[str, ...] = ()) -> set[str]:
    """Every leaf key path of a document, ' :: '-joined; list items as '[]'; keys of a mapping at a
    path in `wildcard_under` (e.g. Dynamo's service names) as '*'."""
    out: set[str] = set()

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if isinstance(node, dict) and node:
            for key, value in node.items():
                step = "*" if " :: ".join(path) in wildcard_under else str(key)
                walk(value, (*path, step))
        elif isinstance(node, list) and node:
            for item in node:
                walk(item, (*path, "[]"))
        else:
            out.add(" :: ".join(path))

    walk(doc, ())
    return out
