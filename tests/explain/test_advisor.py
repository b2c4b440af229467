"""The advisor: rooflines per chip, findings that follow from a run's numbers, the ASIC test."""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd
import pytest

from engine.catalog.entries import load_catalog
from engine.cli.main import main
from engine.core.errors import ScenarioError
from engine.explain.advisor import (
    advise,
    findings,
    kv_bound_share,
    phase_bottlenecks,
    phase_chip_hours,
    specialisation,
)
from engine.explain.rooflines import roofline_table
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.serving.run import SimResult, simulate


def disagg(**over: Any) -> Scenario:
    return io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 30.0, **over})


@pytest.fixture(scope="module")
def idle_prefill() -> SimResult:
    """Four prefill instances for one decode instance at a light load."""
    return simulate(
        disagg(
            **{"workload.arrival.rate_rps": 4, "deployment.pools[0].count": 4, "deployment.pools[1].count": 1}
        )
    )


@pytest.fixture(scope="module")
def kv_bound() -> SimResult:
    """Long prompts and answers on one decode instance with bf16 KV: memory fills up."""
    return simulate(
        disagg(**{
            "workload.arrival.rate_rps": 6, "deployment.pools[1].count": 1, "model.kv": "bf16",
            "workload.classes[0].input": {"kind": "constant", "tokens": 8000},
            "workload.classes[0].output": {"kind": "constant", "tokens": 2000},
        })
    )  # fmt: skip


def topics(fs: list[Any]) -> dict[str, Any]:
    return {f.topic: f for f in fs}


def test_roofline_table_physics() -> None:
    tab = roofline_table(disagg(), hardware=["h100-sxm", "h200", "b200", "decode-asic"], tp_options=(2,))
    assert set(tab["phase"]) == {"prefill", "decode"}
    assert set(tab["binds"]) <= {"compute", "bandwidth", "kv_capacity", "link"}
    pre = tab[tab["phase"] == "prefill"].set_index("hardware")
    dec = tab[tab["phase"] == "decode"].set_index("hardware")
    # prefill of a ~1k-token prompt is compute-bound on every GPU; intensities sit above the ridge
    assert (pre.loc[["h100-sxm", "h200", "b200"], "roofline_bound"] == "compute").all()
    assert (pre["intensity_flops_per_byte"] > pre["ridge_flops_per_byte"]).all()
    # the same die with more bandwidth, at the same tp, decodes more tokens per chip; attainable <= peak x efficiency
    assert dec.loc["h200", "tokens_per_s_per_chip"] >= dec.loc["h100-sxm", "tokens_per_s_per_chip"]
    assert (tab["achieved_tflops_per_chip"] <= tab["attainable_tflops_per_chip"] * 1.0001).all()
    assert (dec["batch"] >= 1).all() and set(dec["batch_limit"]) <= {"kv_capacity", "max_batch", "tpot"}


def test_each_phase_takes_the_tp_that_serves_it_cheapest() -> None:
    """The table took the smallest tp that holds the weights: an H100 decoding Llama-3.1-70B FP8 at
    tp 1 had room for a batch of one and read about ten times the scenario's own cost (a review)."""
    from engine.scenario import codec as sio

    s = sio.load_preset("chat-colocated")
    best = roofline_table(s, hardware=["h100-sxm"]).set_index("phase")
    alone = roofline_table(s, hardware=["h100-sxm"], tp_options=(1,)).set_index("phase")
    assert alone.loc["decode", "note"] and alone.loc["decode", "batch"] == 1  # tp 1: a batch of one
    assert best.loc["decode", "tp"] > 1 and not best.loc["decode", "note"]
    assert best.loc["decode", "usd_per_million_tokens"] < alone.loc["decode", "usd_per_million_tokens"] / 5
    every = [roofline_table(s, hardware=["h100-sxm"], tp_options=(tp,)) for tp in (1, 2, 4, 8)]
    rows = [t.set_index("phase").loc["decode"] for t in every if len(t)]
    assert best.loc["decode", "usd_per_million_tokens"] == min(
        r["usd_per_million_tokens"] for r in rows if not r["note"]
    )


