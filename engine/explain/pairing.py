"""Two runs side by side (Compare): whether they see the same requests (`unpaired`), their latency
CDFs overlaid, and the SLO targets that apply to each."""

from __future__ import annotations

from typing import Any

import pandas as pd

from engine.explain.presentation import ALL_CLASSES, slo_targets
from engine.scenario.model import Scenario
from engine.scenario.workload import RequestClass


def paired_cdfs(a: pd.DataFrame, b: pd.DataFrame, cls: str) -> tuple[pd.DataFrame, str | None]:
    """Two `latency_cdfs` frames as one, tagged ``run`` A and B, for class `cls` where each has it.

    A side without that class shows its only class, or all of its classes: scenarios with
    different class names still overlay. The second value names the class whose SLO targets
    apply to both curves, or None when the two sides show different classes (or "all").
    """

    def pick(frame: pd.DataFrame) -> str:
        have = set(frame["class"])
        return cls if cls in have else ALL_CLASSES if ALL_CLASSES in have else str(frame["class"].iloc[0])

    picks = [pick(f) if len(f) else cls for f in (a, b)]
    frame = pd.concat(
        [f[f["class"] == name].assign(run=run) for f, name, run in zip((a, b), picks, "AB", strict=True)]
    )
    shared = picks[0] if picks[0] == picks[1] and picks[0] != ALL_CLASSES else None
    return frame, shared


def paired_targets(a: Scenario, b: Scenario, shared: str | None) -> pd.DataFrame:
    """The SLO targets a paired chart draws (`slo_targets` rows) for the class both sides show
    (`shared`, from `paired_cdfs`; none without one): A's, where B asks the same of it; else each
    side's, its class named ``A`` or ``B`` so that its line takes that run's colour and label.
    Compare labelled its charts with A's targets alone, "SLO 50 ms @ p99" beside a B whose target
    was 30 ms at p90 (a walkthrough)."""
    if shared is None:
        return slo_targets(a).head(0)
    ta, tb = (t[t["class"] == shared].drop(columns="class") for t in (slo_targets(a), slo_targets(b)))
    key = ["metric", "target_ms", "percentile"]
    same = ta[key].reset_index(drop=True).equals(tb[key].reset_index(drop=True))
    if same:
        return ta.assign(**{"class": shared})[["class", *key]]
    return pd.concat([ta.assign(**{"class": "A"}), tb.assign(**{"class": "B"})])[["class", *key]]


def _drawn(workload: Any) -> Any:
    """What decides a workload's requests: all of it but a client's ceiling on requests in flight,
    which holds the same requests back without drawing others (`engine.serving.ceiling`), and what
    judges, orders or routes the classes' requests without drawing them: their SLO targets (an edit
    of a target alone made Compare call the two runs unpaired: a walkthrough), priority, pool pins,
    overflow and spill queue (the portfolio preset against its own counterpart read "not paired"
    over its classes' pins: a review)."""
    return workload.model_copy(
        update={
            "arrival": workload.arrival.model_copy(update={"max_in_flight": None}),
            "classes": [c.model_copy(update=_UNDRAWN) for c in workload.classes],
        }
    )


_UNDRAWN = {"slo": None} | {
    f: RequestClass.model_fields[f].default for f in ("priority", "pools", "overflow", "spill_queue")
}
"""A class's fields that judge, order or route its requests without drawing them, at a value shared
by both sides (`_drawn`): their defaults."""


def unpaired(a: Scenario, b: Scenario) -> bool:
    """Whether two scenarios see different requests, so a comparison of them is not paired: another
    workload, window (`duration_s`, `warmup_s`: a request's lengths are drawn across the window) or,
    for generated requests, another seed (a trace's requests do not depend on the seed)."""
    if _drawn(a.workload) != _drawn(b.workload) or a.duration_s != b.duration_s or a.warmup_s != b.warmup_s:
        return True
    return a.seed != b.seed and a.workload.trace is None
