"""A table keyed by a chip's id (`cost.usd_per_hour`, `cost.capex_usd`) in a field path and a share
link: a price set on the SLO page made a link the app refused ('malformed field path
cost.usd_per_hour.h100-sxm'), and `--set` refused the same path (a review)."""

from __future__ import annotations

import pytest

from engine.core.errors import ScenarioError
from engine.scenario.codec import apply_overrides, diff, from_link, load_preset, parse_path, to_data, to_link

PRESET = "chat-disaggregated"


def test_a_chips_price_is_a_path_and_survives_a_link() -> None:
    assert parse_path("cost.usd_per_hour.h100-sxm") == ["cost", "usd_per_hour", "h100-sxm"]
    priced = apply_overrides(load_preset(PRESET), {"cost.usd_per_hour.h100-sxm": 5.0})
    assert priced.cost.usd_per_hour["h100-sxm"] == 5.0
    back = from_link(to_link(priced, PRESET))
    assert back.cost.usd_per_hour == priced.cost.usd_per_hour and to_data(back) == to_data(priced)
    owned = apply_overrides(priced, {"cost.mode": "own", "cost.capex_usd.h100-sxm": 31_000.0})
    assert from_link(to_link(owned, PRESET)).cost.capex_usd == owned.cost.capex_usd


def test_a_key_no_path_can_name_goes_with_its_whole_table() -> None:
    """An id with a dot cannot be a path's chunk: the link carries its table whole."""
    changes = diff({"t": {"a.b": 1, "c": 2}}, {"t": {"a.b": 3, "c": 2}})
    assert changes == {"t": {"a.b": 3, "c": 2}}
    assert diff({"t": {"x-1": 1}}, {"t": {"x-1": 2}}) == {"t.x-1": 2}


@pytest.mark.parametrize("path", ["deployment.pools.0.hardware", "cost..x", "cost.usd_per_hour.[0]", "a b"])
def test_a_malformed_path_is_still_refused(path: str) -> None:
    with pytest.raises(ScenarioError, match="malformed field path"):
        parse_path(path)
