"""make bench says the machine's load beside a slow figure, and "machine busy" instead of SLOW when the
load is above the core count (issue 31: a SLOW on a busy machine misleads; issue 36)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import targets


def _load(monkeypatch: pytest.MonkeyPatch, one: float, cores: int = 2) -> None:
    monkeypatch.setattr(targets.os, "getloadavg", lambda: (one, 2.0, 1.0))
    monkeypatch.setattr(targets.os, "cpu_count", lambda: cores)


def test_a_slow_figure_on_a_quiet_machine_reads_slow_with_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    _load(monkeypatch, 1.5)
    assert targets.verdict(False) == "SLOW at load 1.5 on 2 cores"
    assert targets.verdict(True) == "ok"


def test_a_slow_figure_on_a_busy_machine_reads_machine_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    _load(monkeypatch, 3.14)
    assert targets.verdict(False) == "machine busy (load 3.1 on 2 cores)"
    assert targets.verdict(True) == "ok"
    assert targets.verdict(False, timed=False) == "OVER"  # memory is not the load's fault
    _load(monkeypatch, 3.14, cores=4)  # the same load on four cores is not busy
    assert targets.verdict(False).startswith("SLOW")


def test_each_figure_is_printed_beside_its_target(monkeypatch: pytest.MonkeyPatch) -> None:
    _load(monkeypatch, 0.5)
    assert targets.judged("default", 0.2) == "(target <= 0.25 s, issue 36: ok)"
    assert targets.judged("million_rss", 3000.0, timed=False) == "(target <= 2048 MB, issue 36: OVER)"
    assert targets.judged("import", 0.4) == "(target <= 0.15 s CPU, issue 36: SLOW at load 0.5 on 2 cores)"


def test_a_machine_without_a_load_average_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_load() -> tuple[float, float, float]:
        raise OSError("no load average")

    monkeypatch.setattr(targets.os, "getloadavg", no_load)
    monkeypatch.setattr(targets.os, "cpu_count", lambda: 2)
    assert targets.machine_load() == "2 cores, load unknown"
    assert targets.verdict(False) == "SLOW at 2 cores, load unknown"
