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


_BLOCK = re.compile(r"^(?P<page>[^,]+?\.md)\b.*result block at line (?P<line>\d+)")
_REQUESTED = re.compile(r"SGLang random dataset \(requested (?P<isl>\d+)/")
_SENT = re.compile(r"\((?P<n>\d+) prompts\)")


def _run_of(r: dict[str, str]) -> tuple[tuple[str, str], int, int] | None:
    """A cookbook random-dataset row's ((page, requested input length), result block's line,
    prompts sent), None for any other row."""
    block, req, sent = _BLOCK.match(r["source"]), _REQUESTED.search(r["scenario"]), _SENT.search(r["rate"])
    if "sgl-cookbook" not in r["source"] or not (block and req and sent):
        return None
    return (block["page"], req["isl"]), int(block["line"]), int(sent["n"])


def cached_prompts(rows: list[dict[str, str]]) -> dict[str, int]:
    """Row id -> the prompts of its run the server held cached from an earlier run of its page.

    `sglang.bench_serving`'s random dataset takes prompt i from the ShareGPT conversations shuffled
    by the seeded `random` (seed 1), cut to input length i of a seeded numpy draw, so prompt i is
    the same text in every run at the same requested input length whatever the prompt count or
    output length (`sample_random_requests`, python/sglang/benchmark/datasets/random.py). The
    cookbook's launch commands leave SGLang's radix cache on, so a run that follows one at the same
    requested input length on the same server finds that run's prompts cached: the first
    min(prompts, earlier run's prompts). The page's result blocks are taken in page order.
    """
    runs = {r["id"]: run for r in rows if (run := _run_of(r)) is not None}
    out = {}
    for rid, (key, line, n) in runs.items():
        before = [m for k, ln, m in runs.values() if k == key and ln < line]
        if before:
            out[rid] = min(n, max(before))
    return out


def read_moe_rows(catalog: Catalog) -> list[Row]:
    """Every row of data/reference/calibration-moe.csv, judged (none when the file is absent)."""
    path = datafiles.data_dir() / "reference" / MOE_FILE
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    cached = cached_prompts(rows)
    out = []
    for r in rows:
        row = judge_moe(r, catalog)
        if row.point is not None and cached.get(r["id"]):
            note = f"its first {cached[r['id']]} prompts cached by an earlier run of the page"
            row = replace(
                row,
                point=replace(row.point, cached_prompts=cached[r["id"]], note=f"{row.point.note}; {note}"),
            )
        out.append(row)
    return out
