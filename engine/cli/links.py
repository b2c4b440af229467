"""Dashboard addresses from the command line: ``scenario --link`` and ``plan --link``.

The address is the dashboard's own share link (`engine.scenario.codec.to_link`: the preset and the
fields changed from it; a scenario from a file is written against the default preset), on the
page asked for, with the Planner's form for a plan (`engine.planning.plan_link`). It is checked
the way the dashboard will check it before it is printed: decoded again with the link's limits,
naming only the data files an untrusted link may (shipped or uploaded), and for a plan, every
setting one the Planner's form offers; otherwise the error says what the dashboard would refuse.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from engine.cli.common import is_file_ref
from engine.core import ScenarioError

if TYPE_CHECKING:
    from engine.scenario.model import Scenario

DEFAULT_URL = "http://localhost:8501/"
"""Where `make app` serves the dashboard."""
PAGES = ("results", "workload", "hardware", "strategy", "slo", "compare", "planner", "about")
"""The dashboard's pages by their address (Results is the root)."""


def add_url_flag(parser: argparse.ArgumentParser) -> None:
    """--url: the dashboard's address."""
    parser.add_argument(
        "--url", default=None, help=f"the dashboard's address, for --link (default {DEFAULT_URL})"
    )


def check_url_flag(args: argparse.Namespace) -> None:
    """--url only with --link: alone it changed nothing, unsaid (a review)."""
    if getattr(args, "url", None) is not None and not getattr(args, "link", None):
        raise ScenarioError("--url: it sets the address --link prints; give --link too")


def add_link_flags(parser: argparse.ArgumentParser) -> None:
    """`plan`'s --link and --url."""
    parser.add_argument(
        "--link",
        action="store_true",
        help="also print the dashboard's Planner address with this plan's form filled in (Plan makes it there)",
    )
    add_url_flag(parser)


def address(
    scen: Scenario, ref: str, page: str = "results", url: str | None = DEFAULT_URL, **extra: str
) -> str:
    """The address that opens `scen` (loaded from `ref`, a preset name or a file) on `page` of the
    dashboard at `url`; ScenarioError when the dashboard would refuse it."""
    from engine.scenario import codec  # (not at the CLI's start: `main` imports this module)

    url = DEFAULT_URL if url is None else url
    if not url.startswith(("http://", "https://")):
        raise ScenarioError(f"--url: {url!r} is not an http:// or https:// address")
    if "?" in url or "#" in url:  # the link's own query would follow it
        raise ScenarioError(f"--url: {url!r} has a query or a fragment; give the dashboard's address alone")
    # a file is kept relative to the preset it is closest to, as the dashboard's file opener keeps it (every
    # file's link named chat-disaggregated: its exports' names and Reset went there; a round-trip review)
    preset = ref if not is_file_ref(ref) and ref in codec.preset_names() else codec.closest_preset(scen)
    params = codec.to_link(scen, preset)
    if (
        is_file_ref(ref)
        and page in codec.SEEDS_PAGES
        and "seeds" not in extra
        and (n := codec.seeds_stated(ref))
    ):
        extra = {**extra, "seeds": str(n)}  # the page's mean of several seeds, as the file's first line says
    try:
        codec.check_untrusted(codec.from_link(params))  # as the dashboard decodes and checks it
    except ScenarioError as exc:
        raise ScenarioError(f"--link: the dashboard would refuse this scenario: {exc}") from exc
    path = "" if page == "results" else page
    return f"{url.rstrip('/')}/{path}?{urlencode({**params, **extra})}"


def plan_address(args: argparse.Namespace, scen: Scenario, space: Any, attainment: float) -> str:
    """The Planner's address with the form of the plan a `plan` command's flags ask for filled in;
    ScenarioError naming the flag the Planner's form cannot take."""
    from engine.planning.candidates import SearchSpace
    from engine.planning.plan_link import decode, encode
    from engine.scenario.resolve import scenario_catalog

    for flag, given, default in (
        ("--ep-tp", space.ep_tp, SearchSpace().ep_tp),
        ("--finalists", space.finalists, SearchSpace().finalists),
        ("--no-verify", args.no_verify, False),
    ):
        if given != default:
            raise ScenarioError(f"--link: the Planner's form has no {flag} (it plans with {default!r})")
    fields = _plan_fields(args, space, attainment)
    cat = scenario_catalog(scen)
    if not fields["hw"]:  # --hardware's default: the scenario's chips
        fields["hw"] = list(dict.fromkeys(p.hardware for p in scen.deployment.pools))
    if cat.models[scen.model.id].moe is None:
        fields["ep"] = []  # a dense model plans no expert parallelism (the form leaves the field empty)
    text = encode(fields)
    try:
        decode(text, cat.hardware)
    except ScenarioError as exc:
        raise ScenarioError(f"--link: the Planner's form does not offer {exc}") from exc
    return address(scen, args.scenario, "planner", args.url, plan=text)


def _plan_fields(args: argparse.Namespace, space: Any, attainment: float) -> dict[str, Any]:
    """The Planner form's values for a `plan` command's flags (`engine.planning.plan_link.FIELDS`)."""
    return {
        "rps": float(args.target_rps),
        "hw": list(space.hardware),
        "modes": list(space.modes),
        "tp": list(space.tp),
        "pp": list(space.pp),
        "ep": list(space.ep),
        "budget": float(space.budget_usd_per_hour or 0.0),
        "power": float(space.power_budget_kw or 0.0),
        "window": float(space.duration_s),
        "sims": int(space.max_simulations),
        "rule": args.rule,
        "within": attainment * 100.0,
        "mixed": bool(space.mixed_hardware),
        "portfolio": bool(space.portfolio),
        "by": args.objective,
        "risk": not args.nominal,
        "margin": not args.no_margin,
    }
