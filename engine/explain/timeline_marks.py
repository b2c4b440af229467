"""Where a run's faults fall on its timeline: one labelled moment per loss and per recovery.

The Results page's "Over time" charts mark them with a vertical line, so a drop in SLO attainment
or a pool's power reads against the fault that caused it (`Scenario.faults`: instances lost, for
a while or for good, or a KV link slowed or taken down).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from engine.scenario.model import Fault, Scenario


class FaultMark(NamedTuple):
    """A moment of a fault on the timeline: when (minutes into the run) and what, in a few words."""

    minute: float
    label: str


def fault_what(f: Fault) -> str:
    """A fault in a few words: 'decode: 1 instance lost', 'prefill's KV link at 10%'."""
    if f.kind == "link":
        return f"{f.pool}'s KV link " + ("down" if f.link_factor == 0 else f"at {f.link_factor:.0%}")
    return f"{f.pool}: {f.instances} instance{'' if f.instances == 1 else 's'} lost"


def fault_marks(faults: Iterable[Fault]) -> list[FaultMark]:
    """Each fault's start (and its end, where it has a duration), in time order."""
    marks = []
    for f in faults:
        marks.append(FaultMark(f.at_s / 60.0, fault_what(f) + ("" if f.duration_s else " for good")))
        if f.duration_s:
            back = "KV link restored" if f.kind == "link" else "instances back"
            marks.append(FaultMark((f.at_s + f.duration_s) / 60.0, f"{f.pool}: {back}"))
    return sorted(marks)


def fault_notes(scenario: Scenario, drain_end_s: float | None = None) -> list[str]:
    """What the scenario's faults will not do as written: one starting after the run's end never
    fires (`drain_end_s`, a run's; without it, one at or after the window's end, which acts on the
    drain at most), one that fires in the drain acts on the window's requests still there, and an
    instance fault asking for more instances than its pool has takes them all.
    A drill of four identical rows at 99.6% said nothing of a fault set at 260 s in a 120 s run (a review)."""
    counts = {p.name: p.count for p in scenario.deployment.pools}
    scaled = {p.name for p in scenario.deployment.pools if p.autoscale is not None}
    out = []
    for i, f in enumerate(scenario.faults):
        if drain_end_s is not None and f.at_s >= drain_end_s:
            out.append(
                f"faults[{i}] at {f.at_s:,.0f} s never fired: the run ended at {drain_end_s:,.0f} s (its window "
                f"is {scenario.duration_s:,.0f} s), so its results are those without it."
            )
        elif drain_end_s is not None and f.at_s >= scenario.duration_s:  # (a review: it went unsaid)
            out.append(
                f"faults[{i}] at {f.at_s:,.0f} s fired in the drain, after the window ({scenario.duration_s:,.0f} s; "
                f"the run ended at {drain_end_s:,.0f} s): it acts on the window's requests still in the system "
                "then, and their outcomes count in the window's figures."
            )
        elif drain_end_s is None and f.at_s >= scenario.duration_s:
            out.append(
                f"faults[{i}] at {f.at_s:,.0f} s starts at or after the window's end ({scenario.duration_s:,.0f} "
                "s): it can act only on the drain's last requests, if the run lasts that long."
            )
        if f.kind == "instances" and f.pool not in scaled and f.instances > counts.get(f.pool, f.instances):
            n = counts[f.pool]
            out.append(
                f"faults[{i}] takes {f.instances} instances of pool {f.pool}, which has {n}: all {n} are lost."
            )
    return out


def met_faults(scenario: Scenario, window_s: float) -> list[str]:
    """The faults a capacity search over `window_s` seconds meets, each in words: its runs keep
    them, so its answer is the deployment's with them (portfolio-decode-loss: 11.2 req/s with its
    chat decode pool lost at 300 s, 21.2 without; a review found a search that had left them out,
    unsaid). A plan leaves every fault out (`engine.planning.plan.faults_left_out`)."""
    return [
        f"faults[{i}] at {f.at_s:,.0f} s ({fault_what(f)}{'' if f.duration_s else ' for good'})"
        for i, f in enumerate(scenario.faults)
        if f.at_s < window_s
    ]


def met_faults_note(met: list[str]) -> str:
    """The capacity's note on the faults its runs meet (`met_faults`), '' where none."""
    if not met:
        return ""
    return (
        f"every run meets {'; '.join(met)}, so this is the capacity with {'it' if len(met) == 1 else 'them'} "
        "(--set 'faults=[]' searches the deployment without faults)"
    )


def unmet_faults(scenario: Scenario, window_s: float) -> list[str]:
    """The faults a capacity search over `window_s` seconds never meets (a plan leaves every fault
    out): each starts at or after the window's end, so its answer is the deployment's without the
    fault (a capacity search of portfolio-decode-loss over 120 s read the healthy portfolio's
    capacity, its decode pool's loss at 300 s unsaid: a review)."""
    return [
        f"faults[{i}] at {f.at_s:,.0f} s starts after the capacity search's {window_s:,.0f} s window: its runs never "
        f"meet it, so this is the deployment without it (a window past {f.at_s:,.0f} s meets it)"
        for i, f in enumerate(scenario.faults)
        if f.at_s >= window_s
    ]
