"""The advisor's verdict per class: whether it meets its SLO at its percentile and, where it fails, every
target it misses (TTFT, TPOT, the largest gap between tokens, the end-to-end deadline), judged as the
summary's verdict and the per-class table judge them (`engine.serving.breakdowns.class_summary`,
`presentation.slo_tail`); an unsustainable run's latencies that grow are marked so (`sustain`)."""

from __future__ import annotations

import math
from typing import Any

from engine.explain import sustain
from engine.explain.finding import Finding
from engine.explain.presentation import duration_text, slo_tail, target_text
from engine.scenario.workload import Slo
from engine.serving.run import SimResult
from engine.serving.summary import LatencyKind, latency_shortfall, shortfall_rps


def slo_findings(result: SimResult) -> list[Finding]:
    """Per class: passes (its figures at the SLO percentile against its targets), or fails, naming each
    target it misses; a class with no request in the window is not judged."""
    out = []
    specs = {c.name: c for c in result.scenario.workload.classes}
    short = shortfall_rps(result.summary)  # unsustainable: no class passes
    grows = latency_shortfall(result.summary, "ttft")  # and its percentiles grow with run length,

    def marked(text: str, kind: LatencyKind) -> str:  # a TPOT unless it stays level (`steady`)
        return sustain.marked(text, result.summary, kind)

    # the per-class table's verdicts on the gap and deadline targets, once for every failing class
    targeted = any(c.slo.tbt_ms or c.slo.e2e_ms for c in specs.values())
    failing = not all(c["passes"] for c in result.summary["classes"].values())
    tail = slo_tail(result.scenario, result.requests).set_index("class") if targeted and failing else None

    for name, c in result.summary["classes"].items():
        slo = specs[name].slo
        ttft, tpot = c["ttft_ms_at_percentile"], c["tpot_ms_at_percentile"]
        if c["slo_attainment"] is None:  # no request in the window: nothing to judge
            out.append(Finding("info", "slo", f"class {name} has no request in the window: not judged.", {}))
            continue
        nums = {
            "ttft_ms_at_percentile": ttft if ttft is not None else math.inf,
            "ttft_target_ms": slo.ttft_ms,
            "tpot_ms_at_percentile": tpot if tpot is not None else math.nan,
            "tpot_target_ms": slo.tpot_ms,
            "slo_attainment": c["slo_attainment"],
        }
        pct = f"p{c['percentile']:g}"
        if c["passes"]:
            figures = (
                f"{pct} TTFT {marked(f'{_ms(ttft)} of {_ms(slo.ttft_ms)}', 'ttft')}"
                f"{'; ' if grows is not None else ', '}"  # (a comma follows the growing mark)
                f"TPOT {marked(f'{_ms(tpot)} of {_ms(slo.tpot_ms)}', 'tpot')}"
            )
            verdict = sustain.within_only(result.summary, "its SLO") if short is not None else "passes"
            out.append(Finding("info", "slo", f"class {name} {verdict}: {figures}.", nums))
            continue
        missed = []
        if ttft is None:  # the rank falls among requests never answered (it read 'p90 TTFT n/a': a review)
            gone = f"more than {100 - c['percentile']:g}% of its requests were rejected or failed (never answered)"
            missed.append(f"no {pct} TTFT: {gone}, against a target of {_ms(slo.ttft_ms)}")
        elif ttft > slo.ttft_ms:
            missed.append(marked(f"{pct} TTFT {_ms(ttft)} against {target_text(slo.ttft_ms, ttft)}", "ttft"))
        if tpot is not None and tpot > slo.tpot_ms:
            missed.append(marked(f"{pct} TPOT {_ms(tpot)} against {_ms(slo.tpot_ms)}", "tpot"))
        if tail is not None and (slo.tbt_ms or slo.e2e_ms):
            missed += _gap_and_deadline(tail.loc[name].to_dict(), slo, pct, ttft is None)
        out.append(
            Finding(
                "critical",
                "slo",
                f"class {name} fails its SLO: {'; '.join(missed) or 'too few completed'} "
                # every target's share: '(47.4% ... met it)' read as the deadline's, which 83.9% met (a review)
                f"({c['slo_attainment']:.1%} of its requests met every target).",
                nums,
            )
        )
    return out


def _gap_and_deadline(row: dict[Any, Any], slo: Slo, pct: str, unanswered: bool) -> list[str]:
    """A failing class's misses on its largest-gap and end-to-end targets, judged as the per-class table
    (its `row`, `presentation.slo_tail`) judges them: a class of one-token answers has no gap to miss (it
    read 'p90 largest gap between tokens n/a against 100 ms'), and a deadline missed beside a TTFT is
    named too."""
    broken, out = str(row["breaks"]).split(" and "), []
    gap, e2e = (_known(row["max_tbt_at_percentile_ms"]), _known(row["e2e_at_percentile_ms"]))
    never = "among requests never answered"  # (the rank's latency is infinite)
    if "TBT" in broken and not (unanswered and gap is None):  # (an unanswered rank: said by the TTFT)
        out.append(
            f"{pct} largest gap between tokens {_ms(gap) if gap is not None else never} against "
            f"{target_text(slo.tbt_ms, gap)}"
        )
    if "E2E" in broken:  # (it read "too few completed" with every request completed: a review)
        out.append(
            f"{pct} end-to-end latency {_ms(e2e) if e2e is not None else never} against its "
            f"{target_text(slo.e2e_ms, e2e)} deadline"
        )
    return out


def _ms(v: float | None) -> str:
    """A duration in ms as text with its unit (`presentation.duration_text`), n/a when unknown."""
    return "n/a" if v is None or not math.isfinite(v) else duration_text(v)


def _known(v: float | None) -> float | None:
    """A per-class table's latency as a number, None where it has none (infinite: never answered)."""
    return None if v is None or math.isnan(v) else float(v)
