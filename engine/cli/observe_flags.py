"""The flags of `replay` and of `calibrate` with benchmark files (the commands: `engine.cli.observe`).

Apart from the commands so that building the parser loads no reader (numpy): `engine.cli.main`.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.cli.common import command, whole
from engine.costmodel.stacks import SERVING_STACKS
from engine.observe.formats import FORMATS


def add_deployment_flags(p: argparse.ArgumentParser, *, hardware_required: bool) -> None:
    """The flags that say what a benchmark file does not: where it ran."""
    p.add_argument(
        "--hardware", required=hardware_required, help="catalog id of the chip the benchmark ran on"
    )
    p.add_argument("--count", type=whole, default=1, help="instances behind the benchmarked endpoint")
    p.add_argument(
        "--stack",
        choices=list(SERVING_STACKS),
        default=None,
        help="serving stack the server ran (default: the one a vLLM or SGLang file names, else vllm)",
    )
    p.add_argument("--tp", type=whole, default=1, help="tensor-parallel chips per instance")
    p.add_argument("--weights", choices=["bf16", "fp8", "fp4", "int4"], default="bf16")
    p.add_argument("--kv", choices=["bf16", "fp8"], default="bf16")
    p.add_argument("--model", default=None, help="catalog model id (default: recognised from the file)")
    p.add_argument(
        "--concurrency", type=whole, default=None, help="the run's concurrency, where the file does not say"
    )
    p.add_argument(
        "--rate", type=float, default=None, help="the run's request rate (req/s), where the file does not say"
    )
    p.add_argument("--earlier", default=None, help="Prometheus: the scrape taken --window-s before FILE")
    p.add_argument("--window-s", type=float, default=None, help="Prometheus: seconds between the two scrapes")


def register(sub: Any) -> None:
    """Add the `replay` command."""
    r = sub.add_parser(
        "replay", help="replay a benchmark result on a stated deployment: measured vs simulated"
    )
    r.add_argument("file", help="a benchmark result: " + "; ".join(FORMATS))
    add_deployment_flags(r, hardware_required=True)
    r.add_argument(
        "--profile-from",
        default=None,
        metavar="TOML",
        help="run the chip with the default profile of this hardware entry (as `fengong calibrate` writes it)",
    )
    r.add_argument("--json", action="store_true", help="one JSON document on stdout")
    r.set_defaults(func=command("engine.cli.observe:cmd_replay"))
