"""What the command-line modules share: scenario loading with overrides, and JSON output."""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from engine.core.errors import ScenarioError
from engine.core.numbers import json_plain
from engine.scenario import codec as scenario_io
from engine.scenario import naming
from engine.scenario.model import Scenario
from engine.scenario.workload import unused_with_trace


def dumps(data: Any) -> str:
    """One JSON document, indented."""
    return json.dumps(json_plain(data), indent=2)


def emit_json(data: Any) -> None:
    """Print one JSON document to stdout."""
    sys.stdout.write(dumps(data) + "\n")


def add_work_limit_flag(parser: argparse.ArgumentParser, more: str = "") -> None:
    """Add ``--no-work-limit``: lift the work bound (engine.serving.work_bound) for a trusted local run."""
    parser.add_argument(
        "--no-work-limit",
        action="store_true",
        help="run even when the estimated work (events, router looks, cache blocks, memory) is over "
        f"the bounds of docs/bounds.md{more}; for trusted local runs",
    )


def is_file_ref(ref: str) -> bool:
    """Whether a scenario reference names a file rather than a preset: it exists, or it reads as a
    path (a folder in it, or a .toml / .json name), so that a missing file is said to be missing
    ("cannot read (No such file or directory)"), not an unknown preset with the presets listed."""
    p = Path(ref)
    return p.exists() or len(p.parts) > 1 or p.suffix.lower() in (".toml", ".json")


def nested(a: str, b: str) -> bool:
    """Whether field path `a` holds `b` or `b` holds `a` ('cost.usd_per_hour' and 'cost.usd_per_hour.h100-sxm',
    'workload.arrival' and 'workload.arrival.rate_rps'), by their parsed parts (a chip id 'my.v2' is no
    child of 'my', 'pools[01]' is 'pools[1]': a review); a path never nests itself."""
    pa, pb = scenario_io.parse_path(a.strip()), scenario_io.parse_path(b.strip())
    if pa == pb:
        return False
    short, long = sorted((pa, pb), key=len)
    return long[: len(short)] == short


def same_path(a: str, b: str) -> bool:
    """Whether two field paths name one field ('deployment.pools[01].count' and '...[1].count')."""
    return scenario_io.parse_path(a.strip()) == scenario_io.parse_path(b.strip())


def check_overlaps(sets: Sequence[str], vary: Mapping[str, Any]) -> None:
    """Refuse a `--set` of a field `--vary` sets, or a table holding it (its value was dropped for the
    --vary's, unsaid), and two `--vary` of one field or of a table and a field in it (combined unsaid):
    reviews."""
    set_paths = sorted({item.partition("=")[0].strip() for item in sets})
    if over := next(((p, v) for p in set_paths for v in vary if same_path(p, v) or nested(p, v)), None):
        raise ScenarioError(
            f"--set {over[0]}: overlaps --vary {over[1]}, whose values replace it; give the field to one"
        )
    names = sorted(vary)
    if both := next(
        ((a, b) for a in names for b in names if a < b and (same_path(a, b) or nested(a, b))), None
    ):
        raise ScenarioError(f"--vary {both[1]}: overlaps --vary {both[0]}; vary each field once")


def load_scenario(ref: str, sets: Sequence[str] | None) -> Scenario:
    """A scenario from a file path or a preset name, with ``--set PATH=VALUE`` overrides.

    An edited scenario is named after its model and pools, "edited from" the preset or file
    (`engine.scenario.naming`), unless the overrides set its name.
    """
    if not is_file_ref(ref):
        return with_sets(scenario_io.load_preset(ref), sets, ref)
    scen = scenario_io.load(ref)
    edited = with_sets(scen, sets, Path(ref).stem)
    # a name the file gives that the catalog lacks is said of the file, as its other refusals are (a CLI
    # review); one a --set gives, or one a --set mends, as it was
    if (problem := unknown_names(edited)) and problem == unknown_names(scen):
        raise ScenarioError(f"{Path(ref).name}: {problem}")
    return edited


def unknown_names(scen: Scenario) -> str:
    """The first model or chip a scenario names that its catalog lacks, as `resolve` refuses it ('' for none):
    checked where the file is read, so that the refusal names the file (a run refused it later, unnamed)."""
    from engine.scenario.resolve import scenario_catalog
    from engine.scenario.resolve import unknown_names as unknown

    return unknown(scen, scenario_catalog(scen))


def with_sets(scen: Scenario, sets: Sequence[str] | None, source: str, flag: str = "--set") -> Scenario:
    """`scen` with ``PATH=VALUE`` overrides (`flag`'s, as its refusals name it), named "edited from"
    `source` (`load_scenario`)."""
    overrides: dict[str, Any] = {}
    for item in sets or ():
        path, sep, value = item.partition("=")
        if not sep or not path.strip():  # ('=5' read "malformed field path ''", no flag named: a review)
            raise ScenarioError(f"{flag} {item!r}: expected path=value")
        # the last silently won, where a --vary twice is refused
        if any(same_path(p, path) for p in overrides):
            raise ScenarioError(f"{flag} {path.strip()}: given twice; give each field once")
        if inside := next((p for p in overrides if nested(p, path.strip())), None):  # 'x.y=3' then 'x={}'
            raise ScenarioError(  # dropped the first, unsaid (a review)
                f"{flag} {path.strip()}: overlaps {flag} {inside} (one holds the other); give the field once"
            )
        overrides[path.strip()] = scenario_io.parse_override(flag, path, value)
    if not overrides:
        return scen
    edited = scenario_io.apply_overrides(scen, overrides)
    if why := unused_with_trace(edited.workload, overrides):
        raise ScenarioError(f"{flag} {why}")
    return naming.named(edited, scen, source)  # a name that says what it runs


