"""The command line: ``python -m engine <command>``: the parser, and each command loaded when it runs.

Commands: ``catalog`` (list hardware and models), ``roofline`` (prefill and decode on one
instance), ``scenario`` (validate a scenario file, print it resolved), ``run`` (simulate),
``drill`` (a scenario's faults under each fallback policy), ``lifetime`` (portfolios through a
schedule of model changes, `engine.cli.lifetime`), ``import-model`` (a Hugging Face
config.json to a catalog entry), ``validate`` and ``calibrate``, and the planning commands
(`engine.cli.plan_flags`). With ``--json`` stdout holds exactly one JSON document; messages go to
stderr. Bad input exits with status 2 and a message naming the field.

Building the parser imports no command: each subparser names its command as
``"module:function"`` (`command`), imported when that command runs. So ``run --json`` loads the
simulation and nothing of the planner, the calibration tables, the advisor or pandas
(docs/performance.md has the figures; a whole ``run`` process is timed by make bench).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from engine.cli import observe_flags, plan_flags
from engine.cli.common import add_work_limit_flag, command, whole
from engine.cli.links import PAGES as DASHBOARD_PAGES
from engine.cli.links import add_url_flag
from engine.core import bounds
from engine.core.errors import ScenarioError
from engine.costmodel.stacks import SERVING_STACKS

MEASUREMENT_COLUMNS = (
    "id", "model", "hardware", "tp", "weights", "kv", "kind", "prompt_tokens", "output_tokens",
    "batch", "context_tokens", "value", "unit", "source",
)  # fmt: skip
"""`engine.calibration.measurements.MEASUREMENT_COLUMNS`, repeated for --help (a test keeps them equal)."""


def _catalog_flags(sub: Any) -> None:
    """The `catalog` command's flags (the command: `engine.cli.catalog`)."""
    c = sub.add_parser("catalog", help="list hardware (with its calibration) and models")
    c.add_argument(
        "--stack",
        choices=SERVING_STACKS,
        default="vllm",
        help="serving stack whose calibration each chip shows",
    )
    c.add_argument(
        "--moe",
        action="store_true",
        help="each chip's calibration and bands for a Mixture-of-Experts model (default: a dense model's)",
    )
    c.add_argument("--json", action="store_true", help="one JSON document on stdout")
    c.set_defaults(func=command("engine.cli.catalog:cmd_catalog"))


def _roofline_flags(sub: Any) -> None:
    """The `roofline` command's flags."""
    r = sub.add_parser("roofline", help="prefill and decode of a model on one instance")
    r.add_argument("--model", required=True)
    r.add_argument("--hardware", required=True)
    r.add_argument("--tp", type=whole, default=1)
    r.add_argument("--pp", type=whole, default=1)
    r.add_argument("--weights", choices=["bf16", "fp8", "fp4", "int4"], default="bf16")
    r.add_argument("--kv", choices=["bf16", "fp8"], default="bf16")
    r.add_argument(
        "--stack", choices=list(SERVING_STACKS), default="vllm",
        help="serving stack: the chip's profile under it, by the rules of docs/calibration.md",
    )  # fmt: skip
    r.add_argument("--profile", default=None, help="a named calibration profile of the chip instead")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=command("engine.cli.entries:cmd_roofline"))


def _scenario_flags(sub: Any) -> None:
    """The `scenario` command's flags."""
    s = sub.add_parser(
        "scenario", help="validate a scenario file or preset and print it; --list: the presets"
    )
    s.add_argument("scenario", nargs="?", help="a .toml/.json file or a preset name")
    s.add_argument("--list", action="store_true", help="list the presets, each with its name, and exit")
    s.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    s.add_argument("--json", action="store_true")
    s.add_argument(
        "--link",
        nargs="?",
        const="results",
        default=None,
        choices=DASHBOARD_PAGES,
        metavar="PAGE",
        help="print the dashboard's address that opens this scenario (on PAGE: "
        + ", ".join(DASHBOARD_PAGES)
        + "; default results) instead of the scenario",
    )
    add_url_flag(s)
    s.set_defaults(func=command("engine.cli.run:cmd_scenario"))


def _validate_flags(sub: Any) -> None:
    """The `validate` command's flags."""
    v = sub.add_parser(
        "validate", help="the cost model against every reference measurement, with cross-validation"
    )
    v.add_argument("--json", action="store_true")
    v.add_argument("--markdown", action="store_true", help="print a markdown table")
    v.add_argument(
        "--no-cache",
        action="store_true",
        help="compute the report and the reruns again, whatever the cache keeps (FENGONG_CACHE_DIR)",
    )
    v.set_defaults(func=command("engine.cli.validate:cmd_validate"))


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
    observe_flags.add_deployment_flags(k, hardware_required=False)
    k.add_argument("--profile", default="mine", help="name of the fitted profile (default %(default)s)")
    k.add_argument("--new-id", default=None, help="catalog id of the new entry (default <chip>-<profile>)")
    k.add_argument("--out", default=None, help="write the new catalog entry here (else stdout)")
    k.add_argument("--reference", action="store_true", help="refit the shipped profiles from data/reference")
    k.add_argument(
        "--write", action="store_true",
        help="with --reference: write the profiles into presets/hardware and the expected errors into presets/calibration.toml",
    )  # fmt: skip
    k.set_defaults(func=command("engine.cli.entries:cmd_calibrate"))


