"""Scenario serialisation: TOML and JSON files, field paths, overrides and share links.

One path syntax addresses any field everywhere (``--set``, ``--vary``, share links, error
messages): dotted names with list indices, e.g. ``workload.classes[0].share``.

A share link carries the preset's name plus only the fields changed from it, as a versioned,
compressed payload in the query string. A link is untrusted input: its size is bounded, it is
decoded defensively, and the result is validated like any other scenario.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import math
import os
import typing
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from engine.catalog import parsed
from engine.catalog.entries import presets_dir
from engine.core import bounds, datafiles, safeparse
from engine.core.errors import ScenarioError
from engine.scenario.model import SCHEMA_VERSION, Scenario, validate
from engine.scenario.paths import CHIP_TABLES as CHIP_TABLES
from engine.scenario.paths import MAX_SCENARIO_CHARS as MAX_SCENARIO_CHARS
from engine.scenario.paths import diff as diff
from engine.scenario.paths import format_parts as format_parts
from engine.scenario.paths import get_path as get_path
from engine.scenario.paths import parse_override as parse_override
from engine.scenario.paths import parse_path as parse_path
from engine.scenario.paths import parse_value as parse_value
from engine.scenario.paths import set_path as set_path

LINK_VERSION = 1
"""Version of the share-link payload format."""


# --- plain data ---------------------------------------------------------------------------


def to_data(scenario: Scenario, *, minimal: bool = False) -> dict[str, Any]:
    """The scenario as plain JSON-compatible data (minimal: only fields off their default)."""
    data = scenario.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=minimal)
    data["version"] = SCHEMA_VERSION
    return data


def from_data(data: Any) -> Scenario:
    """A validated scenario from plain data."""
    if not isinstance(data, dict):
        raise ScenarioError("a scenario must be a table of fields")
    return validate(data)


PINNED = (
    ("model", "id"),
    ("model", "weights"),
    ("deployment", "mode"),
    ("deployment", "stack"),
    ("seed",),
    ("duration_s",),
)
"""Fields a written scenario states even at their default: what it serves, on what, for how long. A
planner's file left out the model, every pool's chip and the seed, so it read as the defaults of
whichever version opened it (a review)."""
POOL_PINNED = ("name", "role", "hardware", "count", "tp")
"""A pool's fields a written scenario states even at their default (`PINNED`)."""


def _pinned(data: dict[str, Any], full: dict[str, Any]) -> dict[str, Any]:
    """`data` (a minimal dump) with `PINNED` and every pool's `POOL_PINNED` fields from `full`."""
    for path in PINNED:
        src, dst = full, data
        for key in path[:-1]:
            src, dst = src.get(key, {}), dst.setdefault(key, {})
        if path[-1] in src:
            dst[path[-1]] = src[path[-1]]
    pools = data.setdefault("deployment", {}).get("pools") or [{} for _ in full["deployment"]["pools"]]
    data["deployment"]["pools"] = [
        {**{k: fp[k] for k in POOL_PINNED if k in fp}, **mp}
        for mp, fp in zip(pools, full["deployment"]["pools"], strict=True)
    ]
    return data


def dumps_toml(scenario: Scenario) -> str:
    """The scenario as a TOML document (fields at their default are left out, but for `PINNED`)."""
    data = _pinned(to_data(scenario, minimal=True), to_data(scenario))
    head: dict[str, Any] = {k: data.pop(k) for k in ("version", "name", "description") if k in data}
    import tomli_w  # only when a scenario is written

    return tomli_w.dumps({**head, **data}, multiline_strings=True)


def loads_toml(text: str) -> Scenario:
    """A scenario from TOML text (size- and depth-limited: it may come from anywhere); a shipped
    preset's text is found parsed ahead (`engine.catalog.parsed`), so that its run parses no TOML."""
    if len(text) <= MAX_SCENARIO_CHARS:
        data = parsed.lookup(text, presets_dir())
        if data is not None:
            return from_data(data)
    return from_data(_a_scenario(safeparse.loads_toml(text, "scenario", MAX_SCENARIO_CHARS)))


SCENARIO_TABLES = ("model", "workload", "deployment")
"""The tables a scenario's text sets at least one of: what it serves, its load, its chips."""


