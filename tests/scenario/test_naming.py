"""An edited scenario's name follows its edits: derived from its model and pools, "edited from" its start."""

from __future__ import annotations

import pytest

from engine.cli.main import main
from engine.scenario.codec import apply_overrides, load_preset
from engine.scenario.naming import NAME_MAX_CHARS, derived_name, named

PRESET = "chat-disaggregated"


def test_an_unchanged_preset_keeps_its_name() -> None:
    base = load_preset(PRESET)
    assert named(base, base, PRESET) is base


def test_a_swapped_chip_renames_the_scenario() -> None:
    base = load_preset(PRESET)
    edited = apply_overrides(base, {"deployment.pools[0].hardware": "mi300x"})
    assert named(edited, base, PRESET).name == (
        "llama-3.1-70b on 6 mi300x prefill + 6 h100-sxm decode, edited from chat-disaggregated"
    )


def test_a_swapped_model_renames_the_scenario() -> None:
    base = load_preset("moe-deepseek-h200")
    edited = apply_overrides(base, {"model.id": "deepseek-r1"})
    name = named(edited, base, "moe-deepseek-h200").name
    assert name.startswith("deepseek-r1 on ") and name.endswith(", edited from moe-deepseek-h200")
    assert base.name not in name


def test_any_edit_names_what_it_runs_and_a_set_name_is_kept() -> None:
    base = load_preset("chat-colocated")
    faster = apply_overrides(base, {"workload.arrival.rate_rps": 20.0})
    assert (
        named(faster, base, "chat-colocated").name
        == "llama-3.1-70b on 12 h100-sxm, edited from chat-colocated"
    )
    mine = apply_overrides(base, {"name": "my test", "workload.arrival.rate_rps": 20.0})
    assert named(mine, base, "chat-colocated").name == "my test"


def test_pools_of_one_kind_are_summed_and_a_long_name_fits_the_field() -> None:
    base = load_preset("chat-colocated")
    pools = [
        {"name": f"p{i}", "hardware": hw, "tp": 2, "count": 1}
        for i, hw in enumerate(["h100-sxm", "mi300x"] * 4)
    ]
    edited = apply_overrides(base, {"deployment.pools": pools})
    assert (
        derived_name(edited, "chat-colocated")
        == "llama-3.1-70b on 8 h100-sxm + 8 mi300x, edited from chat-colocated"
    )
    long = derived_name(edited, "a-file-stem-" * 20)
    assert len(long) == NAME_MAX_CHARS and long.endswith("…")
    apply_overrides(edited, {"name": long})  # a valid name


@pytest.mark.parametrize("json_out", [False, True])
def test_the_cli_names_an_edited_scenario(json_out: bool, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["scenario", PRESET, "--set", "deployment.pools[1].hardware=mi300x"]
    assert main([*args, "--json"] if json_out else args) == 0
    out = capsys.readouterr().out
    want = "llama-3.1-70b on 6 h100-sxm prefill + 6 mi300x decode, edited from chat-disaggregated"
    assert want in out and load_preset(PRESET).name not in out


def test_an_edit_does_not_carry_the_presets_words_as_its_own() -> None:
    """An export of chat-disaggregated edited onto B200s at 40 req/s kept "the same twelve H100s ...
    three prefill and three decode instances" and the preset's 16 req/s lesson (a walkthrough)."""
    base = load_preset(PRESET)
    edited = named(apply_overrides(base, {"workload.arrival.rate_rps": 40.0}), base, PRESET)
    assert edited.description == f"Edited from {PRESET}; {PRESET}'s description: {base.description}"
    assert base.lesson and edited.lesson == ""
    assert edited.counterpart == base.counterpart  # still compared with the same baseline
    # on other chips, the preset's words describe its own deployment, and say so (a browser review)
    moved = named(apply_overrides(base, {"deployment.pools[0].hardware": "b200"}), base, PRESET)
    assert moved.description.startswith(
        f"Edited from {PRESET}; {PRESET}'s own description, of its deployment, not this one's: "
    )
    mine = apply_overrides(base, {"workload.arrival.rate_rps": 40.0, "lesson": "mine", "description": "d"})
    kept = named(mine, base, PRESET)
    assert (kept.lesson, kept.description) == ("mine", "d")  # the user's own words stay


def test_an_autoscaled_pool_is_named_by_its_most() -> None:
    """day-autoscaled's pools scale between one and eight instances of two H100s: the edit's name read
    '16 h100-sxm prefill' as if all sixteen ran (a review)."""
    base = load_preset("day-autoscaled")
    edited = apply_overrides(base, {"workload.arrival.rate_rps": 12.0})
    assert named(edited, base, "day-autoscaled").name == (
        "llama-3.1-70b on up to 16 h100-sxm prefill + up to 16 h100-sxm decode, edited from day-autoscaled"
    )


def test_a_deployment_counts_its_chips_once_for_every_reader() -> None:
    # the chip count that names a scenario, sizes a plan and prices a pool: count x tp x pp x dp a pool
    base = load_preset(PRESET)
    wide = apply_overrides(base, {"deployment.pools[1].count": 3, "deployment.pools[1].dp": 2})
    assert [p.chips for p in wide.deployment.pools] == [6 * 1, 3 * 2 * wide.deployment.pools[1].tp]
    assert wide.deployment.chips == sum(p.count * p.tp * p.pp * p.dp for p in wide.deployment.pools)
