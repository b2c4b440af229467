"""Sweeps: the grid, one tidy table in grid order, the same answer on every executor."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from engine.cli.main import main
from engine.core.errors import ScenarioError
from engine.planning.sweep import grid, parse_vary, sweep
from engine.scenario import codec as io
from engine.scenario.model import Scenario

VARY = {"workload.arrival.rate_rps": [2.0, 4.0], "deployment.pools[1].count": [1, 2]}


@pytest.fixture(scope="module")
def scen() -> Scenario:
    return io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 20.0, "seed": 7})


@pytest.fixture(scope="module")
def serial(scen: Scenario) -> pd.DataFrame:
    return sweep(scen, VARY, seeds=2)


def test_grid_is_the_cartesian_product_times_seeds() -> None:
    pts = grid({"a.b": [1, 2, 3], "c[0].d": ["x", "y"]}, seeds=2, first_seed=5)
    assert len(pts) == 12
    assert pts[0] == {"a.b": 1, "c[0].d": "x", "seed": 5}
    assert pts[1]["seed"] == 6 and pts[2]["c[0].d"] == "y"
    assert len({tuple(sorted(p.items())) for p in pts}) == 12


def test_parse_vary_keeps_bracketed_values_whole() -> None:
    v = parse_vary(
        ["workload.arrival.rate_rps=1,2.5", 'deployment.pools[0].hardware=h100-sxm,"h200"', "x.y=[1,2],[3]"]
    )
    assert v["workload.arrival.rate_rps"] == [1, 2.5]
    assert v["deployment.pools[0].hardware"] == ["h100-sxm", "h200"]
    assert v["x.y"] == [[1, 2], [3]]
    with pytest.raises(ScenarioError, match="expected path"):
        parse_vary(["novalue"])
    # '8,8' ran two identical grid points (a review); 8 and 8.0 are one value
    with pytest.raises(
        ScenarioError, match=r"--vary workload\.arrival\.rate_rps: 8\.0 given twice in '8,8\.0'"
    ):
        parse_vary(["workload.arrival.rate_rps=8,8.0"])


def test_bad_points_fail_before_anything_runs(scen: Scenario) -> None:
    with pytest.raises(ScenarioError, match=r"workload\.arrival\.rate_rps"):
        sweep(scen, {"workload.arrival.rate_rps": [1.0, -3.0]})
    # past the list's end: said as an index, with the ones there are ("no such field" read as a typo)
    with pytest.raises(ScenarioError, match=r"index 5 is out of range \(deployment\.pools has "):
        sweep(scen, {"deployment.pools[5].count": [1]})
    with pytest.raises(ScenarioError, match="no such field"):
        sweep(scen, {"deployment.pools[0].count.what": [1]})
    with pytest.raises(ScenarioError, match="seeds"):
        sweep(scen, {"seed": [1, 2]})
    trace = io.apply_overrides(io.load_preset("azure-code-replay"), {"duration_s": 20.0})
    with pytest.raises(ScenarioError, match="seeds: a trace's requests are the same whatever the seed"):
        sweep(trace, {"deployment.pools[0].count": [1, 2]}, seeds=2)


def test_a_point_the_engine_refuses_is_a_row_with_its_reason(scen: Scenario) -> None:
    """An L4 pair cannot hold Llama-3.1-70B: its point says so in its row, and the H100 point still
    runs (the refusal used to end the sweep, dropping the rows already run)."""
    f = sweep(scen, {"deployment.pools[1].hardware": ["h100-sxm", "l4"]})
    ok, bad = f.iloc[0], f.iloc[1]
    assert ok["error"] == "" and ok["slo_attainment"] > 0
    assert "needs" in bad["error"] and "l4" in bad["error"] and pd.isna(bad["slo_attainment"])


def test_table_is_tidy_and_in_grid_order(serial: pd.DataFrame) -> None:
    assert len(serial) == 8
    assert list(serial.columns[:3]) == ["workload.arrival.rate_rps", "deployment.pools[1].count", "seed"]
    assert {"latency_ms.ttft.p99", "classes.chat.passes", "cost.usd_per_hour", "goodput_rps"} <= set(
        serial.columns
    )
    assert serial["seed"].tolist() == [7, 8] * 4
    assert serial["workload.arrival.rate_rps"].tolist() == [2.0] * 4 + [4.0] * 4
    # more decode instances cost more; a higher rate brings more requests
    one, two = (
        serial[serial["deployment.pools[1].count"] == 1],
        serial[serial["deployment.pools[1].count"] == 2],
    )
    assert (two["cost.usd_per_hour"].to_numpy() > one["cost.usd_per_hour"].to_numpy()).all()
    lo = serial[serial["workload.arrival.rate_rps"] == 2.0]["requests.total"].sum()
    hi = serial[serial["workload.arrival.rate_rps"] == 4.0]["requests.total"].sum()
    assert hi > lo


def test_seeds_draw_differently(serial: pd.DataFrame) -> None:
    a, b = serial.iloc[0], serial.iloc[1]
    assert a["seed"] != b["seed"]
    assert a["latency_ms.e2e.mean"] != b["latency_ms.e2e.mean"]


def test_process_pool_gives_the_same_table(scen: Scenario, serial: pd.DataFrame) -> None:
    with ProcessPoolExecutor(max_workers=2) as ex:
        par = sweep(scen, VARY, seeds=2, executor=ex)
    pd.testing.assert_frame_equal(par, serial)


def test_progress_reports_every_run(scen: Scenario) -> None:
    seen: list[tuple[int, int]] = []
    sweep(scen, {"workload.arrival.rate_rps": [2.0, 3.0]}, progress=lambda d, n: seen.append((d, n)))
    assert seen == [(1, 2), (2, 2)]


def test_cli_sweep_on_a_dask_cluster(tmp_path: Path, serial: pd.DataFrame) -> None:
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "results.parquet"
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", dashboard_address=None
    ) as cluster:
        code = main(
            [
                "sweep",
                "chat-disaggregated",
                "--set",
                "duration_s=20",
                "--set",
                "seed=7",
                "--vary",
                "workload.arrival.rate_rps=2.0,4.0",
                "--vary",
                "deployment.pools[1].count=1,2",
                "--seeds",
                "2",
                "--out",
                str(out),
                "--dask",
                cluster.scheduler_address,
                "--no-progress",
            ]
        )
    assert code == 0
    table = pq.read_table(out)
    meta = table.schema.metadata
    assert b"fengong.engine_version" in meta and b"chat" in meta[b"fengong.scenario"]
    pd.testing.assert_frame_equal(table.to_pandas(), serial, check_like=False)


def test_cli_sweep_local_csv_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.csv"
    code = main(
        [
            "sweep",
            "chat-colocated",
            "--set",
            "duration_s=10",
            "--vary",
            "workload.arrival.rate_rps=1,2",
            "--workers",
            "1",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    frame = pd.read_csv(out)
    assert frame["workload.arrival.rate_rps"].tolist() == [1, 2]
    assert main(["sweep", "chat-colocated", "--vary", "nope=1", "--out", str(out), "--no-progress"]) == 2
    assert "nope" in capsys.readouterr().err


def test_a_sweep_is_bounded_by_the_sum_of_its_runs_estimates(
    scen: Scenario, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """DESIGN.md: a plan or sweep is bounded by the sum of its runs' estimates, before any run."""
    from engine.core import bounds
    from engine.planning import sweep as sweep_mod
    from engine.serving.work_bound import estimate

    # the sum: each point's estimate once per seed (the seed does not change the settings' estimate)
    tasks = [{**o, "seed": s} for o in ({"workload.arrival.rate_rps": 2.0}, {"workload.arrival.rate_rps": 4.0})
             for s in (7, 8)]  # fmt: skip
    one = estimate(io.apply_overrides(scen, {"workload.arrival.rate_rps": 2.0})).events
    two = estimate(io.apply_overrides(scen, {"workload.arrival.rate_rps": 4.0})).events
    runs = [io.apply_overrides(scen, t) for t in tasks]
    assert sweep_mod.sweep_events(runs) == pytest.approx(2 * one + 2 * two)
    # over the limit: refused before any run, with the figure and how many runs of this size would fit
    monkeypatch.setattr(bounds, "MAX_PLAN_EVENTS", int(3 * one))
    monkeypatch.setattr(sweep_mod, "run_point", lambda *a, **k: pytest.fail("a run started"))
    with pytest.raises(
        ScenarioError, match=r"^sweep work: about .* simulated events over 8 runs, .*x the limit"
    ):
        sweep(scen, VARY, seeds=2)
    out = tmp_path / "sweep.csv"
    cli = ["sweep", "chat-disaggregated", "--vary", "deployment.pools[1].count=1,2", "--no-progress"]
    assert main([*cli, "--workers", "1", "--out", str(out)]) == 2
    assert "sweep work:" in capsys.readouterr().err and not out.exists()
    # lifted: the runs go ahead (here the stub says so)
    with pytest.raises(pytest.fail.Exception, match="a run started"):
        sweep(scen, VARY, seeds=2, check_work=False)


