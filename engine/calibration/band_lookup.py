"""The bands the app shows, read from presets/calibration.toml (`engine.calibration.bands` fits them).

Plain data, no pandas: the command line's ``run`` reads bands through `engine.calibration.trust`.
A band is looked up in the groups `bands.LEVELS` names, most specific first, with the same keys
('model:basis:stack:chip:figure', '*' where pooled).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from engine.catalog import parsed
from engine.catalog.entries import presets_dir

KINDS = ("throughput", "ttft", "tpot")
"""Kinds of figure with held-out points (energy per token: its power rows are fitted, one source)."""


@functools.cache
def calibration_table() -> dict[str, Any]:
    """presets/calibration.toml, read once a process (its bands here, its expected errors and MoE
    terms in `engine.calibration.trust`); parsed ahead where `engine.catalog.parsed` holds it."""
    presets = presets_dir()
    path = presets / "calibration.toml"
    if not path.is_file():
        return {}
    with open(path, "rb") as fh:
        raw = fh.read()
    text = raw.decode()  # as tomllib.load decodes it
    data = parsed.lookup(text, presets)
    if data is not None:
        return data
    import tomllib  # only for a table the parsed table does not hold (engine.catalog.parsed)

    return tomllib.loads(text)


MIN_KIND_POINTS = 20
"""Fewest held-out points of a kind whose coverage makes its bands shown (and that gets its own
widening, `engine.calibration.bands`): a coverage measured on fewer says little."""

LEVELS: tuple[tuple[str, ...], ...] = (
    ("model", "basis", "stack", "chip", "figure"),
    ("model", "basis", "stack", "figure"),
    ("model", "basis", "figure"),
    ("model", "figure"),
    ("figure",),
    (),
)
"""The groups a band is looked up in, most specific first (`engine.calibration.bands`)."""
FIELDS = ("model", "basis", "stack", "chip", "figure")


def group_key(level: tuple[str, ...], point: Mapping[Any, Any]) -> str:
    """'dense:fitted:vllm-v0:*:throughput': the group of `point` at `level` ('*' for a field not used)."""
    return ":".join(str(point[f]) if f in level else "*" for f in FIELDS)


BAND_MEANING = "about two in three real deployments land inside"
"""What a band says, in the one line Results, Compare, the planner and the command line print."""

CHIPS_WITHOUT_DATA = ("same_silicon", "transfer", "illustrative", "assumed")
"""Bases whose bands come from rows held out with their chip (`validation.BAND_SCHEMES`' chip_out)."""


def _band_table() -> dict[str, dict[str, tuple[float, float]]]:
    return {
        fam: {k: (float(v[0]), float(v[1])) for k, v in rows.items()}
        for fam, rows in calibration_table().get("band", {}).items()
    }


def shown_kinds(family: str) -> tuple[str, ...]:
    """The kinds whose bands a family shows: those whose coverage was measured on enough points."""
    cov = calibration_table().get("band_coverage", {}).get(family, {})
    return tuple(f for f in KINDS if cov.get(f"{f}_points", 0) >= MIN_KIND_POINTS)


def e2e_coverage(family: str = "source_out") -> tuple[float, int] | None:
    """E2E's band's measured coverage and its points (`engine.calibration.e2e_band`); None unmeasured."""
    cov = calibration_table().get("band_coverage", {}).get(family, {})
    points = int(cov.get("e2e_points", 0))
    return (float(cov["e2e"]), points) if points and "e2e" in cov else None


def _lookup(
    rows: dict[str, tuple[float, float]], point: dict[str, str], own_class: bool = False
) -> tuple[float, float] | None:
    """The most specific band of `point`; with `own_class`, never one pooled over dense and MoE rows."""
    for level in LEVELS:
        if own_class and "model" not in level:
            return None
        key = group_key(level, point)
        if key in rows:
            return rows[key]
    return None


def bands_for(
    chip: str, stack: str, basis: str, moe: bool = False, profile: str | None = None
) -> dict[str, tuple[float, float]]:
    """Per kind shown, the band (ratio predicted / measured) of a chip's figures under a stack and basis.

    A chip with data (fitted, another stack's fit) takes the bands of rows held out with their
    source; one without (same silicon, transfer, illustrative, assumed) those of rows held out with
    their chip or chip family. A MoE model on a chip without data takes the wider of both sides of
    its chip's band and of the MoE rows' band (only the first family has MoE rows). With data, a
    kind is shown only where the model's class (dense or MoE) has a band of its own for it. A band
    that leaves out part of the middle two in three of the chip's own published results under the
    stack (`own_points`; and where its profile is its own fit under a stack, `profile`, the results
    that fit was made to: vLLM or SGLang on a 910B run vLLM-Ascend's) is widened to hold them. {}
    before presets/calibration.toml carries bands."""
    tables = _band_table()
    family = "chip_out" if basis in CHIPS_WITHOUT_DATA else "source_out"
    key_basis = "transfer" if basis in ("illustrative", "assumed") else basis
    point = {"model": "moe" if moe else "dense", "basis": key_basis, "stack": stack, "chip": chip}
    out: dict[str, tuple[float, float]] = {}
    kinds = shown_kinds(family)
    if moe and family == "chip_out":  # a kind the chip-out rows cannot size (TTFT: 5 points) takes the MoE
        # rows' band and the chip's throughput band turned round, the wider of each side: an uncalibrated
        # H200 showed no TTFT band where a fitted B200 showed one (a review)
        kinds = tuple(f for f in KINDS if f in kinds or f in shown_kinds("source_out"))
    for figure in kinds:
        # rows held out with their source: a dense figure never takes the MoE rows' misses (their
        # TTFTs, 61 of 64 points, miss by 70%), nor a MoE figure the dense rows'
        own = family == "source_out"
        found = [_lookup(tables.get(family, {}), {**point, "figure": figure}, own)]
        if figure not in shown_kinds(family):  # the chip's side of a latency its rows cannot size: its
            # throughput band as shown, turned round (a prefill's time is its work over the chip's rate)
            rate = out.get("throughput")
            found = [None if rate is None else (1.0 / rate[1], 1.0 / rate[0])]
        if moe and family == "chip_out" and figure in shown_kinds("source_out"):
            found.append(_lookup(tables.get("source_out", {}), {**point, "figure": figure}))
        have = [b for b in found if b is not None]
        if have:
            have += [own[:2] for own in _own_results(point, figure, profile)]
            out[figure] = (min(b[0] for b in have), max(b[1] for b in have))
    return out


def own_points(point: Mapping[str, str], figure: str) -> tuple[float, float, int] | None:
    """The middle two in three of a chip's own published results under its stack and basis, as the
    shipped profiles predict them: (low, high) ratio predicted / measured and their count
    (`engine.calibration.bands.own_points`); None where it has none. `point`: model, basis, stack, chip."""
    row = calibration_table().get("own_points", {}).get(group_key(LEVELS[0], {**point, "figure": figure}))
    return None if row is None else (float(row[0]), float(row[1]), int(row[2]))


def own_widenings(
    chip: str, stack: str, basis: str, moe: bool = False, profile: str | None = None
) -> dict[str, tuple[float, float, int]]:
    """Per kind whose band `bands_for` widened to hold the chip's own results (`own_points`): those
    results' range and count (a note: the pooled band left them out)."""
    tables = _band_table()
    family = "chip_out" if basis in CHIPS_WITHOUT_DATA else "source_out"
    point = {"model": "moe" if moe else "dense", "basis": basis, "stack": stack, "chip": chip}
    out = {}
    for figure in shown_kinds(family):
        pooled = _lookup(tables.get(family, {}), {**point, "figure": figure}, family == "source_out")
        for own in _own_results(point, figure, profile):
            if pooled is not None and (own[0] < pooled[0] or own[1] > pooled[1]):
                out[figure] = own
    return out


def _own_results(
    point: Mapping[str, str], figure: str, profile: str | None
) -> list[tuple[float, float, int]]:
    """The chip's own results that bear on a band: those under its stack and basis, and where its
    profile is its own fit under a stack (`profile`: vLLM-Ascend's for vLLM or SGLang on a 910B),
    those that fit was made to."""
    keys = [dict(point)]
    if profile:
        keys.append({**point, "basis": "fitted", "stack": profile})
    found = [own_points(k, figure) for k in keys]
    return list(dict.fromkeys(f for f in found if f is not None))
