"""The ``compare`` command: two scenarios side by side, as the Compare page lines them up.

A is a scenario file or preset (with ``--set``); B another (with ``--set-b``), or by default what the
page sets beside it: A's counterpart preset where A names one, serving A's workload, window and seed
where ``--set`` changed them (the same requests: a paired comparison), else A served the other way
(``--other-mode`` asks for that).
Each figure reads A, B, the change, the side that does better (`engine.explain.verdicts`: none
where the two see other requests, or a class's targets differ, and no cheaper bill for a side that
misses its SLO) and A's and B's bands together; with ``--margin`` the bands are each side's run
spread (both sides rerun with every chip at either edge of its throughput band), as the page's
cards read them once known.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engine import explain as ex
from engine.cli.common import emit_json, is_file_ref, load_scenario, with_sets
from engine.core.errors import ScenarioError
from engine.explain.bill import assumed_said
from engine.scenario import naming
from engine.scenario.codec import preset_names
from engine.scenario.model import Scenario
from engine.serving.run import ENGINE_VERSION, SimResult, simulate

LOAD_FIELDS = ("workload", "duration_s", "warmup_s", "seed")
"""A scenario's load: what `with_load_of` gives a counterpart, and what an edit of A must touch for B to take it."""


def side_b(args: argparse.Namespace, a: Scenario) -> tuple[Scenario, str]:
    """B and how it was chosen, as the Compare page sets it (`app_pages/compare.py`'s `default_b`): a named
    B as it is; by default A's counterpart preset, serving A's workload, window and seed where A's `--set`
    changed them from its own (the page's "counterpart, this load": a preset at its own load is compared
    at its own, its classes pinned to its own pools: portfolio-h100-only's counterpart read unpinned, and
    failing chat, when given A's unpinned workload: a review), else A served the other way."""
    if args.other_mode and args.other is not None:
        raise ScenarioError(
            "--other-mode: B is A served the other way; leave out B's scenario, or --other-mode"
        )
    other = "disaggregated" if a.deployment.mode == "colocated" else "colocated"
    if args.other is not None:
        base, source, chosen = load_scenario(args.other, None), args.other, args.other
    elif not args.other_mode and a.counterpart in preset_names():
        base, source, chosen = load_scenario(str(a.counterpart), None), str(a.counterpart), str(a.counterpart)
        own = load_scenario(args.scenario, None)
        if any(getattr(a, f) != getattr(own, f) for f in LOAD_FIELDS):  # A's load edited: B serves it
            try:
                base, chosen = ex.with_load_of(base, a), f"{a.counterpart} on A's workload, window and seed"
            except ScenarioError as exc:  # the default B cannot take A's load: what the user may do instead
                raise ScenarioError(
                    f"{a.counterpart} on A's workload: {exc} (name B, or --other-mode for A served the other way)"
                ) from None
        if kept := ex.unshared_edits(own, a):  # A's other edits are not B's: said, not compared as paired
            chosen += (
                f"; not A's changes to {', '.join(kept)}: give them with --set-b, or --other-mode for A served "
                "the other way with every change"
            )
    else:
        # named for its own pools (it kept A's name, '1 h100-sxm' beside its two: a browser review)
        stem = Path(args.scenario).stem if is_file_ref(args.scenario) else args.scenario
        base = naming.named(ex.with_mode(a, other), a, stem)
        source, chosen = f"{a.name} served {other}", f"A served {other}"
        if changed := ex.chips_changed(a, base):  # one instance split takes a second (a browser review)
            chosen += f"; {changed}"
        if split := ex.split_text(a, base):  # a 4:8 split stood unexplained (a review)
            chosen += f"; {split}"
    return with_sets(base, args.set_b, source, "--set-b"), chosen


def table_of(a: Scenario, b: Scenario, ra: SimResult, rb: SimResult, margin: bool, check: bool) -> Any:
    """The compare table (`engine.explain.compare_table`), its verdicts and its band column."""
    ta, tb = ex.pool_marks(a, ra.summary), ex.pool_marks(b, rb.summary)
    limits = (ex.limits(ra.summary, a), ex.limits(rb.summary, b))
    table = ex.with_expected_error(ex.compare(ra.summary, rb.summary), ta, tb, limits)
    table = ex.verdicts(table, a, b, ra.summary, rb.summary)
    if not margin:
        inside = ex.inside_band_note(ex.inside_band(table, ta, tb))
        return table, [inside] if inside else []
    from engine.explain.margin import run_spread

    spreads = [run_spread(s, r.summary, check_work=check) for s, r in ((a, ra), (b, rb))]
    moves = (
        spreads[0].moves() | spreads[0].percentile_moves(),
        spreads[1].moves() | spreads[1].percentile_moves(),
    )
    bands = ex.spread_errors(table["figure"], ta, tb, moves, list(table["band"]), limits)
    notes = [
        f"{side}: {n}"
        for side, sp, s, r in (("A", spreads[0], a, ra), ("B", spreads[1], b, rb))
        for n in sp.band_notes(s, r.summary.get("slo_attainment"), "the margin")
    ]
    return table.assign(band=[x or "" for x in bands]), notes


