"""Custom chips and models: untrusted input (a share link carries them) that is refused, never crashes.

A custom entry's numbers are finite and within physical ranges, a zero link the deployment needs
is named at resolve time, an absurdly slow pool is refused naming the entry, a catalog id cannot
be taken over, and a Hugging Face config.json either imports or says which key is wrong.
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.catalog.entries import Catalog, load_catalog, model_from_hf_config
from engine.catalog.model_spec import ModelSpec
from engine.catalog.specs import HardwareSpec
from engine.core.errors import ScenarioError
from engine.costmodel.iteration import decode_cost, kv_transfer_time, prefill_cost
from engine.scenario import codec as io
from engine.scenario.model import Scenario
from engine.scenario.resolve import MAX_ITERATION_S, resolve, scenario_catalog
from engine.serving.run import simulate

CATALOG = load_catalog()
H100 = CATALOG.chip("h100-sxm").model_dump(mode="json", by_alias=True)
L8B = CATALOG.model("llama-3.1-8b").model_dump(mode="json", exclude_none=True)
BASE = io.to_data(io.load_preset("chat-disaggregated"))


def chip(**changes: Any) -> dict[str, Any]:
    """An H100 dump with changes (a new id unless one is given)."""
    return {**H100, "id": "my-chip", **changes}


def profile(**changes: Any) -> dict[str, Any]:
    """A one-profile `profiles` table."""
    return {
        "default": {
            "eta_compute": 0.6,
            "eta_bandwidth": 0.8,
            "overhead_ms": 1.0,
            "source": "assumption: test",
            **changes,
        }
    }


def scenario(
    custom_hw: list[dict[str, Any]] | None = None,
    custom_models: list[dict[str, Any]] | None = None,
    **paths: Any,
) -> Scenario:
    """The default preset with custom entries and field changes (``pools__0__tp`` is ``pools[0].tp``)."""
    data = {**BASE, "custom_hardware": custom_hw or [], "custom_models": custom_models or []}
    for path, value in paths.items():
        data = io.set_path(data, re.sub(r"__(\d+)", r"[\1]", path).replace("__", "."), value)
    return io.from_data(data)


def set_field(entry: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    return io.set_path(entry, path, value)  # type: ignore[no-any-return]


# --- (1) finite numbers within physical ranges -------------------------------------------------

HW_NUMBERS = [
    "tflops.bf16", "memory_gb", "memory_tb_s", "scale_up_gb_s", "scale_out_gb_s", "pcie_gb_s",
    "allreduce_latency_us", "tdp_w", "idle_w", "usd_per_hour", "profiles.default.eta_compute",
    "profiles.default.eta_bandwidth", "profiles.default.overhead_ms",
]  # fmt: skip


@pytest.mark.parametrize("path", HW_NUMBERS)
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "nan", "inf"])
def test_hardware_numbers_must_be_finite(path: str, bad: Any) -> None:
    entry = set_field(chip(profiles=profile(), default_profile="default"), path, bad)
    field = path.replace(".", r"\.")
    with pytest.raises(
        ScenarioError, match=rf"custom_hardware\[0\]\.{field}: Input should be a finite number"
    ):
        scenario([entry])


@pytest.mark.parametrize("path", ["published_params_b"])
@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_model_numbers_must_be_finite(path: str, bad: Any) -> None:
    with pytest.raises(ScenarioError, match=rf"custom_models\[0\]\.{path}: Input should be a finite number"):
        scenario(custom_models=[{**L8B, "id": "my-8b", path: bad}])


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("tflops.bf16", 1e-300, "greater than or equal to 0.01"),  # what once gave 1e300-ms latencies
        ("tflops.bf16", 2e6, "less than or equal to 1000000"),
        ("memory_gb", 0, "greater than or equal to 0.01"),
        ("memory_tb_s", 0, "greater than or equal to 0.001"),
        ("memory_tb_s", -1, "greater than or equal to 0.001"),
        ("pcie_gb_s", 0, "greater than or equal to 0.1"),
        ("scale_out_gb_s", 1e-9, "must be 0 \\(no such link\\) or at least 0.1 GB/s"),
        ("scale_up_gb_s", 0.05, "must be 0 \\(no such link\\) or at least 0.1 GB/s"),
        ("tdp_w", 0, "greater than or equal to 0.1"),
        ("usd_per_hour", -1, "greater than or equal to 0"),
        ("usd_per_hour", 1e9, "less than or equal to 10000"),
        ("profiles.trtllm.eta_compute", 1e-6, "greater than or equal to 0.01"),
        ("profiles.trtllm.eta_bandwidth", 1.5, "less than or equal to 1"),
        ("memory_gb", 10**40, "less than or equal to 100000"),
        ("memory_gb", "lots", "valid number"),
        ("memory_gb", [80], "valid number"),
    ],
)
def test_hardware_ranges(path: str, value: Any, message: str) -> None:
    field = path.replace(".", r"\.")
    with pytest.raises(ScenarioError, match=rf"custom_hardware\[0\]\.{field}: .*{message}"):
        scenario([set_field(chip(), path, value)])


def test_shipped_entries_fit_the_ranges(catalog: Catalog) -> None:
    for h in catalog.hardware.values():
        assert HardwareSpec.model_validate(h.model_dump(mode="json", by_alias=True)) == h
    for m in catalog.models.values():
        assert ModelSpec.model_validate(m.model_dump(mode="json")) == m


@pytest.mark.parametrize(
    "hf_id",
    ["meta-llama/Llamа-3", "méta/llama", "meta-llama", "/llama", "-x/llama", "a/b/c", "a/", "a" * 97 + "/x"],
)
def test_a_malformed_hf_id_is_refused_in_words(hf_id: str) -> None:
    # the first is spelt with a Cyrillic 'а': the Hub takes ASCII only
    with pytest.raises(ScenarioError) as err:
        scenario(custom_models=[{**L8B, "id": "my-8b", "hf_id": hf_id}])
    message = str(err.value)
    assert message.startswith(
        "custom_models[0].hf_id: must be a Hugging Face repository id, owner/name, in ASCII letters, "
        "digits, '_', '.' and '-' (up to 96 on each side, the owner starting with a letter or digit) (got "
    )
    assert ";" not in message and "\n" not in message  # one problem, one line


def test_a_well_formed_hf_id_is_kept() -> None:
    s = scenario(custom_models=[{**L8B, "id": "my-8b", "hf_id": "my_org.x/Llama-3.1-8B_v2.0"}])
    assert s.custom_models[0].hf_id == "my_org.x/Llama-3.1-8B_v2.0"


# --- (2) a zero scale-out link --------------------------------------------------------------------


def test_zero_scale_out_for_prefill_is_named_at_resolve() -> None:
    sc = scenario([chip(scale_out_gb_s=0)], deployment__pools__0__hardware="my-chip")
    with pytest.raises(
        ScenarioError,
        match=r"custom_hardware\[0\]\.scale_out_gb_s: chip 'my-chip' has no scale-out link .* "
        r"deployment\.link\.bandwidth_gb_s",
    ):
        resolve(sc)
    with pytest.raises(ScenarioError, match="the link needs a bandwidth"):
        kv_transfer_time(1000.0, 10.0, 0.0)


def test_zero_scale_out_where_unused_simulates() -> None:
    quick: dict[str, Any] = {"duration_s": 20.0, "workload__arrival__rate_rps": 2.0}
    # a decode pool never sends KV; an explicit link bandwidth replaces the chip's NIC
    cases: tuple[dict[str, Any], ...] = (
        {"deployment__pools__1__hardware": "my-chip"},
        {"deployment__pools__0__hardware": "my-chip", "deployment__link__bandwidth_gb_s": 50.0},
    )
    for paths in cases:
        res = simulate(scenario([chip(scale_out_gb_s=0)], **paths, **quick))
        ttft = res.requests["ttft_s"].dropna()
        assert len(ttft) and ttft.map(math.isfinite).all()
    # colocated pools never use the link
    colo = io.to_data(io.load_preset("chat-colocated"))
    colo["custom_hardware"] = [chip(scale_out_gb_s=0)]
    colo = io.set_path(colo, "deployment.pools[0].hardware", "my-chip")
    resolve(io.from_data(colo))


def test_zero_scale_out_with_elastic_roles_is_refused_on_decode_too() -> None:
    sc = scenario(
        [chip(scale_out_gb_s=0)], deployment__pools__1__hardware="my-chip", scheduler__elastic__enabled=True
    )
    with pytest.raises(ScenarioError, match=r"custom_hardware\[0\]\.scale_out_gb_s: .*pool 'decode'"):
        resolve(sc)


# --- (3) absurd iteration times -------------------------------------------------------------------


def test_absurdly_slow_chip_is_refused_naming_the_entry() -> None:
    slow = chip(id="slow", memory_gb=2000, tflops={"bf16": 0.01}, profiles=profile(eta_compute=0.01),
                default_profile="default")  # fmt: skip
    sc = scenario(
        [slow], model__id="llama-3.1-405b", model__weights="bf16", deployment__pools__0__hardware="slow"
    )
    with pytest.raises(
        ScenarioError,
        match=r"deployment\.pools\[0\]: a 1024-token prefill of 'llama-3.1-405b' on 2 x 1 x 'slow' takes "
        r".* s; the limit is 86,400 s \(one day\)\. Compute time dominates: check "
        r"custom_hardware\[0\]\.tflops and custom_hardware\[0\]\.profiles\.default\.eta_compute",
    ):
        resolve(sc)
    starved = chip(id="starved", memory_gb=100_000, memory_tb_s=0.001, profiles=profile(eta_bandwidth=0.01),
                   default_profile="default")  # fmt: skip
    deep = {**L8B, "id": "deep", "layers": 500, "hidden": 16384, "intermediate": 65536}  # 1.8e12 weights
    sc = scenario([starved], [deep], model__id="deep", model__weights="bf16", deployment__pools__1__hardware="starved",
                  deployment__pools__0__hardware="starved")  # fmt: skip
    with pytest.raises(
        ScenarioError,
        match=r"Memory time dominates: check custom_hardware\[0\]\.memory_tb_s and "
        r"custom_hardware\[0\]\.profiles\.default\.eta_bandwidth and the size of custom_models\[0\] \('deep'\)",
    ):
        resolve(sc)


def test_absurdly_large_custom_model_is_refused_naming_it() -> None:
    big = {**L8B, "id": "huge", "layers": 1000, "hidden": 100_000, "intermediate": 1_000_000,
           "heads": 4096, "kv_heads": 1, "head_dim": 16}  # fmt: skip
    vast = chip(id="vast", memory_gb=100_000, tflops={"bf16": 1.0})
    sc = scenario([vast], [big], model__id="huge", deployment__pools__0__hardware="vast", deployment__pools__0__tp=8,
                  deployment__pools__1__hardware="vast", deployment__pools__1__tp=8)  # fmt: skip
    with pytest.raises(
        ScenarioError,
        match=r"check custom_hardware\[0\]\.tflops .* the size of custom_models\[0\] \('huge'\)",
    ):
        resolve(sc)


def test_slow_but_sane_chip_still_runs() -> None:
    slowish = chip(id="slowish", tflops={"bf16": 10.0}, memory_tb_s=0.05)
    sc = scenario([slowish], model__id="llama-3.1-8b", deployment__pools__0__hardware="slowish",
                  deployment__pools__1__hardware="slowish")  # fmt: skip
    for pool in resolve(sc).pools:
        assert float(prefill_cost(pool.instance, 1024).time_s) < MAX_ITERATION_S


# --- (4) catalog ids cannot be taken over ---------------------------------------------------------


def test_custom_entry_cannot_shadow_a_catalog_id() -> None:
    sc = scenario([chip(id="h100-sxm", usd_per_hour=0.01)])
    with pytest.raises(
        ScenarioError,
        match=r"custom_hardware\[0\]\.id: 'h100-sxm' is a catalog chip; give your chip its own id",
    ):
        resolve(sc)
    with pytest.raises(ScenarioError, match=r"custom_hardware\[0\]\.id: 'h100-sxm' is a catalog chip"):
        scenario_catalog(sc)
    sc = scenario(custom_models=[{**L8B, "id": "llama-3.1-70b"}])
    with pytest.raises(
        ScenarioError,
        match=r"custom_models\[0\]\.id: 'llama-3.1-70b' is a catalog model; give your model its own id",
    ):
        resolve(sc)
    with pytest.raises(ScenarioError, match=r"custom_hardware\[1\]\.id: 'my-chip' is given twice"):
        resolve(scenario([chip(), chip(usd_per_hour=1.0)]))


def test_an_exact_copy_of_a_catalog_entry_is_harmless() -> None:
    sc = scenario([H100])
    assert resolve(sc).pools[0].hardware == CATALOG.chip("h100-sxm")
    cat = scenario_catalog(sc)
    assert scenario_catalog(sc, cat).hardware == cat.hardware  # a catalog that already holds them


def test_no_preset_overrides_a_catalog_id() -> None:
    for name in io.preset_names():
        sc = io.load_preset(name)
        scenario_catalog(sc)
        assert not {h.id for h in sc.custom_hardware} & set(CATALOG.hardware)
        assert not {m.id for m in sc.custom_models} & set(CATALOG.models)


# --- (5) Hugging Face config.json -----------------------------------------------------------------

LLAMA = {
    "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
    "intermediate_size": 14336, "vocab_size": 128256, "hidden_act": "silu", "max_position_embeddings": 131072,
    "tie_word_embeddings": False,
}  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hidden_size": "4096"}, r"hidden_size: must be a whole number \(got '4096'\)"),
        ({"hidden_size": 4096.5}, r"hidden_size: must be a whole number \(got 4096\.5\)"),
        ({"hidden_size": [4096]}, r"hidden_size: must be a whole number \(got list\)"),
        ({"hidden_size": {"value": 4096}}, r"hidden_size: must be a whole number \(got dict\)"),
        ({"hidden_size": True}, r"hidden_size: must be a whole number \(got True\)"),
        ({"hidden_size": 10**5000}, r"hidden_size: must be in \[1, 1,000,000\] \(got a 16610-bit integer\)"),
        (
            {"max_position_embeddings": math.inf},
            r"max_position_embeddings: must be a whole number \(got inf\)",
        ),
        (
            {"max_position_embeddings": math.nan},
            r"max_position_embeddings: must be a whole number \(got nan\)",
        ),
        ({"max_position_embeddings": 1e300}, r"max_position_embeddings: must be in \[1, 100,000,000\]"),
        ({"num_hidden_layers": -1}, r"num_hidden_layers: must be in \[1, 1,000\] \(got -1\)"),
        ({"num_key_value_heads": 3}, r"num_key_value_heads: 3 must divide heads 32"),
        ({"hidden_act": 7}, r"hidden_act: must be a string \(got 7\)"),
        ({"tie_word_embeddings": "yes"}, r"tie_word_embeddings: must be true or false"),
        ({"num_local_experts": 8, "num_experts_per_tok": 9}, r"num_experts_per_tok: 9 exceeds experts 8"),
        ({"num_local_experts": 1}, r"num_local_experts: must be in \[2, 4,096\]"),
        ({"kv_lora_rank": 512, "q_lora_rank": -3}, r"q_lora_rank: must be in \[0, 65,536\]"),
        (
            {"hidden_size": 4, "num_attention_heads": 8},
            r"head_dim: missing, and hidden size 4 // 8 heads is 0",
        ),
        ({"vocab_size": None}, r"missing the vocabulary size \(looked for vocab_size\)"),
    ],
)
def test_malformed_hf_configs_name_the_key(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=rf"^config\.json: {message}"):
        model_from_hf_config({**LLAMA, **changes}, "m")


def test_hf_config_files_and_odd_inputs(tmp_path: Path) -> None:
    cases = {
        "list.json": ("[1, 2]", "must hold a JSON object"),
        "broken.json": ("{", "not valid JSON"),
        "deep.json": ("[" * 100_000, "nested more than"),
        "bigint.json": ('{"hidden_size": ' + "9" * 5000 + "}", "not valid JSON"),
        "bytes.json": (None, "cannot read"),
    }
    for name, (text, message) in cases.items():
        path = tmp_path / name
        if text is None:
            path.write_bytes(b"\xff\xfe\x00garbage")
        else:
            path.write_text(text)
        with pytest.raises(ScenarioError, match=message):
            model_from_hf_config(path, "m")
    with pytest.raises(ScenarioError, match="cannot read"):
        model_from_hf_config(tmp_path / "missing.json", "m")
    with pytest.raises(ScenarioError, match="cannot read"):
        model_from_hf_config(tmp_path, "m")
    with pytest.raises(ScenarioError, match=r"^id: 'Not An Id' is not a valid id"):
        model_from_hf_config(LLAMA, "Not An Id")
    with pytest.raises(ScenarioError, match="text_config"):
        model_from_hf_config({"text_config": LLAMA}, "m")
    spec = model_from_hf_config({**LLAMA, "hidden_size": 4096.0, "_name_or_path": "x" * 500}, "m")
    assert spec.hidden == 4096 and len(spec.name) == 120


# --- property tests: any input either validates or is a ScenarioError ---------------------------

JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.integers(-8, 300_000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(min_value=-1e6, max_value=1e6),
    st.text(max_size=12),
    st.sampled_from(["silu", "gelu", "nan", "inf", "1e400", "4096", ""]),
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
HF_KEYS = sorted(
    {
        *LLAMA, "n_layer", "num_layers", "n_embd", "d_model", "n_head", "head_dim", "n_inner",
        "activation_function", "seq_length", "_name_or_path", "num_local_experts", "num_experts",
        "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size", "n_shared_experts",
        "first_k_dense_replace", "kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
        "v_head_dim", "text_config",
    }
)  # fmt: skip


def _imports_or_explains(config: Any) -> None:
    try:
        spec = model_from_hf_config(config, "m")
    except ScenarioError as exc:
        assert str(exc)
        return
    assert math.isfinite(spec.total_params()) and spec.kv_bytes_per_token() > 0


@given(st.dictionaries(st.text(max_size=24), JSON, max_size=6))
def test_arbitrary_dicts_import_or_explain(config: dict[str, Any]) -> None:
    _imports_or_explains(config)


@given(st.dictionaries(st.sampled_from(HF_KEYS), JSON, max_size=8), st.booleans())
def test_mangled_hf_configs_import_or_explain(changes: dict[str, Any], from_llama: bool) -> None:
    _imports_or_explains({**LLAMA, **changes} if from_llama else changes)


@given(JSON)
def test_arbitrary_json_files_import_or_explain(value: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps(value))
        _imports_or_explains(path)


def _hw_values() -> st.SearchStrategy[Any]:
    extreme = st.sampled_from([0, 0.0, 1e-300, 0.001, 0.01, 0.1, 1e5, 1e6, 1e300, -1, 10**40])
    return st.one_of(JSON_SCALARS, extreme, JSON)


HW_PATHS = [*HW_NUMBERS, "tflops.fp8", "tflops.fp4", "tflops", "profiles", "sources", "id", "class",
            "default_profile", "illustrative", "name"]  # fmt: skip


@given(st.dictionaries(st.sampled_from(HW_PATHS), _hw_values(), max_size=5))
def test_arbitrary_custom_chips_validate_resolve_or_explain(changes: dict[str, Any]) -> None:
    entry = chip(profiles=profile(), default_profile="default")
    for path, value in changes.items():
        try:
            entry = set_field(entry, path, value)
        except ScenarioError:
            continue  # e.g. a path below a value that is no longer a table
    _custom_entries_hold([entry], [], hardware="my-chip")


MODEL_PATHS = ["layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab", "max_context",
               "published_params_b", "mlp_matrices", "tied_embeddings", "moe", "mla", "moe.experts",
               "moe.experts_per_token", "mla.kv_lora_rank"]  # fmt: skip


@given(st.dictionaries(st.sampled_from(MODEL_PATHS), _hw_values(), max_size=4))
def test_arbitrary_custom_models_validate_resolve_or_explain(changes: dict[str, Any]) -> None:
    entry = {**L8B, "id": "my-model"}
    for path, value in changes.items():
        try:
            entry = set_field(entry, path, value)
        except ScenarioError:
            continue
    _custom_entries_hold([], [entry], model="my-model")


def _custom_entries_hold(
    hw: list[dict[str, Any]],
    models: list[dict[str, Any]],
    hardware: str = "h100-sxm",
    model: str = "llama-3.1-8b",
) -> None:
    """Validating and resolving raise only ScenarioError; what resolves prices finite, sane iterations."""
    try:
        sc = scenario(hw, models, model__id=model, deployment__pools__0__hardware=hardware,
                      deployment__pools__1__hardware=hardware)  # fmt: skip
        res = resolve(sc)
    except ScenarioError as exc:
        assert str(exc)
        return
    for pool in res.pools:
        for cost in (prefill_cost(pool.instance, 1024), decode_cost(pool.instance, 1, 1024)):
            assert 0 < float(cost.time_s) <= MAX_ITERATION_S


def _log_uniform(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(math.log10(lo), math.log10(hi)).map(lambda e: min(max(10.0**e, lo), hi))


@given(
    st.fixed_dictionaries(
        {
            "tflops.bf16": _log_uniform(0.01, 1e6),
            "memory_gb": _log_uniform(0.01, 1e5),
            "memory_tb_s": _log_uniform(0.001, 1e5),
            "scale_up_gb_s": st.one_of(st.just(0.0), _log_uniform(0.1, 1e5)),
            "pcie_gb_s": _log_uniform(0.1, 1e4),
            "allreduce_latency_us": st.floats(0, 10_000),
            "profiles.default.eta_compute": st.floats(0.01, 1),
            "profiles.default.eta_bandwidth": st.floats(0.01, 1),
            "profiles.default.overhead_ms": st.floats(0, 1000),
        }
    ),
    st.fixed_dictionaries(
        {
            "layers": st.integers(1, 1000),
            "hidden": st.sampled_from([64, 4096, 65536, 1_000_000]),
            "intermediate": st.sampled_from([1, 14336, 10_000_000]),
            "heads": st.sampled_from([1, 32, 4096]),
            "head_dim": st.sampled_from([1, 128, 4096]),
        }
    ),
    st.sampled_from([1, 8, 64]),
    st.sampled_from([1, 16]),
)
def test_in_range_entries_resolve_to_sane_times_or_explain(
    numbers: dict[str, float], arch: dict[str, int], tp: int, pp: int
) -> None:
    entry = chip(profiles=profile(), default_profile="default", scale_out_gb_s=100.0)
    for path, value in numbers.items():
        entry = set_field(entry, path, value)
    model = {**L8B, "id": "my-model", **arch, "kv_heads": arch["heads"]}
    try:
        sc = scenario([entry], [model], model__id="my-model", deployment__pools__0__hardware="my-chip",
                      deployment__pools__0__tp=tp, deployment__pools__0__pp=pp,
                      deployment__pools__1__hardware="my-chip", deployment__pools__1__tp=tp,
                      deployment__pools__1__pp=pp)  # fmt: skip
        res = resolve(sc)
    except ScenarioError as exc:
        assert str(exc)
        return
    for pool in res.pools:
        for cost in (prefill_cost(pool.instance, 1024), decode_cost(pool.instance, 1, 1024)):
            assert 0 < float(cost.time_s) <= MAX_ITERATION_S


def test_more_pipeline_stages_than_layers_is_refused_by_name() -> None:
    """A stage needs a layer: a custom model of 4 layers on 8 stages would leave four stages empty
    (and their capacity unchecked); it is refused naming the pool's pp and the most it may be."""
    tiny = {**L8B, "id": "tiny-4l", "layers": 4}
    sc = scenario(custom_models=[tiny], **{"model__id": "tiny-4l", "deployment__pools__0__pp": 8})
    with pytest.raises(
        ScenarioError,
        match=r"deployment\.pools\[0\]\.pp: 8 pipeline stages for tiny-4l's 4 layers; each stage needs at least one layer \(at most 4 stages\)",
    ):
        resolve(sc)
    assert resolve(scenario(custom_models=[tiny], **{"model__id": "tiny-4l", "deployment__pools__0__pp": 4}))


