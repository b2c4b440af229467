"""Entry point of ``python -m engine`` (the ``fengong`` command).

Run by a Python that lacks the project's dependencies (the system's, outside the virtual
environment), the command says in one line how to get them instead of showing a traceback,
whether the missing package is one the parser needs or one a command imports when it runs
(each command loads its own modules: `engine.cli.common.command`).
"""

import atexit
import gc
import os
import sys
import threading
from typing import NoReturn


def _lacking(exc: ModuleNotFoundError) -> NoReturn:
    """Re-raise a missing engine module (a real bug); else say which package to install, and exit."""
    if (exc.name or "").split(".")[0] == "engine":
        raise exc
    sys.stderr.write(
        f"fengong: this Python lacks the package {exc.name!r}; run `make` once in the project's folder, "
        "then `source .venv/bin/activate` (or run .venv/bin/fengong)\n"
    )
    sys.exit(1)


# What the imports build lives as long as this short process: the cyclic garbage collector is
# paused while they run (it would scan their classes, functions and validators again and again,
# freeing nothing), then freezing it spares the collector from scanning it while a command runs and
# once more at exit. The command's own modules, loaded when it runs, are treated the same
# (`common.FREEZE_AFTER_LOADING`).
gc.disable()
try:
    from engine.cli import common
    from engine.cli.main import main
except ModuleNotFoundError as exc:
    _lacking(exc)
gc.freeze()
gc.enable()
common.FREEZE_AFTER_LOADING = True


def _leave(status: int) -> NoReturn:
    """Exit with `status`; at once when nothing is left to do at exit.

    Tearing the interpreter down frees, one object at a time, everything the imports and the
    command built: about 27 M instructions (5 ms) after ``run --json``, a twentieth of what the
    process does besides importing and simulating. A process whose output is flushed, that
    registered nothing to run at exit (logging, multiprocessing and the like register there) and
    runs no other thread loses nothing by skipping it. Otherwise, or when the flush fails (a closed
    pipe), it exits the ordinary way, which reports what it reports.
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(status)
    registered = getattr(atexit, "_ncallbacks", None)
    if registered is not None and registered() == 0 and threading.active_count() == 1:
        os._exit(status)
    sys.exit(status)


try:
    status = main()
except ModuleNotFoundError as exc:
    _lacking(exc)
_leave(status)
