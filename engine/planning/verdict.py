"""The planner's verdict: each chip's best deployment side by side, checked, and the choice.

The search (`engine.planning.plan`) bounds each *group* by its own best: a group is one chip
(colocated, or disaggregated on that chip alone), one pairing of a prefill chip with a decode
chip, or the portfolios (`group_of`). So a plan over H100 and MI300X answers with the best of
each, not only the overall winner. `decide` then:

1. **Risk-aware** (the default): for each group, the cheapest deployment that still passes with
   every chip at the pessimistic edge of its calibrated throughput band (`slowdowns`). A slowed
   run never passes where the same deployment as modelled fails (a slower chip is never faster),
   so each shape's nominal best, or its lower bound where it has none, bounds it from below: the
   slowed search starts from the nominal winners and climbs, and stops a group once its bound
   reaches the group's best that holds. Usually it costs one slowed run per group (the nominal
   pick holds) or a few (one more instance).
2. **Verified**: each group's pick is rerun at the scenario's own length and seed, with its chips
   as modelled; the figures quoted are that run's (`verified_by`). A pick that fails there moves
   up (one more instance of the pool its failure blames) at most `VERIFY_TRIES` times.
3. The winner is the group whose verified pick has the lowest objective; beside it, the nominal
   cheapest (the search's own winner, as modelled) with the premium and its risk in words.

Every figure carries its band where the calibration shows one (`trust_columns`): latencies the
TTFT and TPOT bands, output tokens/s per chip the throughput band, costs per token and request
the throughput band turned round (faster chips lower them); mean power none (not measured).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from engine.core.numbers import rate2
from engine.planning.objective import DEARER, OBJECTIVES, best, better, row_value, shown_value, value_text
from engine.planning.plan_work import CHEAPER_TRIES, MAX_GROUPS, VERIFY_TRIES
from engine.planning.portfolio import Portfolio
from engine.planning.prices import prices_text
from engine.planning.risk_search import ABOVE, CUT, risk_picks, slowed_search
from engine.planning.risk_search import counts_of as _counts
from engine.planning.risk_search import group_of as group_of
from engine.planning.rules import attained, capacity_text
from engine.planning.search import Search
from engine.planning.sizing import Bound, Shape
from engine.planning.verdict_bands import own_slowdowns
from engine.planning.verdict_rows import Picks, edge_verified, winner
from engine.planning.verify_pick import full_run


@dataclass(frozen=True)
class Verdict:
    """Each group's best deployment, its checks and figures (`table`), and the choice."""

    objective: str
    risk_aware: bool
    table: pd.DataFrame
    """One row per group: the pick's deployment, figures of its quoted run and their bands,
    ``winner``, ``holds_slowed`` (None when not risk-aware), ``verified_by``, the group's nominal pick."""
    chosen_run: int | None
    """The winner's run in the plan's runs (on the planning window), None when nothing passed."""
    nominal_run: int | None
    """The search's own winner (as modelled, on the planning window)."""
    slowdown: dict[str, float] = field(default_factory=dict)
    """Per chip, how much longer its iterations ran in the risk-aware checks (empty: not risk-aware)."""
    nominal_slowed: dict[str, Any] | None = None
    """The nominal cheapest run with every chip at its band's edge: ``passes``, ``slo_attainment``,
    ``ttft_ms_at_slo``, ``tpot_ms_at_slo``, ``slo_percentile``, ``shortfall_rps``, ``standing_requests``
    (None: not risk-aware, or the risk search's simulations ran out before it)."""
    notes: tuple[str, ...] = ()
    slowed_simulations: int = 0
    """How many runs the risk-aware checks simulated (with every chip at its band's edge)."""
    risk_checks_cut: bool = False
    """True when the risk-aware checks ran out of simulations: a cheaper deployment that holds with
    its chips slowed may exist (`unsure_text`)."""
    planning_values: tuple[float, float] | None = None
    """The choice's and the nominal cheapest's objective over the planning window, where both ran."""
    full_values: tuple[float, float, bool] | None = None
    """The choice's and the nominal cheapest's objective over the scenario's own window and seed (the
    full-length runs the headline quotes), and whether the nominal passes there; None where the picks
    were not verified. `premium_text` compares these where they are, else the planning window's: like
    with like, and by $/M the full-length figure the headline quotes (a review read three prices for
    one choice: its full-length $0.98 above, its planning $1.16 against the nominal's $1.00 beside)."""
    passing_base: tuple[str, float] | None = None
    """Where the nominal cheapest fails its full-length run: the next nominal pick, in the search's order,
    that passes there and costs less than the choice, named ('h100-sxm tp1 -> h200 tp2 5P:1D') with its
    objective over that run: the premium's base (`premium_text`). The premium over a deployment that fails
    as modelled read +57% where `plan --nominal` chose one 45% cheaper than the choice (a planner's review).
    None elsewhere."""

    @property
    def chosen(self) -> dict[str, Any] | None:
        """The winner's row of `table`."""
        won = self.table[self.table["winner"]] if len(self.table) else self.table
        return None if won.empty else {str(k): v for k, v in won.iloc[0].to_dict().items()}

    def premium_text(self) -> str:
        """What the risk-aware choice costs over the nominal cheapest: '+$4.98/h (+6%)', or '$4.50/h less
        (-5%)' where it is cheaper (the nominal search stopped at its budget, or its pick failed its
        full-length run and moved up), 'the same' where another deployment costs what it does (a premium
        box without a premium read as a trade-off: a review), or '' where there is no other."""
        c = self.chosen
        # the nominal cheapest the page and `plan` name, both over one window: the choice's group's own
        # nominal pick (another deployment) and its full-length run beside the nominal's planning run
        # (another window) read +$4.85/h where it was +$8.42/h, and 8% less per million tokens where it
        # was 17% more (a review)
        if c is None or self.compared() is None or c["run"] == self.nominal_run:
            return ""
        mine, nominal = self.compared() or (math.nan, math.nan)
        base = self.passing_base
        nominal = base[1] if base is not None else nominal
        if not (math.isfinite(mine) and math.isfinite(nominal)):
            return ""
        over = (
            f" over {base[0]}, the next {best(self.objective)} nominal pick and the first to pass as modelled over "
            f"its full-length run ({value_text(base[1], self.objective)})"
            if base is not None
            else ""
        )
        # the difference of the two figures as said (6.9 and 7.2 kW read +0.2 kW from 6,924 and 7,167 W)
        extra = shown_value(mine, self.objective) - shown_value(nominal, self.objective)
        if abs(extra) < 1e-9 or value_text(mine, self.objective) == value_text(nominal, self.objective):
            return "the same" + over
        share = f" ({(mine - nominal) / nominal:+.0%})" if nominal else ""
        if extra > 0:
            return f"+{value_text(extra, self.objective)}{share}{over}"
        return f"{value_text(-extra, self.objective)} less{share}{over}"

    def nominal_name(self) -> str:
        """'the nominal cheapest' in the objective's word ('the nominal leanest' by power, 'the nominal
        smallest' by chips): the search's own winner, as modelled."""
        return f"the nominal {best(self.objective)}"

    def premium_verb(self) -> str:
        """'costs', 'takes' (chips) or 'draws' (power): 'the choice draws +0.4 kW (+5%)'."""
        return DEARER.get(self.objective, "costs")

    def compared(self) -> tuple[float, float] | None:
        """(the choice's, the nominal cheapest's) objective over one window: their full-length runs where
        both ran, else their planning runs (None: neither pair)."""
        return self.full_values[:2] if self.full_values is not None else self.planning_values

    def nominal_text(self, window_s: float) -> str:
        """'$1.51 per M over its full-length run, where the choice reads $1.94' (the planning window's
        where the picks were not verified; '' where either did not run): the nominal's $1.51 beside the
        choice's full-length $1.70 and a premium of +$0.43 read as arithmetic that did not add up (a review)."""
        mine, nominal = self.compared() or (math.nan, math.nan)
        if not (math.isfinite(mine) and math.isfinite(nominal)):
            return ""
        full = self.full_values
        fails = full is not None and not full[2]
        # a chip count or a price per hour is no window's ('3 chips over the 120 s planning window'; '$13.50/h
        # over its full-length run': a browser review)
        if self.objective in ("chips", "usd_per_hour"):
            where = (
                " (it fails its SLO over its full-length run),"
                if fails
                else ""
                if self.objective == "chips"
                else ","
            )
        else:
            where = (
                " over its full-length run"
                if full is not None
                else f" over the {window_s:,.0f} s planning window"
            )
            where += " (it fails its SLO there)," if fails else ","
        return f"{value_text(nominal, self.objective)}{where} where the choice reads {value_text(mine, self.objective)}"

    def risk_text(self) -> str:
        """The nominal cheapest's risk in words: whether it still passes with every chip at the
        pessimistic edge of its band, and how it fares then, or that it was not rerun so (the risk
        search's simulations ran out first); '' when not risk-aware."""
        s = self.nominal_slowed
        if s is None:
            unchecked = (
                self.risk_aware and self.nominal_run is not None and self.nominal_run != self.chosen_run
            )
            return (
                f"{self.nominal_name()} was not rerun with its chips at their bands' pessimistic edge: the risk-aware "
                "checks ran out of simulations first (more simulations would check it)"
                if unchecked
                else ""
            )
        slow = own_slowdowns(self.slowdown, self.table, self.nominal_run)
        # the choice itself where it is the nominal pick (it read 'the nominal cheapest misses ...' as if of
        # another deployment: a browser review)
        who = (
            self.nominal_name()
            if self.nominal_run != self.chosen_run
            else f"the choice, {self.nominal_name()} itself,"
        )
        if s["passes"] and (failed := self._nominal_failed_full_length()):
            return (
                f"{who} meets every SLO with every chip at its band's pessimistic edge ({slow}) "
                f"over the planning window, but not as modelled over its full-length run ({failed})"
            )
        if s["passes"]:
            edge = f"every chip at its band's pessimistic edge ({slow})"
            return f"{who} still meets every SLO with {edge}"
        pct = f"p{s['slo_percentile']:g}"
        ttft, tpot = s["ttft_ms_at_slo"], s.get("tpot_ms_at_slo")
        late = "requests never served" if ttft is None or ttft != ttft else f"TTFT {pct} {ttft:,.0f} ms"
        if tpot is not None and tpot == tpot and ttft is not None and ttft == ttft:
            late += f", TPOT {pct} {tpot:,.1f} ms"  # the one that fails may be either (TTFT alone hid it)
        short, stood = s["shortfall_rps"], capacity_text(s.get("standing_requests")).replace(";", ",", 1)
        behind = stood if short is None else f", falling behind by {rate2(short)} req/s"
        # its own full-length failure said too: the premium read as risk's alone where the nominal cheapest
        # failed as modelled (TTFT p90 5,998 ms, 'fails its full-length run' in its row: a review)
        modelled = (
            f"; as modelled over its full-length run, {failed}"
            if (failed := self._nominal_failed_full_length())
            else ""
        )
        return (
            f"{who} misses its SLO if the chips are as slow as their band's pessimistic edge "
            f"({slow}): over the planning window, {attained(s['slo_attainment'], 0)}, {late}{behind}{modelled}"
        )

    def _nominal_failed_full_length(self) -> str:
        """How the nominal cheapest's own full-length run went where it failed ('' where it passed or
        was not run): its group's pick moved up to '2 mixed', or still failing."""
        if self.nominal_run is None or not {"nominal_run", "moved_up", "from_nominal"} <= set(self.table):
            return ""
        mine = self.table[self.table["nominal_run"] == self.nominal_run]
        if mine.empty:
            return ""
        row = mine.iloc[0]
        # only where the row's full-length runs started from the nominal pick itself (a risk-aware
        # pick of its group may be another deployment)
        if not row["from_nominal"] or str(row["verified_by"]).startswith("planning"):
            return ""
        if not row["verified"]:
            return "it fails, moved up or not"
        return f"its pick moved up to {row['split']}" if row["moved_up"] else ""

    def unsure_text(self, settled: bool) -> str:
        """What the choice's 'cheapest' rests on where the search did not settle it: the search
        stopped at its simulation budget short of shapes that might beat it (`Plan.settled` false),
        and cheaper rows the risk-aware checks never reached ('not checked'); '' where neither. The
        page's "Cheapest deployment ... even with every chip at the pessimistic edge" stood bare beside
        both (a walkthrough)."""
        c = self.chosen
        said = []
        if not settled:
            said.append(
                f"the search stopped at its simulation budget, so a {better(self.objective)} deployment may exist"
            )
        if c is not None and self.risk_aware and "holds_slowed" in self.table:
            cheaper = self.table[self.table["objective_value"] < c["objective_value"]]
            unknown = [
                str(g) for g, h in zip(cheaper["group"], cheaper["holds_slowed"], strict=True) if pd.isna(h)
            ]
            if unknown:
                said.append(
                    f"{better(self.objective)} rows the risk-aware checks did not reach: {', '.join(unknown)}"
                )
        # a headline's 'lowest' rested on it, where something cheaper than the choice passed as modelled
        # (day-autoscaled's choice was the nominal cheapest's price: nothing cheaper could hold, a review)
        if self.risk_aware and self.risk_checks_cut and c is not None and self._cheaper_nominal(c):
            said.append(
                f"the risk-aware checks ran out of simulations, so a {better(self.objective)} deployment that holds "
                "with its chips "
                "slowed may exist (more simulations check further)"
            )
        elif self.risk_aware and self.risk_checks_cut and c is not None and c.get("holds_slowed") is False:
            # 'NO passing deployment ... holds' stood as fact where the checks had stopped (a review)
            said.append(
                "the risk-aware checks ran out of simulations before a deployment held with its chips slowed, so "
                "one may exist at a higher cost (more simulations check further)"
            )
        return "; ".join(said)

    def _cheaper_nominal(self, c: dict[str, Any]) -> bool:
        """A deployment cheaper than the choice passed as modelled (a deployment that holds slowed passes
        as modelled, so none cheaper than the nominal cheapest can): over the planning window, both."""
        if c["run"] == self.nominal_run:
            return False
        return self.planning_values is None or self.planning_values[0] > self.planning_values[1] * (1 + 1e-9)

    def prices_text(self) -> str:
        """The table's assumed prices in words (`prices.prices_text`)."""
        return prices_text(self.table.get("assumed_prices", pd.Series(dtype=object)))

    def to_json(self) -> dict[str, Any]:
        """Plain data for `plan --json`."""
        rows = [{k: _plain(v) for k, v in r.items()} for r in self.table.to_dict(orient="records")]
        return {
            "objective": self.objective,
            "objective_text": OBJECTIVES[self.objective],
            "risk_aware": self.risk_aware,
            "slowdown": dict(self.slowdown),
            "chosen": next((r for r in rows if r["winner"]), None),
            "premium": self.premium_text() or None,
            "premium_over": (
                None
                if not self.premium_text()
                else "full-length runs"
                if self.full_values
                else "planning window"
            ),
            "nominal_full_length": None
            if self.full_values is None
            else {"objective_value": _plain(self.full_values[1]), "passes": self.full_values[2]},
            "premium_base": None
            if self.passing_base is None
            else {"deployment": self.passing_base[0], "objective_value": _plain(self.passing_base[1])},
            "nominal_run": self.nominal_run,
            "nominal_slowed": self.nominal_slowed,
            "risk": self.risk_text() or None,
            "prices": self.prices_text() or None,
            "per_chip": rows,
            "notes": list(self.notes),
            "slowed_simulations": self.slowed_simulations,
        }


