"""A lifetime: a fleet's life over months in which the served model changes on a schedule.

A lifetime document (presets/lifetimes/*.toml) names a base scenario preset (its workload
classes, SLOs, serving stack, seed), a list of periods and a list of portfolios:

- a period lasts some months and serves one model (`ModelChoice`), with its own changes to the
  base scenario by path (``set``: a higher rate, longer prompts);
- a portfolio is a disaggregated deployment without counts: a prefill pool and a decode pool,
  each a chip and the tensor-parallel degrees it may use. A *dedicated* decode pool (an ASIC) is
  bought once, sized for the first period, and kept for the whole life; it serves only the weight
  precisions its catalog entry lists (its designed precisions); when it cannot serve a period, a
  *fallback* chip (bought per period like any flexible pool) serves that period's decode.
- ``stranded`` says what becomes of a dedicated fleet that serves nothing in a period:
  ``write-off`` (its remaining book value is charged at once and the chips are gone) or ``keep``
  (kept idle, still paying capital and hosting, in case a later model fits again).

Every bound is a pydantic Field bound; a bad document gets one line per problem naming the field.
The computation is `engine.planning.lifetime`; the assumptions are in docs/lifetime.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from engine.catalog.entries import presets_dir
from engine.catalog.specs import ID_PATTERN, Frozen
from engine.core import bounds, safeparse
from engine.core.errors import ScenarioError, format_validation_error
from engine.costmodel.ownership import CostBasis
from engine.scenario.model import ModelChoice

MAX_PERIODS = 12
"""Periods a lifetime may have."""
MAX_MONTHS = 120.0
"""Longest lifetime, all periods together (ten years)."""
MAX_PORTFOLIOS = 4
"""Portfolios a lifetime may compare."""
MAX_TP_OPTIONS = 6
"""Tensor-parallel degrees a pool may choose from."""
MAX_SIZING_REQUESTS = 50_000
"""Requests drawn to size every period together (rate x sizing window, summed): the bound on a
lifetime's work, which draws requests and runs the cost model but never simulates."""

MAX_LIFETIME_CHARS = 1 << 18
"""Longest lifetime document read."""

Stranded = Literal["write-off", "keep"]
"""What becomes of a dedicated fleet that serves nothing in a period."""
TpOptions = Annotated[
    tuple[Annotated[int, Field(ge=1, le=bounds.MAX_TP)], ...],
    Field(min_length=1, max_length=MAX_TP_OPTIONS),
]


class PoolChoice(Frozen):
    """One pool of a portfolio: a chip and the layouts it may use (the one that serves with the fewest chips wins)."""

    hardware: Annotated[str, Field(pattern=ID_PATTERN, max_length=64)]
    tp: TpOptions = (1, 2, 4, 8)
    ep: Annotated[
        tuple[Annotated[int, Field(ge=2, le=bounds.MAX_TP)], ...], Field(max_length=MAX_TP_OPTIONS)
    ] = Field(
        default=(),
        description="MoE models only: expert-parallel groups also tried, each as tp 1 or 2 per attention "
        "rank and the rest data-parallel (the planner's layouts)",
    )
    dedicated: bool = Field(
        default=False,
        description="bought once for the first period and kept for the whole life (an ASIC); "
        "otherwise bought or rented per period",
    )
    chips: Annotated[int, Field(ge=1, le=bounds.MAX_INSTANCES * 8)] | None = Field(
        default=None, description="dedicated only: chips bought; unset: what the first period needs"
    )

    @model_validator(mode="after")
    def _check(self) -> PoolChoice:
        if len(set(self.tp)) < len(self.tp):
            raise ValueError(f"tp: a degree is repeated ({list(self.tp)})")
        if self.chips is not None and not self.dedicated:
            raise ValueError("chips: only a dedicated pool has a fleet bought up front; set dedicated = true")
        return self


class Portfolio(Frozen):
    """A disaggregated deployment without counts: GPU prefill, and a decode pool of some chip."""

    name: Annotated[str, Field(min_length=1, max_length=40)]
    prefill: PoolChoice
    decode: PoolChoice
    fallback: PoolChoice | None = Field(
        default=None, description="the flexible chip that serves decode when the dedicated pool cannot"
    )

    @model_validator(mode="after")
    def _check(self) -> Portfolio:
        if self.prefill.dedicated:
            raise ValueError("prefill.dedicated: only the decode pool may be dedicated in this version")
        if self.decode.dedicated and self.fallback is None:
            raise ValueError(
                "fallback: a dedicated decode pool needs a fallback chip for the periods it cannot serve"
            )
        if self.fallback is not None and (self.fallback.dedicated or not self.decode.dedicated):
            raise ValueError("fallback: a flexible chip, and only beside a dedicated decode pool")
        return self

    @property
    def dedicated(self) -> bool:
        """Whether its decode pool is bought once and kept."""
        return self.decode.dedicated


