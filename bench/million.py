"""A million requests of the default preset: wall time and the process's peak memory.

The default preset (engine.scenario.codec.DEFAULT_PRESET) at its own rate over a window long
enough for 1,000,000 requests (62,500 s at 16 req/s): generation, the simulation and the summary,
what `simulate()` does. Peak memory is the process's maximum resident set
(`resource.getrusage(...).ru_maxrss`), so run it in a process of its own: bench/run.py does.
The work bound's memory estimate (about 1.6e9 bytes against 2e9) passes it now that per-request
state is compact (docs/performance.md); the run checks the bound as `simulate()` does by default and
prints the estimate beside the measurement. Targets (issue 36): at most 60 s and 2 GB.

Run: ``python bench/million.py [--requests 1000000]`` (one line: the figure and its targets).
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.targets import judged
from engine.scenario import codec as io
from engine.serving import work_bound
from engine.serving.run import simulate
from engine.serving.workload import generate


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1_000_000)
    args = parser.parse_args()
    default = io.load_preset(io.DEFAULT_PRESET)
    rate = default.workload.arrival.rate_rps
    scen = io.apply_overrides(default, {"duration_s": args.requests / rate})
    est = work_bound.estimate(scen)
    gc.collect()
    t0 = time.perf_counter()
    reqs = generate(scen)
    result = simulate(scen, requests=reqs)
    wall = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    rss_mb, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime  # CPU: imports and set-up too
    over = "; the work bound refuses it" if est.problems() else ""
    print(
        f"{f'{len(reqs):,} requests (default preset, {scen.duration_s:g} s)':42} {wall:8.1f} s  "
        f"{judged('million', wall)} (process CPU {cpu:.1f} s)  peak RSS {rss_mb:,.0f} MB {judged('million_rss', rss_mb, timed=False)}  "
        f"{result.events / max(len(reqs), 1):5.1f} ev/req; estimated {est.memory_bytes / 1e6:,.0f} MB{over}"
    )


if __name__ == "__main__":
    main()
