"""The shipped reference rows as observations: one way in for measurements.

data/reference/calibration-moe.csv and calibration-a100-ascend.csv hold, among other rows, result
blocks of `vllm bench serve` (GPUStack's Performance Lab) and SGLang's `bench_serving` (the SGLang
cookbook), each block copied as nine rows of one figure each, all rows of a block naming it in
their ``source`` ("..., result block at line 90"). `block_observation` turns one block's rows
back into the `Observation` the printed-block reader (`engine.observe.bench.read_printed`) gives
for the block itself, so a figure reaches the engine the same way whether a user uploads the
block or the project ships its rows; tests/observe/test_shipped.py holds the two to each other.

What the rows say, in their own words:

- figures: ``metric`` (``output_tokens_per_s``, ``request_throughput``, ``mean_ttft_ms``,
  ``median_ttft_ms``, ``p99_ttft_ms``, ``mean_tpot_ms``, ``median_tpot_ms``, ``median_itl_ms``,
  ``mean_e2e_latency_ms``; ``total_tokens_per_s`` is input plus output, not a figure the
  `Observation` keeps) and ``value``;
- totals, in ``notes``: "totals: N requests, I input / O generated tokens, duration D s" (the mean
  lengths are I / N and O / N, as the reader divides the block's totals);
- load, in ``rate``: "rate inf, N [successful] prompts at once" (every request at t = 0) or
  "max-concurrency C (N prompts)".

The reference replay (engine.calibration.reference_gpustack, reference_moe) does not build its
points through this: it sits below engine.observe and judges each row with what an Observation
does not carry (the stack's version defaults, the parallel layout, the reasons to set a row aside);
docs/calibration.md, "One way in", says so.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from engine.core import datafiles
from engine.core.errors import ScenarioError
from engine.observe.observation import Latency, Measured, Observation, Setup, count, number

BLOCK_FILES = ("calibration-moe.csv", "calibration-a100-ascend.csv")
"""The shipped files whose rows include result blocks."""

_TOTALS = re.compile(r"totals: (\d+) requests, (\d+) input / (\d+) generated tokens, duration ([\d.]+) s")
_BURST = re.compile(r"rate inf, (\d+) (?:successful )?prompts at once")
_CONCURRENCY = re.compile(r"max-concurrency (\d+) \((\d+) prompts\)")
_STAT = re.compile(r"^(mean|median|p\d+)_(ttft|tpot|itl|e2e_latency)_ms$")
_FIGURE = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e_latency": "e2e"}


def is_block(row: Mapping[str, str]) -> bool:
    """True for a row copied from a printed result block (its source names the block's line)."""
    return "result block at line" in row.get("source", "")


def _latencies(rows: Sequence[Mapping[str, str]], what: str) -> dict[str, Latency]:
    means: dict[str, float] = {}
    pcts: dict[str, dict[float, float]] = {}
    for r in rows:
        m = _STAT.match(r["metric"].strip())
        if m is None:
            continue
        fig, v = _FIGURE[m.group(2)], number(float(r["value"]), f"{what}: {r['metric']}")
        if m.group(1) == "mean":
            means[fig] = v
        else:
            pcts.setdefault(fig, {})[50.0 if m.group(1) == "median" else float(m.group(1)[1:])] = v
    return {
        f: Latency(mean_ms=means.get(f), percentiles_ms=pcts.get(f, {}))
        for f in sorted(set(means) | set(pcts))
    }


def block_observation(rows: Sequence[Mapping[str, str]]) -> Observation:
    """One result block's shipped rows as the `Observation` its printed block reads as."""
    if not rows:
        raise ScenarioError("a result block needs at least one row")
    source = rows[0]["source"]
    what = f"reference rows {rows[0]['id']}-{rows[-1]['id']}"
    if any(r["source"] != source for r in rows):
        raise ScenarioError(f"{what}: the rows name different sources; one block's rows share one")
    totals = _TOTALS.search(rows[0]["notes"])
    if totals is None:
        raise ScenarioError(f"{what}: the notes state no 'totals: N requests, I input / O generated tokens'")
    done = count(int(totals.group(1)), f"{what}: requests")
    tin, tout = int(totals.group(2)), int(totals.group(3))
    burst, conc = _BURST.match(rows[0]["rate"].strip()), _CONCURRENCY.match(rows[0]["rate"].strip())
    if burst is None and conc is None:
        raise ScenarioError(f"{what}: load {rows[0]['rate']!r} is neither a burst nor a concurrency")
    value = {r["metric"].strip(): float(r["value"]) for r in rows}
    lat = _latencies(rows, what)
    setup = Setup(
        model=rows[0]["model"].split(" (", 1)[0],
        prompt_tokens=tin / done if done else None,
        output_tokens=tout / done if done else None,
        requests=int(conc.group(2)) if conc else done,
        all_at_once=True,  # rate inf in every block: a burst, or clients as fast as they can
        concurrency=int(conc.group(1)) if conc else None,
        burstiness=1.0,
    )
    measured = Measured(
        ttft=lat.get("ttft"),
        tpot=lat.get("tpot"),
        itl=lat.get("itl"),
        e2e=lat.get("e2e"),
        output_tok_s=value.get("output_tokens_per_s"),
        request_rps=value.get("request_throughput"),
        duration_s=number(float(totals.group(4)), f"{what}: duration"),
        completed=done,
    )
    fmt = "sglang-bench" if "bench_serving" in rows[0]["scenario"] else "vllm-bench"
    return Observation(format=f"{fmt}-reference-rows", source=source, setup=setup, measured=measured)


def reference_blocks(path: str | Path | None = None) -> dict[str, Observation]:
    """Every result block of the shipped files (or of the CSV at `path`), keyed by its source."""
    paths = [Path(path)] if path else [datafiles.data_dir() / "reference" / f for f in BLOCK_FILES]
    blocks: dict[str, list[dict[str, str]]] = {}
    for p in paths:
        if not p.is_file():
            continue
        with open(p, newline="", encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                if is_block(r):
                    blocks.setdefault(r["source"], []).append(r)
    return {source: block_observation(rows) for source, rows in blocks.items()}
