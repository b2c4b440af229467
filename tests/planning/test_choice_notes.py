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
