"""Where a run's bill goes, as tables: per part (the pools, the KV links, the cache), per kind of an
owned bill (capital, hosting, energy, cache), each pool's use and share of it, and what the bill is
measured in. The Results and
Compare pages show them; `engine.explain.presentation` keeps the rest of a result's plain data."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd


def cost_parts(summary: Mapping[str, Any]) -> pd.DataFrame:
    """Where the bill goes: per part, dollars per request (and per million requests), per million output
    tokens, and share."""
    cost = summary.get("cost", {})
    by_part: Mapping[str, float] = cost.get("usd_by_part", {})
    total = sum(by_part.values())
    per_req: Mapping[str, float | None] = cost.get("usd_per_request_by_part", {})
    per_m = cost.get("usd_per_million_output_tokens")
    rows = []
    for part, usd in by_part.items():
        share = usd / total if total else 0.0
        rows.append(
            {
                "part": part,
                "usd_per_request": per_req.get(part),
                "usd_per_million_requests": _per_million(per_req.get(part)),
                "usd_per_million_output_tokens": per_m * share if per_m is not None else None,
                "share": share,
            }
        )
    cols = ["part", "usd_per_request", "usd_per_million_requests", "usd_per_million_output_tokens", "share"]
    return pd.DataFrame(rows, columns=cols)


def _per_million(usd: float | None) -> float | None:
    """Dollars per million requests, what a table shows: a small part reads $0.40, not $4.03e-7 a request."""
    return None if usd is None else usd * 1e6


def cost_kinds(summary: Mapping[str, Any]) -> pd.DataFrame:
    """An owned bill by kind (capital, energy, hosting, cache): dollars per request and share; empty when rented."""
    cost = summary.get("cost", {})
    by_kind: Mapping[str, float] = cost.get("usd_by_kind", {})
    per_req: Mapping[str, float | None] = cost.get("usd_per_request_by_kind", {})
    total = sum(by_kind.values())
    rows = [
        {
            "kind": k,
            "usd_per_request": per_req.get(k),
            "usd_per_million_requests": _per_million(per_req.get(k)),
            "share": v / total if total else 0.0,
        }
        for k, v in by_kind.items()
    ]
    return pd.DataFrame(rows, columns=["kind", "usd_per_request", "usd_per_million_requests", "share"])


def cost_basis(summary: Mapping[str, Any]) -> str:
    """What the run's cost is measured in, e.g. ``own: 5-year amortisation, $0.08/kWh, PUE 1.58, ...``,
    and what its cost per request divides (`billed_said`)."""
    cost = summary.get("cost", {})
    basis = str(cost.get("basis") or "rent: catalog price per chip-hour")
    if assumed := cost.get("assumed_prices"):
        basis += f"; {assumed_said(assumed, cost.get('mode') == 'own')}"
    if listed := cost.get("list_prices"):
        basis += f"; billed at {listed_said(listed)}"
    if billed := billed_said(summary):
        basis += f"; {billed}"
    return basis


def billed_requests(summary: Mapping[str, Any]) -> int | None:
    """The completed requests a run's bill is divided over (cost per request): every one of the run,
    a warm-up's included, as the bill runs from the start (None without a cost per request)."""
    cost = summary.get("cost", {})
    total, per = cost.get("usd_total"), cost.get("usd_per_request")
    return round(total / per) if total and per else None


def goodput_per_usd(summary: Mapping[str, Any], span_s: float | None) -> float | None:
    """Requests that met their SLO per dollar, over the requests the bill is divided over (as cost per
    request: a warm-up's included): the window's met share of its completed, scaled to every completed
    one (the window's met over the whole bill read 434 a dollar beside 1 / $/request = 777 at 99.8%
    within SLO: a review). Met: goodput times the span it is over (`span_s`: an unsustainable run's
    `rates_over_s`, else the window)."""
    goodput, bill = summary.get("goodput_rps"), summary.get("cost", {}).get("usd_total")
    if goodput is None or span_s is None or not bill:
        return None
    met = goodput * span_s
    done, billed = summary.get("requests", {}).get("completed"), billed_requests(summary)
    if done and billed and billed > done:
        met *= billed / done
    return float(met / bill)


def billed_said(summary: Mapping[str, Any]) -> str:
    """Where a cost per request divides more requests than the window's completed ('per request: the
    bill from the start over all 4,403 requests completed, the warm-up's 1,934 included'); '' where
    they are the same. A reader divided the bill by the window's count and found another figure."""
    billed, window = billed_requests(summary), summary.get("requests", {}).get("completed")
    if billed is None or window is None or billed <= window:
        return ""
    return (
        f"per request: the bill from the start over all {billed:,} requests completed, the warm-up's "
        f"{billed - window:,} included"
    )


LIST_SAID = (
    "its cloud's list price, where the GPUs are on the neocloud basis, several times below their own list: "
    "an H100 at $2.49/h against about $12/h listed, docs/hardware.md"
)


def listed_said(listed: Mapping[str, str]) -> str:
    """'a list price: tpu-v5e $1.20/h (its cloud's list price, where the GPUs are ...)'."""
    return (
        f"{'a list price' if len(listed) == 1 else 'list prices'}: "
        + ", ".join(f"{chip} {price}" for chip, price in listed.items())
        + f" ({LIST_SAID})"
    )


def assumed_said(assumed: Mapping[str, str], own: bool = False) -> str:
    """'prices the catalog assumes, not published rates: h200 $3.20/h, mi300x $2.60/h'; owned
    (`own`), 'a purchase price the catalog assumes, not a published one: mi300x $15,000'."""
    one = len(assumed) == 1
    said = ", ".join(f"{chip} {price}" for chip, price in assumed.items())
    if own:  # a chip's, its server share's, or both (`ownership.assumed_prices`)
        what = "a purchase price" if one else "purchase prices"
        published = "a published one" if one else "published ones"
        return f"{what} the catalog assumes, not {published}: {said}"
    what = (
        "a price the catalog assumes, not a published rate"
        if one
        else "prices the catalog assumes, not published rates"
    )
    return f"{what}: {said}"


def utilization_frame(summary: Mapping[str, Any], shares: bool = False) -> pd.DataFrame:
    """Per pool: the window's compute, bandwidth, busy and KV-memory fractions, and with several pools
    (or `shares`: one pool's is the bill less its cache tiers') each one's share of the bill."""
    util: Mapping[str, Mapping[str, float]] = summary.get("utilization", {})
    rows = [{"pool": pool, **vals} for pool, vals in util.items()]
    cost = summary.get("cost", {})
    parts: Mapping[str, float] = cost.get("usd_by_part", {})
    # each pool's own chips, as the bill's parts table reads them: its pool bill also holds the KV link it
    # sends on, and a page read 55.5% here beside 55.4% there for one pool (a browser review)
    bills = {p: parts.get(p, usd) for p, usd in cost.get("usd_by_pool", {}).items()}
    total = cost.get("usd_total") or 0.0
    if shares and not bills and len(rows) == 1:  # (an empty cell beside several pools on Compare: a review)
        bills = {str(rows[0]["pool"]): total - cost.get("usd_by_part", {}).get("cache", 0.0)}
    return pd.DataFrame(
        [{**r, "bill_share": bills.get(str(r["pool"]), 0.0) / total} for r in rows]
        if bills and total
        else rows
    )
