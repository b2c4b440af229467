"""Pipeline stages: each holds its layers and its share of the KV; the most loaded one sets the capacity."""

from __future__ import annotations

import re

import pytest

from engine.catalog.entries import load_catalog
from engine.costmodel import stages
from engine.costmodel.perf import Instance


def _inst(model: str, hw: str, pp: int, tp: int = 1, weights: str = "bf16") -> Instance:
    cat = load_catalog()
    return Instance(model=cat.model(model), hardware=cat.chip(hw), tp=tp, pp=pp, weights=weights)  # type: ignore[arg-type]


def _whole(inst: Instance) -> int:
    """The capacity of the instance taken whole (what every pipeline got before stages)."""
    return int((inst.memory_bytes - inst.weight_bytes - inst.activation_bytes) // inst.kv_bytes_held)


def test_layers_are_split_as_vllm_splits_them() -> None:
    """`get_pp_indices`: layers // pp each, one more on each of the last (layers % pp) stages but the last."""
    assert stages.layer_split(126, 4) == [31, 32, 32, 31]
    assert stages.layer_split(32, 8) == [4] * 8
    assert stages.layer_split(61, 2) == [31, 30]
    assert stages.layer_split(80, 3) == [27, 27, 26]
    assert all(sum(stages.layer_split(n, pp)) == n for n in (7, 61, 80, 126) for pp in (1, 2, 3, 5, 7))


def test_the_stages_hold_the_instances_weights_and_the_ends_the_vocabulary() -> None:
    inst = _inst("llama-3.1-70b", "h100-sxm", 4, tp=2, weights="fp8")
    w = stages.stage_weights(inst)
    assert sum(w) == pytest.approx(inst.weight_bytes)
    m = inst.model
    matrix = m.vocab * m.hidden * 2.0  # bf16, once per end
    assert w[0] - w[1] == pytest.approx(matrix) and w[3] - w[2] == pytest.approx(matrix)


def test_a_small_models_end_stages_set_its_capacity() -> None:
    """Llama-3.1-70B in BF16 over eight L4s: 17.6 GB a chip on average, 19.3 GB on the first (ten
    layers and the embedding): its KV room is 38% smaller than the instance taken whole."""
    inst = _inst("llama-3.1-70b", "l4", 8)
    assert stages.staged(inst)
    heaviest = max(stages.stage_weights(inst)) / 1e9
    assert heaviest > 1.08 * inst.weight_bytes / 8 / 1e9
    assert 0 < inst.kv_capacity_tokens < 0.7 * _whole(inst)


def test_alike_stages_keep_the_whole_instances_figure() -> None:
    """An even split of an untied model: both ends hold one matrix, every stage the same."""
    inst = _inst("llama-3.1-405b", "h100-sxm", 2, tp=8, weights="fp8")
    assert not stages.staged(inst)
    assert inst.kv_capacity_tokens == _whole(inst)


def test_a_moe_models_dense_layers_lighten_its_first_stage() -> None:
    inst = _inst("deepseek-v3", "h200", 2, tp=8, weights="fp8")
    w = stages.stage_weights(inst)
    assert w[0] < w[1]  # three dense layers of 31 against none of 30: fewer experts on the first
    assert stages.staged(inst) and inst.kv_capacity_tokens < _whole(inst)
    # the dense layers' MLPs (18,432 wide, in FP8) sit on the first stage, with those layers; the
    # MoE layers' shared experts and routers with theirs; attention spread over every layer
    m = inst.model
    assert m.moe is not None
    wb, mlp = 1.0, m.mlp_matrices * m.hidden * m.intermediate
    per_moe_layer = (
        m.moe.experts + m.moe.shared_experts
    ) * m.expert_params() * wb + m.hidden * m.moe.experts * wb
    head = m.vocab * m.hidden * 2.0  # bf16, once per end
    rest = (
        inst.weight_bytes - 2 * head - m.moe_layers() * per_moe_layer - m.moe.dense_layers * mlp * wb
    ) / m.layers
    assert w[0] == pytest.approx(31 * rest + 3 * mlp * wb + 28 * per_moe_layer + head)
    assert w[1] == pytest.approx(30 * rest + 30 * per_moe_layer + head)


def test_a_layout_that_fits_whole_can_overflow_a_stage() -> None:
    """DeepSeek-R1 in FP8 on four B200s, one a stage: taken whole there is room for 326k tokens of
    KV, but the third stage's 16 MoE layers need 184 GB of the 174 GB its B200 gives."""
    inst = _inst("deepseek-r1", "b200", 4, weights="fp8")
    assert _whole(inst) > 300_000
    assert max(stages.stage_weights(inst)) > inst.memory_bytes / 4
    assert inst.kv_capacity_tokens == 0 and not inst.fits()


def test_a_compiler_placed_chip_is_checked_whole() -> None:
    """Groq's compiler lays the layers over the LPUs by bytes, not by count."""
    inst = _inst("llama-3.1-8b", "groq-lpu", 8, tp=64, weights="fp8")
    assert not stages.staged(inst)
    assert inst.kv_capacity_tokens == _whole(inst)


def test_a_stage_that_overflows_is_refused_by_name() -> None:
    from engine.core.errors import ScenarioError
    from engine.scenario.codec import apply_overrides, load_preset
    from engine.scenario.resolve import resolve

    sc = apply_overrides(load_preset("moe-deepseek-h200"), {
        "deployment.pools[0].hardware": "b200", "deployment.pools[0].tp": 1, "deployment.pools[0].pp": 4,
    })  # fmt: skip
    with pytest.raises(ScenarioError) as err:
        resolve(sc)
    said = str(err.value)
    assert said.startswith("deployment.pools[0].pp: the 4 pipeline stages")
    assert (
        "stage 3 (16 layers) needs" in said and "its b200 gives 162 GiB usable" in said
    )  # (0.9 of its 180 GiB)


def test_the_strategy_page_names_the_most_loaded_stages_weights() -> None:
    from engine.explain import pool_memory
    from engine.scenario.codec import apply_overrides, load_preset
    from ui.parallelism import memory_text

    over = {"model.id": "llama-3.1-8b", "deployment.pools[0].pp": 8, "deployment.pools[0].tp": 1}
    (staged,) = pool_memory(apply_overrides(load_preset("chat-colocated"), over))
    assert staged.heaviest_stage_gb_per_chip is not None
    assert staged.heaviest_stage_gb_per_chip > 1.5 * staged.weights_gb_per_chip  # the embedding's stage
    assert "on the most loaded stage's chips" in memory_text(staged)
    (alike,) = pool_memory(load_preset("pipeline-llama-405b"))  # an even split: every chip the same
    assert alike.heaviest_stage_gb_per_chip is None and "stage" not in memory_text(alike)


def test_the_planner_and_the_refusal_name_the_stage_with_numbers_that_add_up() -> None:
    """The planner said 'weights do not fit (673 GB on 4 x b200)' where the four hold 696 GB; and
    under vllm-v0 the refusal left out the absorbed MLA matrices and the latent's alignment, naming
    a stage that 'needs 139 GB' of the 141 GB its H200 gives."""
    from engine.core.errors import ScenarioError
    from engine.planning import sizing
    from engine.scenario.codec import apply_overrides, load_preset
    from engine.scenario.resolve import resolve
    from engine.serving.workload import generate

    sc = load_preset("moe-deepseek-h200")
    inst = _inst("deepseek-v3", "b200", 4, weights="fp8")
    problem = sizing.instance_rates(inst, sizing.demand(sc, generate(sc))).prefill_problem
    assert problem is not None and problem.startswith("pipeline stage 3 needs")
    v0 = apply_overrides(sc, {
        "deployment.stack": "vllm-v0", "deployment.mode": "colocated", "deployment.mem_fraction": 0.93,
        "deployment.pools": [{"name": "p", "role": "mixed", "hardware": "h200", "tp": 1, "pp": 6, "count": 1}],
    })  # fmt: skip
    with pytest.raises(ScenarioError) as err:
        resolve(v0)
    need, have = (float(x) for x in re.findall(r"needs (\d+) GiB .* gives (\d+) GiB", str(err.value))[0])
    assert need > have, str(err.value)