def _plain(v: Any) -> Any:
    if hasattr(v, "item"):
        v = v.item()
    return None if isinstance(v, float) and v != v else v


def _risk_checked(search: Search, slow: Search, held: dict[str, Any], picks: dict[str, Any]) -> list[str]:
    """Each group's pick where one passes with slowed chips (into `picks`), and the notes on those
    where none does: none in the search, or the checks' budget spent before one did, said once with
    the groups it cut short (a note per group and one for the budget said the same twice)."""
    notes, cut, above = [], [], []
    # (a budget that every slowed start bills past read as if nothing could hold: a review)
    limits = [
        w
        for w, v in (("budget", search.budget), ("power budget", search.power_budget_kw))
        if math.isfinite(v)
    ]
    within = f" within the {' and the '.join(limits)}" if limits else ""
    for g, pick in held.items():
        if isinstance(pick, tuple):
            picks[g] = pick
        elif pick == CUT:  # not that none passes: the checks stopped before one did
            cut.append(g)
        elif pick == ABOVE:  # checked only up to what a group before it held at
            above.append(g)
        else:
            notes.append(
                f"{g}: no deployment of this search passes with its chips at the bands' edge{within}"
            )
    budget = f" ({search.space.max_simulations})" if slow.out_of_budget else ""
    # sentences, each ended: one run-on of five clauses with no full stop was hard to follow (a review)
    own = (
        ". The checks have a budget of their own, as large as the search's: more simulations check further"
        if budget
        else ""
    )
    if cut:
        rows = "Their rows show their" if len(cut) > 1 else "Its row shows its"
        notes.append(
            # groups named '; '-apart: a pairing's 'h100-sxm -> mi300x' read as a list with ', ' (a review)
            f"{'; '.join(cut)}: the risk-aware checks ran out of simulations{budget} before a deployment passed "
            f"with slowed chips. {rows} nominal pick, and 'holds slowed' is that pick's own check ('not "
            f"checked' where the checks never reached it){own}."
        )
    elif budget:
        notes.append(f"the risk-aware checks ran out of simulations{budget}{own}.")
    if above:
        # the cap they were checked to: the least that held over the planning window (the choice's full-length
        # check may then move it up, past some of theirs: 'none here could be the choice' was not proven)
        # (a portfolio's is no cap: its own pools' search caps no group; $40.90/h was named where $44.82 was one)
        held_at, holder = min(
            (slow.value(slow.rows[slow.index[p]]), g)
            for g, p in held.items()
            if isinstance(p, tuple) and not isinstance(p[0], Portfolio)
        )
        # the rule first, then the groups: a list of nine pairings before its colon read as one run-on (a review)
        rows = "Their rows show their" if len(above) > 1 else "Its row shows its"
        whose = f"{len(above)} chips or pairings" if len(above) > 1 else "one chip or pairing"
        notes.append(
            # the group that held named ('a deployment of another chip' read as another than the choice's: a
            # browser review, where it was the choice's own)
            f"Checked with slowed chips only up to {value_text(held_at, search.objective)}, where a deployment "
            f"of {holder} held over the planning window: {whose} ({'; '.join(above)}). {rows} own "
            "nominal pick, verified as modelled, and 'holds slowed' is that pick's own run with the chips slowed"
            # ('not checked' stood under a note that said each had its run: a review)
            + (" ('not checked' where the checks' budget ran out before it)." if slow.out_of_budget else ".")
        )
    return notes


