"""A chip without a peak at the weights' precision is said, not run silently (run_notes.precision_notes)."""

from __future__ import annotations

from engine.explain.run_notes import precision_notes
from engine.scenario import codec


def test_fp8_weights_on_a_chip_without_an_fp8_peak_are_said_to_run_weight_only() -> None:
    """fp8 weights on an Ascend 910B (no fp8 peak, and vLLM-Ascend serves no fp8 weights) ran with nothing
    said (a hardware strategist's review): the note names the pool's field, the chip and what is modelled."""
    base = codec.load_preset("chat-ascend-910b")
    fp8 = codec.apply_overrides(base, {"model.weights": "fp8"})
    notes = precision_notes(fp8)
    assert len(notes) == 1 and notes[0].startswith(
        "deployment.pools[0].hardware: ascend-910b has no fp8 peak"
    )
    assert "read at fp8, multiplied at bf16" in notes[0]
    assert precision_notes(base) == []  # bf16 weights: the chip's own peak
    h100 = codec.load_preset("chat-colocated")  # fp8 on an H100: its own peak
    assert h100.model.weights == "fp8" and precision_notes(h100) == []
    fp4 = codec.apply_overrides(h100, {"model.weights": "fp4"})
    assert (
        "h100-sxm has no fp4 peak" in precision_notes(fp4)[0]
        and "multiplied at fp8" in precision_notes(fp4)[0]
    )
