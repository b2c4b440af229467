"""A run's tables: laid out when first read, the figures they give are the summary's, pickled whole."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pandas as pd
import pytest

from engine.serving.metrics import measured_mask
from engine.serving.run import SimResult, simulate
from tests.simhelp import small


def _from_table(res: SimResult) -> dict[str, Any]:
    """Figures of the summary taken from the per-request table with pandas, as the summary once was."""
    t = res.requests
    win = t[measured_mask(res.scenario, t)]
    done = win[win["outcome"] == "completed"]

    def by_reason(outcome: str) -> list[tuple[str, int]]:
        counts = win.loc[win["outcome"] == outcome, "reason"].value_counts()
        return [(str(k), int(v)) for k, v in counts.items()]

    classes = {}
    for name in t["class"].unique():
        rows = win[win["class"] == name]
        classes[str(name)] = float(rows["met_slo"].mean()) if len(rows) else 0.0
    all_done = t[t["outcome"] == "completed"]
    return {
        "total": len(win),
        "rejected_by_reason": by_reason("rejected"),
        "failed_by_reason": by_reason("failed"),
        "slo_attainment": int(win["met_slo"].sum()) / len(win) if len(win) else 0.0,
        "class_attainment": classes,
        "input_tokens": float(done["prompt_tokens"].sum()),
        "output_tokens_all": float(all_done["output_tokens"].sum()),
        "kv_transfer_mean_ms": (
            float(done["kv_transfer_s"].mean() * 1e3)
            if len(done) and res.scenario.deployment.mode == "disaggregated"
            else None
        ),
        "transfer_s_all": float(t["kv_transfer_s"].sum()),
    }


TROUBLE = {
    "workload.arrival.rate_rps": 40.0,
    "scheduler.admission": {"name": "early_reject"},
    "faults": [
        {"at_s": 20.0, "pool": "decode", "instances": 2, "duration_s": 15.0, "in_flight": "fail"},
        {"at_s": 40.0, "pool": "prefill", "instances": 3, "duration_s": None, "in_flight": "fail"},
    ],
}
"""Overload, early rejection and faults: requests rejected and failed for several reasons."""


@pytest.mark.parametrize(
    ("name", "over"),
    [
        ("chat-disaggregated", TROUBLE),
        ("chat-disaggregated", {}),
        ("offline-batch", {}),
        ("enterprise-mixed", {}),
        ("agentic-cache", {}),
    ],
)
def test_summary_is_what_the_table_gives(name: str, over: dict[str, Any]) -> None:
    res = simulate(small(name, **over))
    s = res.summary
    ref = _from_table(res)
    assert s["requests"]["total"] == ref["total"]
    assert list(s["requests"]["rejected_by_reason"].items()) == ref["rejected_by_reason"]
    assert list(s["requests"]["failed_by_reason"].items()) == ref["failed_by_reason"]
    assert s["slo_attainment"] == ref["slo_attainment"]
    for cls, attainment in ref["class_attainment"].items():
        assert s["classes"][cls]["slo_attainment"] == attainment
    assert s["throughput_tokens_per_s"]["input"] == ref["input_tokens"] / s["window_s"]
    assert s["kv_transfer_ms"]["mean"] == ref["kv_transfer_mean_ms"]
    if ref["output_tokens_all"]:
        assert s["energy"]["joules_per_output_token"] == s["energy"]["joules"] / ref["output_tokens_all"]


def test_reasons_are_counted_most_first() -> None:
    rejected = simulate(small("chat-disaggregated", **TROUBLE)).summary["requests"]["rejected_by_reason"]
    assert len(rejected) > 1, "overload and faults reject requests for more than one reason"
    assert list(rejected.values()) == sorted(rejected.values(), reverse=True)


def test_a_pickled_result_carries_its_tables() -> None:
    res = simulate(small("chat-disaggregated", duration_s=30.0))
    back = pickle.loads(pickle.dumps(res))
    pd.testing.assert_frame_equal(back.requests, res.requests)
    pd.testing.assert_frame_equal(back.timeseries, res.timeseries)
    assert back.summary == res.summary
    assert back.to_json()["sim"] == res.to_json()["sim"]


def test_the_table_has_every_column_once_met_slo_last() -> None:
    res = simulate(small("chat-colocated", duration_s=30.0))
    cols = list(res.requests.columns)
    assert cols[-1] == "met_slo" and len(cols) == len(set(cols))
    assert res.requests["met_slo"].dtype == np.bool_
    assert len(res.requests) == res.to_json()["sim"]["requests_simulated"]


def test_the_last_time_bin_is_averaged_over_the_time_the_run_lasted() -> None:
    """One instance kept busy to the end by a closed loop: every bin reads busy 1.0, the last too
    (averaged over its whole 5 s the bin of 75.0-75.49 s read 0.098, a fall that was not there)."""
    from engine.scenario import codec as io
    from engine.serving.run import simulate

    sc = io.apply_overrides(
        io.load_preset("chat-colocated"),
        {
            "duration_s": 60.0,
            "deployment.pools[0].count": 1,
            "workload.arrival": {"kind": "closed_loop", "clients": 32, "stop_after": 300},
        },
    )
    result = simulate(sc)
    ts = result.timeseries
    assert ts["t_s"].iloc[-1] + sc.resolution_s > result.summary["drain_end_s"] > ts["t_s"].iloc[-1]
    assert ts["busy"].min() > 0.999


@pytest.mark.parametrize("preset", ["chat-colocated", "edge-npu"])
def test_exported_utilisations_stay_within_zero_and_one(preset: str) -> None:
    """Differences of running sums left a bin busy 1.0000000000012 and a bandwidth -1e-14 in the
    exported series (a review): rounding is snapped into [0, 1]."""
    ts = simulate(small(preset, duration_s=120.0)).timeseries
    for col in ("compute_util", "bandwidth_util", "busy"):
        assert ts[col].between(0.0, 1.0).all(), col
    assert ts["busy"].max() == 1.0  # a saturated bin reads exactly its whole
