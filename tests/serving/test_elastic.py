"""Elastic roles: instances moved between prefill and decode as their backlogs call for."""

from __future__ import annotations

from engine.scenario import codec as io
from engine.serving.run import simulate


def test_elastic_roles_lend_nothing_from_a_role_that_is_itself_starved() -> None:
    """Both roles over their threshold (30 req/s of 1,500-token answers on four prefill and two
    decode instances, decode memory cut to 0.6): moving a decode instance to prefill starves decode
    further, and the next check took it straight back, 13 switches in all, each draining its batch."""
    s = io.apply_overrides(
        io.load_preset("chat-disaggregated"),
        {
            "duration_s": 120.0,
            "deployment.pools[0].count": 4,
            "deployment.pools[1].count": 2,
            "workload.arrival.rate_rps": 30.0,
            "workload.classes[0].output": {
                "kind": "lognormal",
                "mean": 1500,
                "p99": 4000,
                "max_tokens": 4096,
            },
            "deployment.mem_fraction": 0.6,
            "scheduler.elastic": {"enabled": True},
        },
    )
    assert simulate(s).summary["scheduler"]["role_switches"] <= 2
