"""What makes a planned run pass: the rule, and each class's verdict under it.

``percentile`` (the default, MLPerf's): every class has its TTFT and TPOT within target at its SLO
percentile; ``attainment`` (DistServe's): at least a share X (default 0.9) of all requests meet
their own class's SLO. An unsustainable run (its backlog grows through the window) never passes.
Under the attainment rule the cost model prunes and bounds with a relaxed demand (`rule_demand`),
never stricter than the rule.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from engine.core.errors import ScenarioError
from engine.core.numbers import rate2
from engine.planning.sizing import (
    Demand,
)
from engine.serving.metrics import measured_mask
from engine.serving.run import SimResult
from engine.serving.summary import Summary, classes_pass, within_target

if TYPE_CHECKING:
    import pandas as pd

Rule = Literal["percentile", "attainment"]
"""What makes a run pass: every class at its SLO percentile, or a share of requests within their SLO."""
RULES: tuple[Rule, ...] = ("percentile", "attainment")
DEFAULT_ATTAINMENT = 0.9
"""The attainment rule's default share: DistServe's 90% of requests within their SLO."""


def check_rule(rule: str, attainment: float) -> None:
    """Refuse an unknown rule, or an attainment share outside (0, 1], naming the field."""
    if rule not in RULES:
        raise ScenarioError(f"rule: choose {' or '.join(RULES)} (got {rule!r})")
    if not 0.0 < attainment <= 1.0:
        raise ScenarioError(
            f"attainment: a share of requests in (0, 1], e.g. 0.9 for 90% (got {attainment:g})"
        )
    if rule == "percentile" and attainment != DEFAULT_ATTAINMENT:  # (it was ignored, unsaid: a review)
        raise ScenarioError(
            f"attainment: applies to rule 'attainment' only (got {attainment:g} with rule 'percentile', "
            "which judges every class at its SLO percentile)"
        )


def rule_text(rule: Rule, attainment: float = DEFAULT_ATTAINMENT) -> str:
    """What passing means under a rule, in words."""
    if rule == "attainment":
        return f"at least {attainment:.0%} of requests within their SLO"
    return "every class within its TTFT and TPOT targets at its SLO percentile"


def run_passes(summary: Summary, rule: Rule = "percentile", attainment: float = DEFAULT_ATTAINMENT) -> bool:
    """Whether one run's summary passes under a rule.

    ``percentile`` (MLPerf's): every class passes (`engine.serving.metrics`: its TTFT and TPOT at
    its SLO percentile within target, rejected and failed requests infinitely late).
    ``attainment`` (DistServe's): the run's `slo_attainment` (requests that met their class's
    SLO, per request, over all requests of the window) is at least `attainment`. Under either
    rule an unsustainable run (`summary["unsustainable"]`: its backlog grows through the window,
    `engine.serving.saturation`) never passes: its percentiles are set by the run's length; nor does
    one at its capacity (`summary["at_capacity"]`: its queue never emptied, it has no headroom), nor
    one with no request in the window: nothing was judged (a capacity search read 0.003 req/s as the
    capacity of a deployment that missed its SLO at every load that sent a request: a review).
    """
    if summary.get("unsustainable") or summary.get("at_capacity"):
        return False
    att = summary["slo_attainment"]
    if att is None:  # no request in the window
        return False
    if rule == "attainment":
        return bool(att >= attainment - 1e-12)
    return classes_pass(summary)


def capacity_text(standing_requests: float | None) -> str:
    """'; at capacity, its queue never below 293 requests (no headroom)': why a run whose figures meet
    its targets does not pass (`run_passes`), or '' where its queue emptied."""
    n = standing_requests
    return (
        "" if n is None or n != n else f"; at capacity, its queue never below {n:,.0f} requests (no headroom)"
    )


def queue_words(runs: pd.DataFrame) -> list[str]:
    """Per run of a plan's table, what its queue did, for the figures beside it: 'grows, short by 3.1
    req/s' (unsustainable: its latencies are floors set by the run's length), 'no headroom' (at its
    capacity: they may grow with a longer run), '' where it kept up. The Planner's table of every run
    printed a run at capacity's TTFT p90 of 6,957 ms and the table's lowest $/M bare (a browser review)."""

    def one(short: Any, standing: Any) -> str:
        if short is not None and short == short:
            return f"grows, short by {rate2(float(short))} req/s"  # ('1.2e+02' past 100: a review)
        return "no headroom" if standing is not None and standing == standing else ""

    cols = [runs[c] if c in runs else [None] * len(runs) for c in ("shortfall_rps", "standing_requests")]
    return [one(a, b) for a, b in zip(*cols, strict=True)]


def attained(share: float | None, places: int = 1, form: str = "{} of requests within SLO") -> str:
    """'97.3% of requests within SLO' (`form` around the percentage), or 'no request in the window,
    not judged' where the run's `slo_attainment` is None (it read 0% where nothing was missed)."""
    if share is None or share != share:
        return "no request in the window, not judged"
    return form.format(f"{share:.{places}%}")


def phase_attainment(res: SimResult) -> tuple[float, float]:
    """Shares of a run's measured requests within their class's TTFT target and within its TPOT target.

    A request that did not complete misses both; one without a TPOT (a one-token answer) meets
    it. The attainment rule blames a pool with them, as the percentile rule does with its verdicts.
    """
    _, ttft_met, tpot_met = _phases_met(res)
    if not len(ttft_met):
        return 0.0, 0.0
    return float(ttft_met.mean()), float(tpot_met.mean())


def _phases_met(res: SimResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per measured request: its class, and whether it met its class's TTFT and its TPOT target
    (one that did not complete misses both; one without a TPOT meets it)."""
    t = res.requests
    t = t[measured_mask(res.scenario, t)]
    classes = res.scenario.workload.classes
    done = (t["outcome"] == "completed").to_numpy()
    ttft_t = t["class"].map({c.name: c.slo.ttft_ms / 1e3 for c in classes}).to_numpy(dtype=float)
    tpot_t = t["class"].map({c.name: c.slo.tpot_ms / 1e3 for c in classes}).to_numpy(dtype=float)
    ttft, tpot = t["ttft_s"].to_numpy(dtype=float), t["tpot_s"].to_numpy(dtype=float)
    return t["class"].to_numpy(), done & (ttft <= ttft_t), done & (np.isnan(tpot) | (tpot <= tpot_t))


