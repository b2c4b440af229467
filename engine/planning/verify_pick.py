"""A group's pick verified over its full-length run: moved up one instance of the pool a failure
blames, at most `VERIFY_TRIES` times, as modelled and (a would-be winner, risk-aware) with every chip
at its band's pessimistic edge (`engine.planning.verdict`, docs/planner.md, "Verified")."""

from __future__ import annotations

from typing import Any

from engine.planning.candidates import split_label
from engine.planning.plan_work import VERIFY_TRIES
from engine.planning.portfolio import Portfolio
from engine.planning.search import Search, run_row
from engine.planning.sizing import Shape
from engine.planning.verdict_bands import LIMITS
from engine.serving.run import simulate
from engine.serving.speed_limits import limits

Rows = dict[str, Any]


def _up(shape: Shape | Portfolio, counts: tuple[int, ...], row: dict[str, Any]) -> tuple[int, ...] | None:
    """One more instance of the pool a failed full-length run blames; None for a portfolio."""
    if isinstance(shape, Portfolio):
        return None
    if shape.mode == "colocated":
        return (counts[0] + 1, 0)
    n_p, n_d = counts
    return (n_p + (not row["ttft_ok"] or row["tpot_ok"]), n_d + (not row["tpot_ok"] or row["ttft_ok"]))


def _step(
    search: Search, shape: Shape | Portfolio, counts: tuple[int, ...], failed: Rows, edge: Search | None
) -> tuple[int, ...] | None:
    """The counts a failed full-length run moves a pick to (`_up`). Where it blames neither pool alone (each
    phase within its target, the attainment missed jointly), one more of either pool may do: the cheaper of
    the two that passes (over the full length as modelled, and at the `edge` where that run failed there)
    before one more of each. Under --rule attainment a pick moved from 3P:1D to 4P:2D at $19.92/h where 4P:1D,
    $14.94/h, held (a review)."""
    nxt = _up(shape, counts, failed)
    # (a colocated pick has one pool to grow; a portfolio none; a phase that misses blames its own pool)
    if nxt is None or isinstance(shape, Portfolio) or shape.mode == "colocated":
        return nxt
    if not (failed["ttft_ok"] and failed["tpot_ok"]):
        return nxt
    singles = sorted(
        ((counts[0] + 1, counts[1]), (counts[0], counts[1] + 1)), key=lambda c: search.cost(shape, c)
    )
    for c in singles:
        if max(c) > search.space.max_instances_per_pool or not search.affordable(shape, c):
            continue
        if full_run(search, shape, c)["passes"] and (
            edge is None or full_run(search, shape, c, edge)["passes"]
        ):
            return c
    return nxt


def how_moved(moved: int, edged: int) -> str:
    """How the full-length runs that moved a pick were made: 'with its chips at the bands'
    pessimistic edge ' (all of them), '(1 of them with ...) ' or '' (all as modelled)."""
    edge = "with its chips at the bands' pessimistic edge "
    return edge if edged == moved else f"({edged} of them {edge.rstrip()}) " if edged else ""


def full_run(
    search: Search, shape: Shape | Portfolio, counts: tuple[int, ...], edge: Search | None = None
) -> dict[str, Any]:
    """A deployment's run over the scenario's own window and seed, as modelled or (`edge`, a slowed
    search) with every chip at its band's pessimistic edge; each simulated once per plan."""
    key = (shape, counts, edge is not None)
    if key not in search.full_rows:
        slowdown = None if edge is None else dict(edge.slowdown)
        res = simulate(
            search.deploy(search.full, shape, counts),
            search.cat,
            check_work=search.check_work,
            slowdown=slowdown,
        )
        row = {**run_row(res, shape, counts, search.rule, search.attainment), **search.trust(shape)}
        row[LIMITS] = limits(res.summary, res.scenario)  # where its load bounds its bands (`bands`)
        search.full_rows[key] = search.priced(row)
    return search.full_rows[key]


def verified(
    search: Search,
    slow: Search | None,
    g: str,
    shape: Shape | Portfolio,
    counts: tuple[int, ...],
    verify: bool,
    notes: list[str],
    at_edge: bool = False,
) -> tuple[Rows | None, Rows | None, tuple[int, ...], int, int, tuple[int, ...]]:
    """(the quoted full-length run, the one at the edge, the counts they ran, moves, moves made for the
    edge, the counts before any move); the runs None where `verify` is off (or the edge not checked)."""
    quoted: dict[str, Any] | None = None
    edge: dict[str, Any] | None = None  # the pick's full-length run at the bands' pessimistic edge
    moved = edged = 0
    start = counts  # the pick before any move, which the note names (it said only where it went)
    modelled: tuple[tuple[int, ...], int, int] | None = None  # the first counts whose full run passed
    for i in range(VERIFY_TRIES + 1 if verify else 1):
        if verify:
            quoted = full_run(search, shape, counts)
            modelled = modelled or ((counts, moved, edged) if quoted["passes"] else None)
            at = at_edge and quoted["passes"] and slow is not None
            edge = full_run(search, shape, counts, slow) if at else None
            failed = (
                quoted if not quoted["passes"] else edge if edge is not None and not edge["passes"] else None
            )
            if failed is None or i == VERIFY_TRIES:  # (a last move, never run, was quoted as the pick)
                break
            nxt = _step(search, shape, counts, failed, slow if failed is edge else None)
            if (
                quoted["over_budget"]  # more instances bill more
                or nxt is None
                or max(nxt) > search.space.max_instances_per_pool
                or not search.affordable(shape, nxt)
            ):
                break
            counts, moved, edged = nxt, moved + 1, edged + (failed is edge)
        else:
            break
    if edge is not None and not edge["passes"] and modelled is not None and modelled[0] != counts:
        # moves for the edge that never reached a pick holding there: the cheapest that passed as modelled
        # (a pick moved from 1P:1D to 2P:4D, +250%, still missed at the edge and read as the choice)
        notes.append(
            f"{g}: moving the pick up to {split_label(shape, counts)} did not make it hold with every chip "
            f"at the bands' pessimistic edge; it stays {split_label(shape, modelled[0])}, as modelled"
        )
        counts, moved, edged = modelled
        quoted, edge = full_run(search, shape, counts), full_run(search, shape, counts, slow)
    return quoted, edge, counts, moved, edged, start
