"""Compare's verdict on a latency one side's run makes grow: its figure is a floor. A's level TPOT 22.6 ms
against B's growing 346.6 ms read 'grows with run length' in the better column (a browser pass)."""

from __future__ import annotations

from typing import Any

from engine.explain.compare_table import compare
from engine.explain.sustain import GROWS


def doc(tpot_ms: float, grows: bool) -> dict[str, Any]:
    mark = {"shortfall_rps": 5.0, "steady": []} if grows else None
    return {"latency_ms": {"tpot": {"p50": tpot_ms, "p90": tpot_ms, "p99": tpot_ms}}, "unsustainable": mark}


def better(a: dict[str, Any], b: dict[str, Any]) -> str:
    rows = compare(a, b).set_index("figure")["better"]
    return str(rows["TPOT p99"])


def test_a_floor_already_worse_loses_whatever_the_runs_length() -> None:
    assert better(doc(22.6, False), doc(346.6, True)) == "A"  # B's only grows past A's
    assert better(doc(346.6, True), doc(22.6, False)) == "B"
    assert better(doc(22.6, True), doc(346.6, False)) == GROWS  # A's may grow past B's: unknown
    assert better(doc(22.6, True), doc(22.6, False)) == GROWS  # equal now, A's grows
    assert better(doc(22.6, True), doc(346.6, True)) == GROWS  # both grow
    rows = compare(doc(22.6, False), doc(346.6, True)).set_index("figure")
    assert rows["change_pct"].isna()["TPOT p99"]  # no change quoted against a floor


def test_a_growing_sides_cells_read_as_floors() -> None:
    """The table's cell read 587,271 bare where the card reads '≥ 9.8 min' (a browser pass)."""
    from ui.tables import compare_view

    table = compare(doc(22.6, False), doc(346.6, True))
    row = compare_view(table).set_index("figure").loc["TPOT p99"]
    assert row["b"].startswith("≥ ") and not row["a"].startswith("≥")
    assert "a_grows" not in compare_view(table).columns  # the flags stay out of the shown table


def test_an_attainment_is_the_same_only_where_its_misses_differ_by_chance() -> None:
    """99.67% against 99.19% within SLO read 'same' (a change of 0.5% of the share) where the misses went
    from 118 to 287 of 35,650 requests (a review): attainments are the same only where their misses differ
    by no more than twice the deviation of two Poisson counts; without the counts, by the share alone."""

    def doc(share: float, n: int | None = 35_650) -> dict[str, Any]:
        return {"slo_attainment": share, **({"requests": {"total": n}} if n else {})}

    def better(a: dict[str, Any], b: dict[str, Any]) -> str:
        return str(compare(a, b).set_index("figure")["better"]["SLO attainment"])

    assert better(doc(0.9967), doc(0.9919)) == "A" and better(doc(0.9919), doc(0.9967)) == "B"
    assert better(doc(0.9967, 600), doc(0.9919, 600)) == "same"  # 2 against 5 misses: chance
    assert better(doc(0.9967, None), doc(0.9919, None)) == "same"  # no counts: the share's own change
    assert better(doc(0.9967), doc(0.9967)) == "same"


def test_edge_rows_show_where_a_side_has_an_edge_site_and_a_trade_takes_no_verdict() -> None:
    """Compare had no edge rows: two edge sites' local share, power offloads and site power were on no
    table. They show where either side has an edge site; more served locally is a trade (no verdict),
    a lower edge TTFT is better."""

    def edge(local: float, ttft_p90: float) -> dict[str, Any]:
        return {
            "edge": {
                "local_share": local,
                "offloaded_by_reason": {"power": 10},
                "ttft_ms": {"edge": {"p90": ttft_p90}},
                "peak_site_power_w": 50.0,
            }
        }

    rows = compare(edge(0.65, 1425.0), edge(0.73, 678.0)).set_index("figure")
    assert rows.loc["Served at the edge", "better"] == "a trade"
    assert round(rows.loc["Served at the edge", "change"], 2) == 0.08
    assert rows.loc["Edge TTFT p90", "better"] == "B"
    assert rows.loc["Peak edge site power", "better"] == "same"
    plain = compare(doc(22.6, False), doc(22.6, False))["figure"]
    assert not {"Served at the edge", "Edge TTFT p90", "Offloaded for power"} & set(plain)
    one_side = compare(edge(0.65, 1425.0), doc(22.6, False)).set_index("figure")
    assert one_side.loc["Served at the edge", "b"] is None or one_side["b"].isna()["Served at the edge"]


def test_a_cost_at_saturation_is_marked_and_wins_nothing() -> None:
    """B at 40 req/s, unsustainable, read 46% cheaper per request, unmarked, where `run` marks such a cost
    'at saturation' (a review): its cell says so and, where it is the cheaper, no side is called better;
    where it is the dearer, the other side still is."""
    from engine.explain.sustain import LEVEL
    from ui.tables import compare_view

    def run(usd: float, full: bool) -> dict[str, Any]:
        mark = (
            {"shortfall_rps": 5.0, "steady": [], "offered_rps": 40.0, "sustained_rps": 35.0} if full else None
        )
        return {"cost": {"usd_per_request": usd}, "unsustainable": mark}

    rows = compare(run(0.00054, False), run(0.00029, True)).set_index("figure")
    assert rows.loc["Cost per request", "better"] == LEVEL
    shown = compare_view(compare(run(0.00054, False), run(0.00029, True))).set_index("figure")
    assert (
        shown.loc["Cost per request", "b"].endswith(f", {LEVEL}")
        and LEVEL not in shown.loc["Cost per request", "a"]
    )
    dearer = compare(run(0.00054, False), run(0.00090, True)).set_index("figure")
    assert dearer.loc["Cost per request", "better"] == "A"


def test_a_cost_change_that_is_only_the_drains_is_the_same() -> None:
    """Compare called A better on cost per request '+1.0%' beside 'Cost per hour 29.88 / 29.88, same' and
    'Throughput same' (a browser review and a CLI review): with the same bill per hour and the same requests
    and tokens served, a cost per request moves only with how long each run drained past its window."""
    import copy

    from engine.scenario import codec as io
    from engine.serving.run import simulate

    a = simulate(io.apply_overrides(io.load_preset("chat-disaggregated"), {"duration_s": 60})).summary
    b = copy.deepcopy(a)  # B drained 1% longer: its bill, not its service, is 1% more
    b["drain_end_s"] = a["drain_end_s"] * 1.01
    for key in ("usd_per_request", "usd_per_million_output_tokens", "usd_total"):
        b["cost"][key] = a["cost"][key] * 1.01
    rows = compare(a, b).set_index("figure")
    assert rows.loc["Cost per hour", "better"] == "same" and rows.loc["Throughput", "better"] == "same"
    assert abs(rows.loc["Cost per request", "change_pct"]) >= 0.5  # past the 0.5% threshold ...
    assert rows.loc["Cost per request", "better"] == "same"  # ... and the drain's alone
    assert rows.loc["Cost per 1M output tokens", "better"] == "same"
    dear = copy.deepcopy(b)  # a dearer bill per hour is still called
    dear["cost"]["usd_per_hour"] = a["cost"]["usd_per_hour"] * 1.01
    assert compare(a, dear).set_index("figure").loc["Cost per request", "better"] == "A"
