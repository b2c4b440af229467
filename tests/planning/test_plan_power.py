"""The planner under a power budget: candidates whose chips at TDP draw more are not tried, and it says so."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cli.main import main
from engine.core.errors import ScenarioError
from engine.planning.candidates import SearchSpace
from engine.planning.plan import plan
from engine.scenario import codec as io
from engine.scenario.model import Scenario

NOMINAL: dict[str, Any] = {"risk_aware": False, "verify": False}


def chat(**over: Any) -> Scenario:
    return io.apply_overrides(io.load_preset("chat-colocated"), {"duration_s": 60.0, **over})


def space(**over: Any) -> SearchSpace:
    return SearchSpace(
        **{"hardware": ("h100-sxm",), "tp": (2, 4), "modes": ("colocated",), "duration_s": 30.0, **over}
    )


def _kw(row: Any) -> float:
    return float(row["chips"]) * 0.7  # every chip an H100 at 700 W


def test_every_simulated_candidate_is_within_the_power_budget() -> None:
    free = plan(chat(), 8.0, space(), **NOMINAL)
    assert max(_kw(r) for _, r in free.runs.iterrows()) > 4.0  # without a budget, larger ones run
    capped = plan(chat(), 8.0, space(power_budget_kw=4.0), **NOMINAL)
    assert len(capped.runs) and all(_kw(r) <= 4.0 for _, r in capped.runs.iterrows())
    assert capped.best is not None
    assert sum(q.count * q.chips_per_instance for q in capped.best.deployment.pools) * 0.7 <= 4.0


def test_a_budget_below_every_candidate_prunes_them_all_and_gives_the_figure() -> None:
    p = plan(chat(), 8.0, space(power_budget_kw=1.0), **NOMINAL)
    assert p.simulated == 0 and p.best is None
    assert p.candidates["status"].str.contains("over the power budget").all()
    note = next(n for n in p.notes if "power budget" in n)
    assert "1 kW" in note and "the least of them 1.4 kW" in note  # two H100s at 700 W


def test_bad_budgets_are_refused_naming_the_field(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ScenarioError, match=r"space\.power_budget_kw: must be in \(0, 1e\+06\]"):
        SearchSpace(power_budget_kw=0.0)
    assert main(["plan", "chat-colocated", "--target-rps", "4", "--power-budget-kw", "-1"]) != 0
    assert "--power-budget-kw: must be in (0, 1e+06] (got -1)" in capsys.readouterr().err


def test_a_site_cap_is_the_plan_s_power_budget() -> None:
    """Planning power-capped-site (6 kW): no candidate over 6 kW at TDP runs, so none is refused or slowed."""
    s = io.apply_overrides(io.load_preset("power-capped-site"), {"duration_s": 60.0})
    p = plan(s, 30.0, space(tp=(2,), max_simulations=10), **NOMINAL)
    assert len(p.runs) and all(_kw(r) <= 6.0 for _, r in p.runs.iterrows())
    assert any(
        "site power cap (6 kW) is the plan's power budget" in n for n in p.method
    )  # how, not a warning
