"""Planning over many simulations: sizing, capacity search, the planner and sweeps.

Owns: `sizing` (first-order instance counts from the cost model), `capacity` (the highest load
at which every class passes), `rules` (what makes a run pass), `candidates` (the search space,
instance kinds, shapes and the scenarios built from them), `search` (simulating a shape's
candidates within the budget), `ran` (what a plan's searches ran, for its margin to reuse),
`plan` (the cheapest deployment that meets the SLOs, and the Pareto frontiers), `plan_link` (a
plan's form as the Planner's share-link parameter), `plan_work` (a
plan's total work, bounded before it starts), `runner` (where its simulations run: here, or on a
cluster ahead of the search), `calibrations` (each candidate's calibration and band), `margin` (the choice
again with chips at their bands' edges), `objective` (what the choice minimises and its bounds),
`verdict` (each chip's best, risk-aware and verified), `lifetime` and `lifetime_spec` (portfolios
re-sized as the served model changes over months: specialisation risk, capital written off), `frontier` (the frontiers of passing runs), `portfolio` (a decode pool of its own chip per request class, for the
planner), `sweep` (grids of runs on a local pool or a Dask cluster) and `emit` (a deployment as
launch commands or a manifest for a serving stack: `emit_facts`, `emit_engines`, `emit_manifests`).
May import: every lower package, up to engine.serving.

The face: `__all__` names what the packages above and the dashboard import, each loaded from its
module on first use (docs/architecture.md, Public API). `plan`, `capacity` and `sweep` are
`engine`'s (a face holds no name of one of its modules); `plan_margin` is `margin.margin`,
`emit_deployment` is `emit.emit` and `EMIT_STACKS` is `emit.STACKS`.
`plan_work_estimate` is `plan_work.plan_work`, `lifetime_summary` is `lifetime.summary_line`,
`lifetime_headline` is `lifetime.headline_line`; `PLAN_FORM`, `plan_link_decode` and
`plan_link_encode` are `plan_link`'s `FIELDS`, `decode` and `encode` (the Planner's share link).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.faces import lazy as _lazy

_API = {
    "Capacity": "engine.planning.capacity",
    "EMIT_STACKS": "engine.planning.emit",
    "Emitted": "engine.planning.emit",
    "emit_deployment": "engine.planning.emit",
    "off_frontier_text": "engine.planning.frontier",
    "passing_frontiers": "engine.planning.frontier",
    "Margin": "engine.planning.margin",
    "MarginCheck": "engine.planning.margin",
    "Lifetime": "engine.planning.lifetime_spec",
    "LifetimeResult": "engine.planning.lifetime",
    "lifetime_names": "engine.planning.lifetime_spec",
    "lifetime_headline": "engine.planning.lifetime",
    "lifetime_summary": "engine.planning.lifetime",
    "lifetime_precision_notes": "engine.planning.lifetime",
    "lifetime_assumed_price_notes": "engine.planning.lifetime",
    "LIFETIME_SIZING_NOTE": "engine.planning.lifetime",
    "load_lifetime": "engine.planning.lifetime_spec",
    "run_lifetime": "engine.planning.lifetime",
    "OBJECTIVES": "engine.planning.objective",
    "BILLED": "engine.planning.objective",
    "OBJECTIVE_COLUMNS": "engine.planning.objective",
    "Objective": "engine.planning.objective",
    "Verdict": "engine.planning.verdict",
    "band_take_in": "engine.planning.verdict_bands",
    "class_bands": "engine.planning.verdict_bands",
    "past_target": "engine.planning.verdict_bands",
    "holds_note": "engine.planning.verdict_bands",
    "edge_premium_note": "engine.planning.verdict_bands",
    "holds_with_margin": "engine.planning.verdict_bands",
    "with_rerun_bands": "engine.planning.verdict_bands",
    "tokens_band": "engine.planning.verdict_bands",
    "reads_alike": "engine.planning.verdict_bands",
    "rises_only": "engine.planning.verdict_bands",
    "SAME_AT_EDGES": "engine.planning.verdict_bands",
    "PAST_TARGET_WHY": "engine.planning.verdict_bands",
    "steady_reruns": "engine.planning.verdict_bands",
    "assumed_price_mark": "engine.planning.prices",
    "plan_margin": "engine.planning.margin",
    "DEFAULT_ATTAINMENT": "engine.planning.rules",
    "PP_MIN_TP": "engine.planning.candidates",
    "Plan": "engine.planning.plan",
    "PLAN_FORM": "engine.planning.plan_link",
    "plan_link_decode": "engine.planning.plan_link",
    "plan_link_encode": "engine.planning.plan_link",
    "PlanWork": "engine.planning.plan_work",
    "PlanWorkError": "engine.planning.plan_work",
    "plan_work_estimate": "engine.planning.plan_work",
    "Progress": "engine.planning.search",
    "Rule": "engine.planning.rules",
    "SearchSpace": "engine.planning.candidates",
    "rule_text": "engine.planning.rules",
    "attained": "engine.planning.rules",
    "queue_words": "engine.planning.rules",
    "vendor_crossing": "engine.planning.emit_facts",
}
_RENAMED = {
    "plan_margin": "margin",
    "MarginCheck": "Check",
    "emit_deployment": "emit",
    "EMIT_STACKS": "STACKS",
    "plan_work_estimate": "plan_work",
    "OBJECTIVE_COLUMNS": "COLUMN",
    "lifetime_headline": "headline_line",
    "lifetime_summary": "summary_line",
    "lifetime_precision_notes": "precision_notes",
    "lifetime_assumed_price_notes": "assumed_price_notes",
    "LIFETIME_SIZING_NOTE": "SIZING_NOTE",
    "band_take_in": "take_in",
    "steady_reruns": "steady",
    "PLAN_FORM": "FIELDS",
    "vendor_crossing": "vendor_crossing_text",
    "plan_link_decode": "decode",
    "plan_link_encode": "encode",
}

__all__ = [
    "BILLED",
    "DEFAULT_ATTAINMENT",
    "EMIT_STACKS",
    "LIFETIME_SIZING_NOTE",
    "OBJECTIVES",
    "OBJECTIVE_COLUMNS",
    "PAST_TARGET_WHY",
    "PLAN_FORM",
    "PP_MIN_TP",
    "SAME_AT_EDGES",
    "Capacity",
    "Emitted",
    "Lifetime",
    "LifetimeResult",
    "Margin",
    "MarginCheck",
    "Objective",
    "Plan",
    "PlanWork",
    "PlanWorkError",
    "Progress",
    "Rule",
    "SearchSpace",
    "Verdict",
    "assumed_price_mark",
    "attained",
    "band_take_in",
    "class_bands",
    "edge_premium_note",
    "emit_deployment",
    "holds_note",
    "holds_with_margin",
    "lifetime_assumed_price_notes",
    "lifetime_headline",
    "lifetime_names",
    "lifetime_precision_notes",
    "lifetime_summary",
    "load_lifetime",
    "off_frontier_text",
    "passing_frontiers",
    "past_target",
    "plan_link_decode",
    "plan_link_encode",
    "plan_margin",
    "plan_work_estimate",
    "queue_words",
    "reads_alike",
    "rises_only",
    "rule_text",
    "run_lifetime",
    "steady_reruns",
    "tokens_band",
    "vendor_crossing",
    "with_rerun_bands",
]


__getattr__, __dir__ = _lazy(__name__, _API, _RENAMED, __all__, globals())


if TYPE_CHECKING:
    from engine.planning.candidates import PP_MIN_TP, SearchSpace
    from engine.planning.capacity import Capacity
    from engine.planning.emit import STACKS as EMIT_STACKS
    from engine.planning.emit import Emitted
    from engine.planning.emit import emit as emit_deployment
    from engine.planning.emit_facts import vendor_crossing_text as vendor_crossing
    from engine.planning.frontier import off_frontier_text, passing_frontiers
    from engine.planning.lifetime import SIZING_NOTE as LIFETIME_SIZING_NOTE
    from engine.planning.lifetime import LifetimeResult, run_lifetime
    from engine.planning.lifetime import assumed_price_notes as lifetime_assumed_price_notes
    from engine.planning.lifetime import headline_line as lifetime_headline
    from engine.planning.lifetime import precision_notes as lifetime_precision_notes
    from engine.planning.lifetime import summary_line as lifetime_summary
    from engine.planning.lifetime_spec import Lifetime, lifetime_names, load_lifetime
    from engine.planning.margin import Check as MarginCheck
    from engine.planning.margin import Margin
    from engine.planning.margin import margin as plan_margin
    from engine.planning.objective import BILLED, OBJECTIVES, Objective
    from engine.planning.objective import COLUMN as OBJECTIVE_COLUMNS
    from engine.planning.plan import Plan
    from engine.planning.plan_link import FIELDS as PLAN_FORM
    from engine.planning.plan_link import decode as plan_link_decode
    from engine.planning.plan_link import encode as plan_link_encode
    from engine.planning.plan_work import PlanWork, PlanWorkError
    from engine.planning.plan_work import plan_work as plan_work_estimate
    from engine.planning.prices import assumed_price_mark
    from engine.planning.rules import DEFAULT_ATTAINMENT, Rule, attained, queue_words, rule_text
    from engine.planning.search import Progress
    from engine.planning.verdict import Verdict
    from engine.planning.verdict_bands import (
        PAST_TARGET_WHY,
        SAME_AT_EDGES,
        class_bands,
        edge_premium_note,
        holds_note,
        holds_with_margin,
        past_target,
        reads_alike,
        rises_only,
        tokens_band,
        with_rerun_bands,
    )
    from engine.planning.verdict_bands import steady as steady_reruns
    from engine.planning.verdict_bands import take_in as band_take_in
