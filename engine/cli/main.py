"""The command line: ``python -m engine <command>``.

Commands: ``catalog`` (list hardware and models), ``roofline`` (prefill and decode on one
instance), ``scenario`` (validate a scenario file, print it resolved), ``import-model``
(a Hugging Face config.json to a catalog entry), ``drill`` (a scenario's faults under each
fallback policy). With ``--json`` stdout holds exactly one JSON document; messages go to stderr.
Bad input exits with status 2 and a message naming the field.

What uses pandas (the roofline report, calibration, CSV output) is imported when its command
runs, so that ``run --json`` and ``scenario`` start without it (a whole ``run`` process is timed
by make bench).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.catalog.entries import entry_to_toml, load_catalog, model_from_hf_config
from engine.catalog.specs import HardwareSpec
from engine.cli import catalog as cli_catalog
from engine.cli import observe as cli_observe
from engine.cli import plan_flags
from engine.cli.common import (
    add_work_limit_flag,
    check_range,
    check_writable_folder,
    emit_json,
    load_scenario,
)
from engine.cli.outputs import write_outputs, write_replications
from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.costmodel.perf import Instance
from engine.costmodel.stacks import SERVING_STACKS
from engine.explain import confidence, sustain
from engine.scenario import codec as scenario_io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.run import ENGINE_VERSION, replicate, simulate
from engine.serving.summary import shortfall_rps
from engine.serving.work_bound import WorkBoundError, estimate, sci

if TYPE_CHECKING:
    from engine.explain.margin import RunMargin, RunSpread
    from engine.serving.summary import Summary

MEASUREMENT_COLUMNS = (
    "id", "model", "hardware", "tp", "weights", "kv", "kind", "prompt_tokens", "output_tokens",
    "batch", "context_tokens", "value", "unit", "source",
)  # fmt: skip
"""`engine.calibration.measurements.MEASUREMENT_COLUMNS`, repeated for --help (a test keeps them equal)."""


def cmd_roofline(args: argparse.Namespace) -> int:
    from engine.calibration import trust
    from engine.costmodel import stacks
    from engine.costmodel.roofline import report

    cat = load_catalog()
    model = cat.model(args.model)
    # the profile (given or the stack's by rule), with a MoE model's experts' factor, as a run uses it
    chip, name, _ = trust.effective_chip(
        cat.chip(args.hardware), args.stack, cat, args.profile, moe=model.moe is not None
    )
    budget = stacks.defaults(args.stack, chip).token_budget  # the stack's, as a scenario's run keeps room for
    inst = Instance(
        model=model,
        hardware=chip,
        tp=args.tp,
        pp=args.pp,
        weights=args.weights,
        kv=args.kv,
        profile_name=name,
        activation_tokens=stacks.activation_tokens(args.stack, budget),
    )
    rep = report(inst)
    if args.json:
        emit_json(rep)
        return 0
    print(
        f"{inst.model.name} on {args.tp} x {inst.hardware.name} ({args.weights} weights, {args.kv} KV, "
        f"profile {name})"
    )
    print(
        f"weights {rep['weight_bytes'] / 1e9:.1f} GB; KV {rep['kv_bytes_per_token']:,.0f} B/token; "
        f"KV capacity {rep['kv_capacity_tokens']:,} tokens; ridge {rep['ridge_flops_per_byte']:.0f} FLOP/B"
    )
    if rep["kv_capacity_tokens"] == 0:
        print("the weights do not fit: raise --tp or lower --weights precision")
    print("\nprefill (one prompt alone)")
    print(f"{'prompt':>8} {'time ms':>9} {'compute':>9} {'memory':>9} {'FLOP/B':>8}  bound")
    for r in rep["prefill"]:
        print(
            f"{r['prompt_tokens']:8d} {r['time_ms']:9.2f} {r['compute_ms']:9.2f} {r['memory_ms']:9.2f} "
            f"{r['intensity_flops_per_byte']:8.0f}  {r['bound']}"
        )
    print("\ndecode (one step)")
    print(f"{'batch':>6} {'context':>8} {'time ms':>9} {'compute':>9} {'memory':>9} {'tok/s':>9}  bound")
    for r in rep["decode"]:
        print(
            f"{r['batch']:6d} {r['context_tokens']:8d} {r['time_ms']:9.2f} {r['compute_ms']:9.2f} "
            f"{r['memory_ms']:9.2f} {r['tokens_per_s']:9.0f}  {r['bound']}"
        )
    return 0


def cmd_scenario(args: argparse.Namespace) -> int:
    scen = load_scenario(args.scenario, args.set)
    res = resolve(scen)
    if args.json:
        emit_json(scenario_io.to_data(scen))
        return 0
    print(scenario_io.dumps_toml(scen))
    for p in res.pools:
        print(
            f"# pool {p.spec.name}: {p.spec.count} x ({p.spec.tp} x {p.hardware.id}), KV capacity "
            f"{p.instance.kv_capacity_tokens:,} tokens per instance, ${p.usd_per_hour:,.2f}/h"
        )
    work = estimate(scen)
    print(
        f"# work estimate: {sci(work.requests)} requests, {sci(work.events)} events, "
        f"{sci(work.router_looks)} router looks, {sci(work.cache_blocks)} cache block visits, "
        f"{work.memory_bytes / 1e6:,.0f} MB (bounds: docs/bounds.md)"
    )
    for problem in work.problems():
        print(f"# over the bound: {problem}")
    return 0


def _fmt(v: Any, unit: str = "", scale: float = 1.0) -> str:
    return "-" if v is None else f"{v * scale:,.2f}{unit}"


def _pm(
    marks: Sequence[confidence.PoolMark], source: confidence.Source, bound: tuple[float, float] | None = None
) -> str:
    """' (−30% to +17%)': a figure's band from its pools' calibration ('' when none is shown), cut
    by the run's `bound` (`confidence.limits`): ' (−36% to +0%)'."""
    r = confidence.figure_range(marks, source)
    return "" if r is None else confidence.band_text("", r, bound)


