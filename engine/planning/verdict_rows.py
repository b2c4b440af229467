"""The planner verdict's rows: each group's pick verified, checked at the edge, and the winner.

`decide` (`engine.planning.verdict`) builds a row per group from its pick (`Picks.row`, `row_of`):
the pick rerun at the scenario's own length (moved up where it fails), its figures and bands, and
whether it holds with every chip at the pessimistic edge of its band. A would-be winner is checked
over its full-length run at the edge (`edge_verified`): where that moves it up or it fails there, a
deployment tied with it over the planning window may hold for less (`Picks.tied`), and a dearer risk
pick that fails gives way to the nominal pick (`Picks.nominal`). `winner` picks the row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from engine.planning.candidates import split_label, window_text
from engine.planning.objective import row_value, value_text
from engine.planning.pick_tie import TIE
from engine.planning.plan_work import CHEAPER_TRIES
from engine.planning.portfolio import Portfolio
from engine.planning.prices import assumed_prices
from engine.planning.risk_search import counts_of as _counts
from engine.planning.risk_search import held_below
from engine.planning.search import Search
from engine.planning.sizing import Shape
from engine.planning.verdict_bands import bands, holds_words
from engine.planning.verify_pick import how_moved, verified

KEPT = (
    *("mode", "shape", "split", "chips", "usd_per_hour", "usd_per_million_output_tokens", "usd_per_request"),
    *("output_tokens_per_s_per_chip", "power_w", "slo_percentile", "ttft_ms_at_slo", "tpot_ms_at_slo"),
    *("classes_at_slo", "slo_attainment", "goodput_rps", "passes", "calibrated", "calibration"),
    "over_budget",
)
"""The run columns a verdict row quotes."""


def edge_verified(rows: list[dict[str, Any]], win: int | None, each: Picks) -> int | None:
    """The winner, its pick verified over its full-length run with every chip at its band's
    pessimistic edge as well as as modelled (moved up where that run fails; `row_of`): the one whose
    figures are quoted is judged over the same run. Where it no longer holds, or moved up past another
    group, the next winner is so verified, until a verified one wins. Only would-be winners pay for
    the full-length check at the edge: the table's other rows say whether they hold over the
    planning window (docs/planner.md, "Verified")."""
    tried: set[str] = set()
    while win is not None and rows[win]["group"] not in tried:
        g = rows[win]["group"]
        tried.add(g)
        again = each.row(g, True)
        if again is None:
            break
        again = each.cheaper(g, each.tied(g, again))
        if again["holds_slowed"] is False and not again["from_nominal"]:
            # a dearer pick that held over the planning window and fails its full-length check at the edge is
            # not the cheapest that holds; with nothing verified holding, the choice is the nominal pick, as
            # where the checks find nothing (30 mixed at $768/h stood beside a nominal 1P:5D at $153.60/h)
            again = each.nominal(g, again) or again
        rows[win] = again
        win = winner(pd.DataFrame(rows), True)
    return win


@dataclass
class Picks:
    """Each group's pick (`picks`, verified in place) and its row's notes (`said`): `decide`'s rows."""

    search: Search
    slow: Search | None
    groups: dict[str, dict[str, Any]]
    picks: dict[str, tuple[Shape | Portfolio, tuple[int, ...]]]
    verify: bool
    ties: dict[str, list[tuple[Shape | Portfolio, tuple[int, ...]]]] = field(default_factory=dict)
    """Per group, the deployments that held slowed as cheaply as its pick (`risk_picks`)."""
    bounds: tuple[Any, dict[Any, str], dict[Any, int]] | None = None
    """The search's shapes (live bounds, status, nominal best runs) for `cheaper`'s search; None: none."""
    said: dict[str, list[str]] = field(default_factory=dict)

    def row(self, g: str, at_edge: bool = False) -> dict[str, Any] | None:
        """The group's row from its pick (`row_of`), with its nominal pick's figures beside."""
        (shape, counts), nominal = self.picks[g], self.groups[g]
        self.said[g] = []
        row = row_of(self.search, self.slow, g, shape, counts, self.verify, self.said[g], at_edge)
        if row is not None:
            row["from_nominal"] = (shape, counts) == _counts(self.search, nominal)  # verified from it
            row["nominal_value"] = self.search.value(nominal)
            row["nominal_shape"], row["nominal_split"] = nominal["shape"], nominal["split"]
            row["nominal_run"] = int(nominal["run"])
        return row

    def nominal(self, g: str, failed: dict[str, Any]) -> dict[str, Any] | None:
        """The group's row from its nominal pick again, checked at the edge too: its risk-aware pick's row
        (`failed`) held over the planning window with its chips slowed, not over its full-length run."""
        self.picks[g] = _counts(self.search, self.groups[g])
        # its notes replace the failed pick's ('it stays 30 mixed' stood above 1P:5D)
        row = self.row(g, True)
        # moved up only where it was (a move past a budget, or a portfolio's, is never made: a review)
        moved = ", even moved up" if failed["moved_up"] else ""
        nominal = self.groups[g]
        self.said[g].insert(
            0,
            f"{g}: {failed['shape']} {failed['split']} held with its chips slowed over the planning window but "
            f"not over its full-length run{moved}: the row is the nominal pick again ({nominal['shape']} "
            f"{nominal['split']}, the cheapest that passed over the planning window as modelled), checked the "
            "same way",
        )
        return row

    def tied(self, g: str, row: dict[str, Any]) -> dict[str, Any]:
        """`row`, checked at the edge, or where that check moved it up or it fails there, a deployment that
        held as cheaply over the planning window (`ties`), checked the same way, if it holds for less (or at
        all): the tie was broken by headroom over the planning window alone (moe-deepseek-h200 at 5 req/s
        chose pp2 1P:3D, moved up to 1P:4D at $230.40/h, over the tied tp8 1P:6D, which holds at 1P:7D
        for $204.80/h; a review)."""
        holds = row["holds_slowed"] is True
        if not self.ties.get(g) or (holds and not row["moved_up"]):
            return row
        first, kept = self.picks[g], self.said[g]
        for alt in self.ties[g]:
            if holds and not self._may_undercut(first, alt, float(row["objective_value"])):
                continue
            self.picks[g] = alt
            other = self.row(g, True)
            cheaper = other is not None and (
                not holds or other["objective_value"] * TIE < row["objective_value"]
            )
            if other is not None and other["holds_slowed"] is True and cheaper:
                self.said[g].insert(0, self._tie_note(g, row, other, split_label(*alt)))
                return other
        self.picks[g], self.said[g] = first, kept  # the pick's row and notes as they were
        return row

    def cheaper(self, g: str, row: dict[str, Any]) -> dict[str, Any]:
        """`row`, or where its pick moved up to hold over its full-length run, the group's cheapest deployment
        of another shape that holds with its chips slowed over the planning window for less (`held_below`),
        checked the same way, if it holds there for less than the moved pick."""
        if self.slow is None or self.bounds is None or not row["moved_up"] or row["holds_slowed"] is not True:
            return row
        first, kept, moved = self.picks[g], self.said[g], float(row["objective_value"])
        nominal, tried = self.search.value(self.groups[g]), {first[0]}
        for _ in range(CHEAPER_TRIES):
            alt = held_below(self.search, self.slow, g, self.bounds, nominal, moved, tried)
            if alt is None:
                break
            tried.add(alt[0])
            self.picks[g] = alt
            other = self.row(g, True)
            if other is not None and other["holds_slowed"] is True and other["objective_value"] * TIE < moved:
                self.said[g].insert(
                    0,
                    f"{g}: the pick, {row['shape']}, costs {value_text(moved, self.search.objective)} once moved "
                    f"up to hold over its full-length run at the edge ({row['split']}); {other['shape']} holds "
                    f"there for {value_text(float(other['objective_value']), self.search.objective)} "
                    f"({other['split']})",
                )
                return other
        self.picks[g], self.said[g] = first, kept  # the pick's row and notes as they were
        return row

    def _may_undercut(self, first: Any, alt: Any, moved: float) -> bool:
        """Whether `alt`, tied with the pick `first` over the planning window, can hold for less than the pick
        `moved` up: one more instance of its cheapest kind must cost less than the pick's move did (else it
        could win only holding unmoved over its full-length run at the edge, which its tie does not promise;
        DeepSeek at 10 req/s spent five such checks, doubling its plan's time, for no change)."""
        slow = self.slow
        if slow is None or first not in slow.index or isinstance(alt[0], Portfolio):
            return True
        shape = alt[0]
        step = min(self.search.cost(shape, (1, 0)), self.search.cost(shape, (0, 1)))
        return step * TIE < moved - slow.value(slow.rows[slow.index[first]])

    def _tie_note(self, g: str, row: dict[str, Any], other: dict[str, Any], tied: str) -> str:
        """Why the group's row is a deployment that tied with its pick (`tied`: its split then)."""
        cost = value_text(float(row["objective_value"]), self.search.objective)
        why = f"costs {cost} once moved up to hold" if row["holds_slowed"] is True else "does not hold"
        return (
            f"{g}: the pick, {row['shape']}, {why} over its full-length run at the edge ({row['split']}); "
            f"{other['shape']}, which held as cheaply over the planning window ({tied}), holds for "
            f"{value_text(float(other['objective_value']), self.search.objective)} ({other['split']})"
        )


