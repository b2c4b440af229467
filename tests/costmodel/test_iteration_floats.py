"""`iteration_cost` on plain numbers (its float path) gives the floats it gives on arrays, bit for bit."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from engine.catalog.entries import Catalog
from engine.costmodel.iteration import iteration_cost
from engine.costmodel.perf import Instance

SUMS = list(itertools.product((0, 17.5, 512), (0, 1000.25), (0, 33), (0, 1, 64), (0, 4096.5)))
"""(prefill tokens, attention pairs, cached tokens, decodes, decode context): idle, prefill, decode, mixed."""


def _instances(catalog: Catalog) -> list[Instance]:
    h200 = catalog.chip("h200")
    slow = h200.profile(None).model_copy(
        update={
            "eta_experts": 0.6,
            "eta_experts_compute": 0.4,
            "expert_tile_tokens": 64,
            "moe_layer_ms": 0.05,
        }
    )
    slow_chip = h200.model_copy(update={"profiles": {**h200.profiles, h200.default_profile: slow}})
    out = [
        Instance(
            model=catalog.model("llama-3.1-70b"), hardware=catalog.chip("h100-sxm"), tp=4, weights="fp8"
        ),
        Instance(model=catalog.model("llama-3.1-8b"), hardware=catalog.chip("mi300x"), tp=1, eager=True),
        Instance(model=catalog.model("deepseek-v3"), hardware=h200, tp=8, weights="fp8"),  # MLA, absorbed
        Instance(model=catalog.model("deepseek-v3"), hardware=slow_chip, tp=8, weights="fp8"),  # slow experts
        Instance(
            model=catalog.model("deepseek-v3"), hardware=slow_chip, tp=16, weights="fp8"
        ),  # over machines
    ]
    return [*out, dataclasses.replace(out[0], time_scale=1.3)]


def test_plain_numbers_cost_the_same_floats_as_arrays(catalog: Catalog) -> None:
    insts = _instances(catalog)
    assert any(i.experts_slow for i in insts) and any(i.spans_machines for i in insts)
    for inst, (q, pairs, k, d, c) in itertools.product(insts, SUMS):
        assert inst.plain and inst.memory_tiers is None
        floats = iteration_cost(
            inst,
            prefill_tokens=q,
            prefill_attn_pairs=pairs,
            prefill_cached_tokens=k,
            decode_requests=d,
            decode_context_tokens=c,
        )
        arrays = iteration_cost(
            inst,
            prefill_tokens=np.asarray(q, dtype=float),
            prefill_attn_pairs=pairs,
            prefill_cached_tokens=k,
            decode_requests=d,
            decode_context_tokens=c,
        )
        for f in dataclasses.fields(floats):
            got, want = getattr(floats, f.name), getattr(arrays, f.name)
            assert type(got) is float, (f.name, type(got))
            assert got == float(want), (inst.model.id, q, pairs, k, d, c, f.name)


@pytest.mark.parametrize("kind", ["array", "tiered"])
def test_arrays_and_tiered_chips_keep_the_arrays(catalog: Catalog, kind: str) -> None:
    if kind == "array":
        inst = _instances(catalog)[0]
        cost = iteration_cost(inst, decode_requests=np.array([1.0, 8.0]), decode_context_tokens=8000.0)
        assert np.shape(cost.time_s) == (2,)
    else:
        inst = Instance(model=catalog.model("llama-3.1-8b"), hardware=catalog.chip("sn40l"), tp=8)
        assert inst.memory_tiers is not None
        cost = iteration_cost(inst, decode_requests=8, decode_context_tokens=8000.0)
        assert type(cost.time_s) is not float and float(cost.time_s) > 0