LATENCY_SOURCES: dict[str, confidence.Source] = {
    "ttft": confidence.HEADLINE_SOURCES["ttft_p99_ms"],
    "tpot": confidence.HEADLINE_SOURCES["tpot_p99_ms"],
    "e2e": confidence.COMPARED_SOURCES["E2E p99"],
}


def print_summary(doc: dict[str, Any], scenario: Scenario | None = None) -> None:
    """A human summary of one run; with its scenario, each pool's calibration and each figure's error."""
    marks = confidence.pool_marks(scenario, doc) if scenario is not None else ()
    bounds = confidence.limits(doc, scenario) if scenario is not None else {}

    def thr(key: str) -> str:
        r = confidence.headline_range(marks, key)  # a cost's band is its throughput's turned round
        return "" if r is None else confidence.band_text("", r, bounds.get(key))

    r = doc["requests"]
    print(
        f"requests: {r['total']:,} in the window; {r['completed']:,} completed, {r['rejected']:,} rejected, "
        f"{r['failed']:,} failed"
    )
    short = shortfall_rps(doc)
    if (said := sustain.line(doc)) is not None:
        print(said)  # before the figures it qualifies
    for name, lat in doc["latency_ms"].items():
        err = _pm(marks, LATENCY_SOURCES.get(name, ()))
        figures = f"p50 {_fmt(lat['p50'])}  p90 {_fmt(lat['p90'])}  p99 {_fmt(lat['p99'])}"
        print(f"  {name:5} ms  {sustain.latency(figures + err, short)}")
    print(
        f"SLO attainment {doc['slo_attainment']:.1%}; goodput {doc['goodput_rps']:.2f} req/s{thr('goodput_rps')}"
    )
    for cls, c in doc["classes"].items():
        verdict = "passes" if c["passes"] else "FAILS"
        print(
            f"  class {cls}: p{c['percentile']:g} "
            + sustain.latency(
                f"TTFT {_fmt(c['ttft_ms_at_percentile'])} ms, TPOT {_fmt(c['tpot_ms_at_percentile'])} ms",
                short,
            )
            + f", attainment {c['slo_attainment']:.1%}: {verdict}"
        )
    t = doc["throughput_tokens_per_s"]
    print(
        f"throughput: {t['input']:,.0f} input and {t['output']:,.0f} output tokens/s{thr('throughput_rps')}"
    )
    c = doc["cost"]
    print(
        f"cost: ${c['usd_per_hour']:,.2f}/h; ${_fmt(c['usd_per_request'], scale=1000)} per 1k requests{thr('usd_per_request')}; "
        f"${_fmt(c['usd_per_million_output_tokens'])} per million output tokens{thr('usd_per_million_output_tokens')}"
    )
    parts = ", ".join(f"{k} {_fmt(v, scale=1000)}" for k, v in c["usd_per_request_by_part"].items())
    print(f"  per 1k requests by part ($): {parts}")
    if c.get("usd_by_kind"):  # an owned deployment: its basis and the bill by kind
        kinds = ", ".join(f"{k} {_fmt(v, scale=1000)}" for k, v in c["usd_per_request_by_kind"].items())
        print(f"  {c['basis']}; per 1k requests by kind ($): {kinds}")
    bills = c.get("usd_by_pool", {})
    for pool, u in doc["utilization"].items():
        share = (
            f", {bills[pool] / c['usd_total']:.1%} of the bill"
            if pool in bills and c.get("usd_total")
            else ""
        )
        print(
            f"pool {pool}: compute {u['compute']:.1%}, bandwidth {u['bandwidth']:.1%}, busy {u['busy']:.1%}, "
            f"KV memory {u['kv_memory']:.1%}{share}"
        )
    for m in marks:
        print(f"pool {m.pool} on {m.hardware}: {confidence.describe(m.calibration)}")
    if any(m.calibration.band for m in marks):
        print(confidence.BAND_NOTE)
    e = doc["energy"]["joules_per_output_token"]
    energy_error = _pm(marks, confidence.HEADLINE_SOURCES["joules_per_output_token"])
    print(f"energy: {_fmt(e)} J per output token{energy_error}")
    if "sim" in doc:
        s = doc["sim"]
        print(
            f"simulated in {s['wall_s']:.2f} s with {s['events']:,} events ({s['events_per_request']:.1f} per request)"
        )


