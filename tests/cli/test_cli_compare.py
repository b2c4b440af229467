"""`fengong compare`: two scenarios side by side, as the Compare page lines them up (its table, its
verdicts and its bands, from the same engine functions)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine import explain as ex
from engine.cli.main import main
from engine.scenario.codec import apply_overrides, load_preset
from engine.serving.run import simulate

SHORT = ["--set", "duration_s=60", "--set-b", "duration_s=60"]


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main(["compare", *argv, "--json"]) == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def test_b_defaults_to_the_counterpart_on_as_requests_and_the_rows_are_the_pages(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _json(
        capsys, "chat-disaggregated", "--set", "workload.arrival.rate_rps=12", "--set", "duration_s=60"
    )
    assert doc["paired"] and doc["b"]["chosen"] == "chat-colocated on A's workload, window and seed"
    a = apply_overrides(
        load_preset("chat-disaggregated"), {"workload.arrival.rate_rps": 12.0, "duration_s": 60.0}
    )
    b = ex.with_load_of(load_preset("chat-colocated"), a)
    ra, rb = simulate(a), simulate(b)
    rows = {r["figure"]: r for r in doc["rows"]}
    assert rows["TTFT p99"]["a"] == ra.summary["latency_ms"]["ttft"]["p99"]
    assert rows["TTFT p99"]["b"] == rb.summary["latency_ms"]["ttft"]["p99"]  # on A's load: paired
    page = ex.verdicts(ex.compare(ra.summary, rb.summary), a, b, ra.summary, rb.summary)
    assert [r["better"] for r in doc["rows"]] == list(page["better"])
    assert rows["TPOT p99"]["band"] == "−27% to +11%" and doc["bands"] == "kind"  # the H100's TPOT band


def test_margin_bands_every_latency_from_the_runs_spreads(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "chat-disaggregated", "--margin", *SHORT)
    rows = {r["figure"]: r for r in doc["rows"]}
    assert doc["bands"] == "spread"
    assert all(rows[f"TTFT {p}"]["band"] for p in ("p50", "p90", "p99"))  # no TTFT kind's band: the spread's


def test_other_requests_name_no_better_side_but_on_a_fixed_bill(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "chat-colocated", "rag-long-context", *SHORT]) == 0
    out = capsys.readouterr().out
    assert "not paired: other requests" in out and "not paired and no side is called better" in out
    doc = _json(capsys, "chat-colocated", "rag-long-context", *SHORT)
    better = {r["figure"]: r["better"] for r in doc["rows"]}
    assert not doc["paired"] and better["TTFT p99"] == ex.NOT_PAIRED
    assert better["Cost per hour"] != ex.NOT_PAIRED  # no request moves a fixed bill


def test_its_refusals_name_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "chat-colocated", "chat-disaggregated", "--other-mode"]) == 2
    assert "--other-mode" in capsys.readouterr().err
    assert main(["compare", "chat-colocated", "--set-b", "duration_s"]) == 2
    assert "--set-b 'duration_s': expected path=value" in capsys.readouterr().err


def test_other_mode_serves_a_the_other_way(capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(capsys, "chat-colocated", "--other-mode", "--set", "duration_s=60")
    # its split is said to be a rule's starting point, not a tuned one (a 4:8 split stood unexplained: a review)
    assert doc["paired"] and doc["b"]["chosen"] == (
        "A served disaggregated; its 6 instances (2 chips each) split 2 prefill : 4 decode, a third to prefill: "
        "a starting split, not a tuned one (the planner searches the splits)"
    )
    # a split that takes one more chip says so, and B is named for its own pools (a browser review)
    doc = _json(capsys, "edge-offload", "--other-mode", "--set", "duration_s=60")
    assert doc["b"]["chosen"].startswith("A served disaggregated; not the same chips (h100-sxm 1 -> 2)")
    assert "1 h100-sxm prefill + 1 h100-sxm decode" in doc["b"]["name"]


def test_an_unedited_a_is_compared_with_its_counterpart_as_the_page_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # portfolio-h100-only's counterpart was given A's unpinned workload and read failing chat (54.87% within
    # SLO, 'B misses its SLO'), where the page compares the pinned preset itself (98.53%: a review)
    doc = _json(capsys, "portfolio-h100-only")
    assert doc["b"]["chosen"] == "portfolio-chat-batch"
    own = simulate(load_preset("portfolio-chat-batch"))
    assert doc["b"]["summary"]["slo_attainment"] == own.summary["slo_attainment"]
    better = {r["figure"]: r["better"] for r in doc["rows"]}
    assert better["Cost per request"] != "B misses its SLO"


def test_a_refusal_names_its_side_and_the_table_reads_as_the_pages(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["compare", "chat-colocated", "--set-b", "foo=1"]) == 2
    assert capsys.readouterr().err.startswith("error: scenario B: foo: unknown field")
    assert main(["compare", "chat-colocated", "--set", "foo=1"]) == 2
    assert capsys.readouterr().err.startswith("error: scenario A: foo: unknown field")
    # a cost far below a cent and a change past ten times, as the page's table writes them
    args = ["compare", "chat-colocated", "--set", "duration_s=60", "--set", "cost.usd_per_hour.h100-sxm=0.1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    cost = next(ln for ln in out.splitlines() if ln.startswith("Cost per request"))
    assert "0.0000" in cost and "e-0" not in cost and "×)" in cost
    goodput = next(ln for ln in out.splitlines() if ln.startswith("Goodput"))
    assert goodput.rstrip().endswith("-")  # no kind's band on goodput: --margin's spread alone


def test_a_refusal_of_b_advises_only_where_the_default_b_failed(capsys: pytest.CaptureFixture[str]) -> None:
    # "name B, or --other-mode" followed the user's own --set-b refusal, --other-mode given (a review)
    assert main(["compare", "chat-colocated", "--other-mode", "--set-b", "bogus=1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: scenario B: bogus: unknown field") and "--other-mode for" not in err
    # the default B that cannot take A's edited load: what to do instead
    assert main(["compare", "portfolio-chat-batch", "--set", "workload.arrival.rate_rps=10"]) == 2
    err = capsys.readouterr().err
    assert "scenario B: portfolio-h100-only on A's workload:" in err and "(name B, or --other-mode" in err


def test_a_cost_basis_note_names_each_sides_basis(capsys: pytest.CaptureFixture[str]) -> None:
    # rent-vs-own's A is owned and B rented: the note read "(rented against owned)" (a review)
    assert main(["compare", "rent-vs-own", "--set", "duration_s=60"]) == 0
    out = capsys.readouterr().out
    assert "costed on different bases (A's owned, B's rented)" in out, out


def test_as_edits_that_the_counterpart_does_not_take_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    # an 8B model against the counterpart's 70B, and an owned bill against a rented one, read as paired
    # comparisons of the deployments with nothing said (a review)
    doc = _json(capsys, "chat-colocated", "--set", "model.id=llama-3.1-8b", "--set", "cost.mode=own", *SHORT)
    assert doc["b"]["chosen"].startswith(
        "chat-disaggregated on A's workload, window and seed; not A's changes"
    )
    assert "to model, cost: give them with --set-b, or --other-mode" in doc["b"]["chosen"]
    assert "not A's" not in _json(capsys, "chat-colocated", *SHORT)["b"]["chosen"]  # only the load edited
    own = load_preset("chat-colocated")
    assert ex.unshared_edits(own, apply_overrides(own, {"workload.arrival.rate_rps": 3.0})) == []
    assert ex.unshared_edits(own, apply_overrides(own, {"scheduler.preemption": "recompute"})) == [
        "scheduler"
    ]
