"""Which layer decided it: each layer's choice switched to a named alternative, one at a time.

The seeds' claim is that four layers decide an outcome together (the algorithm, the resources,
the scheduling, the software), not peak FLOP/s. For one scenario this module switches each
layer's choice to its alternative, keeping every other setting, simulates each variant on the
same requests (generation is separate from serving, so the comparison is paired), and reports
the change in cost per request and in SLO attainment against the scenario itself:

- **model precision** (`model.weights`): 16-bit weights to fp8; anything narrower back to bf16;
- **chips** (every data-centre pool's `hardware`): the next chip up of the same class (GPU, ASIC,
  NPU, TPU, SoC) in the catalog by memory bandwidth, the figure decode is bound by (H100 to H200);
  the fastest of its class steps down to the one below it. Illustrative (what-if) chips are
  candidates only for a pool whose own chip is one. Edge pools keep theirs (the site's power
  budget chose them). (Where pools differ, one row may step one pool up and another down.);
- **scheduling policy** (`scheduler.queue`): FCFS to strict priority where the classes differ in
  priority, else to shortest-prompt-first; any other order back to FCFS;
- **serving stack** (`deployment.stack`), from the stack each pool runs (vLLM on an Ascend NPU is
  vLLM-Ascend, `calibration.trust.native_stack`): vLLM and SGLang swap; TensorRT-LLM and vLLM v0
  go to vLLM; vLLM-Ascend and MindIE swap. Pools whose stacks have different alternatives (an
  Ascend pool beside a GPU pool) cannot switch under one stack: the row is refused.

Each row carries the calibration basis of every pool before and after (fitted, same silicon,
other stack, transfer, illustrative, ...) and says where the variant's differs: a switch that
trades a fitted profile for an illustrative or transferred one moves the figures partly by the
model's assumption, not by the layer.

A variant the engine refuses (the weights no longer fit, a chip without a profile for the stack)
is kept as a row with the reason and no figures. Rows are sorted by effect: the larger of the
relative change in cost per request and the change in attainment. Simulations run through the
`run` callable, so a caller with a cache (the dashboard) passes its own; `duration_s` shortens
every run alike (tests, quick looks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.calibration.trust import native_stack
from engine.catalog.specs import HardwareSpec
from engine.core.errors import ScenarioError
from engine.core.numbers import rate2
from engine.scenario import codec
from engine.scenario.model import Scenario
from engine.scenario.resolve import scenario_catalog
from engine.serving.run import SimResult, simulate
from engine.serving.summary import shortfall_rps

LAYERS = ("model precision", "chips", "scheduling policy", "serving stack")
"""The layers switched, in the order the rows are built (before sorting)."""

STACK_ALTERNATIVE = {
    "vllm": "sglang",
    "sglang": "vllm",
    "trtllm": "vllm",
    "vllm-v0": "vllm",
    "vllm-ascend": "mindie",
    "mindie": "vllm-ascend",
}
"""Each serving stack's named alternative."""


BASIS_WORDS = {
    "fitted": "fitted",
    "own": "your own fit",
    "same_silicon": "same silicon",
    "other_stack": "another stack's",
    "illustrative": "illustrative",
    "transfer": "transfer",
    "assumed": "assumed",
}
"""A calibration basis in a sentence (`engine.calibration.mark.Basis`; BASIS_TEXT says each at
length): the layers' sentence printed the names, "same_silicon to other_stack"."""


