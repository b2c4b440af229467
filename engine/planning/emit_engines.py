"""One pool's launch command for vLLM (`vllm serve`), SGLang (`python -m sglang.launch_server`) and
TensorRT-LLM (`trtllm-serve`), translated from `emit_facts.DeploymentFacts`.

Each writer returns the argument vector and the notes (comments) for scenario fields that have no
flag in that stack. Every flag written here is one the stack's own argument parser accepts at the
version pinned in tests/planning/emit_flags/ (the test parses each command against those lists).

How the scenario's fields map (docs/planner.md, "From plan to deployment"):
- tp, pp: the stack's tensor and pipeline parallel sizes. dp (attention data parallelism, ranks of
  tp chips each): vLLM's data-parallel size; SGLang's DP attention (tp size tp x dp, dp size dp);
  TensorRT-LLM's attention DP (tp size tp x dp, `enable_attention_dp` in its config file).
  ep: SGLang and TensorRT-LLM take the size; vLLM only switches expert parallelism on (its expert
  ranks are tp x dp).
- max batch, token budget, chunked prefill and chunk size: vLLM's max-num-seqs,
  max-num-batched-tokens and enable-chunked-prefill, a chunk below the budget as
  long-prefill-token-threshold (V1's cap on one request's prefill tokens a step); SGLang's
  max-running-requests, max-prefill-tokens and chunked-prefill-size (-1: off; with attention DP the
  requests and chunk are dp x the scenario's, which count per rank where SGLang's flags count per
  server and are divided among the ranks); TensorRT-LLM's
  max_batch_size, max_num_tokens and enable_chunked_prefill.
- the workload's longest request: vLLM's max-model-len (its default, the model's context, would make
  vLLM refuse a token budget below it with chunked prefill off); limits vLLM refuses are noted.
- KV precision, prefix cache, memory fraction and eager mode where the stack has a flag; weights
  in FP8 from a BF16 checkpoint: online FP8 quantisation where the stack offers it.
"""

from __future__ import annotations

import json
from typing import Any

from engine.planning.emit_facts import DeploymentFacts, PoolFacts, model_arg

Argv = list[str]


def _quantisation(f: DeploymentFacts, online_fp8: bool) -> tuple[Argv, list[str]]:
    """The quantisation flag (or a note) for the scenario's weights against the checkpoint's."""
    if f.weights == f.checkpoint_weights:
        return [], []
    if f.weights == "fp8" and f.checkpoint_weights == "bf16" and online_fp8:
        return ["--quantization", "fp8"], []
    return [], [
        f"model.weights = {f.weights}: the checkpoint stores {f.checkpoint_weights}; serve a checkpoint "
        f"quantised to {f.weights} in its place (no flag of this stack quantises to it at load)"
    ]


_PREEMPTION = {
    "none": "scheduler.preemption = none (whole outputs reserved at admission): {stack} reserves KV as "
    "it grows and preempts by recompute; no flag reserves whole outputs",
    "swap": "scheduler.preemption = swap: {stack} recomputes preempted requests; no flag swaps them out",
}
"""What vLLM and SGLang do instead of a scenario's preemption policy (both recompute)."""


def _disagg_vllm(pool: PoolFacts) -> Argv:
    role = {"prefill": "kv_producer", "decode": "kv_consumer"}.get(pool.role)
    if role is None:
        return []
    config = {"kv_connector": "NixlConnector", "kv_role": role}
    return ["--kv-transfer-config", json.dumps(config, separators=(",", ":"))]


def _vllm_refusals(f: DeploymentFacts, pool: PoolFacts) -> list[str]:
    """Limits vLLM's scheduler config refuses at startup (SchedulerConfig._verify_args), said, not changed:
    the export keeps the modelled values so the command matches what was simulated."""
    lim = pool.limits
    out = []
    longest = pool.max_len(f.max_model_len)
    if longest < f.max_model_len:  # capped at what the cache holds, as the run serves it
        after = (
            "a prefill server holds a prompt's KV and is asked for one token, so prompts up to that length pass"
            if pool.role == "prefill"
            else "vLLM refuses longer requests, as the run rejects those its instances cannot hold (too_long_for_kv)"
        )
        out.append(
            f"pool {pool.name}: --max-model-len {longest}, what a rank's KV cache holds as modelled, below the "
            f"workload's longest request ({f.max_model_len}; vLLM refuses to start with a length its cache cannot "
            f"hold): {after}. vLLM sizes its cache by its own profile: if it finds less, lower --max-model-len"
        )
    if not lim.chunked_prefill and lim.token_budget < longest:
        out.append(
            f"vLLM refuses to start: with chunked prefill off, --max-num-batched-tokens ({lim.token_budget}) "
            f"must be at least --max-model-len ({longest}, the workload's longest request); raise "
            "deployment.batching.token_budget to it, turn chunked prefill on, or cap the request length"
        )
    if lim.max_batch > lim.token_budget:
        out.append(
            f"vLLM refuses to start: --max-num-seqs ({lim.max_batch}) must not exceed "
            f"--max-num-batched-tokens ({lim.token_budget}); lower the batch cap or raise the token budget"
        )
    return out