def _run_replications(args: argparse.Namespace, scen: Scenario, check: bool) -> int:
    """`run --replications N`: N seeds, each figure's mean and 95% interval (and their files with --out)."""
    runs, stats = replicate(scen, args.replications, check_work=check)
    doc = {
        "replications": args.replications,
        "seeds": [r.scenario.seed for r in runs],
        "stats": stats,
        "engine_version": ENGINE_VERSION,
    }
    if args.out:
        write_replications(runs, doc, Path(args.out), args.format)
    if args.json:
        emit_json(doc)
        return 0
    print(
        f"{args.replications} replications (seeds {runs[0].scenario.seed}..{runs[-1].scenario.seed}); "
        "mean [95% interval]"
    )
    behind = [short for r in runs if (short := shortfall_rps(r.summary)) is not None]
    if behind:
        print(
            f"unsustainable in {len(behind)} of {len(runs)} seeds (short by up to {max(behind):,.2g} req/s): "
            "the queue grows through the window"
        )
    for key in (
        "slo_attainment",
        "goodput_rps",
        "latency_ms.ttft.p99",
        "latency_ms.tpot.p99",
        "cost.usd_per_request",
        "throughput_tokens_per_s.output",
    ):
        if key in stats:
            s = stats[key]
            figure = f"{s['mean']:12.5g}  [{s['ci95_low']:.5g}, {s['ci95_high']:.5g}]"
            grows = max(behind) if behind and key.startswith("latency_ms") else None
            print(f"  {key:32} {sustain.latency(figure, grows)}")
    if args.out:
        print(
            f"wrote seed-<N>/ (each replication's files) and replications.json (the intervals) to {args.out}"
        )
    return 0


