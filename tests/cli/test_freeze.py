"""The command line pauses the collector while a command's modules load and freezes what they built,
only when it runs as its own process (engine.cli.common.FREEZE_AFTER_LOADING)."""

from __future__ import annotations

import argparse
import gc
import sys
import types

import pytest

from engine.cli import common


@pytest.mark.parametrize("flag", [True, False])
def test_a_command_loads_paused_and_frozen_only_in_the_cli_process(
    flag: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python -m engine` sets the flag: the command's module is imported with the collector off,
    then frozen, then the command runs with the collector on again; inside another process (a test,
    the dashboard) the collector is left alone."""
    events: list[str] = []
    module = types.ModuleType("a_command")

    def cmd_a(args: argparse.Namespace) -> int:
        events.append(f"run, collector {'on' if gc.isenabled() else 'off'}")
        return 3

    module.cmd_a = cmd_a  # type: ignore[attr-defined]

    def import_module(name: str) -> types.ModuleType:
        events.append(f"import, collector {'on' if gc.isenabled() else 'off'}")
        return sys.modules[name]

    monkeypatch.setitem(sys.modules, "a_command", module)
    monkeypatch.setattr(common.importlib, "import_module", import_module)
    monkeypatch.setattr(common, "FREEZE_AFTER_LOADING", flag)
    monkeypatch.setattr(common.gc, "freeze", lambda: events.append("freeze"))
    assert gc.isenabled()
    assert common.command("a_command:cmd_a")(argparse.Namespace()) == 3
    assert gc.isenabled()
    if flag:
        assert events == ["import, collector off", "freeze", "run, collector on"]
    else:
        assert events == ["import, collector on", "run, collector on"]
