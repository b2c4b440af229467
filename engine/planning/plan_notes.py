"""The notes a plan prints beside its choice: what the budgets left out, why nothing passed, and how
its runs were made (`engine.planning.plan`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from engine.core.numbers import ms_text, plain
from engine.planning.emit_facts import longest_tokens
from engine.planning.objective import better, value_text
from engine.planning.portfolio import Portfolio
from engine.planning.risk_search import counts_of, group_of
from engine.planning.rules import rule_text
from engine.planning.search import Search
from engine.planning.sizing import Bound, Kind, Shape
from engine.scenario.model import Scenario
from engine.serving.work_load import RAMP_CAP_S, RAMP_SHARE, session_ramp


def method_notes(
    search: Search, budget_kw: float | None, target_rps: float, verify: bool = True
) -> list[str]:
    """How the runs were made, said as information rather than as a warning (`Plan.method`): a site
    power cap taken as the plan's power budget, and a session lead before each window."""
    notes = []
    site = search.base.deployment.power_cap_kw
    if budget_kw is not None and site is not None and site <= budget_kw:
        notes.append(
            f"the scenario's site power cap ({site:,.3g} kW) is the plan's power budget: no candidate whose "
            "chips at TDP draw more is tried, so none runs slowed by it"
        )
    if search.lead_s > 0:
        notes.append(lead_note(search.base, search.lead_s, f"to {target_rps:g} req/s"))
    full, base = search.full.duration_s, search.base.duration_s
    # (a 60 s scenario's picks were verified over 60 s, chosen over 120, unsaid: a review)
    if verify and full < base:
        notes.append(
            f"the full-length runs that verify each pick (the scenario's {full:,.0f} s) are shorter than the "
            f"{base:,.0f} s planning window, so a pick is checked over less time than it was chosen on "
            f"(--duration-s {full:g} plans over the scenario's own length)"
        )
    return notes


def power_note(search: Search, bounds_: list[Bound], budget_kw: float | None) -> list[str]:
    """What the power budget left out, with the figure: the shapes over it and the least they need."""
    if budget_kw is None:
        return []
    over = [search.kw(b.shape, b.counts) for b in bounds_ if b.pruned.startswith("over the power budget")]
    if not over:
        return []
    return [
        f"{len(over)} of {len(bounds_)} shapes need more than the power budget of {budget_kw:,.3g} kW with "
        f"their chips at TDP at the fewest instances the cost model allows (the least of them {min(over):,.1f} kW)"
    ]


def over_budget_note(bounds_: list[Bound], budget: float) -> list[str]:
    """What the dollar budget left out, with the figure, as `power_note` says the power budget's: a
    budget that ruled every shape out read only "no simulated deployment passed" (a review)."""
    over = [b.usd_per_hour for b in bounds_ if b.pruned.startswith("over budget")]
    if not over or not math.isfinite(budget):
        return []
    return [
        f"{len(over)} of {len(bounds_)} shapes bill more than the budget of ${budget:,.2f}/h at the fewest "
        f"instances the cost model allows (the least of them ${min(over):,.2f}/h)"
    ]


def budget_note(search: Search, budget: float) -> list[str]:
    """The simulated deployments that met their SLOs but billed more than the budget, with the least
    of them: the bounds let them through (an owned chip priced at idle power), the runs did not."""
    over = [r["usd_per_hour"] for r in search.rows if r["over_budget"] and r["meets_slo"]]
    if not over:
        return []
    return [
        f"{len(over)} simulated deployment{'s' if len(over) > 1 else ''} met the SLOs but billed over the "
        f"budget of ${budget:,.2f}/h (the least ${min(over):,.2f}/h): not chosen"
    ]


def lead_note(run: Scenario, lead_s: float, to: str = "") -> str:
    """What a planning or capacity run's session lead is (`session_lead_s`), and how far a lead the
    cap cut short gets: `run` is the run made, `to` what its sessions ramp up to."""
    ramp = session_ramp(run)
    capped = (
        f" (capped at {RAMP_CAP_S:,.0f} s: they send about {ramp.reached:.0%} of it by then, so the window is "
        "measured below it)"
        if ramp.reached < RAMP_SHARE
        else ""
    )
    return (
        f"multi-turn sessions: each run starts {lead_s:g} s before its window, unmeasured, for its sessions "
        f'to ramp up{" " + to if to else ""}{capped} (docs/planner.md, "Sessions")'
    )


