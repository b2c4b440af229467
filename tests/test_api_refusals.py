"""The Python API's refusals, as a notebook user meets them (a review of the API from Python alone): a
typo in a preset's name, a preset's name given as a file, overrides in their order, a folder that
holds no catalog, and a plan's JSON that the standard library's strict encoder takes."""

from __future__ import annotations

import json
import math

import pytest

import engine
from engine.core.errors import ScenarioError
from engine.core.numbers import json_plain


def test_a_presets_name_mistyped_or_not_text_or_given_as_a_file_is_answered() -> None:
    with pytest.raises(
        ScenarioError, match=r"unknown preset 'chat-colocatd'; did you mean 'chat-colocated'\?"
    ):
        engine.load_preset("chat-colocatd")
    with pytest.raises(ScenarioError, match=r"^name: a preset's name, a str .*\(got NoneType\)$"):
        engine.load_preset(None)  # type: ignore[arg-type]
    with pytest.raises(ScenarioError, match=r"a preset's name is loaded by load_preset\('chat-colocated'\)"):
        engine.load_scenario("chat-colocated")


def test_overrides_apply_in_their_order_each_to_what_the_earlier_left() -> None:
    """Two paths of which one holds the other are not refused (a list set whole, then a field of an
    item, is how the engine's own callers and tests edit): they apply in order, as the docstring says."""
    s = engine.load_preset("chat-colocated")
    table_last = {"workload.arrival.rate_rps": 5, "workload.arrival": {"rate_rps": 7}}
    field_last = {"workload.arrival": {"rate_rps": 7}, "workload.arrival.rate_rps": 5}
    assert engine.apply_overrides(s, table_last).workload.arrival.rate_rps == 7
    assert engine.apply_overrides(s, field_last).workload.arrival.rate_rps == 5


def test_a_folder_without_a_catalog_is_refused_not_read_as_an_empty_one(tmp_path: object) -> None:
    with pytest.raises(ScenarioError, match=r"no hardware/ or models/ folder in it"):
        engine.load_catalog(str(tmp_path))
    with pytest.raises(ScenarioError, match=r"a folder or a list of folders \(got int\)"):
        engine.load_catalog(5)  # type: ignore[arg-type]


def test_json_plain_gives_what_a_strict_encoder_takes() -> None:
    doc = json_plain({"a": math.inf, "b": (1.0, math.nan), 3: {"c": -math.inf}})
    assert doc == {"a": None, "b": [1.0, None], "3": {"c": None}}
    json.dumps(doc, allow_nan=False)
