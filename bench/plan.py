"""Planner benchmark: plan the default preset over several chips and print the wall time.

Target (issue 7: planner and advisor), on the 2-core reference machine: planning the default
preset (engine.scenario.codec.DEFAULT_PRESET) at a target load over at least three hardware kinds
finishes in under 60 s (bench/targets.py; "machine busy" instead of SLOW when the load is above the
core count), and with its margin (the search repeated with every chip as slow as the
pessimistic edge of its throughput band, `engine.planning.margin`) too. Prints the shapes considered, pruned,
bounded out and simulated, the simulations that passed, the chosen deployment, the margin (its
simulations, the runs it reused from the verdict's and those settled as failing as modelled) and the
times, wall and CPU (this process's: on a loaded machine the wall time is the other processes' too);
imports are excluded.
Run: ``python bench/plan.py [--target-rps 40] [--hardware h100-sxm,h200,b200,mi300x | all]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.targets import judged, machine_load
from engine.planning.candidates import SearchSpace, hardware_choice
from engine.planning.margin import margin
from engine.planning.plan import plan
from engine.scenario import codec as io


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--target-rps", type=float, default=40.0)
    parser.add_argument("--hardware", default="h100-sxm,h200,b200,mi300x")
    parser.add_argument("--duration-s", type=float, default=120.0)
    args = parser.parse_args()
    print(f"machine: {machine_load()} at the start")
    scen = io.load_preset(io.DEFAULT_PRESET)
    chips = hardware_choice(scen, args.hardware)
    space = SearchSpace(hardware=chips, duration_s=args.duration_s)
    t0, c0 = time.perf_counter(), time.process_time()
    p = plan(scen, args.target_rps, space)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"plan {io.DEFAULT_PRESET} at {args.target_rps:g} req/s over {len(chips)} chips: {', '.join(chips)}"
    )
    print(
        f"  {len(p.candidates)} shapes: {p.pruned} pruned by the cost model, {p.bounded} bounded out; "
        f"{p.simulated} simulations ({args.duration_s:g} s windows), {p.feasible} passed"
    )
    if p.best_run is not None:
        r = p.runs.iloc[p.best_run]
        print(f"  cheapest: {r['shape']} {r['split']}, {int(r['chips'])} chips, ${r['usd_per_hour']:,.2f}/h")
    if (v := p.verdict) is not None:
        full = len(v.table) + int(v.table["moved_up"].sum()) if len(v.table) else 0
        print(
            f"  verdict: {v.slowed_simulations} runs at the bands' edge, {full} full-length runs ({len(v.table)} groups)"
        )
    for note in (*p.method, *p.notes):  # how the runs were made, then what the search left out
        print(f"  note: {note}")
    print(f"{'planner wall time':42} {wall:8.2f} s  {judged('planner', wall)}  (CPU {cpu:.1f} s)")
    t0, c0 = time.perf_counter(), time.process_time()
    m = margin(scen, p, space)
    extra, cpu_extra = time.perf_counter() - t0, time.process_time() - c0
    if m is not None:
        q = m.slowed
        held = "holds" if m.holds else "misses"
        cost = f"${q.best_usd_per_hour:,.2f}/h" if q.best_usd_per_hour is not None else "nothing passes"
        ran = q.ran
        reused, skipped = (ran.reused, ran.skipped) if ran is not None else (0, 0)
        print(
            f"  margin: chips slowed by {', '.join(f'{c} {e:.0%}' for c, e in m.slowdown.items())}: the choice "
            f"{held}; cheapest that passes slowed {cost} ({q.simulated - reused} simulations; "
            f"{reused} runs reused from the verdict's, {skipped} settled as failing as modelled)"
        )
    total = wall + extra
    cpu_total = cpu + cpu_extra
    print(
        f"{'planner with its margin, wall time':42} {total:8.2f} s  {judged('planner', total)}  (CPU {cpu_total:.1f} s)"
    )
    print(f"machine: {machine_load()} at the end")


if __name__ == "__main__":
    main()
