"""The README's command lines run as printed after `make` (through the venv's `fengong`)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def readme_commands() -> list[str]:
    """Every command of the README's command-line block (comments dropped, the activate line skipped)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Command line\n.*?```bash\n(.*?)```", text, re.S)
    assert block, "the README has no command-line block"
    lines = [ln.split("  #")[0].strip() for ln in block.group(1).splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("source ")]


def test_the_readme_names_every_command_of_the_cli() -> None:
    from engine.cli.main import parser

    sub = next(a for a in parser()._actions if a.dest == "command")  # the subcommands
    named = {shlex.split(c)[1] for c in readme_commands()}
    assert set(sub.choices) <= named, set(sub.choices) - named


@pytest.mark.slow  # each command a whole process; validate, plan and capacity take tens of seconds
@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_runs_as_printed(command: str) -> None:
    argv = shlex.split(command)
    assert argv[0] == "fengong", command
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run(
        argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )  # validate may wait for the report the other process computes (engine.core.diskcache)
    assert out.returncode == 0, f"{command}\n{out.stderr[-2000:]}"
    assert out.stdout.strip() or "wrote" in out.stderr, command


def test_the_docs_quote_the_shipped_first_token_latencies() -> None:
    """docs/scenario.md quoted 67.0 and 71.9 ms, the README 61-72 ms, after refits had moved them to
    70.5 and 77.1 (a review): both now quote presets/calibration.toml's figures."""
    import tomllib

    fitted = tomllib.loads((ROOT / "presets" / "calibration.toml").read_text(encoding="utf-8"))["first_token"]
    shared, sglang = fitted["shared_ms"], fitted["stacks"]["sglang"]

    def flat(name: str) -> str:
        text = (ROOT / name).read_text(encoding="utf-8")
        return " ".join(text.replace("#", " ").split())

    scenario = flat("docs/scenario.md")
    assert f"first_token_ms = {shared}" in scenario
    assert f"(SGLang {sglang}, any other stack {shared};" in scenario
    assert f"a first-token latency of {shared} ms per request ({sglang} ms under SGLang)" in flat("README.md")