def _a_scenario(data: Any) -> Any:
    """`data` where its text sets a scenario's table, else ScenarioError: an empty file was judged as the
    defaults' scenario and refused for a pool it never named ("deployment.pools[0].tp: llama-3.1-70b in
    bf16 needs 131 GiB", a review)."""
    if isinstance(data, dict) and not any(k in data for k in SCENARIO_TABLES):
        raise ScenarioError(
            "sets none of model, workload and deployment: a scenario says what it serves, its load and its "
            "chips (docs/scenario.md; `fengong scenario PRESET` prints a complete one to start from, "
            "presets/scenarios holds them)"
        )
    return data


def dumps_json(scenario: Scenario) -> str:
    """The scenario as a JSON document (every field, defaults included)."""
    return json.dumps(to_data(scenario), indent=2, sort_keys=False)


def loads_json(text: str) -> Scenario:
    """A scenario from JSON text (size- and depth-limited: it may come from anywhere)."""
    return from_data(_a_scenario(safeparse.loads_json(text, "scenario", MAX_SCENARIO_CHARS)))


def load(path: str | Path) -> Scenario:
    """A scenario from a .toml or .json file."""
    if not isinstance(path, str | os.PathLike):  # (5 died in a TypeError: a review)
        raise ScenarioError(f"path: a scenario file's path, a str or a Path (got {path!r})")
    p = Path(path)
    try:
        # the limit is in characters, up to four bytes each: a file read to the limit's count in bytes
        # was cut, and a 1 MiB file of accented comments lost the fields after them without a word
        # (a review); a file past four bytes a character is over the limit whatever it holds
        most = 4 * MAX_SCENARIO_CHARS + 3
        with p.open("rb") as fh:
            raw = fh.read(most + 1)
        if len(raw) > most:
            raise ScenarioError(
                f"{p}: over {most:,} bytes; a scenario file holds at most {MAX_SCENARIO_CHARS:,} characters"
            )
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        # a preset's name given as a path (a review): the call that takes it
        named = (
            f"; a preset's name is loaded by load_preset({str(path)!r})"
            if str(path) in preset_names()
            else ""
        )
        raise ScenarioError(f"{p}: cannot read ({exc.strerror or type(exc).__name__}){named}") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{p}: not UTF-8 text") from None
    try:
        return loads_json(text) if p.suffix.lower() == ".json" else loads_toml(text)
    except ScenarioError as exc:
        raise ScenarioError(f"{p.name}: {exc}") from None


def save(scenario: Scenario, path: str | Path) -> None:
    """Write a scenario to a .toml or .json file."""
    p = Path(path)
    p.write_text(
        dumps_json(scenario) if p.suffix.lower() == ".json" else dumps_toml(scenario), encoding="utf-8"
    )


# --- presets ------------------------------------------------------------------------------

DEFAULT_PRESET = "chat-disaggregated"
"""The preset the app and the CLI start from."""


def preset_names() -> list[str]:
    """Names of the shipped scenario presets."""
    return sorted(p.stem for p in (presets_dir() / "scenarios").glob("*.toml"))


def load_preset(name: str) -> Scenario:
    """A shipped preset by name (`preset_names()`)."""
    if not isinstance(name, str):  # ('unknown preset None' and every name: a review)
        raise ScenarioError(
            f"name: a preset's name, a str such as 'chat-colocated' (got {type(name).__name__})"
        )
    if name not in preset_names():
        import difflib  # a refusal's hint: not on the import path

        near = difflib.get_close_matches(name, preset_names(), n=1)
        hint = f"did you mean {near[0]!r}? " if near else ""
        raise ScenarioError(f"unknown preset {name!r}; {hint}known: {', '.join(preset_names())}")
    return load(presets_dir() / "scenarios" / f"{name}.toml")


