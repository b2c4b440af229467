"""How a failed full-length run moves a verified pick (`engine.planning.verify_pick._step`): one more of the
pool it blames, and where it blames neither alone (an attainment missed jointly), the cheaper single step that
passes before one more of each. Under --rule attainment a pick moved from 3P:1D to 4P:2D at $19.92/h where
4P:1D at $14.94/h held (a review)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from engine.planning.sizing import Kind, Shape
from engine.planning.verify_pick import _step

SHAPE = Shape("disaggregated", Kind("h100-sxm", 1), Kind("h100-sxm", 2))
EDGE = SimpleNamespace(slowdown={"h100-sxm": 0.32})


def _search(passing: dict[tuple[tuple[int, int], bool], bool]) -> Any:
    """A search whose full-length runs are known (`full_run` reads them from `full_rows`): counts and
    whether at the edge, to passing or not; a prefill instance costs 2.49 an hour, a decode one 4.98."""
    rows = {(SHAPE, c, at): {"passes": ok} for (c, at), ok in passing.items()}
    return SimpleNamespace(
        full_rows=rows,
        cost=lambda shape, c: 2.49 * c[0] + 4.98 * c[1],
        affordable=lambda shape, c: True,
        space=SimpleNamespace(max_instances_per_pool=64),
    )


def test_a_joint_miss_takes_the_cheaper_single_step_that_passes() -> None:
    joint = {"ttft_ok": True, "tpot_ok": True, "passes": False}
    # at the edge: one more prefill holds there, so 4P:1D, not 4P:2D
    search = _search(
        {((4, 1), False): True, ((4, 1), True): True, ((3, 2), False): True, ((3, 2), True): True}
    )
    assert _step(search, SHAPE, (3, 1), joint, EDGE) == (4, 1)
    # one more prefill fails at the edge: one more decode, dearer, holds
    search = _search(
        {((4, 1), False): True, ((4, 1), True): False, ((3, 2), False): True, ((3, 2), True): True}
    )
    assert _step(search, SHAPE, (3, 1), joint, EDGE) == (3, 2)
    # neither alone: one more of each, as before
    search = _search({((4, 1), False): False, ((3, 2), False): False})
    assert _step(search, SHAPE, (3, 1), joint, None) == (4, 2)


def test_a_phase_that_misses_blames_its_pool_alone_without_a_run() -> None:
    search = _search({})  # no run known: none may be made
    assert _step(search, SHAPE, (3, 1), {"ttft_ok": False, "tpot_ok": True}, None) == (4, 1)
    assert _step(search, SHAPE, (3, 1), {"ttft_ok": True, "tpot_ok": False}, None) == (3, 2)
    assert _step(search, SHAPE, (3, 1), {"ttft_ok": False, "tpot_ok": False}, None) == (4, 2)
