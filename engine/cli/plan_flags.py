"""The flags of the planning commands (plan, capacity, sweep, advise), each command's own builder.

`register(sub)` adds them to the CLI's subparsers (engine.cli.main calls it); what each command does
is `engine.cli.plan`, imported when one of them runs (`engine.cli.common.command`).
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.cli import emit as emit_cli
from engine.cli.common import add_work_limit_flag, command, whole
from engine.cli.links import add_link_flags
from engine.core import bounds
from engine.core.errors import ScenarioError

RULE_CHOICES = ("percentile", "attainment")
"""What --rule accepts (engine.planning.rules.RULES; a test keeps them equal)."""
ATTAINMENT_DEFAULT = 0.9
"""Default of --attainment (engine.planning.rules.DEFAULT_ATTAINMENT; a test keeps them equal)."""
DEFAULT_TP = "1,2,4,8"
"""Default of --tp (`engine.cli.plan` keeps it to the degrees a custom model takes)."""
STABLE_MONTHS_DEFAULT = 12.0
"""Default of --model-change-months (engine.explain.advisor.STABLE_MONTHS; a test keeps them equal)."""
OBJECTIVE_CHOICES = ("usd_per_hour", "usd_per_million_tokens", "chips", "power")
"""What --objective accepts (engine.planning.objective.OBJECTIVES; a test keeps them equal)."""

POWER_BUDGET_HELP = (
    "the most the deployment's chips may draw, each at its TDP (kW); candidates over it are not tried"
)
"""Help of plan's --power-budget-kw (docs/planner.md, Power budget)."""


def _add_rule_flags(parser: argparse.ArgumentParser) -> None:
    """--rule and --attainment: what passing means (engine.planning.rules.run_passes)."""
    parser.add_argument(
        "--rule",
        choices=RULE_CHOICES,
        default="percentile",
        help="percentile: every class within target at its SLO percentile (MLPerf); attainment: at "
        "least --attainment of requests within their SLO (DistServe)",
    )
    parser.add_argument(
        "--attainment",
        type=float,
        default=None,
        help=f"share of requests that must meet their SLO under --rule attainment, in (0, 1] "
        f"(default {ATTAINMENT_DEFAULT:g})",
    )


def _plan(sub: Any) -> None:
    """The `plan` command's flags."""
    p = sub.add_parser("plan", help="the cheapest deployment that meets every SLO at a target load")
    p.add_argument("scenario", help="a .toml/.json file or a preset name")
    p.add_argument("--target-rps", type=float, required=True, help="the load to plan for (requests/s)")
    p.add_argument(
        "--hardware", default="", help="chips allowed, comma-separated, or 'all' (default: the scenario's)"
    )
    p.add_argument(
        "--modes", default="colocated,disaggregated", help="deployment modes to consider (%(default)s)"
    )
    p.add_argument("--tp", default=DEFAULT_TP, help="tensor-parallel degrees to consider (%(default)s)")
    p.add_argument(
        "--pp", default="1,2", help="pipeline stages to consider (above 1: with each --tp of 4 or more)"
    )
    p.add_argument(
        "--ep",
        default=None,
        help="MoE models: expert-parallel groups (chips per stage) to consider, as --ep-tp x dp chips; "
        "empty: none (default 8,16)",
    )
    p.add_argument(
        "--ep-tp",
        default=None,
        help="MoE models: tensor-parallel chips per data-parallel rank of an --ep group (default 1,2)",
    )
    p.add_argument("--no-mixed-hardware", action="store_true", help="prefill and decode on the same chip")
    p.add_argument("--budget-usd-per-hour", type=float, default=None)
    p.add_argument("--power-budget-kw", type=float, default=None, help=POWER_BUDGET_HELP)
    p.add_argument("--duration-s", type=float, default=120.0, help="planning window of a run (%(default)g s)")
    p.add_argument("--max-simulations", type=whole, default=120)
    p.add_argument(
        "--finalists", type=whole, default=3, help="shapes searched to a passing point for the frontier"
    )
    p.add_argument(
        "--objective",
        choices=OBJECTIVE_CHOICES,
        default="usd_per_hour",
        help="what the choice minimises: cost per hour at the target load (default), cost per million output "
        "tokens, chips, or mean power",
    )
    p.add_argument(
        "--nominal",
        action="store_true",
        help="choose the cheapest as modelled; by default the choice must also pass with every chip at the "
        "pessimistic edge of its calibrated band (docs/planner.md, Verdict)",
    )
    p.add_argument(
        "--no-verify",
        action="store_true",
        help="quote each chip's pick from its planning run instead of rerunning it at the scenario's own "
        "length and seed",
    )
    p.add_argument(
        "--portfolio",
        action="store_true",
        help="with two or more classes, also try a decode pool of its own chip per class (docs/planner.md)",
    )
    _add_rule_flags(p)
    p.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    p.add_argument("--out", default=None, help="write the chosen scenario (TOML) here")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "--no-margin",
        action="store_true",
        help="skip the margin report (the choice rerun, and the search repeated, with every chip as slow as its "
        "throughput band's pessimistic edge); the choice stays risk-aware unless --nominal; a one-class "
        "choice's latency bands, widened to hold the margin's reruns, can be narrower without (docs/planner.md)",
    )
    emit_cli.add_emit_flags(p)
    p.add_argument(
        "--dask",
        default=None,
        metavar="tcp://HOST:PORT",
        help="run the candidates' simulations on a Dask distributed scheduler (the same plan as locally)",
    )
    add_work_limit_flag(p, "; for plan also the bound on the plan's total work (docs/planner.md)")
    add_link_flags(p)
    p.set_defaults(func=command("engine.cli.plan:cmd_plan"))


