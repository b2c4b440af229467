"""The first-token latency of a MoE request that the step model does not produce, fitted per stack.

At one client (no queue, no other request) a MoE TTFT is one prompt's prefill, and the step model
times it well in its slope but not in its intercept (issue 30, docs/calibration.md, "MoE TTFT,
row by row"): the SGLang cookbook's DeepSeek-R1 on eight B200s takes 126-153 ms for a 610-token
prompt and 166 ms for 4,194 tokens, 3,600 tokens more for 13-40 ms more, where the step model
gives 36 and 67 ms; Qwen3-235B on the same chips 99-111 and 140 ms against 31 and 62. What is
left is about the same at both lengths, so it is a cost per request (or per prefill pass), not a
slow prefill: a prefill runs without CUDA graphs (every layer's kernels launched from Python,
SGLang's `extend` batches and vLLM's batches above the largest captured size), then the token
goes through the stack's front end (tokenizer, scheduler and detokenizer processes, the HTTP
stream).

`first_token_ms` is that residual: per serving stack, the median over the stack's MoE TTFT rows
at one client of measured minus predicted (at least 0), where those rows come from
`MIN_SOURCES` sources or more; every other stack (and a stack left with one source when its
other is held out) takes the median over every stack's rows. Leaving a source out refits it
without that source's rows (`crossval`), which adds it once to every MoE TTFT it predicts,
whatever the load. Dense TTFTs are left as they were: their three rows are in the dense fits,
which every preset rides on. `calibrate --reference --write` ships the fit to every point in
presets/calibration.toml ([first_token]); every run of a MoE model pays its stack's figure on
the way in, not on the chips (`engine.scenario.resolve.first_token`, `engine.serving.way_in`),
unless the scenario sets `deployment.first_token_ms`; the simulator's reruns of the MoE points
pay the figure their prediction adds (`engine.explain.end_to_end.point_reruns`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from engine.calibration.measurements import Measurement
from engine.calibration.moe_fit import is_moe
from engine.catalog.entries import Catalog

MIN_SOURCES = 2
"""Sources a stack's one-client rows need for a figure of its own (one cannot be told from its harness)."""


@dataclass(frozen=True)
class FirstToken:
    """The first-token latency per stack, and the figure every other stack takes."""

    shared_ms: float
    stacks: dict[str, float] = field(default_factory=dict)
    ids: tuple[str, ...] = ()
    """The one-client MoE TTFT points it was fitted to."""

    def ms(self, stack: str) -> float:
        """The latency a MoE request's first token takes beyond the step model under `stack`."""
        return self.stacks.get(stack, self.shared_ms)


NONE = FirstToken(shared_ms=0.0)
"""No latency beyond the step model (where no one-client MoE TTFT row is left to fit it)."""


def fitted_points(points: Sequence[Measurement], catalog: Catalog) -> list[Measurement]:
    """The points the latency is fitted to: MoE TTFTs at one client."""
    return [m for m in points if m.kind == "ttft" and m.concurrency == 1 and is_moe(m, catalog)]


def _median_residual(residuals: Sequence[float]) -> float:
    return max(0.0, float(np.median(residuals))) if residuals else 0.0


def fit(
    points: Sequence[Measurement], catalog: Catalog, predict: Callable[[Measurement], float]
) -> FirstToken:
    """The latency fitted to `points`' one-client MoE TTFTs, each predicted by `predict` (ms)."""
    chosen = fitted_points(points, catalog)
    if not chosen:
        return NONE
    resid = {m.id: m.value - predict(m) for m in chosen}
    stacks = {}
    for stack in sorted({m.stack for m in chosen}):
        mine = [m for m in chosen if m.stack == stack]
        if len({m.source_key for m in mine}) >= MIN_SOURCES:
            stacks[stack] = round(_median_residual([resid[m.id] for m in mine]), 1)
    shared = round(_median_residual(list(resid.values())), 1)
    return FirstToken(shared_ms=shared, stacks=stacks, ids=tuple(m.id for m in chosen))