def check_range(value: float | None, flag: str, low: float, high: float, *, above: bool = False) -> None:
    """Refuse a flag's number outside [low, high] (or (low, high] with `above`), NaN and infinities
    included, naming the flag and the range; None (the flag not given) passes."""
    if value is None:
        return
    ok = (low < value if above else low <= value) and value <= high
    if not (ok and math.isfinite(value)):
        opening = "(" if above else "["
        raise ScenarioError(f"{flag}: must be in {opening}{low:g}, {high:g}] (got {value:g})")


def check_writable_file(path: str, flag: str = "--out") -> None:
    """Refuse, before any work, a file destination that cannot be written: its folder missing or
    not a folder, the path a folder, or no permission (tried by creating the file, then removing it
    again when it was not there before)."""
    target = Path(path)
    if target.is_dir():
        raise ScenarioError(f"{flag} {path}: is a folder; name a file")
    folder = target.parent
    if not folder.is_dir():
        raise ScenarioError(f"{flag} {path}: {folder} is not an existing folder")
    existed = target.exists()
    try:
        with target.open("ab"):
            pass
    except OSError as exc:
        raise ScenarioError(
            f"{flag} {path}: cannot write there ({exc.strerror or type(exc).__name__})"
        ) from None
    if not existed:
        target.unlink(missing_ok=True)


def check_writable_folder(path: str, flag: str = "--out") -> None:
    """Refuse, before any work, a folder destination that cannot be made or written (creating it)."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
        probe = Path(path) / ".fengong-write-check"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise ScenarioError(
            f"{flag} {path}: cannot write there ({exc.strerror or type(exc).__name__}); name a folder"
        ) from None


FREEZE_AFTER_LOADING = False
"""Set by ``python -m engine``, a process that ends with its command: a command's modules are then
imported with the cyclic garbage collector paused and frozen once loaded (`gc.freeze`), so that the
collector scans their classes, functions and validators neither while they load nor in its full
collections during the command (with the same for the parser's imports in ``engine.__main__``:
about 24 M instructions of a ``run --json``, docs/performance.md). Left unset where the command
line runs inside another process (tests), which keeps its collector as it is."""


def _load(module: str) -> ModuleType:
    if not FREEZE_AFTER_LOADING or not gc.isenabled():
        return importlib.import_module(module)
    gc.disable()
    try:
        loaded = importlib.import_module(module)
        gc.freeze()
    finally:
        gc.enable()
    return loaded


def command(target: str) -> Callable[[argparse.Namespace], int]:
    """The command ``"module:function"`` (e.g. ``"engine.cli.run:cmd_run"``), imported when it runs."""
    module, _, name = target.partition(":")

    def run(args: argparse.Namespace) -> int:
        return int(getattr(_load(module), name)(args))

    run.__qualname__ = run.__name__ = name
    return run


class ProgressBar:
    """A tqdm bar on stderr driven by the engine's progress callbacks; none where stderr is not a terminal
    (a log file got hundreds of kilobytes of redrawn bars)."""

    def __init__(self, total: int, desc: str, enabled: bool) -> None:
        from tqdm import tqdm

        shown = enabled and sys.stderr.isatty()
        self.bar = tqdm(total=total, desc=desc, file=sys.stderr, disable=not shown, leave=False)

    def plan(self, done: int, total: int, note: str) -> None:
        self.bar.total = total
        self.bar.n = done
        self.bar.set_postfix_str(note, refresh=True)

    def sweep(self, done: int, total: int) -> None:
        self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        self.bar.close()


def aligned(rows: Sequence[Sequence[str]], right: Sequence[bool], gap: str = " ") -> list[str]:
    """Rows of cells as lines whose columns line up: each column as wide as its widest cell (the header
    row included), right-aligned where `right` says; the last column is left as it is (free text).
    Fixed widths let a wide figure push the rest of its row out of line (cerebras-wse3's 21,000 TB/s)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(right))]
    out = []
    for r in rows:
        cells = [c.rjust(w) if ra else c.ljust(w) for c, w, ra in zip(r, widths, right, strict=False)]
        out.append(gap.join([*cells, *r[len(right) :]]).rstrip())
    return out


def whole(text: str) -> int:
    """An argparse type: a whole number, refused with the text cut short (argparse echoed a 5,000-digit value
    whole: a CLI review)."""
    try:
        if len(text) > 30:
            raise ValueError
        return int(text)
    except ValueError:
        shown = text if len(text) <= 30 else f"{text[:20]}... ({len(text):,} characters)"
        raise argparse.ArgumentTypeError(f"not a whole number of at most 30 digits: {shown!r}") from None
