"""The summary's contract: a run's summary has exactly the keys `engine.serving.summary` declares,
`to_json()` keeps today's top-level keys, and docs/metrics.md lists every field as summary.py says."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any, NotRequired

import pytest

from engine.serving.run import SimResult, simulate
from engine.serving.summary import Shortfall, Summary
from tests.simhelp import small
from tools import summary_fields

DOC = Path(__file__).parents[2] / "docs" / "metrics.md"
BEGIN, END = summary_fields.BEGIN, summary_fields.END

# `fengong run --json`'s top-level keys, taken from a chat-colocated run before the summary was typed
TOP_LEVEL = [
    "requests",
    "latency_ms",
    "slo_attainment",
    "goodput_rps",
    "goodput_output_tokens_per_s",
    "throughput_rps",
    "throughput_tokens_per_s",
    "classes",
    "utilization",
    "calibration",
    "cost",
    "energy",
    "window_s",
    "drain_end_s",
    "cache",
    "scheduler",
    "kv_transfer_ms",
    "unsustainable",
    "sim",
    "scenario",
    "engine_version",
]

# each: a preset, what it shows, and its overrides (small: a short run)
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "colocated": ("chat-colocated", {}),
    "disaggregated": ("chat-disaggregated", {}),
    "edge": ("edge-offload", {}),  # its devices reach the site in 6 ms: a way in too
    "way in": ("chat-colocated", {"network.user_rtt_ms": 20.0, "control_plane.decision_ms": 1.0}),
    "owned cost": ("rent-vs-own", {}),
    "faults": ("failure-drill", {"duration_s": 300.0}),  # its fault strikes at 260 s
    "moe": ("moe-deepseek-h200", {}),
    "unsustainable": ("chat-disaggregated", {"duration_s": 240.0, "workload.arrival.rate_rps": 48.0}),
}

_LEAF: dict[type, tuple[type, ...]] = {float: (float, int), int: (int,), bool: (bool,), str: (str,)}


def mismatches(doc: Any, tp: Any, path: str = "summary") -> list[str]:
    """Where `doc` differs from the type `tp` (a TypedDict, a dict of them, a leaf, a union)."""
    if typing.get_origin(tp) is NotRequired:
        tp = typing.get_args(tp)[0]
    if typing.is_typeddict(tp):
        if not isinstance(doc, dict):
            return [f"{path}: {type(doc).__name__}, not a dict"]
        hints = typing.get_type_hints(tp, include_extras=True)
        required, declared = set(tp.__required_keys__), set(hints)
        out = [f"{path}.{k}: missing" for k in sorted(required - set(doc))]
        out += [f"{path}.{k}: not declared" for k in sorted(set(doc) - declared)]
        for k in sorted(set(doc) & declared):
            out += mismatches(doc[k], hints[k], f"{path}.{k}")
        return out
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is dict:
        if not isinstance(doc, dict):
            return [f"{path}: {type(doc).__name__}, not a dict"]
        return [m for k, v in doc.items() for m in mismatches(v, args[1], f"{path}.{k}")]
    if origin is list:
        return [m for i, v in enumerate(doc) for m in mismatches(v, args[0], f"{path}[{i}]")]
    if origin is typing.Literal:
        return [] if doc in args else [f"{path}: {doc!r} not one of {args}"]
    if args:  # a union: any of its members
        fits = [mismatches(doc, a, path) for a in args]
        return [] if any(not f for f in fits) else fits[0]
    if tp is type(None):
        return [] if doc is None else [f"{path}: {doc!r}, not None"]
    ok = isinstance(doc, _LEAF.get(tp, (tp,))) and not (tp in (int, float) and isinstance(doc, bool))
    return [] if ok else [f"{path}: {type(doc).__name__}, not {tp.__name__}"]


@pytest.fixture(scope="module", params=sorted(CASES))
def run(request: pytest.FixtureRequest) -> tuple[str, SimResult]:
    preset, over = CASES[request.param]
    return request.param, simulate(small(preset, **over))


def test_a_runs_summary_has_exactly_the_declared_keys(run: tuple[str, SimResult]) -> None:
    case, res = run
    assert mismatches(res.summary, Summary) == []
    # each case shows what it was chosen for: the optional keys where they apply
    s = res.summary
    assert ("edge" in s) == (case == "edge")
    assert ("way_in" in s) == (case in ("edge", "way in"))
    assert ("usd_by_kind" in s["cost"]) == ("usd_per_request_by_kind" in s["cost"]) == (case == "owned cost")
    assert (s["unsustainable"] is not None) == (case == "unsustainable")
    if case == "faults":
        assert s["requests"]["failed"] + s["scheduler"]["retried"] > 0
    if case == "moe":
        assert all("eta_experts" in c for c in s["calibration"].values())


def test_to_json_keeps_todays_top_level_keys(run: tuple[str, SimResult]) -> None:
    case, res = run
    extra = {"edge": ["edge", "way_in"], "way in": ["way_in"]}.get(case, [])
    expected = TOP_LEVEL[:17] + extra + TOP_LEVEL[17:]
    assert list(res.to_json()) == expected


def test_the_checker_finds_a_missing_an_undeclared_and_a_mistyped_key() -> None:
    doc: dict[str, Any] = {"shortfall_rps": 1.0, "offered_rps": 3, "sustained_rps": 2.0}
    assert mismatches(doc, Shortfall) == []
    assert mismatches({**doc, "extra": 1.0}, Shortfall) == ["summary.extra: not declared"]
    del doc["offered_rps"]
    assert mismatches(doc, Shortfall) == ["summary.offered_rps: missing"]
    assert mismatches({**doc, "offered_rps": "3"}, Shortfall) == ["summary.offered_rps: str, not float"]


def test_every_field_has_a_docstring() -> None:
    rows = summary_fields.fields()
    assert len(rows) > 100
    assert [p for p, _, _, doc in rows if not doc] == []
    assert ("edge", "Edge", False, rows[[r[0] for r in rows].index("edge")][3]) in rows


def test_metrics_doc_lists_every_field_as_summary_py_says() -> None:
    text = DOC.read_text()
    m = re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), text, re.S)
    assert m is not None, f"docs/metrics.md lacks the markers {BEGIN} ... {END}"
    assert m.group(1) == summary_fields.markdown(), (
        "docs/metrics.md is stale: run `python tools/summary_fields.py` to regenerate its field list"
    )


def test_goodput_output_tokens_are_those_of_the_requests_within_their_slo(run: tuple[str, SimResult]) -> None:
    """The output tokens of the window's requests that met their SLO, per second of the window."""
    _, res = run
    t, s = res.requests, res.summary
    lo = res.scenario.warmup_s
    window = t[(t["arrival_s"] >= lo) & (t["arrival_s"] < lo + s["window_s"])] if "arrival_s" in t else t
    met = window[window["met_slo"].astype(bool)]
    # per second of the window; an unsustainable run's over the time its window's requests took
    span = (s["unsustainable"] or {}).get("rates_over_s", s["window_s"])
    assert s["goodput_output_tokens_per_s"] == pytest.approx(met["output_tokens"].sum() / span)
    assert len(met) / span == pytest.approx(s["goodput_rps"])  # the same requests goodput counts
    if s["unsustainable"]:
        done = window[window["outcome"] == "completed"]
        assert span == pytest.approx(done["completion_s"].max() - lo) and span > s["window_s"]


