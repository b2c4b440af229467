"""The advisor's roofline table says what binds each phase as `roofline` does, and gives no KV transfer
time to a chip without a link to send it over (a review: Groq's LPU read a prefill KV transfer of
150,577,076,508 ms, at 1 byte/s, and a decode step of 92% fixed cost bound by 'link')."""

from __future__ import annotations

import math

import pandas as pd

from engine.costmodel.roofline import FIXED, STAGES
from engine.explain.rooflines import roofline_table
from engine.scenario.codec import load_preset


def test_a_chip_without_a_scale_out_link_has_no_kv_transfer_time() -> None:
    rows = roofline_table(load_preset("chat-ascend-910b"), hardware=["groq-lpu", "h100-sxm"])
    groq = rows[rows["hardware"] == "groq-lpu"].set_index("phase")
    h100 = rows[rows["hardware"] == "h100-sxm"].set_index("phase")
    assert pd.isna(groq.loc["prefill", "kv_transfer_ms"])
    kv = float(h100.loc["prefill", "kv_transfer_ms"])
    assert math.isfinite(kv) and 0.0 < kv < 1e3  # a prompt's KV over an H100's NICs: milliseconds


def test_a_step_mostly_fixed_cost_binds_its_fixed_cost_not_its_link() -> None:
    rows = roofline_table(load_preset("chat-ascend-910b"), hardware=["groq-lpu"]).set_index("phase")
    # hundreds of LPUs in pipeline stages: the decode step is the stack's fixed cost, the prompt the stages'
    assert rows.loc["decode", "binds"] == FIXED
    assert rows.loc["prefill", "binds"] == STAGES
