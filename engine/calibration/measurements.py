"""Measurements to calibrate against: what one measured point says, and reading them from CSV files.

A measurement is one of three kinds, on one model and instance (chip x tp, precisions):

- ``prefill``: the time of one prompt's prefill alone (ms);
- ``decode``: the time of one decode step of `batch` requests at `context_tokens` (ms);
- ``throughput``: an offline run's output tokens/s with every request of fixed prompt and output
  length queued at once (TensorRT-LLM's ``trtllm-bench`` tables);

and the serving benchmarks' TTFT, TPOT and batch latencies. A user's own CSV has the columns of
`MEASUREMENT_COLUMNS` (`read_measurements`); the reference rows are read by `engine.calibration.reference`.
"""

from __future__ import annotations

import csv
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from engine.catalog.specs import KvPrecision, Precision
from engine.core.errors import ScenarioError

Kind = Literal["prefill", "decode", "throughput", "tpot", "ttft", "batch_latency"]
Figure = Literal["throughput", "ttft", "tpot", "energy"]

FIGURE_OF: dict[str, Figure] = {
    "throughput": "throughput", "prefill": "ttft", "ttft": "ttft",
    "decode": "tpot", "tpot": "tpot", "batch_latency": "tpot",
}  # fmt: skip
"""The kind of headline figure each kind of measurement checks (errors are reported per figure)."""

MIN_ETA_COMPUTE = 0.05
"""Lower bound of a fitted compute fraction."""
MAX_ETA_COMPUTE = 0.85
"""Upper bound of a fitted compute fraction (of the BF16 peak): large BF16 GEMMs alone reach about 83%
(`perf.MATMUL_FRACTION_BF16`), and tests/calibration/test_kernel_ceilings.py keeps Hopper fits below it."""
MAX_ETA_BANDWIDTH = 0.92
"""Upper bound of a fitted bandwidth fraction: streaming reads reach about 90% (Azure measured 92% on GB200)."""

DEFAULT_MAX_BATCH = 2048
"""Batch cap assumed for throughput points (trtllm-bench's default max_batch_size)."""
DEFAULT_TOKEN_BUDGET = 8192
"""Tokens per iteration assumed for throughput points (trtllm-bench's default max_num_tokens)."""

MEASUREMENT_COLUMNS = (
    "id", "model", "hardware", "tp", "weights", "kv", "kind", "prompt_tokens", "output_tokens",
    "batch", "context_tokens", "value", "unit", "source",
)  # fmt: skip
"""Columns of a measurement CSV a user can fit their own profile from."""


@dataclass(frozen=True, kw_only=True)
class Measurement:
    """One measured point and its setup.

    Kinds: ``prefill`` (one prompt alone, ms), ``decode`` (one step of `batch` requests at
    `context_tokens`, ms), ``throughput`` (tokens/s), ``tpot`` (time between a request's tokens,
    ms), ``ttft`` (time to first token, ms) and ``batch_latency`` (a static batch of `batch`
    requests from start to last token, ms). Throughput, TPOT and TTFT are predicted in the steady
    state of continuous batching under the row's limits: the batch cap, the token budget, chunked
    prefill or not, and at most `concurrency` requests in flight (0: as many as fit). With
    `static`, the `batch` requests all start together and the run ends when they finish.

    The instance is `tp` x `dp` chips: `dp` attention data-parallel ranks of `tp` chips, the
    routed experts spread over `ep` of them with `imbalance` (busiest rank over the mean), and
    `speculation` (drafted tokens, acceptance) for MTP speculative decoding. Such a point is
    predicted by the cost model's general step model (`predict`); it is never fitted.
    """

    id: str
    model: str
    hardware: str
    tp: int
    weights: Precision
    kv: KvPrecision
    kind: Kind
    prompt_tokens: int = 0
    output_tokens: int = 0
    batch: int = 1
    context_tokens: int = 0
    value: float
    unit: str
    source: str = ""
    kv_mem_fraction: float = 0.9
    stack: str = ""
    source_key: str = ""
    max_batch: int = DEFAULT_MAX_BATCH
    token_budget: int = DEFAULT_TOKEN_BUDGET
    chunked: bool = True
    concurrency: int = 0
    static: bool = False
    count_input: bool = False
    note: str = ""
    dp: int = 1
    ep: int = 1
    imbalance: float = 1.0
    speculation: tuple[int, float] | None = None
    attention_weights: Precision | None = None
    """The attention projections' precision where the checkpoint keeps them apart (None: `weights`)."""
    eager: bool = False
    """Run without CUDA/HIP graphs (the row states `--enforce-eager`)."""
    prompts: int = 0
    """Requests the benchmark sent in all, where the row states it (0: not stated)."""
    lockstep: bool = False
    """A concurrency whose clients start together and whose requests all have the same lengths
    (bench_serving's random dataset at range ratio 1): the clients stay in step, every round's
    prompts queueing behind each other. The steady-state predictor does not model this; the
    simulator's rerun does (`engine.explain.end_to_end.rerun_point`)."""

    @property
    def plain(self) -> bool:
        """True for a tensor-parallel instance without data or expert parallelism or speculation."""
        return self.dp == 1 and self.ep == 1 and self.speculation is None

    @property
    def figure(self) -> Figure:
        """The kind of headline figure this point checks."""
        return FIGURE_OF[self.kind]


