"""How a run's autoscaling is said in one line (`Summary.autoscale`): what it billed and what it missed.

Per autoscaled pool: billed instance-hours, the peak of its bounds and its cold start; then the
scale events and the requests that arrived while an instance was starting, with how many of them
missed their SLO (the price of scaling up late).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def autoscale_line(summary: Mapping[str, Any]) -> str | None:
    """One line on the autoscalers' bill and cold starts; None when no pool autoscales."""
    a = summary.get("autoscale")
    if not a:
        return None
    pools = "; ".join(
        f"{name} {p['instance_hours']:,.2f} instance-h ({p['min_instances']} to {p['slots']}, "
        f"peak {p['peak_instances']}, cold start {p['cold_start_s']:,.0f} s)"
        for name, p in a["pools"].items()
    )
    during, missed = a["requests_during_cold_start"], a["misses_during_cold_start"]
    share = f" ({missed / during:.1%})" if during else ""
    return (
        f"Autoscaling: {pools}; {a['scale_ups']} scale-ups, {a['scale_downs']} scale-downs; "
        f"{during:,} requests arrived during cold starts, {missed:,} of them missed their SLO{share}."
    )


__all__ = ["autoscale_line"]
