"""Readers for the serving benchmarks of vLLM (`vllm bench serve`) and SGLang (`bench_serving`).

Schemas, copied from the tools' source (tests/observe/fixtures/README.md names each fixture's):

- vLLM ``--save-result`` JSON (vllm-project/vllm, vllm/benchmarks/serve.py at def9ce85):
  ``model_id``, ``num_prompts``, ``request_rate`` (a number or ``"inf"``), ``burstiness``,
  ``max_concurrency``, ``duration``, ``completed``, ``failed``, ``total_input_tokens``,
  ``total_output_tokens``, ``request_throughput``, ``output_throughput``, and per metric (ttft,
  tpot, itl, e2el) ``mean_<m>_ms``, ``median_<m>_ms``, ``std_<m>_ms``, ``p<P>_<m>_ms``. With
  ``--save-detailed``: ``input_lens``, ``output_lens``, ``ttfts`` (s), ``itls`` (a list of
  seconds per request) and ``errors`` ("" when the request succeeded), one entry per request;
  newer versions add ``start_times`` (each request's send time on the client's clock), which a
  replay at a request rate sends at as they were.
- SGLang ``--output-file`` JSONL (sgl-project/sglang, python/sglang/bench_serving.py at 0033168f):
  one JSON object a line (each run appends one): ``backend``, ``dataset_name``, ``request_rate``,
  ``max_concurrency``, ``random_input_len``, ``random_output_len``, ``duration``, ``completed``,
  the same totals and throughputs, ``mean/median/std/p99_e2e_latency_ms``, TTFT and TPOT means,
  medians and p99, ITL with p95 and p99; ``--output-details`` adds the per-request lists.
- Both tools' printed "Serving Benchmark Result" block: ``{:<40} {:<10}`` lines of a label and
  its value, between a line of ``=`` and a closing one.

A JSON file of several records (vLLM's ``--append-result``, SGLang's appended runs) is read at its
last record, and says so in the notes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from engine.core import bounds, safeparse
from engine.core.errors import ScenarioError
from engine.observe.observation import (
    MAX_ITL_VALUES,
    UNKNOWN,
    Latency,
    Measured,
    Observation,
    Rows,
    Setup,
    check_rows,
    count,
    from_rows,
    latency_ms,
    number,
    optional,
    series,
)

VLLM_KEYS = ("model_id", "num_prompts", "duration", "completed")
"""Keys every `vllm bench serve --save-result` JSON has (and SGLang's does not: model_id, num_prompts)."""
SGLANG_KEYS = ("backend", "dataset_name", "duration", "completed", "mean_e2e_latency_ms")
"""Keys every SGLang `bench_serving` JSONL record has."""

_METRICS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2e", "e2e_latency": "e2e"}
_STAT = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el|e2e_latency)_ms$")


def _latencies(doc: Mapping[str, Any], what: str) -> dict[str, Latency]:
    """The ``<stat>_<metric>_ms`` keys of a result as `Latency` per metric (ttft, tpot, itl, e2e)."""
    means: dict[str, float] = {}
    pcts: dict[str, dict[float, float]] = {}
    for key, value in doc.items():
        m = _STAT.match(key)
        if m is None or value is None:
            continue
        stat, metric = m.group(1), _METRICS[m.group(2)]
        v = number(value, f"{what}: {key}")
        if stat == "mean":
            means[metric] = v
        elif stat == "median":
            pcts.setdefault(metric, {})[50.0] = v
        elif stat != "std":
            pcts.setdefault(metric, {})[float(stat[1:])] = v
    out: dict[str, Latency] = {}
    for metric in set(means) | set(pcts):
        lat = latency_ms(means.get(metric), pcts.get(metric, {}))
        if lat is not None:
            out[metric] = lat
    return out


def _rate(value: Any, what: str) -> tuple[float | None, bool]:
    """(rate, all at once) of a ``request_rate`` (a number, or "inf" / Infinity: every request at t = 0)."""
    if value is None:
        return None, False
    if value == "inf" or (isinstance(value, float) and value == float("inf")):
        return None, True
    return number(value, f"{what}: request_rate", low=1e-6), False


