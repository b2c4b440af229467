"""make bench says the machine's load beside a slow figure (issue 31: a SLOW on a busy machine misleads)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import run


def test_a_slow_verdict_names_the_machines_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run.os, "getloadavg", lambda: (3.14, 2.0, 1.0))
    monkeypatch.setattr(run.os, "cpu_count", lambda: 2)
    assert run.slow("SLOW") == "SLOW at load 3.1 on 2 cores"
    assert run.slow("ok") == "ok"


def test_a_machine_without_a_load_average_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_load() -> tuple[float, float, float]:
        raise OSError("no load average")

    monkeypatch.setattr(run.os, "getloadavg", no_load)
    monkeypatch.setattr(run.os, "cpu_count", lambda: 2)
    assert run.machine_load() == "2 cores, load unknown"