def apply_overrides(scenario: Scenario, overrides: dict[str, Any], *, merge: bool = True) -> Scenario:
    """The scenario with fields changed by path; the result is validated again.

    A table given where the scenario holds a table changes the fields it names and keeps the others
    (``{"workload.classes[0].slo": {"ttft_ms": 500}}`` keeps the class's TPOT target and percentile),
    table within table; one that names another ``kind`` (a length distribution, an arrival process),
    or another policy (`POLICY_TABLES`' ``name``), replaces it whole, the new one's fields starting
    from their defaults. `merge` False: every value
    replaces what is there whole (the engine's own callers, which give whole tables). The paths apply in
    the mapping's order, each to what the earlier ones left: a list set whole, then a field of one of its
    items; a field, then its table given again (the table's value wins)."""
    if not isinstance(scenario, Scenario):  # (a Python error named neither argument: a review)
        raise ScenarioError(
            f"scenario: a Scenario (engine.load_preset(name)), not a {type(scenario).__name__}"
        )
    bad = (
        f"a {type(overrides).__name__}"
        if not isinstance(overrides, Mapping)
        else next((f"the key {k!r}" for k in overrides if not isinstance(k, str)), "")
    )
    if bad:
        raise ScenarioError(
            f"overrides: a mapping of field path to value, e.g. {{'workload.arrival.rate_rps': 20}} (got {bad})"
        )
    data = to_data(scenario)  # a fresh copy: changed in place
    for path, value in overrides.items():  # (values copied: a later path may change inside one)
        value = copy.deepcopy(value)
        parts = parse_path(path)
        if value is None and len(parts) > 1 and format_parts(parts[:-1]) in CHIP_TABLES:
            table = get_path(data, format_parts(parts[:-1]))
            if isinstance(table, dict):  # a chip's entry dropped: its catalog figure again
                table.pop(parts[-1], None)
                continue
        if merge and isinstance(value, dict) and not (value == {} and path in CHIP_TABLES):
            try:
                old = get_path(data, path)
            except ScenarioError:  # a table not there yet (an optional one unset), or no such field
                old = None
            value = merged(old, value, parse_path(path)[-1])
        set_path(data, path, value, copy_data=False)
    return from_data(data)


POLICY_TABLES = frozenset({"router", "queue", "admission", "iteration", "policy"})
"""The tables that are a policy (`PolicySpec`): its ``name`` says which, as ``kind`` says a length
distribution's or an arrival's, so a table naming another policy replaces the old one, knobs and all
(the new one refuses the old one's knobs by name: docs/autoscaling.md)."""


def merged(old: Any, new: dict[str, Any], key: str | int | None = None) -> Any:
    """`new` laid over the table `old` at field `key` (`apply_overrides`): `new` itself where `old` is
    no table or `new` names another ``kind`` (or, for a policy, another ``name``)."""
    tag = "name" if key in POLICY_TABLES else "kind"
    if not isinstance(old, dict) or (tag in new and new[tag] != old.get(tag)):
        return new
    out = dict(old)
    for k, value in new.items():
        out[k] = merged(old.get(k), value, k) if isinstance(value, dict) else value
    return out


def window_changes(scenario: Scenario, duration_s: float) -> dict[str, float]:
    """The changes that give `scenario` a window of `duration_s`: the window, and where the warm-up would
    no longer fit below it, a warm-up that keeps its share of the window (300 s of a 600 s window, cut
    to 120 s: 60 s), to 0.1 s below, so it stays under the window. What the dashboard's window does;
    the CLI's ``--set duration_s=`` refuses instead, naming both fields (an explicit setting is kept)."""
    changes = {"duration_s": duration_s}
    if 0 < duration_s <= scenario.warmup_s:
        changes["warmup_s"] = (
            math.floor(scenario.warmup_s / scenario.duration_s * duration_s * 10 + 1e-9) / 10
        )
    return changes


# --- share links --------------------------------------------------------------------------


def to_link(scenario: Scenario, preset: str) -> dict[str, str]:
    """Query parameters that reproduce `scenario` from `preset`: ``v``, ``p`` and ``s``."""
    base = to_data(load_preset(preset))
    changes = diff(base, to_data(scenario))
    params = {"v": str(LINK_VERSION), "p": preset}
    if changes:
        raw = json.dumps(changes, separators=(",", ":"), sort_keys=True).encode()
        params["s"] = base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")
    return params


SEEDS_NOTE = "# shown on the dashboard as the mean of "
"""How an exported scenario file's first comment opens where the dashboard showed its figures as the mean of
several seeds, the count next (the dashboard writes and reads it; `scenario --link` carries it)."""
SEED_COUNTS = (1, 3, 5, 10)
"""The seeds counts the dashboard offers (its seeds picker's; 1: one seed, as always)."""
SEEDS_PAGES = ("results", "compare")
"""The dashboard's pages with a seeds picker, whose figures a link's `seeds` makes the mean of several seeds."""


