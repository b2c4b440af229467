"""What a plan's searches simulated, kept so that a later search on the same requests runs nothing twice.

The margin (`engine.planning.margin`) repeats the plan's search with every chip at the pessimistic
edge of its throughput band; the plan's verdict (`engine.planning.verdict`), when risk-aware, has
already run many of the same deployments with the same chips on the same requests, and the plan
itself knows which deployments failed as modelled, which fail slowed too (a slower chip is never
faster, docs/definitions.md). `Ran` carries both from the plan to the margin's search
(`engine.planning.search.Search.reuse`); the search's decisions, and so its answer, are the same as
without it (docs/planner.md, "Margin").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.catalog.entries import Catalog
from engine.planning.portfolio import Portfolio
from engine.planning.rules import Rule
from engine.planning.sizing import Shape
from engine.scenario.model import Scenario

Verdicts = tuple[list[bool], list[bool], list[float]]
"""A portfolio run's per-class TTFT and TPOT verdicts and its decode pools' KV memory."""
Key = tuple[Shape | Portfolio, tuple[int, ...]]
"""A deployment of a search: its shape (or portfolio) and its instance counts."""


@dataclass(frozen=True, eq=False)
class Ran:
    """What a plan's searches simulated, kept for a later search on the same planning window and
    requests (the margin's slowed search, `engine.planning.margin`) so that it simulates nothing twice.

    `failed`: the deployments whose run as modelled failed; `slowed`: the runs made with every chip
    slowed by `slowdown` (the verdict's risk-aware checks, or a slowed plan's own), by deployment:
    each run's row and, for a portfolio, its per-class verdicts (`Search.verdicts`).
    """

    base: Scenario
    cat: Catalog
    rule: Rule
    attainment: float
    check_work: bool
    failed: frozenset[Key] = frozenset()
    slowdown: dict[str, float] = field(default_factory=dict)
    slowed: dict[Key, tuple[dict[str, Any], Verdicts | None]] = field(default_factory=dict)
    reused: int = 0
    """Of the search's runs, how many it took from an earlier search's (`Search.reuse`), not simulated."""
    skipped: int = 0
    """Deployments the search settled as failing, from their run as modelled, without a run (`Search.settle`)."""