def test_decode_at_batch_one_is_bandwidth_bound() -> None:
    s = disagg(**{"workload.classes[0].slo.tpot_ms": 30.0, "deployment.batching.max_batch": 1})
    tab = roofline_table(s, hardware=["h100-sxm"])
    dec = tab[tab["phase"] == "decode"].iloc[0]
    assert dec["batch"] == 1 and dec["roofline_bound"] == "bandwidth"


def test_idle_prefill_is_reported(idle_prefill: SimResult) -> None:
    t = topics(findings(idle_prefill))
    f = t["pd_ratio"]
    busy = idle_prefill.summary["utilization"]["prefill"]["busy"]
    assert f.severity == "warning" and "idle" in f.text and "P:D ratio (4:1)" in f.text
    assert f.numbers["prefill_busy"] == pytest.approx(busy)
    need, peak = f.numbers["suggested_prefill_instances"], f.numbers["prefill_busiest_minute"]
    assert (
        need < 4 and f"would be busy {4 * busy / need:.0%} of the time and {4 * peak / need:.0%} in" in f.text
    )
    assert 4 * max(busy, peak) / need <= 0.7 and f.numbers["ttft_share_of_target"] <= 0.5  # room for it
    assert "kv_capacity" not in t
    assert t["slo"].severity == "info"  # it passes


def test_a_prefill_pool_is_sized_for_its_busiest_minute() -> None:
    """day-static-peak's prefill, 35% busy over the day, was told 2 of its 3 instances would be 53% busy; 2
    were 90% busy at its 14:00 peak, its worst minute at 64% within SLO (a review): sized from the busiest
    minute, no cut is suggested."""
    from engine.explain.pd_ratio import busiest_minute

    run = simulate(io.load_preset("day-static-peak"))
    busy = run.summary["utilization"]["prefill"]["busy"]
    assert busiest_minute(run, "prefill") > 1.5 * busy  # the day's peak, far above its mean
    said = topics(findings(run)).get("pd_ratio")
    assert said is None or "suggested_prefill_instances" not in said.numbers


def test_a_kv_bound_mixed_pool_is_offered_chips_with_no_less_compute() -> None:
    """agentic-cache without its cache: the mixed pool, 79% of its bill prefill, was told more decode memory
    would help, e.g. an H20 (96 GiB, a seventh of an H100's compute; a note)."""
    sc = io.apply_overrides(io.load_preset("agentic-cache"), {"cache.enabled": False, "duration_s": 480.0})
    f = topics(findings(simulate(sc)))["kv_capacity"]
    named = re.findall(r"([a-z0-9.-]+) \((\d+) GiB\)", f.text)
    cat, h100 = load_catalog(), load_catalog().chip("h100-sxm")
    assert named and "h20" not in dict(named) and "no less compute, as this pool prefills too" in f.text
    assert all(cat.chip(h).peak_flops("fp8") >= h100.peak_flops("fp8") for h, _ in named)


def test_kv_bound_decode_is_reported(kv_bound: SimResult) -> None:
    t = topics(findings(kv_bound))
    f = t["kv_capacity"]
    assert f.severity == "warning" and "KV-capacity bound" in f.text
    named = re.findall(r"([a-z0-9.-]+) \((\d+) GiB\)", f.text)  # the chips it suggests
    cat = load_catalog()
    assert named and all(cat.chip(h).memory_gb == float(gb) > 80 for h, gb in named)
    assert f.numbers["kv_bound_share"] == pytest.approx(kv_bound_share(kv_bound, "decode"))
    assert f.numbers["kv_bound_share"] >= 0.2
    # how far the advice reaches: the decode pool's share of the bill (a split deployment's)
    cost = kv_bound.summary["cost"]
    share = cost["usd_by_pool"]["decode"] / cost["usd_total"]
    assert f.text.startswith(f"the decode pool ({share:.0%} of the bill) is KV-capacity bound"), f.text
    assert t["slo"].severity == "critical"
    fs = findings(kv_bound)
    order = {"critical": 0, "warning": 1, "info": 2}
    assert [order[x.severity] for x in fs] == sorted(order[x.severity] for x in fs)


