"""The ``run``, ``drill`` and ``scenario`` commands: a scenario simulated, drilled or shown resolved.

``run --json`` prints the summary the engine returns and nothing else, so it imports neither the
human report (`engine.cli.run_text`, which reads the calibration bands) nor pandas; those load
when a command prints text, writes tables or asks for a margin.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engine import policies
from engine.cli import links
from engine.cli.common import check_range, check_writable_folder, emit_json, load_scenario
from engine.cli.outputs import write_outputs, write_replications
from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.core.numbers import figures, rate2
from engine.explain import run_notes, sustain
from engine.scenario import codec as scenario_io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.run import ENGINE_VERSION, SimResult, replicate, simulate
from engine.serving.summary import latency_shortfall, shortfall_rps
from engine.serving.work_bound import estimate, in_words


def cmd_scenario(args: argparse.Namespace) -> int:
    """Validate a scenario, print it resolved: each pool's capacity and price, the work estimate; `--list`:
    the presets, each with its name (no command listed them: a review)."""
    links.check_url_flag(args)
    if args.list:
        for name in scenario_io.preset_names():
            print(f"{name:32} {scenario_io.load_preset(name).name}")
        return 0
    if not args.scenario:
        raise ScenarioError("scenario: give a .toml/.json file or a preset name (--list lists the presets)")
    scen = load_scenario(args.scenario, args.set)
    res = resolve(scen)
    if args.link:
        print(links.address(scen, args.scenario, args.link, args.url))
        return 0
    if args.json:  # every field's default filled in (a policy's knobs: the text's comments)
        emit_json(scenario_io.to_data(scen))
        return 0
    print(scenario_io.dumps_toml(scen))
    defaulted = any(v is None for v in scen.deployment.batching.model_dump().values())
    for p in res.pools:
        print(
            # the instance's chips, tp x pp x dp ('2 x (1 x h200)' for two 8-chip DP instances: a review)
            f"# pool {p.spec.name}: {p.spec.count} x ({p.spec.chips_per_instance} x {p.hardware.id}), KV capacity "
            f"{p.instance.kv_capacity_tokens:,} tokens per instance, ${p.usd_per_hour:,.2f}/h; batches of at "
            f"most {p.limits.max_batch:,} requests and {p.limits.token_budget:,} tokens"
            + (
                f", prompts in chunks of {p.limits.chunk_tokens:,}"
                if p.limits.chunked_prefill
                else ", whole prompts"
            )
            + (f" (fields left unset: {p.limits.source})" if p.limits.source and defaulted else "")
        )
    for where, policy in knob_defaults(scenario_io.to_data(scen)):
        print(f"# {where}: {policy}")
    if scen.scheduler.iteration is None:
        print(f"# iteration: {scen.iteration_scheduler().name} (the stack's scheduler)")
    work = estimate(scen)
    print(
        f"# work estimate: {in_words(work.requests)} requests, {in_words(work.events)} events, "
        f"{in_words(work.router_looks)} router looks, {in_words(work.cache_blocks)} cache block visits, "
        f"{work.memory_bytes / 1e6:,.0f} MB (bounds: docs/bounds.md)"
    )
    for problem in work.problems():
        print(f"# over the bound: {problem}")
    return 0


def knob_defaults(data: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, 'queue_cap with max_queued 256, low_priority_share 0.5 (defaults)') for each policy whose
    knobs the scenario leaves at their defaults: `--json` holds only what the scenario states, so that
    it loads back as the same scenario (filled in, a preset read back as an edit of itself); a file
    read there said `{name = "queue_cap"}` with nothing of what it runs with (a review)."""
    found: list[tuple[str, str, dict[str, Any]]] = []
    sched = data.get("scheduler", {})
    for kind in ("router", "queue", "admission", "iteration"):
        if isinstance(sched.get(kind), dict):
            found.append((f"scheduler.{kind}", kind, sched[kind]))
    for i, pool in enumerate(data.get("deployment", {}).get("pools", [])):
        if isinstance((auto := pool.get("autoscale")), dict) and isinstance(auto.get("policy"), dict):
            found.append((f"deployment.pools[{i}].autoscale.policy", "autoscaler", auto["policy"]))
    out = []
    for where, kind, spec in found:
        if left := policies.left_knobs(kind, spec):
            knobs = ", ".join(f"{k} {v}" for k, v in left.items())
            out.append((where, f"{spec.get('name')} with {knobs} (defaults)"))
    return out


