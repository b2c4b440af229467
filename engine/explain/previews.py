"""What a scenario will ask for, before it runs: lengths, arrival rates, rooflines, traces.

The editing screens preview their inputs: the distribution a length setting draws from, the
arrival rate over the window, where the model's prefill and decode sit on each chip's roofline.
This module computes those previews from the engine's own samplers and cost model (so a preview
never disagrees with the simulation), and a few scenario edits that change several fields at once
(switching between colocated and disaggregated, adding a custom chip). Pure functions.
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from engine.catalog.entries import Catalog, price_assumed
from engine.catalog.specs import CalibrationProfile, HardwareSpec
from engine.core import datafiles
from engine.core.errors import ScenarioError
from engine.costmodel import ownership, stacks, stages
from engine.costmodel.ownership import CostBasis
from engine.costmodel.perf import Instance
from engine.explain.trace_files import trace_format
from engine.planning.sizing import layout_label
from engine.scenario.codec import apply_overrides
from engine.scenario.model import Arrival, LengthDist, Pool, Scenario
from engine.scenario.resolve import resolve, scenario_catalog
from engine.serving.workload import rate_factor, sample_lengths

# --- workload -----------------------------------------------------------------------------


def length_samples(dist: LengthDist, seed: int = 1, samples: int = 20_000) -> np.ndarray:
    """Token counts drawn from a length distribution exactly as the workload generator draws them."""
    return sample_lengths(dist, samples, np.random.default_rng([seed, 0x415]))


def length_histogram(dist: LengthDist, seed: int = 1, samples: int = 20_000, bins: int = 40) -> pd.DataFrame:
    """Histogram of a length distribution: ``tokens_low``, ``tokens_high``, ``fraction`` per bin.

    Bins are logarithmic when the draws span more than a factor of 20, linear otherwise.
    """
    return tokens_histogram(length_samples(dist, seed, samples), bins)


def tokens_histogram(values: Any, bins: int = 40) -> pd.DataFrame:
    """`length_histogram` of given lengths (a trace's prompts or answers, which the Workload page drew no
    histogram of: a browser review)."""
    vals = np.asarray(values, dtype=float)
    lo, hi = float(vals.min()), float(vals.max())
    if hi <= lo:
        return pd.DataFrame({"tokens_low": [lo - 0.5], "tokens_high": [lo + 0.5], "fraction": [1.0]})
    edges = (
        np.geomspace(lo, hi + 1, bins + 1) if hi / max(lo, 1.0) > 20 else np.linspace(lo, hi + 1, bins + 1)
    )
    counts, edges = np.histogram(vals, bins=edges)
    return pd.DataFrame({"tokens_low": edges[:-1], "tokens_high": edges[1:], "fraction": counts / len(vals)})


def length_stats(dist: LengthDist, seed: int = 1, samples: int = 20_000) -> dict[str, float]:
    """Mean, median and 99th percentile (tokens) of a length distribution, from draws."""
    return tokens_stats(length_samples(dist, seed, samples))


def tokens_stats(values: Any) -> dict[str, float]:
    """`length_stats` of given lengths."""
    vals = np.asarray(values, dtype=float)
    return {
        "mean_tokens": float(vals.mean()),
        "p50_tokens": float(np.median(vals)),
        "p99_tokens": float(np.percentile(vals, 99)),
    }


def rate_curve(arrival: Arrival, duration_s: float, points: int = 241) -> pd.DataFrame:
    """The open-loop arrival rate over the window: ``t_s``, ``rate_rps`` (empty for closed loops and offline)."""
    if arrival.kind not in ("poisson", "gamma"):
        return pd.DataFrame(columns=["t_s", "rate_rps"])
    t = np.linspace(0.0, duration_s, points)
    rate = arrival.rate_rps * rate_factor(arrival, duration_s, np.minimum(t, duration_s * (1 - 1e-9)))
    return pd.DataFrame({"t_s": t, "rate_rps": rate})


def arrival_histogram(arrival_s: np.ndarray, duration_s: float, bins: int = 120) -> pd.DataFrame:
    """Observed arrivals per second over the window: ``t_s`` (bin start), ``rate_rps``."""
    width = duration_s / bins
    counts, edges = np.histogram(np.asarray(arrival_s, dtype=float), bins=bins, range=(0.0, duration_s))
    return pd.DataFrame({"t_s": edges[:-1], "rate_rps": counts / width})


@dataclass(frozen=True)
class TraceChoice:
    """A trace shipped in the project's data folder that a scenario can replay."""

    label: str
    format: str
    path: str