def test_an_e2e_target_counts_in_whether_a_class_passes() -> None:
    """A class with a 100 ms E2E target read "passes" beside 0% of its requests within SLO: E2E
    counted in each request's SLO but not in the class's verdict (a walkthrough). It now counts in
    both, and the SLO page's tail names it where it breaks."""
    from engine.explain.presentation import slo_tail
    from engine.scenario.codec import apply_overrides

    base = small("chat-disaggregated")
    tight = simulate(apply_overrides(base, {"workload.classes[0].slo.e2e_ms": 100.0}))
    chat = tight.summary["classes"]["chat"]
    assert chat["slo_attainment"] == 0.0 and not chat["passes"]
    tail = slo_tail(tight.scenario, tight.requests).iloc[0]
    assert not tail["passes"] and "E2E" in tail["breaks"] and tail["e2e_at_percentile_ms"] > 100.0
    loose = simulate(apply_overrides(base, {"workload.classes[0].slo.e2e_ms": 600_000.0}))
    assert loose.summary["classes"]["chat"]["passes"] == simulate(base).summary["classes"]["chat"]["passes"]


def test_an_unsustainable_runs_goodput_counts_no_warm_up_request() -> None:
    """An unsustainable run's rates run until its window's last request completes and count the
    warm-up's requests served in that time: its goodput counted them too and read 0.13 req/s at 0%
    of the window's requests within their SLO (a review). Goodput counts the window's requests only;
    throughput keeps what the deployment served."""
    from engine.scenario.codec import apply_overrides, load_preset

    sc = apply_overrides(
        load_preset("chat-colocated"),
        {
            "duration_s": 120.0,
            "warmup_s": 30.0,
            "model.kv": "bf16",
            "deployment.pools[0].tp": 2,
            "deployment.pools[0].count": 2,
            "deployment.mem_fraction": 0.55,
            "workload.classes[0].output": {"kind": "constant", "tokens": 1500},
            "workload.arrival.rate_rps": 4.0,
        },
    )
    res = simulate(sc)
    s, t = res.summary, res.requests
    assert s["unsustainable"] and s["slo_attainment"] == 0.0 and s["goodput_rps"] == 0.0
    warm = t[(t["arrival_s"] < sc.warmup_s) & t["met_slo"].astype(bool) & (t["completion_s"] >= sc.warmup_s)]
    assert len(warm) > 0  # the requests goodput once counted
    assert s["throughput_rps"] > 0.0


def test_a_colocated_run_moves_no_kv_cache() -> None:
    """A colocated run's KV transfer is none (None), not a transfer of 0 ms, as docs/metrics.md says;
    the CLI prints no 'kv transfer ms mean 0.00 p99 0.00' line for it (a review)."""
    from engine.cli.run_text import _latency_lines
    from engine.scenario import codec as io
    from engine.serving.run import simulate

    together = simulate(io.apply_overrides(io.load_preset("chat-colocated"), {"duration_s": 60.0})).summary
    assert together["kv_transfer_ms"] == {"mean": None, "p99": None}
    split = simulate(io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 60.0})).summary
    assert split["kv_transfer_ms"]["mean"] > 0 and split["kv_transfer_ms"]["p99"] > 0
    assert not any("kv transfer ms" in line for line in _latency_lines(dict(together), (), None))
    assert any("kv transfer ms" in line for line in _latency_lines(dict(split), (), None))
