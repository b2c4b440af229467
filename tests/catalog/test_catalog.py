"""The catalogs: every required entry, every number sourced, user entries without code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.catalog.entries import Catalog, catalog_dirs, entry_to_toml, load_catalog, model_from_hf_config
from engine.catalog.specs import SOURCED_FIELDS
from engine.core.errors import ScenarioError

REQUIRED_HW = [
    "a100-80g",
    "h100-sxm",
    "h200",
    "h20",
    "b200",
    "l40s",
    "mi300x",
    "mi325x",
    "gaudi3",
    "tpu-v5e",
    "tpu-v6e",
    "trainium2",
    "inferentia2",
    "decode-asic",
    "edge-npu",
]
REQUIRED_MODELS = [
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "qwen2.5-32b",
    "mixtral-8x7b",
    "deepseek-v3",
    "llama-2-70b",
    "llama-3.3-70b",
    "bloom-176b",
    "qwen3-235b-a22b",
]


def test_required_entries_present(catalog: Catalog) -> None:
    assert set(REQUIRED_HW) <= set(catalog.hardware)
    assert set(REQUIRED_MODELS) <= set(catalog.models)


def test_illustrative_chips_are_marked_and_assumed(catalog: Catalog) -> None:
    for hw_id in ("decode-asic", "edge-npu"):
        chip = catalog.chip(hw_id)
        assert chip.illustrative
        assert all(v.startswith("assumption") for v in chip.sources.values())
    assert not catalog.chip("h100-sxm").illustrative


@pytest.mark.parametrize("hw_id", REQUIRED_HW)
def test_every_number_has_a_source(catalog: Catalog, hw_id: str) -> None:
    chip = catalog.chip(hw_id)
    for field in SOURCED_FIELDS:
        assert len(chip.sources[field]) > 5, field
    for prof in chip.profiles.values():
        assert len(prof.source) > 5


def test_h100_matches_reference_csv(catalog: Catalog) -> None:
    h = catalog.chip("h100-sxm")
    assert (h.tflops["bf16"], h.tflops["fp8"], h.memory_gb, h.memory_tb_s) == (989, 1979, 80, 3.35)


def test_unknown_ids_list_known(catalog: Catalog) -> None:
    with pytest.raises(ScenarioError, match=r"known: .*h100-sxm"):
        catalog.chip("h1000")


def test_user_directory_adds_entries(tmp_path: Path, catalog: Catalog) -> None:
    (tmp_path / "hardware").mkdir()
    mine = catalog.chip("h100-sxm").model_copy(update={"id": "my-chip", "usd_per_hour": 1.0})
    (tmp_path / "hardware" / "my-chip.toml").write_text(entry_to_toml(mine))
    cat = load_catalog([*catalog_dirs(), tmp_path])
    assert cat.chip("my-chip").usd_per_hour == 1.0
    assert "h100-sxm" in cat.hardware


def test_env_var_directory_seen_by_cli(tmp_path: Path, catalog: Catalog) -> None:
    (tmp_path / "models").mkdir()
    mine = catalog.model("llama-3.1-8b").model_copy(update={"id": "my-8b"})
    (tmp_path / "models" / "my-8b.toml").write_text(entry_to_toml(mine))
    env = {**os.environ, "FENGONG_CATALOG": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-m", "engine", "catalog", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=tmp_path,
    )
    ids = [m["id"] for m in json.loads(out.stdout)["models"]]
    assert "my-8b" in ids


def test_bad_user_entry_names_file_and_field(tmp_path: Path) -> None:
    (tmp_path / "hardware").mkdir()
    (tmp_path / "hardware" / "bad.toml").write_text('id = "bad"\nname = "b"\n')
    with pytest.raises(ScenarioError, match=r"bad.toml: .*vendor: Field required"):
        load_catalog([tmp_path])


HF_DEEPSEEK = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_shared_experts": 1,
    "n_routed_experts": 256,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "vocab_size": 129280,
    "hidden_act": "silu",
    "max_position_embeddings": 163840,
    "tie_word_embeddings": False,
}


def test_hf_config_import_matches_catalog(tmp_path: Path, catalog: Catalog) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(HF_DEEPSEEK))
    spec = model_from_hf_config(path, "ds")
    ref = catalog.model("deepseek-v3")
    assert spec.total_params() == ref.total_params()
    assert spec.kv_bytes_per_token() == ref.kv_bytes_per_token()


def test_hf_config_llama_and_errors() -> None:
    cfg = {
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
    }
    spec = model_from_hf_config(cfg, "l8")
    assert spec.total_params() / 1e9 == pytest.approx(8.03, rel=0.01)
    with pytest.raises(ScenarioError, match="hidden size"):
        model_from_hf_config({"num_hidden_layers": 2}, "x")
    with pytest.raises(ScenarioError, match="layers"):
        model_from_hf_config({**cfg, "num_hidden_layers": -1}, "x")
    # 0 KV heads is no head count: it became full multi-head attention, 4x the KV bytes (a review)
    with pytest.raises(ScenarioError, match=r"num_key_value_heads: 0 is not a head count \(1 to 32"):
        model_from_hf_config({**cfg, "num_key_value_heads": 0}, "x")
    assert model_from_hf_config({**cfg, "num_key_value_heads": None}, "x").kv_heads == 32  # null: MHA


def test_a_what_if_edit_of_the_catalog_changes_no_other_run(tmp_path: Path) -> None:
    """`load_catalog()` returned one shared catalog: pricing an H100 at $1 for a what-if priced every later
    default run at $1 too (a review). Each call is its own copy; a folder given alone, or missing, is said."""
    from engine import apply_overrides, load_preset, simulate

    sc = apply_overrides(load_preset("chat-colocated"), {"duration_s": 20.0})
    before = simulate(sc).summary["cost"]["usd_per_hour"]
    cat = load_catalog()
    cat.hardware["h100-sxm"] = cat.hardware["h100-sxm"].model_copy(update={"usd_per_hour": 1.0})  # type: ignore[index]
    assert simulate(sc, catalog=cat).summary["cost"]["usd_per_hour"] < before
    assert simulate(sc).summary["cost"]["usd_per_hour"] == before
    assert load_catalog().hardware["h100-sxm"].usd_per_hour == 2.49
    # nor an edit inside an entry: a chip's profiles are a dict in a frozen entry, shared by a shallow copy
    # (halving them took a later default run's TPOT p50 from 22.1 to 59.3 ms: a review)
    tpot = simulate(sc).summary["latency_ms"]["tpot"]["p50"]
    profiles = load_catalog().hardware["h100-sxm"].profiles
    for name, prof in list(profiles.items()):
        profiles[name] = prof.model_copy(update={"eta_bandwidth": prof.eta_bandwidth / 2})  # type: ignore[index]
    assert simulate(sc).summary["latency_ms"]["tpot"]["p50"] == tpot
    assert load_catalog().hardware["h100-sxm"].profiles != profiles
    with pytest.raises(ScenarioError, match="load_catalog: no such folder: "):
        load_catalog([tmp_path / "nope"])
    (tmp_path / "hardware").mkdir()
    assert load_catalog(str(tmp_path)).hardware == {}  # one folder, given alone: its entries only


def test_a_catalog_folder_that_is_not_there_is_said(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped FENGONG_CATALOG folder added nothing, unsaid; --url without --link changed nothing (a review)."""
    from engine.catalog.entries import catalog_dirs
    from engine.cli.main import main
    from engine.core.errors import ScenarioError

    monkeypatch.setenv("FENGONG_CATALOG", "/no/such/folder")
    with pytest.raises(ScenarioError, match=r"^FENGONG_CATALOG: no such folder: /no/such/folder$"):
        catalog_dirs()
    monkeypatch.delenv("FENGONG_CATALOG")
    assert main(["scenario", "chat-colocated", "--url", "http://h:1"]) == 2
    assert "--url: it sets the address --link prints; give --link too" in capsys.readouterr().err
    assert main(["plan", "chat-colocated", "--target-rps", "5", "--ep", "4"]) == 2  # ignored on a dense model
    assert "--ep: llama-3.1-70b is a dense model: it has no experts to spread" in capsys.readouterr().err
