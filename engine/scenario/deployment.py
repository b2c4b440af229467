"""A scenario's deployment: its pools of instances, how they batch, and the KV link between them.

How the work is split: one or more colocated (mixed) pools, or prefill and decode pools with the
link the prompt's KV cache crosses; each `Pool`'s chips and parallelism, the continuous-batching
limits (`Batching`, and the `Limits` a run uses), speculative decoding, the serving stack, the
fallback for a lost prefill pool, degrading, the edge site and power caps. Part of
`engine.scenario.model.Scenario`.
"""

# No `from __future__ import annotations` here: pydantic would compile each field's annotation
# string at import (docs/performance.md, "The cold start").
from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from engine.catalog.specs import MIN_LINK_GB_S, Frozen, HardwareSpec
from engine.core import bounds
from engine.costmodel import stacks
from engine.costmodel.maturity import Maturity
from engine.scenario.degrade import Degrade
from engine.scenario.fields import Name
from engine.scenario.network import Edge
from engine.scenario.power_budget import PowerCapKw
from engine.scenario.scaling import Autoscale


class Pool(Frozen):
    """A pool of identical instances: `count` instances of `tp` x `pp` x `dp` chips of one kind."""

    name: Name
    role: Literal["mixed", "prefill", "decode"] = "mixed"
    hardware: Annotated[str, Field(min_length=1, max_length=64)] = "h100-sxm"
    tp: Annotated[int, Field(ge=1, le=bounds.MAX_TP)] = 1
    pp: Annotated[int, Field(ge=1, le=bounds.MAX_PP)] = 1
    dp: Annotated[int, Field(ge=1, le=bounds.MAX_TP)] = 1
    """Attention data parallelism: ranks of tp chips that each hold their own requests' KV cache."""
    ep: Annotated[int, Field(ge=1, le=bounds.MAX_TP * bounds.MAX_TP)] = 1
    """Expert parallelism: ranks the routed experts are spread over (divides tp x dp; MoE only)."""
    count: Annotated[int, Field(ge=1, le=bounds.MAX_INSTANCES)] = 1
    profile: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    maturity: Maturity | None = None
    """Software maturity of the chip's stack: measured, vendor, port; unset: as calibrated (docs/calibration.md)."""
    sends_to: Annotated[tuple[Name, ...], Field(max_length=8)] = ()
    """Prefill pools only: the decode pools this pool hands prompts to (empty: any decode pool)."""
    tier: Literal["datacenter", "edge"] = "datacenter"
    """Where the pool runs: the data centre, or an edge site (`deployment.edge`; role 'mixed')."""
    autoscale: Autoscale | None = None
    """Instances come and go with the load (`engine.scenario.scaling`); `count` is then the most it may have."""
    power_cap_kw: PowerCapKw = None
    """The pool's chips together may draw at most this, kW (`engine.scenario.power_budget`); unset: no cap."""

    @model_validator(mode="after")
    def _check(self) -> "Pool":
        if self.autoscale is not None:
            self.autoscale.check_within(self.count, self.tier)
        if self.tier == "edge" and self.power_cap_kw is not None:
            # the edge site's budget admits chips at their uncapped draw: a pool cap there ran its NPUs at 38%
            # of their clock while the budget still held two of four busy (a review)
            raise ValueError(
                "power_cap_kw: an edge pool's chips share the edge site's budget (deployment.edge.power_budget_w); "
                "a pool cap is for data-centre pools"
            )
        return self

    @property
    def chips_per_instance(self) -> int:
        """Chips in one instance: tp x dp per pipeline stage, pp stages."""
        return self.tp * self.pp * self.dp

    @property
    def chips(self) -> int:
        """Chips in the pool: `count` instances (an autoscaled pool's most) of `chips_per_instance`."""
        return self.count * self.chips_per_instance


