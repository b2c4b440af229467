"""Specialisation risk over time (engine.planning.lifetime): a dedicated fleet re-fitted each period,
written off when the model outgrows it and not while it fits; bills that add up; bad documents refused."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cli.main import main
from engine.core.errors import ScenarioError
from engine.planning.lifetime import PARTS, book_value, run_lifetime
from engine.planning.lifetime import summary_line as lifetime_summary
from engine.planning.lifetime_spec import (
    MAX_PERIODS,
    MAX_PORTFOLIOS,
    MAX_SIZING_REQUESTS,
    Lifetime,
    lifetime_names,
    load_lifetime,
    validate_lifetime,
)

PRESET = "asic-model-churn"
DENSE = {"id": "llama-3.1-70b", "weights": "fp8", "kv": "fp8"}
LONG = {"workload.classes[0].slo.tpot_ms": 50, "workload.classes[0].input.mean": 4096,
        "workload.classes[0].input.p99": 24000}  # fmt: skip


def doc(**changes: Any) -> dict[str, Any]:
    """The shipped preset as data, with top-level changes."""
    return load_lifetime(PRESET).model_dump(mode="json") | changes


@pytest.fixture(scope="module")
def churn() -> Any:
    return run_lifetime(load_lifetime(PRESET))


def rows(res: Any, portfolio: str) -> Any:
    return res.periods[res.periods["portfolio"] == portfolio].reset_index(drop=True)


def test_the_shipped_lifetimes_load_and_name_their_file() -> None:
    assert PRESET in lifetime_names()
    lt = load_lifetime(PRESET)
    assert lt.months == 36 and [p.dedicated for p in lt.portfolios] == [False, True]
    assert lt.lesson.strip()  # a lesson measured from the run, like every preset's


def test_the_asic_is_written_off_when_the_model_outgrows_it(churn: Any) -> None:
    """FP4 weights on a chip designed for bf16 and fp8: the fleet serves nothing in the last period
    and its remaining book value (4 chips x $25,000, 24 of 60 months gone) is charged there."""
    asic = rows(churn, "ASIC")
    assert list(asic["written_off_usd"] > 0) == [False, False, True]
    assert asic.loc[2, "written_off_usd"] == pytest.approx(
        book_value(100_000.0, load_lifetime(PRESET).cost, 24)
    )
    assert asic.loc[2, "written_off_usd"] == pytest.approx(60_000.0)
    assert asic.loc[2, "dedicated"].startswith("written off: designed for bf16, fp8")
    assert asic.loc[2, "dedicated_capital_usd"] == 0 and asic.loc[2, "decode_chips"] > 0  # GPUs serve it
    # in between, the MoE needs tp4: the four chips serve part of decode, H100s the rest
    assert asic.loc[1, "dedicated"].startswith("serves ") and asic.loc[1, "dedicated_label"].startswith(
        "decode-asic tp4"
    )
    assert 0 < asic.loc[1, "decode_chips"] <= rows(churn, "GPU").loc[1, "decode_chips"]
    assert rows(churn, "GPU")["written_off_usd"].sum() == 0


def test_no_write_off_while_the_model_still_fits() -> None:
    lt = validate_lifetime(doc(periods=[
        {"name": f"year {i}", "months": 12, "model": DENSE, "set": LONG} for i in (1, 2, 3)
    ]))  # fmt: skip
    res = run_lifetime(lt)
    asic = rows(res, "ASIC")
    assert (asic["written_off_usd"] == 0).all()
    assert (asic["dedicated"] == "serves all at tp1").all() and (asic["decode_chips"] == 0).all()
    assert list(asic["dedicated_capital_usd"]) == pytest.approx(
        [20_000.0] * 3
    )  # $100,000 over 60 months, 12 a period
    total = res.totals.set_index("portfolio")
    assert total.loc["ASIC", "book_value_end_usd"] == pytest.approx(40_000.0)  # left on the books, not billed


def test_kept_idle_the_fleet_is_not_written_off_but_still_costs(churn: Any) -> None:
    kept = run_lifetime(load_lifetime(PRESET).model_copy(update={"stranded": "keep"}))
    asic = rows(kept, "ASIC")
    assert (asic["written_off_usd"] == 0).all()
    assert asic.loc[2, "dedicated"].startswith("kept idle") and asic.loc[2, "dedicated_chips_used"] == 0
    assert (
        asic.loc[2, "dedicated_capital_usd"] == pytest.approx(20_000.0)
        and asic.loc[2, "dedicated_running_usd"] > 0
    )
    written = rows(churn, "ASIC")
    # the idle year's depreciation plus the book value left at the end is what the write-off charged
    left = kept.totals.set_index("portfolio").loc["ASIC", "book_value_end_usd"]
    assert asic.loc[2, "dedicated_capital_usd"] + left == pytest.approx(written.loc[2, "written_off_usd"])


def test_the_book_value_left_is_said_beside_the_totals(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/lifetime.md: the book value left at the end is reported beside the totals, not billed. Kept
    idle, asic-model-churn's ASIC leaves $40,000 that its $3.136 per million tokens does not hold; the
    table and the sentence say so, and say "kept idle" only of idle chips."""
    assert main(["lifetime", PRESET, "--stranded", "keep"]) == 0
    out = capsys.readouterr().out
    head = next(line for line in out.splitlines() if line.startswith("portfolio"))
    assert "book value $" in head
    asic = next(line for line in out.splitlines() if line.startswith("ASIC ") and "," in line)
    assert "40,000" in asic.split()
    assert "($40,000 of book value left at month 36, not billed; its chips kept idle)" in out
    # a fleet still serving at the end: its value is left too, and it is not idle
    serving = run_lifetime(validate_lifetime(doc(periods=[
        {"name": f"year {i}", "months": 12, "model": DENSE, "set": LONG} for i in (1, 2, 3)
    ])))  # fmt: skip
    line = lifetime_summary(serving)
    assert "($40,000 of book value left at month 36, not billed; its chips still serving)" in line
    assert "book value" not in lifetime_summary(run_lifetime(load_lifetime(PRESET)))  # written off: none left
    # the page's headline too: "4.1% less, $51,728 less in all" left the $40,000 still owed unsaid
    from engine.planning.lifetime import headline_line

    kept = run_lifetime(load_lifetime(PRESET).model_copy(update={"stranded": "keep"}))
    assert "less in all, with $40,000 of ASIC's capital still on the books)" in headline_line(kept)
    assert "on the books" not in headline_line(run_lifetime(load_lifetime(PRESET)))


