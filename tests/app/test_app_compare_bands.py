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
    # every change reads zero, and the page says why (it did not: a browser review)
    assert any("A and B are the same scenario" in i.value for i in at.info)


def test_every_latency_percentile_reads_its_spread_where_its_chip_has_no_band_of_its_kind() -> None:
    # the H100 under vLLM has no TTFT band: the column read TTFT p50 and p90 bare beside a p99 of
    # "−36% to +96%" from the spread; each percentile now reads the spread's band, a TPOT's at least
    # its kind's
    at = app("compare", load_preset("chat-disaggregated"), preset="chat-disaggregated")
    at.selectbox(key="b").set_value("chat-colocated").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "band" in getattr(d.value, "columns", []))
    bands = dict(zip(table["figure"], table["band"], strict=True))
    for p in ("p50", "p90", "p99"):
        assert bands[f"TTFT {p}"], (p, bands)
    # a queue near its cliff (chat-colocated's) moves the tail more than the middle
    assert bands["TTFT p50"] != bands["TTFT p99"]
    # TPOT's middle moved by its spread too (B near its cliff), past its kind's band alone
    assert bands["TPOT p50"] != "−27% to +11%" and bands["TPOT p90"] != "−27% to +11%"


def test_a_call_inside_the_band_on_other_chips_is_said_under_the_table() -> None:
    """B's TPOT 11.9% over A's on H20 decode against H100, inside a band of −44% to +64%, read 'A' bare (a
    review): a caption under the table says the call is not one the model can promise, and how to check it."""
    from tests.app.harness import app, short, text_of

    at = app("compare", short("chat-hetero-h20"))  # B: its counterpart, chat-disaggregated, on this load
    assert not at.exception, [e.value for e in at.exception]
    said = [
        text_of(c.value)
        for c in at.caption
        if "called better on a change inside their band" in text_of(c.value)
    ]
    assert (
        len(said) == 1
        and said[0].startswith("TPOT")
        and "'Check the comparison' below reruns both" in said[0]
    )


def test_the_bands_explanation_reads_once_for_two_sides_on_other_chips() -> None:
    """On chat-hetero-h20 against its counterpart the bands' explanation read twice, 'Bands (A): ...' and
    'Bands (B): ...', about eighty words each where only the chips differed (a browser review): once, with
    each side's chips."""
    from tests.app.harness import app, short, text_of

    at = app("compare", short("chat-hetero-h20"))
    assert not at.exception, [e.value for e in at.exception]
    said = [text_of(c.value) for c in at.caption if "how each figure moves" in text_of(c.value)]
    assert len(said) == 1 and said[0].count("how each figure moves") == 1, said
    assert said[0].startswith("Bands (A and B):") and "iteration time A: " in said[0] and "; B: " in said[0]
    assert "h20" in said[0].split("; B: ")[0] and "h20" not in said[0].split("; B: ")[1].split(")")[0]