def _stem(p: Path) -> Path:
    """A data file's name as scenarios give it (a stored ``.gz`` dropped)."""
    return p.with_suffix("") if p.suffix == ".gz" else p


def shipped_traces(root: Path | None = None) -> list[TraceChoice]:
    """The replayable traces shipped in the project's data folder (``data:`` paths), sorted by label."""
    base = root if root is not None else datafiles.data_dir()
    if not (base / "traces").is_dir():
        return []
    out = []
    for p in sorted((base / "traces").glob("*/*")):
        name = _stem(p)
        if name.suffix not in (".jsonl", ".csv"):
            continue
        opener = gzip.open if p.suffix == ".gz" else open
        with opener(p, "rt", encoding="utf-8", errors="replace") as fh:
            fmt = trace_format(name.name, fh.readline())
        if fmt is not None:
            rel = name.relative_to(base).as_posix()
            out.append(
                TraceChoice(
                    label=f"{p.parent.name}/{name.stem}", format=fmt, path=datafiles.DATA_PREFIX + rel
                )
            )
    return out


def length_columns(root: Path | None = None) -> list[tuple[str, str]]:
    """(``data:`` path, column) pairs of shipped length files an empirical distribution can draw from."""
    base = root if root is not None else datafiles.data_dir()
    out = []
    for p in sorted((base / "traces" / "vidur_lengths").glob("*.csv*")):
        opener = gzip.open if p.suffix == ".gz" else open
        with opener(p, "rt", encoding="utf-8") as fh:
            cols = [c.strip() for c in fh.readline().split(",")]
        rel = _stem(p).relative_to(base).as_posix()
        out += [(datafiles.DATA_PREFIX + rel, c) for c in cols if c.startswith("num_")]
    return out


# --- deployment ---------------------------------------------------------------------------


def with_pool_added(scenario: Scenario, role: str) -> Scenario:
    """One more pool of a role: a copy of the last pool of that role (one instance, a new name)."""
    dep = scenario.deployment
    same = [p for p in dep.pools if p.role == role]
    if not same:
        raise ValueError(
            f"role: {role!r} has no pool to copy in this deployment; choose from {sorted({p.role for p in dep.pools})}"
        )
    names = {p.name for p in dep.pools}
    n = 2
    while f"{role}-{n}" in names:
        n += 1
    new = {**same[-1].model_dump(exclude_none=True), "name": f"{role}-{n}", "count": 1, "sends_to": []}
    pools = [p.model_dump(exclude_none=True) for p in dep.pools] + [new]
    return apply_overrides(scenario, {"deployment.pools": pools}, merge=False)


def with_edge_site(scenario: Scenario, hardware: str = "edge-npu", count: int = 2) -> Scenario:
    """The scenario with an edge site: a pool of `count` edge chips and `deployment.edge`'s defaults
    (a budget that runs every one of them busy at once is for the user to set; the default is 200 W)."""
    dep = scenario.deployment
    if dep.edge is not None:
        return scenario
    names = {p.name for p in dep.pools}
    name = next(
        f"edge-{n}" if n else "edge"
        for n in range(len(names) + 1)
        if (f"edge-{n}" if n else "edge") not in names
    )
    pools = [p.model_dump(exclude_none=True) for p in dep.pools]
    pools.append(
        {"name": name, "role": "mixed", "tier": "edge", "hardware": hardware, "tp": 1, "count": count}
    )
    return apply_overrides(scenario, {"deployment.pools": pools, "deployment.edge": {}}, merge=False)


