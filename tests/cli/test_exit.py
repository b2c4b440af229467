"""How ``python -m engine`` leaves: at once when nothing is left to do at exit, else the ordinary way."""

from __future__ import annotations

import json
import subprocess
import sys

RUN = ["run", "chat-disaggregated", "--json", "--set", "duration_s=30"]


def _engine(prelude: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """`python -m engine ARGS` run by runpy after `prelude`, output captured through pipes."""
    code = f"{prelude}\nimport runpy, sys\nsys.argv = ['engine', *{args!r}]\nrunpy.run_module('engine', run_name='__main__')"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


def test_a_run_leaves_its_whole_output_and_skips_the_teardown() -> None:
    """The JSON arrives whole through a pipe, and the process leaves by os._exit (watched here)."""
    prelude = (
        "import os\n_exit = os._exit\nos._exit = lambda status: (os.write(2, b'left at once'), _exit(status))"
    )
    out = _engine(prelude, RUN)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["requests"]["completed"] > 0
    assert out.stderr == "left at once"


def test_what_is_registered_at_exit_still_runs() -> None:
    """A process with an exit handler (here the caller's own) exits the ordinary way and runs it."""
    prelude = (
        "import atexit, os, sys\n"
        "_exit = os._exit\n"
        "os._exit = lambda status: (os.write(2, b'left at once'), _exit(status))\n"
        "atexit.register(lambda: print('ran at exit', file=sys.stderr))"
    )
    out = _engine(prelude, RUN)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["requests"]["completed"] > 0
    assert out.stderr == "ran at exit\n"  # and not "left at once": the ordinary way


def test_bad_input_keeps_its_status_and_message() -> None:
    """A refused run exits 2 with its one line on stderr, flushed before the quick exit."""
    out = _engine("", ["run", "chat-disaggregated", "--json", "--set", "duration_s=-1"])
    assert out.returncode == 2
    assert out.stderr.startswith("error: ") and "duration_s" in out.stderr
    assert out.stdout == ""