def vllm_args(f: DeploymentFacts, pool: PoolFacts, *, disagg_flags: bool = True) -> tuple[Argv, list[str]]:
    """Arguments after `vllm serve` for one instance of `pool` (the model first, positional)."""
    lim = pool.limits
    argv = [model_arg(f), "--tensor-parallel-size", str(pool.tp), "--pipeline-parallel-size", str(pool.pp)]
    notes: list[str] = []
    if pool.dp > 1:
        argv += ["--data-parallel-size", str(pool.dp)]
    if pool.ep > 1:
        argv.append("--enable-expert-parallel")
        if pool.ep != pool.tp * pool.dp:
            notes.append(
                f"pool {pool.name}: ep = {pool.ep}; vLLM spreads experts over tp x dp = {pool.tp * pool.dp}"
            )
    argv += ["--max-num-seqs", str(lim.max_batch), "--max-num-batched-tokens", str(lim.token_budget)]
    argv += ["--max-model-len", str(pool.max_len(f.max_model_len))]
    argv.append("--enable-chunked-prefill" if lim.chunked_prefill else "--no-enable-chunked-prefill")
    notes += _vllm_refusals(f, pool)
    if lim.chunked_prefill and lim.chunk_tokens < min(lim.token_budget, pool.max_len(f.max_model_len)):
        # vLLM V1's scheduler caps one request's prefill tokens a step at this threshold (the rest of
        # the budget goes to other requests); a chunk no shorter than the longest request splits none
        argv += ["--long-prefill-token-threshold", str(lim.chunk_tokens)]
    argv += ["--kv-cache-dtype", "fp8" if f.kv == "fp8" else "bfloat16"]
    argv.append("--enable-prefix-caching" if f.prefix_cache else "--no-enable-prefix-caching")
    argv += ["--gpu-memory-utilization", f"{f.mem_fraction:g}"]
    if f.eager:
        argv.append("--enforce-eager")
    quant, qnotes = _quantisation(f, online_fp8=True)
    argv += quant
    if disagg_flags:
        argv += _disagg_vllm(pool)
    if f.preemption != "recompute":
        notes.append(_PREEMPTION[f.preemption].format(stack="vLLM"))
    return argv, notes + qnotes


def sglang_args(f: DeploymentFacts, pool: PoolFacts) -> tuple[Argv, list[str]]:
    """Arguments after `python -m sglang.launch_server` for one instance of `pool`."""
    lim = pool.limits
    argv = ["--model-path", model_arg(f), "--tp-size", str(pool.tp * pool.dp), "--pp-size", str(pool.pp)]
    notes: list[str] = []
    if pool.dp > 1:
        argv += ["--dp-size", str(pool.dp), "--enable-dp-attention"]
    if pool.ep > 1:
        argv += ["--ep-size", str(pool.ep)]
    # SGLang divides these two by dp_size among its attention-DP ranks (server_args.py
    # `_handle_data_parallelism`, and its pool configurator); the scenario counts them per rank.
    argv += ["--max-running-requests", str(lim.max_batch * pool.dp)]
    argv += ["--max-prefill-tokens", str(lim.token_budget)]
    chunk = str(lim.chunk_tokens * pool.dp) if lim.chunked_prefill else "-1"
    argv += ["--chunked-prefill-size", chunk]
    argv += ["--kv-cache-dtype", "fp8_e4m3" if f.kv == "fp8" else "bfloat16"]
    if not f.prefix_cache:
        argv.append("--disable-radix-cache")
    argv += ["--mem-fraction-static", f"{f.mem_fraction:g}"]
    if f.eager:
        notes.append("deployment.eager: no SGLang flag of the pinned version is checked for it; left out")
    quant, qnotes = _quantisation(f, online_fp8=True)
    argv += quant
    if pool.role in ("prefill", "decode"):
        argv += ["--disaggregation-mode", pool.role]
    if f.preemption != "recompute":
        notes.append(_PREEMPTION[f.preemption].format(stack="SGLang"))
    return argv, notes + qnotes


def trtllm_args(
    f: DeploymentFacts, pool: PoolFacts, config_path: str
) -> tuple[Argv, dict[str, Any], list[str]]:
    """Arguments after `trtllm-serve`, the LLM API options file it reads (`--config`), and notes."""
    lim = pool.limits
    argv = [model_arg(f), "--tp_size", str(pool.tp * pool.dp), "--pp_size", str(pool.pp)]
    notes: list[str] = []
    if pool.ep > 1:
        argv += ["--ep_size", str(pool.ep)]
    argv += ["--max_batch_size", str(lim.max_batch), "--max_num_tokens", str(lim.token_budget)]
    if lim.chunked_prefill:
        argv.append("--enable_chunked_prefill")
        if lim.chunk_tokens < lim.token_budget:
            notes.append(
                f"chunk_tokens = {lim.chunk_tokens}: TensorRT-LLM chunks prompts to max_num_tokens "
                f"({lim.token_budget}); no flag sets it apart"
            )
    argv += ["--config", config_path]
    kv_config: dict[str, Any] = {
        "enable_block_reuse": f.prefix_cache,
        "dtype": "fp8" if f.kv == "fp8" else "auto",
    }
    config: dict[str, Any] = {"kv_cache_config": kv_config}
    if pool.dp > 1:
        config["enable_attention_dp"] = True
    if pool.role in ("prefill", "decode"):
        config["cache_transceiver_config"] = {"backend": "DEFAULT"}
        notes.append(
            f"pool {pool.name} ({pool.role}): TensorRT-LLM's disaggregated serving also needs "
            "`trtllm-serve disaggregated` with its own config naming the context and generation "
            "servers; not generated (use --emit dynamo for a prefill/decode deployment)"
        )
    notes.append(
        f"deployment.mem_fraction = {f.mem_fraction:g}: TensorRT-LLM's free_gpu_memory_fraction is a "
        "share of the memory left after the weights, not of the whole; left at its default"
    )
    if f.eager:
        notes.append("deployment.eager: no trtllm-serve flag for it; left out")
    if f.preemption != "none":
        notes.append(
            f"scheduler.preemption = {f.preemption}: trtllm-serve schedules with guaranteed-no-evict "
            "(whole outputs reserved); no flag of the pinned serve command changes it"
        )
    _, qnotes = _quantisation(f, online_fp8=False)
    return argv, config, notes + qnotes