def decide(
    search: Search,
    groups: dict[str, dict[str, Any]],
    live: list[Bound] | Any,
    status: dict[Shape | Portfolio, str],
    found: dict[Shape | Portfolio, int],
    *,
    risk_aware: bool,
    verify: bool,
) -> Verdict:
    """The verdict from each group's nominal best (see the module's docstring); the `MAX_GROUPS`
    groups of the lowest nominal objective are checked and verified, the rest named in a note."""
    order = sorted(groups, key=lambda g: search.value(groups[g]))
    # each with its nominal figure: the calibrated H100 passed at a cost no line showed (a review)
    rest = "; ".join(
        f"{g} {value_text(search.value(groups[g]), search.objective)}" for g in order[MAX_GROUPS:]
    )
    more = f"{len(order) - MAX_GROUPS} more chip groups passed, not verified (their nominal best): {rest}"
    notes: list[str] = [more] if len(order) > MAX_GROUPS else []
    # the cheapest nominal groups first, for the risk-aware checks too: in the search's order the
    # scenario's own chip came first and spent their budget, the cheaper chips never checked (a review)
    groups = {g: groups[g] for g in order[:MAX_GROUPS]}
    picks = {g: _counts(search, row) for g, row in groups.items()}
    nominal_best = order[0] if order else None
    slow = slowed_search(search) if risk_aware and groups else None
    # the nominal cheapest run slowed first, for its risk in figures (the search of its shape may start past it)
    nominal_slowed = _nominal_slowed(search, slow, groups[nominal_best]) if nominal_best is not None else None
    each = Picks(search, slow, groups, picks, verify, bounds=(live, status, found))
    if slow is not None:
        held = risk_picks(search, slow, groups, live, status, found, each.ties)
        notes += _risk_checked(search, slow, held, picks)
    # past the budget, each pick's planning runs as it is verified, moved and checked against its ties, and
    # risk-aware the other shapes tried where it moved up to hold at the edge (`Picks.cheaper`); the
    # nominal's full-length run is no planning run (it counted one, and the cheaper tries none: a review)
    search.allowance += len(picks) * (VERIFY_TRIES + 1 + (CHEAPER_TRIES if slow is not None else 0))
    rows = [r for r in map(each.row, picks) if r is not None]
    win = winner(pd.DataFrame(rows), risk_aware)
    if verify and slow is not None:
        win = edge_verified(rows, win, each)
    notes += [n for g in picks for n in each.said[g]]
    table = pd.DataFrame(rows)
    chosen_run = None
    if win is not None:
        table["winner"] = table.index == win
        chosen_run = int(table["run"].to_numpy()[win])
    if len(table):
        table = table.sort_values("objective_value", kind="stable").reset_index(drop=True)
    nominal_run = int(groups[nominal_best]["run"]) if nominal_best is not None else None
    full = _full_values(search, table, groups.get(nominal_best or ""), verify and risk_aware)
    return Verdict(
        objective=search.objective,
        risk_aware=risk_aware,
        table=table,
        chosen_run=chosen_run,
        nominal_run=nominal_run,
        slowdown=dict(slow.slowdown) if slow is not None else {},
        nominal_slowed=nominal_slowed,
        notes=tuple(notes),
        slowed_simulations=0 if slow is None else len(slow.rows),
        planning_values=_planning_values(search, chosen_run, nominal_run),
        full_values=full,
        passing_base=_passing_base(search, [groups[g] for g in order[1:MAX_GROUPS]], full),
        risk_checks_cut=slow is not None and bool(slow.out_of_budget),
    )


