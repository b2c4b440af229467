"""The advisor's findings on what happened to a run beside its load: instances lost to a fault, an
edge site's power budget sending requests away, an autoscaled pool's cold starts.

Each was in the run's numbers and said nowhere a user reads first: failure-drill's 34 requests
retried from the start, edge-offload's 59 offloads for power, day-autoscaled's misses while an
instance was starting (a review). Each finding says what happened, what it cost in SLO terms, and
what would change it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.explain.finding import Finding
from engine.explain.timeline_marks import fault_what
from engine.scenario.model import Fault
from engine.serving.run import SimResult

POWER_WARNING_SHARE = 0.05
"""Share of a run's requests offloaded for power from which the budget is a warning, not a note."""


def _fault_words(f: Fault) -> str:
    """'decode: 1 instance lost at 260 s for 120 s' (`timeline_marks.fault_what`, with its times)."""
    return f"{fault_what(f)} at {f.at_s:,.0f} s " + (
        f"for {f.duration_s:,.0f} s" if f.duration_s else "for good"
    )


def fault_finding(result: SimResult) -> Finding | None:
    """Instances lost to the scenario's faults: the requests retried from the start, the tokens
    they had decoded, and the SLO met by requests arriving while a fault lasted against the others'."""
    s = result.summary
    faults = [f for f in result.scenario.faults if f.kind == "instances" and f.at_s < s["drain_end_s"]]
    if not faults:
        return None
    r = result.requests
    arrival = r["arrival_s"].to_numpy(dtype=float)
    inside = np.zeros(len(r), dtype=bool)
    for f in faults:
        end = f.at_s + f.duration_s if f.duration_s else np.inf
        inside |= (arrival >= f.at_s) & (arrival < end)
    met = r["met_slo"].to_numpy(dtype=bool)
    retried = int(s["scheduler"]["retried"])
    lost = int(s["requests"]["failed_by_reason"].get("instance_lost", 0))  # in_flight = "fail"
    during = float(met[inside].mean()) if inside.any() else None
    others = float(met[~inside].mean()) if (~inside).any() else None
    what = "; ".join(_fault_words(f) for f in faults)
    plural = "s" if len(faults) > 1 else ""
    text = (
        f"The fault{plural} ({what}) sent {retried:,} request{'' if retried == 1 else 's'} back to the start"
    )
    text += f" and failed {lost:,} in flight" if lost else ""
    if during is not None:
        text += f"; {during:.1%} of the {int(inside.sum()):,} requests arriving while it lasted met their SLO"
        text += f", against {others:.1%} of the others" if others is not None else ""
    text += (
        ". The failure drill (the Strategy page's 'Compare fallbacks', fengong drill) runs the same requests "
        "under each way of coping: a colocated fallback, degrading, spilling."
    )
    floor = min(c.slo.percentile for c in result.scenario.workload.classes) / 100.0
    numbers = {"retried": float(retried), "failed_in_flight": float(lost), "faults": float(len(faults))}
    if during is not None:
        numbers |= {"met_during_fault": during, "arrived_during_fault": float(inside.sum())}
    return Finding("warning" if during is not None and during < floor else "info", "fault", text, numbers)


def power_finding(summary: Mapping[str, Any]) -> Finding | None:
    """An edge site whose power budget sent requests to the data centre (offloads for power)."""
    edge = summary.get("edge")
    if not edge or not (power := int(edge["offloaded_by_reason"].get("power", 0))):
        return None
    share = power / max(int(edge["requests"]), 1)
    text = (
        f"The site's {edge['power_budget_w']:,.0f} W power budget sent {power:,} requests ({share:.1%}) to the "
        f"data centre that its chips had room for (peak draw {edge['peak_site_power_w']:,.1f} W, "
        f"{edge['site_idle_w']:,.0f} W of it idle): a larger budget, or chips that draw less when busy, "
        "would keep them at the site."
    )
    numbers = {
        "offloaded_for_power": float(power),
        "share": share,
        "power_budget_w": float(edge["power_budget_w"]),
    }
    return Finding("warning" if share >= POWER_WARNING_SHARE else "info", "power", text, numbers)


def cold_start_finding(summary: Mapping[str, Any]) -> Finding | None:
    """An autoscaled run's SLO misses among requests that arrived while an instance was starting."""
    a = summary.get("autoscale")
    if not a or not (missed := int(a["misses_during_cold_start"])):
        return None
    total = int(summary["requests"]["total"])
    misses = total - round(float(summary["slo_attainment"] or 0.0) * total)  # None: no request
    starts = sorted({round(float(p["cold_start_s"])) for p in a["pools"].values()})
    start = f"{starts[0]:,} s" if len(starts) == 1 else f"{starts[0]:,} to {starts[-1]:,} s"
    share = f" of the run's {misses:,} SLO misses" if misses >= missed else ""
    ups = f"{a['scale_ups']} scale-up{'' if a['scale_ups'] == 1 else 's'}"
    text = (
        f"{missed:,}{share} came from requests arriving while an instance was starting ({start} cold start, "
        f"{ups}): more instances kept warm (the autoscaler's minimum), a faster cold start or an autoscaler "
        "that scales up earlier could spare them."
    )
    numbers = {"misses_during_cold_start": float(missed), "misses": float(misses)}
    return Finding("info", "cold_start", text, numbers)


def event_findings(result: SimResult) -> list[Finding]:
    """The three findings above, those that apply."""
    found = (fault_finding(result), power_finding(result.summary), cold_start_finding(result.summary))
    return [f for f in found if f is not None]


__all__ = ["POWER_WARNING_SHARE", "cold_start_finding", "event_findings", "fault_finding", "power_finding"]