def _capacity(sub: Any) -> None:
    """The `capacity` command's flags."""
    c = sub.add_parser("capacity", help="the highest load at which every class passes its SLO")
    c.add_argument("scenario", help="a .toml/.json file or a preset name")
    c.add_argument("--max-simulations", type=whole, default=10)
    c.add_argument(
        "--duration-s", type=float, default=None, help="window of each run (default: the scenario's)"
    )
    c.add_argument(
        "--seeds",
        type=whole,
        default=1,
        help=f"a rate passes only if each of N seeds passes (the scenario's seed and the next; 1 to "
        f"{bounds.MAX_REPLICATIONS}): one seed's capacity passes or fails near it by the draw of its requests",
    )
    _add_rule_flags(c)
    c.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    c.add_argument("--json", action="store_true")
    c.add_argument("--no-progress", action="store_true")
    c.add_argument(
        "--no-margin",
        action="store_true",
        help="skip the margin, the same search again with every chip at the slow, and at the fast, edge of "
        "its throughput band (three searches with it, one without), and with it the capacity's band",
    )
    add_work_limit_flag(c)
    c.set_defaults(func=command("engine.cli.capacity:cmd_capacity"))


def _sweep(sub: Any) -> None:
    """The `sweep` command's flags."""
    w = sub.add_parser("sweep", help="run a grid of field values and seeds in parallel")
    w.add_argument("scenario", help="a .toml/.json file or a preset name")
    w.add_argument("--vary", action="append", default=[], required=True, metavar="PATH=V1,V2,...")
    w.add_argument("--seeds", type=whole, default=1, help="seeds per grid point (seed, seed+1, ...)")
    w.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    w.add_argument("--out", required=True, help="results table: .parquet (default) or .csv")
    w.add_argument(
        "--workers", type=whole, default=None, help="local processes (default: all cores; 1: in-process)"
    )
    w.add_argument(
        "--dask", default=None, metavar="tcp://HOST:PORT", help="run on a Dask distributed scheduler"
    )
    w.add_argument("--no-progress", action="store_true")
    add_work_limit_flag(w)
    w.set_defaults(func=command("engine.cli.plan:cmd_sweep"))


def _advise(sub: Any) -> None:
    """The `advise` command's flags."""
    a = sub.add_parser("advise", help="roofline positions, findings from a run, specialisation test")
    a.add_argument("scenario", help="a .toml/.json file or a preset name")
    a.add_argument("--model-change-months", type=float, default=STABLE_MONTHS_DEFAULT)
    a.add_argument("--hardware", default="", help="chips shown in the roofline table (default: all)")
    a.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    a.add_argument("--json", action="store_true")
    a.add_argument(
        "--no-margin",
        action="store_true",
        help="skip the rerun with every chip at the pessimistic edge of its throughput band, which makes a "
        "class's pass that rests on chips as fast as modelled a warning",
    )
    add_work_limit_flag(a)
    a.set_defaults(func=command("engine.cli.advise:cmd_advise"))


def register(sub: Any) -> None:
    """Add the plan, capacity, sweep, advise and emit commands to the CLI's subparsers."""
    for add in (_plan, _capacity, _sweep, _advise, emit_cli.register):
        add(sub)


def attainment_of(args: argparse.Namespace) -> float:
    """--attainment, or its default; refused with --rule percentile, where it would mean nothing."""
    if args.attainment is None:
        return ATTAINMENT_DEFAULT
    if args.rule != "attainment":
        raise ScenarioError(f"--attainment: applies to --rule attainment only (got --rule {args.rule})")
    return float(args.attainment)
