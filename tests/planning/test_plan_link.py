"""The Planner's share-link parameter (`engine.planning.plan_link`): what it writes reads back the
same, and what a hostile link brings is refused naming the field and what it may hold."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core import ScenarioError
from engine.planning.plan_link import FIELDS, MAX_TEXT, decode, encode

CHIPS = ("b200", "h100-sxm", "h200", "mi300x")
FORM = {
    "rps": 42.5,
    "hw": ["h100-sxm", "b200"],
    "modes": ["disaggregated"],
    "tp": [2, 8],
    "pp": [1],
    "ep": [],
    "budget": 1234.56,
    "power": 0.0,
    "window": 300.0,
    "sims": 60,
    "rule": "attainment",
    "within": 95.0,
    "mixed": False,
    "portfolio": True,
    "by": "usd_per_million_tokens",
    "risk": False,
    "margin": True,
}


def test_a_whole_form_reads_back_the_same_value_for_value_and_type() -> None:
    text = encode(FORM)
    assert text.startswith("rps:42.5;hw:h100-sxm,b200;modes:disaggregated;tp:2,8;pp:1;ep:;budget:1234.56;")
    back = decode(text, CHIPS)
    assert back == FORM
    assert [type(v) for v in back.values()] == [type(v) for v in FORM.values()]
    assert set(FIELDS) == set(FORM)  # the test covers every field


def test_fields_a_link_leaves_out_are_left_to_the_form() -> None:
    assert decode("rps:8;tp:4", CHIPS) == {"rps": 8.0, "tp": [4]}
    assert decode("", CHIPS) == {}
    assert decode("tp:4,4,2", CHIPS) == {"tp": [4, 2]}  # a chip or degree named twice counts once


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("rps:0", "plan.rps (Target load (req/s)): '0' is not allowed: from 0.1 to 5,000"),
        ("rps:nan", "plan.rps"),
        ("rps:inf", "plan.rps"),
        ("rps:1_000", "plan.rps"),
        ("rps:1e400", "plan.rps"),
        ("sims:10.5", "plan.sims (Most simulations): '10.5' is not allowed: from 5 to 400"),
        ("sims:4000", "from 5 to 400"),
        ("tp:3", "plan.tp (Tensor parallel): '3' is not allowed: any of 1, 2, 4, 8"),
        ("tp:", "plan.tp (Tensor parallel): choose at least one, any of 1, 2, 4, 8"),
        ("hw:tpu-v9", "plan.hw (Allowed hardware): 'tpu-v9' is not allowed: chip ids of the catalog"),
        ("window:90", "plan.window (Planning window (s)): '90' is not allowed: one of 60, 120, 300"),
        ("rule:best", "one of percentile, attainment"),
        ("by:vibes", "one of usd_per_hour, usd_per_million_tokens, chips, power"),
        ("risk:yes", "plan.risk (Risk-aware choice): 'yes' is not allowed: 1 or 0"),
        ("rps:8;rps:9", "plan.rps: given twice"),
        ("speed:9", "plan: 'speed' is not a field of the plan (fields: rps, hw, modes"),
        ("rps", "plan: 'rps' is not a field"),
        ("x" * (MAX_TEXT + 1), f"at most {MAX_TEXT:,} are read"),
    ],
)
def test_a_field_out_of_bounds_is_refused_by_name_with_what_it_may_hold(text: str, said: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        decode(text, CHIPS)
    assert said in str(caught.value)


def test_a_long_value_is_shown_cut() -> None:
    with pytest.raises(ScenarioError) as caught:
        decode("rule:" + "a" * 500, CHIPS)
    assert len(str(caught.value)) < 200 and "..." in str(caught.value)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_either_a_form_or_refused_in_words(text: str) -> None:
    try:
        values = decode(text, CHIPS)
    except ScenarioError as exc:
        assert str(exc).startswith("plan")
        return
    assert decode(encode(values), CHIPS) == values  # what it read, written again, reads the same