def class_verdicts(res: SimResult, rule: Rule, attainment: float) -> tuple[list[bool], list[bool]]:
    """Per class, in class order: whether its TTFT and whether its TPOT held, under a rule.

    ``percentile``: the class's TTFT and TPOT at its SLO percentile within target. ``attainment``:
    at least the share X of the class's own requests within each target (an approximation: the
    rule counts all requests together). A portfolio search blames each class's pools with them.
    """
    s = res.summary
    classes = res.scenario.workload.classes
    if rule == "attainment":
        cls, ttft_met, tpot_met = _phases_met(res)
        ttft_ok, tpot_ok = [], []
        for c in classes:
            mine = cls == c.name
            ttft_ok.append(not mine.any() or float(ttft_met[mine].mean()) >= attainment - 1e-12)
            tpot_ok.append(not mine.any() or float(tpot_met[mine].mean()) >= attainment - 1e-12)
        return ttft_ok, tpot_ok
    per = [(c.slo, s["classes"][c.name]) for c in classes]
    return (
        [within_target(v, "ttft_ms_at_percentile", slo.ttft_ms) for slo, v in per],
        [within_target(v, "tpot_ms_at_percentile", slo.tpot_ms) for slo, v in per],
    )


def rule_demand(d: Demand, rule: Rule, attainment: float) -> Demand:
    """The demand the cost model prunes and bounds with under a rule.

    ``percentile``: as drawn. ``attainment``: only a share 1 - X of all requests may miss, so a
    class with a share s of the requests may lose (1 - X) / s of its own: its prompts are checked
    at percentile 100 (1 - (1 - X) / s), and not at all when the whole class may miss. A decode
    step may exceed the TPOT targets of up to 1 - X of the requests, so every TPOT target is
    raised to the tightest one that more than 1 - X of the requests hold. The pruning is then
    never stricter than the rule.
    """
    if rule != "attainment" or not len(d.cls):
        return d
    miss = 1.0 - attainment
    n_classes = len(d.ttft_target_s)
    share = np.bincount(d.cls, minlength=n_classes) / len(d.cls)
    pct = tuple(100.0 * attainment if s <= miss else 100.0 * (1.0 - miss / s) for s in share)
    ttft = tuple(math.inf if s <= miss else t for s, t in zip(share, d.ttft_target_s, strict=True))
    targets = np.asarray(d.tpot_target_s, dtype=float)[d.cls]
    levels = np.unique(targets)
    below = np.array([np.mean(targets < t) for t in levels])
    tightest = float(levels[below <= miss + 1e-12].max())
    tpot = tuple(max(t, tightest) for t in d.tpot_target_s)
    return replace(d, percentile=pct, ttft_target_s=ttft, tpot_target_s=tpot)
