"""Model and hardware specs: parameter counts, KV bytes and validation."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from engine.catalog.entries import Catalog
from engine.catalog.model_spec import ModelSpec
from engine.catalog.specs import SOURCED_FIELDS, HardwareSpec


def test_llama_70b_kv_bytes_per_token_bf16(catalog: Catalog) -> None:
    # 2 (K and V) x 80 layers x 8 KV heads x 128 dims x 2 bytes
    assert catalog.model("llama-3.1-70b").kv_bytes_per_token("bf16") == 327_680


def test_fp8_kv_halves_bytes(catalog: Catalog) -> None:
    m = catalog.model("llama-3.1-8b")
    assert m.kv_bytes_per_token("fp8") * 2 == m.kv_bytes_per_token("bf16") == 131_072


@pytest.mark.parametrize(
    "model_id",
    [
        "llama-3.1-8b",
        "llama-3.1-70b",
        "llama-3.1-405b",
        "qwen2.5-32b",
        "mixtral-8x7b",
        "deepseek-v3",
        "qwen3-235b-a22b",
        "bloom-176b",
        "llama-2-70b",
    ],
)
def test_derived_params_match_published(catalog: Catalog, model_id: str) -> None:
    m = catalog.model(model_id)
    assert m.published_params_b is not None
    assert m.total_params() / 1e9 == pytest.approx(m.published_params_b, rel=0.02)


def test_moe_active_params(catalog: Catalog) -> None:
    mixtral = catalog.model("mixtral-8x7b")
    assert mixtral.active_params() / 1e9 == pytest.approx(12.9, rel=0.03)
    ds = catalog.model("deepseek-v3")
    assert ds.active_params() / 1e9 == pytest.approx(37.0, rel=0.03)


def test_mla_kv_far_smaller_than_gqa_of_same_width(catalog: Catalog) -> None:
    ds = catalog.model("deepseek-v3")
    # the same model with standard multi-head KV of its width (128 heads x 128 dims)
    gqa = ds.model_copy(update={"mla": None})
    assert ds.kv_bytes_per_token() * 20 < gqa.kv_bytes_per_token()
    # MLA: 61 layers x (512 + 64) x 2 bytes
    assert ds.kv_bytes_per_token("bf16") == 61 * 576 * 2


def test_experts_touched_grows_with_tokens_and_saturates(catalog: Catalog) -> None:
    m = catalog.model("deepseek-v3")
    touched = [m.expected_experts_touched(t) for t in (1, 8, 64, 4096)]
    assert touched[0] == pytest.approx(8)
    assert touched == sorted(touched)
    assert touched[-1] == pytest.approx(256, rel=1e-3)


def test_moe_reads_fewer_weight_bytes_at_small_batch(catalog: Catalog) -> None:
    m = catalog.model("mixtral-8x7b")
    assert m.weight_bytes_read("bf16", 1) < 0.4 * m.weight_bytes_read("bf16", 1024)


def test_model_validation_names_field() -> None:
    with pytest.raises(ValidationError) as err:
        ModelSpec.model_validate(
            {
                "id": "x",
                "name": "x",
                "source": "test",
                "layers": 0,
                "hidden": 8,
                "heads": 2,
                "kv_heads": 2,
                "head_dim": 4,
                "intermediate": 16,
                "vocab": 10,
            }
        )
    assert "layers" in str(err.value)
    with pytest.raises(ValidationError, match="kv_heads"):
        ModelSpec.model_validate(
            {
                "id": "x",
                "name": "x",
                "source": "test",
                "layers": 1,
                "hidden": 8,
                "heads": 3,
                "kv_heads": 2,
                "head_dim": 4,
                "intermediate": 16,
                "vocab": 10,
            }
        )


def _chip(**over: object) -> dict[str, object]:
    data: dict[str, object] = {
        "id": "chip",
        "name": "Chip",
        "vendor": "V",
        "class": "GPU",
        "tflops": {"bf16": 100},
        "memory_gb": 10,
        "memory_tb_s": 1,
        "scale_up_gb_s": 100,
        "scale_out_gb_s": 10,
        "tdp_w": 100,
        "idle_w": 10,
        "usd_per_hour": 1,
        "sources": {k: "assumption: test" for k in SOURCED_FIELDS},
        "profiles": {
            "default": {"eta_compute": 0.5, "eta_bandwidth": 0.8, "overhead_ms": 1, "source": "test"}
        },
    }
    data.update(over)
    return data


def test_hardware_requires_a_source_for_every_number() -> None:
    HardwareSpec.model_validate(_chip())
    bad = _chip()
    bad["sources"] = {"tflops": "x"}
    with pytest.raises(ValidationError, match="sources: every number needs a source"):
        HardwareSpec.model_validate(bad)


def test_hardware_unknown_key_is_an_error() -> None:
    with pytest.raises(ValidationError, match="memory_gbs"):
        HardwareSpec.model_validate(_chip(memory_gbs=3))


def test_compute_precision_falls_back(catalog: Catalog) -> None:
    a100 = catalog.chip("a100-80g")
    assert a100.compute_precision("fp8") == "bf16"
    assert catalog.chip("b200").compute_precision("fp4") == "fp4"
    assert catalog.chip("h100-sxm").compute_precision("fp4") == "fp8"
    assert catalog.chip("h100-sxm").compute_precision("int4") == "bf16"
