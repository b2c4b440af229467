"""`fengong capacity`: the highest arrival rate a scenario's deployment passes under the chosen rule, by
bisection, with the same search at the edges of its chips' throughput bands (moved from
engine/cli/plan.py, which had passed 600 lines)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from engine.cli.common import ProgressBar, check_range, emit_json, load_scenario
from engine.cli.plan_flags import attainment_of
from engine.core import bounds
from engine.core.numbers import rate2, rate_down, rate_up
from engine.explain import confidence
from engine.planning.rules import attained


def _capacity_json(
    cap: Any,
    found: dict[str, Any],
    slow: dict[str, float],
    fast: dict[str, float],
    scen: Any,
    window_s: float,
) -> dict[str, Any]:
    """`capacity --json`: the search, and with a margin the two searches at the bands' edges; the
    scenario's faults its runs meet and those beyond its window."""
    from engine.explain.timeline_marks import met_faults, unmet_faults
    from engine.serving.run import ENGINE_VERSION

    doc = dict(cap.to_json())
    if found:
        doc["margin"] = {
            "slowdown": slow,
            "speedup": fast,
            "slower_capacity_rps": found["slower"].capacity_rps,
            "faster_capacity_rps": found["faster"].capacity_rps,
            "slower_ran_out": found["slower"].ran_out,  # its 0 is 'below', not a cliff (a review)
            "faster_ran_out": found["faster"].ran_out,
            # beside the search's own `simulations` (the text's count had them added, the JSON not: a review)
            "simulations": found["slower"].simulations + found["faster"].simulations,
        }
    doc["engine_version"] = ENGINE_VERSION
    doc["scenario"] = {"name": scen.name, "seed": scen.seed}
    doc["window_s"] = window_s - scen.warmup_s  # measured: a warm-up's requests are not (a review)
    doc["warmup_s"] = scen.warmup_s
    doc["met_faults"], doc["unmet_faults"] = met_faults(scen, window_s), unmet_faults(scen, window_s)
    return doc


def _capacity_text(
    cap: Any, marks: Any, found: dict[str, Any], slow: dict[str, float], fast: dict[str, float]
) -> str:
    """The capacity with the searches at the bands' edges (`found`), or without them no band but the way
    to one (a review read the chips' throughput band as the capacity's, where the margin's searches gave
    2.05 to 52.8 req/s beside −35% to +76%). Where no rate failed (the work bound or `high_rps` stopped
    the search) the capacity is at least the figure."""
    least = "at least " if cap.failed_rps is None and cap.capacity_rps else ""
    if cap.ran_out:  # it read 'capacity 0 req/s' for a search out of simulations (a review)
        return f"below {rate_up(cap.failed_rps)} req/s (no rate tried passed)"
    if found:
        lo, hi = found["slower"].capacity_rps, found["faster"].capacity_rps
        chips = ", ".join(f"{c} {slow[c]:+.0%} / {fast.get(c, 0.0):+.0%}" for c in slow)
        figure = f"{least}{rate_down(cap.capacity_rps)} req/s"
        # out of simulations at the slow edge: it read '0 to 30.6', then 'below 15.3 to 30.6' (reviews)
        if found["slower"].ran_out:
            below = rate_up(found["slower"].failed_rps)
            return (
                f"{figure} ({rate_down(hi)} with every chip at the optimistic edge of its throughput band; below "
                f"{below} at the pessimistic edge, where no rate tried passed; iteration time {chips})"
            )
        return (
            f"{figure} ({rate_down(lo)} to {rate_down(hi)} with every chip at the pessimistic and the optimistic "
            f"edge of its throughput band, iteration time {chips})"
        )
    # no band without the margin's searches: the chips' throughput band (-24% to +33%) stood beside a capacity
    # that the searches move -62% to +80%, since a capacity near a cliff moves more than a throughput (a review)
    figure = f"{least}{rate_down(cap.capacity_rps)} req/s"
    if cap.capacity_rps and any(m.calibration.band for m in marks):  # (no band beside no capacity)
        figure += " (how far it moves with the model's error: run without --no-margin)"
    return figure


def _rates(cap: Any) -> str:
    """' at 7 rates' where each rate ran more than one seed ('' where one)."""
    return f" at {len(cap.runs)} rates" if cap.seeds > 1 else ""


def _margin_runs(found: dict[str, Any]) -> str:
    """', and 14 at the bands' edges' where the margin's two searches ran ('' where they did not)."""
    extra = sum(c.simulations for case, c in found.items() if case != "modelled")
    return f", and {extra} at the bands' edges" if extra else ""


def _below(cap: Any) -> str:
    """'; below what the runs sustain' where the cost model's estimate is: it sizes every pool for the
    tightest TPOT target and ignores class pins ('optimistic' 19.5 beside 23.1 found: a review)."""
    return "; below what the runs sustain" if cap.estimate_rps < cap.capacity_rps else ""


