"""GPUStack's Performance Lab rows for the Ascend 910B (data/reference/calibration-a100-ascend.csv).

The file (sources and caveats in calibration-a100-ascend-sources.md) gives `vllm bench serve`
result blocks: nine rows per block, in its own vocabulary. Each row is rewritten into the
vocabulary `reference._judge` reads, and judged by it, so the 910B's points carry the same
settings rules as every other row; what the file states differently is read here:

- **Lengths.** Random-dataset rows state the requested and the actual mean lengths ("4000
  requested (mean actual 3994.9)"): the actual means are used. ShareGPT rows state the means of
  their block's totals ("ShareGPT (mean 217.4)"): every request is taken at those means, said in
  the point's note (the dataset's spread is not stated).
- **Load.** "rate inf, N prompts at once" is a burst: N requests at t = 0, predicted as a static
  batch of N (waves of the batch cap and KV room), measured from the first request to the last
  token; "max-concurrency 4" is a closed loop of 4 clients. A burst's TTFT and TPOT are set
  aside by the judge (they count the queue behind N prompts, set by the burst's size).
- **vLLM-Ascend 0.9.1 prefills whole prompts.** Its platform hook (`NPUPlatform.check_and_update_config`
  in vllm_ascend/platform.py at the v0.9.1 tag) turns chunked prefill off for every model without
  MLA ("Non-MLA LLMs forcibly disable the chunked prefill feature, as the performance of operators
  supporting this feature functionality is currently suboptimal"), switches the V1 engine to its
  `AscendScheduler` (prefill first: no decode step runs while a prompt waits and fits) and raises
  `max_num_batched_tokens` to the context limit. Such a row is replayed so: whole prompts, a token
  budget of the model's context limit (`PREFILL_FIRST`).
- **One figure per block.** A block's output and total throughputs, request rate, mean, median
  and p99 latencies are one measurement seen nine ways: the output throughput, mean TTFT and
  mean TPOT are kept, the others set aside so a block is not counted several times.
- **Bursts that cannot be replayed as run** are set aside as the MoE file's GPUStack bursts are
  (`burst_aside`): ShareGPT bursts (only the block's mean lengths are stated, and a burst's makespan
  is set by the answers' long tail) and bursts of 1,000 requests of 4 output tokens (the server's
  request handling bounds them).
- **Set aside** with the sources file's caveats: the MindIE Qwen3-30B-A3B rows (NPU count not
  stated, caveat 1), Conclusion-table rows (no block, so no actual lengths or prompt count,
  caveats 3 and 7), INT8 W8A8 checkpoints (the catalog has no int8 weights and the 910B has no
  published INT8 peak) and the A100 rows (see `A100_REASON`).
"""

from __future__ import annotations

import csv
import re
from dataclasses import replace

from engine.calibration import reference
from engine.calibration.reference import Row
from engine.catalog.entries import Catalog
from engine.core import datafiles

GPUSTACK_FILE = "calibration-a100-ascend.csv"

KEPT_METRICS = ("output_tokens_per_s", "mean_ttft_ms", "mean_tpot_ms")
"""The figures of a result block that become points: its output throughput, mean TTFT and TPOT."""

A100_REASON = (
    "A100 serving-stack rows: not in the A100's calibration, whose one fit is Splitwise's research "
    "harness; they would give the A100 three new stack profiles (its rule is a transfer today), and "
    "their models are mostly outside the catalog (docs/calibration.md, 'Ascend 910B')"
)
"""Why the file's A100 rows are set aside (they are listed by `make validate` all the same)."""


PREFILL_FIRST = re.compile(r"vLLM-Ascend v0\.9\.1(?!\d|rc)")
"""vLLM-Ascend releases that force whole-prompt prefill first on models without MLA (the v0.9.1 tag's
vllm_ascend/platform.py; its release candidates rc1-rc3 did not, nor did v0.9.2rc1-v0.10.1rc1).
The file's rows state v0.9.1 only."""


def _prefill_first(row: Row, r: dict[str, str], catalog: Catalog) -> Row:
    """A vLLM-Ascend 0.9.1 point on a model without MLA, as that release runs it: whole prompts
    first, the token budget raised to the context limit (`PREFILL_FIRST`); other rows unchanged."""
    m = row.point
    if m is None or not PREFILL_FIRST.search(r["framework"]) or catalog.model(m.model).mla is not None:
        return row
    limit = max(catalog.model(m.model).max_context, m.token_budget)
    note = f"vLLM-Ascend 0.9.1 on a model without MLA: whole prompts first, {limit:,}-token passes"
    point = replace(m, chunked=False, token_budget=limit, note="; ".join(x for x in (m.note, note) if x))
    return replace(row, point=point)


