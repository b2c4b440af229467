"""The ``lifetime`` command: a lifetime preset or file, each portfolio's bill per period and in total.

Text: one table per portfolio (period, model, pools, the dedicated fleet's state, $ and $ per
million output tokens), the totals (with the book value left at the end, not billed), and one
sentence; ``--json``: one document
(`engine.planning.lifetime.LifetimeResult.to_json`).
"""

from __future__ import annotations

import argparse

from engine.cli.common import emit_json
from engine.planning.lifetime import (
    SIZING_NOTE,
    LifetimeResult,
    assumed_price_notes,
    precision_notes,
    run_lifetime,
    summary_line,
)
from engine.planning.lifetime_spec import load_lifetime


def cmd_lifetime(args: argparse.Namespace) -> int:
    """Run a lifetime and print its bill per period and in total (or one JSON document)."""
    lt = load_lifetime(args.lifetime)
    if args.stranded is not None:
        lt = lt.model_copy(update={"stranded": args.stranded})
    res = run_lifetime(lt)
    if args.json:
        emit_json(res.to_json())
        return 0
    print_text(res)
    return 0


def print_text(res: LifetimeResult) -> None:
    """The lifetime as tables: per portfolio, its periods; then the totals."""
    lt = res.lifetime
    print(
        f"{lt.name}\n{lt.months:g} months from preset {lt.base}; cost: {lt.cost.label()}; stranded: {lt.stranded}"
    )
    for name, rows in res.periods.groupby("portfolio", sort=False):
        print(f"\n{name}")
        print(
            f"{'period':30} {'model':16} {'prefill':20} {'decode':26} {'dedicated':52} {'$':>12} {'$/M tok':>8}"
        )
        for _, r in rows.iterrows():
            ded = (r["dedicated"] or "-")[:52]  # 'written off: designed for bf16, fp8 weights, not fp4' whole
            print(
                f"{r['period'][:30]:30} {r['model'][:16]:16} {r['prefill_label']:20} {r['decode_label']:26} "
                f"{ded:52} {r['total_usd']:12,.0f} {r['usd_per_million_tokens']:8.3f}"
            )
    # book value left: depreciation the life did not charge (docs/lifetime.md), shown, not in the total
    print(f"\n{'portfolio':12} {'total $':>14} {'written off $':>14} {'book value $':>14} {'$/M tok':>8}")
    # '-' where no chip is bought up front: a flexible fleet is billed by the hour, and its "0" read as the
    # value of 56 H100s lost (a capacity planner's review)
    bought = {pf.name: pf.dedicated for pf in lt.portfolios}
    for _, t in res.totals.iterrows():
        book = f"{t['book_value_end_usd']:14,.0f}" if bought.get(t["portfolio"], True) else f"{'-':>14}"
        print(
            f"{t['portfolio'][:12]:12} {t['total_usd']:14,.0f} {t['written_off_usd']:14,.0f} "
            f"{book} {t['usd_per_million_tokens']:8.3f}"
        )
    print("\n" + summary_line(res))
    for note in precision_notes(res) + assumed_price_notes(res):
        print(f"note: {note}")
    print(SIZING_NOTE)
