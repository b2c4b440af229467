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

import csv
import io
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.observe.observation import (
    MAX_VALUE,
    UNKNOWN,
    Latency,
    Measured,
    Observation,
    Rows,
    Setup,
    count,
    from_rows,
    number,
    series,
)

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


# --- per-request records: profile_export.jsonl ----------------------------------------------------

RECORD_KEYS = ("metadata", "metrics")
"""Keys of every line of AIPerf's ``profile_export.jsonl`` (``MetricRecordInfo``, with ``error``)."""


def is_record(doc: Any) -> bool:
    """True for one line of AIPerf's per-request export."""
    return isinstance(doc, dict) and all(isinstance(doc.get(k), dict) for k in RECORD_KEYS)


def _value(
    metrics: Mapping[str, Any], key: str, what: str, scale_to_ms: bool = False, high: float = MAX_VALUE
) -> float | None:
    m = metrics.get(key)
    if not isinstance(m, dict) or m.get("value") is None:
        return None
    v = number(m["value"], f"{what}: {key}", high=high)
    if scale_to_ms:
        unit = str(m.get("unit", "ms"))
        if unit not in _TO_MS:
            raise ScenarioError(f"{what}: {key}.unit: {unit!r} is not one of {', '.join(_TO_MS)}")
        v *= _TO_MS[unit]
    return v


def _record(doc: Mapping[str, Any], at: str) -> tuple[dict[str, float], np.ndarray | None]:
    """One successful record: send time (s), lengths, TTFT and latency (ms), and its gaps (s) if given."""
    m = doc["metrics"]
    start = doc["metadata"].get("request_start_ns")
    row = {
        "start": None
        if start is None
        else number(start, f"{at}: metadata.request_start_ns", high=1e20) / 1e9,
        "prompt": _value(m, "input_sequence_length", at, high=bounds.MAX_TOKENS_PER_REQUEST),
        "output": _value(m, "output_sequence_length", at, high=bounds.MAX_TOKENS_PER_REQUEST)
        or _value(m, "output_token_count", at, high=bounds.MAX_TOKENS_PER_REQUEST),
        "ttft": _value(m, "time_to_first_token", at, scale_to_ms=True),
        "e2e": _value(m, "request_latency", at, scale_to_ms=True),
    }
    missing = [k for k, v in row.items() if v is None]
    if missing:
        raise ScenarioError(f"{at}: lacks {', '.join(missing)} (a streaming LLM run's record has them)")
    icl = m.get("inter_chunk_latency")
    chunks = icl.get("value") if isinstance(icl, dict) else None
    gaps = (
        series(chunks, f"{at}: inter_chunk_latency", high=86_400_000.0) / 1000.0
        if isinstance(chunks, list)
        else None
    )
    return {k: float(v) for k, v in row.items() if v is not None}, gaps


