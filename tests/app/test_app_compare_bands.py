"""Compare's table and cards give one figure one band: once each side's run spread is known, the
table's band column reads it for the figures it moves (`engine.explain.spread_rows`); it read the
kind's band beside the cards' spread before (cost per request −6% to +29% in the column, −2% to +3%
on the card: a review)."""

from __future__ import annotations

from engine.scenario.codec import load_preset
from tests.app.harness import app

CARDS = {
    "TTFT p99: B": "TTFT p99",
    "TPOT p99: B": "TPOT p99",
    "Goodput: B": "Goodput",
    "$ / request: B": "Cost per request",
}


def test_a_scenario_against_itself_reads_its_cards_bands_in_the_table() -> None:
    at = app("compare", load_preset("chat-disaggregated"), preset="chat-disaggregated")
    at.selectbox(key="b").set_value("chat-disaggregated").run()  # B: the same scenario as A
    assert not at.exception
    table = next(d.value for d in at.dataframe if "band" in getattr(d.value, "columns", []))
    bands = dict(zip(table["figure"], table["band"], strict=True))
    cards = {m.label: m.value for m in at.metric if m.label in CARDS}
    assert len(cards) == len(CARDS)
    for label, figure in CARDS.items():
        assert bands[figure] and bands[figure] in cards[label], (figure, bands[figure], cards[label])