def without_edge_site(scenario: Scenario) -> Scenario:
    """The scenario with its edge site (edge pools, `deployment.edge`, faults on them) removed."""
    dep = scenario.deployment
    edge = {p.name for p in dep.pools if p.tier == "edge"}
    if dep.edge is None and not edge:
        return scenario
    return apply_overrides(
        scenario,
        {
            "deployment.pools": [p.model_dump(exclude_none=True) for p in dep.pools if p.name not in edge],
            "deployment.edge": None,
            "faults": [f.model_dump(exclude_none=True) for f in scenario.faults if f.pool not in edge],
        },
    )


def removal_effects(scenario: Scenario, index: int) -> list[str]:
    """What removing pool `index` also takes away: the class pins, faults and hand-off routes naming it."""
    return _removal(scenario, index)[1]


def with_pool_removed(scenario: Scenario, index: int) -> Scenario:
    """The scenario without one pool, and without the faults, pins and hand-off routes naming it.

    A deployment keeps at least one data-centre pool of each role it has; removing the last one
    raises. Removing the last edge pool removes the edge site (`without_edge_site`).
    """
    dep = scenario.deployment
    if not 0 <= index < len(dep.pools):
        raise ValueError(f"deployment.pools[{index}]: no such pool; there are {len(dep.pools)}")
    gone = dep.pools[index]
    same = [p for p in dep.pools if p.role == gone.role and p.tier == gone.tier]
    if len(same) == 1:
        if gone.tier == "edge":
            return without_edge_site(scenario)
        raise ValueError(
            f"deployment.pools[{index}]: {gone.name!r} is the only {gone.role} pool; it cannot be removed"
        )
    return apply_overrides(scenario, _removal(scenario, index)[0], merge=False)


def _removal(scenario: Scenario, index: int) -> tuple[dict[str, Any], list[str]]:
    """The overrides that remove pool `index` with the faults, pins and routes naming it, and
    what those were, in words."""
    dep = scenario.deployment
    gone = dep.pools[index].name
    changes: dict[str, Any] = {
        "deployment.pools": [
            {**p.model_dump(exclude_none=True), "sends_to": [n for n in p.sends_to if n != gone]}
            for j, p in enumerate(dep.pools)
            if j != index
        ],
        "faults": [f.model_dump(exclude_none=True) for f in scenario.faults if f.pool != gone],
    }
    effects = []
    for i, c in enumerate(scenario.workload.classes):
        if gone in c.pools:
            changes[f"workload.classes[{i}].pools"] = [n for n in c.pools if n != gone]
            effects.append(f"class {c.name}'s pin to it")
    effects += [f"fault {i + 1}" for i, f in enumerate(scenario.faults) if f.pool == gone]
    effects += [f"{p.name}'s route to it" for p in dep.pools if gone in p.sends_to]
    return changes, effects


LAYOUTS = ((1, 1), (2, 1), (4, 1), (8, 1), *((8, pp) for pp in range(2, 9)))
"""Layouts `with_model_fitted` tries, smallest first: tensor parallelism within an 8-chip node,
then pipeline stages of 8 across nodes."""