def _rows(doc: Mapping[str, Any], what: str) -> Rows | None:
    """Per-request rows of a detailed result (failed requests dropped), or None without them."""
    keys = ("input_lens", "output_lens", "ttfts", "itls")
    if not all(k in doc for k in keys):
        return None
    lists = {k: doc[k] for k in keys}
    for k, v in lists.items():
        if not isinstance(v, list):
            raise ScenarioError(f"{what}: {k}: expected a list, got {type(v).__name__}")
    errors = doc.get("errors")
    if isinstance(errors, list):
        lists["errors"] = errors
    starts = doc.get("start_times")  # each request's send time (perf_counter s), in newer vLLM versions
    if starts is not None:
        if not isinstance(starts, list):
            raise ScenarioError(f"{what}: start_times: expected a list, got {type(starts).__name__}")
        lists["start_times"] = starts
    n = check_rows(what, lists)
    prompt = series(doc["input_lens"], f"{what}: input_lens", high=bounds.MAX_TOKENS_PER_REQUEST)
    output = series(doc["output_lens"], f"{what}: output_lens", high=bounds.MAX_TOKENS_PER_REQUEST)
    ttft = series(doc["ttfts"], f"{what}: ttfts", high=86_400.0)
    if sum(len(x) if isinstance(x, list) else 0 for x in doc["itls"]) > MAX_ITL_VALUES:
        raise ScenarioError(f"{what}: itls: more than {MAX_ITL_VALUES:,} inter-token latencies")
    itls = [series(x, f"{what}: itls[{i}]", high=86_400.0) for i, x in enumerate(doc["itls"])]
    ok = np.array(
        [(not errors[i]) if isinstance(errors, list) else output[i] > 0 for i in range(n)], dtype=bool
    )
    if not ok.any():
        raise ScenarioError(f"{what}: no request succeeded; nothing to replay")
    e2e = ttft + np.array([x.sum() for x in itls])
    kept = [x for x, good in zip(itls, ok, strict=True) if good]
    start = None
    if starts is not None:
        sent = series(starts, f"{what}: start_times")[ok]
        start = sent - sent.min()
        if start.max() > bounds.MAX_DURATION_S:
            raise ScenarioError(
                f"{what}: start_times: the requests were sent over {start.max():,.0f} s; a replay's window is "
                f"at most {bounds.MAX_DURATION_S:,.0f} s"
            )
    return Rows(
        prompt_tokens=prompt[ok],
        output_tokens=output[ok],
        ttft_s=ttft[ok],
        e2e_s=e2e[ok],
        itl_s=np.concatenate(kept) if kept else np.zeros(0),
        start_s=start,
    )


def _measured(doc: Mapping[str, Any], what: str, rows: Rows | None) -> Measured:
    lat = _latencies(doc, what)
    if rows is not None:  # the rows give every percentile; the file's own figures stay where stated
        derived = {
            "ttft": from_rows(rows.ttft_s),
            "tpot": from_rows(rows.tpot_s),
            "e2e": from_rows(rows.e2e_s),
        }
        derived["itl"] = from_rows(rows.itl_s)
        for k, v in derived.items():
            if v is not None:
                stated = lat.get(k)
                lat[k] = Latency(
                    mean_ms=stated.mean_ms if stated and stated.mean_ms is not None else v.mean_ms,
                    percentiles_ms={**v.percentiles_ms, **(stated.percentiles_ms if stated else {})},
                )
    completed = doc.get("completed")
    duration = optional(doc, "duration", what, high=30 * 86_400.0)
    if duration == 0 and completed:  # (replayed with no error: a review)
        raise ScenarioError(
            f"{what}: duration: 0 s beside {completed} completed requests; a benchmark that completed "
            "requests took time: the allowed range is above 0 to 2,592,000 s"
        )
    return Measured(
        ttft=lat.get("ttft"),
        tpot=lat.get("tpot"),
        itl=lat.get("itl"),
        e2e=lat.get("e2e"),
        output_tok_s=optional(doc, "output_throughput", what),
        request_rps=optional(doc, "request_throughput", what),
        duration_s=duration,
        completed=None if completed is None else count(completed, f"{what}: completed"),
        failed=None if doc.get("failed") is None else count(doc["failed"], f"{what}: failed"),
    )


def _mean_lengths(doc: Mapping[str, Any], what: str, rows: Rows | None) -> tuple[float | None, float | None]:
    if rows is not None:
        return float(rows.prompt_tokens.mean()), float(rows.output_tokens.mean())
    done = optional(doc, "completed", what)
    if not done:
        return None, None
    tin, tout = optional(doc, "total_input_tokens", what), optional(doc, "total_output_tokens", what)
    return (tin / done if tin is not None else None), (tout / done if tout is not None else None)


def _no_ramp(strategy: Any, start: Any, end: Any, what: str) -> None:
    """Refuse a run whose request rate ramped (`vllm bench serve --ramp-up-strategy`): its file says
    ``request_rate: inf`` beside the ramp, and replayed as that it would send everything at t = 0."""
    if strategy in (None, "", "None"):
        return
    raise ScenarioError(
        f"{what}: ramp_up_strategy: a {str(strategy)[:20]} ramp of the request rate (from {start} to {end} "
        "req/s) is not replayed: only a fixed --request-rate, all prompts at once, or a "
        "--max-concurrency; rerun the benchmark at a fixed rate"
    )