def read_records(docs: list[Any], source: str) -> Observation:
    """AIPerf's ``profile_export.jsonl``: one record per request, with its send time; failed ones dropped.

    Schema from ai-dynamo/aiperf at db4f6397 (aiperf/common/models/record_models.py, ``MetricRecordInfo``:
    ``metadata.request_start_ns``, ``metrics.<tag>.value`` and ``.unit``, ``error``). The records
    name no model and no load setting: the send times are the load.
    """
    what = f"{source} (AIPerf profile_export.jsonl)"
    if len(docs) > bounds.MAX_REQUESTS:
        raise ScenarioError(f"{what}: {len(docs):,} records; the limit is {bounds.MAX_REQUESTS:,}")
    cols: dict[str, list[float]] = {k: [] for k in ("start", "prompt", "output", "ttft", "e2e")}
    gaps: list[np.ndarray] = []
    for i, doc in enumerate(docs):
        if not is_record(doc):
            raise ScenarioError(f"{what}: line {i + 1}: not a record with metadata and metrics")
        if doc.get("error") is not None:
            continue
        row, chunk_gaps = _record(doc, f"{what}: line {i + 1}")
        for k, v in row.items():
            cols[k].append(v)
        if chunk_gaps is not None:
            gaps.append(chunk_gaps)
    if not cols["start"]:
        raise ScenarioError(f"{what}: no request succeeded; nothing to replay")
    start = np.array(cols["start"])
    start -= start.min()
    last = float(start.max())
    rows = Rows(
        prompt_tokens=np.array(cols["prompt"]),
        output_tokens=np.array(cols["output"]),
        ttft_s=np.array(cols["ttft"]) / 1000.0,
        e2e_s=np.array(cols["e2e"]) / 1000.0,
        itl_s=np.concatenate(gaps) if gaps else np.zeros(0),
        start_s=start,
    )
    span = float((start + rows.e2e_s).max())
    n = len(start)
    setup = Setup(
        prompt_tokens=float(rows.prompt_tokens.mean()),
        output_tokens=float(rows.output_tokens.mean()),
        requests=n,
        rate_rps=n / last if last > 0 else None,
        all_at_once=last == 0,
        burstiness=None,
    )
    measured = Measured(
        ttft=from_rows(rows.ttft_s),
        tpot=from_rows(rows.tpot_s),
        itl=from_rows(rows.itl_s) if gaps else None,
        e2e=from_rows(rows.e2e_s),
        output_tok_s=float(rows.output_tokens.sum()) / span if span > 0 else None,
        request_rps=n / span if span > 0 else None,
        duration_s=span,
        completed=n,
        failed=len(docs) - n,
    )
    notes = (
        "AIPerf's records name no model and no load setting: the replay sends each request at its recorded "
        "send time (a closed loop's send times depend on the server's speed; replayed as they were)",
    )
    return Observation(
        format="aiperf-records-jsonl",
        source=source,
        setup=setup,
        measured=measured,
        rows=rows,
        unknown=("model", *UNKNOWN),
        notes=notes,
    )


# --- the aggregated CSV: profile_export_aiperf.csv --------------------------------------------------

CSV_HEAD = "Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std"
"""The request-metrics header of AIPerf's CSV (``STAT_KEYS`` of aiperf/common/constants.py at db4f6397)."""

_CSV_NAMES = {
    "Time to First Token": "time_to_first_token",
    "Inter Token Latency": "inter_token_latency",
    "Request Latency": "request_latency",
    "Output Token Throughput": "output_token_throughput",
    "Request Throughput": "request_throughput",
    "Request Count": "request_count",
    "Input Sequence Length": "input_sequence_length",
    "Output Sequence Length": "output_sequence_length",
    "Benchmark Duration": "benchmark_duration",
    "Error Request Count": "error_request_count",
}
_CSV_NAME = re.compile(r"^(?P<name>[A-Za-z0-9 ]+?)(?: \((?P<unit>[^)]+)\))?$")


def is_csv(text: str) -> bool:
    """True for AIPerf's aggregated CSV (its first line is `CSV_HEAD`)."""
    return text.lstrip().split("\n", 1)[0].strip() == CSV_HEAD


def read_csv(text: str, source: str) -> Observation:
    """AIPerf's ``profile_export_aiperf.csv`` (aiperf/exporters/csv_exporter.py at db4f6397): request
    metrics with a header of `CSV_HEAD` and one row per metric named ``Header (unit)``, then after a
    blank line ``Metric,Value`` rows of single values. It states no model and no load setting: the
    aggregated JSON beside it does; they are given with the deployment."""
    doc: dict[str, Any] = {}
    keys: list[str] = []
    for line_no, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or row[0] == "Metric":
            keys = [k.strip() for k in row[1:]] if row else keys
            continue
        m = _CSV_NAME.match(row[0].strip())
        tag = _CSV_NAMES.get(m.group("name")) if m else None
        if tag is None or m is None:
            continue  # a metric the replay does not use
        stats: dict[str, Any] = {"unit": m.group("unit") or "count"}
        for k, v in zip(keys, row[1:], strict=False):
            if v.strip():
                try:
                    stats[k if k != "Value" else "avg"] = float(v)
                except ValueError:
                    raise ScenarioError(
                        f"{source}: line {line_no}: {row[0]}: {v!r} is not a number"
                    ) from None
        doc[tag] = stats
    if not is_aiperf(doc):
        raise ScenarioError(f"{source}: an AIPerf CSV without Time to First Token and Request Latency rows")
    obs = read_aiperf(doc, source)
    return replace(obs, format="aiperf-csv", unknown=("model", "concurrency or request rate", *UNKNOWN))
