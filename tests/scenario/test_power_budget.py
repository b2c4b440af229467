"""Power budgets: a site's or a pool's cap in kW, each chip's limit under it, and what a capped run reports."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine.core.errors import ScenarioError
from engine.costmodel import power_cap
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.run import simulate


def chat(**over: Any) -> Scenario:
    """chat-disaggregated (twelve H100s: 8.4 kW at TDP) over a minute."""
    return io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 60.0, **over})


@pytest.fixture(scope="module")
def uncapped() -> Any:
    return simulate(chat())


@pytest.fixture(scope="module")
def capped() -> Any:
    return simulate(chat(**{"deployment.power_cap_kw": 6.0}))


def test_the_site_cap_holds_every_chip_to_the_same_share_of_its_tdp() -> None:
    r = resolve(chat(**{"deployment.power_cap_kw": 6.0}))
    for p in r.pools:
        assert p.power_limit is not None
        assert p.power_limit.limit_w == pytest.approx(500.0)  # 6 kW / 8.4 kW x 700 W
        assert p.power_limit.cap_kw == pytest.approx(3.0)
        assert p.instance.clock == power_cap.clock_at_limit(p.hardware, 500.0)
    mixed = resolve(chat(**{"deployment.power_cap_kw": 6.0, "deployment.pools[1].hardware": "h200"}))
    shares = {p.power_limit.limit_w / p.hardware.tdp_w for p in mixed.pools if p.power_limit is not None}
    assert len(shares) == 1


def test_the_site_cap_is_a_total_that_pool_caps_share_and_a_cap_above_the_tdp_changes_nothing() -> None:
    """A pool with a cap of its own keeps it; the rest of the site's cap goes to the others. The preset's
    lesson, 'the same 6 kW given 600 W a prefill chip and 400 W a decode chip', read 500 W each with the
    site's cap standing: a chip took the lower of its pool's limit and the site's share (a note)."""
    r = resolve(chat(**{"deployment.power_cap_kw": 6.0, "deployment.pools[1].power_cap_kw": 2.4}))
    assert r.pools[0].power_limit.limit_w == pytest.approx(600.0)  # type: ignore[union-attr]  # 3.6 kW left
    assert r.pools[1].power_limit.limit_w == pytest.approx(400.0)  # type: ignore[union-attr]
    both = resolve(chat(**{"deployment.power_cap_kw": 6.0, "deployment.pools[0].power_cap_kw": 3.6}))
    assert both.pools[0].power_limit.limit_w == pytest.approx(600.0)  # type: ignore[union-attr]
    assert both.pools[1].power_limit.limit_w == pytest.approx(400.0)  # type: ignore[union-attr]
    loose = resolve(chat(**{"deployment.pools[0].power_cap_kw": 4.2}))  # 700 W a chip: its TDP
    assert loose.pools[0].power_limit is None and loose.pools[0].instance.clock == 1.0
    # a pool cap past its chips' TDP takes only what they can draw from the site's budget
    past = resolve(chat(**{"deployment.power_cap_kw": 7.0, "deployment.pools[0].power_cap_kw": 9.0}))
    assert past.pools[0].power_limit is None
    assert past.pools[1].power_limit.limit_w == pytest.approx(2.8e3 / 6)  # type: ignore[union-attr]
    with pytest.raises(
        ScenarioError,
        match=r"deployment\.power_cap_kw: the site's 6 kW is less than the 6\.6 kW its pools' own caps let "
        r"them draw \(deployment\.pools\[0\]\.power_cap_kw, deployment\.pools\[1\]\.power_cap_kw\)",
    ):
        resolve(
            chat(
                **{
                    "deployment.power_cap_kw": 6.0,
                    "deployment.pools[0].power_cap_kw": 4.2,
                    "deployment.pools[1].power_cap_kw": 2.4,
                }
            )
        )
    with pytest.raises(
        ScenarioError,
        match=r"deployment\.power_cap_kw: the least cap is 5\.66 kW \(or the pools' own caps at most 2\.44 kW "
        r"together \(deployment\.pools\[0\]\.power_cap_kw\), or use fewer chips\): .* after the 3\.6 kW",
    ):
        resolve(chat(**{"deployment.power_cap_kw": 4.5, "deployment.pools[0].power_cap_kw": 3.6}))
    # each way out it offers works, rounded the way that does (a least up, a most down)
    resolve(chat(**{"deployment.power_cap_kw": 5.66, "deployment.pools[0].power_cap_kw": 3.6}))
    resolve(chat(**{"deployment.power_cap_kw": 4.5, "deployment.pools[0].power_cap_kw": 2.44}))


def test_no_cap_and_a_cap_that_never_binds_give_identical_runs(uncapped: Any) -> None:
    assert "power_cap" not in uncapped.summary
    loose = simulate(chat(**{"deployment.power_cap_kw": 8.4}))
    assert loose.summary["power_cap"]["pools"] == {}
    for key in ("latency_ms", "slo_attainment", "energy", "cost"):
        assert loose.summary[key] == uncapped.summary[key]


