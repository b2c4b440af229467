"""A whole day of traffic from the command line: wall time and the process's peak memory (issue 34).

The day-autoscaled preset compresses a day of chat into one hour; `bench.scenarios.FULL_DAY` runs
its daily curve over 24 real hours instead (10 req/s on average, four times as many at the 14:00
peak as at the 02:00 trough: about 864,000 requests, its pools autoscaled). It runs as a user runs
it, ``python -m engine run day-autoscaled --set duration_s=86400 --json``, in a process of its own,
whose wall time and peak resident memory (``os.wait4``'s ``ru_maxrss``) are the figures: imports,
the requests drawn, the simulation, the summary and the JSON. Targets: at most 2 minutes and 2 GB.

Run: ``python bench/day.py [--duration-s 86400]`` (one line: the figures and their targets).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scenarios import FULL_DAY
from bench.targets import judged


def command(duration_s: float | None = None) -> list[str]:
    """The CLI run of the full day: ``python -m engine run <preset> --set duration_s=86400 --json``
    (`duration_s`: a shorter day, the same curve over it, for a quick look)."""
    preset, overrides = FULL_DAY
    if duration_s is not None:
        overrides = {**overrides, "duration_s": duration_s}
    sets = [arg for path, value in overrides.items() for arg in ("--set", f"{path}={value:g}")]
    return [sys.executable, "-m", "engine", "run", preset, *sets, "--json"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration-s", type=float, default=None, help="a shorter day (default 86,400 s)")
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        command(args.duration_s), cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    rss_mb = _child_peak_mb()
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = child.ru_utime + child.ru_stime  # the CLI process's, imports included
    if proc.returncode != 0:
        print(
            f"{'a day at 10 req/s (day-autoscaled, CLI)':42} FAILED: {' '.join(err.strip().splitlines()[-1:])}"
        )
        return
    doc = json.loads(out)
    n = doc["sim"]["requests_simulated"]
    auto = doc.get("autoscale", {})
    print(
        f"{f'{n:,} requests (a day, day-autoscaled, CLI)':42} {wall:8.1f} s  {judged('day', wall)} "
        f"(process CPU {cpu:.1f} s)  "
        f"peak RSS {rss_mb:,.0f} MB {judged('day_rss', rss_mb, timed=False)}  "
        f"{doc['sim']['events_per_request']:5.1f} ev/req; SLO {doc['slo_attainment']:.1%}, "
        f"${doc['cost']['usd_total']:,.0f}, {auto.get('scale_ups', 0)} scale-ups"
    )


def _child_peak_mb() -> float:
    """The peak resident set of the CLI process, in MB: the largest of this process's reaped
    children, and it has one (bench/run.py runs this script in a process of its own for that)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


if __name__ == "__main__":
    main()
