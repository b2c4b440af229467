"""Plan work benchmark: how many of the work bound's estimated events one core plans per second.

`engine.planning.plan_work` bounds a plan by the sum of its runs' estimated events
(`bounds.MAX_PLAN_EVENTS`, about ten minutes of one core); this measures the rate behind that
figure (`bounds.PLAN_EVENTS_PER_S`). For each preset and load below it plans without the margin,
then divides the estimated events of the runs the plan made (events per run x simulations) by
the plan's CPU time (one core; on a shared machine wall time measures the neighbours). Prints one line per case and the slowest rate (what the limit is set from).
Run: ``python bench/plan_work.py [--max-simulations 12]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.run import machine_load
from engine.core import bounds
from engine.planning.candidates import SearchSpace
from engine.planning.plan import plan
from engine.planning.plan_work import plan_work
from engine.scenario import codec as io

CASES = (  # preset, target req/s, window s
    ("chat-colocated", 16.0, 120.0),
    ("chat-disaggregated", 40.0, 120.0),
    ("rag-long-context", 3.0, 120.0),
    ("moe-deepseek-h200", 10.0, 60.0),
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-simulations", type=int, default=12)
    args = parser.parse_args()
    rates = []
    for preset, rps, window in CASES:
        scen = io.load_preset(preset)
        space = SearchSpace(duration_s=window, max_simulations=args.max_simulations, finalists=1)
        work = plan_work(scen, rps, space)
        t0 = time.process_time()  # CPU time: the machine is shared, wall time says more about others
        p = plan(scen, rps, space)
        wall = time.process_time() - t0
        events = work.events_per_run * p.simulated
        rates.append(events / wall)
        print(
            f"{preset} at {rps:g} req/s over {window:g} s: {p.simulated} runs of {work.requests:,.0f} requests, "
            f"{work.events_per_run:,.0f} estimated events each; {wall:.1f} CPU s -> {events / wall:,.0f} events/s"
        )
    print(
        f"slowest {min(rates):,.0f} events/s (PLAN_EVENTS_PER_S = {bounds.PLAN_EVENTS_PER_S:,.0f}; "
        f"ten minutes of one core: {min(rates) * 600:,.0f} events; MAX_PLAN_EVENTS = "
        f"{bounds.MAX_PLAN_EVENTS:,}); {machine_load()}"
    )


if __name__ == "__main__":
    main()
