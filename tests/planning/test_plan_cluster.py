"""A plan on an executor (a Dask cluster): the simulations run ahead of the search, the plan is the same."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pandas as pd
import pytest

from engine.core.errors import ScenarioError
from engine.planning import search
from engine.planning.candidates import SearchSpace, planning_scenario, with_deployment
from engine.planning.plan import Plan, plan
from engine.planning.runner import ClusterRunner, LocalRunner
from engine.planning.search import DRAWN_PLANS, _drawn, evaluate
from engine.planning.sizing import Kind, Shape
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import scenario_catalog
from engine.serving.workload import generate

SPACE = SearchSpace(hardware=("h100-sxm", "b200"), tp=(1, 2), pp=(1,), duration_s=30.0, max_simulations=24)


class Counting(ThreadPoolExecutor):
    """A thread pool that counts what it was given."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.submitted = 0
        self.lock = threading.Lock()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with self.lock:
            self.submitted += 1
        return super().submit(fn, *args, **kwargs)


def chat() -> Scenario:
    return io.load_preset("chat-disaggregated")


@pytest.fixture(scope="module")
def local() -> Plan:
    return plan(chat(), 16.0, SPACE)


def same(a: Plan, b: Plan) -> None:
    assert a.best == b.best and a.best_run == b.best_run
    pd.testing.assert_frame_equal(a.runs, b.runs)
    pd.testing.assert_frame_equal(a.candidates, b.candidates)
    assert (a.simulated, a.feasible, a.bounded, a.pruned) == (b.simulated, b.feasible, b.bounded, b.pruned)


def test_a_plan_on_an_executor_equals_the_local_plan_and_runs_ahead(local: Plan) -> None:
    assert local.best is not None and local.simulated >= 4  # a search with several steps
    with Counting() as ex:
        p = plan(chat(), 16.0, SPACE, executor=ex)
    same(local, p)
    assert ex.submitted > p.simulated  # hints were submitted beyond what the search asked for


def test_a_plan_on_a_local_dask_cluster_equals_the_local_plan(local: Plan) -> None:
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        p = plan(chat(), 16.0, SPACE, executor=client.get_executor())
    same(local, p)


@pytest.mark.slow  # a portfolio plan twice: tens of seconds
def test_a_portfolio_plan_on_an_executor_equals_the_local_plan() -> None:
    sc = io.load_preset("portfolio-chat-batch")
    space = SearchSpace(
        hardware=("h100-sxm", "h20", "mi300x"), tp=(1, 2), pp=(1,), modes=("disaggregated",),
        duration_s=60.0, max_simulations=30, portfolio=True,
    )  # fmt: skip
    a = plan(sc, 8.0, space)
    assert a.runs["shape"].str.contains(r"\|").any()  # a portfolio was simulated
    with ThreadPoolExecutor(max_workers=2) as ex:
        same(a, plan(sc, 8.0, space, executor=ex))


def fail(why: str) -> None:
    raise ScenarioError(why)


def test_the_cluster_runner_keeps_hints_by_key_and_raises_only_when_asked() -> None:
    with ThreadPoolExecutor(max_workers=1) as ex:
        r = ClusterRunner(ex, ahead=2)
        r.ahead("bad", fail, "work bound")  # a hint that fails costs nothing until asked for
        r.ahead("a", pow, 2, 3)
        r.ahead("b", pow, 2, 4)  # over the cap only while two are pending
        assert r.result("a", pow, 2, 3) == 8 and r.used == 1 and r.ready == 1
        assert "a" not in r.futures  # consumed
        assert r.result("c", pow, 3, 2) == 9 and r.ready == 1  # never hinted: submitted when asked
        with pytest.raises(ScenarioError, match="work bound"):
            r.result("bad", fail, "work bound")
        r.ahead("d", pow, 1, 1)
        r.close()
        assert r.futures == {}
    with pytest.raises(ValueError, match="ahead"):
        ClusterRunner(ThreadPoolExecutor(max_workers=1), ahead=-1)


def test_the_local_runner_ignores_hints() -> None:
    r = LocalRunner()
    r.ahead("x", fail, "never run")
    assert r.result("y", pow, 2, 2) == 4 and not r.speculates


def test_a_worker_draws_a_plans_requests_itself_with_the_same_result() -> None:
    base = planning_scenario(chat(), 16.0, 30.0)
    kind = Kind("h100-sxm", 2)
    shape = Shape("colocated", kind, kind)
    deployed = with_deployment(base, shape, (3, 0))
    cat = scenario_catalog(base, None)
    args = (shape, (3, 0), True, {}, "percentile", 0.9)
    here, _ = evaluate(deployed, cat, generate(base), *args)
    there, _ = evaluate(deployed, cat, base, *args)  # what a cluster's worker is sent
    pd.testing.assert_series_equal(pd.Series(here), pd.Series(there))
    for seed in range(DRAWN_PLANS + 2):  # a worker keeps a few plans' requests, not every plan's
        _drawn(io.apply_overrides(base, {"seed": seed}))
    assert len(search._DRAWN) == DRAWN_PLANS
    assert _drawn(base) is _drawn(base)  # drawn once