def _headline(
    cap: Any, capacity_text: str, window: float, found: dict[str, Any], warmup_s: float = 0.0
) -> str:
    """The capacity over its window, the rule, the lowest failure, the estimate and the runs. The window
    it was measured over: chat-colocated reads 27.2 req/s over 5 s, 18.4 over 120 s and 17.5 over its
    600 s, and nothing said which (a review); a capacity of 0 reads no lower. `window` is the runs'
    length; a warm-up's requests are not measured (a 600 s window read where 200 s of it were)."""
    from engine.planning.rules import rule_text

    # the rate the run that failed was made at, as its row below prints it: 'fails at 25.4' (25.3196 rounded
    # up) named a run never made, and one at 25.4 passes (a search's verdicts are not monotone to the last
    # digit: a review)
    failed = "none failed" if cap.failed_rps is None else f"fails at {cap.failed_rps:.6g} req/s"
    lower = (
        " (a longer one can read lower: a queue that builds slowly fails only in time)"
        if cap.capacity_rps
        else ""
    )
    after = f" after a {warmup_s:,.0f} s warm-up" if warmup_s else ""
    each = f" in each of {cap.seeds} seeds" if cap.seeds > 1 else ""
    return (
        f"{capacity_text} over a {window - warmup_s:,.0f} s window{after}{lower} "
        f"({rule_text(cap.rule, cap.attainment)}{each}; {failed}); "
        f"the search started at {cap.estimate_rps:.3g} req/s, the cost model's bound (no queueing, no prefill "
        f"stalling a decode{_below(cap)}); {cap.simulations} simulations{_rates(cap)}{_margin_runs(found)}"
    )


def _replaced_sets(sets: Any, window: bool) -> str:
    """What the search replaces of its --set overrides ('' where nothing), as `plan` says it: the rate it
    searches, and the window where --duration-s is given (`--set duration_s=120 --duration-s 60` ran over
    60 s unsaid: a review)."""
    paths = {str(s).split("=", 1)[0].strip() for s in sets or ()}
    gone = [f"{p} ({by})" for p, by in REPLACED.items() if p in paths and (window or p != "duration_s")]
    return f"the search replaces {'; '.join(gone)}: those --set values are not used" if gone else ""


REPLACED = {"workload.arrival.rate_rps": "the rates it searches", "duration_s": "--duration-s"}
"""--set paths the capacity search replaces, and by what (`_replaced_sets`)."""


def cmd_capacity(args: argparse.Namespace) -> int:
    """The highest arrival rate that passes under the chosen rule, by bisection."""
    from engine.explain.margin import run_edges  # pandas: loaded only for this command
    from engine.explain.timeline_marks import met_faults, met_faults_note, unmet_faults
    from engine.planning.candidates import MIN_PLANNING_WINDOW_S
    from engine.planning.capacity import PROBE_FIGURES, capacity

    check_range(args.duration_s, "--duration-s", MIN_PLANNING_WINDOW_S, bounds.MAX_DURATION_S)  # as plan's
    scen = load_scenario(args.scenario, args.set)
    if said := _replaced_sets(args.set, args.duration_s is not None):
        print(f"note: {said}", file=sys.stderr)
    marks = confidence.pool_marks(scen)
    slow, fast = run_edges(scen)
    with_margin = not args.no_margin and bool(slow)
    cases: dict[str, dict[str, float] | None] = {"modelled": None}
    # the same search with every chip at the pessimistic, and the optimistic, edge of its band
    if with_margin:
        cases |= {"slower": slow, "faster": fast}
    found: dict[str, Any] = {}
    for case, slowdown in cases.items():
        what = "capacity" if slowdown is None else f"capacity, chips {case}"
        bar = ProgressBar(args.max_simulations, what, not args.no_progress)
        try:
            found[case] = capacity(
                scen,
                max_simulations=args.max_simulations,
                duration_s=args.duration_s,
                progress=bar.plan,
                check_work=not args.no_work_limit,
                rule=args.rule,
                attainment=attainment_of(args),
                slowdown=slowdown,
                seeds=args.seeds,
            )
        finally:
            bar.close()
    cap = found["modelled"]
    window = scen.duration_s if args.duration_s is None else args.duration_s  # the runs' length: their faults
    if args.json:
        emit_json(_capacity_json(cap, found if with_margin else {}, slow, fast, scen, window))
        return 0
    text = _capacity_text(cap, marks, found if with_margin else {}, slow, fast)
    print(f"{scen.name}: capacity {_headline(cap, text, window, found, scen.warmup_s)}")
    # the faults its runs meet (kept), and those beyond its window (a loss at 300 s, a 120 s window)
    kept = [
        f"note: {n}" for n in [met_faults_note(met_faults(scen, window)), *unmet_faults(scen, window)] if n
    ]
    for note in (
        ([cap.note] if cap.note else []) + kept + ([ONE_SEED] if cap.seeds == 1 and cap.capacity_rps else [])
    ):
        print(f"  {note}")
    if with_margin and (cliff := _capacity_cliff(cap.capacity_rps, found["slower"], args.scenario)):
        print(f"  {cliff}")
    if said := _band_past_target(cap, scen, marks, with_margin):
        print(f"  {said}")
    if confidence.uncalibrated(marks):
        print(f"  {confidence.note(marks)}")
    if with_margin and cap.capacity_rps and any(m.calibration.band for m in marks):  # a band was printed
        print(f"  {confidence.BAND_NOTE}")
    for c in cap.runs.to_dict(orient="records"):
        short = c.get("shortfall_rps")
        rising, stood = c.get("rising_rps"), c.get("standing_requests")
        behind = (
            f"  unsustainable, short by {rate2(short)} req/s"
            if short is not None and short == short
            else f"  queue still rising at the window's end ({rate2(rising)} req/s): not counted"
            if rising is not None and rising == rising
            else f"  at capacity, the queue never below {stood:,.0f} requests: no headroom, not counted"
            if stood is not None and stood == stood
            else ""
        )
        judged = c["slo_attainment"] is not None and c["slo_attainment"] == c["slo_attainment"]
        verdict = "passes" if c["passes"] else "FAILS " if judged else "-"  # ('FAILS' beside 'not judged')
        print(
            f"  {c['rate_rps']:>9.{PROBE_FIGURES}g} req/s  {verdict:6}  goodput "
            f"{c['goodput_rps']:8.2f} req/s  {attained(c['slo_attainment'], 1, 'attainment {}')}{behind}"
            + _seeds_said(c, cap.seeds)
        )
    return 0