def _print_spread(summary: Summary, scen: Scenario, edge: RunMargin, spread: RunSpread) -> None:
    """`run --margin`'s text: the run at its chips' pessimistic edges, then each figure's spread."""
    from engine.explain.margin import figure_text

    slow = ", ".join(f"{chip} {e:+.0%}" for chip, e in edge.slowdown.items()) or "no chip has a band"
    print(
        f"margin: the same requests with every chip at its throughput band's pessimistic edge ({slow} time)"
    )
    short_a, short_b = edge.shortfalls
    for name, a, b in edge.rows():
        print(f"  {name:18} {figure_text(name, a, short_a):>12} -> {figure_text(name, b, short_b):>12}")
    for name, a, b in edge.classes():
        why = "" if b else f" ({edge.why(name)})"
        print(f"  class {name}: {'passes' if a else 'FAILS'} -> {'passes' if b else 'FAILS'}{why}")
    fast = ", ".join(f"{chip} {e:+.0%}" for chip, e in spread.speedup.items())
    print(
        f"spread: each headline figure with every chip at either edge of its band (optimistic: {fast} time)"
    )
    for line in spread_lines(summary, scen, spread.moves()):
        print(f"  {line}")


def cmd_run(args: argparse.Namespace) -> int:
    check_range(args.replications, "--replications", 1, bounds.MAX_REPLICATIONS)
    scen = load_scenario(args.scenario, args.set)
    check = not args.no_work_limit
    if args.out:
        check_writable_folder(args.out)  # before the runs, not after
    if args.replications > 1:
        return _run_replications(args, scen, check)
    res = simulate(scen, check_work=check)
    if args.out:
        write_outputs(res, Path(args.out), args.format)
    edge = spread = None
    if args.margin:
        from engine.explain.margin import run_spread  # pandas: loaded only when asked

        spread = run_spread(scen, res.summary, check_work=check)
        edge = spread.margin(scen)
    if args.json:
        doc = res.to_json()
        if spread is not None and edge is not None:
            doc["margin"] = {"slowdown": edge.slowdown, "slowed": edge.slowed}
            doc["spread"] = {
                "slowdown": spread.slowdown,
                "speedup": spread.speedup,
                "faster": spread.faster,
                "moves": {k: {"slower": a, "faster": b} for k, (a, b) in spread.moves().items()},
            }
        emit_json(doc)
        return 0
    print(f"{scen.name} (seed {scen.seed})")
    print_summary(res.to_json(), res.scenario)
    if edge is not None and spread is not None:
        _print_spread(res.summary, scen, edge, spread)
    if args.out:
        print(
            f"wrote requests.{args.format}, timeseries.{args.format}, summary.json, scenario.toml to {args.out}"
        )
    return 0


def spread_lines(summary: Summary, scenario: Scenario, moves: Any) -> list[str]:
    """'ttft_p99_ms  810  (−22% to +39%)': each headline figure of a run with its spread's band."""
    from engine.explain.presentation import headline  # pandas: loaded only when asked

    marks = confidence.pool_marks(scenario, summary)
    figures = {**headline(summary), "throughput_rps": summary["throughput_rps"]}
    out = []
    for key, v in figures.items():
        if v is None or key not in moves:
            continue
        band = confidence.figure_band(f"{v:.6g}", marks, key, moves)
        grows = shortfall_rps(summary) if key.endswith("_ms") else None
        out.append(f"{key:30} {sustain.latency(f'{v:12.5g}', grows)}  {band or ''}")
    return out


def cmd_drill(args: argparse.Namespace) -> int:
    from engine.explain.drill import fallback_drill  # pandas: loaded only for this command

    scen = load_scenario(args.scenario, args.set)
    check = not args.no_work_limit
    table = fallback_drill(scen, run=lambda s: simulate(s, check_work=check))
    if args.json:
        rows = [{k: (None if v != v else v) for k, v in row.items()} for row in table.to_dict("records")]
        emit_json(
            {
                "scenario": {"name": scen.name, "seed": scen.seed},
                "drill": rows,
                "engine_version": ENGINE_VERSION,
            }
        )
        return 0
    shown = table.copy()
    for col in shown.columns:
        if col.startswith("slo_attainment"):
            shown[col] = shown[col].map("{:.1%}".format)
    shown["ttft_p90_ms"] = shown["ttft_p90_ms"].map(lambda v: "-" if v is None or v != v else f"{v:,.0f}")
    shown["usd_per_request"] = shown["usd_per_request"].map(
        lambda v: "-" if v is None or v != v else f"{v:.6f}"
    )
    print(f"{scen.name} (seed {scen.seed}): each fallback on the same requests")
    print(shown.to_string(index=False))
    return 0


