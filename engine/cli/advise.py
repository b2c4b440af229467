"""The ``advise`` command: where each phase sits on each chip's roofline, the findings from a run (each
class's pass checked with every chip at its band's pessimistic edge, as Results' advisor says it), and
the specialisation test. Split from `engine.cli.plan` (600 lines) when the edge check came in."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from engine.cli.catalog import chip_marks
from engine.cli.common import emit_json, load_scenario
from engine.core.errors import ScenarioError
from engine.scenario.model import Scenario

if TYPE_CHECKING:
    from engine.explain.advisor import Advice


def _layout(tp: int, pp: int) -> str:
    """'tp4', or with pipeline stages 'tp4 pp3'."""
    return f"tp{tp}" + (f" pp{pp}" if pp > 1 else "")


def _advice(args: argparse.Namespace, scen: Scenario) -> Advice:
    """The run's advice; unless --no-margin, each class's pass checked with every chip at its band's
    pessimistic edge, as Results' advisor says it once its spread is known (a review: the CLI never did)."""
    from engine.explain.advisor import Advice, advise
    from engine.serving.run import simulate

    res = simulate(scen, check_work=not args.no_work_limit)
    if not res.summary["requests"]["total"]:  # its roofline said no chip holds the weights (a review)
        raise ScenarioError(
            f"advise: no request arrived in the {scen.duration_s - scen.warmup_s:,g} s window, so there is no "
            "work to advise on; "
            + (
                "move or lengthen the window (warmup_s, duration_s) to where the trace has requests"
                if scen.workload.trace is not None  # (its rate is refused on a trace: a review)
                else "raise workload.arrival.rate_rps or lengthen duration_s"
            )
        )
    adv = advise(res, args.model_change_months)
    if args.no_margin:
        return adv
    from engine.explain.edge_findings import at_the_edge
    from engine.explain.margin import run_margin

    edge = run_margin(scen, res.summary, check_work=not args.no_work_limit)
    if not edge.slowdown:  # no chip has a band
        return adv
    from engine.explain.edge_findings import latency_tops

    found = at_the_edge(
        adv.findings, edge.slowed, "`fengong run --margin` reruns it", latency_tops(scen, res.summary)
    )
    return Advice(adv.roofline, tuple(found), adv.specialisation)


def cmd_advise(args: argparse.Namespace) -> int:
    """Roofline positions, findings from a run, and the specialisation test."""
    from engine.catalog.entries import load_catalog, unknown_text
    from engine.explain.advisor import Advice
    from engine.serving.run import ENGINE_VERSION

    scen = load_scenario(args.scenario, args.set)
    keep = [h.strip() for h in (args.hardware or "").split(",") if h.strip()]
    if unknown := [
        h for h in keep if h not in (known := load_catalog().hardware)
    ]:  # before the run (a review)
        raise ScenarioError(f"--hardware: {unknown_text('hardware', unknown[0], known)}")
    adv = _advice(args, scen)
    if keep:
        adv = Advice(adv.roofline[adv.roofline["hardware"].isin(keep)], adv.findings, adv.specialisation)
    marks = chip_marks(scen)
    if args.json:
        doc = adv.to_json()
        for row in doc["roofline"]:
            row["calibration"] = marks.get(row["hardware"], "")
        emit_json(
            {
                **doc,
                "engine_version": ENGINE_VERSION,
                "scenario": {"name": scen.name, "seed": scen.seed},
            }
        )
        return 0
    print(
        f"{scen.name} (seed {scen.seed}): {scen.model.id}, {scen.model.weights} weights, {scen.kv_precision()} KV"
    )
    print(
        "\nwhere each phase sits on each chip's roofline (each at the tp, of 1, 2, 4, 8 that hold the weights, "
        "that serves it cheapest without missing its SLO unloaded; where none holds them, the fewest chips "
        "with pipeline stages). batch: the largest decode batch within the TPOT target, a bound, not the "
        "batch the run ran (the specialisation test below reads the run); FLOP/B: the phase's arithmetic "
        "intensity; ridge: the chip's FLOP/s over its main memory's bytes/s as the run gives them (its calibration's "
        "fractions of the peaks, at the weights' precision), in FLOP/B; binds: the longest "
        "of the step's parts: the longer of its compute and memory times (which a chip's SRAM or DDR tier, "
        "attention at BF16 or a MoE's experts can set against the ridge's reading: a decode under the ridge "
        "binds compute where its weights stream from SRAM), its chips' communication (link; a prompt's KV "
        "over the scale-out links outlasting its prefill too), its fixed cost or its pipeline stages; "
        "kv_capacity where KV memory caps a bandwidth-bound decode batch; tok/s/chip: the phase's tokens a "
        "second a chip at that batch (prefill: prompt tokens of one prompt at a time; decode: output tokens), "
        "and $/M tok the chip's price over them: a bound with every step full, not a deployment's cost, whose "
        "bill also pays idle and queued time and the other phase (run and plan give that); calibration: the "
        "chip's mark and its throughput band"
    )
    print(
        f"{'chip':22} {'layout':9} {'phase':8} {'batch':>5} {'FLOP/B':>7} {'ridge':>6} {'TFLOP/s/chip':>12} "
        f"{'tok/s/chip':>10} {'$/M tok':>8}  {'calibration':32}  binds"
    )
    for r in adv.roofline.to_dict(orient="records"):
        note = f" ({r['note']})" if r["note"] else ""
        print(
            f"{r['hardware']:22} {_layout(r['tp'], r['pp']):9} {r['phase']:8} {r['batch']:5d} "
            f"{r['intensity_flops_per_byte']:7.0f} "
            f"{r['ridge_flops_per_byte']:6.0f} {r['achieved_tflops_per_chip']:12.0f} "
            f"{r['tokens_per_s_per_chip']:10.0f} {r['usd_per_million_tokens']:8.3f}  "
            f"{marks.get(r['hardware'], ''):32}  {r['binds']}{note}"
        )
    print("\nfindings from the run")
    for f in adv.findings:
        print(f"  [{f.severity}] {f.text}")
    print(f"\nshould a phase get its own chip? (a model change every {args.model_change_months:g} months)")
    for text in adv.specialisation["text"]:
        print(f"  {text}")
    return 0
