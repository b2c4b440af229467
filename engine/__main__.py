"""Entry point of ``python -m engine`` (the ``fengong`` command).

Run by a Python that lacks the project's dependencies (the system's, outside the virtual
environment), the command says in one line how to get them instead of showing a traceback,
whether the missing package is one the parser needs or one a command imports when it runs
(each command loads its own modules: `engine.cli.common.command`).
"""

import gc
import sys
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


try:
    from engine.cli.main import main
except ModuleNotFoundError as exc:
    _lacking(exc)

# What the imports built lives as long as this short process: freezing it spares the cyclic
# garbage collector from scanning it again while a command runs and once more at exit.
gc.freeze()
try:
    status = main()
except ModuleNotFoundError as exc:
    _lacking(exc)
sys.exit(status)
