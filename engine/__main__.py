"""Entry point of ``python -m engine`` (the ``fengong`` command).

Run by a Python that lacks the project's dependencies (the system's, outside the virtual
environment), the command says in one line how to get them instead of showing a traceback.
"""

import gc
import sys

try:
    from engine.cli.main import main
except ModuleNotFoundError as exc:
    if (exc.name or "").split(".")[0] == "engine":  # a module of the engine itself: a real bug
        raise
    sys.stderr.write(
        f"fengong: this Python lacks the package {exc.name!r}; run `make` once in the project's folder, "
        "then `source .venv/bin/activate` (or run .venv/bin/fengong)\n"
    )
    sys.exit(1)

# What the imports built lives as long as this short process: freezing it spares the cyclic
# garbage collector from scanning it again while a command runs and once more at exit.
gc.freeze()
sys.exit(main())
