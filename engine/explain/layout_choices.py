"""The parallel layouts a pool's form offers: those a run of the scenario takes (`fitting_eps`)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.core.errors import ScenarioError
from engine.scenario.codec import apply_overrides
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve


def fitting_eps(scenario: Scenario, index: int, choices: Sequence[int]) -> list[int]:
    """Of `choices`, the expert-parallel degrees pool `index` takes: those the scenario resolves with
    (its chips' memory holding the experts' copies), and the pool's own. The Strategy page offered 1, 2
    and 4 for moe-deepseek-dp-ep's prefill, each refused for its memory (a review)."""
    own = scenario.deployment.pools[index].ep
    out = []
    for e in choices:
        if e != own:
            try:
                resolve(apply_overrides(scenario, {f"deployment.pools[{index}].ep": e}))
            except ScenarioError:
                continue
        out.append(e)
    return out
