"""Count a run's events by kind: which are real work, which zero-delay batch formations, which stale.

Wraps `Clock.after` (every timed call a state machine schedules) and `Clock.schedule` (simpy's
own events) for one run, from outside the engine, and classifies each call when it runs: a decode
jump's end that a cut superseded (its token no longer current) does nothing; a batch formation
(`_kick_cb`, scheduled with no delay by `Server.notify`) starts work or finds nothing to batch.
The run itself is unchanged (the wrapper only looks). Docs: docs/performance.md, "Events per request".

Run: ``python bench/events.py [PRESET | 100k]`` (default: the default preset).
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
if __name__ == "__main__":  # the wrappers patch `Clock.after` and `Clock.schedule`, which compiled
    os.environ["FENGONG_PURE"] = "1"  # code calls directly: count the pure modules' run (the same run)

from bench.scenarios import hundred_thousand
from engine.scenario import codec as io
from engine.scenario.resolve import resolve
from engine.serving import host
from engine.serving.ledger import Records
from engine.serving.sim import Simulation
from engine.serving.workload import generate

KINDS = {
    "_arrival_due": "arrival (open loop)",
    "arrive": "arrival (closed loop, retry, edge offload)",
    "_iteration_done": "iteration end (prefill, maybe with decodes)",
    "transferred": "KV hand-off landed",
    "_loaded": "cache-tier load done",
    "_resumed": "swap-in or recompute done",
}
STALE = {"_kick_cb": "batch formation", "_iteration_done": "iteration end", "_jump_done": "decode jump end"}


def count(scenario: Any) -> tuple[Counter[str], Records, int]:
    """(events by kind, the run's records, requests) of one run."""
    kinds: Counter[str] = Counter()
    after, schedule = host.Clock.after, host.Clock.schedule

    def counted_after(self: host.Clock, delay: float, fn: Any, *args: Any) -> None:
        name = getattr(fn, "__name__", repr(fn))
        owner = getattr(fn, "__self__", None)
        cut = name == "_jump_done" and sys._getframe(1).f_code.co_name == "cut_jump"

        def run(*a: Any) -> None:
            if name in STALE and a[0] != owner.token:
                kinds[f"{STALE[name]}: stale (superseded by a cut or fault)"] += 1
            elif name == "_kick_cb":
                busy = owner.busy
                fn(*a)
                started = not busy and owner.busy
                kinds["batch formation, zero delay: " + ("starts work" if started else "finds nothing")] += 1
                return
            elif name == "_jump_done":
                kinds["decode jump end: " + ("cut short (a request joins)" if cut else "planned")] += 1
            else:
                kinds[KINDS.get(name, name)] += 1
            fn(*a)

        after(self, delay, run, *args)

    def counted_schedule(
        self: host.Clock, event: Any, priority: Any = host._NORMAL, delay: float = 0
    ) -> None:
        kinds[f"simpy event ({type(event).__name__}), not counted in `events`"] += 1
        schedule(self, event, priority, delay)

    host.Clock.after, host.Clock.schedule = counted_after, counted_schedule  # type: ignore[method-assign]
    try:
        reqs = generate(scenario)
        rec = Simulation(resolve(scenario), reqs).run()
    finally:
        host.Clock.after, host.Clock.schedule = after, schedule  # type: ignore[method-assign]
    return kinds, rec, len(reqs)


def main() -> None:
    """Print the table of one case."""
    name = sys.argv[1] if len(sys.argv) > 1 else io.DEFAULT_PRESET
    scenario = hundred_thousand() if name == "100k" else io.load_preset(name)
    kinds, rec, n = count(scenario)
    events = rec.events
    print(f"{name}: {n:,} requests, {events:,} events, {events / n:.2f} a request")
    for kind, k in kinds.most_common():
        print(f"  {kind:58} {k:9,} {k / n:6.2f} a request  {100 * k / events:5.1f}%")


if __name__ == "__main__":
    main()