@dataclass(frozen=True, kw_only=True)
class LayerEffect:
    """One layer switched: what it was, what it became, and what that did to cost and SLO."""

    layer: str
    choice: str
    """The scenario's own choice, in words."""
    alternative: str
    """The choice it was switched to."""
    usd_per_request: float | None
    slo_attainment: float | None
    d_usd_per_request: float | None
    """Alternative minus the scenario's cost per request, USD (None when the variant did not run)."""
    d_cost_share: float | None
    """That change over the scenario's cost per request (-0.1: 10% cheaper)."""
    d_slo_attainment: float | None
    """Alternative minus the scenario's attainment, 0-1 (0.02: two points more requests met their SLO)."""
    refused: str = ""
    """Why the variant could not run (empty when it ran)."""
    basis: tuple[tuple[str, str], ...] = ()
    """(pool, calibration basis) of the scenario itself."""
    alt_basis: tuple[tuple[str, str], ...] = ()
    """(pool, calibration basis) of the variant (empty when it did not run)."""
    shortfall_rps: float | None = None
    """The variant's shortfall where its run is unsustainable (`shortfall_rps`): its cost and attainment are
    then at saturation, set by the run's length, and its row says so (`saturation_note`)."""

    def saturation_note(self) -> str:
        """'bf16 weights cannot sustain the load (short by 6.5 req/s): ...', or '' for a variant that can."""
        if self.shortfall_rps is None:
            return ""
        return (
            f"{self.alternative} cannot sustain the load (short by {rate2(self.shortfall_rps)} req/s): its cost "
            "per request and SLO attainment are at saturation, set by the run's length"
        )

    @property
    def basis_change(self) -> str:
        """Where the variant's calibration basis differs from the scenario's, in words ('' where none does):
        ``"ascend: fitted to illustrative"``, ``"decode: same silicon to another stack's"``."""
        alt = dict(self.alt_basis)
        return "; ".join(
            f"{p}: {BASIS_WORDS.get(b, b)} to {BASIS_WORDS.get(alt[p], alt[p])}"
            for p, b in self.basis
            if p in alt and alt[p] != b
        )

    @property
    def effect(self) -> float:
        """How much the switch moved things: the larger of |relative cost change| and |attainment change|."""
        if self.refused:
            return -1.0
        return max(abs(self.d_cost_share or 0.0), abs(self.d_slo_attainment or 0.0))


@dataclass(frozen=True, kw_only=True)
class LayerView:
    """The scenario's own figures, each layer's effect (largest first) and the sentence that sums it up."""

    usd_per_request: float | None
    slo_attainment: float | None
    effects: tuple[LayerEffect, ...]
    sentence: str
    shortfall_rps: float | None = None
    """The scenario's own shortfall where its run is unsustainable: every change is from figures at saturation."""

    def saturation_note(self) -> str:
        """'' unless the scenario's own run is unsustainable, which every change is measured from."""
        if self.shortfall_rps is None:
            return ""
        return (
            f"The scenario itself cannot sustain its load (short by {rate2(self.shortfall_rps)} req/s): every "
            "change above is from its cost and attainment at saturation, which depend on the run's length"
        )


def chip_alternative(hw: HardwareSpec, catalog: Mapping[str, HardwareSpec]) -> HardwareSpec | None:
    """The next chip up of `hw`'s class by memory bandwidth (the slowest of those faster, then by id);
    for the fastest of its class, the next one down; None when the class has no other chip.
    Illustrative chips are candidates only when `hw` is one."""
    peers = sorted(
        (
            h
            for h in catalog.values()
            if h.kind == hw.kind and h.id != hw.id and (hw.illustrative or not h.illustrative)
        ),
        key=lambda h: (h.memory_tb_s, h.id),
    )
    up = [h for h in peers if h.memory_tb_s > hw.memory_tb_s]
    if up:
        return up[0]
    down = [h for h in peers if h.memory_tb_s < hw.memory_tb_s]
    return down[-1] if down else (peers[0] if peers else None)