def read_vllm(doc: Mapping[str, Any], source: str, notes: tuple[str, ...] = ()) -> Observation:
    """A `vllm bench serve --save-result` JSON document (`VLLM_KEYS`)."""
    what = f"{source} (vllm bench serve JSON)"
    _no_ramp(doc.get("ramp_up_strategy"), doc.get("ramp_up_start_rps"), doc.get("ramp_up_end_rps"), what)
    rows = _rows(doc, what)
    rate, at_once = _rate(doc.get("request_rate"), what)
    prompt, output = _mean_lengths(doc, what, rows)
    conc = doc.get("max_concurrency")
    setup = Setup(
        model=str(doc["model_id"])[:200],
        prompt_tokens=prompt,
        output_tokens=output,
        requests=count(doc["num_prompts"], f"{what}: num_prompts"),
        rate_rps=rate,
        all_at_once=at_once,
        concurrency=_limit(conc, what),
        burstiness=optional(doc, "burstiness", what, low=1e-3, high=1e3),
    )
    return Observation(
        format="vllm-bench-json",
        source=source,
        setup=setup,
        measured=_measured(doc, what, rows),
        rows=rows,
        notes=notes,
    )


def _limit(conc: Any, what: str) -> int | None:
    """A benchmark's `max_concurrency` as a client limit: None (no limit) for null or 0, as vLLM's and
    SGLang's benchmarks read 0 (`Semaphore(max_concurrency) if max_concurrency else None`); it was made a
    limit of one client, and the replay read 43% below the measured rate with nothing said (a hostile
    review)."""
    if conc is None:
        return None
    n = count(conc, f"{what}: max_concurrency")
    return n or None


def read_sglang(doc: Mapping[str, Any], source: str, notes: tuple[str, ...] = ()) -> Observation:
    """An SGLang `bench_serving --output-file` JSONL record (`SGLANG_KEYS`); it does not name the model."""
    what = f"{source} (sglang bench_serving JSONL)"
    rows = _rows(doc, what)
    rate, at_once = _rate(doc.get("request_rate"), what)
    prompt, output = _mean_lengths(doc, what, rows)
    conc = doc.get("max_concurrency")
    setup = Setup(
        model=None,
        prompt_tokens=prompt,
        output_tokens=output,
        requests=count(doc["completed"], f"{what}: completed"),
        rate_rps=rate,
        all_at_once=at_once,
        concurrency=_limit(conc, what),
        burstiness=1.0,  # bench_serving draws exponential gaps
    )
    return Observation(
        format="sglang-bench-jsonl",
        source=source,
        setup=setup,
        measured=_measured(doc, what, rows),
        rows=rows,
        unknown=("model", *UNKNOWN),
        notes=(*notes, "SGLang's record does not name the model: give it"),
    )


def records(text: str, source: str, max_chars: int) -> list[Any]:
    """The JSON documents of a file: one document, or one a line (JSONL, appended runs)."""
    stripped = text.strip()
    if "\n" in stripped and not stripped.startswith("["):
        lines = [ln for ln in stripped.splitlines() if ln.strip()]
        if len(lines) > 1 and all(ln.lstrip().startswith("{") for ln in lines):
            return [safeparse.loads_json(ln, f"{source}: line {i + 1}") for i, ln in enumerate(lines)]
    return [safeparse.loads_json(text, source, max_chars=max_chars)]


# --- the printed result blocks -----------------------------------------------------------------

BLOCK_HEAD = " Serving Benchmark Result "
_LINE = re.compile(r"^(?P<label>[A-Za-z0-9 ()/._-]+):\s+(?P<value>\S+)\s*$")
_PRINTED_STAT = re.compile(r"^(Mean|Median|P(\d+(?:\.\d+)?)) (TTFT|TPOT|ITL|E2EL|E2E Latency) \(ms\)$")
_PRINTED_METRIC = {"TTFT": "ttft", "TPOT": "tpot", "ITL": "itl", "E2EL": "e2e", "E2E Latency": "e2e"}
_NAMESPACE = re.compile(r"\b(model|num_prompts|burstiness)=('(?P<s>[^']{1,200})'|(?P<n>[0-9.]+))")
_TOOL = re.compile(r"vllm bench serve|bench_serving|benchmark_serving")
_FLAG = re.compile(
    r"--(model|num-prompts|burstiness|request-rate|max-concurrency|ramp-up-strategy|ramp-up-start-rps"
    r"|ramp-up-end-rps)(?:=|\s+)"
    r"(?P<v>'[^']{1,200}'|\"[^\"]{1,200}\"|[^\s'\"]{1,200})"
)