# --- reading measurements -----------------------------------------------------------------

_MODEL_IDS = {
    "Llama-2-70B": "llama-2-70b", "BLOOM-176B": "bloom-176b", "Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "Llama-3.3-70B-Instruct": "llama-3.3-70b", "Llama-3.1-405B-Instruct": "llama-3.1-405b",
    "Qwen3-235B-A22B": "qwen3-235b-a22b",
}  # fmt: skip
_HW_IDS = {
    "NVIDIA A100-80GB (DGX)": "a100-80g", "NVIDIA H100-80GB (DGX)": "h100-sxm",
    "NVIDIA H100 SXM 80GB": "h100-sxm", "NVIDIA H200 SXM 141GB": "h200", "NVIDIA B200 180GB": "b200",
    "NVIDIA GB200 192GB": "gb200",
}  # fmt: skip
_PRECISION: dict[str, Precision] = {"FP16": "bf16", "BF16": "bf16", "FP8": "fp8", "FP4": "fp4"}


def read_reference_csv(path: str | Path) -> list[Measurement]:
    """The shared reference file (calibration.csv: Splitwise timings, TensorRT-LLM throughputs)."""
    out = []
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            scen = row["scenario"]
            weights = _PRECISION[row["precision"]]
            kv: KvPrecision = "fp8" if weights in ("fp8", "fp4") else "bf16"
            common: dict[str, Any] = {
                "id": row["id"], "model": _MODEL_IDS[row["model"]], "hardware": _HW_IDS[row["hardware"]],
                "tp": int(row["tp"]), "weights": weights, "kv": kv, "value": float(row["value"]),
                "unit": row["unit"], "source": row["source"],
            }  # fmt: skip
            if scen.startswith("isolated prefill"):
                out.append(Measurement(kind="prefill", prompt_tokens=int(row["input_len"]), **common))
            elif scen.startswith("decode step"):
                batch = int(scen.rsplit(" ", 1)[-1])
                out.append(
                    Measurement(kind="decode", batch=batch, context_tokens=int(row["input_len"]), **common)
                )
            else:
                out.append(
                    Measurement(
                        kind="throughput", prompt_tokens=int(row["input_len"]),
                        output_tokens=int(row["output_len"]), kv_mem_fraction=0.92, **common,
                    )
                )  # fmt: skip
    return out


