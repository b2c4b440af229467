"""A finding's Numbers hold the figures its sentence quotes: the chips' TPOT medians ('median 8.7 ms on
h100-sxm, 50.5 ms on ascend-910b') were not among them, only the run's p50 of 8.9 ms (a review)."""

from __future__ import annotations

import re

from engine import explain as ex
from engine.scenario.codec import apply_overrides, load_preset
from engine.serving.run import simulate


def test_a_chip_mix_findings_numbers_hold_the_medians_it_quotes() -> None:
    run = simulate(apply_overrides(load_preset("chat-ascend-910b"), {"duration_s": 120.0}))
    (mix,) = [f for f in ex.findings(run) if f.topic == "chip_mix"]
    quoted = re.findall(r"([\d.]+) ms on ([\w-]+(?:\.[\w-]+)*)", mix.text)
    rows = dict(ex.number_rows(mix.numbers))
    assert len(quoted) == 2
    for ms, chip in quoted:
        assert rows[f"TPOT median on {chip} (ms)"] == ms, (chip, rows)
