"""How a run under a power cap is said in one line (`Summary.power_cap`): the cap, the clock, the draw.

Per capped pool: its cap, each chip's limit, the clock the limit holds a chip flat out to (compute
runs that much slower; HBM bandwidth holds down to half the clock) and the pool's mean draw.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def power_cap_line(summary: Mapping[str, Any]) -> str | None:
    """One line on the power caps, the clock they impose and what was drawn; None without a cap."""
    p = summary.get("power_cap")
    if not p:
        return None
    site = (
        f"site cap {p['site_cap_kw']:,.3g} kW, drew {p['site_mean_kw']:,.2f} kW on average"
        if p["site_cap_kw"] is not None
        else f"the site drew {p['site_mean_kw']:,.2f} kW on average"
    )
    pools = "; ".join(
        f"{name} {q['cap_kw']:,.3g} kW ({q['chip_limit_w']:,.0f} W a chip): clock {q['clock_factor']:.0%}, "
        f"HBM bandwidth {q['bandwidth_factor']:.0%}, drew {q['mean_kw']:,.2f} kW"
        for name, q in p["pools"].items()
    )
    return f"Power cap: {site}" + (f"; {pools}." if pools else "; no pool's chips limited below their TDP.")


__all__ = ["power_cap_line"]