def _mean(text: str) -> str | None:
    """'4000 requested (mean actual 3994.9)' or 'ShareGPT (mean 217.4)' -> '3995' / '217'."""
    m = re.search(r"\(mean (?:actual |generated )?(\d+(?:\.\d+)?)\)", text)
    return str(round(float(m.group(1)))) if m else None


def _load(rate: str) -> str:
    """The file's load, in the judge's words: a burst of N, a concurrency, else unchanged."""
    burst = re.match(r"rate inf, (\d+) (?:successful )?prompts at once", rate)
    if burst:
        return f"{burst.group(1)} prompts at once"
    conc = re.match(r"max-concurrency (\d+) \((\d+) prompts\)", rate)
    if conc:
        return f"concurrency {conc.group(1)} ({conc.group(2)} prompts)"
    return rate


def _aside(r: dict[str, str]) -> str:
    """Why a row is set aside before it is judged ('' when it is not)."""
    if "A100" in r["hardware"]:
        return A100_REASON
    if "TABLE-ONLY" in r["notes"]:
        return (
            "a Conclusion-table figure only: no result block, so no actual lengths or prompt count (caveat 3)"
        )
    if r["metric"] not in KEPT_METRICS:
        return "another view of a result block whose output throughput, mean TTFT and mean TPOT are used"
    if r["n_gpus"].strip() == "unstated":
        return "the NPU count is not stated (MindIE hides its world size; caveat 1)"
    if "INT8" in r["precision"].upper() or "W8A8" in r["precision"].upper():
        return "INT8 W8A8 weights: the catalog has no int8 weights, and no 910B INT8 peak is published"
    return burst_aside(r)


SHAREGPT_BURST = (
    "a burst of ShareGPT prompts: its makespan is set by the answers' long tail (the batch drains to a "
    "few long requests), which replaying every request at the mean lengths does not reproduce"
)
"""Why a burst with ShareGPT lengths is set aside (only their means are stated, not their spread)."""

SHORT_BURST = (
    "a burst of 1,000 requests of 4 output tokens: bound by the server's handling of requests, not by "
    "its iterations (S1 caveat 5)"
)
"""Why a burst of 128/4 'short prompts' is set aside (calibration-moe-sources.md S1 caveat 5; the
same harness's 910B rows, calibration-a100-ascend-sources.md caveat 8)."""


def burst_aside(r: dict[str, str]) -> str:
    """Why a GPUStack burst cannot be replayed as it ran ('' when it can): ShareGPT lengths stated as
    means only (`SHAREGPT_BURST`), or 1,000 requests of 4 output tokens (`SHORT_BURST`)."""
    if "at once" not in r["rate"]:
        return ""
    if "ShareGPT" in r["output_len"]:
        return SHAREGPT_BURST
    if re.match(r"\s*4 requested", r["output_len"]):
        return SHORT_BURST
    return ""


def _rewrite(r: dict[str, str]) -> dict[str, str]:
    """The row in the vocabulary `reference._judge` reads."""
    out = dict(r)
    tp = re.match(r"\s*(\d+)", r["tp"])
    if not re.fullmatch(r"\d+ \(EP \d+\)", r["tp"].strip()):  # an expert-parallel layout is read as is
        out["tp"] = tp.group(1) if tp else r["tp"]
    out["input_len"] = _mean(r["input_len"]) or r["input_len"]
    out["output_len"] = _mean(r["output_len"]) or r["output_len"]
    out["rate"] = _load(r["rate"])
    out["notes"] = re.sub(r"no speculative decoding[^;]*", "", r["notes"])  # said of every block: none ran
    return out


def judge_gpustack(r: dict[str, str], catalog: Catalog) -> Row:
    """One row of the GPUStack file: a point with the settings it ran with, or the reason not."""
    why = _aside(r)
    if why:
        return Row(
            r["id"], reference.source_key(r["source"]), reference._stack(r["framework"]), r["kind"], None, why
        )
    row = _prefill_first(reference._judge(_rewrite(r), {}, catalog), r, catalog)
    if row.point is not None and "ShareGPT" in r["input_len"]:
        note = "every request at the block's mean lengths (ShareGPT's spread is not stated)"
        row = replace(row, point=replace(row.point, note="; ".join(x for x in (row.point.note, note) if x)))
    return row


def read_gpustack_rows(catalog: Catalog) -> list[Row]:
    """Every row of data/reference/calibration-a100-ascend.csv, judged (none when the file is absent)."""
    path = datafiles.data_dir() / "reference" / GPUSTACK_FILE
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        return [judge_gpustack(r, catalog) for r in csv.DictReader(fh)]