def notes_of(a: Scenario, b: Scenario, ra: SimResult, rb: SimResult) -> list[str]:
    """What qualifies the table, as the page's warnings say it."""
    out = []
    if a.model.id != b.model.id:
        out.append(
            f"A serves {a.model.id} and B {b.model.id}: every change from A to B is as much the model's as the "
            "deployment's."
        )
    if ex.unpaired(a, b):
        out.append(
            "A and B have different workloads, windows or seeds: they do not see the same requests, so the "
            "comparison is not paired and no side is called better on what the requests move."
        )
    if note := ex.targets_note(ex.target_differences(a, b)):
        out.append(note)
    modes = [r.summary["cost"].get("mode", "rent") for r in (ra, rb)]
    if modes[0] != modes[1]:  # in the sides' order: 'rented against owned' read so where A was owned
        said = {"rent": "rented", "own": "owned"}
        out.append(
            "A's and B's chips are costed on different bases "
            f"(A's {said.get(modes[0], modes[0])}, B's {said.get(modes[1], modes[1])})."
        )
    elif a.cost != b.cost:
        out.append(
            "A and B are priced differently: a change in cost is as much the prices' as the deployments'."
        )
    for side, r in (("A", ra), ("B", rb)):  # a cost call rests on them (only --json said so: a review)
        if assumed := r.summary["cost"].get("assumed_prices"):
            own = r.summary["cost"].get("mode") == "own"
            out.append(
                f"{side} is billed at {assumed_said(assumed, own)}; its cost is a what-if, not a quote."
            )
    for side, r in (("A", ra), ("B", rb)):
        for line in (ex.line(r.summary), ex.rising_line(r.summary)):
            if line is not None:
                out.append(f"{side}: {line}")
    return out


def _sides(args: argparse.Namespace) -> tuple[Scenario, Scenario, str]:
    """A, B and how B was chosen; a refusal says the side it is of (a `--set-b` field refused read as
    A's: a review)."""
    try:
        a = load_scenario(args.scenario, args.set)
    except ScenarioError as exc:
        raise ScenarioError(f"scenario A: {exc}") from None
    try:
        b, chosen = side_b(args, a)
    except ScenarioError as exc:
        raise ScenarioError(f"scenario B: {exc}") from None
    return a, b, chosen


def print_table(table: Any) -> None:
    """The table's rows as the Compare page's table reads them (`engine.explain.compare_view`)."""
    view = ex.compare_view(table)
    rows: list[tuple[str, str, str, str, str, str]] = []
    for r in view.to_dict("records"):
        a, b, change = (r[k] if isinstance(r[k], str) else "-" for k in ("a", "b", "change_pct"))
        label = ex.with_unit(str(r["figure"]), str(r["unit"]))
        rows.append((label, a, b, change, str(r["better"] or "-"), str(r["band"] or "-")))
    # each side's column as wide as its widest cell ('0.0002917, at saturation' pushed the row out of line)
    wa, wb = (max([12, *(len(row[i]) for row in rows)]) for i in (1, 2))
    print(f"{'figure':28} {'A':>{wa}} {'B':>{wb}} {'change':>20}  {'better':22} band (A and B together)")
    for label, a, b, change, better, band in rows:
        print(f"{label:28} {a:>{wa}} {b:>{wb}} {change:>20}  {better:22} {band}")


def cmd_compare(args: argparse.Namespace) -> int:
    """Simulate A and B and print their figures side by side (or one JSON document)."""
    a, b, chosen = _sides(args)
    check = not args.no_work_limit
    ra, rb = simulate(a, check_work=check), simulate(b, check_work=check)
    table, band_notes = table_of(a, b, ra, rb, args.margin, check)
    notes = notes_of(a, b, ra, rb)
    if args.json:
        rows = [
            {str(k): (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
            for r in table.to_dict("records")
        ]
        emit_json(
            {
                "a": {"name": a.name, "seed": a.seed, "summary": ra.summary},
                "b": {"name": b.name, "seed": b.seed, "chosen": chosen, "summary": rb.summary},
                "paired": not ex.unpaired(a, b),
                "bands": "spread" if args.margin else "kind",
                "rows": rows,
                "notes": notes + band_notes,
                "engine_version": ENGINE_VERSION,
            }
        )
        return 0
    print(f"A: {a.name} (seed {a.seed})")
    print(f"B: {b.name} (seed {b.seed}; {chosen})")
    print("paired: the same requests" if not ex.unpaired(a, b) else "not paired: other requests")
    print_table(table)
    print(
        "bands: each side's run spread (every chip at either edge of its throughput band), latencies and costs "
        "never narrower than their kind's band"
        if args.margin
        else "bands: each figure's kind's band, A's and B's together; SLO attainment and goodput only from "
        "--margin's spreads, which move them with the queues"
    )
    print(ex.BAND_NOTE)
    for note in notes + band_notes:
        print(note)
    return 0
