"""Where a whole ``python -m engine run <preset> --json`` process goes, part by part, in instructions.

The process's work is done up to a stage and the child leaves there by ``os._exit``; valgrind counts
each child's instructions (the load does not change them), and each part is the difference between
two stages. The cyclic collector is off in the children so that a part counts its own work; the
last line is the real process, with it on. About 5 minutes (15 runs under valgrind). Run:
``python bench/process_split.py [--preset NAME]`` (docs/performance.md, "The rest of the process").
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PARTS = (
    "the interpreter and the imports",
    "the preset read and validated",
    "the catalog read",
    "resolving the scenario",
    "the requests drawn",
    "the work bound checked",
    "the simulation",
    "the per-request columns",
    "the saturation test",
    "the summary",
    "the JSON document cleaned",
    "the JSON encoded",
    "the JSON written",
    "leaving (the interpreter's teardown)",
)
LAST = 13
"""The stage that leaves the ordinary way (every other stage leaves by os._exit)."""


def stage(n: int, preset: str) -> None:
    """Do a run --json process's work up to stage `n`, then leave."""
    import gc
    import json

    from engine.catalog.entries import load_catalog
    from engine.cli import (
        main,  # noqa: F401  (the parser's imports, as the process has them)
        run,  # noqa: F401
    )
    from engine.cli.common import clean, load_scenario
    from engine.scenario.resolve import resolve
    from engine.serving import metrics, saturation, work_bound
    from engine.serving.run import RunTables, SimResult
    from engine.serving.sim import Simulation
    from engine.serving.workload import generate

    gc.freeze()
    gc.disable()
    steps = iter(range(LAST))

    def done() -> None:
        if next(steps) == n:
            os._exit(0)

    done()
    scen = load_scenario(preset, None)
    done()
    load_catalog()
    done()
    res = resolve(scen)
    done()
    reqs = generate(scen)
    done()
    work_bound.check(scen, reqs)
    done()
    rec = Simulation(res, reqs).run()
    done()
    cols = metrics.request_columns(res, reqs, rec)
    done()
    short = saturation.unsustainable(res.scenario, rec)
    done()
    summ = metrics.summary(res, rec, cols, short)
    done()
    result = SimResult(
        summary=summ, scenario=scen, events=rec.events, wall_s=0.0, tables=RunTables(res, rec, cols)
    )
    doc = clean(result.to_json())
    done()
    text = json.dumps(doc, indent=2)
    done()
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    sys.exit(0)


def instructions(cmd: list[str]) -> float:
    """Millions of instructions valgrind counts for `cmd` (hash seed fixed, no address randomisation)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    vg = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    out = subprocess.run(
        ["setarch", "-R", *vg, *cmd], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    found = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output:\n{out.stderr[-2000:]}")
    return int(found.group(1).replace(",", "")) / 1e6


def main() -> None:
    """Print each part's instructions and the whole process's."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="chat-disaggregated")
    ap.add_argument("--stage", type=int, default=None, help=argparse.SUPPRESS)  # a child's work
    args = ap.parse_args()
    if args.stage is not None:
        stage(args.stage, args.preset)
        return
    if shutil.which("valgrind") is None or shutil.which("setarch") is None:
        raise SystemExit("process_split needs valgrind and setarch")
    me = [sys.executable, str(Path(__file__).resolve()), "--preset", args.preset, "--stage"]
    before = 0.0
    for n, part in enumerate(PARTS):
        count = instructions([*me, str(n)])
        print(f"{part:44} {count - before:9,.1f} M")
        before = count
    whole = instructions([sys.executable, "-m", "engine", "run", args.preset, "--json"])
    print(f"{'sum of the parts':44} {before:9,.1f} M")
    print(f"{'the whole process (collector on)':44} {whole:9,.1f} M")


if __name__ == "__main__":
    main()
