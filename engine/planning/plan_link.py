"""A plan's request as one query parameter, so that a link to the Planner reopens the same plan.

The Planner's address carries the form a plan was made from as ``plan=<field>:<value>;...``, e.g.
``plan=rps:40;hw:h100-sxm,h200;modes:colocated,disaggregated;tp:1,2,4,8;pp:1,2;ep:;budget:0;...``
(lists comma-separated, switches 1 or 0), beside the scenario's own ``v``, ``p`` and ``s``. A link
is untrusted: `decode` checks every field against what the form allows and raises ScenarioError
naming the first one that is not, with its allowed values or range; a field the link leaves out
keeps the form's own value (docs/dashboard.md, "Share links").
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.planning.candidates import MAX_POWER_BUDGET_KW
from engine.planning.objective import OBJECTIVES

FieldKind = Literal["number", "int", "one", "some", "flag"]

MODES = ("colocated", "disaggregated")
"""Deployment modes the form offers."""
TP_CHOICES = (1, 2, 4, 8)
"""Tensor-parallel degrees the form offers."""
PP_CHOICES = (1, 2, 4)
"""Pipeline depths the form offers."""
EP_CHOICES = (8, 16, 32)
"""Expert-parallel group sizes (chips per instance) the form offers for a MoE model."""
WINDOWS = (60.0, 120.0, 300.0)
"""Planning windows (s) the form offers."""
RULES = ("percentile", "attainment")
"""The pass rules (`engine.planning.rules.Rule`)."""
MAX_SIMULATIONS = 400
"""Most simulations one plan from the form may run."""
MAX_TEXT = 4000
"""Longest ``plan`` parameter read (the form's fields with every chip of the catalog fit in it)."""
CHIPS = ()
"""`allowed` of the hardware field: the catalog's chip ids, given to `decode`."""
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


@dataclass(frozen=True)
class LinkField:
    """One field of the form: its label, its kind, and what it may hold (choices, or a range)."""

    label: str
    kind: FieldKind
    allowed: tuple[Any, ...] = ()
    low: float = 0.0
    high: float = 0.0
    empty: bool = False  # a list that may be empty

    def allows(self) -> str:
        """What the field may hold, in words."""
        if self.kind in ("number", "int"):
            return f"from {self.low:,g} to {self.high:,g}"
        if self.kind == "flag":
            return "1 or 0"
        shown = ", ".join(format(a, "g") if isinstance(a, float) else str(a) for a in self.allowed)
        if not shown:  # the hardware field: the chips are the catalog's
            return "chip ids of the catalog (the Hardware page lists them)"
        return ("one of " if self.kind == "one" else "any of ") + shown


FIELDS: dict[str, LinkField] = {
    "rps": LinkField("Target load (req/s)", "number", low=0.1, high=bounds.MAX_RATE_RPS),
    "hw": LinkField("Allowed hardware", "some", CHIPS),
    "modes": LinkField("Modes", "some", MODES),
    "tp": LinkField("Tensor parallel", "some", TP_CHOICES),
    "pp": LinkField("Pipeline stages", "some", PP_CHOICES),
    "ep": LinkField("Expert parallel (MoE)", "some", EP_CHOICES, empty=True),
    "budget": LinkField("Budget ($/h, 0 = none)", "number", low=0.0, high=bounds.MAX_BUDGET_USD_PER_HOUR),
    "power": LinkField("Power budget (kW, 0 = none)", "number", low=0.0, high=MAX_POWER_BUDGET_KW),
    "window": LinkField("Planning window (s)", "one", WINDOWS),
    "sims": LinkField("Most simulations", "int", low=5, high=MAX_SIMULATIONS),
    "rule": LinkField("A deployment passes when", "one", RULES),
    "within": LinkField("Within SLO (%, attainment rule)", "number", low=1.0, high=100.0),
    "mixed": LinkField("Allow prefill and decode on different chips", "flag"),
    "portfolio": LinkField("Mix decode pools by class", "flag"),
    "by": LinkField("Choose by", "one", tuple(OBJECTIVES)),
    "risk": LinkField("Risk-aware choice", "flag"),
    "margin": LinkField("Check the margin for the model's error", "flag"),
}
"""The form's fields by their names in the link, in the order `encode` writes them, each labelled as its
widget is (a refusal named "Budget ($/h)" under a field reading "Budget ($/h, 0 = none)": a browser review)."""


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return format(value, ".12g")
    return str(value)


def encode(values: Mapping[str, Any]) -> str:
    """The ``plan`` parameter of a form's values (by the link's field names; others are left out)."""
    parts = []
    for name in FIELDS:
        if name in values:
            v = values[name]
            text = ",".join(_text(x) for x in v) if isinstance(v, list | tuple) else _text(v)
            parts.append(f"{name}:{text}")
    return ";".join(parts)


def _shown(text: str) -> str:
    """A value from a link, cut to 40 characters to be quoted in a message."""
    return text if len(text) <= 40 else text[:37] + "..."


def _refuse(name: str, field: LinkField, got: str) -> ScenarioError:
    return ScenarioError(f"plan.{name} ({field.label}): {_shown(got)!r} is not allowed: {field.allows()}")


def _number(name: str, field: LinkField, text: str) -> float | int:
    if not _NUMBER.fullmatch(text):
        raise _refuse(name, field, text)
    value = float(text)
    if field.kind == "int":
        if not value.is_integer():
            raise _refuse(name, field, text)
        value = int(value)
    if not field.low <= value <= field.high:
        raise _refuse(name, field, text)
    return value


def _choice(name: str, field: LinkField, text: str, allowed: tuple[Any, ...]) -> Any:
    for option in allowed:
        if isinstance(option, str):
            if text == option:
                return option
        elif _NUMBER.fullmatch(text) and float(text) == option:
            return option
    raise _refuse(name, field, text)


def _value(name: str, field: LinkField, text: str, chips: tuple[str, ...]) -> Any:
    if field.kind in ("number", "int"):
        return _number(name, field, text)
    if field.kind == "flag":
        if text not in ("0", "1"):
            raise _refuse(name, field, text)
        return text == "1"
    allowed = chips if name == "hw" else field.allowed
    if field.kind == "one":
        return _choice(name, field, text, allowed)
    items = [t for t in text.split(",") if t] if text else []
    if not items and not field.empty:
        raise ScenarioError(f"plan.{name} ({field.label}): choose at least one, {field.allows()}")
    return list(dict.fromkeys(_choice(name, field, t, allowed) for t in items))


def decode(text: str, chips: Collection[str]) -> dict[str, Any]:
    """The form's values a ``plan`` parameter gives, by the link's field names; `chips`: the ids the
    hardware field may name. ScenarioError names the first field that is not allowed."""
    if len(text) > MAX_TEXT:
        raise ScenarioError(
            f"plan: the parameter is {len(text):,} characters long; at most {MAX_TEXT:,} are read"
        )
    known = tuple(sorted(chips))
    values: dict[str, Any] = {}
    for part in (p for p in text.split(";") if p):
        name, sep, value = part.partition(":")
        if not sep or name not in FIELDS:
            raise ScenarioError(
                f"plan: {_shown(name)!r} is not a field of the plan (fields: {', '.join(FIELDS)})"
            )
        if name in values:
            raise ScenarioError(f"plan.{name}: given twice")
        values[name] = _value(name, FIELDS[name], value, known)
    return values
