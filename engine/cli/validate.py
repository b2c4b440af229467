"""`validate` and `calibrate --reference`: the cost model against every public measurement.

`validate` prints which reference rows are usable, per chip, stack and kind of figure the
median and p90 error of the fit and of each held-out scheme (leave one source, chip or chip
family out), the overall figures against the targets, the MoE rows, the energy check and each
band family's coverage per kind, measured out of sample (`engine.calibration.bands`);
`--markdown` writes the same as docs/validation.md's body, `--json` as data.
`calibrate --reference --write` refits every profile, writes them into the hardware entries in
presets/hardware and the expected errors into presets/calibration.toml.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from engine.calibration import band_lookup, bands, calibrate, crossval, e2e_band, reference, trust, validation
from engine.catalog import parsed
from engine.catalog.entries import load_catalog, presets_dir
from engine.cli import validate_cache
from engine.cli.calibration_toml import band_toml, first_token_toml
from engine.cli.common import emit_json
from engine.cli.validate_cache import simulated
from engine.core import diskcache
from engine.explain import end_to_end

SCHEMES = (
    ("fit", "fit"),
    ("loso", "leave source out"),
    ("loco", "leave chip out"),
    ("lofo", "leave family out"),
)


def _pct(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{float(v):.0%}"


def group_lines(rep: validation.Report) -> list[tuple[str, ...]]:
    """Rows of the per (chip, stack, figure) table: n, then median/p90 per scheme."""
    out = []
    for rec in rep.group_records():
        n = rec.get("n_fit")
        if n is None:
            continue
        cells = [str(rec["chip"]), str(rec["stack"]), str(rec["figure"]), f"{int(n)}"]
        for s, _ in SCHEMES:
            cells.append(f"{_pct(rec.get(f'median_{s}'))} / {_pct(rec.get(f'p90_{s}'))}")
        out.append(tuple(cells))
    return out


def _halves(h: dict[str, float], target: str = "loso") -> str:
    """Which half of a leave-source-out target (`validation.TARGETS`' `target`_median and _p90) a
    headline meets: 'median met, p90 not met'."""
    t = validation.TARGETS
    median = "met" if h["median"] <= t[f"{target}_median"] else "not met"
    return f"median {median}, p90 {'met' if h['p90'] <= t[f'{target}_p90'] else 'not met'}"


def _target(target: str) -> str:
    """'12% / 35%': a target's median and p90 (`validation.TARGETS`)."""
    t = validation.TARGETS
    return f"{t[f'{target}_median']:.0%} / {t[f'{target}_p90']:.0%}"


def _per_stack(ef: Any) -> str:
    """'; per stack where two sources allow: sglang 0.5 / 0.1 / 0.1 ms, ...': the stacks with terms of their
    own (weight streaming / math / fixed cost per MoE layer)."""

    def terms(t: Any) -> str:
        return f"{t.eta_experts:.3g} / {t.eta_experts_compute:.3g} / {t.moe_layer_ms:.3g} ms" + (
            f" / {t.span_step_ms:.3g} ms a step over machines" if t.span_step_ms else ""
        )

    own = [f"{st} {terms(t)}" for st, t in ef.stacks.items()]
    vendors = [f"{st} on {vd} {terms(t)}" for (st, vd), t in ef.vendors.items()]
    across = [f"{vd} {terms(t)}" for vd, t in ef.by_vendor.items()]
    return (
        (f"; per stack where two sources allow: {', '.join(own)}" if own else "")
        + (f"; per stack and chip vendor: {', '.join(vendors)}" if vendors else "")
        + (f"; per chip vendor, for a stack without its own: {', '.join(across)}" if across else "")
    )


def _first_token(ft: Any) -> str:
    """'a first-token latency of 61.3 ms (sglang 71.9 ms) fitted to 12 one-client TTFTs'."""
    own = ", ".join(f"{st} {ms:.3g} ms" for st, ms in ft.stacks.items())
    return (
        f"a first-token latency of {ft.shared_ms:.3g} ms{f' ({own})' if own else ''} fitted to"
        f" {len(ft.ids)} one-client TTFTs"
    )


def headline_lines(rep: validation.Report) -> list[str]:
    """The overall figures, the targets and the energy check, one sentence each."""
    h = rep.headline
    lines = []
    for s, name in SCHEMES:
        if s in h:
            lines.append(
                f"{name:17}: median |error| {h[s]['median']:.1%}, p90 {h[s]['p90']:.1%} over {int(h[s]['n'])} points"
            )
    if "moe" in h:
        ef = rep.experts
        how = (
            f" (experts streaming their weights at {ef.eta_experts:.3g} and computing at"
            f" {ef.eta_experts_compute:.3g} of the dense layers' rates, {ef.moe_layer_ms:.3g} ms per MoE"
            f" layer, {ef.span_step_ms:.3g} ms a step for a TP group over machines, fitted to {len(ef.ids)}"
            f" throughput and TPOT points{_per_stack(ef)}; TTFT with"
            f" {_first_token(rep.first_token)})"
            if ef is not None
            else ""
        )
        lines.append(
            f"{'MoE, fit':17}: median |error| {h['moe']['median']:.1%}, p90 {h['moe']['p90']:.1%} over "
            f"{int(h['moe']['n'])} points{how}"
        )
    if "moe_loso" in h:
        lines.append(
            f"{'MoE, source out':17}: median |error| {h['moe_loso']['median']:.1%}, p90 "
            f"{h['moe_loso']['p90']:.1%} over {int(h['moe_loso']['n'])} points (dense profiles and the MoE "
            f"terms refitted without the point's source; against the target of {_target('moe')}: "
            f"{_halves(h['moe_loso'], 'moe')})"
        )
    e = rep.energy_headline()
    if e:
        lines.append(
            f"{'energy per token':17}: median |error| {e['energy_median']:.1%}, p90 {e['energy_p90']:.1%} over "
            f"{int(e['energy_n'])} rows; power median {e['power_median']:.1%}"
        )
    t = validation.TARGETS
    loso = h.get("loso", {})
    if loso:
        both = loso["median"] <= t["loso_median"] and loso["p90"] <= t["loso_p90"]
        lines.append(
            f"target (leave source out median <= {t['loso_median']:.0%}, p90 <= {t['loso_p90']:.0%}, dense points): "
            + ("met" if both else f"NOT met ({_halves(loso)})")
        )
    serving = rep.serving_headline.get("loso")
    if serving:
        lines.append(
            f"{'serving stacks':17}: leave source out median {serving['median']:.1%}, p90 {serving['p90']:.1%} "
            f"over {int(serving['n'])} points (Splitwise's research harness aside)"
        )
    every = rep.all_usable_headline
    if every:
        lines.append(
            f"{'every usable row':17}: leave source out median {every['median']:.1%}, p90 {every['p90']:.1%} "
            f"over {int(every['n'])} points (the MoE rows included, Splitwise's research harness aside; "
            f"against the target of {_target('all')}: {_halves(every, 'all')})"
        )
        held = rep.beyond_p90_target()
        n, over, allowed = held["points"], held["beyond"], held["allowed"]
        counts = held["by_source"]
        if over > allowed:
            lines.append(
                f"{'what holds the p90':17}: {over} of {n} points miss by more than {t['loso_p90']:.0%} held out, "
                f"where a p90 within it allows {allowed}: "
                + ", ".join(f"{src} {k}" for src, k in counts.items())
            )
    if e:
        lines.append(
            f"target (energy per token median <= {t['energy_median']:.0%}): "
            f"{'met' if e['energy_median'] <= t['energy_median'] else 'NOT met'}"
        )
    return lines


FAMILY_TEXT = {
    "source_out": "rows with data",
    "chip_out": "chips without data",
}
"""How `band_lines` names each family of held-out points (`validation.BAND_SCHEMES`)."""


def _coverage_cell(figure: str, c: dict[str, float], family: str = "") -> str:
    """'throughput 60.0% of 55 points (target met)' and the like, for one kind."""
    name = trust.FIGURE_NAMES.get(figure, figure)
    text = f"{name} {c['coverage']:.1%} of {int(c['points'])} points"
    if c["points"] < band_lookup.MIN_KIND_POINTS:
        if family == "chip_out" and figure == "ttft":  # `band_lookup.bands_for`: a MoE model's is composed
            return (
                f"{text} (under {band_lookup.MIN_KIND_POINTS} points: its own band not shown; a MoE model takes "
                "the MoE rows' TTFT band widened by its chip's throughput band turned round)"
            )
        return f"{text} (under {band_lookup.MIN_KIND_POINTS} points: band not shown)"
    lo, hi = bands.COVERAGE_RANGE
    if bands.within_target(c):
        return f"{text} ({lo:.0%}-{hi:.0%}: met)"
    side = "too wide: it holds more than it says" if c["coverage"] > hi else "too narrow: it holds fewer"
    return f"{text} ({lo:.0%}-{hi:.0%}: NOT met, {side})"


def band_lines(rep: validation.Report) -> list[str]:
    """Each band family's out-of-sample coverage per kind, and the MoE rows' apart."""
    lo, hi = bands.QUANTILES
    lines = [
        f"bands: the {lo:.0%}-{hi:.0%} percentile of held-out predicted / measured, widened so two in three of a "
        "new source's points land inside; coverage out of sample (each source left out, every band refitted)"
    ]
    by_model = rep.band_coverage(("model", "figure"))
    e2e = rep.e2e_coverage()
    for fam, cov in rep.band_coverage().items():
        cells = [_coverage_cell(f, cov[f], fam) for f in band_lookup.KINDS if f in cov]
        lines.append(f"{'band coverage, ' + FAMILY_TEXT.get(fam, fam):17}: " + "; ".join(cells))
        moe = {k.split(":", 1)[1]: v for k, v in by_model.get(fam, {}).items() if k.startswith("moe:")}
        if moe:
            lines.append(
                f"{'  of which MoE':17}: "
                + "; ".join(
                    f"{trust.FIGURE_NAMES[f]} {moe[f]['coverage']:.1%} of {int(moe[f]['points'])}"
                    for f in band_lookup.KINDS
                    if f in moe
                )
            )
        if fam in e2e:
            lines.append(f"{'  E2E':17}: " + e2e_band.line(rep.e2e_checks[fam]))
    return lines


def dense_reruns(reruns: Any) -> Any:
    """The dense points' reruns (the fitted ones) of `simulated`'s frame."""
    return reruns[~reruns["moe"]] if "moe" in reruns else reruns


def moe_reruns(reruns: Any) -> Any:
    """The MoE points' reruns of `simulated`'s frame (empty without them)."""
    return reruns[reruns["moe"]] if "moe" in reruns else reruns.iloc[0:0]


def rerun_lines(reruns: Any) -> list[str]:
    """The section of docs/validation.md on the simulator against the fitted points."""
    if reruns is None or reruns.empty:
        return []
    moe = moe_reruns(reruns)
    reruns = dense_reruns(reruns)
    h = end_to_end.rerun_headline(reruns)
    hm = end_to_end.rerun_headline(moe)
    ttft = moe[moe["kind"] == "ttft"] if not moe.empty else moe
    misses = pd.concat([ttft["simulated_error"], ttft["predicted_error"]]).abs() if not ttft.empty else None
    lo, hi = (float(misses.min()), float(misses.max())) if misses is not None else (0.0, 0.0)
    moe_text = (
        f" The {int(hm['n'])} tensor-parallel MoE points of those kinds, rerun the same way with the experts' "
        f"factor, miss by a median {hm['simulated_median']:.0%} (p90 {hm['simulated_p90']:.0%}) against the "
        f"predictor's {hm['predicted_median']:.0%} (p90 {hm['predicted_p90']:.0%}): what the app's MoE figures "
        "score. Their concurrencies send identical requests from clients started together, so the "
        "clients stay in step and each round's prompts queue behind each other; the rerun and the "
        "predictor both run them so (`lockstep`)."
        + (f" Their TTFT rows are off by {lo:.0%}-{hi:.0%} in both." if not ttft.empty else "")
        if hm
        else ""
    )
    return _section(
        "The simulator on the fitted points",
        f"The app's figures come from the simulator, the fit's from the cost model's steady-state "
        f"predictor. The {int(h['n'])} dense points of a kind a run reproduces (static batches and "
        "offline throughputs sent at once, concurrencies as that many closed-loop clients) are "
        "rerun by the simulator with the shipped profiles (engine/explain/end_to_end.py): median "
        f"|error| {h['simulated_median']:.0%} (p90 {h['simulated_p90']:.0%}) against the "
        f"predictor's {h['predicted_median']:.0%} (p90 {h['predicted_p90']:.0%}); the two differ by a "
        f"median {h['agreement_median']:.0%} (p90 {h['agreement_p90']:.0%}).{moe_text}",
        "| chip | stack | kind | n | predictor | simulator | simulator vs predictor |",
        "|---|---|---|---:|---:|---:|---:|",
        (
            f"| {r.chip} | {r.stack}{' (MoE)' if moe_part else ''} | {r.kind} | {r.n} | {r.predicted:.0%} | "
            f"{r.simulated:.0%} | {r.agreement:.0%} |"
            for moe_part, part in ((False, reruns), (True, moe))
            if not part.empty
            for r in end_to_end.rerun_summary(part).itertuples()
        ),
    )


def end_to_end_lines(e2e: Any) -> list[str]:
    """The end-to-end section of docs/validation.md: one line per rerun row, and the medians."""
    if e2e is None or e2e.empty:
        return []
    h = end_to_end.headline(e2e)
    return _section(
        "Open-loop rows rerun by the simulator (never fitted)",
        f"{int(h['n'])} rows measured under Poisson arrivals at a rate are rerun end to end "
        "(engine/explain/end_to_end.py): the stated chip, batch limits, chunked prefill, rate and "
        "prompt count, every request at the stated mean lengths. *fit*: the shipped profiles; "
        "*left out*: the profiles refitted without the row's source, by the rules of docs/calibration.md. "
        f"Median |error| {h['fit_median']:.0%} (p90 {h['fit_p90']:.0%}) with the shipped profiles, "
        f"{h['held_out_median']:.0%} (p90 {h['held_out_p90']:.0%}) left out.",
        "| id | setup | load | figure | measured | fit | error | left out | error | basis |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---|",
        (
            f"| {r.id} | {r.model} {r.tp}x{r.chip} ({r.stack}) | "
            f"{'all at once' if r.rate_rps >= 1000 else f'{r.rate_rps:g} req/s'} | {r.figure} | "
            f"{r.measured:,.1f} {r.unit} | {r.fit:,.1f} | {r.fit_error:+.0%} | {r.held_out:,.1f} | "
            f"{r.held_out_error:+.0%} | {r.basis} |"
            for r in e2e.itertuples()
        ),
    )


def _source_section(title: str, text: str, table: Any) -> list[str]:
    """A section of `crossval.by_source`'s table: per source and rule, n, median, p90, signed median."""
    return _section(
        title,
        text,
        "| source | rule | n | median | p90 | signed median |",
        "|---|---|---:|---:|---:|---:|",
        (
            f"| {r.source} | {r.basis} | {r.n} | {_pct(r.median)} | {_pct(r.p90)} | {_signed(r.signed)} |"
            for r in table.itertuples()
        ),
    )


def _section(title: str, text: str, columns: str, align: str, rows: Iterable[str]) -> list[str]:
    """One section of docs/validation.md: its heading, a paragraph (none if empty) and a table."""
    return [f"## {title}", "", *([text, ""] if text else []), columns, align, *rows]


def markdown(rep: validation.Report, e2e: Any = None, reruns: Any = None) -> str:
    """The report as markdown (the body of docs/validation.md), with the end-to-end reruns if given."""
    out = [
        f"{rep.usable} of {len(rep.rows)} reference rows are usable points; the others are set aside:",
        "",
        "| rows | reason |",
        "|---:|---|",
    ]
    out += [f"| {n} | {reason} |" for reason, n in rep.set_aside().items()]
    out += ["", "## Overall", "", "```", *headline_lines(rep), *band_lines(rep), "```", ""]
    out += _section(
        "Per chip, stack and figure",
        "Median / p90 of |predicted / measured - 1|. *fit*: the shipped profiles; the others refit "
        "without the held-out rows and predict them by the rules of docs/calibration.md.",
        "| chip | stack | figure | n | " + " | ".join(n for _, n in SCHEMES) + " |",
        "|---|---|---|---:|" + "---:|" * len(SCHEMES),
        ("| " + " | ".join(r) + " |" for r in group_lines(rep)),
    )
    out += ["", *_source_section(
        "Which sources carry the held-out miss",
        "Each source left out in turn, its points predicted by the rule that then applies (*fitted*: its "
        "chip and stack keep another source; *other_stack*, *transfer*: they do not). Signed: + when the "
        "model over-predicts the figure.",
        crossval.by_source(rep.predictions),
    )]  # fmt: skip
    moe_sources = crossval.by_source(rep.predictions, "moe_loso")
    if not moe_sources.empty:
        out += ["", *_source_section(
            "The MoE rows, each source left out",
            "The same for the MoE points: the dense profiles they borrow and the MoE terms refitted "
            "without the source (a stack left with one source takes the terms every stack's rows give).",
            moe_sources,
        )]  # fmt: skip
    out += ["", *_section(
        "Expected error shown in the app (median, by the rule behind a chip's profile)",
        "",
        "| basis | throughput | TTFT | TPOT | energy |",
        "|---|---:|---:|---:|---:|",
        (
            f"| {basis} | {_pct(row.get('throughput'))} | {_pct(row.get('ttft'))} | {_pct(row.get('tpot'))} | "
            f"{_pct(row.get('energy'))} |"
            for basis, row in rep.expected_error.items()
        ),
    )]  # fmt: skip
    out += ["", *_section(
        "Every point",
        "",
        "| id | setup | point | stack | measured | predicted | error | left out |",
        "|---|---|---|---|---:|---:|---:|---:|",
        (
            f"| {r.id} | {r.setup}{' (MoE)' if r.moe else ''} | {r.point} | {r.stack} | {r.measured:,.1f} {r.unit} | "
            f"{r.predicted:,.1f} | {r.error:+.1%} | {_signed(r.loso_error)} |"
            for r in rep.points.itertuples()
        ),
    )]  # fmt: skip
    for section in (rerun_lines(reruns), end_to_end_lines(e2e)):
        if section:
            out += ["", *section]
    if rep.energy is not None and not rep.energy.empty:
        out += ["", *_section(
            "Power and energy (ML.ENERGY rows)",
            "",
            "| id | setup | kind | measured | predicted | error |",
            "|---|---|---|---:|---:|---:|",
            (
                f"| {r.id} | {r.setup} | {r.kind} | {r.measured:,.3g} | {r.predicted:,.3g} | {r.error:+.1%} |"
                for r in rep.energy.itertuples()
            ),
        )]  # fmt: skip
    return "\n".join(out)


def _signed(v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{float(v):+.0%}"


def cmd_validate(args: argparse.Namespace) -> int:
    """`python -m engine validate [--json | --markdown]`."""
    print(  # on stderr, so --json and --markdown stay clean: the work below takes minutes
        "validate: reading every reference row, fitting the profiles, refitting them without each source, chip "
        "and family, fitting the bands, then rerunning the simulator on the fitted points (minutes), unless "
        f"nothing they depend on changed since they were kept in {diskcache.folder()} (--no-cache: computed "
        "again)...",
        file=sys.stderr,
        flush=True,
    )
    digest = validate_cache.key()  # the report's and the reruns' (hashing every input takes a while)
    rep = validate_cache.report(fresh=args.no_cache, digest=digest)
    print("validate: simulator reruns...", file=sys.stderr, flush=True)
    e2e, reruns = validate_cache.reruns(rep, fresh=args.no_cache, digest=digest)
    if args.json:
        doc = rep.as_dict()
        doc["end_to_end"] = {"headline": end_to_end.headline(e2e), "rows": e2e.to_dict(orient="records")}
        doc["simulator"] = {
            "headline": end_to_end.rerun_headline(dense_reruns(reruns)),
            "moe_headline": end_to_end.rerun_headline(moe_reruns(reruns)),
            "rows": reruns.to_dict(orient="records"),
        }
        emit_json(doc)
        return 0
    if args.markdown:
        print(markdown(rep, e2e, reruns))
        return 0
    print(f"{rep.usable} of {len(rep.rows)} reference rows usable; set aside:")
    for reason, n in rep.set_aside().items():
        print(f"  {n:4d}  {reason}")
    print()
    print(f"{'chip':11} {'stack':11} {'figure':10} {'n':>3}  " + "  ".join(f"{n:>17}" for _, n in SCHEMES))
    for r in group_lines(rep):
        print(f"{r[0]:11} {r[1]:11} {r[2]:10} {r[3]:>3}  " + "  ".join(f"{c:>17}" for c in r[4:]))
    print("(median / p90 of |predicted / measured - 1|)")
    print()
    for line in [*headline_lines(rep), *band_lines(rep)]:
        print(line)
    sim = end_to_end.rerun_headline(dense_reruns(reruns))
    if sim:
        print(
            f"{'simulator reruns':17}: median |error| {sim['simulated_median']:.1%}, p90 {sim['simulated_p90']:.1%} "
            f"over {int(sim['n'])} fitted points (the predictor: {sim['predicted_median']:.1%}, p90 "
            f"{sim['predicted_p90']:.1%})"
        )
    sim = end_to_end.rerun_headline(moe_reruns(reruns))
    if sim:
        print(
            f"{'MoE reruns':17}: median |error| {sim['simulated_median']:.1%}, p90 {sim['simulated_p90']:.1%} "
            f"over {int(sim['n'])} tensor-parallel MoE points (the predictor: {sim['predicted_median']:.1%}, p90 "
            f"{sim['predicted_p90']:.1%})"
        )
    h = end_to_end.headline(e2e)
    if h:
        print(
            f"{'open-loop reruns':17}: median |error| {h['fit_median']:.1%} fitted, {h['held_out_median']:.1%} "
            f"with the source left out, over {int(h['n'])} rows (simulated end to end, never fitted)"
        )
    return 0


def expected_error_toml(rep: validation.Report, e2e: Any = None) -> str:
    """presets/calibration.toml: expected errors per basis and figure, and where they come from;
    with `e2e`, also the open-loop reruns' error per (chip, stack) whose profile they ran with."""
    lines = [
        "# Expected relative error of the cost model's figures, by the rule behind a chip's profile, and",
        "# the MoE experts' factor. Generated by `python -m engine calibrate --reference --write` from the",
        "# cross-validation of data/reference (docs/validation.md); a test keeps it equal to a fresh run.",
        "# Energy per token combines the power model's median error with the throughput error of the",
        "# same basis.",
        "",
    ]
    if rep.experts is not None:
        src = rep.experts.source.replace("\\", "\\\\").replace('"', '\\"')
        lines += [
            "# MoE models: the rates their routed experts' kernels reach against the dense layers', in",
            "# streaming weights (CalibrationProfile.eta_experts) and in their math (eta_experts_compute),",
            "# and a fixed cost per MoE layer and iteration (moe_layer_ms); per stack where its MoE rows",
            "# come from two sources (per chip vendor where they span vendors), else per chip vendor over",
            "# every stack ([experts.vendor.<vendor>]), else shared. span_step_ms: a fixed cost per",
            "# iteration of a TP group over machines, fitted where such rows are (else the shared one).",
            "[experts]",
            *(f"{k} = {v}" for k, v in rep.experts.shared().items()),
            f'source = "{src}"',
            "",
        ]

        def table(name: str, t: Any, whose: str, on: str = "") -> list[str]:
            what = f"{len(t.ids)} {whose}MoE throughput and TPOT measurements{on}"
            rows = [f"{k} = {v}" for k, v in t.update().items()]
            return [f"[experts.{name}]", *rows, f'source = "fitted to {what} from {t.sources} sources"', ""]

        for st, t in rep.experts.stacks.items():
            lines += table(st, t, f"{st} ")
            for (s, vd), tv in rep.experts.vendors.items():
                if s == st:  # the stack's terms on one chip vendor's chips (moe_fit.vendor_of)
                    lines += table(f"{st}.{vd}", tv, f"{st} ", f" on {vd} chips")
        for vd, tv in rep.experts.by_vendor.items():  # a stack without terms of its own, on vd's chips
            lines += table(f"vendor.{vd}", tv, "", f" of every stack on {vd} chips")
    lines += first_token_toml(rep)
    for basis, row in rep.expected_error.items():
        lines.append(f"[expected_error.{basis}]")
        for figure in ("throughput", "ttft", "tpot", "energy"):
            if figure in row:
                lines.append(f"{figure} = {row[figure]}")
        lines.append("")
    lines += band_toml(rep)
    online = end_to_end.online_errors(e2e) if e2e is not None else {}
    if online:
        lines += [
            "# Open-loop serving rerun end to end with the shipped profiles (docs/validation.md): the",
            "# median |error| per figure, by the chip and stack whose profile ran. A pool running with",
            "# that profile shows the larger of this and its basis' error.",
            "",
        ]
    energy = rep.energy_headline()
    for key, row in online.items():
        if energy and "throughput" in row:  # as for the bases: the power model's and the throughput's
            row["energy"] = validation.energy_error(energy["energy_median"], row["throughput"])
        lines.append(f'[online_error."{key}"]')
        lines += [f"{figure} = {int(v) if figure == 'reruns' else v}" for figure, v in row.items()]
        lines.append("")
    return "\n".join(lines)


def write_reference(
    fits: dict[tuple[str, str], calibrate.Fit], rep: validation.Report, e2e: Any = None
) -> list[Path]:
    """Write every fitted profile into its chip's entry, the expected errors and the parsed table
    (`engine.catalog.parsed`); the files written."""
    written = []
    hw_dir = presets_dir() / "hardware"
    by_chip: dict[str, list[tuple[str, calibrate.Fit]]] = {}
    for (chip, stack), f in sorted(fits.items()):
        by_chip.setdefault(chip, []).append((stack, f))
    for chip, entries in by_chip.items():
        path = hw_dir / f"{chip}.toml"
        text = path.read_text(encoding="utf-8")
        for stack, f in entries:
            text = calibrate.with_profile(text, stack, f.profile, make_default=False)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    out = presets_dir() / "calibration.toml"
    out.write_text(expected_error_toml(rep, e2e), encoding="utf-8")
    written.append(out)
    written.append(parsed.write_table(presets_dir()))  # the files just written, parsed ahead again
    return written


def cmd_calibrate_reference(args: argparse.Namespace) -> int:
    """`fengong calibrate --reference [--write]`."""
    cat = load_catalog()
    if getattr(args, "write", False):
        rep = validation.report(cat)
        for path in write_reference(rep.fits, rep, simulated(rep, cat)[0]):
            print(f"wrote {path}")
        return 0
    fits = calibrate.reference_fits(reference.usable_points(cat), cat)
    for (chip_id, stack), f in sorted(fits.items()):
        print(f"# {chip_id}: median |error| {f.median_abs_error:.1%}, worst {f.worst_abs_error:.1%}")
        print(calibrate.profile_toml(stack, f.profile))
    return 0