def test_kv_transfer_share_matches_the_requests(idle_prefill: SimResult) -> None:
    f = topics(findings(idle_prefill))["kv_transfer"]
    done = idle_prefill.requests[idle_prefill.requests["outcome"] == "completed"]
    assert f.numbers["kv_transfer_share_of_ttft"] == pytest.approx(
        done["kv_transfer_s"].sum() / done["ttft_s"].sum()
    )


def test_colocated_interference_is_reported() -> None:
    s = io.apply_overrides(
        io.load_preset("chat-colocated"),
        {"duration_s": 30.0, "workload.arrival.rate_rps": 20, "deployment.pools[0].count": 3},
    )
    t = topics(findings(simulate(s)))
    assert "interference" in t and t["interference"].numbers["tpot_p99_over_p50"] > 1.5
    assert "kv_transfer" not in t
    assert "a smaller chunk_tokens" in t["interference"].text
    # without chunking it advised 'a smaller chunk_tokens' for a knob that was off (a review)
    whole = topics(findings(simulate(io.apply_overrides(s, {"deployment.batching.chunked_prefill": False}))))
    said = whole["interference"].text
    assert said.startswith("whole prompts (chunked prefill off)") and "chunk_tokens" not in said, said


def test_a_tpot_spread_between_chips_is_the_chips_not_interference() -> None:
    """chat-ascend-910b serves one class on H100 and 910B pools: TPOT p99 is 6.5x its median because
    the 910Bs decode six times slower, while each pool's TPOT is steady. The advisor blamed prefill
    chunks and recommended disaggregating (found in a browser review; the other mode is
    unsustainable there): it names each chip's median instead."""
    res = simulate(io.load_preset("chat-ascend-910b"))
    t = topics(findings(res))
    assert "interference" not in t and "chip_mix" in t
    assert "on h100-sxm" in t["chip_mix"].text and "on ascend-910b" in t["chip_mix"].text
    # a pool whose own TPOT spreads is still interference, said beside the chips' spread
    short = simulate(io.apply_overrides(io.load_preset("chat-ascend-910b"), {"duration_s": 120.0}))
    t = topics(findings(short))
    assert "chip_mix" in t and "interference" in t and t["interference"].numbers["tpot_p99_over_p50"] > 1.5


def test_a_pipelined_prefill_binds_compute_not_the_link() -> None:
    """tp1 x pp4: a prompt's stages run in turn, each compute-bound; that is not link time
    (found in review: the ASIC test said 'link' for all of prefill)."""
    sc = io.apply_overrides(
        io.load_preset("chat-colocated"),
        {
            "duration_s": 30.0,
            "deployment.pools[0].tp": 1,
            "deployment.pools[0].pp": 4,
            "workload.arrival.rate_rps": 4,
        },
    )
    shares = phase_bottlenecks(simulate(sc))["prefill"]
    assert shares.get("compute", 0.0) > 0.9 and "link" not in shares