def test_period_bills_add_up_to_the_total(churn: Any) -> None:
    p, t = churn.periods, churn.totals.set_index("portfolio")
    assert p[list(PARTS)].sum(axis=1).to_numpy() == pytest.approx(p["total_usd"].to_numpy())
    for name, g in p.groupby("portfolio"):
        assert g["total_usd"].sum() == pytest.approx(t.loc[name, "total_usd"])
        assert g["output_tokens"].sum() == pytest.approx(t.loc[name, "output_tokens"])
        unit = t.loc[name, "total_usd"] / t.loc[name, "output_tokens"] * 1e6
        assert t.loc[name, "usd_per_million_tokens"] == pytest.approx(unit)
    # both portfolios serve the same load: the same tokens each period (paired)
    assert (rows(churn, "GPU")["output_tokens"] == rows(churn, "ASIC")["output_tokens"]).all()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"periods": [{"name": "x", "months": 121, "model": DENSE}]}, "periods[0].months"),
        ({"periods": [{"name": "x", "months": 60, "model": DENSE}, {"name": "y", "months": 61, "model": DENSE}]},
         "periods: 121 months in all; at most 120"),
        ({"periods": [{"name": "x", "months": 6, "model": DENSE}] * 2}, "periods: names must be unique"),
        ({"periods": []}, "periods"),
        ({"periods": [{"name": str(i), "months": 1, "model": DENSE} for i in range(13)]},
         "periods: needs at most 12 entries (got 13)"),
        ({"sizing_window_s": 5}, "sizing_window_s"),
        ({"stranded": "sell"}, "stranded"),
        ({"portfolios": [{"name": "A", "prefill": {"hardware": "h100-sxm"},
                          "decode": {"hardware": "decode-asic", "dedicated": True}}]}, "fallback: a dedicated"),
        ({"portfolios": [{"name": "A", "prefill": {"hardware": "h100-sxm", "tp": [2, 2]},
                          "decode": {"hardware": "h100-sxm"}}]}, "portfolios[0].prefill.tp: a degree is repeated"),
        ({"portfolios": [{"name": "A", "prefill": {"hardware": "h100-sxm", "tp": [0]},
                          "decode": {"hardware": "h100-sxm"}}]}, "portfolios[0].prefill.tp[0]: Input should be greater than"),
        ({"unknown": 1}, "unknown: unknown field"),
    ],
)  # fmt: skip
def test_bad_documents_are_refused_naming_the_field(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=re.escape(message)):
        validate_lifetime(doc(**changes))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"base": "no-such-preset"}, "unknown preset"),
        ({"periods": [{"name": "x", "months": 6, "model": DENSE, "set": {"workload.arrival.rate_rps": -1}}]},
         "periods[0] (x): workload.arrival.rate_rps"),
        ({"periods": [{"name": "x", "months": 6, "model": {"id": "no-such-model"}}]}, "periods[0] (x):"),
        ({"portfolios": [{"name": "A", "prefill": {"hardware": "nope"}, "decode": {"hardware": "h100-sxm"}}]},
         "portfolios[0].prefill.hardware: unknown chip"),
        ({"sizing_window_s": 3600, "periods": [
            {"name": str(i), "months": 1, "model": DENSE, "set": {"workload.arrival.rate_rps": 100}} for i in range(1)
        ]}, "sizing_window_s: 3600 s"),
    ],
)  # fmt: skip
def test_what_only_a_run_can_check_is_refused_naming_the_field(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=re.escape(message)):
        run_lifetime(validate_lifetime(doc(**changes)))