def seeds_stated(path: str | Path) -> int | None:
    """The seeds count a scenario file's first comment states (`SEEDS_NOTE`), where it is one the dashboard
    offers above one; None otherwise, or where the file cannot be read (its loading says why)."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            first = fh.readline(200)
    except OSError:
        return None
    if not first.startswith(SEEDS_NOTE):
        return None
    raw = first[len(SEEDS_NOTE) :].split(" ", 1)[0]
    return next((n for n in SEED_COUNTS if n > 1 and str(n) == raw), None)


def closest_preset(scenario: Scenario) -> str:
    """The shipped preset the scenario differs from in the fewest fields (`diff`; ties to the first
    by name): what a scenario opened from a file is kept relative to. The preset shown before the file
    was kept, so a file exported from an edited chat-colocated and opened over chat-disaggregated read
    as chat-disaggregated's, its counterpart itself and Reset going there (a review). A name that says
    which preset it was edited from is taken at its word."""
    names = preset_names()
    # the preset its name says it was edited from (`naming.derived_name`): a whole replaced table counts
    # as one difference, so an edited chat-disaggregated with its pools and classes changed read as
    # portfolio-chat-batch's (9 differences against 10: a review)
    from engine.scenario.naming import edited_from  # (naming reads the scenario model only)

    if (said := edited_from(scenario.name)) in names:
        return said
    mine = to_data(scenario)
    return min(names, key=lambda n: (len(diff(to_data(load_preset(n)), mine)), n))


def data_paths(scenario: Scenario) -> list[tuple[str, str]]:
    """(field path, file path) of every data file a scenario reads (traces, empirical lengths)."""
    out = []
    if scenario.workload.trace is not None:
        out.append(("workload.trace.path", scenario.workload.trace.path))
    for i, c in enumerate(scenario.workload.classes):
        for side in ("input", "output"):
            dist = getattr(c, side)
            if dist.kind == "empirical" and dist.path:
                out.append((f"workload.classes[{i}].{side}.path", dist.path))
    return out


def unsafe_paths(scenario: Scenario) -> list[str]:
    """Fields naming a data file an untrusted scenario (a link, a file opened in the app) may not read.

    Such a scenario may name only shipped (``data:``) and uploaded (``upload:``) files that
    exist inside their folders; any other path would let a link make the server read, and echo
    parts of, an arbitrary local file (see engine.core.datafiles).
    """
    return datafiles.untrusted_problems(data_paths(scenario))


def check_untrusted(scenario: Scenario) -> Scenario:
    """The scenario, if an untrusted origin may run it; ScenarioError naming the fields otherwise."""
    bad = unsafe_paths(scenario)
    if bad:
        raise ScenarioError("; ".join(bad))
    return scenario


def from_link(params: dict[str, str]) -> Scenario:
    """The scenario a share link describes; ScenarioError names what is wrong with it.

    A link is untrusted input: its payload is bounded in size and nesting, decoded in time
    linear in its length, validated like any scenario, and may only name shipped or uploaded
    data files (`check_untrusted`).
    """
    return check_untrusted(_from_link(params))


def _decode_payload(payload: str) -> dict[str, Any]:
    """The changes a link payload carries (field path -> value)."""
    if len(payload) > bounds.MAX_LINK_CHARS:
        raise ScenarioError(
            f"link payload is {len(payload):,} characters; the limit is {bounds.MAX_LINK_CHARS:,}"
        )
    try:
        raw = base64.b64decode(payload + "=" * (-len(payload) % 4), altchars=b"-_", validate=True)
        decomp = zlib.decompressobj()
        text = decomp.decompress(raw, MAX_LINK_EXPANDED_BYTES)
        too_big = bool(decomp.unconsumed_tail)
        complete = decomp.eof
    except (binascii.Error, zlib.error, ValueError):
        raise ScenarioError("link payload is not a valid encoded scenario") from None
    if too_big:
        raise ScenarioError(f"link payload expands beyond {MAX_LINK_EXPANDED_BYTES:,} bytes (the size limit)")
    if not complete:
        raise ScenarioError("link payload is not a valid encoded scenario (cut short)")
    changes = safeparse.loads_json(text, "link payload")
    if not isinstance(changes, dict) or not all(isinstance(k, str) for k in changes):
        raise ScenarioError("link payload must map field paths to values")
    return changes


MAX_LINK_EXPANDED_BYTES = 64 * bounds.MAX_LINK_CHARS
"""Largest decompressed link payload (512 KiB)."""


MAX_PARTIAL_CHANGES = 200
"""Most changes a link may carry for `from_link_partial` to try them one at a time (each a validation)."""


def from_link_partial(
    params: dict[str, str], check: Callable[[Scenario], object] | None = None
) -> tuple[Scenario, list[str]]:
    """A link whose changes do not all hold, with those that do: the scenario of its preset and every
    change that validates (and passes `check`, the caller's own: the app's resolves it) on top of the
    ones before it, and why each other was refused. One bad field threw the whole link away, its valid
    changes with it (a review). The changes of one table (a pool's dp and ep) are tried together
    first, in the payload's order, then one by one where together they fail: two that hold only
    together were both refused. Raises the link's own `ScenarioError` where no part of it can be
    read (its version, preset or payload), or where it carries more than `MAX_PARTIAL_CHANGES`."""
    _preset_of(params)
    changes = _decode_payload(params.get("s", "")) if params.get("s") else {}
    if len(changes) > MAX_PARTIAL_CHANGES:
        raise ScenarioError(
            f"link payload holds {len(changes):,} changes; at most {MAX_PARTIAL_CHANGES} are tried one by one"
        )
    scenario, refused = load_preset(params.get("p", DEFAULT_PRESET)), []

    def tried(some: dict[str, Any]) -> Scenario:
        out = check_untrusted(from_data(_applied(to_data(scenario), some)))
        if check is not None:
            check(out)
        return out

    tables: dict[str, dict[str, Any]] = {}
    for path, value in changes.items():  # by the table each path sits in, in the payload's order
        tables.setdefault(path.rpartition(".")[0], {})[path] = value
    for group in tables.values():
        try:
            scenario = tried(group)
            continue
        except ScenarioError as exc:
            if len(group) == 1:
                refused.append(str(exc))
                continue
        for path, value in group.items():
            try:
                scenario = tried({path: value})
            except ScenarioError as exc:
                refused.append(str(exc))
    return scenario, refused


def _preset_of(params: dict[str, str]) -> str:
    """The link's preset, its version checked; ScenarioError where either is not one this reads."""
    version = params.get("v", str(LINK_VERSION))
    if version != str(LINK_VERSION):
        raise ScenarioError(f"link version {version[:16]!r} is not supported (expected {LINK_VERSION})")
    preset = params.get("p", DEFAULT_PRESET)
    if preset not in preset_names():
        raise ScenarioError(
            f"link preset {preset[:64]!r} is unknown: not one of the {len(preset_names())} shipped presets, "
            "which the sidebar's preset picker lists"
        )
    return preset


def _from_link(params: dict[str, str]) -> Scenario:
    preset = _preset_of(params)
    payload = params.get("s", "")
    if not payload:
        return load_preset(preset)
    return from_data(_applied(to_data(load_preset(preset)), _decode_payload(payload)))


def _nullable(path: str) -> bool:
    """False where `path` names a scenario field whose type has no None (a window, a seed); True where it
    has, or where the path leads through something other than models and lists (a mapping's entry)."""
    cls: Any = Scenario
    parts = [part for part in parse_path(path) if isinstance(part, str)]
    for i, name in enumerate(parts):
        fields = getattr(cls, "model_fields", None)
        field = fields.get(name) if isinstance(fields, dict) else None
        if field is None:
            return True
        kinds = (field.annotation, *typing.get_args(field.annotation))
        if i == len(parts) - 1:
            return type(None) in kinds or (not field.is_required() and field.default is None)
        cls = next((a for a in kinds if hasattr(a, "model_fields")), None)
    return True


def _applied(data: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`data` with a link's `changes` made in place (a None removes the field: back to its default)."""
    # one copy, then every change in place: decoding stays linear in the payload's size
    for path, value in changes.items():
        if value is None and not _nullable(path):  # the CLI refuses it: a link said nothing (a review)
            raise ScenarioError(
                f"{path}: null is not a value of this field; give one, or leave the field out"
            )
        if value is None:
            parts = parse_path(path)
            parent = get_path(data, format_parts(parts[:-1])) if len(parts) > 1 else data
            if isinstance(parent, dict) and isinstance(parts[-1], str):
                parent.pop(parts[-1], None)
            continue
        set_path(data, path, value, copy_data=False)
    return data
