"""Which benchmark format a file is in, and reading it: one front door for every reader.

A file is refused, with one line naming what it lacks, unless it is exactly one of: a
`vllm bench serve` JSON, an SGLang `bench_serving` JSONL record, an AIPerf profile export JSON,
either tool's printed result block, AIPerf's per-request records or CSV, or a Prometheus scrape of a
vLLM or SGLang server. It is UTF-8 text of at most `bounds.MAX_TRACE_BYTES`, without NUL characters,
nested at most `safeparse.MAX_NESTING`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.observe import aiperf, bench, prometheus
from engine.observe.formats import FORMATS
from engine.observe.observation import Observation


def _text(data: bytes | str, source: str) -> str:
    if len(data) > bounds.MAX_TRACE_BYTES:
        raise ScenarioError(f"{source}: larger than {bounds.MAX_TRACE_BYTES:,} bytes")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ScenarioError(f"{source}: not UTF-8 text; a benchmark result is a text file") from None
    text = data.removeprefix("\ufeff")
    if "\0" in text:
        raise ScenarioError(f"{source}: holds a NUL character; a benchmark result is a text file")
    if not text.strip():
        raise ScenarioError(f"{source}: empty")
    return text


def _json_doc(doc: Any, source: str, notes: tuple[str, ...]) -> Observation:
    if not isinstance(doc, dict):
        raise ScenarioError(f"{source}: a JSON {type(doc).__name__}, not a benchmark result object")
    if aiperf.is_aiperf(doc):
        return aiperf.read_aiperf(doc, source)
    if all(k in doc for k in bench.VLLM_KEYS):
        return bench.read_vllm(doc, source, notes)
    if all(k in doc for k in bench.SGLANG_KEYS):
        return bench.read_sglang(doc, source, notes)
    if "duration" in doc and "completed" in doc:
        missing = [k for k in bench.VLLM_KEYS if k not in doc]
        raise ScenarioError(
            f"{source}: looks like a serving benchmark result but lacks {', '.join(missing)} "
            "(vllm bench serve) and mean_e2e_latency_ms/dataset_name (SGLang bench_serving)"
        )
    raise ScenarioError(
        f"{source}: JSON that is none of: {FORMATS[0]} (keys {', '.join(bench.VLLM_KEYS)}), "
        f"{FORMATS[2]}, {FORMATS[4]} (keys {', '.join(aiperf.AIPERF_KEYS)} with a unit)"
    )


def read_text(
    data: bytes | str, source: str, *, earlier: bytes | str | None = None, window_s: float | None = None
) -> Observation:
    """A benchmark file's content read by the reader of its format (`FORMATS`).

    `earlier` and `window_s`: a Prometheus scrape taken `window_s` before this one (rates over the window).
    """
    text = _text(data, source)
    if prometheus.is_scrape(text):
        before = None if earlier is None else _text(earlier, f"{source} (earlier scrape)")
        return prometheus.read_scrapes(text, source, before, window_s)
    if earlier is not None:
        raise ScenarioError(f"{source}: an earlier scrape is only for Prometheus metrics")
    if aiperf.is_csv(text):
        return aiperf.read_csv(text, source)
    head = text.lstrip()[:1]
    if head in ("{", "["):
        docs = bench.records(text, source, bounds.MAX_TRACE_BYTES)
        if aiperf.is_record(docs[0]):
            return aiperf.read_records(docs, source)
        notes = (f"{len(docs)} results in the file: the last is read",) if len(docs) > 1 else ()
        return _json_doc(docs[-1], source, notes)
    if bench.BLOCK_HEAD in text:
        return bench.read_printed(text, source)
    raise ScenarioError(f"{source}: not a benchmark result; accepted: {'; '.join(FORMATS)}")


def read_path(path: str | Path, **kw: Any) -> Observation:
    """`read_text` of a file on disk (at most `bounds.MAX_TRACE_BYTES` are read)."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = fh.read(bounds.MAX_TRACE_BYTES + 1)
    except OSError as exc:
        raise ScenarioError(f"{p.name}: cannot read ({exc.strerror or type(exc).__name__})") from None
    return read_text(data, p.name, **kw)


def read_pair(
    first: bytes | str, first_name: str, second: bytes | str, second_name: str, window_s: float
) -> Observation:
    """Two Prometheus scrapes of one server taken `window_s` apart, in either order: what happened
    between them (the later is the one that has seen more requests end)."""
    a, b = _text(first, first_name), _text(second, second_name)
    if not (prometheus.is_scrape(a) and prometheus.is_scrape(b)):
        raise ScenarioError(
            f"{first_name}, {second_name}: a pair over a window must be two Prometheus scrapes"
        )
    if prometheus.later_first(a, b, first_name, second_name):
        return prometheus.read_scrapes(a, first_name, b, window_s)
    return prometheus.read_scrapes(b, second_name, a, window_s)


def is_scrape(data: bytes | str) -> bool:
    """True for the text of a Prometheus scrape of a vLLM or SGLang server (False for anything else)."""
    try:
        return prometheus.is_scrape(_text(data, "file"))
    except ScenarioError:
        return False