def test_specialisation_answers(idle_prefill: SimResult) -> None:
    """Large is the phase's share of the chip-hours the run kept busy, not of those provisioned: four
    prefill instances idle 91% of the time read 'large (80% of chip-hours)' and 'an ASIC for prefill is
    worth considering' beside the advisor's 'the P:D ratio is too high' (a browser review)."""
    sp = specialisation(idle_prefill, 24).set_index("phase")
    hours, busy = phase_chip_hours(idle_prefill), phase_chip_hours(idle_prefill, busy=True)
    assert sp["chip_hours_share"].sum() == pytest.approx(1.0)
    assert hours["prefill"] > hours["decode"]  # four prefill instances, one decode
    assert busy["prefill"] < busy["decode"]  # but the one decode instance is the busy one
    assert sp.loc["prefill", "chip_hours_share"] == pytest.approx(busy["prefill"] / sum(busy.values()))
    assert sp.loc["decode", "binding_resource"] == "bandwidth" and sp.loc["decode", "bottleneck_clear"]
    assert sp.loc["prefill", "binding_resource"] == "compute" and sp.loc["prefill", "bottleneck_clear"]
    assert sp["stable"].all()
    assert not sp.loc["prefill", "large"] and sp.loc["prefill", "verdict"] == "borderline"
    # said as a share of the busy chip-hours: "37% of the chip-hours kept busy" read as a utilisation
    # beside the page's own utilisation chart (58% busy), a browser review
    share = sp.loc["prefill", "chip_hours_share"]
    assert f"({share:.0%} of the deployment's busy chip-hours; " in sp.loc["prefill", "text"]
    assert sp.loc["decode", "large"] and sp.loc["decode", "verdict"] == "worth considering"
    churn = specialisation(idle_prefill, 3).set_index("phase")
    assert not churn["stable"].any() and (churn["verdict"] != "worth considering").all()
    with pytest.raises(ScenarioError, match="model_change_months"):
        specialisation(idle_prefill, 0)


def test_kv_bound_decode_bottleneck_is_kv_capacity(kv_bound: SimResult) -> None:
    shares = phase_bottlenecks(kv_bound)["decode"]
    assert shares.get("kv_capacity", 0.0) >= 0.2
    assert sum(shares.values()) == pytest.approx(1.0)


def test_advice_round_trips_to_json(idle_prefill: SimResult) -> None:
    adv = advise(idle_prefill, 12)
    doc = json.loads(json.dumps(adv.to_json(), default=float))
    assert {"roofline", "findings", "specialisation"} <= set(doc)
    assert isinstance(adv.roofline, pd.DataFrame) and len(adv.findings) >= 3


