"""Request classes that a plain-CSV trace names and a scenario lacks, and how to add them.

A plain CSV trace may give each row a `class`; every label must name a class of the scenario
(its SLO is what the row is judged by). Rather than refusing such a file until the user adds the
classes by hand, a UI can offer to create them: `class_gap` says which labels are missing and
whether they can become classes at all (a valid class name, within the class limit), and
`with_classes` returns the workload's classes with the missing ones appended, each judged by the
first class's SLO until the user changes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from engine.core import bounds
from engine.core.errors import format_validation_error
from engine.scenario.model import RequestClass, Scenario


@dataclass(frozen=True)
class ClassGap:
    """What a trace's class labels lack in a scenario."""

    missing: tuple[str, ...]
    """Labels no class of the scenario has, in order of first use."""
    bad: tuple[tuple[str, str], ...]
    """Missing labels that cannot be class names, each with the reason."""
    over_limit: int
    """Classes the workload would have beyond `bounds.MAX_CLASSES` if every missing one were added."""

    @property
    def creatable(self) -> bool:
        """Whether adding the missing classes would make the trace usable."""
        return bool(self.missing) and not self.bad and not self.over_limit


def class_gap(scenario: Scenario, labels: Iterable[str]) -> ClassGap:
    """Compare a trace's class labels (see `engine.serving.workload.trace_class_names`) with the scenario's classes."""
    have = {c.name for c in scenario.workload.classes}
    missing = tuple(dict.fromkeys(label for label in labels if label and label not in have))
    bad = []
    for label in missing:
        try:
            RequestClass(name=label)
        except ValidationError as exc:
            bad.append((label, format_validation_error(exc)))
    over = max(0, len(scenario.workload.classes) + len(missing) - bounds.MAX_CLASSES)
    return ClassGap(missing=missing, bad=tuple(bad), over_limit=over)


def with_classes(scenario: Scenario, names: Iterable[str]) -> list[dict[str, Any]]:
    """The workload's classes as plain data, plus a class per new name with the first class's SLO."""
    classes = [c.model_dump(mode="json") for c in scenario.workload.classes]
    have = {c["name"] for c in classes}
    slo = scenario.workload.classes[0].slo.model_dump(mode="json")
    for name in names:
        if name not in have:
            classes.append({"name": name, "slo": dict(slo)})
            have.add(name)
    return classes