class Period(Frozen):
    """Some months serving one model, with the base scenario changed by path for this period."""

    name: Annotated[str, Field(min_length=1, max_length=40)]
    months: Annotated[float, Field(gt=0, le=MAX_MONTHS)]
    model: ModelChoice
    set: Annotated[dict[str, Any], Field(max_length=16)] = Field(
        default_factory=dict,
        description="changes to the base scenario by path, e.g. workload.arrival.rate_rps = 24",
    )

    def __hash__(self) -> int:
        return hash(self.model_dump_json())


class Lifetime(Frozen):
    """A lifetime document: the base scenario, the schedule of models, the portfolios compared."""

    version: Literal[1] = 1
    name: Annotated[str, Field(min_length=1, max_length=120)]
    description: Annotated[str, Field(max_length=4000)] = ""
    lesson: Annotated[str, Field(max_length=4000)] = ""
    base: Annotated[str, Field(pattern=ID_PATTERN, max_length=64)] = Field(
        description="the scenario preset whose workload, SLOs, stack and seed every period starts from"
    )
    sizing_window_s: Annotated[float, Field(ge=10, le=3_600)] = Field(
        default=300.0, description="seconds of each period's load drawn to size its pools"
    )
    stranded: Stranded = "write-off"
    cost: CostBasis = Field(
        default_factory=CostBasis,
        description="flexible chips: rent or own per this basis; dedicated chips are always owned, "
        "on its amortisation, energy and hosting knobs",
    )
    periods: Annotated[tuple[Period, ...], Field(min_length=1, max_length=MAX_PERIODS)]
    portfolios: Annotated[tuple[Portfolio, ...], Field(min_length=1, max_length=MAX_PORTFOLIOS)]

    def __hash__(self) -> int:
        return hash(self.model_dump_json())

    @model_validator(mode="after")
    def _check(self) -> Lifetime:
        total = sum(p.months for p in self.periods)
        if total > MAX_MONTHS:
            raise ValueError(f"periods: {total:g} months in all; at most {MAX_MONTHS:g}")
        for what, items in (("periods", self.periods), ("portfolios", self.portfolios)):
            names = [x.name for x in items]
            if len(set(names)) < len(names):
                raise ValueError(f"{what}: names must be unique ({names})")
        return self

    @property
    def months(self) -> float:
        """Months of the whole life."""
        return sum(p.months for p in self.periods)


def validate_lifetime(data: Any) -> Lifetime:
    """A Lifetime from plain data, raising ScenarioError with one line per problem."""
    if not isinstance(data, dict):
        raise ScenarioError("a lifetime must be a table of fields")
    try:
        return Lifetime.model_validate(data)
    except ValidationError as exc:  # with the class: a bound's message names both ends (months read "> 0")
        raise ScenarioError(format_validation_error(exc, model=Lifetime)) from None


def lifetime_names() -> list[str]:
    """Names of the shipped lifetime presets (presets/lifetimes/*.toml)."""
    return sorted(p.stem for p in (presets_dir() / "lifetimes").glob("*.toml"))


def load_lifetime(ref: str) -> Lifetime:
    """A lifetime from a .toml file path or a shipped preset's name."""
    path = Path(ref)
    if not (path.suffix == ".toml" and path.is_file()):
        if path.is_file():  # (it read "not found" of a file that is there: a review)
            raise ScenarioError(f"lifetime file {ref!r}: a lifetime is a .toml file")
        # a file asked for: 'unknown lifetime' read as a name
        if path.suffix == ".toml" or len(path.parts) > 1:
            raise ScenarioError(
                f"lifetime file {ref!r} not found (a .toml file, or a preset: {', '.join(lifetime_names())})"
            )
        if ref not in lifetime_names():
            raise ScenarioError(f"unknown lifetime {ref!r}; known: {', '.join(lifetime_names())}")
        path = presets_dir() / "lifetimes" / f"{ref}.toml"
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    except UnicodeDecodeError:
        raise ScenarioError(f"{path.name}: not UTF-8 text") from None
    try:
        return validate_lifetime(safeparse.loads_toml(text, "lifetime", MAX_LIFETIME_CHARS))
    except ScenarioError as exc:
        raise ScenarioError(f"{path.name}: {exc}") from None
