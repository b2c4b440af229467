"""How the pages' tables and the live strip write their figures: a stepped column rounded, not cut; a
TTFT with no headroom marked; the HTML report's per-class table as the page's."""

from __future__ import annotations

import pandas as pd

from engine.explain import presentation as pr


def test_a_stepped_column_shows_its_value_rounded_not_cut() -> None:
    """Streamlit cuts a value to its column's step: the drill table read 98.7% where `fengong drill`
    prints 98.8% for 0.98759 (a browser review). Each stepped column is rounded before it is shown."""
    import pandas as pd

    from ui.tables import PLAN_RUNS, stepped

    frame = pd.DataFrame(
        {
            "slo_attainment": [0.98759, 0.5],
            "prefill_busy": [0.99967, None],
            "simulated": [3, 4],
            "x": [0.12345, 1.0],
        }
    )
    out = stepped(frame, PLAN_RUNS)
    assert out["slo_attainment"].tolist() == [0.988, 0.5] and out["prefill_busy"].iloc[0] == 1.0
    assert out["x"].tolist() == [0.12345, 1.0]  # no step: as it was
    assert out["simulated"].tolist() == [3, 4]
    assert frame["slo_attainment"].iloc[0] == 0.98759  # the caller's frame is left alone
    mixed = stepped(pd.DataFrame({"slo_attainment": [0.98759, None, "never"]}, dtype=object), PLAN_RUNS)
    assert mixed["slo_attainment"].tolist()[0] == 0.988 and mixed["slo_attainment"].tolist()[2] == "never"


def test_the_live_strip_marks_a_ttft_with_no_headroom() -> None:
    """rag-long-context at 4 req/s is at capacity (its queue never emptied): the strip read a bare
    'TTFT p99 25.3 s', 'grows with run length' only a step further (a browser review)."""
    from engine import apply_overrides, load_preset, simulate
    from ui.layout import HEADROOM_PILL, growth, strip_rows

    s = simulate(apply_overrides(load_preset("rag-long-context"), {"workload.arrival.rate_rps": 4.0})).summary
    assert s.get("at_capacity") and not s.get("unsustainable")
    rows = {label: (value, mark) for label, value, mark in strip_rows(pr.headline(s), {}, None, growth(s))}
    # the card's short pill: the long phrase cut the sidebar's values off ('1.' for 1.1%: a browser review)
    assert (
        rows["TTFT p99"][1] == f":small[:orange[{HEADROOM_PILL}]]"
        and HEADROOM_PILL not in rows["TPOT p99"][1]
    )
    calm = simulate(load_preset("rag-long-context")).summary  # 3 req/s: headroom, nothing said
    assert all(HEADROOM_PILL not in m for _, _, m in strip_rows(pr.headline(calm), {}, None, growth(calm)))


def test_the_reports_class_table_reads_as_the_page_does() -> None:
    """The HTML report wrote enterprise-mixed's batch class as 'ttft_at_percentile_ms 2.239e+04' beside
    'ttft_target_ms 3e+04', and None in targets no class sets (a browser review)."""
    from engine import load_preset, simulate
    from engine.explain import slo_tail
    from ui.tail_table import report_view

    res = simulate(load_preset("enterprise-mixed"))
    view = report_view(slo_tail(res.scenario, res.requests))
    batch = view[view["class"] == "batch"].iloc[0]
    assert batch["TTFT target"] == "30,000 ms" and batch["TTFT at pct"].endswith(" ms")
    assert "," in batch["TTFT at pct"] and "e+" not in view.to_html()
    assert "E2E target" not in view and "None" not in view.to_html()  # no class sets one: no column
    assert batch["met SLO"].endswith("%") and batch["SLO pct"] == "p90"


def test_a_compared_figure_names_its_unit_unless_it_says_it() -> None:
    """The Compare table's figure carries its unit ('Cost per request ($)'); a share (read '99.58%'), a
    count and a name ending in its unit ('Output tokens/s') stay as they are."""
    from engine.explain.compare_table import with_unit

    assert with_unit("Cost per request", "$") == "Cost per request ($)"
    assert with_unit("TTFT p50", "ms") == "TTFT p50 (ms)"
    assert with_unit("Output tokens/s", "tokens/s") == "Output tokens/s"
    assert with_unit("SLO attainment", "%") == "SLO attainment"
    assert with_unit("Rejected", "requests") == "Rejected"


