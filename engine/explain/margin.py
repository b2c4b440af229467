"""One run's margin for the model's error: the same requests with every chip at the pessimistic
edge of its throughput band (`engine.scenario.resolve.slowed`), and which verdicts move.

The Results page's "Margin for the model's error" and ``python -m engine run --margin``; the
planner's margin, which also searches again with slowed chips, is `engine.planning.margin`
(docs/planner.md, "Margin").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from engine.catalog.entries import Catalog
from engine.core.numbers import rate2
from engine.explain import sustain
from engine.explain.compare_table import compare
from engine.explain.confidence import pool_marks
from engine.explain.presentation import duration_text, headline, usd_text
from engine.explain.run_bands import RERUN, cliff_notes, spans_all
from engine.explain.targets import cost_judged, misses_slo
from engine.planning.rules import run_passes
from engine.scenario.model import Scenario
from engine.serving.run import simulate
from engine.serving.summary import (
    AtPercentile,
    LatencyKind,
    Summary,
    classes_pass,
    latency_shortfall,
    shortfall_rps,
    within_target,
)
from engine.serving.workload import generate


def slo_targets(scenario: Scenario) -> dict[str, tuple[float, float, float | None]]:
    """Per class: its TTFT, TPOT and largest-gap targets (ms; the last None where none is set)."""
    return {c.name: (c.slo.ttft_ms, c.slo.tpot_ms, c.slo.tbt_ms) for c in scenario.workload.classes}


@dataclass(frozen=True)
class RunMargin:
    """A run as modelled and the same run, on the same requests, with slower chips."""

    slowdown: dict[str, float]
    """Per chip of the run: how much longer its iterations were made (its band's pessimistic edge)."""
    modelled: Summary
    """The run's summary as modelled."""
    slowed: Summary
    """The summary with every chip slowed."""
    targets: dict[str, tuple[float, float, float | None]] = field(default_factory=dict)
    """Per class: its TTFT, TPOT and largest-gap (TBT, None: none set) targets (ms): `slo_targets`."""

    @property
    def passes(self) -> tuple[bool, bool]:
        """Whether every class passes at its SLO percentile: as modelled, and slowed."""
        return run_passes(self.modelled), run_passes(self.slowed)

    @property
    def holds(self) -> bool:
        """True when the run's verdict is the same with slowed chips (passing or failing)."""
        before, after = self.passes
        return before == after

    def classes(self) -> list[tuple[str, bool, bool]]:
        """Per class with a request in the window: its name, and whether it passes as modelled and slowed
        (a class with none is not judged: `run --margin` read 'passes -> passes' under 'no request in the
        window, not judged', a review)."""
        after, unjudged = self.slowed["classes"], self.unjudged()
        return [
            (name, bool(c["passes"]), bool(after[name]["passes"]))
            for name, c in self.modelled["classes"].items()
            if name not in unjudged
        ]

    def unjudged(self) -> list[str]:
        """The classes with no request in the window (no SLO attainment), as modelled or slowed."""
        runs: tuple[dict[str, Any], ...] = (self.modelled["classes"], self.slowed["classes"])
        return [n for n in runs[0] if any((r.get(n) or {}).get("slo_attainment") is None for r in runs)]

    def why(self, name: str) -> str:
        """What a class misses with slowed chips: 'p90 TPOT 34.5 ms against 30 ms', 'p90 TTFT and TPOT on
        rejected or failed requests, against 2,000 ms and 30.0 ms' ('' if nothing)."""
        c = self.slowed["classes"][name]
        ttft, tpot, tbt = self.targets.get(name, (math.inf, math.inf, None))
        p = f"p{c['percentile']:g}"
        out = []
        keys: tuple[tuple[str, AtPercentile, float | None], ...] = (
            ("TTFT", "ttft_ms_at_percentile", ttft),
            ("TPOT", "tpot_ms_at_percentile", tpot),
            ("TBT", "max_tbt_ms_at_percentile", tbt),
        )
        # said once: 'never (requests rejected or failed)' six times in one line read garbled (a review)
        unanswered: list[tuple[str, float]] = []
        for label, key, target in keys:
            if target is not None and not within_target(c, key, target):
                at = c[key]
                if at is None:
                    unanswered.append((label, target))
                    continue
                # an unsustainable run's percentile grows (not where a client's ceiling holds the
                # backlog, nor a decode latency that stays level: `Shortfall.steady`)
                out.append(
                    sustain.marked(
                        f"{p} {label} {duration_text(at)} against {duration_text(target)}",
                        self.slowed,
                        _KINDS[label],
                    )
                )
        if unanswered:  # its percentile's request never answered: how many did (a browser review: no figure)
            labels = " and ".join(lab for lab, _ in unanswered)
            targets = " and ".join(duration_text(t) for _, t in unanswered)
            within = c.get("slo_attainment")
            share = f", {within:.1%} within SLO" if isinstance(within, float) and within == within else ""
            out.insert(
                0,
                f"{p} {labels} never answered, at least {100 - c['percentile']:g}% of its requests rejected or "
                f"failed{share}, against {targets}",
            )
        if (short := shortfall_rps(self.slowed)) is not None:
            out.append(f"unsustainable, short by {rate2(short)} req/s")
        return ", ".join(out)

    @property
    def shortfalls(self) -> tuple[float | None, float | None]:
        """The run's shortfall in req/s as modelled and slowed (None where it keeps up)."""
        return shortfall_rps(self.modelled), shortfall_rps(self.slowed)

    def growing(self, name: str) -> tuple[float | None, float | None]:
        """`shortfalls` where the `rows` figure `name` grows with them (`latency_shortfall` of its
        kind: 'TTFT p90' of ttft; a TPOT that stays level does not), as modelled and slowed."""
        kind = _KINDS.get(name.split(" ")[0])
        return latency_shortfall(self.modelled, kind), latency_shortfall(self.slowed, kind)

    def level(self, name: str) -> tuple[bool, bool]:
        """Whether the `rows` latency `name` stays level while the queue grows (`sustain.level`), as
        modelled and slowed; a cost, whether its run falls behind (the bill over full batches serving a
        backlog late: at saturation, as a run's own text marks it; the margin's line dropped it: a review)."""
        if name.startswith("$"):
            return shortfall_rps(self.modelled) is not None, shortfall_rps(self.slowed) is not None
        kind = _KINDS.get(name.split(" ")[0])
        if kind is None:
            return False, False
        return sustain.level(self.modelled, kind), sustain.level(self.slowed, kind)

    def rows(self) -> list[tuple[str, float | None, float | None]]:
        """The figures that move: (name, as modelled, slowed)."""

        def lat(s: Summary, metric: Literal["ttft", "tpot"], p: Literal["p90", "p99"]) -> float | None:
            v = s["latency_ms"][metric][p]
            return None if v is None else float(v)

        out: list[tuple[str, float | None, float | None]] = [
            ("SLO attainment", self.modelled["slo_attainment"], self.slowed["slo_attainment"]),
            ("goodput", self.modelled["goodput_rps"], self.slowed["goodput_rps"]),
        ]
        metrics: tuple[tuple[Literal["ttft", "tpot"], str], ...] = (("ttft", "TTFT"), ("tpot", "TPOT"))
        for metric, name in metrics:
            for p in ("p90", "p99"):
                out.append((f"{name} {p}", lat(self.modelled, metric, p), lat(self.slowed, metric, p)))
        out.append(
            ("$ / request", self.modelled["cost"]["usd_per_request"], self.slowed["cost"]["usd_per_request"])
        )
        return out


_KINDS: dict[str, LatencyKind] = {"TTFT": "ttft", "TPOT": "tpot", "TBT": "max_tbt"}
"""The latency kind of a figure's first word (`RunMargin.why`, `RunMargin.growing`)."""


def figure_text(name: str, v: float | None, shortfall: float | None = None, level: bool = False) -> str:
    """A `RunMargin.rows` figure as shown: durations in the unit that fits, shares in percent,
    dollars to three significant figures (`presentation.usd_text`); a latency of an unsustainable
    run marked as growing with run length (its `shortfall` in req/s given), or as the pace of full
    batches where it stays `level` (`sustain.latency`)."""
    if v is None:
        return "–"
    if name.startswith(("TTFT", "TPOT", "E2E")):
        return sustain.latency(duration_text(v), shortfall, level)
    if name == "goodput":
        return f"{v:,.2f} req/s"
    if name == "SLO attainment":
        return f"{v:.1%}"
    if name.startswith("$"):
        return sustain.latency(
            usd_text(v), None, level
        )  # '$0.000491, at saturation' where its run falls behind
    return f"{v:,.2f}"


def run_edges(
    scenario: Scenario, summary: Mapping[str, Any] | None = None
) -> tuple[dict[str, float], dict[str, float]]:
    """Per chip of a scenario's pools: how much longer its iterations take at the pessimistic and at
    the optimistic edge of its throughput band (`Calibration.edges`: e in 1 + e); a chip in pools
    with different bands takes the widest. Empty when no chip has a band."""
    slow: dict[str, float] = {}
    fast: dict[str, float] = {}
    for m in pool_marks(scenario, summary):
        if "throughput" not in m.calibration.band:
            continue
        hi, lo = m.calibration.edges()
        slow[m.hardware] = max(slow.get(m.hardware, hi), hi)
        fast[m.hardware] = min(fast.get(m.hardware, lo), lo)
    return slow, fast


def run_slowdowns(scenario: Scenario, summary: Mapping[str, Any] | None = None) -> dict[str, float]:
    """Per chip of a scenario's pools: the pessimistic edge of its throughput band (`run_edges`)."""
    return run_edges(scenario, summary)[0]


def run_margin(
    scenario: Scenario, summary: Summary, catalog: Catalog | None = None, *, check_work: bool = True
) -> RunMargin:
    """A run (`summary`, of `scenario`) and the same scenario rerun, on the same requests, with every
    chip at the pessimistic edge of its throughput band."""
    slowdown = run_slowdowns(scenario, summary)
    slow = simulate(scenario, catalog, check_work=check_work, slowdown=slowdown).summary
    return RunMargin(slowdown=slowdown, modelled=summary.copy(), slowed=slow, targets=slo_targets(scenario))


# --- a run's spread: the headline figures with chips slower and faster -------------------------

SPREAD_KEYS = (
    "ttft_p99_ms",
    "tpot_p99_ms",
    "e2e_p99_ms",
    "slo_attainment",
    "goodput_rps",
    "throughput_rps",
    "usd_per_request",
    "usd_per_million_output_tokens",
    "goodput_per_usd",
)
"""Headline figures (`presentation.headline` keys, plus E2E's p99 and throughput) whose spread a run
reports: E2E's too, so that `run --margin` does not print its kind's band (−26% to +10%) beside a
spread that moves it by +34% (a review)."""

PERCENTILE_KEYS = ("ttft_p50_ms", "ttft_p90_ms", "tpot_p50_ms", "tpot_p90_ms", "e2e_p50_ms")
"""The latencies' other percentiles, which Compare's table prints beside the p99s (`percentile_moves`)."""

ONE_SIDED_LABELS = {"ttft_p99_ms": "TTFT p99", "tpot_p99_ms": "TPOT p99"}
"""Latencies whose band is said when it lies wholly on one side of the figure (`one_sided_notes`)."""
ONE_SIDED = 0.005
"""A move smaller than this (half a percent) has no side."""

SHARES = ("slo_attainment",)
"""Spread figures that are shares of requests: they move in points, not in percent."""


def _latency(summary: Mapping[str, Any], metric: str, pct: str) -> float | None:
    """A summary's latency percentile ('ttft', 'p50'), ms; None where it has none."""
    value = summary.get("latency_ms", {}).get(metric, {}).get(pct)
    return None if value is None else float(value)


def _figures(summary: Mapping[str, Any]) -> dict[str, float | None]:
    h: dict[str, float | None] = dict(headline(summary))
    h["e2e_p99_ms"] = summary.get("latency_ms", {}).get("e2e", {}).get("p99")
    h["throughput_rps"] = summary.get("throughput_rps")
    return h


@dataclass(frozen=True)
class RunSpread:
    """A run as modelled and the same requests with every chip at the pessimistic, and at the
    optimistic, edge of its throughput band: how far the model's error can move each headline
    figure of this run.

    A band (`engine.calibration.bands`) was measured on single rows at their own loads; what a run's
    figures do when every iteration takes that much longer or shorter depends on the run: a queue
    near saturation turns a 15% slower chip into a TTFT p99 half again as long, an open loop with
    headroom serves the same requests either way. The spread is that run's answer, on the same
    requests. The edges are the band's own: a chip the model runs slow in every held-out row has
    both edges faster than modelled."""

    slowdown: dict[str, float]
    """Per chip: its band's pessimistic edge e (every iteration 1 + e times as long)."""
    modelled: Summary
    slower: Summary
    faster: Summary
    speedup: dict[str, float] = field(default_factory=dict)
    """Per chip: its band's optimistic edge e (1 + e times as long; usually e < 0)."""

    def moves(self) -> dict[str, tuple[float, float]]:
        """Per figure (`SPREAD_KEYS`) with a value: (its change with slower chips, with faster
        chips), relative to the modelled value, in points (fractions of 1) for shares."""
        out: dict[str, tuple[float, float]] = {}
        if not self.slowdown:  # no chip has a band: no spread
            return out
        base, slow, fast = _figures(self.modelled), _figures(self.slower), _figures(self.faster)
        for key in SPREAD_KEYS:
            v0, vs, vf = base.get(key), slow.get(key), fast.get(key)
            if v0 is None or vs is None or vf is None:
                continue
            if key in SHARES:
                out[key] = (float(vs) - float(v0), float(vf) - float(v0))
            elif v0 > 0:
                out[key] = (float(vs) / float(v0) - 1.0, float(vf) / float(v0) - 1.0)
        return out

    def percentile_moves(self) -> dict[str, tuple[float, float]]:
        """`moves` of the latencies' other percentiles (`PERCENTILE_KEYS`): Compare's table read a TTFT
        p50 and p90 bare, on a chip without a TTFT band, beside a p99 with the spread's band."""
        if not self.slowdown:
            return {}
        out: dict[str, tuple[float, float]] = {}
        for key in PERCENTILE_KEYS:
            metric, pct, _ = key.split("_")
            v0, vs, vf = (_latency(s, metric, pct) for s in (self.modelled, self.slower, self.faster))
            if v0 is not None and vs is not None and vf is not None and v0 > 0:
                out[key] = (float(vs) / float(v0) - 1.0, float(vf) / float(v0) - 1.0)
        return out

    def margin(self, scenario: Scenario) -> RunMargin:
        """The slower half as the run's margin (`run_margin`, without simulating again)."""
        return RunMargin(
            slowdown=self.slowdown, modelled=self.modelled, slowed=self.slower, targets=slo_targets(scenario)
        )

    def band_notes(self, scenario: Scenario, attainment: float | None, rerun: str = RERUN) -> list[str]:
        """The lines beside the bands' caption (Results, Compare, `run --margin`): the bands left off
        and said (`run_bands.cliff_notes`), then a steep SLO band's reason (`slow_edge_note`)."""
        steep = self.slow_edge_note(scenario, rerun)
        return [
            *cliff_notes(self.moves(), attainment, rerun),
            *([steep] if steep else []),
            *([nothing] if (nothing := self.nothing_served_note()) else []),
            *self.one_sided_notes(),
        ]

    def nothing_served_note(self) -> str | None:
        """Why goodput shows no band where it is nothing as modelled and something at an edge: a change
        relative to nothing has no size ('0.00 req/s' stood bare beside SLO attainment's '+0.0 to +61.0
        pts' on sram-decode-h100: a browser review). None otherwise."""
        now, best = self.modelled.get("goodput_rps"), self.faster.get("goodput_rps") or 0.0
        if now is None or now > 0 or best <= 0:
            return None
        return (
            "Goodput shows no band: no request meets its SLO as modelled, and a band relative to nothing has no "
            f"size; with every chip at the optimistic edge of its throughput band it would be {best:,.3g} req/s."
        )

    def one_sided_notes(self) -> list[str]:
        """A latency whose band lies wholly on one side of it ('TTFT p99 ... −29% to −7%'): it moves
        the same way with slower and with faster chips, which reads as a mistake unless said, with
        the reason where admission control shed a different number of requests at the edges."""
        out = []
        shed = [
            int(s.get("requests", {}).get("rejected", 0)) for s in (self.modelled, self.slower, self.faster)
        ]
        # a TTFT with no steady figure (at capacity, still rising, or growing) shows no band: its one side
        # quoted under a card reading 'no headroom' (a browser pass)
        unsteady = (
            sustain.rising_line(self.modelled) is not None
            or latency_shortfall(self.modelled, "ttft") is not None
        )
        for key, label in ONE_SIDED_LABELS.items():
            move = self.moves().get(key)
            if move is None or not (min(move) > ONE_SIDED or max(move) < -ONE_SIDED):
                continue
            if key == "ttft_p99_ms" and unsteady:
                continue
            why = (
                f": admission control sheds {shed[1]:,} requests with slower chips and {shed[2]:,} with faster "
                f"ones ({shed[0]:,} as modelled), and a shed request waits for nothing"
                if shed[1] != shed[0] or shed[2] != shed[0]
                else ": the modelled run sits at an extreme of it, where the edges change which requests queue"
            )
            out.append(
                f"{label} is {'lower' if move[0] < 0 else 'higher'} with slower chips ({move[0]:+.0%}) and with "
                f"faster ones ({move[1]:+.0%}){why}.".replace("(-", "(\u2212")
            )
        return out

    def slow_edge_note(self, scenario: Scenario, rerun: str = RERUN) -> str | None:
        """The classes that pass as modelled and miss their target at the pessimistic edge, with what
        they miss ('At the pessimistic edge class chat misses its SLO (p90 TPOT 42.4 ms against 30 ms),
        which it meets as modelled: ...'): why SLO attainment's band reaches far down where it falls
        `STEEP_EDGE_PTS` or more, else that the pass rests on the chips' speed; None where no class
        flips, or where the band is the `run_bands.spans_all` one left off and said. `rerun` names
        where the reader finds the run at that edge."""
        move = self.moves().get("slo_attainment")
        if move is None or spans_all(move):
            return None
        m = self.margin(scenario)
        failing = [
            f"class {n} misses its SLO ({m.why(n)})"
            for n, before, after in m.classes()
            if before and not after
        ]
        if not failing:
            return None
        # a class whose pass flips at the edge is said however little attainment falls: failure-drill's
        # chat passed on its cards (−19.1 pts) and failed at the edge, unsaid (a review)
        steep = move[0] <= -STEEP_EDGE_PTS
        why = (
            "that is why SLO attainment and goodput reach so far down"
            if steep
            else f"{'its pass rests' if len(failing) == 1 else 'their passes rest'} on chips as fast as modelled"
        )
        meets = "it meets" if len(failing) == 1 else "they meet"
        return f"At the pessimistic edge {'; '.join(failing)}, which {meets} as modelled: {why} ({rerun} reruns it)."


def run_spread(
    scenario: Scenario, summary: Summary, catalog: Catalog | None = None, *, check_work: bool = True
) -> RunSpread:
    """A run (`summary`, of `scenario`) and the same requests with every chip at the pessimistic
    and at the optimistic edge of its throughput band (two more simulations)."""
    slowdown, speedup = run_edges(scenario, summary)
    if not slowdown:
        return RunSpread(slowdown={}, modelled=summary.copy(), slower=summary.copy(), faster=summary.copy())
    reqs = generate(scenario)
    slow = simulate(scenario, catalog, reqs, check_work=check_work, slowdown=slowdown).summary
    fast = simulate(scenario, catalog, reqs, check_work=check_work, slowdown=speedup).summary
    return RunSpread(slowdown=slowdown, modelled=summary.copy(), slower=slow, faster=fast, speedup=speedup)


STEEP_EDGE_PTS = 0.25
"""A fall of SLO attainment this steep at the slow edge (25 points) is explained by the classes that
then miss their targets (`RunSpread.slow_edge_note`; assumption: a quarter of the requests moving
across a target is where a reader asks why the band is so wide)."""


# --- a comparison's margin (the Compare page) -------------------------------------------------

MARGIN_FIGURES = (
    "SLO attainment",
    "Goodput",
    "TTFT p99",
    "TPOT p99",
    "Cost per request",
    "Cost per 1M output tokens",
    "Energy per output token",
)
"""The Compare figures whose winner the comparison's margin checks (`compare_table.COMPARED` labels)."""


BOTH_FAIL = "both fail"
"""A case's better side of SLO attainment and goodput where both sides miss their SLO in it."""
SLO_FIGURES = ("SLO attainment", "Goodput")
"""The figures that measure the SLO met (`CompareMargin.table`)."""


@dataclass(frozen=True)
class CompareMargin:
    """Scenarios A and B, each as modelled and with its chips at the pessimistic edge of their band.

    Errors of the same chip under the same stack move together, so where A and B run on the same
    chips only two cases are fair: both as modelled and both slower. Where their chips differ
    either side may be the one the model flatters, so each side slower alone is a case too.
    """

    a: RunMargin
    b: RunMargin

    @property
    def shared(self) -> bool:
        """True when A and B run on the same chips under the same stack (their errors move together)."""
        stacks = {c["stack"] for s in (self.a.modelled, self.b.modelled) for c in s["calibration"].values()}
        return set(self.a.slowdown) == set(self.b.slowdown) and len(stacks) <= 1

    def cases(self) -> list[tuple[str, Summary, Summary]]:
        """(name, A's summary, B's summary) of each case the comparison is checked in."""
        out: list[tuple[str, Summary, Summary]] = [
            ("as modelled", self.a.modelled, self.b.modelled),
            ("both slower", self.a.slowed, self.b.slowed),
        ]
        if not self.shared:
            out += [
                ("B's chips slower", self.a.modelled, self.b.slowed),
                ("A's chips slower", self.a.slowed, self.b.modelled),
            ]
        return out

    def table(self) -> pd.DataFrame:
        """Per figure of `MARGIN_FIGURES` and case: the change from A to B and which is better
        (`compare_table.compare` columns), long form: figure, case, change_pct, change_points, better.
        Where both sides miss their SLO in a case, its SLO attainment and goodput have no better side
        (`BOTH_FAIL`): A's 0.12% against B's 0% read "-100.0% (A)", and A won goodput (a review)."""
        rows = []
        for case, a, b in self.cases():
            t = cost_judged(compare(a, b), a, b).set_index("figure")  # a failing side's bill wins nothing
            both_fail = not classes_pass(a) and not classes_pass(b)
            for figure in MARGIN_FIGURES:
                if figure in t.index:
                    r = t.loc[figure]
                    rows.append(
                        {
                            "figure": figure,
                            "case": case,
                            "change_pct": r["change_pct"],
                            "change_points": r["change_points"],
                            "better": BOTH_FAIL if both_fail and figure in SLO_FIGURES else r["better"],
                        }
                    )
        return pd.DataFrame(rows, columns=["figure", "case", "change_pct", "change_points", "better"])

    def unsustainable(self) -> str:
        """'A', 'B' or 'A and B': the sides whose run is unsustainable in some case (their latencies
        grow with run length, so no case orders them); '' when none is."""
        grows = {
            side
            for _, *runs in self.cases()
            for side, s in zip("AB", runs, strict=True)
            if latency_shortfall(s) is not None
        }
        return " and ".join(sorted(grows))

    def verdicts(self) -> dict[str, str]:
        """Per figure: 'A' or 'B' when that side is better in every case, 'same' when no case tells
        them apart, 'A or same' / 'B or same' when one side is never worse, else 'depends' (the
        model's error can turn the order); a latency that grows with run length in some case
        (`sustain.GROWS`) is '<side> unsustainable' (`unsustainable`), never a side's win; a bill
        cheaper in some case on a side that misses its SLO there (`cost_judged`) adds '; A misses its
        SLO in some case' ('B; B misses its SLO in every case': B is cheaper in every case, and misses
        the SLO in each)."""
        out: dict[str, str] = {}
        for figure, group in self.table().groupby("figure", sort=False):
            if sustain.GROWS in set(group["better"]):
                out[str(figure)] = f"{self.unsustainable() or 'A or B'} unsustainable"
                continue
            # a bill cheaper in some case on the side that misses the SLO there: ordered as the cheaper
            # side, and said ('B; B misses its SLO in some case')
            misses = sorted(s for s in "AB" if misses_slo(s) in set(group["better"]))
            better = group["better"].replace({misses_slo(s): s for s in "AB"})
            fails = BOTH_FAIL in set(better)  # a case that tells them apart on neither
            winners = set(better) - {"", BOTH_FAIL}
            sides = winners - {"same"}
            if not sides:
                out[str(figure)] = "same or both fail" if fails else "same"
            elif len(sides) == 1:
                side = next(iter(sides))
                alone = f"{side} or both fail" if fails else side
                out[str(figure)] = alone if "same" not in winners else f"{side} or same"
            else:
                out[str(figure)] = "depends"
            if misses:  # in every case where a bill read cheaper, or only in some
                told = [w for w in group["better"] if w not in ("", "same")]
                every = len(misses) == 1 and all(w == misses_slo(misses[0]) for w in told)
                out[str(figure)] += (
                    f"; {' and '.join(misses)} {'misses its' if len(misses) == 1 else 'miss their'} SLO "
                    f"{'in every case' if every else 'in some case'}"
                )
        return out


def compare_margin(
    a: Scenario,
    a_summary: Summary,
    b: Scenario,
    b_summary: Summary,
    *,
    check_work: bool = True,
) -> CompareMargin:
    """A and B each rerun on their own requests with their chips at the pessimistic edge of their band."""
    return CompareMargin(
        run_margin(a, a_summary, check_work=check_work), run_margin(b, b_summary, check_work=check_work)
    )
