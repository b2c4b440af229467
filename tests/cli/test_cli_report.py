"""`run`'s printed report says what the summary's optional sections hold: the way in, autoscaling."""

from __future__ import annotations

import json

import pytest

from engine.cli.main import main


def _lines(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    assert main(["run", *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_the_way_in_is_printed_with_its_share_of_ttft(capsys: pytest.CaptureFixture[str]) -> None:
    """edge-cloud-only sends the edge site's users to the data centre: their trip is a share of TTFT."""
    assert main(["run", "edge-cloud-only", "--json"]) == 0
    way = json.loads(capsys.readouterr().out)["way_in"]
    lines = _lines(capsys, "edge-cloud-only")
    said = [line for line in lines if "On the way in:" in line]
    assert len(said) == 1, lines
    assert f"{way['network_ms_mean']:.1f} ms on the network" in said[0]
    assert f"({way['network_share_of_ttft']:.0%} of TTFT" in said[0]
    assert not any(line.startswith("Autoscaling:") for line in lines)


def test_autoscaling_is_printed_per_pool_with_cold_start_misses(capsys: pytest.CaptureFixture[str]) -> None:
    """day-autoscaled: instance-hours per pool, scale events, cold start, requests met while starting."""
    assert main(["run", "day-autoscaled", "--json"]) == 0
    auto = json.loads(capsys.readouterr().out)["autoscale"]
    lines = _lines(capsys, "day-autoscaled")
    said = [line for line in lines if line.startswith("Autoscaling:")]
    assert len(said) == 1, lines
    line = said[0]
    for name, pool in auto["pools"].items():
        assert f"{name} {pool['instance_hours']:,.2f} instance-h" in line
        assert f"cold start {pool['cold_start_s']:,.0f} s" in line
    assert f"{auto['scale_ups']} scale-ups, {auto['scale_downs']} scale-downs" in line
    assert f"{auto['requests_during_cold_start']:,} requests arrived during cold starts" in line
    assert f"{auto['misses_during_cold_start']:,} of them missed their SLO" in line
    assert not any("On the way in:" in line for line in lines)


def test_a_run_without_either_prints_neither(capsys: pytest.CaptureFixture[str]) -> None:
    lines = _lines(capsys, "chat-disaggregated", "--set", "duration_s=60")
    assert not any("On the way in:" in line or line.startswith("Autoscaling:") for line in lines)
