"""What the drill says of a fallback that ended as none did: its own reason, not another's."""

from __future__ import annotations

from engine.explain.drill import VARIANTS, WHY_UNCHANGED, unchanged_text


def test_a_variant_that_never_acted_gets_its_own_reason() -> None:
    """failure-drill's colocated row read degrade's reason, that 'only the colocated fallback serves
    them', in a sentence saying the colocated fallback never acted (a browser review)."""
    said = unchanged_text(["colocated"])
    assert said.startswith("Colocated: the same as none") and "every prefill instance is down" in said
    assert "degrade" not in said and "only the colocated fallback serves" not in said
    both = unchanged_text(["colocated", "degrade"])
    assert (
        "colocated: the colocated fallback" in both
        and "degrade: degrade acts only" in both
        and "they never" in both
    )
    assert set(WHY_UNCHANGED) == set(VARIANTS) - {"none"}  # every variant has its reason
