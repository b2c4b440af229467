"""Iteration schedulers: how an instance mixes prompts and decodes in one engine iteration.

Continuous batching forms one iteration at a time from the running decodes and the waiting or
partly prefilled prompts. Stacks differ in one decision that shapes every latency figure:

- ``mixed`` (vLLM's V1 scheduler; TensorRT-LLM's in-flight batching): every iteration runs one
  decode step of every running request, and prompts fill what is left of the token budget, in
  queue order, the first waiting prompt taking as much as it needs (with chunked prefill, a long
  prompt continues in the next iterations). Decodes never stop, but an iteration carrying a big
  chunk is a long step for every decode in it. Sources: vLLM `vllm/v1/core/sched/scheduler.py`
  (running requests first, then waiting ones, under `max_num_batched_tokens`); TensorRT-LLM's
  in-flight batching docs (context and generation requests in one batch under
  `max_num_tokens`).
- ``prefill_first`` (vLLM's V0 scheduler before 0.8, the baseline of DistServe and Splitwise;
  SGLang's default, which runs prefill batches apart from decode batches unless
  `--enable-mixed-chunk`): an iteration with prompt work to do runs prompts only, and the
  running decodes wait for it. Splitting long prompts (SGLang's chunked prefill) bounds an
  iteration's size but not the stall: the chunks of a prompt run back to back, so decodes wait
  for the whole prompt (and for any prompt queued behind it), as in vLLM V0 without chunking.
  Only mixing bounds a stall to one chunk (Sarathi-Serve's stall-free batching). Sources: vLLM V0
  `vllm/core/scheduler.py` (`_schedule_default`: prefills first, decodes only when none were
  scheduled); SGLang `scheduler.py` (`get_next_batch_to_run`: a new prefill batch is run before
  the running decode batch).

Whether long prompts are split (`deployment.batching.chunked_prefill`) is a separate setting;
a prefill-only instance never mixes (it has no decodes) and never chunks. The scenario's
`deployment.stack` picks the scheduler its measurements ran with; `scheduler.iteration`
overrides it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from engine.policies.registry import Policy, PolicyKind, build, register


@dataclass(frozen=True, kw_only=True)
class IterationScheduler(Policy):
    """Decides whether decodes ride along with prompt work in one iteration."""

    kind: ClassVar[PolicyKind] = "iteration"
    mixes_decodes: ClassVar[bool] = True


@register
@dataclass(frozen=True, kw_only=True)
class Mixed(IterationScheduler):
    """Decodes every iteration; prompts fill the rest of the token budget (vLLM V1, TensorRT-LLM)."""

    name: ClassVar[str] = "mixed"
    help: ClassVar[str] = (
        "Every iteration runs a decode step of each running request; prompts fill the rest of the "
        "token budget, first come first served (vLLM V1, TensorRT-LLM in-flight batching)."
    )
    mixes_decodes: ClassVar[bool] = True


@register
@dataclass(frozen=True, kw_only=True)
class PrefillFirst(IterationScheduler):
    """Prompt work first; running decodes wait while prompts are prefilled (vLLM V0, SGLang)."""

    name: ClassVar[str] = "prefill_first"
    help: ClassVar[str] = (
        "An iteration with prompt work runs prompts only and the running decodes wait for it "
        "(vLLM's V0 scheduler, the baseline of DistServe; SGLang's default, chunked)."
    )
    mixes_decodes: ClassVar[bool] = False


STACK_SCHEDULER = {
    "vllm": "mixed",
    "trtllm": "mixed",
    "sglang": "prefill_first",
    "vllm-v0": "prefill_first",
    "vllm-ascend": "mixed",
    "mindie": "prefill_first",
}
"""The iteration scheduler each serving stack runs by default."""


def build_iteration(spec: Mapping[str, Any]) -> IterationScheduler:
    """An iteration scheduler from its saved form."""
    policy = build("iteration", spec, where="scheduler.iteration")
    assert isinstance(policy, IterationScheduler)
    return policy
