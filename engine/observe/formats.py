"""The benchmark formats the readers take (`engine.observe.detect`), named as their tools name them.

A module of its own, with no imports, so that the command line lists them without loading the readers.
"""

from __future__ import annotations

FORMATS = (
    "vllm bench serve --save-result JSON",
    "vllm bench serve printed result",
    "SGLang bench_serving --output-file JSONL",
    "SGLang bench_serving printed result",
    "AIPerf profile_export_aiperf.json",
    "AIPerf profile_export.jsonl (per-request records)",
    "AIPerf profile_export_aiperf.csv",
    "Prometheus scrape of a vLLM or SGLang server's /metrics",
)
"""The formats `read_text` accepts, for messages and help texts."""

NAMED_STACKS = {
    "vllm-bench": "vllm",
    "sglang-bench": "sglang",
    "prometheus-vllm": "vllm",
    "prometheus-sglang": "sglang",
}
"""The serving stack a benchmark format names, by the start of its format's name (AIPerf's measure any
server, so name none)."""


def named_stack(format_name: str) -> str | None:
    """The serving stack a file of `format_name` ran under, where its format says (None: it does not)."""
    return next((s for start, s in NAMED_STACKS.items() if format_name.startswith(start)), None)
