"""How a user starts the tool: the `fengong` command the prose names, the module entry without its
dependencies, `make run` with a port and `make quick`. Split from tests/cli/test_cli_inputs.py at 600 lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from engine.cli import main as cli

ROOT = Path(__file__).resolve().parents[2]


def test_the_module_entry_without_its_dependencies_says_how_to_activate_the_venv() -> None:
    code = (
        "import sys, runpy; sys.modules['pydantic'] = None; runpy.run_module('engine', run_name='__main__')"
    )
    out = subprocess.run([sys.executable, "-c", code, "catalog"], capture_output=True, text=True, check=False)
    assert out.returncode == 1
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "'pydantic'" in out.stderr and "source .venv/bin/activate" in out.stderr


def test_users_read_fengong_commands() -> None:
    """The README's prose and the advisor's advice name the installed command, not `python -m engine`."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    prose = [ln for ln in readme.splitlines() if "python -m engine" in ln]
    # what remains: the sentence that says the two are the same, and the benchmark that times the module
    assert all(
        "the same as" in ln or "or `python -m engine`" in ln or "process, imports" in ln for ln in prose
    )
    from engine.calibration.own import calibrate_hint  # the advisor's advice to calibrate a chip

    advisor = (ROOT / "engine" / "explain" / "advisor.py").read_text(encoding="utf-8")
    assert "python -m engine" not in advisor and "calibrate_hint(" in advisor
    hint = calibrate_hint("h100-sxm", "vllm")
    assert "fengong calibrate" in hint and "python -m engine" not in hint
    assert cli.parser().prog == "fengong"


def test_make_run_takes_a_port() -> None:
    out = subprocess.run(
        ["make", "-n", "run", "PORT=8502"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "--server.port 8502" in out.stdout
    default = subprocess.run(["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "--server.port 8501" in default.stdout
    assert "make run PORT=8502" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_make_quick_runs_the_tests_not_marked_slow() -> None:
    out = subprocess.run(["make", "-n", "quick"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert '-m "not slow"' in out.stdout
    collected = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-m",
            "not slow",
            "-p",
            "no:cacheprovider",
            "tests/docs/test_readme.py",
            "tests/app/test_browser.py",
            "tests/app/test_app_export.py",
            "tests/cli/test_cli_inputs.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    kept = [ln for ln in collected.stdout.splitlines() if "::" in ln]
    assert kept and all(
        ln.startswith(("tests/docs/test_readme.py", "tests/cli/test_cli_inputs.py")) for ln in kept
    ), kept
    assert not any("runs_as_printed" in ln for ln in kept)
    assert "slow:" in (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # registered, so -m is not a typo
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`make quick`" in readme and "`make test` took" in readme  # the suite's length, as measured
