"""The ASIC test's software question (engine.explain.software, engine.explain.asic)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from engine.explain.asic import specialisation
from engine.explain.software import PORTING_SHARE
from engine.serving.run import simulate
from tests.simhelp import small

ASIC = "deployment.pools[1].maturity"


def decode_row(**over: Any) -> pd.Series:
    sp = specialisation(simulate(small("decode-asic", **{"duration_s": 30.0, **over})), 24)
    return sp.set_index("phase").loc["decode"]


def test_a_new_port_that_costs_more_than_its_share_is_not_ready_and_costs_a_yes() -> None:
    ready = decode_row(**{ASIC: "port", "cost.porting_engineer_months": {"decode-asic": 0.5}})
    costly = decode_row(**{ASIC: "port"})  # 24 engineer-months for four chips
    assert ready["software_ready"] and ready["porting_share"] < PORTING_SHARE
    assert not costly["software_ready"] and costly["porting_share"] >= PORTING_SHARE
    assert costly["porting_usd"] == pytest.approx(600_000.0)
    assert "software not ready" in costly["text"] and "a new port" in costly["text"]
    order = ["not worth it", "borderline", "worth considering"]
    assert (
        order.index(costly["verdict"]) == order.index(ready["verdict"]) - 1 or costly["verdict"] == order[0]
    )


def test_a_measured_stack_is_ready_and_an_unrated_chip_says_how_to_rate_it() -> None:
    measured = decode_row(**{ASIC: "measured"})
    assert bool(measured["software_ready"]) and "software ready" in measured["text"]
    unrated = decode_row()  # the illustrative ASIC runs the H100's profile by rule
    assert unrated["software_ready"] is None and unrated["maturity"] == "not rated"
    assert "deployment.pools[1].maturity" in unrated["text"]
    assert unrated["verdict"] == measured["verdict"]  # not rated costs nothing


def test_prefill_on_fitted_h100s_is_ready() -> None:
    sp = specialisation(simulate(small("chat-disaggregated", duration_s=30.0)), 24).set_index("phase")
    assert bool(sp.loc["prefill", "software_ready"])
    assert sp.loc["prefill", "maturity"] == "measured"


def test_a_measured_stack_is_named_as_its_fit_measured_it() -> None:
    """The 910B's software read 'a measured vLLM stack' where its fit measured vLLM-Ascend (a review)."""
    sp = specialisation(simulate(small("chat-ascend-910b", duration_s=30.0)), 24)
    text = sp.set_index("phase").loc["decode"]["text"]
    assert "ascend-910b: a measured vLLM-Ascend stack" in text and "h100-sxm: a measured vLLM stack" in text