def cmd_import_model(args: argparse.Namespace) -> int:
    spec = model_from_hf_config(Path(args.config), args.id, args.name)
    return _write_or_print(entry_to_toml(spec), args.out)


def _write_or_print(text: str, out: str | None) -> int:
    """Write text to `out` (saying so on stderr), or to stdout."""
    if out:
        try:
            Path(out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise ScenarioError(f"--out {out}: cannot write ({exc.strerror or type(exc).__name__})") from None
        print(f"wrote {out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from engine.cli.validate import cmd_validate as run_validate

    return run_validate(args)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from engine.calibration import calibrate, measurements

    cat = load_catalog()
    if args.reference:
        from engine.cli.validate import cmd_calibrate_reference

        return cmd_calibrate_reference(args)
    if args.measurements and not (len(args.measurements) == 1 and args.measurements[0].endswith(".csv")):
        from engine.cli.observe import cmd_calibrate_files  # benchmark results (engine.observe)

        return cmd_calibrate_files(args)
    if not args.measurements or not args.hardware:
        raise ScenarioError("calibrate: give a measurements CSV and --hardware (or --reference)")
    csv = args.measurements[0]
    points = [m for m in measurements.read_measurements(csv) if m.hardware == args.hardware]
    if not points:
        raise ScenarioError(f"calibrate: no rows for hardware {args.hardware!r} in {csv}")
    result = calibrate.fit(points, cat, f"fitted to {len(points)} measurements in {Path(csv).name}")
    shown = result.table[["id", "point", "measured", "predicted", "error"]].copy()
    shown["error"] = shown["error"].map(lambda e: f"{e:+.1%}")  # a signed percentage, as the summary line
    print(shown.to_string(index=False), file=sys.stderr)
    print(
        f"{args.hardware}/{args.profile}: eta_compute {result.profile.eta_compute}, eta_bandwidth "
        f"{result.profile.eta_bandwidth}, overhead {result.profile.overhead_ms} ms per 80 layers; median |error| "
        f"{result.median_abs_error:.1%}",
        file=sys.stderr,
    )
    chip = cat.chip(args.hardware)
    new_id = args.new_id or f"{chip.id}-{args.profile}"
    entry = chip.model_copy(
        update={"id": new_id, "profiles": {**chip.profiles, args.profile: result.profile},
                "default_profile": args.profile}
    )  # fmt: skip
    return _write_or_print(
        entry_to_toml(HardwareSpec.model_validate(entry.model_dump(by_alias=True))), args.out
    )


def _roofline_flags(sub: Any) -> None:
    """The `roofline` command's flags."""
    r = sub.add_parser("roofline", help="prefill and decode of a model on one instance")
    r.add_argument("--model", required=True)
    r.add_argument("--hardware", required=True)
    r.add_argument("--tp", type=int, default=1)
    r.add_argument("--pp", type=int, default=1)
    r.add_argument("--weights", choices=["bf16", "fp8", "fp4", "int4"], default="bf16")
    r.add_argument("--kv", choices=["bf16", "fp8"], default="bf16")
    r.add_argument(
        "--stack", choices=list(SERVING_STACKS), default="vllm",
        help="serving stack: the chip's profile under it, by the rules of docs/calibration.md",
    )  # fmt: skip
    r.add_argument("--profile", default=None, help="a named calibration profile of the chip instead")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_roofline)


def _scenario_flags(sub: Any) -> None:
    """The `scenario` command's flags."""
    s = sub.add_parser("scenario", help="validate a scenario file or preset and print it")
    s.add_argument("scenario", help="a .toml/.json file or a preset name")
    s.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_scenario)