def test_an_imported_config_keeps_its_checkpoint_and_context() -> None:
    """A DeepSeek-V3 config with an fp8 quantization_config came out as bf16 weights with no repository,
    and GPT-2's 1,024-token n_positions as 131,072 (a review)."""
    from engine.catalog.entries import model_from_hf_config

    ds = {
        **{"num_hidden_layers": 61, "hidden_size": 7168, "num_attention_heads": 128, "vocab_size": 129280},
        **{"_name_or_path": "deepseek-ai/DeepSeek-V3", "max_position_embeddings": 163840},
        "quantization_config": {"quant_method": "fp8", "fmt": "e4m3"},
    }
    m = model_from_hf_config(ds, "ds3", None)
    assert (m.hf_id, m.hf_weights, m.max_context) == ("deepseek-ai/DeepSeek-V3", "fp8", 163840)
    gpt2 = {"n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257, "n_positions": 1024}
    g = model_from_hf_config(
        {**gpt2, "activation_function": "gelu_new", "_name_or_path": "/local/gpt2"}, "g", None
    )
    assert (g.hf_id, g.hf_weights, g.max_context, g.mlp_matrices) == (None, "bf16", 1024, 2)
    # GPT-2's config omits tie_word_embeddings, and its class ties the head: one vocab matrix, not two
    assert not g.tied_embeddings
    tied = model_from_hf_config({**gpt2, "model_type": "gpt2"}, "g2", None)
    assert tied.tied_embeddings
    assert not model_from_hf_config(
        {**gpt2, "model_type": "gpt2", "tie_word_embeddings": False}, "g3"
    ).tied_embeddings


def test_a_narrower_precisions_peak_is_never_below_a_wider_ones() -> None:
    """A custom chip's FP8 peak of 100 beside its BF16 989 was saved, and FP8 weights ran slower than BF16
    would (a review): refused naming the field, every shipped chip already in order."""
    h100 = load_catalog().hardware["h100-sxm"].model_dump(by_alias=True)
    with pytest.raises(ValueError, match=r"tflops\.fp8: 100 is below the bf16 peak \(989\)"):
        HardwareSpec.model_validate({**h100, "tflops": {**h100["tflops"], "fp8": 100.0}})
    # with FP8 left out, FP4 beside BF16 (an FP4 peak of 0.5 was taken: a review)
    with pytest.raises(ValueError, match=r"tflops\.fp4: 0\.5 is below the bf16 peak \(989\)"):
        HardwareSpec.model_validate({**h100, "tflops": {"bf16": 989.0, "fp4": 0.5}})
    for chip in load_catalog().hardware.values():
        t = chip.tflops
        assert all(t[n] >= t[w] for w, n in (("bf16", "fp8"), ("fp8", "fp4")) if w in t and n in t), chip.id
