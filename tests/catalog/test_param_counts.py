"""A model's parameter counts, kept per spec object: never another spec's, never stale."""

from __future__ import annotations

import gc
import pickle

import pytest

from engine.catalog import param_counts
from engine.catalog.entries import Catalog
from engine.catalog.model_spec import ModelSpec
from engine.catalog.param_counts import ParamCounts, counts_of


def _by_hand(m: ModelSpec) -> tuple[float, float, float, float]:
    """(dense, total, active, matmul) from the architecture, as ModelSpec counted them before."""
    dense = m.layers * m.attention_params() + m.embedding_params()
    if m.moe:
        dense += m.moe.dense_layers * m._mlp_params(m.intermediate)
        dense += m.moe_layers() * (m.moe.shared_experts * m.expert_params() + m.hidden * m.moe.experts)
        total = dense + m.moe_layers() * m.moe.experts * m.expert_params()
        active = dense + m.moe_layers() * m.moe.experts_per_token * m.expert_params()
    else:
        dense += m.layers * m._mlp_params(m.intermediate)
        total = active = dense
    return dense, total, active, active - m.vocab * m.hidden * (0 if m.tied_embeddings else 1)


def test_every_model_counts_as_its_architecture_says_bit_for_bit(catalog: Catalog) -> None:
    for m in catalog.models.values():
        for _ in range(2):  # the first call counts, the second reads what was kept
            assert (m.dense_params(), m.total_params(), m.active_params(), m.matmul_params()) == _by_hand(m)


@pytest.mark.parametrize(
    "update", [{"layers": 7}, {"hidden": 1024}, {"tied_embeddings": True}, {"vocab": 1000}]
)
def test_a_copy_with_other_fields_is_counted_afresh(catalog: Catalog, update: dict[str, object]) -> None:
    """The trap of a cached_property on a pydantic model: model_copy(update=...) copies the object's
    dictionary, and with it any value kept there. Counts kept by object identity cannot follow."""
    m = catalog.model("llama-3.1-70b")
    before = m.total_params()
    other = m.model_copy(update=update)
    assert other.total_params() != before
    assert (other.dense_params(), other.total_params(), other.active_params(), other.matmul_params()) == (
        _by_hand(other)
    )
    assert m.total_params() == before


def test_a_moe_copy_with_other_experts_is_counted_afresh(catalog: Catalog) -> None:
    m = catalog.model("deepseek-v3")
    assert m.moe is not None
    other = m.model_copy(update={"moe": m.moe.model_copy(update={"experts": 64})})
    assert other.total_params() < m.total_params()
    assert other.total_params() == _by_hand(other)[1]


def test_an_unpickled_copy_counts_the_same(catalog: Catalog) -> None:
    m = catalog.model("deepseek-v3")
    assert pickle.loads(pickle.dumps(m)).active_params() == m.active_params()


def test_a_spec_collected_takes_its_entry_with_it() -> None:
    m = ModelSpec(
        id="x",
        name="x",
        source="test",
        layers=2,
        hidden=64,
        heads=4,
        kv_heads=4,
        head_dim=16,
        intermediate=128,
        vocab=100,
    )
    key = id(m)
    assert counts_of(m) == ParamCounts.of(m)
    assert key in param_counts._COUNTS
    del m
    gc.collect()
    assert key not in param_counts._COUNTS