REPLICATED = (
    ("slo_attainment", "SLO attainment (%)", 100.0),
    ("goodput_rps", "goodput (req/s)", 1.0),
    ("latency_ms.ttft.p99", "TTFT p99 (ms)", 1.0),
    ("latency_ms.tpot.p99", "TPOT p99 (ms)", 1.0),
    ("cost.usd_per_request", "$ per 1k requests", 1000.0),
    ("throughput_tokens_per_s.output", "output tokens/s", 1.0),
)
"""The figures `run --replications` prints, their labels and the scale to them: as a single run writes
them (in %, $ per 1k requests), not as the JSON's keys and fractions ('slo_attainment 0.99617': a review)."""


def _run_replications(args: argparse.Namespace, scen: Scenario, check: bool) -> int:
    """`run --replications N`: N seeds, each figure's mean and 95% interval (and their files with --out)."""
    runs, stats = replicate(scen, args.replications, check_work=check)
    doc = {
        "replications": args.replications,
        "seeds": [r.scenario.seed for r in runs],
        "stats": stats,
        # each seed's qualifying sentences, once each (a single run's JSON had them, this had none)
        "notes": list(dict.fromkeys(n for r in runs for n in run_notes.notes(r))),
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
        where = {mark.get("backlog") for r in runs if (mark := r.summary["unsustainable"])}
        backlog = (
            "the requests decoding pile up through the window"
            if where == {"decoding"}
            else "the queue grows through the window"
            if where == {None}
            else "the queue or the requests decoding grow through the window"
        )
        print(
            f"unsustainable in {len(behind)} of {len(runs)} seeds (short by up to {rate2(max(behind))} req/s): "
            f"{backlog}"
        )
    if any(s.get("over") == "window" for s in stats.values()):  # (`run.replicate`: one kind of rate)
        print(
            "  rates over each seed's window, the unsustainable seeds' too (a single run's are over the span "
            "it served: the two do not average)"
        )
    _queues_said(runs)
    for name in runs[0].summary["classes"]:  # whether each class met its SLO, seed by seed (a review)
        passed = sum(bool(r.summary["classes"][name]["passes"]) for r in runs)
        fails = "" if passed == len(runs) else " (FAILS in every seed)" if not passed else " (FAILS in some)"
        # an unsustainable seed's class is within target over that run only (its single run says so)
        only = (
            f", within target over the run only in the {len(behind)} unsustainable"
            if passed and behind
            else ""
        )
        print(f"  class {name}: passes in {passed} of {len(runs)} seeds{fails}{only}")
    full = [r for r in runs if sustain.saturated(r.summary)]
    for key, label, scale in REPLICATED:
        if key in stats:
            s = stats[key]
            mean, low, high = (
                figures(s[k] * scale, 4) if s[k] is not None else ""
                for k in ("mean", "ci95_low", "ci95_high")
            )
            figure = (
                f"{mean:>12}  [{low}, {high}]"
                if s["mean"] is not None
                else f"{'-':>12}  (none in {s['missing']} of {len(runs)} seeds: no mean)"
            )
            if (
                key.startswith("cost.") and full
            ):  # as a single run marks its costs (a review), at capacity too
                figure += f"  ({sustain.LEVEL} in {len(full)} of {len(runs)} seeds)"
            kind = key.split(".")[1] if key.startswith("latency_ms") else None
            shorts = [latency_shortfall(r.summary, kind) for r in runs] if kind else []  # type: ignore[arg-type]
            grows = [g for g in shorts if g is not None]
            level = bool(kind) and any(sustain.level(r.summary, kind) for r in runs)  # type: ignore[arg-type]
            print(f"  {label:24} {sustain.latency(figure, max(grows) if grows else None, level)}")
    if args.out:
        print(
            f"wrote seed-<N>/ (each replication's files) and replications.json (the intervals) to {args.out}"
        )
    return 0


def _queues_said(runs: list[SimResult]) -> None:
    """In how many seeds the queue still rose at the window's end, or stood at capacity (each seed's own
    line says it; a review found the count left out)."""
    rising = [r for r in runs if r.summary.get("queue_rising") and shortfall_rps(r.summary) is None]
    if rising:  # each seed's own line says it; here, in how many (a review found it left out)
        print(
            f"queue still rising at the window's end in {len(rising)} of {len(runs)} seeds, too late for the "
            "saturation rule to call them unsustainable: a longer run tells"
        )
    standing = [r for r in runs if r.summary.get("at_capacity") and shortfall_rps(r.summary) is None]
    if standing:
        print(
            f"at capacity in {len(standing)} of {len(runs)} seeds: the queue never emptied in the window's second "
            "half, no headroom (their TTFT and E2E grow with a longer run)"
        )


def cmd_run(args: argparse.Namespace) -> int:
    """Simulate a scenario (or N seeds of it) and print its summary, or write it as JSON or tables."""
    check_range(args.replications, "--replications", 1, bounds.MAX_REPLICATIONS)
    scen = load_scenario(args.scenario, args.set)
    check = not args.no_work_limit
    if args.format is not None and not args.out:  # it was silently dropped (a review)
        raise ScenarioError(f"--format {args.format}: applies to the tables --out writes; give --out DIR")
    if getattr(args, "bands", False) and not args.json:  # dropped in silence (a hostile review)
        raise ScenarioError(
            "--bands: applies to --json (the printed report shows every band already); add --json"
        )
    args.format = args.format or "csv"
    if args.out:
        check_writable_folder(args.out)  # before the runs, not after
    if args.replications > 1:
        if args.margin:  # it was dropped in silence (a review): the margin is one run's
            raise ScenarioError("--margin: applies to one run; leave out --replications, or --margin")
        if getattr(args, "bands", False):  # (as --margin: a hostile review)
            raise ScenarioError(
                "--bands: applies to one run; replications give each figure's interval over the seeds instead"
            )
        return _run_replications(args, scen, check)
    res = simulate(scen, check_work=check)
    if args.out:
        write_outputs(res, Path(args.out), args.format, field="--out")
    edge = spread = None
    if args.margin:
        from engine.explain.margin import run_spread  # pandas: loaded only when asked

        spread = run_spread(scen, res.summary, check_work=check)
        edge = spread.margin(scen)
    if args.json:
        doc = res.to_json()
        doc["notes"] = run_notes.notes(res)  # what the text report says before its figures
        if spread is not None or args.bands:  # the calibration tables and pandas: only when asked
            from engine.cli.run_text import headline_bands

            doc["bands"] = headline_bands(doc, res.scenario, spread.moves() if spread is not None else None)
        if spread is not None and edge is not None:
            doc["margin"] = {"slowdown": edge.slowdown, "slowed": edge.slowed}
            doc["spread"] = {
                "slowdown": spread.slowdown,
                "speedup": spread.speedup,
                "faster": spread.faster,
                "moves": {k: {"slower": a, "faster": b} for k, (a, b) in spread.moves().items()},
                "notes": spread.band_notes(scen, res.summary.get("slo_attainment"), "the margin"),
            }
        emit_json(doc)
        return 0
    from engine.cli import run_text  # the calibration bands: loaded only for a printed report

    print(f"{scen.name} (seed {scen.seed})")
    run_text.print_summary(
        res.to_json(),
        res.scenario,
        spread.moves() if spread is not None else None,
        res.extra.get("trace_window"),
    )
    if edge is not None and spread is not None:
        run_text.print_spread(res.summary, scen, edge, spread)
    if args.out:
        print(
            f"wrote requests.{args.format}, timeseries.{args.format}, summary.json, scenario.toml to {args.out}"
        )
    return 0


def cmd_drill(args: argparse.Namespace) -> int:
    """A scenario's faults under each fallback policy, side by side."""
    from engine.explain.drill import (
        behind_lines,
        degrade_note,
        fallback_drill,
        ttft_text,
        unchanged,
        unchanged_text,
    )  # pandas: this command
    from engine.explain.timeline_marks import fault_notes

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
            # a class with no request in the window has no attainment (None): '-', as the other columns
            shown[col] = shown[col].map(lambda v: "-" if v is None or v != v else f"{v:.1%}")
    shown["ttft_p90_ms"] = [ttft_text(r) for r in table.to_dict("records")]
    shown["fallback"] = [
        f"{r['fallback']} (as set)" if r["as_set"] else r["fallback"] for r in table.to_dict("records")
    ]
    shown = shown.drop(columns=["ttft_grows", "shortfall_rps", "as_set"])  # said below the table
    shown["usd_per_request"] = shown["usd_per_request"].map(
        lambda v: "-" if v is None or v != v else f"{v:.6f}"
    )
    print(f"{scen.name} (seed {scen.seed}): each fallback on the same requests")
    print(shown.to_string(index=False))
    print("ttft_p90_ms is over completed requests; failed and rejected ones have none.")
    if table["as_set"].any():
        print("(as set): the scenario's own fallback, what `run` of it simulates.")
    else:  # its own mix (one class spilling, another waiting) is none of the rows
        print(
            "No row is the scenario as set (its own mix of fallback, degrade and each class's overflow): "
            "`run` simulates that."
        )
    for line in behind_lines(table):
        print(line)
    if same := unchanged(table):  # as the Strategy page says it
        print(unchanged_text(same))
    if said := degrade_note(scen, table["fallback"]):
        print(said)
    for note in fault_notes(scen):
        print(note)
    return 0
