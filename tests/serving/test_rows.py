"""Compact per-run state: the iteration log (`engine.serving.rows`) and what a run frees as it goes."""

from __future__ import annotations

import numpy as np
import pytest

from engine.scenario.resolve import resolve
from engine.serving.cache import RequestBlocks
from engine.serving.ledger import COMPLETED, SEGMENT_COLUMNS
from engine.serving.rows import RowLog
from engine.serving.sim import Simulation
from engine.serving.workload import generate
from tests.simhelp import small


def _rows(n: int) -> list[tuple[float, ...]]:
    # ints and floats mixed, as an instance records them (server index, times, batch sizes)
    return [(i, i * 0.1 + 1e-17, 2**53 + i if i % 2 else -1.5) for i in range(n)]


def test_the_table_holds_what_a_list_of_tuples_would_bit_for_bit() -> None:
    rows = _rows(10)
    log = RowLog(3)
    for row in rows:
        log.add(row)
    assert len(log) == 10
    table = log.array()
    assert table.shape == (10, 3) and table.dtype == np.float64
    assert table.tobytes() == np.asarray(rows, dtype=float).tobytes()


def test_rows_since_a_cursor() -> None:
    rows = _rows(11)
    log = RowLog(3)
    for row in rows:
        log.add(row)
    expected = np.asarray(rows, dtype=float).tolist()
    for start in (0, 3, 4, 7, 8, 10, 11, 20):
        got = log.since(start)
        assert got == expected[start:]
        assert all(type(v) is float for row in got for v in row)


def test_the_array_handed_out_never_changes() -> None:
    log = RowLog(2)
    for i in range(5):
        log.add((i, i))
    first = log.array()
    assert first.tolist() == [[i, i] for i in range(5)]
    for i in range(5, 9):  # rows after the hand-over grow a copy
        log.add((i, -i))
    assert first.tolist() == [[i, i] for i in range(5)]
    assert log.array().tolist() == [[i, i] for i in range(5)] + [[i, -i] for i in range(5, 9)]
    assert log.since(7) == [[7.0, -7.0], [8.0, -8.0]]  # reading after a hand-over copies nothing out
    log.add((9, -9))
    assert len(log) == 10 and first.shape == (5, 2)


def test_an_empty_log_is_an_empty_table() -> None:
    assert RowLog(13).array().shape == (0, 13)


def test_a_log_needs_a_width() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RowLog(0)


def test_a_run_keeps_no_view_of_an_ended_request_and_reads_no_block_without_a_cache() -> None:
    s = small("chat-disaggregated")
    assert not s.cache.enabled
    reqs = generate(s)
    sim = Simulation(resolve(s), reqs)
    rec = sim.run()
    assert (rec.outcome == COMPLETED).all() and len(rec.outcome) == len(reqs)
    assert all(v is None for v in sim.ledger.views)  # every request's view went with its end
    assert sim.block_names.prompt == [] and sim.block_names.sessions == []  # never asked for a block
    assert rec.segments.shape[1] == len(SEGMENT_COLUMNS) and len(rec.segments) > len(reqs)


def test_block_lists_are_read_at_the_first_block_asked_for() -> None:
    reqs = generate(small("agentic-cache"))
    names = RequestBlocks(reqs)
    assert names.prompt == []
    names.drop(0)  # nothing made yet: nothing to forget
    names.cap_output(1, 1)  # a cap before any block: the lists load, then the cap applies
    assert names.prompt == reqs.prompt_tokens.tolist() and names.output[1] == 1
    assert names.output[2] == int(reqs.output_tokens[2])