class Batching(Frozen):
    """Continuous batching limits of every instance; an unset field takes the serving stack's default.

    `Scenario.batching(chip)` gives the limits a pool on that chip uses (`ResolvedPool.limits`): these
    values where set, else the defaults of `deployment.stack` on the chip (engine/costmodel/stacks.py).
    """

    max_batch: Annotated[int, Field(ge=1, le=bounds.MAX_BATCH)] | None = None
    token_budget: Annotated[int, Field(ge=16, le=1_048_576)] | None = None
    chunked_prefill: bool | None = None
    chunk_tokens: Annotated[int, Field(ge=16, le=1_048_576)] | None = None

    def on(self, stack: str, hw: HardwareSpec | None) -> "Limits":
        """The limits an instance of `stack` on `hw` runs with: these values where set, else the
        stack's defaults on that chip (the smallest where the chip is unknown)."""
        d = (
            stacks.defaults(stack, hw)
            if hw is not None
            else stacks.StackDefaults(256, 2048, True, 2048, "unknown chip: the smallest defaults")
        )
        budget = self.token_budget if self.token_budget is not None else d.token_budget
        return Limits(
            max_batch=self.max_batch if self.max_batch is not None else d.max_batch,
            token_budget=budget,
            chunked_prefill=self.chunked_prefill if self.chunked_prefill is not None else d.chunked_prefill,
            chunk_tokens=self.chunk_tokens if self.chunk_tokens is not None else min(d.chunk_tokens, budget),
            source=d.source,
        )


class Limits(Frozen):
    """The batching limits a run uses, every field set."""

    max_batch: int
    token_budget: int
    chunked_prefill: bool
    chunk_tokens: int
    source: str = ""


class Speculative(Frozen):
    """Speculative decoding on every decode step: `tokens` drafted, each accepted with `acceptance`.

    Defaults by method (docs/cost-model.md): ``mtp`` (a multi-token-prediction head, DeepSeek-V3:
    one token, 85% accepted, per its technical report) and ``draft`` (a small draft model of the
    same family, `draft_model`: four tokens, 70% accepted, the middle of the range Leviathan et
    al. report). Decode steps mixed with prompt chunks run without it.
    """

    method: Literal["mtp", "draft"] = "mtp"
    tokens: Annotated[int, Field(ge=1, le=16)] | None = None
    acceptance: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    draft_model: Annotated[str, Field(min_length=1, max_length=64)] | None = None

    DEFAULTS: ClassVar[dict[str, tuple[int, float]]] = {"mtp": (1, 0.85), "draft": (4, 0.7)}

    def resolved(self) -> tuple[int, float]:
        """(tokens, acceptance) with the method's defaults where unset."""
        k, a = self.DEFAULTS[self.method]
        return (
            self.tokens if self.tokens is not None else k,
            self.acceptance if self.acceptance is not None else a,
        )

    @model_validator(mode="after")
    def _check(self) -> "Speculative":
        if self.method == "draft" and not self.draft_model:
            raise ValueError("draft_model: a draft model's catalog id is needed for method 'draft'")
        return self


class KvLink(Frozen):
    """The link the prompt's KV cache crosses from a prefill to a decode instance.

    `bandwidth_gb_s` per instance pair; left unset it is the sending instance's scale-out
    bandwidth (each chip has its own NIC). With `overlap`, layer l moves while l+1 computes.
    """

    bandwidth_gb_s: Annotated[float, Field(ge=MIN_LINK_GB_S, le=100_000)] | None = None
    latency_ms: Annotated[float, Field(ge=0, le=10_000)] = 0.05
    overlap: bool = True
    shared_gb_s: Annotated[float, Field(ge=MIN_LINK_GB_S, le=1_000_000)] | None = None
    """A fabric every hand-off also crosses (a spine, an inter-building or inter-site link), in GB/s
    for all transfers together; unset: none, each pair has its own path. Transfers contend for it."""


