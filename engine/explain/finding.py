"""One statement the advisor makes about a run (`engine.explain.advisor`): its severity, topic, words
and the numbers behind it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["critical", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"critical": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Finding:
    """One statement about a run: how much it matters, what it says, the numbers behind it."""

    severity: Severity
    topic: str
    text: str
    numbers: Mapping[str, float] = field(default_factory=dict)
