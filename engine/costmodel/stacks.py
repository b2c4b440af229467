"""Serving stacks: the scheduler defaults each one runs with, by chip, with their sources.

A calibration profile belongs to a chip (family) and a serving stack, because the same chip runs
measurably faster or slower under TensorRT-LLM, vLLM or SGLang. A stack also brings defaults a
scenario inherits unless it sets them: the batch cap, the token budget per iteration, whether
long prompts are chunked, and the KV-cache precision. The fit of each reference row uses the
settings that row ran with (`settings_for_row`), so the profile and the scenarios agree.

Sources (stored copies read through the project's search tools; see docs/calibration.md):

- vLLM, V1 engine (0.9 and later), `EngineArgs.get_batch_defaults` in vllm/engine/arg_utils.py:
  on a chip with at least 70 GiB of memory that is not an A100, `vllm serve` defaults to 8,192
  tokens per iteration and 1,024 sequences (the offline `LLM` class: 16,384 and 1,024); on other
  chips 2,048 and 256 (offline: 8,192 and 256). Chunked prefill is on. `kv_cache_dtype="auto"`
  keeps the KV cache in the model's activation precision (bf16) even for FP8 weights.
- vLLM, V0 engine (before 0.8; its own profile, `vllm-v0`, since its kernels and scheduler
  measure differently): `max_num_seqs` 256; chunked prefill off unless the context
  limit exceeds 32K tokens, so a whole prompt is prefilled in one iteration (the token budget is
  then the context limit); with chunking on, 2,048 tokens per iteration (assumption: the value
  of the later 0.6 releases; earlier ones used 512).
- SGLang, `ServerArgs` in sglang/srt/server_args.py: `chunked_prefill_size` 2,048 below 35 GB
  of memory, 8,192 below 160 GB, 16,384 above (B200, MI300X); the number of running requests is
  limited by the KV pool, not by a fixed cap. KV `auto`: bf16.
- TensorRT-LLM, `trtllm-bench`/`trtllm-serve` defaults: `max_batch_size` 2,048 and
  `max_num_tokens` 8,192; its FP8 checkpoints quantise the KV cache to FP8 as well.
- vLLM-Ascend (Huawei Ascend NPUs): a hardware plugin of vLLM, started with `vllm serve`, so
  vLLM's engine arguments and their defaults hold (the V1 defaults by chip size: a 64 GB 910B
  gets 2,048 tokens and 256 sequences); its profile is its own, as its kernels are. Its 0.9.1
  release prefills whole prompts first on models without MLA, and the reference rows that fit the
  profile are replayed so (`reference_gpustack.PREFILL_FIRST`); a scenario names no version and
  keeps these defaults (docs/decisions.md).
- MindIE (Huawei's serving stack for Ascend), `config.json` defaults (MindIE-LLM
  service_parameter_configuration.md): `maxBatchSize` 200, `maxPrefillTokens` 8,192,
  `templateType` "Standard" (prefill and decode batched apart, no SplitFuse chunking) with
  `supportSelectBatch` false (prefill first), and the KV cache sized from 0.8 of the NPU's
  memory (`NPU_MEMORY_FRACTION`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.catalog.model_spec import ModelSpec
from engine.catalog.specs import GIB, HardwareSpec, KvPrecision, Precision
from engine.core.bounds import MAX_TP

StackId = Literal["vllm", "vllm-v0", "sglang", "trtllm", "vllm-ascend", "mindie"]

STACK_NAMES: dict[str, str] = {
    "vllm": "vLLM",
    "vllm-v0": "vLLM V0 (before 0.8)",
    "sglang": "SGLang",
    "trtllm": "TensorRT-LLM",
    "vllm-ascend": "vLLM-Ascend",
    "mindie": "MindIE",
    "splitwise": "Splitwise characterization harness",
    "user": "user measurements",
}
"""Display names of the stacks and measurement harnesses profiles are fitted to."""

SERVING_STACKS: tuple[StackId, ...] = ("vllm", "sglang", "trtllm", "vllm-v0", "vllm-ascend", "mindie")
"""Stacks a scenario can run under (`deployment.stack`)."""

DEFAULT_STACK: StackId = "vllm"
"""The stack of a scenario that names none: it runs on every vendor's GPUs (decision in docs/calibration.md)."""

LARGE_GPU_BYTES = 70 * GIB
"""vLLM's threshold for its larger batch defaults (70 GiB)."""

V0_CONTEXT = 32768
"""Context limit a vLLM V0 scenario is taken to run with: whole prompts, no chunking."""

ASCEND_ONLY: tuple[StackId, ...] = ("vllm-ascend", "mindie")
"""Stacks that run on Huawei Ascend NPUs only."""

MINDIE_KV_FRACTION = 0.8
"""The share of an NPU's memory MindIE sizes weights and KV cache in (`NPU_MEMORY_FRACTION`'s default)."""

UNCAPPED_BATCH = 4096
"""Batch cap standing for 'limited by the KV pool only' (SGLang): the scenario's upper bound."""


@dataclass(frozen=True)
class StackDefaults:
    """Scheduler defaults of one stack on one chip."""

    max_batch: int
    token_budget: int
    chunked_prefill: bool
    chunk_tokens: int
    source: str


def _large(hw: HardwareSpec) -> bool:
    return hw.memory_gb * GIB >= LARGE_GPU_BYTES and not hw.id.startswith("a100")


