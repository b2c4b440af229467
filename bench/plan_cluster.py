"""Planning on an executor: how well the search's hints guess, and the wall time against a local plan.

`engine.planning.runner.ClusterRunner` submits the simulations the search will likely ask for next;
this plans bench/plan.py's case (the default preset at 40 req/s over four chips) in this process
and on a local process pool of `--workers`, checks that the two plans are the same, and prints
both wall times, the simulations submitted (hints included) against those the search used, and
the share of the used ones a hint had started before the search asked (the speculation's hit
rate). A shared machine's wall times say little; the hit rate does not depend on them much.
Run: ``python bench/plan_cluster.py [--workers 2]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.run import machine_load
from engine.planning import runner
from engine.planning.candidates import SearchSpace, hardware_choice
from engine.planning.plan import plan
from engine.scenario import codec as io


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--target-rps", type=float, default=40.0)
    args = parser.parse_args()
    scen = io.load_preset(io.DEFAULT_PRESET)
    space = SearchSpace(hardware=hardware_choice(scen, "h100-sxm,h200,b200,mi300x"))
    t0 = time.perf_counter()
    local = plan(scen, args.target_rps, space)
    t_local = time.perf_counter() - t0
    seen: list[runner.ClusterRunner] = []
    close = runner.ClusterRunner.close

    def keep(self: runner.ClusterRunner) -> None:
        seen.append(self)
        close(self)

    runner.ClusterRunner.close = keep  # type: ignore[method-assign]
    with ProcessPoolExecutor(max_workers=args.workers) as ex:
        t0 = time.perf_counter()
        remote = plan(scen, args.target_rps, space, executor=ex)
        t_remote = time.perf_counter() - t0
    same = remote.runs.equals(local.runs) and remote.best == local.best
    r = seen[0]
    print(
        f"local {t_local:.1f} s, {args.workers} processes {t_remote:.1f} s; same plan: {same}; "
        f"{r.submitted} submitted for {r.used} used ({r.ready} of them started ahead: "
        f"{r.ready / max(r.used, 1):.0%}); {machine_load()}"
    )


if __name__ == "__main__":
    main()