def test_two_runs_tables_become_one_each_row_led_by_its_side() -> None:
    """Compare's utilisation and cost tables: A's rows then B's in one table across the page (side by side
    their last columns sat past the right edge at 1,100 px); a side with no rows adds none."""
    from ui.tables import by_side

    a = pd.DataFrame({"pool": ["prefill", "decode"], "busy": [0.5, 1.0], "bill_share": [0.5, 0.5]})
    b = pd.DataFrame({"pool": ["mixed"], "busy": [1.0]})
    both = by_side([("A", a), ("B", b)], "pool")
    assert list(both["pool"]) == ["A prefill", "A decode", "B mixed"]
    assert list(both["busy"]) == [0.5, 1.0, 1.0] and pd.isna(both.loc[2, "bill_share"])
    assert list(by_side([("A", a), ("B", b.iloc[:0])], "pool")["pool"]) == ["A prefill", "A decode"]
    assert by_side([("A", a.iloc[:0])], "pool").empty


def test_one_pools_share_of_the_bill_beside_a_run_of_several() -> None:
    """Compare's utilisation table: B's one pool read an empty 'share of bill' beside A's 50% and 50% (a
    review). Asked for (`shares`), one pool's share is the bill less its cache tiers'; not asked, no column."""
    from engine import apply_overrides, load_preset, simulate
    from engine.explain import utilization_frame

    run = simulate(apply_overrides(load_preset("chat-colocated"), {"duration_s": 20.0}))
    assert "bill_share" not in utilization_frame(run.summary)
    assert list(utilization_frame(run.summary, shares=True)["bill_share"]) == [1.0]  # no cache tier here


def test_the_planners_shapes_table_says_what_is_missing_in_words() -> None:
    """'None' stood in three columns of 'Every shape and what became of it', and a shape simulated
    without a passing run read 'simulated' beside no run (a review)."""
    import math

    from ui.tables import shapes_view

    frame = pd.DataFrame(
        {
            "lower_bound_split": ["2P:1D", None, "3 mixed"],
            "lower_bound_usd_per_hour": [13.5, math.inf, 18.0],
            "status": ["simulated", "pruned", "simulated"],
            "best_run": [4, -1, -1],
        }
    )
    styled = shapes_view(frame)
    view = styled.data  # numbers under the text: a header click sorts by value (as text, 100.00 led 9.00)
    assert list(view["lower_bound_split"]) == ["2P:1D", "–", "3 mixed"]
    assert view["lower_bound_usd_per_hour"].tolist()[0::2] == [13.5, 18.0] and view["best_run"].iloc[0] == 4
    assert view["lower_bound_usd_per_hour"].isna().tolist() == [False, True, False]
    assert view["best_run"].isna().tolist() == [False, True, True]
    assert list(view["status"]) == ["simulated", "pruned", "simulated: none passed"]
    html = styled.to_html()
    assert ">13.50<" in html and ">–<" in html and "nan" not in html.lower().replace("nan-", "")


def test_a_pools_bill_share_is_the_parts_tables() -> None:
    """H100 prefill and MI300X decode read 55.4% as the prefill's share in the bill's parts and 55.5% in
    the utilisation table (its pool bill also held the KV link's): one figure now (a browser review)."""
    from engine import simulate
    from engine.explain.bill import cost_parts, utilization_frame
    from engine.scenario import codec as io

    sc = io.apply_overrides(io.load_preset("chat-disaggregated"), {"deployment.pools[1].hardware": "mi300x"})
    res = simulate(io.apply_overrides(sc, {"duration_s": 60}))
    parts = dict(zip(cost_parts(res.summary)["part"], cost_parts(res.summary)["share"], strict=True))
    assert parts["kv_transfer"] > 0  # the link bills apart
    for pool, share in zip(*(utilization_frame(res.summary)[k] for k in ("pool", "bill_share")), strict=True):
        assert share == parts[pool]


def test_a_per_chip_band_whose_low_end_is_its_figure_reads_up_to() -> None:
    """The verdict's sentence reads 'TTFT p90 463 ms (up to 877)' where no faster run was made; the table's
    cells read '431 (431–1,333)' beside it, as if the figure could not be lower (a read-through)."""
    from ui.plan_per_chip import _spread

    assert _spread([431.0, 1333.0], ",.0f", 431.2) == " (up to 1,333)"
    assert _spread([319.0, 877.0], ",.0f", 463.0) == " (319–877)"
    assert _spread([517.0, 517.2], ",.0f", 517.0) == ""  # both ends read alike: no band
