"""Reader for AIPerf's (formerly genai-perf's) aggregated profile export, ``profile_export_aiperf.json``.

Schema, copied from ai-dynamo/aiperf at db4f6397 (aiperf/common/models/export_models.py,
``JsonExportData`` and ``JsonMetricResult``; aiperf/exporters/json_exporter.py): one JSON object
whose metric keys (``time_to_first_token``, ``inter_token_latency``, ``request_latency``,
``output_token_throughput``, ``request_throughput``, ``request_count``, ``input_sequence_length``,
``output_sequence_length``, ``benchmark_duration``, ...) each hold ``unit`` and any of ``avg``,
``p1`` ... ``p99``, ``min``, ``max``, ``std``; and ``input_config``, the user's configuration as
set (``exclude_unset``): ``endpoint.model_names``, ``loadgen.concurrency``, ``loadgen.request_rate``,
``loadgen.request_count``, ``input.prompt.input_tokens.mean`` and ``output_tokens.mean``.
AIPerf's inter-token latency is per request, (E2E - TTFT) / (output - 1): vLLM's TPOT.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.core.errors import ScenarioError
from engine.observe.observation import Latency, Measured, Observation, Setup, count, number

AIPERF_KEYS = ("time_to_first_token", "request_latency")
"""Metric keys an AIPerf export of a streaming LLM run has (with ``unit``)."""

_TO_MS = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "us": 1e-3, "ns": 1e-6}


def is_aiperf(doc: Any) -> bool:
    """True for a JSON object shaped as AIPerf's export: its metrics are objects with a unit."""
    return isinstance(doc, dict) and all(
        isinstance(doc.get(k), dict) and "unit" in doc[k] for k in AIPERF_KEYS
    )


def _metric(doc: Mapping[str, Any], key: str, what: str) -> Mapping[str, Any] | None:
    m = doc.get(key)
    if m is None:
        return None
    if not isinstance(m, dict):
        raise ScenarioError(f"{what}: {key}: expected an object with unit and avg, got {type(m).__name__}")
    return m


def _latency(doc: Mapping[str, Any], key: str, what: str) -> Latency | None:
    m = _metric(doc, key, what)
    if m is None:
        return None
    unit = str(m.get("unit", ""))
    if unit not in _TO_MS:
        raise ScenarioError(f"{what}: {key}.unit: {unit!r} is not one of {', '.join(_TO_MS)}")
    scale = _TO_MS[unit]
    pcts = {
        float(k[1:]): number(v, f"{what}: {key}.{k}") * scale
        for k, v in m.items()
        if k.startswith("p") and k[1:].isdigit() and v is not None
    }
    if "p50" not in m and m.get("median") is not None:
        pcts[50.0] = number(m["median"], f"{what}: {key}.median") * scale
    avg = m.get("avg")
    return Latency(
        mean_ms=None if avg is None else number(avg, f"{what}: {key}.avg") * scale, percentiles_ms=pcts
    )


def _avg(doc: Mapping[str, Any], key: str, what: str) -> float | None:
    m = _metric(doc, key, what)
    if m is None or m.get("avg") is None:
        return None
    return number(m["avg"], f"{what}: {key}.avg")


def _path(doc: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(k)
    return doc


def read_aiperf(doc: Mapping[str, Any], source: str) -> Observation:
    """An AIPerf ``profile_export_aiperf.json`` (`is_aiperf`)."""
    what = f"{source} (AIPerf profile export)"
    cfg = doc.get("input_config") or {}
    names = _path(cfg, "endpoint", "model_names")
    model = str(names[0])[:200] if isinstance(names, list) and names else None
    conc = _path(cfg, "loadgen", "concurrency")
    rate = _path(cfg, "loadgen", "request_rate")
    n = _avg(doc, "request_count", what) or _path(cfg, "loadgen", "request_count")
    isl = _avg(doc, "input_sequence_length", what) or _path(cfg, "input", "prompt", "input_tokens", "mean")
    osl = _avg(doc, "output_sequence_length", what) or _path(cfg, "input", "prompt", "output_tokens", "mean")
    setup = Setup(
        model=model,
        prompt_tokens=None if isl is None else number(isl, f"{what}: input_sequence_length", low=1),
        output_tokens=None if osl is None else number(osl, f"{what}: output_sequence_length", low=1),
        requests=None if n is None else count(n, f"{what}: request_count"),
        rate_rps=None if rate is None else number(rate, f"{what}: loadgen.request_rate", low=1e-6),
        concurrency=None if conc is None else max(1, count(conc, f"{what}: loadgen.concurrency")),
        burstiness=1.0 if rate is not None else None,
    )
    done = _avg(doc, "request_count", what)
    measured = Measured(
        ttft=_latency(doc, "time_to_first_token", what),
        tpot=_latency(doc, "inter_token_latency", what),
        e2e=_latency(doc, "request_latency", what),
        output_tok_s=_avg(doc, "output_token_throughput", what),
        request_rps=_avg(doc, "request_throughput", what),
        duration_s=_avg(doc, "benchmark_duration", what),
        completed=None if done is None else count(done, f"{what}: request_count"),
        failed=None
        if (e := _avg(doc, "error_request_count", what)) is None
        else count(e, f"{what}: error_request_count"),
    )
    notes = ("AIPerf's inter_token_latency is per request (E2E - TTFT) / (output - 1): compared as TPOT",)
    return Observation(format="aiperf-json", source=source, setup=setup, measured=measured, notes=notes)
