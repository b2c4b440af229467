"""A scenario's scheduler: routing, queue order, admission, iteration mixing, preemption, elastic roles.

Each policy is saved as a `PolicySpec` and checked by building it from `engine.policies`;
`Elastic` moves instances between prefill and decode. Part of `engine.scenario.model.Scenario`.
"""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
from typing import Annotated, Literal

from pydantic import Field, model_validator

from engine import policies
from engine.catalog.specs import Frozen
from engine.scenario.policy_spec import PolicySpec


class Elastic(Frozen):
    """Elastic roles: an instance may switch between prefill and decode (disaggregated only).

    Every `check_s`, if the prefill queue holds more than `threshold` requests per prefill
    instance and a decode instance is idle, that instance switches to prefill (and the reverse
    for prompts waiting for decode memory). A switch takes `switch_s`, during which the instance
    serves nothing. With `drain`, when the backlog has stayed over the threshold for `sustain_s`
    and no instance of the other role is idle, the least loaded one is drained: it takes no new
    work, finishes what it holds, then switches.

    With `restore`, instances return to their own pool's role once the spike is over, one at a
    time: when neither role is over the threshold and both backlogs have stayed at most a quarter
    of it for `restore_after_s` (the hysteresis that keeps a fluctuating load from switching back
    and forth), an idle moved instance switches home, or the least loaded one is drained first.
    """

    enabled: bool = False
    threshold: Annotated[float, Field(gt=0, le=100_000)] = 8.0
    switch_s: Annotated[float, Field(ge=0, le=3600)] = 20.0
    check_s: Annotated[float, Field(ge=0.01, le=3600)] = 5.0
    drain: bool = True
    sustain_s: Annotated[float, Field(ge=0, le=86_400)] = 15.0
    restore: bool = True
    restore_after_s: Annotated[float, Field(ge=0, le=86_400)] = 30.0


class Scheduler(Frozen):
    """Routing, queue order, admission control, preemption and elastic roles.

    Preemption: with ``none`` a request reserves KV for its prompt and its whole output on
    admission, so memory never runs out (TensorRT-LLM's guaranteed-no-evict policy). With
    ``recompute`` or ``swap`` it reserves only what it holds (vLLM's policy) and grows one token
    a step; when decode memory runs out, a victim (lowest priority, then latest arrival) is
    preempted and later either recomputed from scratch or swapped back in from host memory over
    PCIe. Both costs show up in latency.
    """

    router: PolicySpec = PolicySpec(name="least_loaded")
    queue: PolicySpec = PolicySpec(name="fcfs")
    admission: PolicySpec = PolicySpec(name="none")
    iteration: PolicySpec | None = None
    """How an iteration mixes prompts and decodes (`mixed`, `prefill_first`); unset: the stack's."""
    preemption: Literal["none", "recompute", "swap"] = "none"
    elastic: Elastic = Elastic()

    @model_validator(mode="after")
    def _check(self) -> "Scheduler":
        for kind in ("router", "queue", "admission", "iteration"):
            spec: PolicySpec | None = getattr(self, kind)
            if spec is not None:
                policies.build(kind, spec.as_dict(), where=kind)  # type: ignore[arg-type]
        return self