def alternatives(scenario: Scenario) -> list[tuple[str, str, str, dict[str, Any] | str]]:
    """Per layer: (layer, choice, alternative, overrides by path) or, with no alternative, the reason."""
    out: list[tuple[str, str, str, dict[str, Any] | str]] = []
    w = scenario.model.weights
    alt_w = "fp8" if w in ("bf16", "fp16") else "bf16"
    out.append(("model precision", f"{w} weights", f"{alt_w} weights", {"model.weights": alt_w}))
    hardware = scenario_catalog(scenario).hardware
    changes: dict[str, Any] = {}
    names: dict[str, str] = {}
    for i, pool in enumerate(scenario.deployment.pools):
        if pool.tier != "datacenter" or pool.hardware not in hardware:
            continue
        alt = chip_alternative(hardware[pool.hardware], hardware)
        if alt is not None:
            changes[f"deployment.pools[{i}].hardware"] = alt.id
            names[pool.hardware] = alt.id
    chips = ", ".join(names) or "the chips"
    if changes:
        out.append(("chips", chips, ", ".join(names.values()), changes))
    else:
        out.append(
            (
                "chips",
                chips,
                "none",
                "no other chip of its class in the catalog (illustrative ones only for an illustrative chip)",
            )
        )
    queue = scenario.scheduler.queue.name
    if queue != "fcfs":
        alt_q = "fcfs"
    elif len({c.priority for c in scenario.workload.classes}) > 1:
        alt_q = "priority"
    else:
        alt_q = "spf"
    out.append(("scheduling policy", queue, alt_q, {"scheduler.queue": {"name": alt_q}}))
    out.append(_stack_alternative(scenario))
    return out


def _stack_alternative(scenario: Scenario) -> tuple[str, str, str, dict[str, Any] | str]:
    """The serving-stack row: the alternative of the stack each data-centre pool runs."""
    stack = scenario.deployment.stack
    runs = {
        p.hardware: native_stack(p.hardware, stack)
        for p in scenario.deployment.pools
        if p.tier == "datacenter"
    } or {"": stack}
    alts = {STACK_ALTERNATIVE[n] for n in runs.values()}
    native = sorted(set(runs.values()))
    choice = stack if native == [stack] else f"{stack} (runs as {', '.join(native)})"
    if len(alts) > 1:
        why = ", ".join(f"{h} runs {n}, whose alternative is {STACK_ALTERNATIVE[n]}" for h, n in runs.items())
        return ("serving stack", choice, " / ".join(sorted(alts)), f"no one stack switches every pool: {why}")
    alt = next(iter(alts))
    return ("serving stack", choice, alt, {"deployment.stack": alt})


def _shortened(scenario: Scenario, duration_s: float | None) -> Scenario:
    if duration_s is None or duration_s >= scenario.duration_s:
        return scenario
    return codec.apply_overrides(
        scenario, {"duration_s": duration_s, "warmup_s": min(scenario.warmup_s, duration_s / 2)}
    )


def layer_view(
    scenario: Scenario, run: Callable[[Scenario], SimResult] | None = None, duration_s: float | None = None
) -> LayerView:
    """Each layer switched to its alternative alone, simulated, and compared with the scenario itself."""
    simulate_one = run or simulate
    base_sc = _shortened(scenario, duration_s)
    base = simulate_one(base_sc).summary
    basis = _bases(base)
    cost0 = base["cost"]["usd_per_request"]
    slo0 = base["slo_attainment"]
    effects = []
    for layer, choice, alt, change in alternatives(base_sc):
        if isinstance(change, str):
            effects.append(_refused(layer, choice, alt, change, basis))
            continue
        try:
            s = simulate_one(codec.apply_overrides(base_sc, change, merge=False)).summary
        except ScenarioError as exc:
            effects.append(_refused(layer, choice, alt, str(exc), basis))
            continue
        cost, slo = s["cost"]["usd_per_request"], s["slo_attainment"]
        d_cost = cost - cost0 if cost is not None and cost0 is not None else None
        effects.append(
            LayerEffect(
                layer=layer,
                choice=choice,
                alternative=alt,
                usd_per_request=cost,
                slo_attainment=slo,
                d_usd_per_request=d_cost,
                d_cost_share=d_cost / cost0 if d_cost is not None and cost0 else None,
                d_slo_attainment=slo - slo0 if slo is not None and slo0 is not None else None,
                basis=basis,
                alt_basis=_bases(s),
                shortfall_rps=shortfall_rps(s),
            )
        )
    ranked = tuple(sorted(effects, key=lambda e: -e.effect))
    return LayerView(
        usd_per_request=cost0,
        slo_attainment=slo0,
        effects=ranked,
        sentence=sentence(ranked),
        shortfall_rps=shortfall_rps(base),
    )