def with_model_fitted(scenario: Scenario, model_id: str, catalog: Catalog | None = None) -> Scenario | None:
    """The scenario serving `model_id`, each pool resized where its instances no longer hold it.

    A pool that holds the model keeps its layout; one whose expert parallelism the model cannot
    take (a dense model, fewer experts) keeps its tensor, pipeline and data parallelism with the
    largest expert-parallel degree that fits (1 for a dense model); any other takes the smallest
    of `LAYOUTS` with at least as many chips per instance that holds it (data and expert
    parallelism back to 1, since what a rank holds depends on them). None when no layout up to
    8 x 8 chips holds it. Raises the `ScenarioError` of what else refuses the result (an unknown
    model, an edge site's power budget, a token budget), so a page can say that instead.
    """
    new = apply_overrides(scenario, {"model.id": model_id})
    try:
        resolve(new, catalog)
        return new  # it already fits
    except ScenarioError:
        pass
    cat = scenario_catalog(new, catalog)
    model = cat.model(model_id)
    changes: dict[str, Any] = {}

    def fits(hw: HardwareSpec, tp: int, pp: int, dp: int = 1, ep: int = 1) -> bool:
        if stacks.tp_split_problem(model, tp):  # a degree no stack splits the model's heads over
            return False
        try:
            inst = Instance(
                model=model, hardware=hw, tp=tp, pp=pp, dp=dp, ep=ep, weights=new.model.weights,
                kv=new.kv_precision(), mem_fraction=new.deployment.mem_fraction,
                activation_tokens=new.activation_tokens(hw) * dp, attention_weights=new.model.attention_weights,
            )  # fmt: skip
        except ScenarioError:  # an expert-parallel degree the model cannot take
            return False
        return inst.fits()

    experts = model.moe.experts if model.moe else 1
    for i, pool in enumerate(new.deployment.pools):
        hw = cat.chip(pool.hardware)
        where = f"deployment.pools[{i}]"
        if fits(hw, pool.tp, pool.pp, pool.dp, pool.ep):
            continue
        stage = pool.tp * pool.dp
        eps = [e for e in range(min(stage, experts), 0, -1) if stage % e == 0]
        ep = next((e for e in eps if e <= pool.ep and fits(hw, pool.tp, pool.pp, pool.dp, e)), None)
        if ep is not None:  # only its expert parallelism no longer fits the model
            changes[f"{where}.ep"] = ep
            continue
        size = pool.chips_per_instance
        layout = next((lp for lp in LAYOUTS if lp[0] * lp[1] >= size and fits(hw, *lp)), None)
        if layout is None:
            return None
        changes.update(
            {f"{where}.tp": layout[0], f"{where}.pp": layout[1], f"{where}.dp": 1, f"{where}.ep": 1}
        )
    out = apply_overrides(new, changes, merge=False)
    resolve(out, catalog)  # what else refuses it is said as the engine says it
    return out


USER_SOURCE = "assumption: entered by the user in the dashboard"
"""The source a custom chip's changed numbers carry."""

CHIP_NUMBERS: tuple[str, ...] = (
    "memory_gb", "memory_tb_s", "scale_up_gb_s", "scale_out_gb_s", "tdp_w", "idle_w", "usd_per_hour",
)  # fmt: skip
"""The scalar numbers of a chip that the custom-chip form edits (besides its TFLOP/s)."""


def custom_chip(
    base: HardwareSpec,
    chip_id: str,
    name: str,
    numbers: Mapping[str, float],
    tflops: Mapping[str, float],
    profile: Mapping[str, float] | None = None,
) -> HardwareSpec:
    """A chip of the user's own, starting from `base`: changed numbers get `USER_SOURCE` as source.

    `numbers` holds any of `CHIP_NUMBERS`; `tflops` the dense peak per precision (0 drops it);
    `profile` optional ``eta_compute``, ``eta_bandwidth``, ``overhead_ms`` for a ``user`` profile.
    Raises pydantic's ValidationError (a ValueError) when the result is not a valid chip.
    """
    data = base.model_dump(mode="json", by_alias=True, exclude_none=True)
    sources = dict(data["sources"])
    for key, value in numbers.items():
        if key not in CHIP_NUMBERS:
            raise ValueError(f"{key}: not a chip number the form edits")
        if not math.isclose(float(data[key]), float(value)):
            sources[key] = USER_SOURCE
        data[key] = float(value)
    new_tflops = {k: float(v) for k, v in tflops.items() if v and v > 0}
    if "bf16" in tflops and "bf16" not in new_tflops:  # 0 drops a peak; BF16's no chip here lacks
        raise ValueError(
            f"tflops.bf16: {tflops['bf16']:g} is not allowed: the allowed range is 0.01 to 1,000,000 "
            "TFLOP/s (without a BF16 peak, BF16 weights would run at the FP8 one)"
        )
    if new_tflops != {k: float(v) for k, v in data["tflops"].items()}:
        sources["tflops"] = USER_SOURCE
    data["tflops"] = new_tflops
    if profile:
        prof = CalibrationProfile(
            eta_compute=profile["eta_compute"],
            eta_bandwidth=profile["eta_bandwidth"],
            overhead_ms=profile["overhead_ms"],
            source=USER_SOURCE,
            # the form does not edit it: a refit of MoE measurements keeps saying its fractions
            # hold the experts' slowness (1.0), and an unset one keeps taking the fitted factor
            eta_experts=profile.get("eta_experts", base.profile(None).eta_experts),
        )
        data["profiles"] = {**data["profiles"], "user": prof.model_dump()}
        data["default_profile"] = "user"
    data.update({"id": chip_id, "name": name, "sources": sources, "illustrative": True})
    return HardwareSpec.model_validate(data)