def _closest_miss(runs: pd.DataFrame) -> str:
    """': the closest, h100-sxm tp4 pp2 1 mixed at $19.92/h, 0% of requests within SLO: chat TTFT p90
    ≥ 17,072 ms (target 1,000 ms), ...; it falls behind its load by 9.97 req/s' (≥: a latency that grows with
    the run's length, `grows_rps`), the
    simulated deployment that served the most within SLO (the cheaper of equals) and what it missed; ''
    without one. A failed plan named none of its simulations (a review)."""
    if not len(runs) or "goodput_rps" not in runs:
        return ""
    r = runs.sort_values(["goodput_rps", "usd_per_hour"], ascending=[False, True], kind="stable").iloc[0]
    misses = []
    per = r.get("classes_at_slo")
    for name, c in (per if isinstance(per, dict) else {}).items():
        p = f"p{c['percentile']:g}"
        for kind in ("ttft", "tpot"):
            value, target = c.get(f"{kind}_ms"), c.get(f"{kind}_target_ms")
            if target is None or (value is not None and value == value and value <= target):
                continue
            # as the verdict writes a latency: held apart from its target, the target in ms (a review read
            # "30 ms (target 30)" for 30.04, and NaN passed as met); None: requests never answered
            shown = "never answered" if value is None or value != value else ms_text(value, target)
            grows = r.get(f"{kind}_grows_rps")
            if shown != "never answered" and grows is not None and grows == grows:  # set by the run's length
                shown = f"≥ {shown}"
            misses.append(f"{name} {kind.upper()} {p} {shown} (target {plain(target)} ms)")
    said = f": {', '.join(misses)}" if misses else ""
    behind = r.get("shortfall_rps")
    late = (
        f"; it falls behind its load by {behind:,.3g} req/s"
        if behind is not None and behind == behind
        else ""
    )
    attained = r.get("slo_attainment")
    share = (
        f", {attained:.0%} of requests within SLO" if attained is not None and attained == attained else ""
    )
    return f": the closest, {r['shape']} {r['split']} at ${r['usd_per_hour']:,.2f}/h{share}{said}{late}"


def _held_at_client(runs: pd.DataFrame, target_rps: float) -> float | None:
    """The most req/s any run sent where every run fell behind with its backlog at a client's ceiling
    on requests in flight (`latency_shortfall` None beside a shortfall), else None."""
    if not len(runs) or runs["shortfall_rps"].isna().any() or runs["grows_rps"].notna().any():
        return None
    return float(target_rps - runs["shortfall_rps"].min())


@dataclass(frozen=True)
class Cut:
    """What the simulation budget left of the search (`Search.cut`): `settled` where no shape it left
    unsearched or cut short could be better than the choice, each shape's bound being no better;
    `least` the best of those bounds (inf: none left); `groups` the chip groups whose best shown may
    not be their own best (a shape of theirs left below it)."""

    settled: bool
    least: float
    groups: tuple[str, ...]

    def notes(self, search: Search) -> list[str]:
        """The budget's note: where the choice is settled, that it is and which groups' bests are not;
        else that a better deployment may exist."""
        if not search.cut:
            return []
        n, word, obj = len(search.cut), better(search.objective), search.objective
        head = (
            f"stopped at the simulation budget ({search.space.max_simulations}) with {n} shape"
            f"{'s' if n > 1 else ''} left unsearched or cut short (their cost-model bounds from "
            f"{value_text(self.least, obj)})"
        )
        if not self.settled:
            return [f"{head}; a {word} deployment may exist"]
        # the flagship plan read 'a cheaper deployment may exist' where every shape left was bounded above
        # its choice (sixteen chip groups each searched to a pass spent the budget)
        named = [*self.groups[:SAID_GROUPS]] + (
            [f"{len(self.groups) - SAID_GROUPS} more chip groups"] if len(self.groups) > SAID_GROUPS else []
        )
        some = " and ".join([", ".join(named[:-1]), named[-1]] if len(named) > 1 else named)
        was, its = ("was", "its") if len(self.groups) == 1 else ("were", "their")
        short = f"; {some} {was} not searched to {its} own best" if some else ""
        return [
            f"{head}: none can be {word} than the choice, which stands{short} (more simulations search further)"
        ]


