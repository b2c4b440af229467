"""The advisor's class verdicts beside the run's spread: a class that passes as modelled but not
with every chip at the pessimistic edge of its throughput band is a warning, not an info.

The Results page's headline said SLO attainment 'runs from 0% to 100%' with the chips at their
bands' edges while the advisor below read 'class chat passes' in blue (a review): the pass rests on
chips as fast as modelled, which is the model's claim, not a measurement. `at_the_edge` rewrites
those findings once the spread's slower run is known (`engine.explain.margin.RunSpread.slower`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.explain.finding import SEVERITY_ORDER, Finding
from engine.explain.presentation import duration_text


def at_the_edge(
    found: Sequence[Finding],
    slower: Mapping[str, Any],
    rerun: str = "Margin for the model's error reruns it",
    tops: Mapping[str, Sequence[str]] | None = None,
) -> list[Finding]:
    """`found` with each passing class's finding made a warning where the class fails in `slower`
    (the run with every chip at its band's pessimistic edge), saying what misses there (`rerun`: where
    the reader reruns it), or where it holds there and a latency's own band reaches past its target
    (`tops`, per class: 'TPOT reads 104 ms', as `run` says them: a MoE TPOT band reaches +72% where the
    throughput band slows the chips +29%, and `advise` read "passes" where `run` said it may not: a
    review); sorted as the advisor sorts (most severe first, in order otherwise)."""
    classes = slower.get("classes", {})
    out = []
    for f in found:
        name = _passing_class(f, classes)
        there = classes.get(name) if name is not None else None
        if there is not None and there.get("passes", True) and (over := (tops or {}).get(name or "")):
            out.append(
                Finding(
                    "warning",
                    f.topic,
                    f"{f.text[:-1] if f.text.endswith('.') else f.text}, as modelled and with every chip at its "
                    f"band's pessimistic edge; at its band's top {' and '.join(over)}, over its target: that "
                    "latency's own error allows a miss.",
                    dict(f.numbers),
                )
            )
            continue
        if there is None or there.get("passes", True):
            out.append(f)
            continue
        out.append(
            Finding(
                "warning",
                f.topic,
                f"{f.text[:-1] if f.text.endswith('.') else f.text}, as modelled; with every chip at its "
                f"band's pessimistic edge it misses ({_missed(there)}): the pass rests on chips as fast as "
                f"modelled ({rerun}).",
                {**f.numbers, "slo_attainment_with_chips_slowed": float(there.get("slo_attainment") or 0.0)},
            )
        )
    return sorted(out, key=lambda f: SEVERITY_ORDER[f.severity])


def _passing_class(f: Finding, names: Mapping[str, Any]) -> str | None:
    """The class (of `names`) a passing class verdict of `advisor._slo_findings` is about, else None
    (a name may hold spaces: the longest that fits)."""
    if f.topic != "slo" or f.severity != "info":
        return None
    fits = [n for n in names if f.text.startswith(f"class {n} passes")]
    return max(fits, key=len) if fits else None


def _missed(c: Mapping[str, Any]) -> str:
    """'p90 TPOT 83.1 ms, 41.2% within SLO' for a class's summary at the edge."""
    pct = f"p{c.get('percentile', 90):g}"
    parts = []
    for kind in ("ttft", "tpot"):
        v = c.get(f"{kind}_ms_at_percentile")
        parts.append(f"{pct} {kind.upper()} " + ("never answered" if v is None else duration_text(float(v))))
    share = c.get("slo_attainment")
    return ", ".join(parts) + ("" if share is None else f", {share:.1%} within SLO")
