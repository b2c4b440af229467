"""Reconfigurable chips: the time to load a design is charged when an instance starts and switches phase."""

from __future__ import annotations

from typing import Any

import pytest

from engine.catalog.entries import load_catalog
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from tests.simhelp import records


def _with_reconfig(reconfig_s: float | None, **over: Any) -> Scenario:
    """chat-disaggregated with decode on a copy of the H100 that states a reconfiguration time."""
    chip = load_catalog().chip("h100-sxm").model_dump(by_alias=True, exclude_none=True)
    chip.update(id="h100-reconf", reconfig_s=reconfig_s, reconfig_j=100.0)
    chip["sources"] = {**chip["sources"], "reconfig_s": "assumption: test", "reconfig_j": "assumption: test"}
    if reconfig_s is None:
        chip.pop("reconfig_s"), chip.pop("reconfig_j")
        chip["sources"] = {k: v for k, v in chip["sources"].items() if not k.startswith("reconfig")}
    base = {"custom_hardware": [chip], "deployment.pools[1].hardware": "h100-reconf", "duration_s": 60.0}
    return io.apply_overrides(io.load_preset("chat-disaggregated"), {**base, **over})


def test_a_cold_start_waits_for_the_chip_to_reconfigure() -> None:
    scale = {
        "policy": {"name": "slo"},
        "min_instances": 1,
        "initial_instances": 1,
        "cold_start": {"startup_s": 10.0, "storage": "nvme", "warmup_s": 5.0},
    }
    over = {"deployment.pools[1].autoscale": scale}
    plain, _ = records(_with_reconfig(None, **over))
    slow, _ = records(_with_reconfig(7.0, **over))
    assert plain.scaling is not None and slow.scaling is not None
    assert slow.scaling.cold_start_s[1] == pytest.approx(plain.scaling.cold_start_s[1] + 7.0)


def test_a_role_switch_waits_for_the_chip_to_reconfigure() -> None:
    elastic = {"enabled": True, "threshold": 4, "switch_s": 1, "check_s": 2}
    over = {
        "duration_s": 120.0,
        "workload.arrival.rate_rps": 14.0,
        "workload.classes[0].input": {"kind": "lognormal", "mean": 3000, "p99": 9000, "max_tokens": 16000},
        "workload.classes[0].output": {"kind": "constant", "tokens": 64},
        "scheduler.elastic": elastic,
    }
    plain, _ = records(_with_reconfig(None, **over))
    slow, _ = records(_with_reconfig(60.0, **over))
    # a decode instance moved to prefill serves no prompt for the minute its chips reconfigure
    assert plain.counters["role_switches"] > 0 and slow.counters["role_switches"] > 0
    assert slow.end_s > plain.end_s or slow.counters["role_switches"] < plain.counters["role_switches"]


def test_each_reconfiguration_adds_its_energy_to_the_pool() -> None:
    elastic = {"enabled": True, "threshold": 4, "switch_s": 1, "check_s": 2}
    over = {
        "duration_s": 120.0,
        "workload.arrival.rate_rps": 14.0,
        "workload.classes[0].input": {"kind": "lognormal", "mean": 3000, "p99": 9000, "max_tokens": 16000},
        "workload.classes[0].output": {"kind": "constant", "tokens": 64},
        "scheduler.elastic": elastic,
    }
    rec, _ = records(_with_reconfig(0.0, **over))  # no time, so both runs switch alike
    switches = rec.counters["role_switches"]
    assert switches > 0
    # only decode instances (pool 1) are on the reconfigurable chip: 100 J a chip, two chips a switch
    assert rec.counters["reconfig_j.1"] == pytest.approx(100.0 * 2 * switches)
    assert "reconfig_j.0" not in rec.counters
