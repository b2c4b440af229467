"""The shipped TOML files parsed ahead of time: what tomllib makes of each, looked up by its text.

Python's TOML parser is written in Python: the catalog's 47 files and the calibration table
(about 90 kB) take about 130 M instructions (25 ms) to parse, as much as the rest of a
``run --json`` process costs besides its imports and its simulation; a scenario preset's text is
held too, so that a preset's run neither parses TOML nor imports tomllib (20 M instructions, for
its regular expressions). `write_table` (run by
``python tools/parsed_presets.py``) stores what tomllib made of each shipped file in
``presets/parsed.json``, keyed by the SHA-256 of the file's text; `lookup` finds a text's data
there. The table only saves time: a hit is what parsing that very text gives (the table holds a
file only when its data comes back from JSON the same, type for type), and a text it does not
hold (an edited entry, a user's own catalog) is parsed as before. tests/catalog/test_parsed.py
fails when a shipped file is missing from it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

TABLE = "parsed.json"
"""The table's file name in the presets folder."""
PARSED_FOLDERS = ("hardware", "models", "scenarios")
"""The presets folders whose files the table holds (with calibration.toml at the top): the catalog's
entries and the scenario presets, so that a run of a preset parses no TOML."""


def digest(text: str) -> str:
    """The key of a file's text in the table."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=4)
def _index(presets: Path) -> dict[str, str]:
    # digest -> the data's JSON text, decoded again at each hit so that every caller gets its own
    try:
        text = (presets / TABLE).read_text(encoding="utf-8")
        index = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError):
        return {}  # no table (or a damaged one): every file is parsed
    return index if isinstance(index, dict) else {}


def lookup(text: str, presets: Path) -> dict[str, Any] | None:
    """``tomllib.loads(text)`` when the table in the folder `presets` holds this text; else None."""
    index = _index(presets)
    if not index:
        return None
    found = index.get(digest(text))
    return json.loads(found) if isinstance(found, str) else None


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (1, 1.0 and True are three values here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return math.isfinite(a) and a == b
    return bool(a == b)


def shipped_files(presets: Path) -> list[Path]:
    """The files the table is for: calibration.toml and the catalog's entries."""
    files = [presets / "calibration.toml"]
    for folder in PARSED_FOLDERS:
        files.extend(sorted((presets / folder).glob("*.toml")))
    return [f for f in files if f.is_file()]


def table_text(files: Iterable[Path]) -> str:
    """The table of `files`, as JSON text: one line per file whose data survives JSON unchanged."""
    import tomllib  # only here: a run reads the table, and tomllib's import is 20 M instructions

    lines = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
        try:
            encoded = json.dumps(data, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):  # dates and times, infinities: such a file is parsed
            continue
        if _same(json.loads(encoded), data):
            lines.append(f"{json.dumps(digest(text))}: {json.dumps(encoded, ensure_ascii=False)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def write_table(presets: Path) -> Path:
    """Write the presets folder's table; returns its path."""
    out = presets / TABLE
    out.write_text(table_text(shipped_files(presets)), encoding="utf-8")
    _index.cache_clear()
    return out
