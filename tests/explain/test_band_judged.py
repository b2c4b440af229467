"""A side called better on a latency change inside the band, where A and B run it on different chips, is
said to rest on a difference the model cannot promise: chat-hetero-h20's TPOT p90 11.9% over
chat-disaggregated's, with a band of −44% to +64%, read 'A' bare (a CLI review)."""

from __future__ import annotations

from engine import explain as ex
from engine.scenario.codec import apply_overrides, load_preset
from engine.serving.run import simulate


def _table(a_name: str, b_name: str) -> tuple[object, list, list]:
    a, b = (apply_overrides(load_preset(n), {"duration_s": 120.0}) for n in (a_name, b_name))
    ra, rb = simulate(a), simulate(b)
    ta, tb = ex.pool_marks(a, ra.summary), ex.pool_marks(b, rb.summary)
    table = ex.verdicts(
        ex.with_expected_error(ex.compare(ra.summary, rb.summary), ta, tb), a, b, ra.summary, rb.summary
    )
    return table, ta, tb


def test_a_latency_call_inside_the_band_on_other_chips_is_said() -> None:
    table, ta, tb = _table("chat-disaggregated", "chat-hetero-h20")
    inside = ex.inside_band(table, ta, tb)
    latencies = [f for f in inside if not f.startswith(("Energy", "Mean power"))]
    assert latencies and all(f.startswith("TPOT") for f in latencies), inside
    called = table.set_index("figure")["better"]
    assert all(called[f] in ("A", "B") for f in inside)
    note = ex.inside_band_note(inside)
    assert note is not None and note.startswith(f"{inside[0]}") and "--margin reruns both" in note
    assert "'Check' reruns both" in (ex.inside_band_note(inside, "'Check' reruns both") or "")
    assert not any(f.startswith("Cost") for f in inside)  # a cost moves with its prices too: not judged here


def test_the_same_chips_share_their_error_and_are_not_flagged() -> None:
    """chat-colocated against chat-disaggregated: the same H100s on both sides, their model error shared."""
    table, ta, tb = _table("chat-colocated", "chat-disaggregated")
    assert set(table["better"]) & {"A", "B"}
    assert ex.inside_band(table, ta, tb) == [] and ex.inside_band_note([]) is None


def test_an_energy_call_inside_the_power_models_typical_miss_on_other_chips_is_said() -> None:
    """H200 against MI300X decode: energy per token 1.0% apart was called 'A' with band '-' (energy has no band),
    where the power model's median miss is 17% (a hardware strategist's review)."""
    a = apply_overrides(
        load_preset("chat-disaggregated"), {"duration_s": 60.0, "deployment.pools[1].hardware": "h200"}
    )
    b = apply_overrides(a, {"deployment.pools[1].hardware": "mi300x"})
    ra, rb = simulate(a), simulate(b)
    ta, tb = ex.pool_marks(a, ra.summary), ex.pool_marks(b, rb.summary)
    table = ex.verdicts(
        ex.with_expected_error(ex.compare(ra.summary, rb.summary), ta, tb), a, b, ra.summary, rb.summary
    )
    rows = table.set_index("figure")
    energy = "Energy per output token"
    assert rows.loc[energy, "better"] in ("A", "B") and abs(rows.loc[energy, "change_pct"]) < 10
    inside = ex.inside_band(table, ta, tb)
    assert energy in inside
    note = ex.inside_band_note(inside) or ""
    assert "Energy per output token" in note and "the power model's typical miss on these chips" in note
    same = apply_overrides(a, {"deployment.pools[1].count": 2})  # the same chips: their error shared
    rs = simulate(same)
    ts = ex.pool_marks(same, rs.summary)
    shared = ex.verdicts(
        ex.with_expected_error(ex.compare(ra.summary, rs.summary), ta, ts), a, same, ra.summary, rs.summary
    )
    assert not [f for f in ex.inside_band(shared, ta, ts) if f.startswith(("Energy", "Mean power"))]
