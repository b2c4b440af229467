"""The launch-command export on the command line: `fengong emit SCENARIO --stack S` and `plan --emit S`.

`emit` writes any scenario's deployment for a serving stack (engine.planning.emit); `plan --emit`
writes the plan's chosen deployment after the verdict (or into its JSON document as `emit`).
`--emit-out` (plan) and `--out` (emit) write the text to a file instead of stdout.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cli.common import check_writable_file, load_scenario
from engine.core.errors import ScenarioError

if TYPE_CHECKING:
    from engine.scenario.model import Scenario

STACK_CHOICES = ("vllm", "sglang", "trtllm", "dynamo", "llm-d")
"""The stacks of `engine.planning.emit.STACKS` (a test keeps them equal; the CLI does not import the
planner to build its parser)."""


def add_emit_flags(p: argparse.ArgumentParser) -> None:
    """`plan`'s --emit and --emit-out."""
    p.add_argument(
        "--emit",
        choices=STACK_CHOICES,
        default=None,
        help="after the verdict, the chosen deployment as launch commands (vllm, sglang, trtllm) or a "
        "prefill/decode manifest (dynamo, llm-d; disaggregated choices only)",
    )
    p.add_argument("--emit-out", default=None, help="write the --emit text here instead of stdout")


def check_emit_flags(args: argparse.Namespace) -> None:
    """Refuse --emit-out without --emit, or a destination that cannot be written, before the search."""
    if args.emit_out and not args.emit:
        raise ScenarioError(
            "--emit-out: names where --emit writes; give --emit vllm|sglang|trtllm|dynamo|llm-d"
        )
    if args.emit_out:
        check_writable_file(args.emit_out, "--emit-out")


def written(stack: str) -> str:
    """What an export is, as the README and --help call it: Dynamo's and llm-d's a manifest."""
    return f"{stack} manifest" if stack in ("dynamo", "llm-d") else f"{stack} launch commands"


def emitted_text(scenario: Scenario, stack: str) -> str:
    """The export's text (raises ScenarioError where the stack cannot take the deployment)."""
    from engine.planning import emit_deployment

    return emit_deployment(scenario, stack).text


def plan_emit(best: Scenario | None, args: argparse.Namespace) -> dict[str, Any] | None:
    """The plan's export as a JSON fragment, written to --emit-out when given; None without --emit."""
    if not args.emit:
        return None
    if best is None:
        return {"stack": args.emit, "error": "no deployment met the SLOs: nothing to export"}
    try:
        text = emitted_text(best, args.emit)
    except ScenarioError as exc:  # the plan stands; the export says why it is missing
        return {"stack": args.emit, "error": str(exc)}
    if args.emit_out:
        Path(args.emit_out).write_text(text, encoding="utf-8")
        return {"stack": args.emit, "path": args.emit_out}
    return {"stack": args.emit, "text": text}


def print_plan_emit(frag: dict[str, Any] | None) -> None:
    """The export after the plan's table."""
    if frag is None:
        return
    if "error" in frag:
        print(f"\nemit {frag['stack']}: not written: {frag['error']}")
    elif "path" in frag:
        print(f"wrote the {written(frag['stack'])} to {frag['path']}")
    else:
        print(f"\n# --- {written(frag['stack'])} for the chosen deployment ---")
        print(frag["text"], end="")


def cmd_emit(args: argparse.Namespace) -> int:
    """Write a scenario's deployment as launch commands or a manifest for a serving stack."""
    if args.out:
        check_writable_file(args.out)
    scen = load_scenario(args.scenario, args.set)
    text = emitted_text(scen, args.stack)
    if args.out:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:  # a full disk after the check (a traceback: a hostile review)
            raise ScenarioError(
                f"--out {args.out}: cannot write ({exc.strerror or type(exc).__name__})"
            ) from None
        print(f"wrote the {written(args.stack)} to {args.out}")
    else:
        print(text, end="")
    return 0


def register(sub: Any) -> None:
    """Add the `emit` command to the CLI's subparsers."""
    e = sub.add_parser("emit", help="a scenario's deployment as launch commands for a serving stack")
    e.add_argument("scenario", help="a .toml/.json file or a preset name")
    e.add_argument("--stack", choices=STACK_CHOICES, required=True)
    e.add_argument("--set", action="append", default=[], metavar="PATH=VALUE")
    e.add_argument("--out", default=None, help="write the text here instead of stdout")
    e.set_defaults(func=cmd_emit)