def test_a_binding_cap_slows_prefill_more_than_decode_and_saves_energy(uncapped: Any, capped: Any) -> None:
    a, b = uncapped.summary, capped.summary
    ttft = b["latency_ms"]["ttft"]["p50"] / a["latency_ms"]["ttft"]["p50"]
    tpot = b["latency_ms"]["tpot"]["p50"] / a["latency_ms"]["tpot"]["p50"]
    assert ttft > 1.1 and 1.0 <= tpot < 1.05 and ttft > tpot
    assert b["energy"]["joules_per_output_token"] < a["energy"]["joules_per_output_token"]
    assert b["requests"]["total"] == a["requests"]["total"]  # the same requests


def test_no_pool_draws_above_its_cap(capped: Any) -> None:
    p = capped.summary["power_cap"]
    assert p["site_cap_kw"] == 6.0 and p["site_mean_kw"] <= 6.0
    assert set(p["pools"]) == {"prefill", "decode"}
    for q in p["pools"].values():
        assert 0 < q["mean_kw"] <= q["cap_kw"]
        assert q["clock_factor"] == pytest.approx(0.806, abs=0.001) and q["bandwidth_factor"] == 1.0
    # even where the pool is busy all the time: decode's limit bounds its draw
    tight = simulate(chat(**{"deployment.pools[1].power_cap_kw": 2.1, "duration_s": 30.0}))
    dec = tight.summary["power_cap"]["pools"]["decode"]
    assert tight.summary["utilization"]["decode"]["busy"] > 0.9
    assert dec["mean_kw"] <= dec["cap_kw"] and np.isfinite(dec["mean_kw"])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"deployment.power_cap_kw": 0}, r"deployment\.power_cap_kw: .*greater than or equal to 0\.001"),
        ({"deployment.power_cap_kw": -5}, r"deployment\.power_cap_kw: .*greater than or equal to 0\.001"),
        ({"deployment.power_cap_kw": 2e6}, r"deployment\.power_cap_kw: .*less than or equal to 1000000"),
        ({"deployment.pools[1].power_cap_kw": 0}, r"deployment\.pools\[1\]\.power_cap_kw: .*greater than"),
    ],
)
def test_out_of_range_caps_are_refused_naming_the_field(override: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        chat(**override)


def test_a_cap_too_tight_for_the_relation_is_refused_with_the_least_that_works() -> None:
    with pytest.raises(
        ScenarioError,
        match=r"deployment\.power_cap_kw: the least cap is 4\.11 kW \(or use fewer chips\): "
        r"3\.5 kW holds each h100-sxm",
    ):
        resolve(chat(**{"deployment.power_cap_kw": 3.5}))
    with pytest.raises(
        ScenarioError, match=r"deployment\.pools\[1\]\.power_cap_kw: the least cap is 2\.06 kW .*: 1 kW holds"
    ):
        resolve(chat(**{"deployment.pools[1].power_cap_kw": 1.0}))


def test_an_edge_pool_takes_no_pool_cap_of_its_own() -> None:
    """An edge pool's chips share the edge site's budget, which admits them at their uncapped draw: a pool cap
    there ran the NPUs at 38% of their clock while the budget still held two of four busy (a review)."""
    with pytest.raises(
        ScenarioError, match=r"deployment\.pools\[1\]\.power_cap_kw: an edge pool's chips share"
    ):
        io.apply_overrides(io.load_preset("edge-offload"), {"deployment.pools[1].power_cap_kw": 0.05})


def test_every_run_says_what_its_chips_drew(uncapped: Any, capped: Any) -> None:
    """An uncapped site never said what it drew (5.7 kW for chat-disaggregated, against the 6 kW cap its
    counterpart is held to; a review): the summary's mean power, `run`'s energy line and Compare's row."""
    from engine.explain.compare_table import compare
    from engine.explain.power_line import mean_power_line

    e = uncapped.summary["energy"]
    assert e["mean_kw"] == pytest.approx(e["joules"] / uncapped.summary["drain_end_s"] / 1e3)
    assert 4.0 < e["mean_kw"] < 8.4  # busy chips, under their TDP
    assert capped.summary["energy"]["mean_kw"] == pytest.approx(capped.summary["power_cap"]["site_mean_kw"])
    assert mean_power_line(uncapped.summary) == (
        f"The chips drew {e['mean_kw']:,.3g} kW on average over the run, its drain included (the chips alone, "
        "idle included: no servers or cooling)."
    )
    rows = compare(capped.summary, uncapped.summary)
    assert "Mean power, all chips" in list(rows["figure"])
    # under 1 kW in W, as an edge site's budget reads ('0.233 kW' beside a 60 W budget: a browser review)
    assert (mean_power_line({"energy": {"mean_kw": 0.2326}}) or "").startswith(
        "The chips drew 233 W on average"
    )
