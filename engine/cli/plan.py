"""Command-line commands for planning: ``plan``, ``capacity``, ``sweep`` and ``advise``.

`engine.cli.plan_flags` adds them to the CLI's subparsers (engine.cli.main calls it). With ``--json``
stdout holds exactly one JSON document; progress bars and messages go to stderr. Bad input
exits with status 2 and a message naming the field (engine.cli.main's main catches ScenarioError).
The planner, the advisor and sweeps are imported when their command runs, so that ``run`` and
``scenario`` do not pay for them at start-up (a whole ``run`` process is timed by make bench).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cli import links
from engine.cli.common import (
    ProgressBar,
    check_overlaps,
    check_range,
    check_writable_file,
    emit_json,
    is_file_ref,
    load_scenario,
)
from engine.cli.emit import check_emit_flags, plan_emit, print_plan_emit
from engine.cli.plan_flags import DEFAULT_TP, attainment_of
from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.core.numbers import rate2
from engine.explain import confidence, sustain
from engine.planning.rules import attained
from engine.scenario import codec as scenario_io
from engine.scenario import naming

if TYPE_CHECKING:
    from engine.planning.margin import Margin
    from engine.planning.plan import Plan
    from engine.scenario.model import Scenario


def _ints(text: str, flag: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ScenarioError(f"{flag}: expected integers separated by commas (got {text!r})") from None


# --- plan ------------------------------------------------------------------------------------


PLAN_FLAGS = {
    "target_rps": "--target-rps",
    "duration_s": "--duration-s",
    "max_simulations": "--max-simulations",
    "margin": "--no-margin",
    "risk": "--nominal",
    "lift": "--no-work-limit",
}
"""The plan work bound's levers as `plan`'s flags (engine.planning.plan_work.LEVERS)."""


def cmd_plan(args: argparse.Namespace) -> int:
    """Find the cheapest deployment that meets every SLO at --target-rps (on --dask's cluster if given)."""
    with cluster_executor(args.dask) as executor:
        return _plan(args, executor)


def _space(args: argparse.Namespace, scen: Any) -> Any:
    """The search space the flags ask for."""
    from engine.planning.candidates import SearchSpace, hardware_choice
    from engine.scenario.resolve import scenario_catalog

    hardware = hardware_choice(scen, args.hardware or "")
    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    given = [flag for flag, v in (("--ep", args.ep), ("--ep-tp", args.ep_tp)) if v is not None]
    if (
        given and scenario_catalog(scen).model(scen.model.id).moe is None
    ):  # ignored on a dense model (a review)
        raise ScenarioError(f"{given[0]}: {scen.model.id} is a dense model: it has no experts to spread")
    tps = _ints(args.tp, "--tp")
    from engine.costmodel.stacks import tp_split_problem

    model = scenario_catalog(scen).model(scen.model.id)
    # refused, as roofline refuses it, not searched to 'no deployment passed' (exit 1 read as a search that
    # ran and found nothing: a review)
    bad = [t for t in tps if tp_split_problem(model, t)]
    # the default list is kept to the degrees the model takes (a custom model of 28 heads, say)
    if bad and (args.tp != DEFAULT_TP or len(bad) == len(tps)):
        raise ScenarioError(f"--tp: {tp_split_problem(model, bad[0])}")
    tps = tuple(t for t in tps if t not in bad)
    return SearchSpace(
        hardware=hardware,
        modes=modes,  # type: ignore[arg-type]
        tp=tps,
        pp=_ints(args.pp, "--pp"),
        ep=SearchSpace().ep if args.ep is None else _ints(args.ep, "--ep"),
        ep_tp=SearchSpace().ep_tp if args.ep_tp is None else _ints(args.ep_tp, "--ep-tp"),
        mixed_hardware=not args.no_mixed_hardware,
        budget_usd_per_hour=args.budget_usd_per_hour,
        power_budget_kw=args.power_budget_kw,
        duration_s=args.duration_s,
        max_simulations=args.max_simulations,
        finalists=args.finalists,
        portfolio=args.portfolio,
    )


def _check_flags(args: argparse.Namespace) -> None:
    """`plan`'s numeric flags in range and its output writable, before anything runs."""
    from engine.planning.candidates import MAX_POWER_BUDGET_KW, MIN_PLANNING_WINDOW_S

    links.check_url_flag(args)
    # the scenario's own range (0.00005 passed this check, then was refused as workload.arrival.rate_rps)
    check_range(args.target_rps, "--target-rps", bounds.MIN_RATE_RPS, bounds.MAX_RATE_RPS)
    check_range(args.duration_s, "--duration-s", MIN_PLANNING_WINDOW_S, bounds.MAX_DURATION_S)
    check_range(
        args.budget_usd_per_hour, "--budget-usd-per-hour", 0, bounds.MAX_BUDGET_USD_PER_HOUR, above=True
    )
    check_range(args.power_budget_kw, "--power-budget-kw", 0, MAX_POWER_BUDGET_KW, above=True)
    if args.out:
        check_writable_file(args.out)  # before the search, not after
    check_emit_flags(args)


def _with_margin(
    args: argparse.Namespace, scen: Any, result: Any, space: Any, executor: Any
) -> tuple[Any, Any, str]:
    """The plan with its choice's margin (None and why, where it is missing or not asked), the choice's
    'holds slowed' taken from it where no risk check reached it."""
    from engine.planning.margin import margin

    edge, failed = None, ""
    if not args.no_margin and result.best_run is not None:
        bar = ProgressBar(space.max_simulations, "margin", not args.no_progress)
        try:
            edge = margin(
                scen, result, space, progress=bar.plan, check_work=not args.no_work_limit, executor=executor
            )
        except ScenarioError as exc:  # the plan stands; its margin says why it is missing
            failed = str(exc)
        finally:
            bar.close()
    if edge is not None:  # its verdict quoting the margin, in the JSON as in the text (a review)
        result = edge.plan
    return result, edge, failed


def _chosen(args: argparse.Namespace, result: Plan, scen: Scenario) -> Scenario | None:
    """The chosen scenario named for what it runs, edited from the command's preset id or file stem (the
    planned scenario's name and words were the preset's, a review: "6 h100-sxm prefill + 6 h100-sxm
    decode" on a file of 20 H100s and 6 MI300Xs; `Plan.best` is named from the planned scenario's title)."""
    if result.best_run is None:
        return None
    source = Path(args.scenario).stem if is_file_ref(args.scenario) else args.scenario
    return naming.named(result.scenario_of(result.best_run), scen, source)


def _write_chosen(args: argparse.Namespace, result: Plan, scen: Scenario) -> bool:
    """Write the chosen scenario to `--out` where one is asked for and chosen; whether it was written."""
    if not args.out or (chosen := _chosen(args, result, scen)) is None:
        return False
    # without the preset's counterpart: `compare` on the file took it as B at the preset's own load, 16 req/s
    # against the plan's 40, and still named a winner (a review); with none, B is the file served the other way
    chosen = chosen.model_copy(update={"counterpart": None})
    Path(args.out).write_text(scenario_io.dumps_toml(chosen), encoding="utf-8")
    return True


REPLACED = {
    "deployment.pools": "its deployments, which keep only the pools' chips and profiles",
    "deployment.mode": "its deployments",
}
"""--set paths a plan replaces with its own, and by what (`_replaced_sets`)."""


def _replaced_sets(sets: Sequence[str] | None) -> str:
    """What a plan replaces of its --set overrides ('' where nothing): `--set deployment.pools[0].tp=4` and
    `--set workload.arrival.rate_rps=20`, the help's own examples, were dropped unsaid (a review)."""
    # (a pool's chip, profile and maturity are the plan's: its chips, and the profiles it runs them with)
    kept = (".hardware", ".profile", ".maturity")
    gone = []
    for s in sets or ():
        p = str(s).split("=", 1)[0].strip()
        by = next((v for k, v in REPLACED.items() if p.startswith(k)), None)
        if p == "workload.arrival.rate_rps":
            gone.append(f"{p} (--target-rps)")
        elif by is not None and not p.endswith(kept):
            gone.append(f"{p} ({by})")
    return f"the plan replaces {'; '.join(gone)}: those --set values are not used" if gone else ""


def _plan(args: argparse.Namespace, executor: Executor | None) -> int:
    from engine.planning.plan import plan
    from engine.planning.plan_work import check_plan_work
    from engine.serving.run import ENGINE_VERSION

    _check_flags(args)
    scen = load_scenario(args.scenario, args.set)
    if said := _replaced_sets(args.set):
        print(f"note: {said}", file=sys.stderr)
    space = _space(args, scen)
    link = (
        links.plan_address(args, scen, space, attainment_of(args)) if args.link else None
    )  # said before the search
    # the whole plan, its margin included, is bounded before any simulation (docs/planner.md)
    work = None
    if not args.no_work_limit:
        verdict = {"risk_aware": not args.nominal, "verify": not args.no_verify}
        work = check_plan_work(
            scen, args.target_rps, space, margin=not args.no_margin, names=PLAN_FLAGS, **verdict
        )
    bar = ProgressBar(space.max_simulations, "planning", not args.no_progress)
    try:
        result = plan(
            scen,
            args.target_rps,
            space,
            progress=bar.plan,
            check_work=not args.no_work_limit,
            rule=args.rule,
            attainment=attainment_of(args),
            executor=executor,
            objective=args.objective,
            risk_aware=not args.nominal,
            verify=not args.no_verify,
        )
    finally:
        bar.close()
    result, edge, failed = _with_margin(args, scen, result, space, executor)
    if args.json:
        doc = result.to_json()
        if not args.no_margin:
            doc["margin"] = edge.to_json() if edge is not None else {"error": failed} if failed else None
        doc["engine_version"] = ENGINE_VERSION
        doc["scenario"] = {"name": scen.name, "seed": scen.seed}
        doc["work"] = work.to_json() if work is not None else None
        doc["link"] = link
        if args.emit:
            doc["emit"] = plan_emit(_chosen(args, result, scen), args)
        # written with --json too (checked writable before the search, then never written: a review)
        doc["wrote"] = args.out if _write_chosen(args, result, scen) else None
        emit_json(doc)
        return _status(result)
    from engine.cli.plan_verdict import print_verdict

    print_plan(result)
    print_verdict(result, (edge.chosen, edge.faster) if edge is not None else ())
    if edge is not None:
        print_margin(edge)
    elif failed:
        print(f"\nmargin: not computed: {failed}")
    if _write_chosen(args, result, scen):
        print(f"wrote the chosen scenario to {args.out}")
    print_plan_emit(plan_emit(_chosen(args, result, scen), args))
    if link:
        print(f"\nthis plan in the dashboard (its form filled in; Plan makes it there): {link}")
    return _status(result)


def _status(result: Plan) -> int:
    """The exit status of a plan: 0 when a deployment meets the targets, 1 when none does (as `grep`
    says no match), so that a script or a CI job stops on an answer it cannot buy; 2 stays bad input."""
    return 0 if result.best is not None else 1


def _mark(row: Mapping[Any, Any]) -> str:
    """A frontier row's calibration: 'calibrated (−30% to +67%)' or 'uncalibrated' (the throughput band,
    when one is shown)."""
    if "calibrated" not in row:
        return ""
    fall, rise = row.get("throughput_fall"), row.get("throughput_rise")
    known = all(isinstance(v, float) and math.isfinite(v) for v in (fall, rise))
    pm = f" ({confidence.signed_text(fall, rise)})" if known else ""  # type: ignore[arg-type]
    head = str(row.get("calibration") or "").split(":")[0]
    return (
        head if row["calibrated"] and head else "calibrated" if row["calibrated"] else "uncalibrated"
    ) + pm


def print_margin(m: Margin) -> None:
    """The plan's margin for the model's error: the choice with slowed chips, and what holds."""
    slow = ", ".join(f"{chip} {e:+.0%} time" for chip, e in m.slowdown.items()) or "no chip has a band"
    c = m.chosen
    latency = c.latency_text(sustain.latency)
    figures = (
        f"{attained(c.slo_attainment, 1, 'attainment {}')}, goodput {c.goodput_rps:.2f} req/s, {latency}"
    )
    if c.shortfall_rps is not None:
        figures += f"; unsustainable, short by {rate2(c.shortfall_rps)} req/s"
    figures += c.capacity_text()
    print(f"\nmargin: with every chip at the pessimistic edge of its throughput band ({slow})")
    if m.holds:  # (the rule it passes by: a share within SLO under 90% read as a fail, a review)
        from engine.planning.rules import rule_text

        print(
            f"  the chosen deployment still passes ({rule_text(m.modelled.rule, m.modelled.attainment)}: {figures})"
        )
        return
    print(f"  the chosen deployment no longer passes ({figures})")
    q = m.slowed
    if q.best_run is None:
        why = m.nothing_text()
        print(
            f"  no deployment passes with slowed chips in this search ({q.simulated} simulations"
            + (f"; {why})" if why else ")")
        )
        return
    r = q.runs.iloc[q.best_run]
    more = m.extra_text()
    print(
        f"  {m.pick_text()}: {r['shape']} {r['split']} = {int(r['chips'])} chips, "
        f"${r['usd_per_hour']:,.2f}/h{m.pick_figure()} ({more})"
        + (f"; {m.cut_text()}" if m.cut_text() else "")
    )


def _ms(v: float | None) -> str:
    return "n/a" if v is None else f"{v:,.0f} ms" if v >= 100 else f"{v:.1f} ms"


def _frontier_rows(p: Plan, flag: str, order: str) -> list[dict[str, Any]]:
    """A frontier's runs over the passing runs only, as the dashboard draws it (`passing_frontiers`):
    a failing run is no point of a trade-off anyone can deploy."""
    from engine.planning.frontier import passing_frontiers

    runs = passing_frontiers(p.runs, p.objective)
    if runs.empty or flag not in runs:
        return []
    return [
        {str(k): v for k, v in r.items()}
        for r in runs[runs[flag]].sort_values(order).to_dict(orient="records")
    ]


def _off_frontier(p: Plan) -> None:
    """Say that the choice is off the cost frontier, where it is (`frontier.off_frontier_text`)."""
    from engine.planning.frontier import off_frontier_text, passing_frontiers

    if said := off_frontier_text(passing_frontiers(p.runs, p.objective), p.risk_aware):
        print(f"  ({said})")


def _assumed(p: Plan) -> str:
    """'assumed: llama-3.1-70b, fp8 weights and fp8 KV, under vLLM; rent: catalog price per chip-hour':
    what every figure of the plan rests on (the text named neither the model nor the stack nor the
    cost basis: a review); '' for a plan that ran nothing."""
    from engine.costmodel import STACK_NAMES

    base = p.best or (p.scenarios[0] if p.scenarios else None)
    if base is None:
        return ""
    stack = STACK_NAMES.get(base.deployment.stack, base.deployment.stack)
    return (
        f"assumed: {base.model.id}, {base.model.weights} weights and {base.kv_precision()} KV, under {stack}; "
        f"{base.cost.label()}"
    )


def print_plan(p: Plan) -> None:
    """A human summary of a plan, each deployment with its calibration mark."""
    from engine.cli.plan_verdict import latency_text
    from engine.planning.objective import COLUMN, OBJECTIVES, UNIT
    from engine.planning.rules import rule_text

    print(
        f"target {p.target_rps:g} req/s over a {p.duration_s:g} s planning window: {len(p.candidates)} shapes, "
        f"{p.pruned} pruned by the cost model, {p.bounded} bounded out, {p.simulated} simulations, "
        f"{p.feasible} passed ({rule_text(p.rule, p.attainment)})"
    )
    if said := _assumed(p):
        print(said)
    for note in (*getattr(p, "method", ()), *p.notes):  # (a plan kept from before `method`: none)
        print(f"note: {note}")
    if p.best_run is not None:
        r = {str(k): v for k, v in p.runs.iloc[p.best_run].to_dict().items()}
        # the planning window's run of the pick (the verdict below quotes its full-length run)
        v = getattr(p, "verdict", None)  # its figures differ from the verdict's below: say whose each are
        full = v is not None and v.chosen is not None and str(v.chosen["verified_by"]).startswith("full")
        head = f"{'chosen' if p.risk_aware else 'cheapest'} (its {p.duration_s:g} s planning run)"
        latency = latency_text(r) if "classes_at_slo" in r else f"TTFT p90 {r['ttft_ms_p90']:,.0f} ms"
        pick = f"{r['shape']} {r['split']} = {int(r['chips'])} chips, ${r['usd_per_hour']:,.2f}/h"
        if full:  # the verdict's full-length figures only: a second $/M for the same choice read 30% apart
            head = f"{'chosen' if p.risk_aware else 'cheapest'} (on its {p.duration_s:g} s planning run)"
            print(f"{head}: {pick}; its latencies and costs below are its full-length run's")
        else:
            print(
                f"{head}: {pick}; goodput {r['goodput_rps']:.2f} req/s, {latency} (TPOT mean "
                f"{r['tpot_ms_mean']:.1f} ms), ${r['usd_per_million_output_tokens']:.2f} per M output tokens"
                + (f"; {r['calibration']}" if "calibration" in r else "")
            )
    objective = getattr(p, "objective", "usd_per_hour")
    x, unit = COLUMN[objective], UNIT[objective]  # the cost frontier follows the objective
    head = "cost" if objective == "usd_per_hour" else OBJECTIVES[objective]
    cost, tput = (
        _frontier_rows(p, "on_cost_frontier", x),
        _frontier_rows(p, "on_throughput_frontier", "tokens_per_s_per_user"),
    )
    # the deployment column fits its longest label ("h200 tp1 dp8 ep8 -> h200 tp2 dp8 ep16")
    width = max([34, *(len(str(r["shape"])) for r in cost + tput)])
    print(f"\n{head} against goodput (Pareto frontier of the deployments that pass; * = chosen)")
    if not cost:
        print("  none: no simulated deployment passed")
    else:
        print(f"  {'deployment':{width}} {'split':>9} {unit:>9} {'goodput req/s':>13}  calibration")
    for c in cost:
        mark = "*" if c["chosen"] else " "
        v = c[x] / 1e3 if objective == "power" else c[x]
        print(f"{mark} {c['shape']:{width}} {c['split']:>9} {v:9.2f} {c['goodput_rps']:13.2f}  {_mark(c)}")
    _off_frontier(p)
    print(
        "\ngoodput per chip (output tokens of requests within their SLO) against tokens/s per user (Pareto "
        "frontier of the deployments that pass)"
    )
    if not tput:
        print("  none: no simulated deployment passed")
    else:
        print(f"  {'deployment':{width}} {'split':>9} {'tok/s/user':>10} {'tok/s/chip':>10}  calibration")
    for t in tput:
        mark = "*" if t["chosen"] else " "
        print(
            f"{mark} {t['shape']:{width}} {t['split']:>9} {t['tokens_per_s_per_user']:10.1f} "
            f"{t['goodput_tokens_per_s_per_chip']:10.0f}  {_mark(t)}"
        )
    off = [cal for cal in p.calibration if not cal.fitted]
    if off:
        print("\nuncalibrated chips (a profile by rule; docs/calibration.md):")
        for cal in off:
            print(f"  {cal.hardware}: {cal.rule}")
    partial = [cal for cal in p.calibration if cal.partial]
    if partial:
        print(
            "\npartly calibrated chips (fitted, then their MoE experts' shared terms, a software maturity, or a fit "
            "that misses the chip's own published results):"
        )
        for cal in partial:
            print(f"  {cal.hardware}: {cal.partial_text}" + (f"; {cal.caveat}" if cal.caveat else ""))
    if any(cal.band for cal in p.calibration):
        print(f"\n{confidence.BAND_NOTE}")


# --- sweep -----------------------------------------------------------------------------------


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run a grid of field values and seeds; write one tidy table."""
    from engine.planning.sweep import grid, local_executor, parse_vary, sweep, write

    check_range(args.workers, "--workers", 1, 256)  # 0 ran on every core, unsaid (a review)
    scen = load_scenario(args.scenario, args.set)
    vary = parse_vary(args.vary)
    check_overlaps(args.set or (), vary)
    points = grid(vary, args.seeds, scen.seed)
    check_writable_file(args.out)  # before the grid runs, not after
    if not args.out.lower().endswith((".parquet", ".csv")):  # Parquet went into x.txt, unsaid (a review)
        raise ScenarioError(
            f"--out {args.out}: name a .parquet or a .csv file (the table's format follows it)"
        )
    bar = ProgressBar(len(points), "sweep", not args.no_progress)
    try:
        with cluster_executor(args.dask) as cluster:
            executor = cluster or (None if args.workers == 1 else local_executor(args.workers))
            try:
                frame = sweep(
                    scen,
                    vary,
                    seeds=args.seeds,
                    executor=executor,
                    progress=bar.sweep,
                    check_work=not args.no_work_limit,
                )
            finally:
                if executor is not None and cluster is None:
                    executor.shutdown()
    finally:
        bar.close()
    if "error" in frame and (frame["error"] != "").all():  # nothing ran: say why, as one refused run does
        first = str(frame["error"].iloc[0])
        lift = (
            " (a trusted local run may pass --no-work-limit; see docs/bounds.md)"
            if "work bound" in first
            else ""
        )
        raise ScenarioError(f"every point was refused; the first: {first}{lift}")
    try:
        write(frame, args.out)
    except OSError as exc:  # e.g. the disk filled while the grid ran: keep the results anyway
        kept = _keep(frame, args.out, write)
        raise ScenarioError(
            f"--out {args.out}: cannot write there ({exc.strerror or type(exc).__name__}); "
            + (f"the results are kept in {kept}" if kept else "the results could not be kept either")
        ) from None
    n = len(frame)
    print(f"wrote {n} run{'' if n == 1 else 's'} x {frame.shape[1]} columns to {args.out}", file=sys.stderr)
    if (saturated := sustain.sweep_line(frame)) is not None:
        print(saturated, file=sys.stderr)
    refused = int((frame["error"] != "").sum()) if "error" in frame else 0
    if refused:
        first = frame.loc[frame["error"] != "", "error"].iloc[0]
        print(
            f"{refused} of them refused by the engine (their 'error' column says why; the first: {first})",
            file=sys.stderr,
        )
    return 0


def _keep(frame: Any, out: str, write: Any) -> str | None:
    """Write a sweep's table to a new file in the temporary folder (same format as `out`); its path,
    or None when that fails too."""
    import tempfile

    suffix = ".csv" if out.lower().endswith(".csv") else ".parquet"
    fd, path = tempfile.mkstemp(prefix="fengong-sweep-", suffix=suffix)
    os.close(fd)
    try:
        write(frame, path)
    except OSError:
        return None
    return path


# --- advise ----------------------------------------------------------------------------------


DASK_TIMEOUT_S = 10
"""Seconds `--dask` waits for its scheduler before refusing the address (Dask's own default is 30)."""


@contextlib.contextmanager
def cluster_executor(address: str | None) -> Iterator[Executor | None]:
    """An executor on the Dask scheduler at `address` for the block's length (None: no address)."""
    if not address:
        yield None
        return
    from distributed import Client  # heavy and only needed here: imported on demand
    from distributed.comm.addressing import get_address_host_port

    try:
        # A malformed address is refused before a client starts its event-loop thread (starting one
        # to be told the address is malformed took over 10 s on a loaded CI machine, 2026-12-05).
        get_address_host_port(address)
        client = Client(address, timeout=DASK_TIMEOUT_S)  # type: ignore[no-untyped-call]
    except (OSError, ValueError, TypeError) as exc:  # unreachable, refused, or not an address at all
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        why = (
            f"no Dask scheduler answered there within {DASK_TIMEOUT_S} s"
            if isinstance(exc, OSError)
            else "not a scheduler's address"
        )
        raise ScenarioError(
            f"--dask {address!r}: {why} ({detail}); expected tcp://HOST:PORT of a running `dask scheduler`"
        ) from None
    try:
        yield client.get_executor()  # type: ignore[no-untyped-call]
    finally:
        client.close()  # type: ignore[no-untyped-call]
