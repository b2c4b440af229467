"""How far the dashboard's preview lands from the full run: the measurement behind its expected error.

For every shipped preset that has a preview (open-loop arrivals or a trace, more than
`MIN_FULL_REQUESTS` requests), the preview (the first `PREVIEW_REQUESTS` requests' window) and the
full run are simulated, and each headline figure's difference printed; the last line is the 84th
percentile over the presets of each kind (steady or changing), which
`engine.explain.run_preview.PREVIEW_ERROR` holds (copy it there
when the engine's model changes). Run: ``python bench/preview_error.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.targets import machine_load
from engine.explain import run_preview as rp
from engine.scenario import codec


def main() -> None:
    """Print each preset's differences and their 84th percentile per figure."""
    t0 = time.perf_counter()
    names = codec.preset_names()
    out = rp.measure_preview_error(codec.load_preset(n) for n in names)
    cols = rp.FIGURES
    print(f"preview of the first {rp.PREVIEW_REQUESTS:,} requests against the full run ({machine_load()})")
    print(f"{'preset':50} {'kind':9} " + " ".join(f"{c:>15}" for c in cols))
    for name, (kind, row) in out["scenarios"].items():
        cells = " ".join(f"{row[c]:>15.3f}" if c in row else f"{'-':>15}" for c in cols)
        print(f"{name[:50]:50} {kind:9} {cells}")
    q = out["quantile"]
    for kind, errors in out["error"].items():
        n = sum(1 for k, _ in out["scenarios"].values() if k == kind)
        label = f"p{q * 100:.0f} over {n} presets"
        print(f"{label:50} {kind:9} " + " ".join(f"{errors.get(c, float('nan')):>15.3f}" for c in cols))
    skipped = len(names) - len(out["scenarios"])
    print(
        f"({skipped} presets have no preview: closed loops, offline batches, small runs; "
        f"{time.perf_counter() - t0:.0f} s)"
    )


if __name__ == "__main__":
    main()
