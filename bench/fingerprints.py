"""Per-request fingerprints of every preset: the proof that a refactor kept behaviour bit-identical.

For each preset, one SHA-256 over every array of the run's Records (per request: arrival, first
token, completion, outcome and reason, instances, transfers, cache hits, retries, preemptions;
per iteration: the segments) and one over its summary JSON. Two trees that print the same lines
simulate the same thing, request by request.

Run: ``python bench/fingerprints.py > before.txt``, change the engine, run it again and diff.
``--extra`` adds the scenarios that exercise what the presets leave off (preemption by swap and
recompute, closed loops, faults with retries, elastic roles, degrading).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.scenario import codec
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.ledger import Records
from engine.serving.run import result_of
from engine.serving.sim import Simulation
from engine.serving.workload import generate

UNSET_LEFT_OUT = ("scaling",)
"""Records added after the digests were first taken, left out while a run leaves them unset, so a run
that does not use them keeps its digest (an autoscaled pool's log is None in every other run)."""


def records_digest(rec: Records) -> str:
    """SHA-256 of every per-request and per-iteration array of a run."""
    h = hashlib.sha256()
    for name in sorted(vars(rec)):
        value = getattr(rec, name)
        if value is None and name in UNSET_LEFT_OUT:
            continue
        if isinstance(value, np.ndarray):
            h.update(name.encode())
            h.update(str(value.dtype).encode())
            h.update(np.ascontiguousarray(value).tobytes())
        else:
            h.update(name.encode())
            h.update(repr(value).encode())
    return h.hexdigest()[:16]


def fingerprint(scenario: Scenario) -> tuple[str, str]:
    """(records digest, summary digest) of one scenario."""
    res = resolve(scenario)
    reqs = generate(scenario)
    rec = Simulation(res, reqs).run()
    summary = result_of(res, reqs, rec, 0.0).summary
    text = json.dumps(summary, sort_keys=True, default=repr)
    return records_digest(rec), hashlib.sha256(text.encode()).hexdigest()[:16]


EXTRA = {
    "swap": ("chat-colocated", {"scheduler.preemption": "swap", "workload.arrival.rate_rps": 40.0}),
    "recompute": (
        "chat-disaggregated",
        {"scheduler.preemption": "recompute", "workload.arrival.rate_rps": 40.0},
    ),
    "closed": (
        "chat-colocated",
        {"workload.arrival.kind": "closed_loop", "workload.arrival.clients": 64, "duration_s": 120.0},
    ),
}


def main() -> None:
    """Print one line per preset (and per extra scenario): name, records digest, summary digest."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extra", action="store_true", help="also the scenarios the presets leave off")
    args = ap.parse_args()
    for name in codec.preset_names():
        rec_d, sum_d = fingerprint(codec.load_preset(name))
        print(f"{name:32s} {rec_d} {sum_d}", flush=True)
    if args.extra:
        for label, (base, changes) in EXTRA.items():
            sc = codec.apply_overrides(codec.load_preset(base), changes)
            rec_d, sum_d = fingerprint(sc)
            print(f"{label:32s} {rec_d} {sum_d}", flush=True)


if __name__ == "__main__":
    main()