def _run_flags(sub: Any) -> None:
    """The `run` command's flags."""
    u = sub.add_parser("run", help="simulate a scenario file or preset")
    u.add_argument("scenario", help="a .toml/.json file or a preset name")
    u.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    u.add_argument("--json", action="store_true", help="one JSON document on stdout")
    u.add_argument("--out", default=None, help="directory for requests/timeseries tables and the summary")
    u.add_argument(
        "--format",
        choices=["csv", "parquet"],
        default=None,
        help="the tables --out writes (default csv); refused without --out, which it would not reach",
    )
    u.add_argument(
        "--replications",
        type=whole,
        default=1,
        help=f"run N seeds (1 to {bounds.MAX_REPLICATIONS}) and report 95%% intervals; with --out, each "
        "seed's files under seed-<N>/ and the intervals in replications.json",
    )
    u.add_argument(
        "--margin",
        action="store_true",
        help="also rerun the same requests with every chip as slow as the pessimistic edge of its "
        "throughput band (docs/planner.md, Margin): does the verdict hold?",
    )
    u.add_argument(
        "--bands",
        action="store_true",
        help="with --json, each band the text prints beside a headline figure, as numbers (`bands`; given "
        "with --margin anyway): loads the calibration tables a plain --json run skips",
    )
    add_work_limit_flag(u)
    u.set_defaults(func=command("engine.cli.run:cmd_run"))


def _drill_flags(sub: Any) -> None:
    """The `drill` command's flags."""
    d = sub.add_parser("drill", help="a scenario with faults under each fallback policy, side by side")
    d.add_argument("scenario", help="a .toml/.json file or a preset name (with at least one fault)")
    d.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    d.add_argument("--json", action="store_true", help="one JSON document on stdout")
    add_work_limit_flag(d)
    d.set_defaults(func=command("engine.cli.run:cmd_drill"))


def _compare_flags(sub: Any) -> None:
    """The `compare` command's flags (the command: `engine.cli.compare`)."""
    c = sub.add_parser("compare", help="two scenarios side by side on the same requests, figure by figure")
    c.add_argument("scenario", help="A: a .toml/.json file or a preset name")
    c.add_argument(
        "other",
        nargs="?",
        default=None,
        help="B: a .toml/.json file or a preset name (default, as the Compare page: A's counterpart preset, on "
        "A's workload, window and seed where --set changed them, else A served the other way)",
    )
    c.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    c.add_argument(
        "--set-b", action="append", default=[], metavar="PATH=VALUE", help="override one field of B"
    )
    c.add_argument(
        "--other-mode",
        action="store_true",
        help="B is A served the other way (colocated or disaggregated, on the same chips)",
    )
    c.add_argument(
        "--margin",
        action="store_true",
        help="bands from each side's spread: both rerun with every chip at either edge of its throughput band",
    )
    c.add_argument("--json", action="store_true", help="one JSON document on stdout")
    add_work_limit_flag(c)
    c.set_defaults(func=command("engine.cli.compare:cmd_compare"))


def _import_model_flags(sub: Any) -> None:
    """The `import-model` command's flags."""
    m = sub.add_parser("import-model", help="a Hugging Face config.json to a model catalog entry")
    m.add_argument("config", help="path to a local config.json")
    m.add_argument("--id", required=True, help="catalog id, e.g. my-model-7b")
    m.add_argument("--name", default=None)
    m.add_argument("--out", default=None, help="write the TOML here (else stdout)")
    m.set_defaults(func=command("engine.cli.entries:cmd_import_model"))


def _lifetime_flags(sub: Any) -> None:
    """The `lifetime` command's flags (the command: `engine.cli.lifetime`)."""
    t = sub.add_parser(
        "lifetime",
        help="portfolios re-sized as the served model changes over months: cost and capital written off",
    )
    t.add_argument("lifetime", help="a lifetime preset's name (presets/lifetimes) or a .toml file")
    t.add_argument(
        "--stranded",
        choices=["write-off", "keep"],
        default=None,
        help="a dedicated fleet that serves nothing: written off, or kept idle (default: the lifetime's)",
    )
    t.add_argument("--json", action="store_true", help="one JSON document on stdout")
    t.set_defaults(func=command("engine.cli.lifetime:cmd_lifetime"))