def with_custom_chip(scenario: Scenario, chip: HardwareSpec) -> Scenario:
    """The scenario carrying `chip` in its custom hardware (replacing one with the same id)."""
    others = [h for h in scenario.custom_hardware if h.id != chip.id]
    return scenario.model_copy(update={"custom_hardware": (*others, chip)})


def without_custom_chip(scenario: Scenario, chip_id: str, fallback: str) -> Scenario:
    """The scenario without a custom chip; pools that used it move to the `fallback` chip."""
    pools = tuple(
        p.model_copy(update={"hardware": fallback, "profile": None}) if p.hardware == chip_id else p
        for p in scenario.deployment.pools
    )
    dep = scenario.deployment.model_copy(update={"pools": pools})
    hw = tuple(h for h in scenario.custom_hardware if h.id != chip_id)
    return scenario.model_copy(update={"custom_hardware": hw, "deployment": dep})


def chip_options(catalog: Catalog) -> list[str]:
    """Chip ids for a picker: real chips first, then illustrative ones, each sorted."""
    chips = sorted(catalog.hardware.values(), key=lambda h: (h.illustrative, h.id))
    return [h.id for h in chips]


def pool_summary(pool: Pool, catalog: Catalog, basis: CostBasis | None = None) -> str:
    """A one-line description of a pool: count x chips per instance x chip, chips in all, price per
    hour in the scenario's cost mode (`basis`; None: rent): rented, the catalog's rent (said to be
    assumed where the chip's price is an assumption, not a published rate); owned, capital + hosting
    + energy as the run bills them (`ownership.chip_hour_usd`; said where the purchase price is the
    catalog's assumption), energy from idle to TDP, since the run's draw is not known before it runs.
    'at most' for an autoscaled pool, whose count is its ceiling."""
    hw = catalog.hardware.get(pool.hardware)
    chips = pool.chips
    price = ""
    if hw is not None and (basis is None or basis.mode == "rent"):
        owned = "amortised ownership" in hw.sources.get(
            "usd_per_hour", ""
        )  # an edge device: bought, not rented
        price = (
            f", ${chips * hw.usd_per_hour:,.2f}/h "
            + ("amortised ownership" if owned else "rented")
            + (" (assumed price)" if price_assumed(hw) else "")
        )
    elif hw is not None and basis is not None:
        try:
            low = chips * ownership.chip_hour_usd(hw, basis)
            high = chips * ownership.chip_hour_usd(hw, basis, hw.tdp_w)
        except ScenarioError:  # no purchase price: the run is refused the same way, naming the field
            price = f", owned: no purchase price (cost.capex_usd.{hw.id})"
        else:
            # the part assumed: the H100's cited price read "assumed" for its assumed server share (a review)
            chip, server = ownership.assumed_parts(hw, basis)
            parts = [w for w, on in (("purchase price", chip), ("server share", server)) if on]
            price = f", ${low:,.2f}-{high:,.2f}/h owned (capital + hosting + energy, idle to TDP)" + (
                f"; assumed {' and '.join(parts)}" if parts else ""
            )
    most = "at most " if pool.autoscale is not None else ""
    return f"{most}{pool.count} × {pool.chips_per_instance} × {pool.hardware} = {chips} chip{'' if chips == 1 else 's'}{price}"


