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
    # over the run, its drain included (4.42 kW read as the window's, which drew 4.54: a review); the
    # data centre's chips (an edge pool named 'site' stood beside 'the site drew 0.20 kW')
    site = (
        f"site cap {p['site_cap_kw']:,.3g} kW, drew {p['site_mean_kw']:,.2f} kW on average over the run"
        if p["site_cap_kw"] is not None
        else f"the data-centre chips drew {p['site_mean_kw']:,.2f} kW on average over the run"
    )
    pools = "; ".join(
        f"{name} {q['cap_kw']:,.3g} kW ({q['chip_limit_w']:,.3g} W a chip): clock {q['clock_factor']:.0%}, "
        f"HBM bandwidth {q['bandwidth_factor']:.0%}, drew {q['mean_kw']:,.2f} kW"
        for name, q in p["pools"].items()
    )
    return f"Power cap: {site}" + (f"; {pools}." if pools else "; no pool's chips limited below their TDP.")


def _mean_power_clause(summary: Mapping[str, Any]) -> str | None:
    """'the chips drew 5.74 kW on average over the run, ...' (no capital, no full stop), or None."""
    kw = (summary.get("energy") or {}).get("mean_kw")
    if kw is None:
        return None
    # under 1 kW in W: an edge site's run read '0.233 kW' beside its budget's 60 W (a browser review)
    # (by the value as written: 0.9997 kW read '1e+03 W', a review)
    drew = f"{kw:,.3g} kW" if kw >= 0.9995 else f"{kw * 1e3:,.3g} W"
    return (
        f"the chips drew {drew} on average over the run, its drain included (the chips alone, idle "
        "included: no servers or cooling)"
    )


def mean_power_line(summary: Mapping[str, Any]) -> str | None:
    """'The chips drew 5.74 kW on average over the run, ...', or None where the summary has no mean power
    (a run of none, or a summary written before `Energy.mean_kw`)."""
    clause = _mean_power_clause(summary)
    return None if clause is None else f"{clause[0].upper()}{clause[1:]}."


def mean_power_text(summary: Mapping[str, Any]) -> str:
    """The same as a clause after the energy per token ('; the chips drew ...'), or ''."""
    clause = _mean_power_clause(summary)
    return "" if clause is None else f"; {clause}"


__all__ = ["mean_power_line", "mean_power_text", "power_cap_line"]