class Deployment(Frozen):
    """How the work is split: colocated (mixed pools) or disaggregated (prefill + decode)."""

    mode: Literal["colocated", "disaggregated"] = "colocated"
    stack: Literal["vllm", "sglang", "trtllm", "vllm-v0", "vllm-ascend", "mindie"] = "vllm"
    """Serving stack: its calibration profile per chip and its scheduler defaults (docs/calibration.md)."""
    pools: Annotated[tuple[Pool, ...], Field(min_length=1, max_length=bounds.MAX_POOLS)] = (
        Pool(name="main"),
    )
    batching: Batching = Batching()
    link: KvLink = KvLink()
    mem_fraction: Annotated[float, Field(gt=0.1, le=0.98)] = 0.9
    eager: bool = False
    """Run without CUDA/HIP graphs (vLLM's `--enforce-eager`): every layer of every iteration pays
    a launch cost (`engine.catalog.specs.EAGER_LAYER_MS`)."""
    first_token_ms: Annotated[float, Field(ge=0, le=10_000)] | None = None
    """A latency every request pays before its first token beyond the step model's iterations, ms,
    on the way in and not on the chips (a prefill launched without CUDA graphs, the stack's front
    end; docs/calibration.md). Unset: for a MoE model the figure fitted to its stack's one-client
    TTFTs (presets/calibration.toml), for a dense model 0; 0 switches it off."""
    fallback: Literal["none", "colocated"] = "none"
    """When every prefill instance is lost: reject arrivals (none), or let the decode instances
    serve whole requests until prefill is back (colocated). Spilling to another pool of the role is
    not a fallback: routing already spreads over every live pool of a role (docs/scheduling.md)."""
    degrade: Degrade = Degrade()
    """Shed low priorities and cap outputs while entry capacity is short (off unless enabled)."""
    edge: Edge | None = None
    """An edge site in front of the data centre: what its pools serve locally, its power budget and
    the offload latency (unset: no edge tier; pools with `tier = "edge"` need it)."""
    speculative: Speculative | None = None
    expert_imbalance: Annotated[float, Field(ge=1.0, le=64.0)] = 1.4
    """Tokens on the busiest expert-parallel rank over the mean (applies with ep > 1); 1.4 is the
    middle of the 1.2-1.8 range reported for real workloads without expert replication."""
    power_cap_kw: PowerCapKw = None
    """The site's data-centre chips together may draw at most this, kW (`engine.scenario.power_budget`)."""

    @model_validator(mode="after")
    def _check(self) -> "Deployment":
        roles = [p.role for p in self.pools if p.tier == "datacenter"]  # edge pools stand apart
        names = [p.name for p in self.pools]
        if len(set(names)) != len(names):
            raise ValueError("pools: names must be unique")
        edge = [i for i, p in enumerate(self.pools) if p.tier == "edge"]
        for i in edge:
            if self.pools[i].role != "mixed":
                raise ValueError(f"pools[{i}].role: an edge pool serves whole requests: it must be 'mixed'")
        if edge and not roles:
            raise ValueError("pools: an edge site needs at least one data-centre pool to offload to")
        if edge and self.edge is None:
            raise ValueError(
                "edge: pools with tier 'edge' need the edge site's rule and power budget (deployment.edge)"
            )
        if self.edge is not None and not edge:
            raise ValueError("edge: an edge site needs at least one pool with tier 'edge'")
        if self.mode == "colocated" and any(r != "mixed" for r in roles):
            raise ValueError("pools: a colocated deployment has only 'mixed' pools")
        if self.mode == "disaggregated" and (
            "prefill" not in roles or "decode" not in roles or "mixed" in roles
        ):
            raise ValueError(
                "pools: a disaggregated deployment has one or more 'prefill' pools and one or more 'decode' "
                "pools, and no 'mixed' ones"
            )
        decode_names = {p.name for p in self.pools if p.role == "decode"}
        for i, p in enumerate(self.pools):
            for name in p.sends_to:
                if p.role != "prefill":
                    raise ValueError(
                        f"pools[{i}].sends_to: only a prefill pool hands prompts to decode pools"
                    )
                if name not in decode_names:
                    raise ValueError(
                        f"pools[{i}].sends_to: {name!r} is not a decode pool; choose from {sorted(decode_names)}"
                    )
            if (p.tp * p.dp) % p.ep:
                raise ValueError(
                    f"pools[{i}].ep: {p.ep} must divide the chips of a pipeline stage, tp x dp = {p.tp * p.dp}"
                )
        total = sum(p.count for p in self.pools)
        if total > bounds.MAX_INSTANCES:
            raise ValueError(f"pools: {total} instances in all; the limit is {bounds.MAX_INSTANCES}")
        return self

    @property
    def chips(self) -> int:
        """Chips in every pool together (an autoscaled pool counted at its most)."""
        return sum(p.chips for p in self.pools)

    def pool(self, role: str) -> Pool:
        """The first data-centre pool of a role."""
        for p in self.pools:
            if p.role == role and p.tier == "datacenter":
                return p
        raise KeyError(role)
