"""Where a run's faults fall on its timeline: one labelled moment per loss and per recovery.

The Results page's "Over time" charts mark them with a vertical line, so a drop in SLO attainment
or a pool's power reads against the fault that caused it (`Scenario.faults`: instances lost, for
a while or for good, or a KV link slowed or taken down).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from engine.scenario.model import Fault


class FaultMark(NamedTuple):
    """A moment of a fault on the timeline: when (minutes into the run) and what, in a few words."""

    minute: float
    label: str


def _what(f: Fault) -> str:
    if f.kind == "link":
        return f"{f.pool}'s KV link " + ("down" if f.link_factor == 0 else f"at {f.link_factor:.0%}")
    return f"{f.pool}: {f.instances} instance{'' if f.instances == 1 else 's'} lost"


def fault_marks(faults: Iterable[Fault]) -> list[FaultMark]:
    """Each fault's start (and its end, where it has a duration), in time order."""
    marks = []
    for f in faults:
        marks.append(FaultMark(f.at_s / 60.0, _what(f) + ("" if f.duration_s else " for good")))
        if f.duration_s:
            back = "KV link restored" if f.kind == "link" else "instances back"
            marks.append(FaultMark((f.at_s + f.duration_s) / 60.0, f"{f.pool}: {back}"))
    return sorted(marks)
