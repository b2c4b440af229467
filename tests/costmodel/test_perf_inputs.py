"""The exported cost model refuses what no instance or batch is, naming the field (`Instance`,
`prefill_cost`, `decode_cost`)."""

from __future__ import annotations

import pytest

from engine.catalog.entries import load_catalog
from engine.core.errors import ScenarioError
from engine.costmodel.iteration import decode_cost, prefill_cost
from engine.costmodel.perf import Instance


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("time_scale", -1.0, r"^time_scale: a positive number \(got -1\.0\)"),
        ("weights", "fp3", r"^weights: one of bf16, fp8, fp4, int4"),
        ("mem_fraction", -1.0, r"^mem_fraction: in \(0, 1\]"),
        ("hardware", "h100-sxm", r"^hardware, model: catalog entries"),
    ],
)
def test_an_instance_refuses_what_none_is(field: str, value: object, said: str) -> None:
    """`Instance` is exported: built with time_scale -1 it gave a negative prefill time, with weights 'fp3'
    a KeyError when used, with a chip's id an AttributeError (a review)."""
    cat = load_catalog()
    kw: dict[str, object] = {
        "model": cat.model("llama-3.1-8b"),
        "hardware": cat.chip("h100-sxm"),
        field: value,
    }
    with pytest.raises(ScenarioError, match=said):
        Instance(**kw)  # type: ignore[arg-type]


def test_an_exported_cost_refuses_a_count_no_batch_has() -> None:
    """`prefill_cost(inst, -5)` and `prefill_cost(inst, None)` cost 0 s and `decode_cost(inst, 8, -2000)`
    12 ms (a review): each names the count it was given."""
    cat = load_catalog()
    inst = Instance(model=cat.model("llama-3.1-8b"), hardware=cat.chip("h100-sxm"))
    for call, said in (
        (lambda: prefill_cost(inst, -5), r"^prompt_tokens: a finite number of at least 1 \(got -5\)"),
        (lambda: prefill_cost(inst, None), r"^prompt_tokens: a .*number of at least 1 \(got None\)"),
        (lambda: prefill_cost(inst, 100, 200), r"^cached_tokens: at most the prompt's tokens"),
        (lambda: decode_cost(inst, 8, -2000), r"^context_tokens: a finite number of at least 0"),
        (lambda: decode_cost(inst, 0, 2000), r"^batch: a finite number of at least 1"),
    ):
        with pytest.raises(ScenarioError, match=said):
            call()
    assert float(prefill_cost(inst, [512, 1024]).time_s[1]) > 0  # arrays as before


def test_numpy_numbers_are_numbers_and_a_boolean_is_none() -> None:
    """np.float32(1.0) was refused as 'time_scale: a positive number', np.int64(10) as 'max_simulations: a
    whole number in [2, 100]' and a planning window of np.int64(60) s as outside 1 to 86,400 s, while
    time_scale=True passed (a review): numpy's numbers are taken, a boolean is not."""
    import numpy as np

    from engine import apply_overrides, load_preset, replicate
    from engine.planning.candidates import planning_scenario
    from engine.planning.capacity import _check_search

    cat = load_catalog()
    inst = Instance(
        model=cat.model("llama-3.1-8b"),
        hardware=cat.chip("h100-sxm"),
        time_scale=np.float32(1.0),
        imbalance=np.int64(1),
    )
    assert inst.time_scale == 1.0
    with pytest.raises(ScenarioError, match=r"^time_scale: a positive number \(got True\)"):
        Instance(model=cat.model("llama-3.1-8b"), hardware=cat.chip("h100-sxm"), time_scale=True)
    _check_search(np.int64(10), 0.02, None, None)
    with pytest.raises(ScenarioError, match=r"^max_simulations: a whole number"):
        _check_search(np.bool_(True), 0.02, None, None)  # type: ignore[arg-type]
    sc = apply_overrides(load_preset("chat-colocated"), {"duration_s": 10.0})
    assert planning_scenario(sc, 10.0, duration_s=np.int64(60)).duration_s == 60.0
    runs, _ = replicate(sc, np.int64(1))
    assert len(runs) == 1