def _bases(summary: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """(pool, calibration basis) of a run's summary."""
    return tuple((p, str(c.get("basis", ""))) for p, c in summary.get("calibration", {}).items())


def _refused(layer: str, choice: str, alt: str, why: str, basis: tuple[tuple[str, str], ...]) -> LayerEffect:
    return LayerEffect(
        basis=basis,
        layer=layer,
        choice=choice,
        alternative=alt,
        usd_per_request=None,
        slo_attainment=None,
        d_usd_per_request=None,
        d_cost_share=None,
        d_slo_attainment=None,
        refused=why,
    )


def sentence(effects: tuple[LayerEffect, ...]) -> str:
    """One sentence naming the layer that matters most here, with what its switch did."""
    ran = [e for e in effects if not e.refused]
    if not ran:
        return "No layer could be switched here: every alternative was refused."
    top = ran[0]
    if top.effect < 0.005:
        return (
            "No layer matters much here: no switch moves cost per request or SLO attainment by 0.5% or more."
        )
    parts = []  # signed with the minus sign the page's other figures carry ('−36.8%', not '-36.8%')
    if top.d_cost_share is not None:
        parts.append(f"cost per request {top.d_cost_share:+.1%}".replace("-", "−"))
    if top.d_slo_attainment is not None:
        parts.append(f"SLO attainment {100 * top.d_slo_attainment:+.1f} points".replace("-", "−"))
    text = (
        f"Here the {top.layer} decide{'s' if not top.layer.endswith('s') else ''} most: "
        f"{top.choice} to {top.alternative} moves {' and '.join(parts)}"
    )
    if top.basis_change:
        text += f", partly by calibration, whose basis changes ({top.basis_change})"
    if (
        top.shortfall_rps is not None
    ):  # (a run at saturation's figures: prefill-loss-nofallback's bf16, a review)
        text += f", where {top.alternative} cannot sustain the load"
    slo = max(ran, key=lambda e: abs(e.d_slo_attainment or 0.0))
    moved = abs(slo.d_slo_attainment or 0.0)
    if slo is not top and moved >= 0.01 and moved > abs(top.d_slo_attainment or 0.0):
        # the top by cost beside a larger move of SLO attainment: both said (the chips 'decided most'
        # at 1.8 points where the stack moved 18.5: a review)
        text += (
            f"; SLO attainment moves most with the {slo.layer} ({slo.choice} to {slo.alternative}: "
            f"{100 * (slo.d_slo_attainment or 0.0):+.1f} points)".replace("-", "−")
        )
    if len(ran) > 1:
        low = ran[-1]
        if low.effect < 0.005 and any(b == "other_stack" for _, b in low.alt_basis):
            # a borrowed profile's zero is no finding: 'the serving stack matters least' where SGLang ran
            # on vLLM's fit (a review)
            text += (
                f"; the {low.layer} shows no effect only because {low.alternative} has no calibration of its "
                "own here (it borrows another stack's)"
            )
        else:
            text += f"; the {low.layer} matter{'s' if not low.layer.endswith('s') else ''} least"
    return text + "."


def effects_table(view: LayerView) -> list[dict[str, Any]]:
    """The view's rows as plain records (for a table or JSON), largest effect first."""
    return [
        {
            "layer": e.layer,
            "choice": e.choice,
            "alternative": e.alternative,
            "usd_per_request": e.usd_per_request,
            "slo_attainment": e.slo_attainment,
            "d_cost_share": e.d_cost_share,
            "d_slo_attainment": e.d_slo_attainment,
            "refused": e.refused,
            "calibration_change": e.basis_change,
        }
        for e in view.effects
    ]


__all__ = [
    "LAYERS",
    "LayerEffect",
    "LayerView",
    "alternatives",
    "chip_alternative",
    "effects_table",
    "layer_view",
]