def _band_past_target(cap: Any, scen: Any, marks: Any, with_margin: bool) -> str:
    """Where a class's latency at the capacity reaches past its target at its band's top, as `run` says it
    ('' elsewhere). The searches at the bands' edges slow every chip by its throughput band; a MoE model's
    TPOT band reaches further (+72% against +29% of time), and a capacity of 23.4 req/s (16.9 at the slow
    edge) stood where `run` at 16.9 said its TPOT band reaches 103 ms against a 90 ms target (a hardware
    strategist's review)."""
    from engine.explain.edge_findings import band_tops_over

    runs = cap.runs
    column = "classes_highest_over_seeds" if "classes_highest_over_seeds" in runs else "classes_at_percentile"
    if not cap.capacity_rps or column not in runs:
        return ""
    held = runs.loc[(runs["rate_rps"] == cap.capacity_rps) & runs["passes"].astype(bool), column]
    if held.empty:
        return ""
    slos = {c.name: c.slo for c in scen.workload.classes}
    said = [
        f"class {name}'s {' and '.join(over)}"
        for name, c in (held.iloc[-1] or {}).items()
        if name in slos and (over := band_tops_over(c, slos[name], marks))
    ]
    if not said:
        return ""
    edges = (
        "the searches at the bands' edges slow every chip by its throughput band only, and "
        if with_margin
        else ""
    )
    seeds = f", the highest of its {cap.seeds} seeds," if getattr(cap, "seeds", 1) > 1 else ""
    return (
        f"at {rate_down(cap.capacity_rps)} req/s{seeds} {'; '.join(said)} at the band's top, over the target: "
        f"{edges}a latency's own error allows worse (run --margin at that rate reruns it)"
    )


ONE_SEED = (
    "one seed's capacity: near it the same load passes or fails by the draw of its requests; --seeds N asks "
    "each of N seeds to pass, a lower and steadier figure at N times the simulations (docs/planner.md)"
)
"""Said under a capacity searched with one seed (an infrastructure engineer sized at one seed's figure: a review).
It names no figure: it had quoted the chat preset's (26.8 req/s passed in 3 of 10 seeds; 23.2 with 5) under every
scenario's capacity, where they read as the search's own (a review); docs/planner.md keeps them, the test holds them."""


def _seeds_said(row: dict[str, Any], seeds: int) -> str:
    """'  (seed 3 failed, 2 passed before it)' or '  (5 seeds passed)' where more than one was asked; ''."""
    if seeds == 1:
        return ""
    if row["passes"]:
        return f"  ({seeds} seeds passed)"
    n = int(row["seeds_passed"])
    return f"  (seed {row['seed']} failed{f', {n} passed before it' if n else ''})"


CLIFF_SHARE = 0.5
"""The slow edge's capacity, as a share of the modelled one, below which `capacity` says why."""


def _capacity_cliff(modelled: float, edge: Any, ref: str) -> str:
    """Why a capacity's low side falls far below it ('' where it does not): 'capacity 21.8 req/s (0.606
    to 50.1 ...)' stood unexplained (a review); `run --margin` names the target (its cliff notes). A slow-edge
    search out of simulations says so instead of blaming a target (a review)."""
    slower = edge.capacity_rps
    if edge.ran_out:
        return (
            f"at the pessimistic edge no rate tried passed within the simulations allowed: the capacity there is "
            f"below {rate_up(edge.failed_rps)} req/s (more simulations, --max-simulations, search lower)"
        )
    if modelled <= 0 or slower >= CLIFF_SHARE * modelled:
        return ""
    return (
        f"at the pessimistic edge the capacity falls to {rate_down(slower)} req/s ({slower / modelled:.0%} of "
        f"{rate_down(modelled)}): with every step that much longer, a target is missed at almost any load, so the "
        f"band's low side is a cliff, not a spread; `fengong run {ref} --margin` (with the same --set) shows "
        "which target"
    )
