"""Speed and memory benchmarks of the engine: prints each figure and the events per request.

Targets (issue: the simulation engine), on the 2-core reference machine:
- the default preset (about 10,000 requests) in under 1 s of wall time;
- the Mooncake conversation trace (12,031 requests over an hour) on a disaggregated
  deployment in under 1.5 s (trace parsing reported apart);
- 100,000 synthetic requests in under 15 s and under 1 GB of memory;
- doubling every output length changes wall time by less than 30%;
- outputs four times longer take at most 1.3 times as long (hand-offs to a full decode pool);
- a whole ``python -m engine run chat-disaggregated --json`` process, imports included, at most 1.0 s.

Times are of `Simulation.run` plus metrics (what `simulate()` does after the requests are
generated), the best of a few repetitions; interpreter start-up and imports are excluded.
Run: ``make bench`` or ``python bench/run.py [--quick]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scenarios import doubled_outputs, everything_on, hundred_thousand, scaled_outputs
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.run import result_of
from engine.serving.sim import Simulation
from engine.serving.workload import generate


def timed(scenario: Scenario, repeat: int) -> tuple[float, float, int, int, dict[str, Any]]:
    """(best wall s, generation s, events, requests, summary) of simulate() on a prepared scenario."""
    res = resolve(scenario)
    t0 = time.perf_counter()
    reqs = generate(scenario)
    gen_s = time.perf_counter() - t0
    walls = []
    events = 0
    summary: dict[str, Any] = {}
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        rec = Simulation(res, reqs).run()
        result = result_of(res, reqs, rec, 0.0)
        walls.append(time.perf_counter() - t0)
        events = rec.events
        summary = result.summary
    return min(walls), gen_s, events, len(reqs), summary


def whole_process(repeat: int) -> float:
    """Best wall time of a whole `python -m engine run <default> --json` process."""
    root = Path(__file__).resolve().parent.parent
    best = float("inf")
    for _ in range(max(repeat, 2)):
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "engine", "run", io.DEFAULT_PRESET, "--json"],
            cwd=root, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        best = min(best, time.perf_counter() - t0)
    return best


def machine_load() -> str:
    """'load 3.1 on 2 cores' (the 1-minute load average), for a reader to judge a SLOW figure by."""
    try:
        one = os.getloadavg()[0]
    except OSError:  # no load average on this platform
        return f"{os.cpu_count() or 1} cores, load unknown"
    return f"load {one:.1f} on {os.cpu_count() or 1} cores"


def slow(verdict: str) -> str:
    """A failed verdict with the machine's load beside it: a busy machine makes any timing slow."""
    return verdict if verdict == "ok" else f"{verdict} at {machine_load()}"


def row(name: str, wall: float, target: float, events: int, n: int, extra: str = "") -> None:
    ok = slow("ok" if wall < target else "SLOW")
    print(
        f"{name:42} {wall:8.3f} s  (target < {target:g} s, {ok})  {n:>7,} req  {events / max(n, 1):5.1f} ev/req  {extra}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="one repetition, skip the 100k run")
    args = parser.parse_args()
    rep = 1 if args.quick else 3
    print(f"machine: {machine_load()} at the start (timings on a busy machine run slow)")

    default = io.load_preset(io.DEFAULT_PRESET)
    wall, gen, ev, n, _ = timed(default, rep)
    row(f"default preset ({io.DEFAULT_PRESET})", wall, 1.0, ev, n, f"generation {gen:.3f} s")

    for preset in io.preset_names():
        if preset == io.DEFAULT_PRESET:
            continue
        scen = io.load_preset(preset)
        wall, gen, ev, n, _ = timed(scen, 1)
        target = 1.0 if "mooncake" not in preset else 1.5
        if scen.workload.trace is not None and scen.cache.enabled:
            target = 2.0  # the whole Mooncake trace looked up in three cache tiers: ~0.8 s more than without
        row(f"preset {preset}", wall, target, ev, n, f"generation {gen:.3f} s")

    everything = everything_on()
    wall, gen, ev, n, summary = timed(everything, rep)
    row("default, cache/policies/preemption/faults on", wall, 1.0, ev, n, f"generation {gen:.3f} s")
    sched, cache, counts = summary["scheduler"], summary["cache"], summary["requests"]
    print(
        f"{'':42} what it exercised: cache hits {cache['hit_rate']:.0%} of prompt tokens, "
        f"{counts['rejected']:,} rejected early, {sched['retried']:,} retried after the fault, "
        f"{sched['preemptions']:,} preempted, {sched['role_switches']:,} role switches"
    )

    longer = doubled_outputs()
    wall2, _, ev2, n2, _ = timed(longer, rep)
    base = timed(default, rep)[0]
    change = wall2 / base - 1.0
    verdict = "ok" if abs(change) < 0.30 else "TOO SENSITIVE"
    print(
        f"{'default with doubled output lengths':42} {wall2:8.3f} s  (change {change:+.0%} vs {base:.3f} s, target < 30%, {verdict})  {ev2 / n2:5.1f} ev/req"
    )

    four = scaled_outputs(default, 4)
    wall4, _, ev4, n4, _ = timed(four, rep)
    ratio = wall4 / base
    verdict = slow("ok" if ratio <= 1.3 else "TOO SLOW")
    print(
        f"{'default with outputs four times longer':42} {wall4:8.3f} s  (ratio {ratio:.2f} vs {base:.3f} s, target <= 1.3, {verdict})  {ev4 / n4:5.1f} ev/req"
    )
    proc = whole_process(rep)
    verdict = slow("ok" if proc <= 1.0 else "SLOW")
    print(
        f"{'whole process: engine run <default> --json':42} {proc:8.3f} s  (target <= 1 s, {verdict}; imports included)"
    )

    if not args.quick:
        big = hundred_thousand()
        gc.collect()
        wall, gen, ev, n, _ = timed(big, 1)
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        row(
            "100k synthetic requests (40 instances)",
            wall,
            15.0,
            ev,
            n,
            f"process max RSS {rss_mb:,.0f} MB (target < 1 GB)",
        )
    print(f"python {sys.version.split()[0]}; each figure is the best of {rep} run(s)")


if __name__ == "__main__":
    main()
