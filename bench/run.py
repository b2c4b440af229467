"""Speed and memory benchmarks of the engine: each figure beside its target, and the machine's load.

The targets (bench/targets.py) are issue 36's "Done when" list where it names one, the earlier
issues' otherwise, on the 2-core reference machine:
- `import engine; engine.simulate` in a fresh process: at most 0.15 s of CPU;
- a whole ``python -m engine run chat-disaggregated --json`` process, imports included: at most
  0.6 s of CPU (its wall time is printed beside);
- the default preset (about 10,000 requests) in at most 0.25 s;
- the Mooncake conversation trace (12,031 requests over an hour) with its prefix cache in three
  tiers in at most 1 s; without the cache 1.5 s; any other preset 1 s (trace parsing reported apart);
- 100,000 synthetic requests in at most 3 s and 1 GB;
- a million requests of the default preset in at most 60 s and 2 GB (bench/million.py, in a
  process of its own; skipped by --quick);
- a whole day at 10 req/s (about 864,000 requests, autoscaled) from the CLI in at most 2 minutes
  and 2 GB (bench/day.py, issue 34; skipped by --quick);
- doubling every output length changes wall time by less than 30%; outputs four times longer
  take at most 1.3 times as long;
- a slider move on the dashboard redraws in 0.5 s at the median and 1.5 s at most
  (bench/slider.py: Chromium driving the app, 20 moves; skipped by --quick, and where no Chromium is
  found, with a line that says so).

A figure over its target reads SLOW on a quiet machine and "machine busy" when the 1-minute load
is above the core count. Times are of `Simulation.run` plus metrics (what `simulate()` does after
the requests are generated), the best of a few repetitions; start-up and imports are timed apart.
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
from bench.targets import busy, judged, machine_load
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.run import result_of
from engine.serving.sim import Simulation
from engine.serving.workload import generate


def _one_run(res: Any, reqs: Any) -> tuple[float, int, dict[str, Any], int]:
    """(wall s, events, summary, requests simulated) of one simulation and its summary on prepared
    requests (simulated: a warm-up's requests too, which the summary does not count)."""
    gc.collect()
    t0 = time.perf_counter()
    rec = Simulation(res, reqs).run()
    result = result_of(res, reqs, rec, 0.0)
    return time.perf_counter() - t0, rec.events, result.summary, result.tables.rows


def timed(scenario: Scenario, repeat: int) -> tuple[float, float, int, int, dict[str, Any]]:
    """(best wall s, generation s, events, requests sent, summary) of simulate() on a prepared scenario
    (a multi-turn session's turns past the window are drawn but never sent; a warm-up's are sent)."""
    res = resolve(scenario)
    t0 = time.perf_counter()
    reqs = generate(scenario)
    gen_s = time.perf_counter() - t0
    runs = [_one_run(res, reqs) for _ in range(repeat)]
    _, events, summary, sent = runs[-1]
    return min(r[0] for r in runs), gen_s, events, sent, summary


def _child_cpu(cmd: list[str], repeat: int) -> tuple[float, float]:
    """(best CPU s, best wall s) of a command run `repeat` times, each in a fresh process.

    The children may write the bytecode cache (``__pycache__``) even where this shell forbids it
    (``PYTHONDONTWRITEBYTECODE``), so that the first run leaves it and the best run reads it, as an
    installed package does (pip compiles at install): without it every start compiles the engine's
    sources again, about 0.12 s of CPU, which is no part of the engine's start.
    """
    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cpu = wall = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=root, check=True, stdout=subprocess.DEVNULL, env=env)
        wall = min(wall, time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = min(cpu, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return cpu, wall


def whole_process(repeat: int) -> tuple[float, float]:
    """(CPU s, wall s), the best of a few, of a whole `python -m engine run <default> --json` process."""
    return _child_cpu([sys.executable, "-m", "engine", "run", io.DEFAULT_PRESET, "--json"], max(repeat, 2))


def import_cost(repeat: int) -> tuple[float, float]:
    """(CPU s, wall s), the best of a few, of a fresh process that runs `import engine; engine.simulate`."""
    return _child_cpu([sys.executable, "-c", "import engine; engine.simulate"], max(repeat, 3))


def row(name: str, wall: float, key: str, events: int, n: int, extra: str = "") -> None:
    """One timed figure: its time, target and verdict, requests and events per request."""
    print(
        f"{name:42} {wall:8.3f} s  {judged(key, wall)}  {n:>7,} req  {events / max(n, 1):5.1f} ev/req  {extra}"
    )


def million() -> None:
    """bench/million.py in a process of its own, so that its peak memory is its own."""
    script = Path(__file__).resolve().parent / "million.py"
    subprocess.run([sys.executable, str(script)], check=True)


def day() -> None:
    """bench/day.py in a process of its own: it runs the CLI on a whole day and reads its child's peak memory."""
    script = Path(__file__).resolve().parent / "day.py"
    subprocess.run([sys.executable, str(script)], check=True)


def cold_start(rep: int) -> None:
    """The import of `engine.simulate` and a whole `run --json` process, each in fresh processes."""
    cpu, wall = import_cost(rep)
    print(
        f"{'import engine; engine.simulate':42} {cpu:8.3f} s CPU  {judged('import', cpu)}  wall {wall:.3f} s"
    )
    cpu, wall = whole_process(rep)
    print(
        f"{'whole process: engine run <default> --json':42} {cpu:8.3f} s CPU  {judged('process', cpu)}  "
        f"wall {wall:.3f} s, imports included"
    )


def presets(default: Scenario, rep: int) -> None:
    """Every preset once (the default `rep` times)."""
    base, gen, ev, n, _ = timed(default, rep)
    row(f"default preset ({io.DEFAULT_PRESET})", base, "default", ev, n, f"generation {gen:.3f} s")
    for preset in io.preset_names():
        if preset == io.DEFAULT_PRESET:
            continue
        scen = io.load_preset(preset)
        wall, gen, ev, n, _ = timed(scen, 1)
        key = "mooncake" if "mooncake" in preset else "preset"
        if scen.workload.trace is not None and scen.cache.enabled:
            key = "mooncake_tiers"  # the whole Mooncake trace looked up in three cache tiers
        row(f"preset {preset}", wall, key, ev, n, f"generation {gen:.3f} s")


def interleaved(scenarios: list[Scenario], repeat: int) -> list[tuple[float, int, int]]:
    """(best wall s, events, requests) of each scenario, their runs taken in turn (a, b, a, b, ...),
    so that a ratio between them compares runs in the same phase of a busy machine."""
    prepared = [(resolve(s), generate(s)) for s in scenarios]
    best = [float("inf")] * len(prepared)
    events = [0] * len(prepared)
    for _ in range(repeat):
        for i, (res, reqs) in enumerate(prepared):
            wall, events[i], _, _ = _one_run(res, reqs)
            best[i] = min(best[i], wall)
    return [(best[i], events[i], len(prepared[i][1])) for i in range(len(prepared))]


def variants(default: Scenario, rep: int) -> None:
    """The default with every feature on, with doubled and with four times longer outputs (these two
    timed in turn with the default itself, the best of `rep` runs each)."""
    wall, gen, ev, n, summary = timed(everything_on(), rep)
    row("default, cache/policies/preemption/faults on", wall, "everything", ev, n, f"generation {gen:.3f} s")
    sched, cache, counts = summary["scheduler"], summary["cache"], summary["requests"]
    print(
        f"{'':42} what it exercised: cache hits {cache['hit_rate']:.0%} of prompt tokens, "
        f"{counts['rejected']:,} rejected early, {sched['retried']:,} retried after the fault, "
        f"{sched['preemptions']:,} preempted, {sched['role_switches']:,} role switches"
    )
    runs = interleaved([default, doubled_outputs(), scaled_outputs(default, 4)], rep)
    base = runs[0][0]
    wall2, ev2, n2 = runs[1]
    change = wall2 / base - 1.0
    print(
        f"{'default with doubled output lengths':42} {wall2:8.3f} s  change {change:+.0%} vs {base:.3f} s "
        f"{judged('doubled', abs(change))}  {ev2 / n2:5.1f} ev/req"
    )
    wall4, ev4, n4 = runs[2]
    ratio = wall4 / base
    print(
        f"{'default with outputs four times longer':42} {wall4:8.3f} s  ratio {ratio:.2f} vs {base:.3f} s "
        f"{judged('four_times', ratio)}  {ev4 / n4:5.1f} ev/req"
    )


def large(quick: bool) -> None:
    """100,000 requests in this process, a million and a day in processes of their own (not with --quick)."""
    if quick:
        print(f"{'100k, 1M requests and a day':42} skipped (--quick)")
        return
    gc.collect()
    wall, _, ev, n, _ = timed(hundred_thousand(), 1)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rss = f"process max RSS {rss_mb:,.0f} MB {judged('hundred_k_rss', rss_mb, timed=False)}"
    row("100k synthetic requests (40 instances)", wall, "hundred_k", ev, n, rss)
    million()
    day()


def slider(quick: bool) -> None:
    """bench/slider.py in a process of its own: it serves the app and drives Chromium (not with --quick)."""
    if quick:
        print(f"{'slider to redraw (browser, 20 moves)':42} skipped (--quick)")
        return
    done = subprocess.run([sys.executable, str(Path(__file__).resolve().parent / "slider.py")], check=False)
    if done.returncode:  # a browser that hung or crashed: the other figures still print
        print(f"{'slider to redraw (browser, 20 moves)':42} failed (exit code {done.returncode}; see above)")


def native_build() -> str:
    """Which modules the figures below ran: the compiled build or pure Python, and why."""
    from engine.core import native

    if native.active():
        return (
            f"the compiled hot path ({len(native.COMPILED)} modules, mypyc; FENGONG_PURE=1 for pure Python)"
        )
    return f"pure Python ({native.state().removeprefix('pure: ')})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--quick", action="store_true", help="one repetition, skip the 100k and 1M runs and the browser"
    )
    args = parser.parse_args()
    rep = 1 if args.quick else 3
    state = "busy: a figure over its target says so" if busy() else "quiet"
    print(f"machine: {machine_load()} at the start ({state})")
    print(f"engine: {native_build()}")
    cold_start(rep)
    default = io.load_preset(io.DEFAULT_PRESET)
    presets(default, rep)
    variants(default, rep)
    large(args.quick)
    slider(args.quick)
    print(f"machine: {machine_load()} at the end; python {sys.version.split()[0]}; best of {rep} run(s)")


if __name__ == "__main__":
    main()
