"""Which chips of a planned deployment are billed at a price the catalog only assumes, and the mark
the verdict writes after its $/h (`engine.planning.verdict`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from engine.costmodel import ownership
from engine.planning.portfolio import Portfolio

if TYPE_CHECKING:
    from engine.planning.search import Search
    from engine.planning.sizing import Shape


def assumed_price_mark(row: dict[str, Any]) -> str:
    """' (mi300x at an assumed price)' after a deployment's $/h where a chip of it is billed at a price
    the catalog only assumes (`assumed_prices`; a plan kept from before: none), naming the chips: an
    H100 and MI300X plan read '$8.98/h (assumed price)' where only the MI300X's was (a review); the
    page and the CLI write it."""
    chips = sorted(row.get("assumed_prices") or {})
    if not chips:
        return ""
    return f" ({', '.join(chips)} at {'an assumed price' if len(chips) == 1 else 'assumed prices'})"


def assumed_prices(search: Search, shape: Shape | Portfolio) -> dict[str, str]:
    """The chips of a deployment billed at a price the catalog assumes rather than cites, each with that
    price: its hourly rent, or owned, its purchase price (where the scenario gives none)."""
    kinds = shape.kinds() if isinstance(shape, Portfolio) else (shape.prefill, shape.decode)
    return ownership.assumed_prices((search.cat.hardware[k.hardware] for k in kinds), search.base.cost)


def prices_text(column: Iterable[dict[str, str] | None]) -> str:
    """'assumed prices, not published ones (the catalog's notes): b200 $4.50/h, h200 $3.20/h' over
    a verdict table's `assumed_prices` ('' where every price is cited); owned, purchase prices."""
    said: dict[str, str] = {}
    for prices in column:
        said |= prices or {}
    if not said:
        return ""
    what = "purchase price" if any(not p.endswith("/h") for p in said.values()) else "price"
    one = len(said) == 1
    return (
        f"{'an assumed ' + what + ', not a published one' if one else 'assumed ' + what + 's, not published ones'}"
        f" (the catalog's notes): {', '.join(f'{chip} {price}' for chip, price in sorted(said.items()))}"
    )