SAID_GROUPS = 4
"""Chip groups a budget's note names (the rest counted)."""


def cut(search: Search, groups: dict[str, dict[str, Any]], best: dict[str, Any] | None) -> Cut:
    """`Cut` from the shapes the budget left (`Search.cut`), each group's best run and the choice's."""
    least = min(search.cut.values(), default=math.inf)
    settled = not search.cut or (best is not None and search.value(best) <= least)
    short = dict.fromkeys(
        g
        for shape, bound in sorted(search.cut.items(), key=lambda kv: kv[1])
        if (g := group_of(shape)) not in groups or bound < search.value(groups[g])
    )
    return Cut(settled, least, tuple(short))


KV_ROOM = 1.25
"""A chosen pool whose instance (a rank of it) holds less KV cache than this many times the longest
request the workload can send it is said (`kv_room_notes`)."""


def _pools(shape: Shape | Portfolio) -> list[tuple[str, Kind, int | None]]:
    """The choice's pools as its notes name them: (role, instance kind, the class a portfolio's decode
    pool serves, else None), in the order of its counts."""
    if isinstance(shape, Portfolio):
        decode = [
            (f"decode ({c})", k, i) for i, (c, k) in enumerate(zip(shape.classes, shape.decode, strict=True))
        ]
        return [("prefill", shape.prefill, None), *decode]
    if shape.mode == "colocated":
        return [("mixed", shape.prefill, None)]
    return [("prefill", shape.prefill, None), ("decode", shape.decode, None)]


def kv_room_notes(search: Search, best: dict[str, Any] | None) -> list[str]:
    """Each pool of the choice whose instances (a rank of one) hold less than `KV_ROOM` times the
    longest request the workload can send them (`longest_tokens`: a prefill pool its prompt, decode and
    mixed its prompt and output; with multi-turn sessions, which have no such bound, the planning run's
    longest): such a request runs nearly alone on its instance, and one longer than the cache is
    refused. It was said only in `emit`'s script (a 70B on one H100 holds 18,176 tokens against a workload's
    16,384-token prompts: a review)."""
    d = search.demand
    if best is None or d is None or not len(d.prompt_tokens):
        return []
    shape, _ = counts_of(search, best)
    context = search.cat.models[search.base.model.id].max_context
    each = longest_tokens(search.base)
    sent = "the workload can send them" if each is not None else "the planning run sent them"
    if each is None:  # sessions: what the run drew, by class
        each = [
            (_most(d.prompt_tokens[d.cls == c]), _most((d.prompt_tokens + d.output_tokens)[d.cls == c]))
            for c in range(int(d.cls.max()) + 1)
        ]
    prompt, whole = (min(context, max(x)) for x in zip(*each, strict=True))
    notes = []
    for role, kind, cls in _pools(shape):
        longest = prompt if role == "prefill" else whole if cls is None else min(context, each[cls][1])
        room = search.rates[kind].kv_capacity_tokens // kind.dp
        if longest and room < KV_ROOM * longest:
            what = "prompt" if role == "prefill" else "request"
            notes.append(
                f"the choice's {role} instances ({kind.label()}) hold {room:,} tokens of KV cache"
                f"{' a rank' if kind.dp > 1 else ''}, {room / longest:.2f}x the longest {what} {sent} "
                f"({longest:,} tokens): "
                + (
                    f"one longer than {room:,} would be refused"
                    if room < longest
                    else "one that long runs nearly alone"
                )
                + " (more memory a rank widens it: a larger tp, FP8 KV, another chip)"
            )
    return notes


