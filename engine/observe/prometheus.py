"""Reader for a Prometheus text scrape of a vLLM or SGLang server's ``/metrics``, or two over a window.

Metric names, copied from vllm-project/vllm at 005a810b (vllm/v1/metrics/loggers.py,
``PrometheusStatLogger``, labelled ``model_name`` and ``engine``) and sgl-project/sglang at 93d04878
(python/sglang/srt/metrics/collector.py, ``SchedulerMetricsCollector`` and ``TokenizerMetricsCollector``):

- histograms (``_bucket{le=...}``, ``_sum``, ``_count``, seconds): TTFT (``vllm:`` and
  ``sglang:time_to_first_token_seconds``), the gap between tokens (``vllm:time_per_output_token_seconds``
  or ``inter_token_latency_seconds``, ``sglang:inter_token_latency_seconds``: per token, the ITL), E2E
  (``*:e2e_request_latency_seconds``), queueing (``vllm:request_queue_time_seconds``,
  ``sglang:queue_time_seconds``);
- gauges: requests running (``vllm:num_requests_running``, ``sglang:num_running_reqs``) and waiting
  (``vllm:num_requests_waiting``, ``sglang:num_queue_reqs``), the KV cache in use from 0 to 1
  (``vllm:kv_cache_usage_perc``, older ``vllm:gpu_cache_usage_perc``, ``sglang:token_usage``);
- counters: ``*:prompt_tokens_total``, ``*:generation_tokens_total``.

One scrape holds the histograms since the server started; two, taken `window_s` apart, give what
happened between them (the later minus the earlier) and the rates: requests ended per second,
output tokens per second. Series of several engines (data parallel) are added up. Percentiles are
interpolated inside the histogram's buckets, as PromQL's ``histogram_quantile`` does, so they are
only as fine as the buckets.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from engine.core.errors import ScenarioError
from engine.observe.observation import Latency, Measured, Observation, Setup, number

MAX_SERIES = 200_000
"""Most sample lines accepted in one scrape."""

SERVERS = ("vllm", "sglang")
"""Servers whose metrics are read: each metric's name starts with the server's and a colon."""

HISTOGRAMS = {
    "ttft": ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"),
    "itl": (
        "vllm:time_per_output_token_seconds",
        "vllm:inter_token_latency_seconds",
        "sglang:inter_token_latency_seconds",
    ),
    "e2e": ("vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds"),
    "queue": ("vllm:request_queue_time_seconds", "sglang:queue_time_seconds"),
}
GAUGES = {
    "running": ("vllm:num_requests_running", "sglang:num_running_reqs"),
    "waiting": ("vllm:num_requests_waiting", "sglang:num_queue_reqs"),
    "kv_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"),
}
COUNTERS = {
    "prompt": ("vllm:prompt_tokens_total", "sglang:prompt_tokens_total"),
    "generation": ("vllm:generation_tokens_total", "sglang:generation_tokens_total"),
}

_SAMPLE = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)(?:\s+(?P<ts>-?\d+))?\s*$"
)
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Scrape:
    """One scrape, summed over label sets: each sample name's value; histogram buckets by name and
    ``le``; the model names seen; the latest sample timestamp (ms), where samples carry one."""

    values: dict[str, float]
    buckets: dict[str, dict[float, float]]
    models: tuple[str, ...]
    timestamp_ms: int | None


def is_scrape(text: str) -> bool:
    """True for Prometheus text that holds vLLM's or SGLang's metrics."""
    return server_of(text) is not None


def server_of(text: str) -> str | None:
    """'vllm' or 'sglang': the server whose metrics a scrape holds (None: neither)."""
    m = re.search(r"^# (?:TYPE|HELP) (vllm|sglang):", text[:200_000], re.M)
    return m.group(1) if m else None


def parse(text: str, source: str) -> Scrape:
    """A scrape's samples, summed over label sets (engines); one-line errors naming the line."""
    values: dict[str, float] = defaultdict(float)
    buckets: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
    models: set[str] = set()
    stamp: int | None = None
    n = 0
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        n += 1
        if n > MAX_SERIES:
            raise ScenarioError(f"{source}: more than {MAX_SERIES:,} samples in one scrape")
        m = _SAMPLE.match(line)
        if m is None:
            raise ScenarioError(f"{source}: line {line_no}: not a Prometheus sample ('name{{labels}} value')")
        name = m.group("name")
        if not name.startswith(("vllm:", "sglang:")):
            continue
        try:
            value = float(m.group("value"))
        except ValueError:
            raise ScenarioError(f"{source}: line {line_no}: {m.group('value')!r} is not a number") from None
        if math.isnan(value) or value < 0:
            raise ScenarioError(f"{source}: line {line_no}: {name} is {value}; counts and times are >= 0")
        labels = dict(_LABEL.findall(m.group("labels") or ""))
        if "model_name" in labels:
            models.add(labels["model_name"][:200])
        if m.group("ts"):
            stamp = max(stamp or 0, int(m.group("ts")))
        if name.endswith("_bucket"):
            le = labels.get("le")
            if le is None:
                raise ScenarioError(f"{source}: line {line_no}: a histogram bucket without 'le'")
            bound = math.inf if le == "+Inf" else number(float(le), f"{source}: line {line_no}: le")
            buckets[name[: -len("_bucket")]][bound] += value
        elif math.isfinite(value):
            values[name] += value
    if n == 0:
        raise ScenarioError(f"{source}: no samples; expected the text of a server's /metrics")
    return Scrape(dict(values), {k: dict(v) for k, v in buckets.items()}, tuple(sorted(models)), stamp)


