"""A card's help says how its band is made and quotes no band of its own: Goodput's and $ / request's
quoted fixed figures ("goodput: −36% to +0%; cost per request: −0% to +36%") beside a card reading
−2% to +1% on the Ascend 910B, and called goodput's band the model's throughput band where it is its
run's spread alone (a review)."""

from __future__ import annotations

import re

from tests.app.harness import app, assert_clean

SIGNED = re.compile(r"[−+-]\d+(?:\.\d+)?%")


def test_the_goodput_and_cost_cards_help_quotes_no_band_but_their_own() -> None:
    at = app("results", preset="chat-ascend-910b")
    assert_clean(at)
    cards = {m.label: m for m in at.metric}
    for label in ("Goodput", "$ / request"):
        card = next(m for name, m in cards.items() if name.startswith(label))
        quoted = set(SIGNED.findall(card.help or ""))
        assert quoted <= set(SIGNED.findall(card.value)), (label, quoted, card.value)
        assert "spread" in (card.help or ""), card.help


def test_a_ttft_p99_of_the_answered_only_says_so() -> None:
    """prefill-loss-nofallback's card read 'TTFT p99 1,057 ms' bare where 15% of its requests never had a
    first token (their p99 is none at all; the class's p90 TTFT reads ∞): the card says whose it is."""
    from engine.scenario.codec import apply_overrides, load_preset

    at = app(
        "results",
        apply_overrides(load_preset("prefill-loss-nofallback"), {}),
        preset="prefill-loss-nofallback",
    )
    assert_clean(at)
    ttft = next(m for m in at.metric if m.label.startswith("TTFT p99"))
    said = str(ttft.proto.delta)
    assert "answered" in said and re.search(r"of the 8\d% answered", said), said
    fine = app("results", preset="chat-disaggregated")
    assert "answered" not in str(next(m for m in fine.metric if m.label.startswith("TTFT p99")).proto.delta)
