"""`run --margin`: the same requests with every chip at its band's edges, the spread of each figure,
and the lines that say why a band is left off or reaches so far (as Results and Compare say them)."""

from __future__ import annotations

import json
import re

import pytest

from engine.cli.main import main
from tests.simhelp import h100_edges


def test_cli_run_at_a_cliff_says_so_and_bands_no_zero(capsys: pytest.CaptureFixture[str]) -> None:
    """`run --margin` on a load at a cliff: SLO attainment's band is left off and said, pointing at
    the CLI's own margin lines; a run that serves nothing in time shows its zero goodput bare."""
    assert (
        main(
            [
                "run",
                "chat-colocated",
                "--set",
                "duration_s=120",
                "--set",
                "workload.arrival.rate_rps=30",
                "--margin",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "SLO attainment shows no band" in out
        and "(the margin above reruns it at the pessimistic edge)" in out
    )
    assert "Margin for the model's error" not in out  # the pages' section, which the CLI has not
    assert (
        main(["run", "chat-colocated", "--set", "duration_s=120", "--set", "workload.arrival.rate_rps=60"])
        == 0
    )
    out = capsys.readouterr().out
    assert re.search(r"goodput 0\.00 req/s$", out, re.M), out


def test_cli_run_margin(capsys: pytest.CaptureFixture[str]) -> None:
    """`run --margin` prints each figure as modelled and with slower chips, and each class's verdict."""
    # 13 req/s: at 16 the slow edge (+32% time since 2026-12-06) is a cliff, whose band is left off
    rate = "workload.arrival.rate_rps=13"
    assert main(["run", "chat-colocated", "--set", "duration_s=300", "--set", rate, "--margin"]) == 0
    out = capsys.readouterr().out
    slow, fast = h100_edges()
    assert (
        f"margin: the same requests with every chip at its throughput band's pessimistic edge (h100-sxm {slow:+.0%} time)"
        in out
    )
    assert "class chat: passes -> FAILS" in out
    assert (
        f"spread: how each headline figure moves with every chip at either edge of its band (optimistic: h100-sxm "
        f"{fast:+.0%} time); latencies and costs never narrower than their kind's band" in out
    )
    # named and written as the margin's lines above (it read 'slo_attainment 0.95972': a review)
    assert re.search(r"  SLO attainment +[\d.]+% +−[\d.]+ to \+[\d.]+ pts", out), out
    assert "slo_attainment" not in out and "goodput_per_usd" not in out
    assert re.search(r"  goodput per \$ +[\d,.]+ req/\$ ", out), out
    assert "These are each kind of figure's band" not in out  # the run's own spread is printed
    assert main(["run", "chat-colocated", "--set", "duration_s=60"]) == 0
    plain_run = capsys.readouterr().out  # without the spread: says its bands are not Results'
    assert "These are each kind of figure's band; how this run itself moves" in plain_run
    # the summary's goodput and cost carry the run's spread, as Results shows them, not their kind's band
    spread_goodput = re.search(
        r"^  goodput +[\d.]+ req/s +(\S.*\S)\s*$",
        out.split("spread: how each headline figure moves")[1],
        re.M,
    )
    assert spread_goodput is not None and f"req/s ({spread_goodput.group(1)})" in out.split("margin:")[0]
    # and so do the p99 TTFT and TPOT (their line read the kind's band beside a wider spread: a review)
    # E2E's too (it kept its kind's −26% to +10% beside a +34% spread: a review)
    for key, line in (("TTFT p99", "ttft"), ("TPOT p99", "tpot"), ("E2E p99", "e2e")):
        spread = re.search(
            rf"^  {key} +[\d.,]+ m?s +(\S.*\S)\s*$",
            out.split("spread: how each headline figure moves")[1],
            re.M,
        )
        assert spread is not None and re.search(
            rf"^  {line} .*\({re.escape(spread.group(1))}\)$", out, re.M
        ), key
    assert "With --margin, the p99 TTFT, TPOT and E2E" in out
    # the steep SLO band says why, as Results does, pointing at the margin lines above it
    assert re.search(
        r"class chat misses its SLO \(p90 TPOT [\d.]+ ms against 30\.0 ms\).*\(the margin above", out
    )
    assert main(["run", "chat-colocated", "--set", "duration_s=60", "--margin", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["margin"]["slowdown"] == {"h100-sxm": slow}
    assert doc["margin"]["slowed"]["slo_attainment"] <= doc["slo_attainment"]
    # and its spread: every headline figure with the chips slower and faster, as the Results page
    spread = doc["spread"]
    assert spread["slowdown"] == {"h100-sxm": slow} and spread["speedup"] == {"h100-sxm": fast}
    tpot = spread["moves"]["tpot_p99_ms"]
    assert tpot["slower"] > 0 > tpot["faster"]
    assert tpot["slower"] == pytest.approx(
        doc["margin"]["slowed"]["latency_ms"]["tpot"]["p99"] / doc["latency_ms"]["tpot"]["p99"] - 1
    )
    assert spread["faster"]["latency_ms"]["tpot"]["p99"] < doc["latency_ms"]["tpot"]["p99"]
    assert len(spread["notes"]) == 1 and "class chat misses its SLO" in spread["notes"][0]


def test_the_text_says_what_the_scheduler_did_and_what_a_class_misses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The text output hid what lifts or sinks attainment: 690 answers cut to 128 tokens beside chat's
    94.6% 'passes', a percentile on rejected requests printed '-' as if there were no data, and a
    class failing on its E2E target read 'FAILS' beside a TTFT and TPOT within target (a review)."""
    from engine.cli.main import main

    assert main(["run", "prefill-loss-fallback", "--set", "duration_s=300"]) == 0
    out = capsys.readouterr().out
    assert "rejected: shed while degraded " in out and "answers capped (degrade) " in out
    assert "TTFT ∞ (rejected or failed requests)" in out and "FAILS on TTFT" in out
    e2e = ["run", "chat-colocated", "--set", "duration_s=60", "--set", "workload.classes[0].slo.e2e_ms=100"]
    assert main(e2e) == 0
    assert re.search(
        r": FAILS on E2E \(p90 [\d,]+ ms against its 100 ms\)", capsys.readouterr().out
    )  # its figure
    # every target it misses: 'FAILS on largest token gap' hid an E2E of 9,478 ms against 5,000 (a review)
    both = ["workload.classes[0].slo.e2e_ms=5000", "workload.classes[0].slo.tbt_ms=25"]
    assert (
        main(
            ["run", "chat-disaggregated", "--set", "duration_s=60", *(f for b in both for f in ("--set", b))]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert re.search(r"FAILS on largest token gap and E2E \(p90 [\d,]+ ms against its 5,000 ms\)", out), out


def test_a_class_of_one_token_answers_has_no_tpot_rather_than_an_infinite_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Single-token answers have no TPOT and no token gap: the text read 'TPOT ∞ (rejected or failed
    requests) … FAILS on TTFT and largest token gap' with none rejected or failed (a review)."""
    one = [
        "run",
        "chat-colocated",
        "--set",
        "duration_s=30",
        "--set",
        "workload.classes[0].output.kind=constant",
    ]
    one += ["--set", "workload.classes[0].output.tokens=1", "--set", "workload.classes[0].slo.tbt_ms=100"]
    assert main([*one, "--set", "workload.classes[0].slo.ttft_ms=100"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("  class chat:"))
    assert "TPOT - ms" in line and line.endswith("FAILS on TTFT") and "∞" not in line


def test_replications_say_in_how_many_seeds_each_class_passes_and_refuse_a_margin(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`run --replications` printed a mean attainment only, where one seed of five failed TTFT, and
    dropped --margin in silence (a review)."""
    args = ["run", "chat-colocated", "--set", "duration_s=30", "--replications", "2"]
    assert main(args) == 0
    assert re.search(r"class chat: passes in [0-2] of 2 seeds", capsys.readouterr().out)
    assert main([*args, "--margin"]) == 2
    assert "--margin: applies to one run" in capsys.readouterr().err
    # a class that fails in every seed said 'FAILS in some'; one within target in unsustainable runs is
    # so over those runs only, as a single run says (a review)
    assert main(["run", "portfolio-decode-loss", "--replications", "2"]) == 0
    out = capsys.readouterr().out
    assert "class chat: passes in 0 of 2 seeds (FAILS in every seed)" in out
    assert "  $ per 1k requests " in out and "slo_attainment" not in out  # as a single run writes them
    assert (
        "class batch: passes in 2 of 2 seeds, within target over the run only in the 2 unsustainable" in out
    )


def test_the_spread_section_cuts_a_cost_band_as_the_headline_does(capsys: pytest.CaptureFixture[str]) -> None:
    """`run --margin` printed cost per 1k requests '(−5% to +29%)' in its headline (cut where the bill
    cannot go) and '−23% to +29%' for the same figure in its spread section (a review)."""
    assert main(["run", "chat-disaggregated", "--set", "duration_s=120", "--margin"]) == 0
    out = capsys.readouterr().out
    head = re.search(r"per 1k requests \((\S+ to \S+)\)", out)
    spread = re.search(r"\$ / request\s+\S+\s+(\S+ to \S+)", out)
    assert head and spread and head.group(1) == spread.group(1), (head, spread)


def test_the_margins_costs_of_a_run_behind_its_load_are_marked(capsys: pytest.CaptureFixture[str]) -> None:
    """Over capacity, the margin's '$ / request $0.000292 -> $0.000386' dropped the 'at saturation' its run's own
    cost line carries (a review)."""
    from engine.cli.main import main

    over = ["--set", "duration_s=60", "--set", "workload.arrival.rate_rps=40", "--margin"]
    assert main(["run", "chat-disaggregated", *over]) == 0
    cost = next(
        line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("$ / request")
    )
    assert cost.count("at saturation") == 2, cost
    assert main(["run", "chat-disaggregated", "--set", "duration_s=60", "--margin"]) == 0
    cost = next(
        line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("$ / request")
    )
    assert "at saturation" not in cost


def test_a_plain_runs_goodput_carries_no_kinds_band(capsys: pytest.CaptureFixture[str]) -> None:
    # chat-colocated read "goodput 15.28 req/s (−24% to +6%)" where its spread falls by 92% at the slow
    # edge (a review): goodput and SLO attainment are banded by --margin's spread alone
    assert main(["run", "chat-colocated", "--set", "duration_s=120"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"goodput [\d.]+ req/s$", out, re.M), out
    assert "which alone bands SLO attainment and goodput" in out


def test_the_spreads_goodput_per_dollar_reads_as_results_card(capsys: pytest.CaptureFixture[str]) -> None:
    # `run --margin` printed "goodput per $ 28 requests" beside Results' "27.7 req/$" (a review)
    from engine.core.numbers import count3

    assert (count3(27.71), count3(2380.4), count3(2.054)) == ("27.7", "2,380", "2.05")
    assert (count3(99.96), count3(9.996)) == ("100", "10.0")  # three figures as rounded
    assert main(["run", "chat-disaggregated", "--set", "duration_s=120", "--margin"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("goodput per $"))
    assert re.search(r"goodput per \$\s+[\d,.]+ req/\$", line), line


def test_the_bills_parts_add_up_to_it_by_hand(capsys: pytest.CaptureFixture[str]) -> None:
    # rent-vs-own's kinds read 0.20 + 0.02 + 0.07 beside $0.28 per 1k requests (a review): three figures
    assert main(["run", "rent-vs-own", "--set", "duration_s=120"]) == 0
    out = capsys.readouterr().out
    kinds = re.search(r"per 1k requests by kind \(\$\): (.*)$", out, re.M)
    parts = re.search(r"per 1k requests by part \(\$, ([\d.]+) in all\): (.*)$", out, re.M)
    assert kinds is not None and parts is not None, out
    total = float(parts.group(1))
    for listed in (kinds.group(1), parts.group(2)):
        values = [float(x.rsplit(" ", 1)[1]) for x in listed.split(", ")]
        assert sum(values) == pytest.approx(total, rel=0.01), (listed, total)


def test_a_bills_part_keeps_its_third_figure() -> None:
    # pipeline-llama-405b read "prefill 1.7, decode 0.397" beside "2.09 in all" (a review): 1.70
    from engine.cli.run_text import _part

    assert (_part(0.0016967), _part(0.000397), _part(0.0000171)) == ("1.70", "0.397", "0.0171")
    assert (_part(0.012), _part(0.1234), _part(0.0), _part(None)) == ("12.0", "123", "0", "-")
    assert (_part(0.09996), _part(0.0999)) == ("100", "99.9")  # not '100.' (a review)


def test_a_run_at_capacity_marks_its_costs_as_the_bill_over_full_batches(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """chat-disaggregated at 30 req/s, 1.1% within SLO with a queue that never drained, read its lowest
    $ per request bare, and the live strip's arrow fell beside it (a browser review): the costs of a run
    at capacity, or whose queue still rose at the window's end, are marked as an unsustainable run's are."""
    from engine.cli.main import main
    from engine.explain.sustain import LEVEL, saturated
    from ui.layout import COSTS, LEVEL_KEY, growth, marked_figure

    busy = ["run", "chat-disaggregated", "--set", "workload.arrival.rate_rps=30", "--set", "duration_s=120"]
    assert main(busy) == 0
    cost = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("cost:"))
    assert cost.count(f", {LEVEL}") == 2, cost
    assert main([*busy, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc.get("unsustainable") is None and saturated(doc)
    assert all(LEVEL_KEY + key in growth(doc) for key in COSTS)  # the live strip's pill
    assert marked_figure(doc, "usd_per_request", "$0.35", "−20% to +32%")[1] == f"−20% to +32% · {LEVEL}"
    assert main(["run", "chat-disaggregated", "--set", "duration_s=120"]) == 0  # at its own load: bare
    cost = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("cost:"))
    assert LEVEL not in cost


def test_costs_and_replicated_figures_read_to_their_digits() -> None:
    """'$0.03 per 1k requests' for $0.0309, 'kv_transfer 9.82e-05' in the bill by part, and replications'
    '4062.9 [0, 20655]' read badly (a CLI review): three significant figures, four for replications, never an
    exponent, thousands separated."""
    from engine.cli.run_text import _part
    from engine.core.numbers import figures

    sig = [figures(x, 3) for x in (0.0309, 0.541, 2.103, 29.88, 1234.5)]
    assert sig == ["0.0309", "0.541", "2.10", "29.9", "1,234"]
    assert _part(9.82e-8) == "0.0000982" and _part(0.0) == "0" and _part(None) == "-"
    assert [figures(x, 4) for x in (0.34546, 4062.9, 20655.0, 0.0)] == ["0.3455", "4,063", "20,655", "0"]
    # rounded up into the next power of ten, still three figures ('10.00' for 9.9987, '100.0' for 99.96)
    assert [figures(x, 3) for x in (9.9987, 99.96, 0.099956)] == ["10.0", "100", "0.100"]
