"""From a Scenario to the concrete things the simulation needs: specs and instance models.

A scenario names its model and chips by catalog id; resolving looks them up (custom entries
in the scenario first), builds one `perf.Instance` per pool and checks what only the catalog
can tell: that the chips exist, the calibration profile exists, and the weights fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.catalog import Catalog, load_catalog
from engine.errors import ScenarioError
from engine.perf import Instance
from engine.scenario import Pool, Scenario
from engine.specs import HardwareSpec, ModelSpec


@dataclass(frozen=True)
class ResolvedPool:
    """A pool with its instance cost model."""

    index: int
    spec: Pool
    instance: Instance

    @property
    def hardware(self) -> HardwareSpec:
        """The pool's chip."""
        return self.instance.hardware

    @property
    def chips(self) -> int:
        """Chips in the whole pool."""
        return self.spec.count * self.instance.chips

    @property
    def usd_per_hour(self) -> float:
        """Price of the whole pool per hour."""
        return self.chips * self.hardware.usd_per_hour


@dataclass(frozen=True)
class Resolved:
    """A scenario with its catalog entries looked up and its instances built."""

    scenario: Scenario
    model: ModelSpec
    pools: tuple[ResolvedPool, ...]

    def pool(self, role: str) -> ResolvedPool:
        """The first pool of a role (mixed, prefill, decode)."""
        for p in self.pools:
            if p.spec.role == role:
                return p
        raise KeyError(role)


def scenario_catalog(scenario: Scenario, base: Catalog | None = None) -> Catalog:
    """The catalog extended with the scenario's own custom entries."""
    return (base or load_catalog()).with_entries(scenario.custom_hardware, scenario.custom_models)


def resolve(scenario: Scenario, catalog: Catalog | None = None) -> Resolved:
    """Look up the scenario's model and chips and build its instances, or say what is wrong."""
    cat = scenario_catalog(scenario, catalog)
    if scenario.model.id not in cat.models:
        raise ScenarioError(
            f"model.id: unknown model {scenario.model.id!r}; known: {', '.join(sorted(cat.models))}"
        )
    model = cat.models[scenario.model.id]
    pools = []
    for i, spec in enumerate(scenario.deployment.pools):
        where = f"deployment.pools[{i}]"
        if spec.hardware not in cat.hardware:
            raise ScenarioError(
                f"{where}.hardware: unknown hardware {spec.hardware!r}; known: {', '.join(sorted(cat.hardware))}"
            )
        hw = cat.hardware[spec.hardware]
        if spec.profile is not None and spec.profile not in hw.profiles:
            raise ScenarioError(
                f"{where}.profile: {spec.profile!r} is not a profile of {hw.id}; choose one of {sorted(hw.profiles)}"
            )
        inst = Instance(
            model=model,
            hardware=hw,
            tp=spec.tp,
            pp=spec.pp,
            weights=scenario.model.weights,
            kv=scenario.model.kv,
            profile_name=spec.profile,
            mem_fraction=scenario.deployment.mem_fraction,
        )
        if not inst.fits():
            need = inst.weight_bytes / 1e9
            have = inst.memory_bytes / 1e9
            per_chip = hw.memory_gb * scenario.deployment.mem_fraction
            min_chips = int(need // per_chip) + 1
            raise ScenarioError(
                f"{where}.tp: {model.id} in {scenario.model.weights} needs {need:.0f} GB of weights plus KV "
                f"room; {spec.tp} x {spec.pp} x {hw.id} hold {have:.0f} GB usable. Use at least "
                f"{min_chips} chips per instance (tp x pp), lower precision, or a larger chip"
            )
        pools.append(ResolvedPool(index=i, spec=spec, instance=inst))
    return Resolved(scenario=scenario, model=model, pools=tuple(pools))