@dataclass(frozen=True)
class PoolMemory:
    """How one pool's instance spreads over its chips, and what each chip holds (as resolve builds it)."""

    pool: str
    layout: str
    """``tp8``, ``tp8 pp2``, ``tp1 dp8 ep8``: the degrees above 1 (engine.planning.sizing.layout_label)."""
    chips_per_instance: int
    dp: int
    weights_gb_per_chip: float
    """Weights each chip holds on average: attention and dense layers split over tp (and pp), the
    routed experts over ep (and pp)."""
    usable_gb_per_chip: float
    """HBM a chip gives weights, activations and KV cache (`deployment.mem_fraction` of its memory), in
    GB of 10^9 bytes like every figure here."""
    mem_fraction: float
    """`deployment.mem_fraction`: the share of the chip's memory that is usable."""
    chip_memory_gib: float
    """The chip's memory as its vendor states it (`memory_gb`, which is GiB: an H100's 80)."""
    activations_gb_per_chip: float
    """Memory each chip keeps for one forward pass of the stack's token budget (0 under SGLang)."""
    kv_capacity_tokens: int
    """Tokens of KV cache the whole instance holds beside its weights."""
    heaviest_stage_gb_per_chip: float | None = None
    """Where a pipeline's stages hold different weights (`engine.costmodel.stages`): the weights
    each chip of the most loaded stage holds; None where every chip holds the same."""

    @property
    def kv_tokens_per_rank(self) -> int:
        """KV tokens of one data-parallel rank (each holds only its own requests' cache)."""
        return self.kv_capacity_tokens // self.dp


def pool_memory(scenario: Scenario, catalog: Catalog | None = None) -> list[PoolMemory]:
    """Per pool of a scenario: its layout, chips per instance, weights per chip and KV capacity.

    Raises ScenarioError (naming the field) when the scenario does not resolve: a split that is
    impossible, or weights that do not fit.
    """
    out = []
    for p in resolve(scenario, catalog).pools:
        inst = p.instance
        out.append(
            PoolMemory(
                pool=p.spec.name,
                layout=layout_label(inst.tp, inst.pp, inst.dp, inst.ep),
                chips_per_instance=inst.chips,
                dp=inst.dp,
                weights_gb_per_chip=inst.weight_bytes / inst.chips / 1e9,
                usable_gb_per_chip=inst.memory_bytes / inst.chips / 1e9,
                mem_fraction=inst.mem_fraction,
                chip_memory_gib=inst.hardware.total_memory_gb,
                activations_gb_per_chip=inst.activation_bytes / inst.chips / 1e9,
                kv_capacity_tokens=inst.kv_capacity_tokens,
                heaviest_stage_gb_per_chip=(
                    max(stages.stage_weights(inst)) / (inst.tp * inst.dp) / 1e9
                    if stages.staged(inst)
                    else None
                ),
            )
        )
    return out


def _kinship(model_id: str, other: str) -> int:
    """0: the same family (``llama-3.1`` of ``llama-3.1-70b``), 1: the same first word (``llama``), 2: neither."""
    if other.rsplit("-", 1)[0] == model_id.rsplit("-", 1)[0]:
        return 0
    return 1 if other.split("-", 1)[0] == model_id.split("-", 1)[0] else 2


def draft_models(catalog: Catalog, model_id: str) -> list[str]:
    """Catalog models that could draft for `model_id`: at most a quarter of its size, its own family
    first, then smallest first."""
    size = catalog.models[model_id].total_params()
    smaller = [m for m in catalog.models.values() if m.id != model_id and m.total_params() <= size / 4]
    return [m.id for m in sorted(smaller, key=lambda m: (_kinship(model_id, m.id), m.total_params(), m.id))]


def default_speculation(catalog: Catalog, model_id: str) -> dict[str, str]:
    """How speculative decoding starts when switched on (`deployment.speculative`).

    A smaller model of the same kin drafts (Llama-3.1-8B for Llama-3.1-70B); without one, an MTP
    head (DeepSeek-V3 ships one). Tokens and acceptance stay unset: the method's defaults.
    """
    kin = [m for m in draft_models(catalog, model_id) if _kinship(model_id, m) < 2]
    return {"method": "draft", "draft_model": kin[0]} if kin else {"method": "mtp"}
