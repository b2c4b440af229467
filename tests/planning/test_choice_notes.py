"""The planner says where its choice's instances hold little more KV cache than the longest request, and
where a pool of it is a single instance."""

from __future__ import annotations

import re

from engine.planning.candidates import SearchSpace
from engine.planning.plan import plan
from engine.planning.plan_notes import KV_ROOM
from engine.scenario import codec as io


def _room(notes: tuple[str, ...]) -> list[str]:
    return [n for n in notes if "tokens of KV cache" in n]


def test_a_choice_whose_kv_cache_barely_holds_the_longest_prompt_says_so() -> None:
    """A 70B in FP8 on one H100 holds 18,176 tokens of KV cache against the chat workload's prompts of
    up to 16,384 tokens: only the emitted script's comment said so (a review)."""
    sc = io.load_preset("chat-disaggregated")
    p = plan(sc, 20.0, SearchSpace(hardware=("h100-sxm",), tp=(1, 2), pp=(1,), duration_s=30.0), verify=False)
    c = p.verdict.chosen if p.verdict is not None else None
    assert c is not None and str(c["shape"]).startswith("h100-sxm tp1 ->")
    (said,) = _room(p.notes)
    room, longest = (int(x.replace(",", "")) for x in re.findall(r"([\d,]+) tokens", said))
    assert said.startswith("the choice's prefill instances (h100-sxm tp1)")
    assert longest == 16384 and longest < room < KV_ROOM * longest  # the lognormal's clip
    assert f"{room / longest:.2f}x the longest prompt the workload can send" in said


def test_a_choice_with_room_to_spare_says_nothing_of_it() -> None:
    sc = io.load_preset("chat-disaggregated")
    p = plan(sc, 20.0, SearchSpace(hardware=("b200",), tp=(1,), pp=(1,), duration_s=30.0), verify=False)
    assert p.best is not None and not _room(p.notes)


def test_a_pool_of_one_instance_is_said_with_the_price_of_a_spare() -> None:
    """A plan's one decode instance carried 40 req/s, and nothing said a lost chip stops decoding (an
    infrastructure engineer's review): each pool of one instance is said, with one more's price."""
    sc = io.load_preset("chat-disaggregated")
    space = SearchSpace(hardware=("h100-sxm",), tp=(1, 2), pp=(1,), duration_s=30.0)
    p = plan(sc, 20.0, space, verify=False, risk_aware=False)
    run = p.runs.iloc[p.best_run]
    spare = [n for n in p.notes if "(N+1)" in n]
    singles = [role for role in ("prefill", "decode") if run[f"{role}_instances"] == 1]
    assert singles and len(spare) == len(singles)
    for role, said in zip(singles, spare, strict=True):
        tp = int(run[f"{role}_tp"])
        assert said.startswith(f"the choice's {role} pool is one instance (h100-sxm tp{tp})")
        assert f"costs ${2.49 * tp:,.2f}/h more" in said  # its chips at the catalog's rent


def test_a_row_that_holds_at_the_edge_only_at_a_premium_says_its_cheapest_as_modelled() -> None:
    """A MoE plan's MI300X row read $224.00/h (4P:12D, held slowed), nothing saying that 4P:1D passed as
    modelled at $64.00/h (an infrastructure engineer's review)."""
    import pandas as pd

    from engine.planning.verdict_bands import edge_premium_note

    rows = [
        {
            "group": "b200",
            "split": "2 mixed",
            "objective_value": 72.0,
            "nominal_value": 72.0,
            "from_nominal": True,
        },
        {
            "group": "mi300x",
            "split": "4P:12D",
            "objective_value": 224.0,
            "nominal_value": 64.0,
            "from_nominal": False,
            "nominal_shape": "mi300x tp4 -> mi300x tp1 dp16 ep16",
            "nominal_split": "4P:1D",
        },
    ]
    said = edge_premium_note(pd.DataFrame(rows), "usd_per_hour")
    assert said == (
        "mi300x's row, 4P:12D at $224.00/h over the planning window, is 250% above the cheapest that passed "
        "there as modelled (mi300x tp4 -> mi300x tp1 dp16 ep16 4P:1D at $64.00/h), which does not hold with the "
        "chips slowed (the rows hold with every chip at its band's pessimistic edge)"
    )
    assert "b200" not in said and edge_premium_note(pd.DataFrame(rows[:1]), "usd_per_hour") == ""


def test_the_premium_note_compares_one_window_and_leaves_the_choice_to_the_premium_line() -> None:
    """A MoE plan by $/M: the choice's row read "$5.34 per M (its full-length run) is 26% above ... $4.24
    (the nominal's planning window)" under a premium line of +98% over both full-length runs (a hardware
    strategist's review). A row compares its planning-window figure with its nominal's; the chosen row
    whose nominal is the premium line's is left to that line."""
    import pandas as pd

    from engine.planning.verdict_bands import edge_premium_note

    chosen = {
        "group": "b200",
        "split": "1 mixed",
        "winner": True,
        "objective_value": 5.34,  # full-length
        "planning_value": 6.10,
        "nominal_value": 4.24,
        "nominal_run": 3,
        "from_nominal": False,
        "nominal_shape": "b200 tp8",
        "nominal_split": "1 mixed",
    }
    table = pd.DataFrame([chosen])
    said = edge_premium_note(table, "usd_per_million_tokens")
    assert "$6.10 per M output tokens over the planning window, is 44% above" in said and "5.34" not in said
    assert edge_premium_note(table, "usd_per_million_tokens", said_run=3) == ""
    assert edge_premium_note(table, "usd_per_million_tokens", said_run=4) == said  # another nominal: said
