"""The reference measurements, read row by row into points the cost model can predict.

Two files ship in data/reference: calibration.csv (Splitwise timings, TensorRT-LLM throughputs)
and calibration-extra.csv (vLLM, SGLang and TensorRT-LLM results from blogs, benchmark
repositories and the ML.ENERGY leaderboard). Every row of the second file is judged: either it
becomes one `Measurement` with the settings it ran with (its stack's defaults for its version,
unless the row states them), or it is set aside with the reason. Settings a row leaves unstated
are never guessed: a row whose prediction depends on them is set aside; where the stack's
documented default applies (KV precision 'auto', the batch cap of the version), that default is
used and said in the row's note.

Power and energy rows are not timings: `engine.costmodel.power` fits and checks them. A third
file, calibration-a100-ascend.csv (GPUStack's Performance Lab), is rewritten into this reader's
words and judged by it (`engine.calibration.reference_gpustack`).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, replace
from pathlib import Path

from engine.calibration.measurements import Kind, Measurement, read_reference_csv, stack_of
from engine.catalog.entries import Catalog
from engine.catalog.specs import KvPrecision, Precision
from engine.core import datafiles
from engine.core.errors import ScenarioError
from engine.costmodel import stacks

EXTRA_FILE = "calibration-extra.csv"


@dataclass(frozen=True)
class Row:
    """One reference row and what became of it: a point to fit and check, or a reason not to."""

    id: str
    source_key: str
    stack: str
    kind: str
    point: Measurement | None
    reason: str = ""
    open_loop: OpenLoop | None = None
    """An open-loop row the simulator reruns (`OPEN_LOOP_REASON`): what the rerun needs."""

    @property
    def usable(self) -> bool:
        """True when the row became a point."""
        return self.point is not None


def source_key(source: str) -> str:
    """The publication a row comes from (one study's files count as one source)."""
    head = source.split(" (", 1)[0].split(",", 1)[0].strip()
    if ": " in head and "/" in head.split(": ", 1)[1]:
        repo, path = head.split(": ", 1)
        folder = path.rsplit("/", 1)[0]
        folder = re.sub(r"/(raw_data|csv_data)$", "", folder)
        return f"{repo}: {folder}"
    return head


_MODELS = (
    ("Llama-3.2-11B-Vision", None),
    ("Hermes-3-Llama-3.1-405B", "llama-3.1-405b"),
    ("Llama-3.1-405B", "llama-3.1-405b"),
    ("Llama-3.1-70B", "llama-3.1-70b"),
    ("Llama-3.1-8B", "llama-3.1-8b"),
    ("Llama-3-8B", "llama-3.1-8b"),
    ("Mixtral-8x7B", "mixtral-8x7b"),
    ("DeepSeek-R1", "deepseek-v3"),
    ("DeepSeek-V3", "deepseek-v3"),
    ("Qwen3-30B-A3B", "qwen3-30b-a3b"),
    ("Qwen3-235B-A22B", "qwen3-235b-a22b"),
    ("Qwen3-8B", "qwen3-8b"),
)
"""Model names in the data and the catalog entry of the same architecture (Llama-3-8B and
Llama-3.1-8B differ only in their context limit; Hermes-3 is a fine-tune of Llama-3.1-405B;
DeepSeek-R1 and V3.1 share V3's architecture)."""


def _model(name: str) -> str | None:
    for prefix, mid in _MODELS:
        if name.startswith(prefix):
            return mid
    return None


def _hardware(name: str) -> str | None:
    for key, hid in (
        ("MI300X", "mi300x"),
        ("H100", "h100-sxm"),
        ("H200", "h200"),
        ("H20 ", "h20"),
        ("B200", "b200"),
        ("L4 ", "l4"),
        ("Ascend 910B", "ascend-910b"),
    ):
        if key in name:
            return hid
    return None


def _stack(framework: str) -> str:
    f = framework.lower()
    if f.startswith(("vllm-ascend", "mindie")):
        return f.split(" ", 1)[0]
    if f.startswith("sglang"):
        return "sglang"
    if f.startswith("tensorrt"):
        return "trtllm"
    return "vllm"


def _version(framework: str) -> tuple[int, int] | None:
    m = re.search(r"v?(\d+)\.(\d+)", framework)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _int(text: str) -> int | None:
    m = re.fullmatch(r"~?\s*(\d+)(\s*\(\+-\d+%\))?", text.strip())
    return int(m.group(1)) if m else None


def _precision(text: str, model_name: str) -> tuple[Precision, KvPrecision | None]:
    t = text.upper()
    weights: Precision = (
        "fp4" if "FP4" in t else "fp8" if t.startswith("FP8") or "FP8 WEIGHTS" in t else "bf16"
    )
    kv: KvPrecision | None = None
    if "FP8 KV" in t or "FP8-KV" in model_name.upper():
        kv = "fp8"
    elif "BF16 KV" in t or "BF16 WEIGHTS, BF16 KV" in t or "FP16/BF16 KV" in t:
        kv = "bf16"
    return weights, kv


def _attention(text: str) -> Precision | None:
    """The attention projections' precision where the checkpoint keeps them apart: Meta's FP8
    Llama 3.1 405B quantises only the MLPs. Its weights take 56.77 GiB per GPU at TP8 against
    49.32 GiB for AMD's fully quantised checkpoint (dstack's gpu-usage.md), the bf16 attention's
    difference."""
    return "bf16" if "META FP8" in text.upper() else None


def _eager(notes: str) -> bool:
    """The row ran without CUDA/HIP graphs (its stated command has `--enforce-eager`)."""
    return "--enforce-eager" in notes


def _settings(stack: str, version: tuple[int, int] | None, hw_id: str, catalog: Catalog, offline: bool,
              max_model_len: int, model: str = "") -> stacks.StackDefaults | None:  # fmt: skip
    hw = catalog.chip(hw_id)
    if stack not in ("vllm", "vllm-v0"):
        return stacks.defaults(stack, hw, offline)
    if version is None:
        return None
    if version >= (0, 9):
        return stacks.defaults("vllm", hw, offline)
    if version >= (0, 8):  # V1 before the larger defaults for large chips
        budget = 8192 if offline else 2048
        return stacks.StackDefaults(256, budget, True, budget, "vLLM 0.8 defaults")
    return stacks.vllm_v0_defaults(max_model_len, bool(model) and catalog.model(model).mla is not None)


V0_SCRIPT = re.compile(r"benchmark_(?:throughput|latency)\.py --[^;]*")
"""A vLLM V0 benchmark command stated in a row's notes. The 0.6-series scripts take
`--enable-chunked-prefill` as a flag that is off unless given, and pass it to the engine, so a
stated command without it prefills whole prompts, and the engine's token budget (and the
forward pass it profiles memory with) is max(max-model-len, 2,048) tokens."""

DEFAULT_EXPERT_IMBALANCE = 1.4
"""Busiest expert-parallel rank over the mean where a row does not state it: the scenarios' default
(`Deployment.expert_imbalance`, docs/cost-model.md), so a point is predicted as the app would run it."""


@dataclass(frozen=True)
class Layout:
    """How a row's GPUs are split: `dp` attention ranks of `tp` chips, experts over `ep` of them."""

    tp: int
    dp: int = 1
    ep: int = 1
    imbalance: float = 1.0
    sglang_dp_attention: bool = False
    notes: tuple[str, ...] = ()


def _layout(r: dict[str, str], stack: str) -> Layout | str:
    """The row's parallel layout, or the reason it cannot be read.

    - "8 (EP 8, attention DP)" (TensorRT-LLM's enable_attention_dp): attention runs data-parallel
      on every GPU, tp 1 x dp 8, the experts spread over 8 ranks;
    - "8 (EP 4)": attention tensor-parallel over 8 GPUs, experts over 4 ranks of 2 GPUs;
    - "1 (EP 8)" on 8 GPUs (ML.ENERGY, vLLM with enable-expert-parallel, dp 1 as stored): vLLM's
      expert-parallel size is TP x DP and ML.ENERGY's harness sets tensor-parallel-size to the
      instance's GPU count, so tp 8, ep 8;
    - SGLang 0.4's `--tp 8 --enable-dp-attention` sets the DP size to the TP size: attention
      tp 1 x dp 8, and the MoE layers tensor-parallel over the 8 GPUs unless expert parallelism
      is enabled (`--enable-ep-moe`). MoE tensor parallelism is taken as 8 expert ranks without
      imbalance: every GPU holds an eighth of every expert, which gives the same FLOPs and
      expert bytes per GPU as a balanced spread, and its all-gather and reduce-scatter move the
      same bytes as the all-to-all when the experts per token equal the GPUs (DeepSeek: 8 on 8;
      `_judge` sets other cases aside).
    Where expert parallelism is on and the row states no imbalance, `DEFAULT_EXPERT_IMBALANCE`.
    """
    col, notes = r["tp"].strip(), r["notes"]
    gpus = _int(r.get("n_gpus", "") or "") or 0
    m = re.fullmatch(r"(\d+)(?:\s*\(EP (\d+)(, attention DP)?\))?", col)
    if m is None:
        return f"parallel layout {col!r} is not one the reader knows"
    n, ep, attn_dp = int(m.group(1)), int(m.group(2) or 1), bool(m.group(3))
    imbalance = DEFAULT_EXPERT_IMBALANCE if ep > 1 else 1.0
    said: list[str] = []
    if ep > 1:
        said.append(f"expert imbalance unstated: the scenarios' default {DEFAULT_EXPERT_IMBALANCE}")
    if stack == "sglang" and "enable-dp-attention" in notes:
        own_ep = "enable-ep-moe" in notes or "ep-size" in notes or re.search(r"--ep \d", notes) is not None
        moe = (
            "expert-parallel"
            if own_ep
            else f"tensor-parallel over {n} GPUs (read as {n} balanced expert ranks)"
        )
        said = [f"SGLang DP attention: tp 1 x dp {n}, MoE {moe}"]
        if own_ep:
            said.append(f"expert imbalance unstated: the scenarios' default {DEFAULT_EXPERT_IMBALANCE}")
        lay = Layout(1, n, n, DEFAULT_EXPERT_IMBALANCE if own_ep else 1.0, True, tuple(said))
    elif attn_dp:
        lay = Layout(
            1, n, ep, imbalance, notes=(f"attention DP: tp 1 x dp {n}, experts over {ep} ranks", *said)
        )
    elif gpus and n < gpus and ep == gpus and stack == "vllm" and "enable-expert-parallel" in notes:
        said.insert(0, f"vLLM expert parallelism on {gpus} GPUs (tp {n} as stored): tp {gpus}, ep {gpus}")
        lay = Layout(gpus, 1, ep, imbalance, notes=tuple(said))
    else:
        lay = Layout(n, 1, ep, imbalance, notes=tuple(said))
    if gpus and lay.tp * lay.dp != gpus:
        return f"parallel layout {col!r} does not account for the row's {gpus} GPUs"
    return lay


def _speculation(r: dict[str, str]) -> tuple[int, float] | str | None:
    """(drafted tokens, acceptance) of a row's MTP speculation, None without, or why it is unusable."""
    text = r["framework"] + " " + r["notes"]
    if "MTP" not in text and "speculative" not in text.lower():
        return None
    k = re.search(r"MTP (\d+)", text)
    if k is None:
        return "speculative decoding: the number of drafted tokens is not stated"
    a = re.search(r"acceptance(?: rate)?\D{0,12}?(\d+(?:\.\d+)?)\s*%", r["notes"], re.I)
    if a is None:
        return f"speculative decoding (MTP, {k.group(1)} drafted tokens): the acceptance rate is not stated"
    return int(k.group(1)), float(a.group(1)) / 100.0


def _kind(metric: str) -> tuple[Kind | None, bool, str]:
    """(kind, counts input tokens, reason when not usable) of a metric."""
    m = metric.lower()
    if m.startswith("output_tokens_per_s"):
        return "throughput", False, ""
    if m.startswith("total_tokens_per_s"):
        return "throughput", True, ""
    if m.startswith("throughput_tokens_per_s"):
        return None, False, "whether the throughput counts output or all tokens is not stated"
    if "ttft" in m:
        return "ttft", False, ""
    if "tpot" in m or "itl" in m or "inter_token" in m:
        return "tpot", False, ""
    if "e2e_latency" in m:
        return "batch_latency", False, ""
    if m.startswith("per_user"):
        return None, False, "a per-user output rate is not a figure the predictor checks"
    return None, False, f"metric {metric!r} is not a timing"


def read_extra_csv(path: str | Path, catalog: Catalog) -> list[Row]:
    """Every row of calibration-extra.csv, as a point or with the reason it is set aside."""
    with open(path, newline="", encoding="utf-8") as fh:
        raw = list(csv.DictReader(fh))
    by_id = {r["id"]: r for r in raw}
    rows = []
    for r in raw:
        rows.append(_judge(r, by_id, catalog))
    return rows


def _judge(r: dict[str, str], by_id: dict[str, dict[str, str]], catalog: Catalog) -> Row:
    rid, kind_col = r["id"], r["kind"]
    stack = _stack(r["framework"])
    version = _version(r["framework"])
    if stack == "vllm" and (version is None or version < (0, 8)):
        stack = "vllm-v0"
    key = source_key(r["source"])

    def skip(reason: str) -> Row:
        return Row(rid, key, stack, kind_col, None, reason)

    if kind_col in ("power", "energy"):
        return skip("power and energy: fitted by the power model (engine/costmodel/power.py)")
    lay = _layout(r, stack)
    if isinstance(lay, str):
        return skip(lay)
    spec = _speculation(r)
    if isinstance(spec, str):
        return skip(spec)
    model = _model(r["model"])
    if model is None:
        return skip(f"model {r['model']!r} is not in the catalog")
    moe = catalog.model(model).moe
    if lay.ep > 1 and moe is None:
        lay = replace(lay, ep=1, imbalance=1.0)  # a dense model has no experts to spread
    if (
        lay.sglang_dp_attention
        and moe is not None
        and lay.imbalance == 1.0
        and moe.experts_per_token != lay.dp
    ):
        return skip(
            "SGLang DP attention with MoE tensor parallelism: its exchange differs from an all-to-all here"
        )
    hw = _hardware(r["hardware"])
    if hw is None:
        return skip(f"hardware {r['hardware']!r} is not in the catalog")
    metric = r["metric"]
    if metric.startswith("decode_itl_fit"):
        return _itl_fit(r, by_id, catalog, key, stack, model, hw)
    kind, count_input, why = _kind(metric)
    if kind is None:
        return skip(why)
    rate = r["rate"].strip()
    if _open_loop_rate(rate) is not None:
        if _means(r) is None:
            return skip("prompt or output lengths are not stated as numbers")
        return replace(
            skip(OPEN_LOOP_REASON), open_loop=_open_loop(r, catalog, key, stack, version, model, hw, kind)
        )
    isl, osl = _int(r["input_len"]), _int(r["output_len"])
    if isl is None or osl is None:
        return skip("prompt or output lengths are not stated as numbers")
    notes: list[str] = []
    if "~" in r["input_len"]:
        notes.append("lengths vary by +-15% around the stated means")
    weights, kv = _precision(r["precision"], r["model"])
    if kv is None:
        kv = stacks.kv_default(stack, weights)
        notes.append(f"KV precision unstated: the stack's default ({kv})")
    scen = r["scenario"].lower()
    offline = any(w in scen for w in ("offline", "benchmark_throughput", "benchmark_latency", "static batch"))
    mml = re.search(r"max-model-len (\d+)", r["notes"] + " " + r["scenario"])
    max_model_len = int(mml.group(1)) if mml else catalog.model(model).max_context
    static_n = re.match(r"(?:batch (\d+))|(?:(\d+) prompts at once)", rate)
    conc = re.match(r"concurrency (\d+)", rate)
    settings = _settings(stack, version, hw, catalog, offline, max_model_len, model)
    if settings is None:
        if not static_n or int(static_n.group(1) or static_n.group(2)) > 256:
            return skip("vLLM version not stated: its batch defaults are unknown")
        settings = stacks.vllm_v0_defaults(max_model_len)
        notes.append("vLLM version unstated: the batch fits every version's cap; V0 prefill split assumed")
    if (
        stack == "vllm-v0"
        and (cmd := V0_SCRIPT.search(r["notes"]))
        and "--enable-chunked-prefill" not in cmd.group(0)
    ):
        settings = stacks.StackDefaults(
            settings.max_batch, max(max_model_len, 2048), False, max(max_model_len, 2048),
            "vLLM V0 benchmark script without --enable-chunked-prefill (off by default): whole prompts",
        )  # fmt: skip
        notes.append(
            f"stated command has no --enable-chunked-prefill: whole prompts, {max_model_len:,}-token passes"
        )
    seqs = re.search(r"max[-_]num[-_]seqs[ =](\d+)|max_batch_size (\d+)", r["notes"] + " " + rate)
    max_batch = int(seqs.group(1) or seqs.group(2)) if seqs else settings.max_batch
    tokens = re.search(r"max_num_tokens (\d+)", r["notes"])
    budget = int(tokens.group(1)) if tokens else settings.token_budget
    if lay.sglang_dp_attention:  # SGLang 0.4: DP attention halves each rank's chunked prefill size
        budget //= 2
    if lay.dp > 1:  # every data-parallel rank schedules its own batch under these limits
        max_batch, budget = max_batch * lay.dp, budget * lay.dp
    notes.extend(lay.notes)
    if spec is not None:
        notes.append(f"MTP speculation: {spec[0]} drafted tokens, {spec[1]:.0%} accepted (stated)")
    common = {
        "id": rid, "model": model, "hardware": hw, "tp": lay.tp, "weights": weights, "kv": kv,
        "attention_weights": _attention(r["precision"]), "eager": _eager(r["notes"]),
        "prompt_tokens": isl, "output_tokens": osl, "unit": r["unit"], "source": r["source"],
        "stack": stack, "source_key": key, "max_batch": max_batch, "token_budget": budget,
        "chunked": settings.chunked_prefill, "count_input": count_input,
        "kv_mem_fraction": stacks.kv_fraction(stack),
        "dp": lay.dp, "ep": lay.ep, "imbalance": lay.imbalance, "speculation": spec,
    }  # fmt: skip
    value = float(r["value"]) * (1000.0 if r["unit"].strip() == "s" else 1.0)
    if static_n:
        n = int(static_n.group(1) or static_n.group(2))
        point = Measurement(kind=kind, batch=n, static=True, value=value, note="; ".join(notes), **common)  # type: ignore[arg-type]
    elif conc:
        c = int(conc.group(1))
        if kind == "batch_latency":
            point = Measurement(kind=kind, batch=c, static=True, value=value, note="; ".join(notes), **common)  # type: ignore[arg-type]
        else:
            sent = re.search(r"(\d[\d,]*) (?:prompts|requests)\b", r["scenario"] + " " + rate)
            lockstep = bool(re.search(r"range ratio 1(?:\.0+)?\)", r["scenario"])) and "~" not in (
                r["input_len"] + r["output_len"]
            )
            if lockstep:
                notes.append("fixed lengths, clients started together: they stay in step")
            point = Measurement(
                kind=kind, concurrency=c, value=value, note="; ".join(notes),
                prompts=int(sent.group(1).replace(",", "")) if sent else 0, lockstep=lockstep, **common,  # type: ignore[arg-type]
            )  # fmt: skip
    elif rate.lower().startswith(("infinite", "offline", "inf")):
        point = Measurement(kind=kind, value=value, note="; ".join(notes), **common)  # type: ignore[arg-type]
    else:
        return skip(f"load {rate!r} is not one the steady-state predictor covers")
    if point.kind in ("tpot", "ttft") and not point.concurrency:
        return skip("latency under an unbounded queue depends on the run's length")
    return Row(rid, key, stack, kind_col, point)


def _itl_fit(r: dict[str, str], by_id: dict[str, dict[str, str]], catalog: Catalog, key: str, stack: str,
             model: str, hw: str) -> Row:  # fmt: skip
    """A reported fit ITL = intercept + slope * context as two decode points (1k and 100k context)."""
    rid = r["id"]
    n = int(rid[1:])
    pair_id = f"X{n + 1:03d}" if "intercept" in r["metric"] else f"X{n - 1:03d}"
    other = by_id.get(pair_id)
    if other is None:
        return Row(rid, key, stack, r["kind"], None, "the fit's other parameter is missing")
    intercept = float(r["value"] if "intercept" in r["metric"] else other["value"])
    slope = float(other["value"] if "intercept" in r["metric"] else r["value"])
    ctx = 1000 if "intercept" in r["metric"] else 100_000
    weights, kv = _precision(r["precision"], r["model"])
    point = Measurement(
        id=rid, model=model, hardware=hw, tp=int(r["tp"]), weights=weights, kv=kv or "bf16",
        kind="decode", batch=1, context_tokens=ctx, value=intercept + slope * ctx, unit="ms",
        source=r["source"], stack=stack, source_key=key,
        note=f"from the reported fit (with {pair_id}): ITL at {ctx:,} tokens of context",
    )  # fmt: skip
    return Row(rid, key, stack, r["kind"], point)


OPEN_LOOP_REASON = "open-loop arrivals at a rate: rerun end to end by the simulator (never fitted)"
"""Why an open-loop row with stated mean lengths is not a point: `open_loop_rows` reads it instead."""


def _open_loop_rate(rate: str) -> float | None:
    """Requests per second of an open-loop row ('Poisson 16 req/s', 'request rate 1000 ...'), else None."""
    m = re.match(
        r"(?:poisson\s+|request rate\s+)?(\d+(?:\.\d+)?)\s*(?:req/s|\b)", rate.strip(), re.IGNORECASE
    )
    if m is None or not (rate.lower().startswith(("poisson", "request rate")) or "req/s" in rate):
        return None
    return float(m.group(1))


def _means(r: dict[str, str]) -> tuple[float, float, int] | None:
    """(mean prompt, mean output, prompts) where a row states its dataset's mean prompt length and
    its token totals ('ShareGPT (mean 215.2)'; notes '1000 prompts: 215196 input / 120689 output
    tokens in total'), else None."""
    mean_in = re.search(r"\(mean (\d+(?:\.\d+)?)\)", r["input_len"])
    totals = re.search(r"(\d+) prompts: (\d+) input / (\d+) output tokens in total", r["notes"])
    if mean_in is None or totals is None:
        return None
    n = int(totals.group(1))
    return float(mean_in.group(1)), int(totals.group(3)) / n, n


@dataclass(frozen=True)
class OpenLoop:
    """An open-loop row (Poisson arrivals at a rate) with what the simulator needs to rerun it.

    Only the lengths' means are stated (ShareGPT prompts, model-written answers): the rerun gives
    every request the mean prompt and answer, which is an assumption, said in `note`.
    """

    id: str
    source_key: str
    source: str
    stack: str
    model: str
    hardware: str
    tp: int
    weights: Precision
    kv: KvPrecision
    attention_weights: Precision | None
    eager: bool
    mean_input: float
    mean_output: float
    prompts: int
    rate_rps: float
    figure: Kind
    value: float
    unit: str
    max_batch: int
    token_budget: int
    chunked: bool
    note: str


def _open_loop(r: dict[str, str], catalog: Catalog, key: str, stack: str, version: tuple[int, int] | None,
               model: str, hw: str, kind: Kind) -> OpenLoop:  # fmt: skip
    """What the simulator needs to rerun an open-loop row with stated mean lengths."""
    means, rate = _means(r), _open_loop_rate(r["rate"])
    assert means is not None and rate is not None
    weights, kv = _precision(r["precision"], r["model"])
    notes = ["every request at the stated mean lengths (their spread is not stated)"]
    if kv is None:
        kv = stacks.kv_default(stack, weights)
        notes.append(f"KV precision unstated: the stack's default ({kv})")
    text = r["notes"]
    max_len = catalog.model(model).max_context
    mla = catalog.model(model).mla is not None
    settings = _settings(stack, version, hw, catalog, False, max_len, model) or stacks.vllm_v0_defaults(
        max_len, mla
    )
    seqs = re.search(r"max-num-seqs (\d+)", text)
    tokens = re.search(r"max-num-batched-tokens (\d+)", text)
    chunk = re.search(r"enable-chunked-prefill (TRUE|FALSE)", text)
    chunked = chunk.group(1) == "TRUE" if chunk else settings.chunked_prefill
    budget = int(tokens.group(1)) if tokens else (settings.token_budget if chunked else max(max_len, 2048))
    steps = re.search(r"num-scheduler-step (\d+)", text)
    if steps and int(steps.group(1)) > 1:
        notes.append(f"{steps.group(1)} scheduler steps per host call (multi-step): not modelled")
    return OpenLoop(
        id=r["id"], source_key=key, source=r["source"], stack=stack, model=model, hardware=hw,
        tp=int(r["tp"]), weights=weights, kv=kv, attention_weights=_attention(r["precision"]),
        eager=_eager(r["notes"]),
        mean_input=means[0], mean_output=means[1],
        prompts=means[2], rate_rps=rate, figure=kind, value=float(r["value"]), unit=r["unit"],
        max_batch=int(seqs.group(1)) if seqs else settings.max_batch, token_budget=budget,
        chunked=chunked, note="; ".join(notes),
    )  # fmt: skip


def open_loop_rows(catalog: Catalog) -> list[OpenLoop]:
    """The open-loop rows of calibration-extra.csv that the simulator reruns (`OPEN_LOOP_REASON`)."""
    return [r.open_loop for r in reference_rows(catalog) if r.open_loop is not None]


def reference_rows(catalog: Catalog) -> list[Row]:
    """Both reference files' rows, judged (the first file's rows are all usable)."""
    base = datafiles.data_dir() / "reference"
    first = base / "calibration.csv"
    extra = base / EXTRA_FILE
    if not first.is_file() or not extra.is_file():
        raise ScenarioError(
            "reference data not found: data/reference/calibration*.csv is missing from the project"
        )
    rows = []
    for m in read_reference_csv(first):
        m = replace(m, stack=stack_of(m), source_key=source_key(m.source))
        rows.append(Row(m.id, m.source_key, m.stack, m.kind, m))
    rows.extend(read_extra_csv(extra, catalog))
    from engine.calibration import reference_gpustack  # it reads its rows with this module's judge

    rows.extend(reference_gpustack.read_gpustack_rows(catalog))
    from engine.calibration import reference_moe

    rows.extend(reference_moe.read_moe_rows(catalog))
    return rows


def usable_points(catalog: Catalog) -> list[Measurement]:
    """The points of every usable reference row."""
    return [r.point for r in reference_rows(catalog) if r.point is not None]
