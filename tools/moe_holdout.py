"""The MoE points' leave-source-out predictions alone, for the sources named: a quick check of a
change to the MoE step model before `make validate` (which also runs the dense schemes, the
bands and the simulator's reruns).

Run: ``python tools/moe_holdout.py [SOURCE_SUBSTRING ...] [--csv PATH]``. Each MoE source whose
key contains one of the substrings (every MoE source without any) is left out in turn, the dense
profiles, the MoE terms and the first-token latency refitted without it, and its MoE points
predicted as `validate` predicts them (`crossval._held_out`); the figures are those of validate's
"MoE, source out" line when every source is run (22.8% / 50.7% over 210 points on 2026-12-03). One
source takes about 40 s on one core; every source about six minutes.
"""

import argparse
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.calibration import calibrate, crossval, reference
from engine.catalog.entries import load_catalog

BOUND = 0.35
"""The miss counted as 'beyond' (validate's 'what holds the p90' bound)."""


def held_out(only: list[str]) -> pd.DataFrame:
    """One row per held-out MoE point of the sources matching `only` (all where empty)."""
    cat = load_catalog()
    points = [r.point for r in reference.reference_rows(cat) if r.point is not None]
    moe = [m for m in points if calibrate.is_moe(m, cat)]
    sources = sorted({m.source_key for m in moe}, key=str)
    rows = []
    for s in (s for s in sources if not only or any(o in str(s) for o in only)):
        kept = [m for m in points if m.source_key != s]
        fits = calibrate.reference_fits(kept, cat)
        experts = crossval.fit_experts(kept, cat, fits)
        first = crossval.fit_first_token(kept, cat, fits, experts)
        held = [m for m in moe if m.source_key == s]
        for p in crossval._predict(held, fits, cat, experts, first):
            m = p.point
            rows.append(
                {
                    "id": m.id,
                    "source": str(s),
                    "kind": m.kind,
                    "chip": m.hardware,
                    "stack": m.stack,
                    "measured": m.value,
                    "predicted": p.predicted,
                    "ratio": p.predicted / m.value,
                }
            )
        print(f"{s}: {len(held)} points", file=sys.stderr, flush=True)
    df = pd.DataFrame(rows)
    df["abs_error"] = (df["ratio"] - 1.0).abs()
    return df


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "sources", nargs="*", help="substrings of the source keys to leave out (default: every MoE source)"
    )
    ap.add_argument("--csv", help="write the points here")
    args = ap.parse_args()
    df = held_out(args.sources)
    if args.csv:
        df.to_csv(args.csv, index=False)
    e = df["abs_error"]
    print(
        f"MoE held out: median {e.median():.1%}, p90 {e.quantile(0.9):.1%} over {len(df)} points; beyond {BOUND:.0%}: {(e > BOUND).sum()}"
    )
    by = df.groupby(["source", "kind"])
    print(
        pd.DataFrame(
            {
                "n": by.size(),
                "median |error|": by["abs_error"].median().round(3),
                "median ratio": by["ratio"].median().round(3),
                f"beyond {BOUND:.0%}": by["abs_error"].apply(lambda x: int((x > BOUND).sum())),
            }
        ).to_string()
    )


if __name__ == "__main__":
    main()