def _validate_flags(sub: Any) -> None:
    """The `validate` command's flags."""
    v = sub.add_parser(
        "validate", help="the cost model against every reference measurement, with cross-validation"
    )
    v.add_argument("--json", action="store_true")
    v.add_argument("--markdown", action="store_true", help="print a markdown table")
    v.set_defaults(func=cmd_validate)


def _calibrate_flags(sub: Any) -> None:
    """The `calibrate` command's flags."""
    k = sub.add_parser("calibrate", help="fit a chip's profile to measured timings")
    k.add_argument(
        "measurements",
        nargs="*",
        help="a CSV with columns "
        + ", ".join(MEASUREMENT_COLUMNS)
        + "; or benchmark results (fengong replay's formats)",
    )
    cli_observe.add_deployment_flags(k, hardware_required=False)
    k.add_argument("--profile", default="mine", help="name of the fitted profile")
    k.add_argument("--new-id", default=None, help="catalog id of the new entry (default <chip>-<profile>)")
    k.add_argument("--out", default=None, help="write the new catalog entry here (else stdout)")
    k.add_argument("--reference", action="store_true", help="refit the shipped profiles from data/reference")
    k.add_argument(
        "--write", action="store_true",
        help="with --reference: write the profiles into presets/hardware and the expected errors into presets/calibration.toml",
    )  # fmt: skip
    k.set_defaults(func=cmd_calibrate)


def _run_flags(sub: Any) -> None:
    """The `run` command's flags."""
    u = sub.add_parser("run", help="simulate a scenario file or preset")
    u.add_argument("scenario", help="a .toml/.json file or a preset name")
    u.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    u.add_argument("--json", action="store_true", help="one JSON document on stdout")
    u.add_argument("--out", default=None, help="directory for requests/timeseries tables and the summary")
    u.add_argument("--format", choices=["csv", "parquet"], default="csv")
    u.add_argument(
        "--replications",
        type=int,
        default=1,
        help=f"run N seeds (1 to {bounds.MAX_REPLICATIONS}) and report 95%% intervals; with --out, each "
        "seed's files under seed-<N>/ and the intervals in replications.json",
    )
    u.add_argument(
        "--margin",
        action="store_true",
        help="also rerun the same requests with every chip slower by its expected throughput error "
        "(docs/planner.md, Margin): does the verdict hold?",
    )
    add_work_limit_flag(u)
    u.set_defaults(func=cmd_run)


def _drill_flags(sub: Any) -> None:
    """The `drill` command's flags."""
    d = sub.add_parser("drill", help="a scenario with faults under each fallback policy, side by side")
    d.add_argument("scenario", help="a .toml/.json file or a preset name (with at least one fault)")
    d.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    d.add_argument("--json", action="store_true", help="one JSON document on stdout")
    add_work_limit_flag(d)
    d.set_defaults(func=cmd_drill)


def _import_model_flags(sub: Any) -> None:
    """The `import-model` command's flags."""
    m = sub.add_parser("import-model", help="a Hugging Face config.json to a model catalog entry")
    m.add_argument("config", help="path to a local config.json")
    m.add_argument("--id", required=True, help="catalog id, e.g. my-model-7b")
    m.add_argument("--name", default=None)
    m.add_argument("--out", default=None, help="write the TOML here (else stdout)")
    m.set_defaults(func=cmd_import_model)


def parser() -> argparse.ArgumentParser:
    """The argument parser of the CLI."""
    p = argparse.ArgumentParser(prog="fengong", description="Fengong: LLM-serving lab.")
    sub = p.add_subparsers(dest="command", required=True)

    cli_catalog.register(sub)
    cli_observe.register(sub)
    for add in (
        _roofline_flags,
        _scenario_flags,
        _validate_flags,
        _calibrate_flags,
        _run_flags,
        _drill_flags,
        _import_model_flags,
    ):
        add(sub)
    plan_flags.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if isinstance(exc, WorkBoundError):
            print("(a trusted local run may pass --no-work-limit; see docs/bounds.md)", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly
        sys.stderr.close()
        return 0
