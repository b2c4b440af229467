"""Autoscaling settings of a pool: its autoscaler, its bounds and cooldowns, and what a cold start costs.

A pool with `autoscale` set has at most `count` instances (its slots) and at least
`min_instances`; `initial_instances` of them are warm at t = 0. Every `interval_s` the pool's
autoscaler (a registered policy, `engine.policies.scaling`) says how many it wants; a scale-up
waits `up_cooldown_s` after the last one, a scale-down `down_cooldown_s` after the last change (a
scale-up or down, or an instance becoming ready: docs/autoscaling.md).

A new instance is billed from the moment it is requested and serves only after its cold start:
`startup_s` (the container and the serving engine starting) plus its weights over the load
bandwidth plus `warmup_s` (CUDA graphs captured, kernels compiled). The load bandwidth is
`load_gb_s` when set, else the default of the `storage` tier it loads from (`TIER_GB_S`, with
their sources). A scaled-down instance drains: it takes no new work and stops, unbilled from then
on, once it has finished what it holds.
"""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from engine import policies
from engine.catalog.specs import Frozen
from engine.core.errors import ScenarioError
from engine.scenario.policy_spec import PolicySpec

TIER_GB_S: dict[str, float] = {"nvme": 6.0, "network": 2.5, "peer": 40.0}
"""Default weight-loading bandwidth (GB/s, one instance) per storage tier. Sources:

- ``nvme``: a PCIe 4.0 x4 data-centre NVMe drive reads about 7 GB/s sequentially (vendor data
  sheets, e.g. Samsung PM9A3: 6.9 GB/s); ServerlessLLM (Fu et al., OSDI 2024, arXiv 2401.14351)
  shows a loader that runs close to the drive's bandwidth, where PyTorch's and Safetensors'
  loaders reach 3.6 to 8.2 times less. 6 GB/s is about 85% of one drive.
- ``network``: assumption: a 25 Gbit/s storage network to object storage or NFS, fully used
  (3.1 GB/s raw, 2.5 GB/s achieved); ServerlessLLM quotes 5 GB/s as a fast download, which
  `load_gb_s` can state.
- ``peer``: weights copied from a running instance's GPUs over the scale-out network: one
  400 Gbit/s InfiniBand NDR port (NVIDIA ConnectX-7 data sheet: 50 GB/s) at 80%."""

STARTUP_S = 30.0
"""Default start-up: assumption: scheduling the pod, starting the container and the serving engine
(tens of seconds in practice; ServerlessLLM counts the download and load apart, as here)."""

WARMUP_S = 20.0
"""Default warm-up: assumption: capturing CUDA graphs and compiling kernels before serving
(vLLM captures a graph per batch size at start-up; tens of seconds for a large model)."""


class ColdStart(Frozen):
    """What a new instance waits for before it serves: start-up, its weights loading, warm-up."""

    startup_s: Annotated[float, Field(ge=0, le=3600)] = STARTUP_S
    storage: Literal["nvme", "network", "peer"] = "network"
    load_gb_s: Annotated[float, Field(gt=0, le=10_000)] | None = None
    """Weight-loading bandwidth of one instance in GB/s; unset: the `storage` tier's default."""
    warmup_s: Annotated[float, Field(ge=0, le=3600)] = WARMUP_S

    TIERS: ClassVar[dict[str, float]] = TIER_GB_S

    def load_bandwidth_gb_s(self) -> float:
        """The bandwidth the weights load at: `load_gb_s`, else the tier's default."""
        return self.load_gb_s if self.load_gb_s is not None else TIER_GB_S[self.storage]

    def seconds(self, weight_bytes: float) -> float:
        """Seconds from request to serving for an instance holding `weight_bytes` of weights."""
        return self.startup_s + weight_bytes / (self.load_bandwidth_gb_s() * 1e9) + self.warmup_s


class Autoscale(Frozen):
    """A pool's autoscaler, its bounds, cooldowns and evaluation interval, and its cold start."""

    policy: PolicySpec = PolicySpec(name="slo")
    min_instances: Annotated[int, Field(ge=1, le=10_000)] = 1
    initial_instances: Annotated[int, Field(ge=1, le=10_000)] | None = None
    """Instances warm at t = 0; unset: `min_instances`."""
    interval_s: Annotated[float, Field(ge=1, le=3600)] = 30.0
    up_cooldown_s: Annotated[float, Field(ge=0, le=86_400)] = 60.0
    down_cooldown_s: Annotated[float, Field(ge=0, le=86_400)] = 300.0
    cold_start: ColdStart = ColdStart()

    @model_validator(mode="after")
    def _check(self) -> "Autoscale":
        try:
            policies.build("autoscaler", self.policy.as_dict(), where="policy")
        except ScenarioError as exc:
            raise ValueError(str(exc)) from None
        return self

    @property
    def initial(self) -> int:
        """Instances warm at t = 0."""
        return self.initial_instances if self.initial_instances is not None else self.min_instances

    def check_within(self, count: int, tier: str) -> None:
        """Raise ValueError unless the bounds fit a pool of `count` slots in the data centre."""
        if tier != "datacenter":
            raise ValueError("autoscale: only data-centre pools autoscale (an edge site's are fixed)")
        if self.min_instances > count:
            raise ValueError(
                f"autoscale.min_instances: {self.min_instances} must be from 1 to count ({count})"
            )
        # after the bound on min_instances: with min_instances = 9 in a pool of 8, 'initial_instances: 1 must
        # be at least min_instances (9)' sent the user to the wrong field (a review)
        if self.initial_instances is not None and self.initial_instances < self.min_instances:
            raise ValueError(
                f"autoscale.initial_instances: {self.initial_instances} must be from min_instances "
                f"({self.min_instances}) to count ({count})"
            )
        if self.initial > count:
            raise ValueError(f"autoscale.initial_instances: {self.initial} must be from 1 to count ({count})")


def conflicts(
    scaled: set[str], elastic: bool, fallback: str, degrade_on_capacity: bool, faulted: list[str]
) -> str:
    """Why a scenario's autoscaled pools (by name) cannot run beside its other settings ('' when they can).

    Autoscaled pools come and go on their own: elastic roles, a fallback and faults would move the
    same instances, and instances scaled away are not capacity lost (degrade's `below_capacity`).
    """
    if not scaled:
        return ""
    if elastic:
        return "scheduler.elastic.enabled: elastic roles and autoscaled pools do not combine"
    if fallback != "none":
        return 'deployment.fallback: must be "none" with autoscaled pools'
    if degrade_on_capacity:
        return "deployment.degrade.below_capacity: must be 0 with autoscaled pools (use above_backlog)"
    for i, pool in enumerate(faulted):
        if pool in scaled:
            return f"faults[{i}].pool: {pool!r} autoscales; faults on autoscaled pools are not modelled"
    return ""
