"""A model's parameter counts, derived from its architecture once per spec object.

The cost model asks a `ModelSpec` for its dense, active and matmul parameters at every iteration
it prices (the validation report: about a million times), and each count walks the architecture
again. `counts_of` keeps them per spec object, keyed by its identity: a frozen spec cannot change
after it is built, and every other value (`model_copy(update=...)`, a parsed or unpickled copy) is
another object with a key of its own, counted afresh. An entry is dropped when its spec is
collected, before that id can name another object, and a hit is taken only where the entry's weak
reference still points at the very spec asked about. Keying by value (the spec's hash) would cost
as much as counting again: hashing a spec walks its twenty fields.
"""

from __future__ import annotations

import functools
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.catalog.model_spec import ModelSpec


@dataclass(frozen=True, slots=True)
class ParamCounts:
    """Weights of a model, by what reads them (`ModelSpec`'s methods of the same names)."""

    dense: float
    total: float
    active: float
    matmul: float
    dense_mlps: float = 0.0
    """A MoE model's dense layers' MLPs (0 for a dense model: its MLPs are every layer's)."""
    moe_dense: float = 0.0
    """A MoE model's MoE layers' weights every token reads beside attention: shared experts, routers."""

    @staticmethod
    def of(spec: ModelSpec) -> ParamCounts:
        """The counts of `spec`, from its architecture."""
        layers, hidden = spec.layers, spec.hidden
        total = layers * spec.attention_params() + spec.embedding_params()
        dense_mlps = moe_dense = 0.0
        if spec.moe:
            m = spec.moe
            dense_mlps = m.dense_layers * spec._mlp_params(spec.intermediate)
            moe_dense = spec.moe_layers() * (m.shared_experts * spec.expert_params() + hidden * m.experts)
            total += dense_mlps
            total += moe_dense
        else:
            total += layers * spec._mlp_params(spec.intermediate)
        dense = total
        if not spec.moe:
            everything = active = dense
        else:  # in the order ModelSpec always multiplied them: the same floats, bit for bit
            everything = dense + spec.moe_layers() * spec.moe.experts * spec.expert_params()
            active = dense + spec.moe_layers() * spec.moe.experts_per_token * spec.expert_params()
        matmul = active - spec.vocab * hidden * (0 if spec.tied_embeddings else 1)
        return ParamCounts(dense, everything, active, matmul, dense_mlps, moe_dense)


_COUNTS: dict[int, tuple[weakref.ref[ModelSpec], ParamCounts]] = {}
"""id(spec) -> (a weak reference to that spec, its counts)."""


def counts_of(spec: ModelSpec) -> ParamCounts:
    """`ParamCounts.of(spec)`, computed once per spec object."""
    key = id(spec)
    hit = _COUNTS.get(key)
    if hit is not None and hit[0]() is spec:
        return hit[1]
    counts = ParamCounts.of(spec)
    _COUNTS[key] = (weakref.ref(spec, functools.partial(_forget, key)), counts)
    return counts


def _forget(
    key: int, _ref: object, entries: dict[int, tuple[weakref.ref[ModelSpec], ParamCounts]] = _COUNTS
) -> None:
    """Drop a collected spec's entry (`entries` bound at import: callbacks may run at exit)."""
    entries.pop(key, None)