def read_measurements(path: str | Path) -> list[Measurement]:
    """A user's measurement CSV (columns `MEASUREMENT_COLUMNS`); errors name the line and column."""
    out = []
    try:
        fh = open(path, newline="", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc}") from None
    with fh:
        reader = csv.DictReader(fh)
        missing = [
            c for c in ("model", "hardware", "tp", "kind", "value") if c not in (reader.fieldnames or [])
        ]
        if missing:
            raise ScenarioError(f"{path}: missing column(s) {', '.join(missing)}")
        names = [n.strip() for n in reader.fieldnames or [] if n and n.strip()]
        if twice := sorted({n for n in names if names.count(n) > 1}):  # DictReader keeps the last copy
            raise ScenarioError(
                f"{path}: column(s) {', '.join(twice)} named twice in the header; name each once"
            )
        seen: dict[Any, int] = {}
        for line, row in enumerate(reader, start=2):
            try:
                kind = row["kind"].strip()
                if kind not in ("prefill", "decode", "throughput"):
                    raise ValueError(f"kind: {kind!r} is not prefill, decode or throughput")
                weights = (row.get("weights") or "bf16").strip()
                kv = (row.get("kv") or "bf16").strip()
                if weights not in ("bf16", "fp8", "fp4", "int4"):
                    raise ValueError(f"weights: {weights!r} is not bf16, fp8, fp4 or int4")
                if kv not in ("bf16", "fp8"):
                    raise ValueError(f"kv: {kv!r} is not bf16 or fp8")
                value = float(row["value"])
                if not math.isfinite(value) or value <= 0:
                    raise ValueError(f"value: must be a positive number (got {row['value']!r})")
                value, unit = _in_unit(kind, value, (row.get("unit") or "").strip())
                out.append(
                    Measurement(
                        id=row.get("id") or f"line{line}", model=row["model"].strip(),
                        hardware=row["hardware"].strip(), tp=int(row["tp"]),
                        weights=weights,  # type: ignore[arg-type]
                        kv=kv,  # type: ignore[arg-type]
                        kind=kind,  # type: ignore[arg-type]
                        prompt_tokens=int(row.get("prompt_tokens") or 0),
                        output_tokens=int(row.get("output_tokens") or 0),
                        batch=int(row.get("batch") or 1), context_tokens=int(row.get("context_tokens") or 0),
                        value=value, unit=unit,
                        source=row.get("source") or str(path),
                    )
                )  # fmt: skip
            except (ValueError, TypeError) as exc:
                raise ScenarioError(f"{path}: line {line}: {exc}") from None
            _not_again(out, path, line, seen)
    return out


def _not_again(out: list[Measurement], path: str | Path, line: int, seen: dict[Any, int]) -> None:
    """Refuse a row whose id, or whose whole measurement, an earlier row gave: six copies of one row
    fitted it six times and printed a held-out band of +0.0% to +0.0% (a review)."""
    m = out[-1]
    whole = dataclasses.replace(m, id="", source="")
    for key, what in ((("id", m.id), f"its id {m.id!r}"), (("row", whole), "the same measurement")):
        if key in seen:
            raise ScenarioError(
                f"{path}: line {line}: {what} as line {seen[key]}; give each id once, and a measurement "
                "repeated once (or its runs' mean): a copy narrows the held-out band without adding a point"
            )
        seen[key] = line


UNITS = {"prefill": {"ms": 1.0, "s": 1000.0}, "decode": {"ms": 1.0, "s": 1000.0}}
"""The units a timing row may state, and their factor to ms; a throughput's is tok/s (or tokens/s)."""


def _in_unit(kind: str, value: float, unit: str) -> tuple[float, str]:
    """(value, unit) in the fit's unit: a timing in ms, a throughput in tok/s; an empty unit is that one.
    A timing of 30 with unit 'seconds' was read as 30 ms (a review)."""
    if kind == "throughput":
        if unit not in ("", "tok/s", "tokens/s"):
            raise ValueError(f"unit: a throughput's is tok/s (got {unit!r})")
        return value, "tok/s"
    factor = UNITS[kind].get(unit or "ms")
    if factor is None:
        raise ValueError(f"unit: a {kind} timing's is ms or s (got {unit!r})")
    return value * factor, "ms"


def stack_of(m: Measurement) -> str:
    """The profile name a reference measurement belongs to."""
    if m.stack:
        return m.stack
    if "Splitwise" in m.source:
        return "splitwise"
    if "TensorRT-LLM" in m.source:
        return "trtllm"
    return "user"