def _arguments(head: str) -> dict[str, str]:
    """The setup stated before a printed block: the ``--model``, ``--num-prompts``, ``--burstiness``,
    ``--request-rate`` and ``--max-concurrency`` of the benchmark command pasted above it (lines
    continued with a backslash joined), overridden by the ``Namespace(...)`` the tool echoes."""
    out: dict[str, str] = {}
    for line in re.sub(r"\\\r?\n", " ", head).splitlines():
        if _TOOL.search(line) and not line.lstrip().startswith("#"):
            out.update(
                {m.group(1).replace("-", "_"): m.group("v").strip("'\"") for m in _FLAG.finditer(line)}
            )
    out.update({m.group(1): m.group("s") or m.group("n") for m in _NAMESPACE.finditer(head)})
    return out


def _argument(args: dict[str, str], key: str, what: str, **kw: float) -> float | None:
    """A numeric argument of the command (None when absent or ``inf``), checked by `number`."""
    v = args.get(key)
    if v is None or v == "inf":
        return None
    try:
        return number(float(v), f"{what}: --{key.replace('_', '-')}", **kw)
    except ValueError:
        raise ScenarioError(f"{what}: --{key.replace('_', '-')}: {v!r} is not a number") from None


def printed_block(text: str, source: str) -> dict[str, str]:
    """The label -> value lines of the last "Serving Benchmark Result" block in `text`."""
    start = text.rfind(BLOCK_HEAD)
    if start < 0:
        raise ScenarioError(f"{source}: no '{BLOCK_HEAD.strip()}' block")
    out: dict[str, str] = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("=" * 10):
            break
        m = _LINE.match(line.strip())
        if m:
            out[m.group("label").strip()] = m.group("value")
    if not out:
        raise ScenarioError(f"{source}: the '{BLOCK_HEAD.strip()}' block holds no 'label: value' lines")
    return out


def read_printed(text: str, source: str) -> Observation:
    """The result block either tool prints (SGLang's starts with 'Backend:'), with the model and
    prompt count from the arguments it echoes before the run (``Namespace(... model='...' ...)``) or
    the benchmark command pasted above the block (`_arguments`)."""
    block = printed_block(text, source)
    sglang = "Backend" in block
    what = f"{source} ({'sglang' if sglang else 'vllm'} printed result)"

    def num(label: str) -> float | None:
        v = block.get(label)
        if v is None or v in ("not", "inf"):
            return None
        try:
            return number(float(v), f"{what}: {label}")
        except ValueError:
            raise ScenarioError(f"{what}: {label}: {v!r} is not a number") from None

    lat: dict[str, dict[str, Any]] = {}
    for label, _value in block.items():
        m = _PRINTED_STAT.match(label)
        if m is None:
            continue
        slot = lat.setdefault(_PRINTED_METRIC[m.group(3)], {"mean": None, "p": {}})
        v = num(label)
        if m.group(1) == "Mean":
            slot["mean"] = v
        elif v is not None:
            slot["p"][50.0 if m.group(1) == "Median" else float(m.group(2))] = v
    args = _arguments(text[: text.rfind(BLOCK_HEAD)])
    _no_ramp(args.get("ramp_up_strategy"), args.get("ramp_up_start_rps"), args.get("ramp_up_end_rps"), what)
    done = num("Successful requests")
    rate_label = "Traffic request rate" if sglang else "Request rate configured (RPS)"
    rate = num(rate_label) if rate_label in block else _argument(args, "request_rate", what, low=1e-6)
    conc = num("Max request concurrency" if sglang else "Maximum request concurrency")
    if conc is None:
        conc = _argument(args, "max_concurrency", what, high=bounds.MAX_CLIENTS)
    prompts = _argument(args, "num_prompts", what, high=bounds.MAX_REQUESTS)
    burst = _argument(args, "burstiness", what, low=1e-3, high=1e3)
    tin, tout = num("Total input tokens"), num("Total generated tokens")
    latencies = {k: latency_ms(v["mean"], v["p"]) for k, v in lat.items()}
    setup = Setup(
        model=args.get("model"),
        prompt_tokens=tin / done if tin is not None and done else None,
        output_tokens=tout / done if tout is not None and done else None,
        requests=int(prompts) if prompts else (int(done) if done else None),
        rate_rps=rate,
        all_at_once=rate is None,
        concurrency=int(conc) if conc else None,
        burstiness=burst or 1.0,
    )
    measured = Measured(
        ttft=latencies.get("ttft"),
        tpot=latencies.get("tpot"),
        itl=latencies.get("itl"),
        e2e=latencies.get("e2e"),
        output_tok_s=num("Output token throughput (tok/s)"),
        request_rps=num("Request throughput (req/s)"),
        duration_s=num("Benchmark duration (s)"),
        completed=int(done) if done is not None else None,
        failed=int(f) if (f := num("Failed requests")) is not None else None,
    )
    return Observation(
        format="sglang-bench-printed" if sglang else "vllm-bench-printed",
        source=source,
        setup=setup,
        measured=measured,
        notes=() if setup.model else ("the printed block does not name the model: give it",),
    )
