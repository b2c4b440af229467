"""A scenario's name once it is edited: derived from what it runs, and from where it started.

A preset's name describes the preset ("Chat disaggregated: H100 prefill, H100 decode"). Once a user
swaps the model or a pool's chip, that name is wrong everywhere it is shown: the dashboard's header,
the CLI's output, the metadata of exported files and the HTML report. `named` gives an edited
scenario a name made of its model and its pools, and the preset (or file) it came from:
``deepseek-r1 on 16 h800 prefill + 16 h100-sxm decode, edited from deepseek-v3-disaggregated``.
A scenario equal to its starting point keeps its name, and so does one whose name was itself set.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.scenario.model import DESCRIPTION_MAX_CHARS, NAME_MAX_CHARS, Pool, Scenario


def _pool_texts(pools: Sequence[Pool]) -> list[str]:
    """``[up to ]<chips> <chip>[ <role>][ at the edge]`` per kind of pool, in order, chips of a kind
    summed; an autoscaled pool's count is its most (it read '16 h100-sxm prefill' for a pool scaling
    between one and eight instances of two chips: a review)."""
    roles = any(p.role != "mixed" for p in pools)
    chips: dict[tuple[str, str, str, str], int] = {}
    for p in pools:
        kind = (
            "up to " if p.autoscale is not None else "",
            p.hardware,
            p.role if roles and p.role != "mixed" else "",
            " at the edge" if p.tier == "edge" else "",
        )
        chips[kind] = chips.get(kind, 0) + p.chips
    return [
        f"{most}{n} {hw}{' ' + role if role else ''}{edge}" for (most, hw, role, edge), n in chips.items()
    ]


EDITED_FROM = ", edited from "
"""What `derived_name` writes before the source an edited scenario came from (`edited_from` reads it back)."""


def edited_from(name: str) -> str | None:
    """The source a derived name says its scenario was edited from (`derived_name`), else None."""
    return name.rsplit(EDITED_FROM, 1)[-1] if EDITED_FROM in name else None


def derived_name(scenario: Scenario, source: str) -> str:
    """``<model> on <chips> <chip> [role] + ..., edited from <source>``, at most `NAME_MAX_CHARS` long."""
    pools = scenario.deployment.pools
    tail = f"{EDITED_FROM}{source}"
    full = f"{scenario.model.id} on {' + '.join(_pool_texts(pools))}{tail}"
    if len(full) <= NAME_MAX_CHARS:
        return full
    chips = sum(p.chips for p in pools)
    kinds = sorted({p.hardware for p in pools})
    short = f"{scenario.model.id} on {chips} chips ({', '.join(kinds)}){tail}"
    if len(short) <= NAME_MAX_CHARS:
        return short
    return short[: NAME_MAX_CHARS - 1] + "…"


def named(scenario: Scenario, base: Scenario, source: str) -> Scenario:
    """`scenario` under the name it should show: its own where it equals `base` or was renamed, else derived.

    `base` is the scenario it was edited from (a preset, a file) and `source` what to call that
    (the preset's id, the file's stem).
    """
    if scenario.name != base.name or scenario == base:
        return scenario
    update: dict[str, str] = {"name": derived_name(scenario, source)}
    # the words were written for `base`: an export of the edit carried "the same twelve H100s ... three
    # prefill and three decode instances" and the preset's 16 req/s lesson beside 40 req/s on B200s (a
    # walkthrough). The description says whose it is; the lesson, whose figures are the base's own
    # runs, is not carried (the dashboard still shows the preset's, titled as the preset's).
    if scenario.description == base.description:
        # where the chips, layout or model moved, the base's words describe another deployment: said so (a
        # report of 4 + 2 B200s carried 'the same twelve H100s ... three prefill and three decode' as the
        # preset's description, read against its title: a browser review)
        other = scenario.deployment != base.deployment or scenario.model != base.model
        whose = (
            f"{source}'s own description, of its deployment, not this one's"
            if other
            else f"{source}'s description"
        )
        said = f"Edited from {source}" + (f"; {whose}: {base.description}" if base.description else ".")
        update["description"] = (
            said if len(said) <= DESCRIPTION_MAX_CHARS else said[: DESCRIPTION_MAX_CHARS - 1] + "…"
        )
    if scenario.lesson == base.lesson:
        update["lesson"] = ""
    return scenario.model_copy(update=update)