BASE_TRIES = 3
"""Nominal picks after the nominal cheapest whose full-length runs `_passing_base` tries (each simulated once a
plan, most of them already run as their group's pick)."""


def _passing_base(
    search: Search, after: list[dict[str, Any]], full: tuple[float, float, bool] | None
) -> tuple[str, float] | None:
    """`Verdict.passing_base`: where the nominal cheapest fails its full-length run (`full`), the first of the
    next nominal picks (`after`, in the search's order; at most `BASE_TRIES`) that passes its own and costs
    less than the choice there, with its objective over that run (None: none such)."""
    if full is None or full[2]:
        return None
    for row in after[:BASE_TRIES]:
        got = full_run(search, *_counts(search, row))
        value = row_value(got, search.objective)
        if value >= full[0]:  # as dear as the choice: no cheaper deployment passes in reach
            return None
        if got["passes"]:
            return f"{got['shape']} {got['split']}", value
    return None


def _nominal_slowed(search: Search, slow: Search | None, row: dict[str, Any]) -> dict[str, Any] | None:
    """The nominal cheapest's run with its chips slowed (None: not risk-aware)."""
    got = None if slow is None else slow.run(*_counts(search, row))
    keys: tuple[str, ...] = ("passes", "slo_attainment", "ttft_ms_at_slo", "tpot_ms_at_slo", "slo_percentile")
    keys += ("shortfall_rps", "standing_requests")
    return None if got is None else {k: _plain(got.get(k)) for k in keys}


def _planning_values(search: Search, chosen: int | None, nominal: int | None) -> tuple[float, float] | None:
    """The choice's and the nominal cheapest's objective over the planning window (None unless both ran)."""
    if chosen is None or nominal is None or max(chosen, nominal) >= len(search.rows):
        return None
    return float(search.value(search.rows[chosen])), float(search.value(search.rows[nominal]))


def _full_values(
    search: Search, table: pd.DataFrame, nominal: dict[str, Any] | None, verified: bool
) -> tuple[float, float, bool] | None:
    """The choice's objective from its quoted full-length run and the nominal cheapest's from a
    full-length run of its own (as modelled; one run, shared with its group's pick where that is the
    same deployment), with whether it passes there; None where the picks were not verified or the
    choice is the nominal pick."""
    if not verified or nominal is None or "winner" not in table:
        return None
    won = table[table["winner"]]
    if won.empty or int(won["run"].iloc[0]) == int(nominal["run"]):
        return None
    row = full_run(search, *_counts(search, nominal))
    return float(won["objective_value"].iloc[0]), row_value(row, search.objective), bool(row["passes"])