def defaults(stack: str, hw: HardwareSpec, offline: bool = False) -> StackDefaults:
    """The scheduler defaults `stack` runs with on `hw` (online serving unless `offline`)."""
    if stack == "mindie":
        return StackDefaults(
            200, 8192, False, 8192, "MindIE config.json defaults (prefill first, no chunking)"
        )
    if stack in ("vllm", "vllm-ascend"):
        if _large(hw):
            budget = 16384 if offline else 8192
            return StackDefaults(1024, budget, True, budget, "vLLM V1 defaults for chips of 70 GiB or more")
        budget = 8192 if offline else 2048
        return StackDefaults(256, budget, True, budget, "vLLM V1 defaults for chips under 70 GiB (and A100)")
    if stack == "vllm-v0":
        return vllm_v0_defaults(V0_CONTEXT)
    if stack == "sglang":
        mem = hw.memory_gb * 1024  # MiB, as SGLang compares
        size = 2048 if mem < 35 * 1024 else 8192 if mem < 160 * 1024 else 16384
        return StackDefaults(
            UNCAPPED_BATCH,
            size,
            True,
            size,
            "SGLang chunked_prefill_size by memory; running requests by KV pool",
        )
    return StackDefaults(2048, 8192, True, 8192, "TensorRT-LLM trtllm-bench/trtllm-serve defaults")


def runs_only_on(stack: str, hw: HardwareSpec) -> str:
    """Where `stack` runs when `hw` is not one of those chips ('NVIDIA GPUs only'), else ''."""
    if stack == "trtllm" and hw.vendor != "NVIDIA":
        return "NVIDIA GPUs only"
    if stack in ASCEND_ONLY and not hw.id.startswith("ascend"):
        return "Huawei Ascend NPUs only"
    return ""


def kv_fraction(stack: str) -> float:
    """The memory fraction a stack's KV cache and weights share by default (vLLM's 0.9, SGLang's 0.88)."""
    return {"sglang": 0.88, "mindie": MINDIE_KV_FRACTION}.get(stack, 0.9)


def activation_tokens(stack: str, token_budget: int) -> int:
    """Tokens of forward pass whose activations a stack keeps memory for, beside weights and KV.

    vLLM profiles one forward pass of its token budget at start-up and gives the KV cache what
    is left of its memory fraction; TensorRT-LLM sizes its activation buffers for `max_num_tokens`
    before the KV cache takes its share. SGLang's `mem_fraction_static` covers weights and KV
    only, the activations living in the rest, so it keeps nothing more.
    """
    return 0 if stack == "sglang" else token_budget


def kv_default(stack: str, weights: Precision) -> KvPrecision:
    """The KV-cache precision a stack uses when the deployment does not say.

    TensorRT-LLM's FP8 and FP4 checkpoints carry an FP8 KV cache; vLLM and SGLang keep the KV
    cache in the activation precision (bf16) unless told otherwise.
    """
    if stack == "trtllm" and weights in ("fp8", "fp4"):
        return "fp8"
    return "bf16"


def vllm_v0_defaults(max_model_len: int, mla: bool = False) -> StackDefaults:
    """vLLM's V0 engine (before 0.8): 256 sequences; chunked prefill only past a 32K context, and
    never for a model with MLA (0.7's `VllmConfig.__post_init__` forces it off), whose budget is
    then the context limit."""
    if max_model_len > 32768 and not mla:
        return StackDefaults(256, 2048, True, 2048, "vLLM V0 defaults (chunked prefill past 32K context)")
    budget = max(max_model_len, 2048)
    return StackDefaults(256, budget, False, budget, "vLLM V0 defaults (whole prompts, no chunking)")


def tp_split_problem(model: ModelSpec, tp: int) -> str:
    """Why a serving stack cannot split `model`'s attention over `tp` tensor-parallel ranks ('' where it
    can). Each rank takes an equal share of the query heads, and of the KV heads, which are replicated
    where the ranks outnumber them: vLLM refuses a model whose "Total number of attention heads (28)
    must be divisible by tensor parallel size (3)" (`ModelConfig.verify_with_parallel_config`), and its
    QKV projection divides the KV heads by the ranks, or the ranks by the KV heads
    (`QKVParallelLinear`); SGLang and TensorRT-LLM split heads the same way."""
    if model.heads % tp:
        what = f"share {model.id}'s {model.heads} attention heads evenly"
    elif not _kv_splits(model.kv_heads, tp):
        what = f"split or replicate {model.id}'s {model.kv_heads} KV heads evenly"
    else:
        return ""
    return f"{tp} tensor-parallel ranks cannot {what} (tp can be {tp_degrees_text(model)})"


def tp_degrees_text(model: ModelSpec) -> str:
    """The tensor-parallel degrees up to `bounds.MAX_TP` a model's heads split evenly over: '1, 2, 4 or 8'."""
    ok = [str(t) for t in range(1, MAX_TP + 1) if model.heads % t == 0 and _kv_splits(model.kv_heads, t)]
    return ", ".join(ok[:-1]) + f" or {ok[-1]}" if len(ok) > 1 else ok[0]


def _kv_splits(kv_heads: int, tp: int) -> bool:
    return kv_heads % tp == 0 if tp <= kv_heads else tp % kv_heads == 0