HELP = {
    "set": "override one field of the scenario, e.g. workload.arrival.rate_rps=20 or deployment.pools[0].tp=4 "
    "(repeatable; PATH=null unsets an optional value, PATH=[] empties a list: README, 'Command line')",
    "json": "print one JSON document instead of the text report",
    "no_progress": "no progress bar on stderr",
    "model": "a model id (fengong catalog lists them)",
    "hardware": "a chip id (fengong catalog lists them)",
    "tp": "tensor-parallel chips per instance (default %(default)s)",
    "pp": "pipeline stages per instance (default %(default)s)",
    "weights": "the weights' precision (default %(default)s)",
    "kv": "the KV cache's precision (default %(default)s)",
    "max_simulations": "the most simulations the search may run (default %(default)s)",
    "budget_usd_per_hour": "the most a deployment may cost per hour, in $ (default: no budget)",
    "vary": "a field and the values it takes, PATH=V1,V2,... (repeatable: the grid is their product)",
    "model_change_months": "months between model changes, for whether a phase deserves a chip of its own "
    "(default %(default)s)",
    "stack": "the serving stack whose launch commands to write",
    "name": "the model's display name (default: the config's)",
}
"""Help for the flags defined without any, by destination: one table, so no flag reads bare in --help."""


class _Version(argparse.Action):
    """`--version`: the engine's version (the one every JSON output carries), imported only when asked."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from engine.serving.run import ENGINE_VERSION

        print(f"fengong {ENGINE_VERSION}")
        parser.exit()


def _fill_help(p: argparse.ArgumentParser) -> None:
    """Every subcommand's flag without help takes `HELP`'s line for its destination."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sp in action.choices.values():
                for a in sp._actions:
                    if a.help is None and a.option_strings:
                        a.help = HELP.get(a.dest)


def parser() -> argparse.ArgumentParser:
    """The argument parser of the CLI."""
    p = argparse.ArgumentParser(prog="fengong", description="Fengong: LLM-serving lab.")
    p.add_argument("--version", action=_Version, nargs=0, help="the engine's version, and exit")
    sub = p.add_subparsers(dest="command", required=True)

    for add in (
        _catalog_flags,
        observe_flags.register,
        _roofline_flags,
        _scenario_flags,
        _validate_flags,
        _calibrate_flags,
        _run_flags,
        _drill_flags,
        _compare_flags,
        _import_model_flags,
        _lifetime_flags,
    ):
        add(sub)
    plan_flags.register(sub)
    _fill_help(p)
    return p


FIELD_FLAGS = {
    "space.hardware": "--hardware",
    "space.modes": "--modes",
    "space.tp": "--tp",
    "space.pp": "--pp",
    "space.max_simulations": "--max-simulations",
    "space.budget_usd_per_hour": "--budget-usd-per-hour",
    "space.power_budget_kw": "--power-budget-kw",
    "space.duration_s": "--duration-s",
    "space.finalists": "--finalists",
    "max_simulations": "--max-simulations",
    "model_change_months": "--model-change-months",
    "seeds": "--seeds",
    "attainment": "--attainment",
}
"""The engine's names for what a flag sets, as its refusals start them ('space.hardware: ...'), and the
flag: a user of the CLI typed `--hardware h999`, not `space.hardware` (a review)."""


def flag_message(message: str, args: argparse.Namespace) -> str:
    """`message` with its leading field named as the flag that set it, where this command has that flag."""
    field, sep, rest = message.partition(":")
    flag = FIELD_FLAGS.get(field)
    if not sep or flag is None or not hasattr(args, flag.lstrip("-").replace("-", "_")):
        return message
    return f"{flag}:{rest}"


def _admitted_rate(exc: Any) -> float | None:
    """The highest rate the work bound admits for the refused scenario's window, where its rate is what
    the refusal can be lowered by (a generated open loop, above it); None otherwise. The requests-per-run
    check's own hint ('at most about 19 req/s') let 19 req/s through to this bound, which refused it."""
    sc = exc.scenario
    if sc is None:
        return None
    from engine.explain.rate_scale import runnable_rate_rps

    rate = runnable_rate_rps(sc)
    return rate if rate is not None and rate < sc.workload.arrival.rate_rps else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ScenarioError as exc:
        print(f"error: {flag_message(str(exc), args)}", file=sys.stderr)
        from engine.serving.work_bound import WorkBoundError  # loaded already when one was raised

        if isinstance(exc, WorkBoundError):
            if (rate := _admitted_rate(exc)) is not None:
                print(f"(it admits about {rate:,.3g} req/s over this window)", file=sys.stderr)
            print("(a trusted local run may pass --no-work-limit; see docs/bounds.md)", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly
        sys.stderr.close()
        return 0