def test_a_fleet_that_cannot_serve_the_first_period_is_refused() -> None:
    lt = validate_lifetime(
        doc(periods=[{"name": "fp4", "months": 12, "model": {"id": "llama-3.1-70b", "weights": "fp4"}}])
    )
    with pytest.raises(
        ScenarioError, match=r"portfolios\[1\]\.decode: decode-asic cannot serve the first period"
    ):
        run_lifetime(lt)


def test_cli_prints_the_bill_and_json_parses(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lifetime", PRESET]) == 0
    out = capsys.readouterr().out
    assert "written off" in out and "ASIC" in out and "per million output tokens" in out
    # the counts are the cost model's, said beside them (a review ran one and found it failing its SLO),
    # and a dedicated fleet's state is printed whole ('designed for bf16, fp' was cut)
    from engine.planning import LIFETIME_SIZING_NOTE

    assert LIFETIME_SIZING_NOTE in out and "not simulated" in LIFETIME_SIZING_NOTE
    assert "written off: designed for bf16, fp8 weights, not fp4 " in out
    assert main(["lifetime", PRESET, "--json", "--stranded", "keep"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["stranded"] == "keep" and {t["portfolio"] for t in data["totals"]} == {"GPU", "ASIC"}
    assert all(t["written_off_usd"] == 0 for t in data["totals"])
    assert main(["lifetime", "no-such-lifetime"]) == 2
    assert "unknown lifetime 'no-such-lifetime'" in capsys.readouterr().err


def test_lifetime_json_sizes_without_simulating() -> None:
    """A lifetime runs the cost model's sizing only: the command loads neither the simulator nor plotly."""
    code = (
        "import sys; from engine.cli.main import main; main(['lifetime', 'asic-model-churn', '--json']); "
        "sys.stderr.write(','.join(m for m in ('simpy', 'engine.serving.run', 'plotly', 'engine.cli.lifetime') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["totals"] and out.stderr.strip() == "engine.cli.lifetime", out.stderr


def test_a_lifetime_file_runs_from_its_path(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "mine.toml"
    path.write_text('name = "x"\nbase = "decode-asic"\nperiods = 3\n', encoding="utf-8")
    assert main(["lifetime", str(path)]) == 2
    assert "mine.toml: periods" in capsys.readouterr().err


def test_the_bounds_table_names_the_lifetime_limits() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "bounds.md").read_text(encoding="utf-8")
    for row in (f"| lifetime periods | {MAX_PERIODS} |", f"| lifetime portfolios | {MAX_PORTFOLIOS} |",
                f"| lifetime sizing | {MAX_SIZING_REQUESTS:,} |"):  # fmt: skip
        assert row in text, row


def test_the_model_and_its_bounds_are_plain_values() -> None:
    lt = load_lifetime(PRESET)
    assert Lifetime.model_validate(lt.model_dump()) == lt and hash(lt) == hash(
        Lifetime.model_validate(lt.model_dump())
    )


def test_the_presets_lesson_quotes_its_run(churn: Any) -> None:
    """Every figure of the lesson is the run's, rounded as written."""
    lesson = " ".join(load_lifetime(PRESET).lesson.split())
    kept = run_lifetime(load_lifetime(PRESET).model_copy(update={"stranded": "keep"}))
    gpu, asic = rows(churn, "GPU"), rows(churn, "ASIC")
    total, total_kept = churn.totals.set_index("portfolio"), kept.totals.set_index("portfolio")
    figures = [
        f"${asic.loc[0, 'usd_per_million_tokens']:.2f}", f"${gpu.loc[0, 'usd_per_million_tokens']:.2f}",
        asic.loc[1, "dedicated"].split()[1], f"${asic.loc[1, 'usd_per_million_tokens']:.2f}",
        f"${gpu.loc[1, 'usd_per_million_tokens']:.2f}", f"${asic.loc[2, 'written_off_usd']:,.0f}",
        f"${total.loc['ASIC', 'usd_per_million_tokens']:.2f}", f"${total.loc['GPU', 'usd_per_million_tokens']:.2f}",
        f"${total_kept.loc['ASIC', 'usd_per_million_tokens']:.2f}",
        f"${total_kept.loc['ASIC', 'book_value_end_usd']:,.0f}",
        # the written-off year and the lifetime's share, as the page's chart and headline write them
        # (they read "$5.00" and "2% less" beside the chart's $4.99 and the headline's 1.5%: a walkthrough)
        f"${asic.loc[2, 'usd_per_million_tokens']:.2f} against ${gpu.loc[2, 'usd_per_million_tokens']:.2f}",
        f"({1 - total.loc['ASIC', 'usd_per_million_tokens'] / total.loc['GPU', 'usd_per_million_tokens']:.1%} less)",
    ]  # fmt: skip
    missing = [f for f in figures if f not in lesson]
    assert not missing, missing


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
FIELDS = ["name", "base", "stranded", "sizing_window_s", "periods", "portfolios", "cost", "version"]


@given(st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=12), json_values, max_size=4))
def test_any_document_gives_a_lifetime_or_one_scenario_error(changes: dict[str, Any]) -> None:
    try:
        assert isinstance(validate_lifetime(doc(**changes)), Lifetime)
    except ScenarioError as exc:
        assert str(exc).strip()


@settings(max_examples=12, deadline=None)
@given(st.dictionaries(st.sampled_from(["workload.arrival.rate_rps", "duration_s", "seed"]) | st.text(max_size=30),
                       json_values, max_size=2))  # fmt: skip
def test_any_period_setting_runs_or_is_refused_naming_the_period(changes: dict[str, Any]) -> None:
    lt = validate_lifetime(
        doc(periods=[{"name": "only", "months": 6, "model": DENSE, "set": {**LONG, **changes}}])
    )
    try:
        assert len(run_lifetime(lt).periods) == 2
    except ScenarioError as exc:
        assert str(exc).startswith(("periods[0] (only)", "sizing_window_s")), exc


def test_a_flexible_chip_without_the_periods_precision_is_said_beside_the_write_off(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The H100 served DeepSeek-V3's FP4 weights unsaid beside a decode ASIC written off for the same
    weights (an infrastructure engineer's review): the period says the H100 has no FP4 units."""
    from engine.planning.lifetime import precision_notes

    res = run_lifetime(load_lifetime(PRESET))
    (said,) = precision_notes(res)
    fp4 = next(p for p in res.lifetime.periods if p.model.weights == "fp4")
    assert said.startswith(
        f"{fp4.name}: h100-sxm has no fp4 units, so {fp4.model.id}'s fp4 weights run through"
    )
    assert res.to_json()["notes"][0] == said  # then the prices it rests on (`assumed_price_notes`)
    assert main(["lifetime", PRESET]) == 0
    assert f"note: {said}" in capsys.readouterr().out
    dense = load_lifetime(PRESET).model_copy(update={"periods": load_lifetime(PRESET).periods[:1]})
    assert precision_notes(run_lifetime(dense)) == []  # BF16 or FP8 on an H100: nothing to say


def test_a_missing_lifetime_file_and_a_bound_say_what_they_are() -> None:
    """`lifetime /nonexistent/x.toml` read "unknown lifetime 'x.toml'", as if a preset's name, and a period of
    0 months "Input should be greater than 0" with no upper end (a review)."""
    from engine.planning.lifetime_spec import validate_lifetime

    with pytest.raises(ScenarioError, match=r"lifetime file '/nonexistent/x\.toml' not found"):
        load_lifetime("/nonexistent/x.toml")
    with pytest.raises(ScenarioError, match=r"unknown lifetime 'nope'"):
        load_lifetime("nope")
    there = Path(__file__)  # a file that is there, not a .toml: said so, not "not found"
    with pytest.raises(ScenarioError, match=r"a lifetime is a \.toml file"):
        load_lifetime(str(there))
    doc = load_lifetime("asic-model-churn").model_dump(mode="json", by_alias=True, exclude_none=True)
    doc["periods"][0]["months"] = 0
    with pytest.raises(ScenarioError, match=r"periods\[0\]\.months: .* to 120 \(got 0\)"):
        validate_lifetime(doc)


def test_the_prices_the_catalog_assumes_are_said_the_dedicated_chip_s_as_owned() -> None:
    """A decode ASIC's assumed $15,000 and $10,000 server share set its depreciation, its $60,000 write-off and
    the headline, and nothing said they were assumed (a capacity planner's review). Rented, a flexible chip
    with a cited rent has no such note, while the dedicated chip is owned whatever the basis."""
    from engine.catalog.entries import load_catalog
    from engine.planning.lifetime import assumed_price_notes

    lt = load_lifetime("asic-model-churn")
    asic = load_catalog().hardware["decode-asic"]
    notes = assumed_price_notes(run_lifetime(lt))
    dedicated = next(n for n in notes if n.startswith("assumed purchase prices of the dedicated chips"))
    assert (
        f"decode-asic ${asic.capex_usd:,.0f} a chip and ${asic.server_capex_usd:,.0f} its server share"
        in dedicated
    )
    rented = lt.model_copy(update={"cost": lt.cost.model_copy(update={"mode": "rent"})})
    notes = assumed_price_notes(run_lifetime(rented))
    assert not any(
        n.startswith("assumed prices, not published ones") for n in notes
    )  # the H100's rent is cited
    assert any("decode-asic" in n for n in notes)
    assert all(n in run_lifetime(rented).to_json()["notes"] for n in notes)


def test_a_fleet_billed_by_the_hour_has_no_book_value_to_read(capsys: pytest.CaptureFixture[str]) -> None:
    """The GPU portfolio's book value read "0" beside a fleet of 56 H100s, as if their value were lost; it
    has no chip bought up front (billed by the hour), so its column reads '-' (a capacity planner's review)."""
    assert main(["lifetime", PRESET]) == 0
    rows = {
        ln.split()[0]: ln.split()
        for ln in capsys.readouterr().out.splitlines()
        if ln.startswith(("GPU ", "ASIC "))
    }
    assert rows["GPU"][3] == "-" and rows["ASIC"][3] == "0"  # the ASIC's fleet, bought, is written off
