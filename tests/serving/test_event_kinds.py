"""bench/events.py: a run's events counted by kind, without changing the run."""

from __future__ import annotations

import pytest

from bench.events import count
from bench.fingerprints import records_digest
from engine.serving import host
from tests.simhelp import records, small

pytestmark = pytest.mark.pure  # patches what compiled code calls directly (tests/conftest.py)


def test_kinds_add_up_to_the_runs_events_and_the_run_is_unchanged() -> None:
    s = small("chat-disaggregated")
    plain, _ = records(s)
    kinds, counted, n = count(s)
    events = counted.events
    assert records_digest(counted) == records_digest(plain)  # the count only looks: the same run
    assert sum(k for name, k in kinds.items() if not name.startswith("simpy")) == events
    assert kinds["arrival (open loop)"] == n
    assert kinds["KV hand-off landed"] == n  # every request of this small run is handed off once
    # a cut supersedes exactly one planned end, which then runs stale
    assert (
        kinds["decode jump end: cut short (a request joins)"]
        == kinds["decode jump end: stale (superseded by a cut or fault)"]
    )
    assert kinds["batch formation, zero delay: finds nothing"] > 0
    # the wrappers are gone after the count
    assert host.Clock.after.__name__ == "after" and host.Clock.schedule.__name__ == "schedule"
