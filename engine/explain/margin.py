"""One run's margin for the model's error: the same requests with every chip slower by its
expected throughput error (`engine.scenario.resolve.slowed`), and which verdicts move.

The Results page's "Margin for the model's error" and ``python -m engine run --margin``; the
planner's margin, which also searches again with slowed chips, is `engine.planning.margin`
(docs/planner.md, "Margin").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.catalog.entries import Catalog
from engine.explain.confidence import pool_marks
from engine.explain.presentation import duration_text
from engine.planning.plan import run_passes
from engine.scenario.model import Scenario
from engine.serving.run import simulate


@dataclass(frozen=True)
class RunMargin:
    """A run as modelled and the same run, on the same requests, with slower chips."""

    slowdown: dict[str, float]
    """Per chip of the run: how much slower it was made (its expected throughput error)."""
    modelled: dict[str, Any]
    """The run's summary as modelled."""
    slowed: dict[str, Any]
    """The summary with every chip slowed."""
    targets: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per class: its TTFT and TPOT targets (ms)."""

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
        """Per class: its name, and whether it passes as modelled and slowed."""
        after = self.slowed["classes"]
        return [
            (name, bool(c["passes"]), bool(after[name]["passes"]))
            for name, c in self.modelled["classes"].items()
        ]

    def why(self, name: str) -> str:
        """What a class misses with slowed chips: 'p90 TPOT 34.5 ms against 30 ms' ('' if nothing)."""
        c = self.slowed["classes"][name]
        ttft, tpot = self.targets.get(name, (math.inf, math.inf))
        p = f"p{c['percentile']:g}"
        out = []
        for label, at, target in (
            ("TTFT", c["ttft_ms_at_percentile"], ttft),
            ("TPOT", c["tpot_ms_at_percentile"], tpot),
        ):
            if at is not None and at > target:
                out.append(f"{p} {label} {duration_text(at)} against {duration_text(target)}")
        return ", ".join(out)

    def rows(self) -> list[tuple[str, float | None, float | None]]:
        """The figures that move: (name, as modelled, slowed)."""

        def lat(s: Mapping[str, Any], metric: str, p: str) -> float | None:
            v = s.get("latency_ms", {}).get(metric, {}).get(p)
            return None if v is None else float(v)

        out: list[tuple[str, float | None, float | None]] = [
            ("SLO attainment", self.modelled["slo_attainment"], self.slowed["slo_attainment"]),
            ("goodput", self.modelled["goodput_rps"], self.slowed["goodput_rps"]),
        ]
        for metric, name in (("ttft", "TTFT"), ("tpot", "TPOT")):
            for p in ("p90", "p99"):
                out.append((f"{name} {p}", lat(self.modelled, metric, p), lat(self.slowed, metric, p)))
        cost = "usd_per_request"
        out.append(("$ / request", self.modelled["cost"].get(cost), self.slowed["cost"].get(cost)))
        return out


def figure_text(name: str, v: float | None) -> str:
    """A `RunMargin.rows` figure as shown: durations in the unit that fits, shares in percent,
    dollars to five places."""
    if v is None:
        return "–"
    if name.startswith(("TTFT", "TPOT")):
        return duration_text(v)
    if name == "goodput":
        return f"{v:,.2f} req/s"
    if name == "SLO attainment":
        return f"{v:.1%}"
    if name.startswith("$"):
        return f"${v:.5f}"
    return f"{v:,.2f}"


def run_slowdowns(scenario: Scenario, summary: Mapping[str, Any] | None = None) -> dict[str, float]:
    """Per chip of a scenario's pools: its expected throughput error (the run's calibration)."""
    out: dict[str, float] = {}
    for m in pool_marks(scenario, summary):
        out[m.hardware] = max(out.get(m.hardware, 0.0), float(m.calibration.error("throughput") or 0.0))
    return out


def run_margin(
    scenario: Scenario, summary: Mapping[str, Any], catalog: Catalog | None = None, *, check_work: bool = True
) -> RunMargin:
    """A run (`summary`, of `scenario`) and the same scenario rerun, on the same requests, with every
    chip slower by its expected throughput error."""
    slowdown = run_slowdowns(scenario, summary)
    slow = simulate(scenario, catalog, check_work=check_work, slowdown=slowdown).summary
    targets = {c.name: (c.slo.ttft_ms, c.slo.tpot_ms) for c in scenario.workload.classes}
    return RunMargin(slowdown=slowdown, modelled=dict(summary), slowed=slow, targets=targets)