def winner(table: pd.DataFrame, risk_aware: bool) -> int | None:
    """The row chosen: never over budget; of those, the passing ones (any, if none passes), then
    (risk-aware) those that hold with the chips slowed, if any do; the least objective value, and of
    rows alike in it the cheapest per hour (`--objective chips` chose 7 H200s at $22.40/h over 7 chips
    at $18.85/h that held too, the first of the table's order: a review), then the table's order."""
    within = table[~table["over_budget"].astype(bool)] if len(table) else table
    if not len(within):
        return None
    ok = within[within["passes"]] if within["passes"].any() else within
    if risk_aware and "holds_slowed" in ok and ok["holds_slowed"].fillna(False).astype(bool).any():
        ok = ok[ok["holds_slowed"].fillna(False).astype(bool)]
    value = ok["objective_value"].to_numpy(dtype=float)
    cost = ok["usd_per_hour"].to_numpy(dtype=float) if "usd_per_hour" in ok else np.zeros(len(ok))
    return int(ok.index.to_numpy()[np.lexsort((cost, value))[0]])


def row_of(
    search: Search,
    slow: Search | None,
    g: str,
    shape: Shape | Portfolio,
    counts: tuple[int, ...],
    verify: bool,
    notes: list[str],
    at_edge: bool = False,
) -> dict[str, Any] | None:
    """A group's verdict row: its pick verified (moved up if it fails), with its figures and bands;
    `at_edge` (a would-be winner, risk-aware), verified also over its full-length run with every chip
    at its band's pessimistic edge, which then says whether it holds."""
    full = search.full
    quoted, edge, counts, moved, edged, start = verified(
        search, slow, g, shape, counts, verify, notes, at_edge
    )
    planned = search.run(shape, counts)  # the pick on the planning window: the frontier's point
    if planned is None:
        return None
    if quoted is None:
        quoted = dict(planned)
    if quoted.get("over_budget"):
        notes.append(
            f"{g}: {shape.label()} {quoted['split']} bills ${quoted['usd_per_hour']:,.2f}/h, over the budget"
        )
    elif verify and not quoted["passes"]:
        notes.append(f"{g}: {shape.label()} {quoted['split']} fails its full-length run")
    elif moved:
        # instances, not steps: a step that blames both pools adds one to each (3P:2D to 4P:3D read '1 instance')
        added = sum(counts) - sum(start)
        moves = f"{split_label(shape, start)} to {quoted['split']}"
        up = f"moved the pick up {added} instance{'s' if added != 1 else ''}, from {moves}"
        notes.append(f"{g}: the full-length run {how_moved(moved, edged)}{up}")
    holds, s = None, None
    planning = None  # the risk search's own run of this pick (planning window), where it made one
    if slow is not None:
        planning = slow.rows[slow.index[shape, counts]] if (shape, counts) in slow.index else None
        # the risk check of the quoted run's own window where it was made (a walkthrough: the planning
        # window's check passed at TPOT p99 45.3 ms where the full-length run at the edge took 50.6)
        s = edge if edge is not None else planning if planning is not None else slow.run(shape, counts)
        holds = None if s is None else bool(s["passes"])
    out = {"group": g, "winner": False, "run": int(planned["run"]), **{k: quoted.get(k) for k in KEPT}}
    # the edge run over the quoted run's own window where one was made, as the margin prints it: with the
    # planning window's beside it, 'TTFT p90 332 ms (199 to 808)' stood over a margin of 713 ms (a review)
    out |= bands(quoted, [edge] if edge is not None else [r for r in (s, planning) if r is not None], edge)
    out["objective_value"] = row_value(quoted, search.objective)
    out["planning_value"] = row_value(planned, search.objective)  # beside its nominal's (edge_premium_note)
    out["holds_slowed"] = holds
    whole = edge is not None or not verify or search.base.duration_s >= full.duration_s  # (a window as long)
    out["holds_text"] = holds_words(holds, whole, search.base.duration_s)
    out["verified"] = bool(verify and quoted["passes"])
    out["verified_by"] = (
        f"full-length run ({window_text(full, search.full_lead_s)}, seed {full.seed})"
        if verify
        else f"planning run ({window_text(search.base, search.lead_s)}, seed {search.base.seed})"
    )
    out["moved_up"] = moved
    out["assumed_prices"] = assumed_prices(search, shape)
    return out