def spare_notes(search: Search, best: dict[str, Any] | None) -> list[str]:
    """Each pool of the choice that is a single instance: one lost chip stops that phase until it is
    replaced, and nothing said so (a plan's one decode instance carried 40 req/s: an infrastructure
    engineer's review); with what one more instance (N+1) would cost."""
    if best is None:
        return []
    shape, counts = counts_of(search, best)
    pools = [(role, kind) for role, kind, _ in _pools(shape)]
    return [
        f"the choice's {role} pool is one instance ({kind.label()}): a lost chip stops its phase until it is "
        f"replaced; one more instance (N+1) costs ${search.rates[kind].usd_per_hour:,.2f}/h more, and a drill "
        "(fengong drill, on a scenario with faults) shows what a loss does"
        for (role, kind), n in zip(pools, counts[: len(pools)], strict=True)  # colocated: (n, 0)
        if n == 1
    ]


def _most(tokens: Any) -> int:
    """The largest of some token counts, 0 where there are none."""
    return int(tokens.max()) if len(tokens) else 0


SAID_REASONS = 4
"""Shapes whose reason a plan that simulated nothing names in its note (the rest: the candidates)."""


def run_notes(
    search: Search, runs: pd.DataFrame, found: bool, target_rps: float, reasons: Sequence[str] = ()
) -> list[str]:
    """How the search ended: at the simulation budget, with nothing passing, every run held back at the
    client. `reasons`: each shape's label and what became of it, said where nothing was simulated (the
    note pointed at a candidates table the text does not print: a review)."""
    notes = []
    if not found and not len(runs):  # every shape pruned or bounded out: nothing was simulated
        said = "; ".join(reasons[:SAID_REASONS])
        more = (
            # the page has no JSON: its table of shapes, and the CLI's --json, list them (a review)
            f"; {len(reasons) - SAID_REASONS} more among the candidates (every shape and what became of it: "
            "plan --json, or the Planner page's table of shapes under the plan)"
            if len(reasons) > SAID_REASONS
            else ""
        )
        notes.append(
            "no deployment was simulated: the cost model pruned or bounded out every shape"
            + (f" ({said}{more})" if said else "")
        )
    elif not found and not (len(runs) and "passes" in runs and runs["passes"].any()):
        # (where one passed and none was chosen, the budget's or the margin's note says why: rent-vs-own
        # read "no simulated deployment passed" under "1 passed", a review)
        notes.append(
            f"no simulated deployment passed at the target load ({rule_text(search.rule, search.attainment)})"
            + _closest_miss(runs)
        )
    if not found and (held := _held_at_client(runs, target_rps)) is not None:
        ceiling = search.base.workload.arrival.max_in_flight
        notes.append(
            f"every run fell behind its load with the backlog waiting at the client: a ceiling of {ceiling} "
            f"requests in flight (workload.arrival.max_in_flight) sent at most {held:,.3g} req/s whatever the "
            f"deployment; raise or unset it to plan for {target_rps:g} req/s"
        )
    return notes


def no_build_note(scenario: Scenario, hardware: Sequence[str]) -> list[str]:
    """The note naming the chips searched that the scenario's stack has no build for (`emit.RUNS_ON`): a run
    models them with a profile by rule, and `emit` refuses them (`plan --hardware all` offered groq-lpu under
    vLLM, whose export is refused: a CLI review). What-if chips are left out: they say they are illustrative."""
    from engine.costmodel.stacks import STACK_NAMES
    from engine.planning.emit import no_build
    from engine.scenario.resolve import scenario_catalog

    stack = scenario.deployment.stack
    cat = scenario_catalog(scenario)
    chips = [
        c
        for c in dict.fromkeys(hardware)
        if (h := cat.hardware.get(c)) is not None and no_build(stack, h.vendor, h.illustrative, h.kind)
    ]
    if not chips:
        return []
    name = STACK_NAMES.get(stack, stack)
    them = "it" if len(chips) == 1 else "them"
    return [
        f"{', '.join(chips)}: {name} has no build for {them}, so emit refuses {them}; a run models {them} with "
        f"{name}'s batching and a profile by rule, what {'its' if len(chips) == 1 else 'their'} vendor's own "
        "software would have to match"
    ]
