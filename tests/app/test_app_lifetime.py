"""The Planner page's specialisation-risk section (streamlit.testing AppTest): it runs the shipped
lifetime, charts the bill with the write-off, and a switch to keeping the fleet idle removes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from engine.planning import load_lifetime, run_lifetime
from tests.app.harness import text_of
from ui.lifetime import PART_STYLE, _capital_line, bill_chart, unit_cost_chart

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_the_planner_page_charts_a_lifetime_and_its_write_off() -> None:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page("app_pages/planner.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(s.value == "Specialisation risk over time" for s in at.subheader)
    assert not at.get("plotly_chart") and not at.metric  # off until asked: the planner's page stays as it was
    at.toggle(key="fg-lifetime-on").set_value(True).run()
    assert at.selectbox(key="fg-lifetime").value == "asic-model-churn"
    metrics = {m.label: m for m in at.metric}
    asic = next(m for label, m in metrics.items() if label.startswith("ASIC"))
    # the write-off is said plainly under the figure, not as a red delta arrow as if $/M had moved
    assert asic.value.startswith("$") and not asic.delta
    captions = [text_of(c.value) for c in at.caption]
    assert "$60,000 of capital written off at month 24" in captions, captions
    # the sizing note is the engine's own Markdown: its command shows as code, not as "\`fengong plan\`"
    sizing = next(c.value for c in at.caption if "not simulated" in c.value)
    assert "`fengong plan`" in sizing and "\\`" not in sizing, sizing
    assert any(
        text_of(m.value).startswith("**Over 36 months ") and " is the cheaper: $" in text_of(m.value)
        for m in at.markdown
    )
    assert not at.warning, [w.value for w in at.warning]
    bill = next(c for c in at.get("plotly_chart") if "Bill per period" in c.proto.spec)
    assert "capital written off" in bill.proto.spec
    periods = json.loads(bill.proto.spec)["data"][0]["x"][0]  # periods named with their months
    assert [p.replace("<br>", " ") for p in periods[:3]] == [  # wrapped to lines of at most 10 characters
        "dense 70B months 0–12",
        "MoE 235B months 12–24",
        "MoE 671B, FP4, long prompts months 24–36",
    ]
    # kept idle instead: nothing is written off, the fleet's idle months are billed, its book value left
    at.segmented_control(key="fg-lifetime-stranded").set_value("keep").run()
    assert not at.exception, [e.value for e in at.exception]
    bill = next(c for c in at.get("plotly_chart") if "Bill per period" in c.proto.spec)
    assert "capital written off" not in bill.proto.spec
    captions = [text_of(c.value) for c in at.caption]
    assert not any("written off" in c for c in captions)
    assert "$40,000 of book value left at month 36 (kept idle)" in captions, captions


def test_the_charts_carry_the_engines_figures() -> None:
    """The bill's bars are the periods' parts (the write-off its own red trace, in the period it
    happens), and the unit-cost chart's dashed levels are the totals."""
    res = run_lifetime(load_lifetime("asic-model-churn"))
    traces = {t.name: t for t in bill_chart(res).data}
    written = traces[PART_STYLE["written_off_usd"][0]]
    assert list(written.y) == list(res.periods["written_off_usd"]) and written.marker.color == "#c0392b"
    assert sum(sum(t.y) for t in traces.values()) == pytest.approx(sum(res.periods["total_usd"]))
    levels = {t.name: t.y[0] for t in unit_cost_chart(res).data if "whole life" in t.name}
    assert sorted(levels.values()) == sorted(res.totals["usd_per_million_tokens"])
    # a period's cost holds for its months: bars, not lines sloping from one period to the next
    bars = [t for t in unit_cost_chart(res).data if t.type == "bar"]
    assert {t.name for t in bars} == set(res.totals["portfolio"])
    assert all(t.type == "bar" or "whole life" in t.name for t in unit_cost_chart(res).data)
    # each period's name under its group of bars, level and wrapped: slanted, 'MoE 671B, FP4, long prompts'
    # ran past the chart and under its legend at 1,100 and 1,280 px (a review)
    fig = bill_chart(res)
    assert fig.layout.xaxis.tickangle == 0
    lines = [ln for label in fig.data[0].x[0] for ln in str(label).split("<br>")]
    width = max(10, 90 // res.periods["period"].nunique())  # as wide as the periods leave room for
    assert max(len(ln) for ln in lines) <= width and any(ln.startswith("months") for ln in lines), lines
    # at ten characters a label ran to five lines (a browser review)
    assert max(str(label).count("<br>") + 1 for label in fig.data[0].x[0]) <= 4


def test_the_headline_says_which_portfolio_is_cheaper_and_by_how_much() -> None:
    from engine.planning import lifetime_headline

    res = run_lifetime(load_lifetime("asic-model-churn"))
    t = res.totals.set_index("portfolio")
    best, other = sorted(("GPU", "ASIC"), key=lambda p: t.loc[p, "usd_per_million_tokens"])
    gap = t.loc[other, "total_usd"] - t.loc[best, "total_usd"]
    less = 1 - t.loc[best, "usd_per_million_tokens"] / t.loc[other, "usd_per_million_tokens"]
    assert gap > 0 and less > 0
    assert lifetime_headline(res) == (
        f"Over 36 months {best} is the cheaper: ${t.loc[best, 'usd_per_million_tokens']:.3f} per million output "
        f"tokens against {other}'s ${t.loc[other, 'usd_per_million_tokens']:.3f} ({less:.1%} less, ${gap:,.0f} less "
        "in all)."
    )


def test_the_periods_table_has_readable_columns() -> None:
    """Every column of the periods table is named in words and formatted (money in dollars)."""
    from ui import tables
    from ui.lifetime import _table

    shown = _table(run_lifetime(load_lifetime("asic-model-churn")).periods)
    assert list(shown.columns) == list(tables.LIFETIME_PERIODS)  # nothing left unnamed, nothing missing
    for col, conf in tables.LIFETIME_PERIODS.items():
        assert "_" not in conf["label"], col
        if col.endswith("_usd"):
            assert conf["type_config"]["format"] == "dollar", col


def test_the_book_value_caption_says_kept_idle_only_of_idle_chips() -> None:
    """A dedicated fleet still serving in the last period leaves book value too, but is not idle."""
    lt = load_lifetime("asic-model-churn")
    # the first two periods alone: the ASIC serves 44% at the end
    serving = run_lifetime(lt.model_copy(update={"periods": lt.periods[:2]}))
    asic = serving.periods[serving.periods["portfolio"] == "ASIC"]
    assert asic["dedicated"].iloc[-1].startswith("serves ")
    t = serving.totals.set_index("portfolio", drop=False).loc["ASIC"]
    assert _capital_line(serving, t) == "$60,000 of book value left at month 24 (still serving)"
