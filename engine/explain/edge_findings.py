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


def band_tops_over(c: Mapping[str, Any], slo: Any, marks: Sequence[Any]) -> list[str]:
    """['TPOT reads 103 ms'] for each latency of a class (its figures at its SLO percentile, `c`) that is
    within its target as modelled and past it at its band's top (`run`, `capacity`, `advise` and the
    Results page say them). One already past its target as modelled is its miss, not its band's: under the
    attainment rule a capacity row passes with a class's p90 TPOT over its target, and the band's top read
    as the reason it might fail (a code review)."""
    from engine.core.numbers import figures
    from engine.explain import confidence

    over = []
    for name, key, target in (
        ("TTFT", "ttft_ms_at_percentile", slo.ttft_ms),
        ("TPOT", "tpot_ms_at_percentile", slo.tpot_ms),
    ):
        ms = c.get(key)
        band = confidence.figure_range(marks, confidence.HEADLINE_SOURCES[f"{name.lower()}_p99_ms"])
        if band is not None and ms is not None and ms <= target < ms * (1 + band[1]):
            over.append(f"{name} reads {figures(ms * (1 + band[1]), 3)} ms")
    return over


def latency_tops(scenario: Any, summary: Mapping[str, Any]) -> dict[str, list[str]]:
    """Per class of a run, `band_tops_over` with its pools' bands: what `at_the_edge` warns of where the
    class holds with every chip slowed (`advise` warned and the Results page did not: a code review)."""
    from engine.explain import confidence

    marks = confidence.pool_marks(scenario, summary)
    slos = {c.name: c.slo for c in scenario.workload.classes}
    return {
        name: over
        for name, c in (summary.get("classes") or {}).items()
        if name in slos and (over := band_tops_over(c, slos[name], marks))
    }


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
