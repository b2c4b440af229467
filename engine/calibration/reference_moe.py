"""The Mixture-of-Experts rows (data/reference/calibration-moe.csv), replayed as they were run.

Three independent sources (calibration-moe-sources.md): GPUStack's Performance Lab (S1, bursts of
every prompt at once and a few 4-client runs), the SGLang cookbook (S2, `sglang.bench_serving` at
a fixed `--max-concurrency` with a stated prompt count) and Tencent's TKE playbook (S3, vLLM's
`benchmark_serving.py` at a concurrency, prompt count unstated). Their rows use the vocabulary of
the GPUStack A100/Ascend file, so `reference_gpustack` rewrites the lengths (the *actual* means:
the cookbook's random lengths are shorter than requested) and loads; this module adds what differs:

- **Layouts** in the `tp` column: "8 (EP)" (vLLM `--enable-expert-parallel`: experts over the TP
  group), "8 (DP-attention)" and "8 (DP 8 attention, EP 8)" (SGLang `--enable-dp-attention`,
  with `--ep 8`), "16 (2 nodes x 8 GPUs)" (one TP16 group over two machines).
- **Set aside**: speculative decoding (EAGLE/MTP: the acceptance is not modelled here), the rows the
  sources file flags (the collapsed MTP burst, caveat 4; the MI300X DP+EP run "to treat with care",
  S2 caveat 2; the Llama-4 cold-start TTFTs, S2 caveat 4), and models outside the catalog (gpt-oss,
  Llama-4, Qwen3-32B) by the judge.
- **Bursts** ("rate inf, N prompts at once") become static batches of N: their throughput is a
  makespan, which the predictor runs in waves; their TTFT and TPOT count the queue behind N
  prompts and are set aside by the judge, as for the 910B.
"""

from __future__ import annotations

import csv
import re
from dataclasses import replace

from engine.calibration import reference, reference_gpustack
from engine.calibration.reference import Row
from engine.catalog.entries import Catalog
from engine.core import datafiles

MOE_FILE = "calibration-moe.csv"

_BOILERPLATE = re.compile(
    r"MTP/speculative decoding OFF unless the cmd shows --speculative-\*"
    r"|no speculative decoding unless the server cmd has --speculative-\*"
    r"|no speculative decoding|no MTP|speculative decoding: none"
)
"""What every block's notes say of speculation when none ran (it would read as speculation)."""

FLAGGED = (
    ("do not use for steady-state", "flagged by the sources file: the MTP burst collapsed ~3x (S1 caveat 4)"),
    ("treat with care", "flagged by the sources file: a TPOT of 215 ms at 100 clients (S2 caveat 2)"),
    ("do not use these ttfts", "flagged by the sources file: a cold first request (S2 caveat 4)"),
)
"""(words in a row's notes, reason): rows the sources file says not to calibrate with."""


def _layout(tp: str) -> str:
    """The `tp` column in the words `reference._layout` reads (SGLang's DP attention and EP flags
    are read from the command in the notes)."""
    n = re.match(r"\s*(\d+)", tp)
    if n is None:
        return tp
    if "(EP)" in tp:
        return f"{n.group(1)} (EP {n.group(1)})"
    if "attention" in tp or "nodes" in tp:
        return n.group(1)
    return tp


def _aside(r: dict[str, str]) -> str:
    """Why a MoE-file row is set aside before it is judged ('' when it is not)."""
    notes, metric = r["notes"].lower(), r["metric"]
    if metric not in reference_gpustack.KEPT_METRICS:
        return "another view of a result block whose output throughput, mean TTFT and mean TPOT are used"
    for words, why in FLAGGED:
        if words in notes and (words != "do not use these ttfts" or "ttft" in metric):
            return why
    if "--speculative" in _BOILERPLATE.sub("", r["notes"]):
        return "speculative decoding (EAGLE/MTP): its acceptance is not modelled for these rows"
    return reference_gpustack.burst_aside(r)


SHAREGPT_BURST = reference_gpustack.SHAREGPT_BURST
SHORT_BURST = reference_gpustack.SHORT_BURST


def judge_moe(r: dict[str, str], catalog: Catalog) -> Row:
    """One row of the MoE file: a point with the settings it ran with, or the reason not."""
    why = _aside(r)
    if why:
        return Row(
            r["id"], reference.source_key(r["source"]), reference._stack(r["framework"]), r["kind"], None, why
        )
    out = dict(r)
    out["tp"] = _layout(r["tp"])
    # the stated token budget in the words `reference._judge` reads
    out["notes"] = re.sub(
        r"--max-num-batched-tokens (\d+)", r"max_num_tokens \1", _BOILERPLATE.sub("", r["notes"])
    )
    if out["tp"] != r["tp"]:
        out["notes"] += "; " + f"layout read from {r['tp']!r}"
    out["rate"] = _tke_prompts(r)
    row = reference_gpustack.judge_gpustack(out, catalog)
    if row.point is not None and row.point.concurrency and out["rate"] != r["rate"]:
        note = "fixed lengths (the random dataset at its default range ratio, --ignore-eos), clients started together"
        row = replace(row, point=replace(row.point, lockstep=True, note="; ".join((row.point.note, note))))
    return row


TKE_PROMPTS_PER_CLIENT = 10
"""Prompts Tencent's harness sends per client: the playbook's `dockerfiles/llmbench/vllm-workspace/
benchmark_serving_concurrency.sh` (tkestack/tke-ai-playbook, added 2025-06-12, the day of the
TP16 results file) runs vLLM's `benchmark_serving.py` at concurrency 1, 2, 4, ... 128 with
`--num-prompts $((concurrency*10))`, the random dataset and `--ignore-eos`, and writes the results
file's table (its header, typos included; the llmbench README shows the 1000:1000 table)."""


def _tke_prompts(r: dict[str, str]) -> str:
    """A TKE row's load with the prompts its harness sent (`TKE_PROMPTS_PER_CLIENT`); others unchanged."""
    conc = re.fullmatch(r"\s*concurrency (\d+)\s*", r["rate"])
    if "tkestack/tke-ai-playbook" not in r["source"] or conc is None:
        return r["rate"]
    c = int(conc.group(1))
    return f"concurrency {c} ({c * TKE_PROMPTS_PER_CLIENT} prompts)"


def read_moe_rows(catalog: Catalog) -> list[Row]:
    """Every row of data/reference/calibration-moe.csv, judged (none when the file is absent)."""
    path = datafiles.data_dir() / "reference" / MOE_FILE
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        return [judge_moe(r, catalog) for r in csv.DictReader(fh)]