def quantile(q: float, cumulative: dict[float, float]) -> float | None:
    """The `q` quantile of a histogram's cumulative buckets (upper bound -> count), interpolated
    linearly inside the bucket it falls in (``histogram_quantile``); None without observations."""
    bounds_ = sorted(cumulative)
    total = cumulative[bounds_[-1]] if bounds_ else 0.0
    if total <= 0:
        return None
    rank = q * total
    prev_bound, prev_count = 0.0, 0.0
    for b in bounds_:
        c = cumulative[b]
        if c >= rank:
            if math.isinf(b):
                return prev_bound  # the highest finite bucket's bound, as histogram_quantile does
            width = c - prev_count
            return prev_bound + (b - prev_bound) * ((rank - prev_count) / width if width > 0 else 1.0)
        prev_bound, prev_count = b, c
    return prev_bound


def _first(names: tuple[str, ...], have: Mapping[str, object]) -> str | None:
    return next((n for n in names if n in have), None)


def _latency(
    later: Scrape, earlier: Scrape | None, names: tuple[str, ...], source: str
) -> tuple[Latency | None, float]:
    """A histogram's mean and p50/p90/p99 (ms) over the window, and its observation count."""
    name = _first(names, later.buckets)
    if name is None:
        return None, 0.0
    cum = dict(later.buckets[name])
    s, c = later.values.get(f"{name}_sum", 0.0), later.values.get(f"{name}_count", 0.0)
    if earlier is not None:
        before = earlier.buckets.get(name, {})
        cum = {b: v - before.get(b, 0.0) for b, v in cum.items()}
        s -= earlier.values.get(f"{name}_sum", 0.0)
        c -= earlier.values.get(f"{name}_count", 0.0)
        if c < 0 or any(v < -1e-9 for v in cum.values()):
            raise ScenarioError(
                f"{source}: {name} went down between the scrapes (a server restart, or the order swapped)"
            )
    if c <= 0:
        return None, 0.0
    pcts = {p: v * 1000.0 for p in (50.0, 90.0, 99.0) if (v := quantile(p / 100.0, cum)) is not None}
    return Latency(mean_ms=s / c * 1000.0, percentiles_ms=pcts), c


def read_scrapes(
    later_text: str, source: str, earlier_text: str | None = None, window_s: float | None = None
) -> Observation:
    """One scrape (since the server started) or two taken `window_s` apart (what happened between)."""
    later = parse(later_text, source)
    earlier = parse(earlier_text, f"{source} (earlier scrape)") if earlier_text is not None else None
    if earlier is not None and window_s is None and later.timestamp_ms and earlier.timestamp_ms:
        window_s = (later.timestamp_ms - earlier.timestamp_ms) / 1000.0
    if window_s is not None:
        window_s = number(window_s, f"{source}: window_s", low=1e-3, high=30 * 86_400.0)
    lat = {k: _latency(later, earlier, names, source) for k, names in HISTOGRAMS.items()}
    ended = lat["e2e"][1]

    def delta(name: str) -> float | None:
        if name not in later.values:
            return None
        d = later.values[name] - (earlier.values.get(name, 0.0) if earlier else 0.0)
        if d < 0:
            raise ScenarioError(f"{source}: {name} went down between the scrapes")
        return d

    gen_name, prompt_name = (_first(COUNTERS[k], later.values) for k in ("generation", "prompt"))
    gen = delta(gen_name) if gen_name else None
    prompt = delta(prompt_name) if prompt_name else None
    rate = window_s is not None and earlier is not None
    gauges = {k: later.values.get(n) for k, names in GAUGES.items() if (n := _first(names, later.values))}
    setup = Setup(
        model=later.models[0] if len(later.models) == 1 else None,
        prompt_tokens=prompt / ended if prompt is not None and ended else None,
        output_tokens=gen / ended if gen is not None and ended else None,
        requests=int(ended) if ended else None,
        rate_rps=ended / window_s if rate and window_s else None,
        burstiness=None,
    )
    measured = Measured(
        ttft=lat["ttft"][0],
        itl=lat["itl"][0],
        e2e=lat["e2e"][0],
        queue=lat["queue"][0],
        output_tok_s=gen / window_s if rate and gen is not None and window_s else None,
        request_rps=ended / window_s if rate and window_s else None,
        duration_s=window_s if rate else None,
        completed=int(ended) if ended else None,
        running=gauges.get("running"),
        waiting=gauges.get("waiting"),
        kv_usage=gauges.get("kv_usage"),
    )
    notes = [
        "a server's metrics state no request rate pattern or concurrency: the replay sends the "
        "window's requests as a Poisson stream at their rate",
        # (a p50 ITL of 5.01 ms read as measured where the 5 ms bucket edge set it: a review)
        "the measured p50, p90 and p99 are interpolated inside the histograms' buckets (as PromQL's "
        "histogram_quantile does): only as fine as the bucket edges",
    ]
    if earlier is None:
        notes.append(
            "one scrape: figures since the server started, no rates (give two scrapes and the window)"
        )
    return Observation(
        format=f"prometheus-{server_of(later_text)}",
        source=source,
        setup=setup,
        measured=measured,
        notes=tuple(notes),
    )


def later_first(a: str, b: str, a_name: str, b_name: str) -> bool:
    """True when scrape `a` was taken after `b`: its histograms have counted more observations."""

    def seen(text: str, name: str) -> float:
        return sum(v for k, v in parse(text, name).values.items() if k.endswith("_count"))

    return seen(a, a_name) > seen(b, b_name)
