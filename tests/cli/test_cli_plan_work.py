"""`fengong plan`: its total work bounded before any simulation, --no-work-limit, and --dask."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.cli.main import main
from engine.core import bounds

SMALL = ["--hardware", "h100-sxm,b200", "--tp", "1,2", "--pp", "1", "--duration-s", "30"]
SMALL += ["--max-simulations", "16", "--no-progress", "--no-margin"]


def plan_json(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["plan", "chat-disaggregated", "--target-rps", "16", *SMALL, "--json", *extra]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def test_a_plan_over_the_bound_is_refused_with_the_figure_and_the_flags(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("engine.planning.search.simulate", lambda *a, **k: pytest.fail("simulated"))
    huge = [
        "plan",
        "chat-colocated",
        "--target-rps",
        "600",
        "--duration-s",
        "300",
        "--max-simulations",
        "400",
    ]
    # with the verdict's checks (a risk-aware search of 400 more, its pick's runs, at full length too)
    assert main(huge) == 2
    assert "plan work: about 1.6 billion simulated events (1,206 runs at most" in capsys.readouterr().err
    code = main([*huge, "--nominal", "--no-verify"])
    err = capsys.readouterr().err
    assert code == 2
    assert "plan work: about 1 billion simulated events (802 runs at most of about 180,000 requests" in err
    assert "--target-rps to 17.8 req/s" in err and "--max-simulations to 10" in err
    assert "--no-work-limit" in err and "check_work" not in err  # the command line's own names


@pytest.mark.slow  # a whole plan past the work bound: about ten seconds
def test_the_estimate_is_in_json_and_no_work_limit_lifts_the_bound(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = plan_json(capsys)
    work = doc["work"]
    # the search, the risk-aware slowed search, and each of the 4 chip groups' picks (h100-sxm, b200 and
    # their two pairings) in the planning window and at full length, there as modelled and at the edge,
    # the nominal cheapest once at full length (its premium), and up to two other shapes, each as the picks,
    # where the would-be winner moved up to hold at the edge (in the planning window: two per group)
    assert work["runs"] == 16 + 16 + 4 * (4 + 2) and work["full_runs"] == 2 * 4 * 4 + 1 + 2 * 2 * 4
    assert work["requests_per_run"] == pytest.approx(16 * 30)
    assert work["events"] == pytest.approx(56 * work["events_per_run"] + 49 * work["events_per_full_run"])
    assert work["limit"] == bounds.MAX_PLAN_EVENTS
    assert plan_json(capsys, "--nominal", "--no-verify")["work"]["runs"] == 16
    monkeypatch.setattr(bounds, "MAX_PLAN_EVENTS", 1000)
    assert main(["plan", "chat-disaggregated", "--target-rps", "16", *SMALL]) == 2
    assert "plan work:" in capsys.readouterr().err
    lifted = plan_json(capsys, "--no-work-limit")
    assert lifted["work"] is None and lifted["runs"] == doc["runs"]


@pytest.mark.slow  # a plan on a local Dask cluster and again locally: tens of seconds
def test_plan_on_a_dask_cluster_prints_the_local_plan(capsys: pytest.CaptureFixture[str]) -> None:
    distributed = pytest.importorskip("distributed")
    local = plan_json(capsys)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", dashboard_address=None
    ) as cluster:
        remote = plan_json(capsys, "--dask", cluster.scheduler_address)
    assert local["best"] is not None and len(local["runs"]) >= 4
    for key in ("best", "runs", "candidates", "counts", "frontier_cost", "frontier_throughput"):
        assert remote[key] == local[key], key
