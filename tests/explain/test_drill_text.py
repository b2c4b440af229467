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


def test_the_degrade_rows_say_the_settings_they_ran_with_where_the_scenario_sets_none() -> None:
    """moe-deepseek-h200 with a decode loss: the degrade row capped 136 answers beside a form reading degrade
    off, its trigger (8 waiting per entry instance) said in a tooltip alone (a browser review)."""
    from engine.explain.drill import default_degrade, degrade_note
    from engine.scenario.codec import apply_overrides, load_preset

    sc = load_preset("failure-drill")
    assert not sc.deployment.degrade.enabled
    said = degrade_note(sc, ["none", "colocated", "degrade", "both"])
    d = default_degrade(sc)
    assert said.startswith("This scenario's degrade is off, so the degrade rows run the drill's own")
    assert f"above {d.above_backlog:g} requests waiting per entry instance" in said
    assert f"capped at {d.max_output_tokens:,} tokens" in said
    assert degrade_note(sc, ["none", "colocated"]) == ""  # no degrade row
    on = apply_overrides(sc, {"deployment.degrade.enabled": True, "deployment.degrade.above_backlog": 4})
    assert degrade_note(on, ["none", "degrade"]) == ""  # its own settings, shown on its form