def test_cli_advise(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["advise", "chat-disaggregated", "--set", "duration_s=20", "--hardware", "h100-sxm,h200"]
    assert main([*args, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["hardware"] for r in doc["roofline"]} == {"h100-sxm", "h200"}
    assert main([*args, "--model-change-months", "6"]) == 0
    out = capsys.readouterr().out
    assert "roofline" in out and "findings" in out and "own chip" in out
    assert main([*args, "--model-change-months", "-1"]) == 2


def test_advise_with_the_prefix_cache_on() -> None:
    """The cached share of a prompt is not computed again, and the roofline rows still come out."""
    from engine.explain.rooflines import roofline_table
    from engine.scenario import codec as sio

    table = roofline_table(
        sio.apply_overrides(sio.load_preset("agentic-cache"), {"duration_s": 60.0, "warmup_s": 0.0})
    )
    prefill = table[table["phase"] == "prefill"]
    assert len(prefill) > 0
    assert (prefill["time_ms"] > 0).all()


def test_an_uncalibrated_pool_is_a_finding_with_its_rule_and_how_to_fix_it() -> None:
    from engine.calibration import trust
    from engine.explain import confidence

    cat = load_catalog()
    for chip, stack in (("mi325x", "vllm"), ("h100-sxm", "trtllm")):
        over = {
            "deployment.stack": stack,
            "deployment.pools[0].hardware": chip,
            "deployment.pools[1].hardware": chip,
        }
        cal = trust.calibration(cat.hardware[chip], stack, cat)[1]
        found = [f for f in findings(simulate(disagg(**over))) if f.topic == "calibration"]
        if cal.fitted:
            assert not found, found
            continue
        (f,) = found  # both pools on one chip by one rule: one finding
        assert f.severity == "warning"
        assert (
            f.text.startswith(f"{chip} (pools prefill, decode) is uncalibrated under vLLM")
            and cal.rule in f.text
        )
        assert f"fengong calibrate RESULT.json --hardware {chip} --stack {stack}" in f.text
        assert 'the Hardware page\'s "Calibrate from your benchmark"' in f.text
        for figure, r in confidence.real_bands(
            cal
        ).items():  # the text gives each kind's band, its numbers too
            assert f"{confidence.FIGURE_NAMES[figure]} {confidence.signed_text(*r)}" in f.text
            assert (f.numbers[f"{figure}_band_low_pct"], f.numbers[f"{figure}_band_high_pct"]) == r


def test_a_bursty_prefill_pool_idle_on_average_is_not_told_to_shrink() -> None:
    """azure-code-replay's five prefill instances are busy a tenth of the time, yet its lesson is that
    four fail the TTFT target (bursts need all five): the advisor once advised one. Where a class's TTFT
    uses more than half its target, the idle time is said with why it is not spare, and nothing is cut."""
    t = topics(findings(simulate(io.load_preset("azure-code-replay"))))
    f = t["pd_ratio"]
    assert f.severity == "info" and "bursts" in f.text and "suggested_prefill_instances" not in f.numbers
    assert "p90 TTFT is 1,134 ms of its 1,500 ms" in f.text and f.numbers["ttft_share_of_target"] > 0.5


def test_durations_read_in_the_unit_that_fits() -> None:
    from engine.explain.presentation import duration_text

    cases = {42.25: "42.2 ms", 880.0: "880 ms", 9_999.0: "9,999 ms", 14_300.0: "14.3 s",
             1_043_795.0: "17.4 min", 3_600_000.0: "60.0 min", 86_400_000.0: "24.0 h", 99.96: "100 ms",
             599_951.0: "10.0 min", 35_990_000.0: "599.8 min", 35_998_000.0: "10.0 h"}  # fmt: skip
    assert {v: duration_text(v) for v in cases} == cases
    assert duration_text(None) == duration_text(float("nan")) == "–"
    # under a millisecond in hundredths: a TTFT target of 0.05 ms read 0.1 ms (a review)
    assert [duration_text(v) for v in (0.05, 0.07, 0.994, 0.995)] == [
        "0.05 ms",
        "0.07 ms",
        "0.99 ms",
        "1.0 ms",
    ]


def test_clients_in_step_are_explained_and_staggered_ones_are_not() -> None:
    """64 clients started together with identical 3,200-token prompts on one instance: most of TTFT
    is waiting for the round's other prompts, and the advisor says why. Started over a ramp, or
    with lengths that vary, they drift apart and the note does not appear."""
    from engine.explain.advisor import in_step

    sc = io.apply_overrides(io.load_preset("chat-colocated"), {
        "deployment.pools[0].count": 1,
        "workload.arrival": {"kind": "closed_loop", "clients": 64, "ramp_s": 0.0, "stop_after": 640},
        "workload.classes[0].input": {"kind": "constant", "tokens": 3200},
        "workload.classes[0].output": {"kind": "constant", "tokens": 800},
    })  # fmt: skip
    t = topics(findings(simulate(sc)))
    assert in_step(sc) and "lockstep" in t and t["queueing"].numbers["queueing_share_of_ttft"] >= 0.5
    assert "64 clients" in t["lockstep"].text
    ramped = io.apply_overrides(sc, {"workload.arrival.ramp_s": 30.0})
    varied = io.apply_overrides(
        sc, {"workload.classes[0].input": {"kind": "uniform", "low": 2000, "high": 4400}}
    )
    assert not in_step(ramped) and not in_step(varied)
    assert "lockstep" not in topics(findings(simulate(ramped)))


def test_the_users_network_trip_is_not_read_as_queueing() -> None:
    """edge-cloud-only: 61% of the mean TTFT is the 46 ms trip to the site; without it the requests barely
    wait, so the advisor must not say they spend most of their TTFT in queues."""
    from engine.explain.advisor import findings
    from engine.scenario.codec import apply_overrides, load_preset
    from engine.serving.run import simulate

    sc = load_preset("edge-cloud-only")
    res = simulate(sc)
    assert res.summary["way_in"]["network_share_of_ttft"] > 0.5
    assert not [f for f in findings(res) if f.topic == "queueing"]
    # the same requests and a trip ten times as long: still not queueing
    far = simulate(apply_overrides(sc, {"network.user_rtt_ms": 460.0}))
    assert not [f for f in findings(far) if f.topic == "queueing"]


def test_a_long_kv_transfer_is_blamed_on_what_is_not_already_done() -> None:
    """Overlap is suggested only where it is off; with it on, the finding says how much of the
    transfer waits behind others on the sending NIC, and asks for a faster link."""

    def kv_line(**over: Any) -> str:
        sc = (
            io.apply_overrides(io.load_preset("kv-link-fault"), over)
            if over
            else io.load_preset("kv-link-fault")
        )
        return next(f.text for f in advise(simulate(sc)).findings if f.topic == "kv_transfer")

    on = kv_line()
    assert "overlap is on" in on and "waiting behind other transfers on the sending NIC" in on
    assert "or layer-wise overlap" not in on
    assert "a faster link or layer-wise overlap would help" in kv_line(**{"deployment.link.overlap": False})


def test_an_edge_npus_prefill_is_service_not_queueing() -> None:
    """edge-offload-nocap: most prompts are prefilled on the site's NPU (about 296 ms each, 8 ms on the
    data centre's H100). Timed on the H100 that prefill read as 85% of TTFT spent queueing; timed on
    each request's own chip the requests wait 5.5% of it, and the ASIC test's prefill bottleneck
    weighs each prompt by its own chip's time."""
    from engine.costmodel.iteration import prefill_cost
    from engine.explain.asic import own_prefill_cost
    from engine.scenario.resolve import resolve

    result = simulate(io.apply_overrides(io.load_preset("edge-offload-nocap"), {"duration_s": 240.0}))
    assert "queueing" not in topics(findings(result))
    r = result.requests
    done = r[r["outcome"] == "completed"]
    res = resolve(result.scenario)
    pools = {p.spec.name: p for p in res.pools}
    at_edge = (done["site"] == "edge").to_numpy()
    assert at_edge.any() and not at_edge.all()
    service = own_prefill_cost(res, done)[0]
    tokens = done["prompt_tokens"].to_numpy(dtype=float)
    for name, mask in (("site", at_edge), ("datacenter", ~at_edge)):
        expected = prefill_cost(pools[name].instance, tokens[mask]).time_s
        assert service[mask] == pytest.approx(expected)
    on_h100 = prefill_cost(pools["datacenter"].instance, tokens[at_edge]).time_s
    assert service[at_edge].mean() > 10 * float(on_h100.mean())  # the first pool's chip would be far off
    # the prefill bottleneck: each prompt weighed by its own chip's time (on the H100 alone: 1.0% bandwidth)
    bw = 0.0
    for name, mask in (("site", at_edge), ("datacenter", ~at_edge)):
        c = prefill_cost(pools[name].instance, tokens[mask])
        bw += float(c.time_s[c.memory_s > c.compute_s].sum())
    binds = phase_bottlenecks(result)["prefill"]
    assert binds.get("bandwidth", 0.0) == pytest.approx(bw / service.sum(), abs=1e-9)


def test_an_autoscaled_pool_counts_its_billed_chip_hours_not_its_ceiling() -> None:
    """day-autoscaled over 900 s: prefill billed 1.21 chip-hours, decode 0.68, where both pools at their
    16-chip ceilings read 4.04 each (50%/50%); a higher decode ceiling alone must not move the shares."""
    from engine.scenario.resolve import resolve

    sc = io.apply_overrides(io.load_preset("day-autoscaled"), {"duration_s": 900.0})
    result = simulate(sc)
    hours = phase_chip_hours(result)
    for p in resolve(sc).pools:  # rented: each pool's bill over its chip's hourly price
        billed = result.summary["cost"]["usd_by_pool"][p.spec.name] / p.hardware.usd_per_hour
        assert hours[p.spec.role] == pytest.approx(billed, rel=1e-6)
    share = hours["prefill"] / sum(hours.values())
    assert share == pytest.approx(0.64, abs=0.02)
    decode = next(i for i, p in enumerate(sc.deployment.pools) if p.role == "decode")
    higher = simulate(
        io.apply_overrides(sc, {f"deployment.pools[{decode}].count": 2 * sc.deployment.pools[decode].count})
    )
    again = phase_chip_hours(higher)
    assert again["prefill"] / sum(again.values()) == pytest.approx(share, abs=0.02)


def test_an_offline_batchs_wait_is_information_not_a_warning() -> None:
    """Every request of an offline batch is queued at t = 0: its TTFT is its turn, not a fault to fix
    (pipeline-llama-405b, which passes, showed '100% of their TTFT waiting' as a warning)."""
    from engine.explain.advisor import findings
    from engine.scenario.codec import apply_overrides, load_preset
    from engine.serving.run import simulate

    batch = simulate(apply_overrides(load_preset("pipeline-llama-405b"), {"workload.arrival.requests": 1500}))
    (wait,) = [f for f in findings(batch) if f.topic == "queueing"]
    assert wait.severity == "info" and "offline batch" in wait.text
    # an open loop that queues is still warned about
    over = simulate(
        apply_overrides(
            load_preset("chat-colocated"), {"duration_s": 60.0, "workload.arrival.rate_rps": 100.0}
        )
    )
    assert [f.severity for f in findings(over) if f.topic == "queueing"] == ["warning"]


def test_each_colocated_pool_splits_its_chip_hours_by_its_own_prefill_share() -> None:
    """chat-ascend-910b: an Ascend pool and an H100 pool, both colocated, spend different shares of
    their time on prefill; each pool's chip-hours split by its own share (the summary's
    `prefill_share_by_pool`), not by the whole bill's."""
    from engine.scenario.resolve import resolve

    sc = io.apply_overrides(io.load_preset("chat-ascend-910b"), {"duration_s": 120.0})
    result = simulate(sc)
    own = result.summary["cost"]["prefill_share_by_pool"]
    assert set(own) == {"ascend", "h100"} and abs(own["ascend"] - own["h100"]) > 0.02
    hours = max(float(result.summary["drain_end_s"]), 1e-9) / 3600.0
    pools = resolve(sc).pools
    expect = sum(p.chips * hours * own[p.spec.name] for p in pools)
    assert phase_chip_hours(result)["prefill"] == pytest.approx(expect, rel=1e-9)
    parts = result.summary["cost"]["usd_by_part"]
    whole = parts["prefill"] / (parts["prefill"] + parts["decode"])
    assert expect != pytest.approx(sum(p.chips for p in pools) * hours * whole, rel=1e-3)
    # a lone colocated pool's share is the bill's: no key
    assert (
        "prefill_share_by_pool"
        not in simulate(io.apply_overrides(io.load_preset("chat-colocated"), {"duration_s": 60.0})).summary[
            "cost"
        ]
    )


def test_the_ttft_room_is_read_from_the_classes_that_enter_the_pool() -> None:
    """premium-isolation pins its premium class to its own pools: a shared pool's room is read from the
    classes that enter it, not from one pinned elsewhere."""
    from engine.explain.pd_ratio import _tightest_ttft

    sc = io.load_preset("premium-isolation")
    res = simulate(io.apply_overrides(sc, {"duration_s": 60.0}))
    entries = [p.name for p in sc.deployment.pools if p.role in ("mixed", "prefill")]
    pinned = {c.name: set(c.pools) & set(entries) for c in sc.workload.classes}
    assert any(pinned.values()), pinned  # the case under test: a class pinned to some entry pools
    for pool in entries:
        name = _tightest_ttft(res, pool)[0]
        assert not pinned[name] or pool in pinned[name], (pool, name)


def _headroom(preset: str) -> list[Any]:
    sc = io.load_preset(preset)
    sc = sc.model_copy(update={"duration_s": min(sc.duration_s, 120.0), "warmup_s": min(sc.warmup_s, 30.0)})
    return [f for f in advise(simulate(sc)).findings if f.topic == "decode_headroom"]


def test_decode_headroom_must_hold_with_the_chips_at_their_bands_edge() -> None:
    """'Decode has headroom ... could take more load, or run on fewer chips' was said of a pool at 49%
    of its TPOT target whose rerun with slower chips failed (a walkthrough): the claim now holds only
    where TPOT stays under half its target with every iteration as much longer as the pool's
    throughput band allows, and it says that figure."""
    (room,) = _headroom("mooncake-replay")
    ratio, edge = room.numbers["tpot_over_target"], room.numbers["slowdown_at_edge"]
    assert edge > 0 and ratio * (1 + edge) < 0.5
    said = f"({ratio * (1 + edge):.0%} with its chips at their band's pessimistic edge, {edge:+.0%} time)"
    assert said in room.text
    # the percentile it is read at: "TPOT is at most 35%" read as every request's, beside a p99 at 42%
    assert f"decode has headroom: TPOT p90 is at most {ratio:.0%} of its target" in room.text
    assert not _headroom("rag-long-context")  # 49% of its target as modelled, about 63% at the edge


def test_a_chip_no_tp_group_holds_is_placed_with_pipeline_stages(capsys: pytest.CaptureFixture[str]) -> None:
    """Found in review: DeepSeek-R1 FP8 needs more than eight H100s or 910Bs, and the roofline table
    dropped both without a word while the Hardware page placed them in stages."""
    from engine.scenario.codec import load_preset

    tab = roofline_table(load_preset("moe-deepseek-h200"), hardware=["h100-sxm", "ascend-910b", "b200"])
    assert set(tab["hardware"]) == {"h100-sxm", "ascend-910b", "b200"}
    staged = tab[tab["pp"] > 1]
    assert set(staged["hardware"]) == {"h100-sxm", "ascend-910b"}
    assert (staged["tp"] * staged["pp"] > 8).all()  # more chips than any tp group of 1-8 gives
    assert (tab[tab["hardware"] == "b200"]["pp"] == 1).all()
    assert main(["advise", "moe-deepseek-h200", "--hardware", "h100-sxm,b200"]) == 0
    assert re.search(r"\nh100-sxm +tp\d pp\d+ +prefill", capsys.readouterr().out)


def test_an_even_bill_is_said_as_even() -> None:
    """'decode takes 50% of the bill (prefill 50%, decode 50%)' read as a finding of decode's where the
    bill splits evenly (a review); an uneven one still names its largest part."""
    even = topics(findings(simulate(disagg())))["cost"].text
    assert re.match(r"the \$[\d,.]+/h bill splits evenly \(prefill 50%, decode 50%", even), even
    uneven = topics(findings(simulate(disagg(**{"deployment.pools[0].count": 4}))))["cost"].text
    assert re.match(r"prefill takes \d+% of the \$[\d,.]+/h bill \(", uneven), uneven


def test_a_fit_that_misses_its_chips_own_results_is_a_warning() -> None:
    """The 910B's fit predicts 0.28 to 0.82 of its own published throughput, and the advisor said so in
    blue while an uncalibrated chip's line is yellow (a review): a buyer comparing chips must see it."""
    from engine import explain as ex
    from engine import simulate
    from engine.scenario.codec import load_preset

    found = [f for f in ex.findings(simulate(load_preset("chat-ascend-910b"))) if f.topic == "calibration"]
    assert found and all(f.severity == "warning" for f in found if "misses the chip's own" in f.text)
    assert any("misses the chip's own" in f.text for f in found)


def test_a_link_fault_not_the_links_speed_is_said_to_set_the_transfer() -> None:
    """kv-link-fault cuts its link to a tenth for two minutes; the advisor said 'a faster link would
    help' from the whole run's share (a review). It says what the transfer takes outside the fault."""
    from engine import explain as ex
    from engine import simulate
    from engine.scenario.codec import load_preset

    said = [f.text for f in ex.findings(simulate(load_preset("kv-link-fault"))) if f.topic == "kv_transfer"]
    assert (
        said and "outside the link fault (at 240 s for 120 s)" in said[0] and "the fault sets it" in said[0]
    )
    assert "a faster link would help." not in said[0]