def test_values_that_are_not_a_list_are_refused_naming_the_field() -> None:
    """Found in review: sweep(base, {path: 'h200'}) ran four points of hardware 'h', '2', '0', '0';
    a number failed with "object of type 'int' has no len()"; SearchSpace(hardware='h200') said
    "unknown hardware 'h'" and plan(base, '20') failed comparing an int with a str."""
    from engine.planning.candidates import SearchSpace
    from engine.planning.plan import plan

    base = io.load_preset("chat-colocated")
    with pytest.raises(
        ScenarioError, match=r"deployment.pools\[0\].hardware: the values to vary over, as a list"
    ):
        sweep(base, {"deployment.pools[0].hardware": "h200"})
    with pytest.raises(ScenarioError, match=r"workload\.arrival\.rate_rps: the values to vary over"):
        sweep(base, {"workload.arrival.rate_rps": 16})  # type: ignore[dict-item]
    with pytest.raises(ScenarioError, match=r"space.hardware: a tuple of values, e.g. \('h200',\)"):
        SearchSpace(hardware="h200")  # type: ignore[arg-type]
    with pytest.raises(ScenarioError, match="target_rps: a number"):
        plan(base, "20")  # type: ignore[arg-type]


def test_a_numpy_range_varies_as_the_numbers_it_holds() -> None:
    """Found in review: a notebook's np.linspace was refused with the suggestion [array([4., 5.])]; a
    one-dimensional array is the list of its numbers, a 0-d one (one number) is refused as before."""
    import numpy as np

    from engine.planning.sweep import grid

    points = grid({"workload.arrival.rate_rps": np.linspace(4, 5, 3)})
    assert [p["workload.arrival.rate_rps"] for p in points] == [4.0, 4.5, 5.0]
    assert all(type(p["workload.arrival.rate_rps"]) is float for p in points)  # not np.float64
    with pytest.raises(ScenarioError, match=r"workload\.arrival\.rate_rps: the values to vary over"):
        grid({"workload.arrival.rate_rps": np.float64(4.0)})  # type: ignore[dict-item]
