"""The scenarios the benchmarks time, in one place: bench/run.py times them and
tests/serving/test_work_bound.py checks that each stays well inside the work bound."""

from __future__ import annotations

from engine.scenario import codec as io
from engine.scenario.model import Scenario

FULL_DAY: tuple[str, dict[str, float]] = ("day-autoscaled", {"duration_s": 86_400.0})
"""A whole day at 10 req/s on average (about 864,000 requests, issue 34): the day-autoscaled preset,
whose daily curve spans its window, over 24 hours instead of one (bench/day.py runs it from the CLI)."""


def full_day() -> Scenario:
    """The `FULL_DAY` scenario: the day-autoscaled preset over 86,400 s."""
    preset, overrides = FULL_DAY
    return io.apply_overrides(io.load_preset(preset), dict(overrides))


def everything_on() -> Scenario:
    """The default preset with every feature exercised: three cache tiers with multi-turn sessions,
    cache-aware routing, strict priority, early rejection, swap preemption, elastic roles, a fault."""
    return io.apply_overrides(
        io.load_preset(io.DEFAULT_PRESET),
        {
            "cache": {"enabled": True, "block_tokens": 256, "host": {"enabled": True, "capacity_gb": 100},
                      "pooled": {"enabled": True, "capacity_gb": 1000}},
            "workload.classes[0].multi_turn": {"turns_mean": 3, "think_time_s": 5},
            # 64 system prompts: with 4, their HBM blocks shared by every request reading them (57f8f86)
            # left decode so much room that 1 swap happened where 150 had
            "workload.classes[0].prefix": {"tokens": 1024, "groups": 64},
            "scheduler": {"router": {"name": "cache_aware"}, "queue": {"name": "priority"},
                          "admission": {"name": "early_reject"}, "preemption": "swap",
                          "elastic": {"enabled": True, "threshold": 2.0}},
            "faults": [{"at_s": 200.0, "pool": "decode", "instances": 1, "duration_s": 60.0}],
            # decode memory cut to 0.55 of HBM, so that swaps and role switches happen (the README's
            # bench table counts them)
            "deployment.mem_fraction": 0.55,
        },
        merge=False,  # each table whole, as before overrides merged tables (its figures comparable over time)
    )  # fmt: skip


def doubled_outputs() -> Scenario:
    """The default preset with output lengths about doubled (a lognormal of mean 512)."""
    return io.apply_overrides(
        io.load_preset(io.DEFAULT_PRESET),
        {"workload.classes[0].output": {"kind": "lognormal", "mean": 512, "p99": 2400, "max_tokens": 8192}},
    )


def scaled_outputs(scenario: Scenario, factor: float) -> Scenario:
    """The scenario with every class's output lengths multiplied by `factor`."""
    data = io.to_data(scenario)
    changes = {}
    for i, c in enumerate(data["workload"]["classes"]):
        for key in ("tokens", "low", "high", "mean", "p99"):
            if c.get("output", {}).get(key) is not None:
                changes[f"workload.classes[{i}].output.{key}"] = c["output"][key] * factor
    return io.apply_overrides(scenario, changes)


def hundred_thousand() -> Scenario:
    """About 100,000 synthetic requests on 40 colocated instances."""
    return io.apply_overrides(
        io.load_preset("chat-colocated"),
        {"duration_s": 1000.0, "workload.arrival.rate_rps": 100.0, "deployment.pools[0].count": 40},
    )
