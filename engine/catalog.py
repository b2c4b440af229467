"""Hardware and model catalogs: the TOML entries in presets/, plus the user's own.

Built-in entries live in ``presets/hardware/*.toml`` and ``presets/models/*.toml`` (installed
as the ``fengong_presets`` package, so they are found however the engine is started). A user
adds entries without touching code in three ways: a directory named in the ``FENGONG_CATALOG``
environment variable (``os.pathsep``-separated; each may hold ``hardware/`` and ``models/``),
a scenario's inline ``custom_hardware`` / ``custom_models`` tables, or a Hugging Face
``config.json`` turned into a model entry by `model_from_hf_config`.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import ValidationError

from engine.errors import ScenarioError, format_validation_error
from engine.specs import HardwareSpec, ModelSpec

ENV_VAR = "FENGONG_CATALOG"


def presets_dir() -> Path:
    """The directory of the built-in presets (hardware, models, scenarios)."""
    try:
        root = importlib.resources.files("fengong_presets")
        path = Path(str(root))
        if (path / "hardware").is_dir():
            return path
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parent.parent / "presets"


def shared_dir() -> Path | None:
    """The project's shared data folder (reference data, traces), if it can be found.

    ``FENGONG_SHARED`` names it; otherwise ``shared/`` beside the checkout is used.
    """
    env = os.environ.get("FENGONG_SHARED")
    candidates = [Path(env)] if env else []
    here = Path(__file__).resolve().parent.parent
    candidates += [here.parent / "shared", here / "shared", Path.cwd().parent / "shared"]
    for c in candidates:
        if (c / "reference").is_dir() or (c / "traces").is_dir():
            return c
    return None


@dataclass(frozen=True)
class Catalog:
    """Hardware and model entries by id."""

    hardware: Mapping[str, HardwareSpec] = field(default_factory=dict)
    models: Mapping[str, ModelSpec] = field(default_factory=dict)

    def chip(self, hw_id: str) -> HardwareSpec:
        """A hardware entry by id, with a message listing the known ids if it is missing."""
        try:
            return self.hardware[hw_id]
        except KeyError:
            raise ScenarioError(
                f"unknown hardware {hw_id!r}; known: {', '.join(sorted(self.hardware))}"
            ) from None

    def model(self, model_id: str) -> ModelSpec:
        """A model entry by id, with a message listing the known ids if it is missing."""
        try:
            return self.models[model_id]
        except KeyError:
            raise ScenarioError(
                f"unknown model {model_id!r}; known: {', '.join(sorted(self.models))}"
            ) from None

    def with_entries(
        self, hardware: Iterable[HardwareSpec] = (), models: Iterable[ModelSpec] = ()
    ) -> Catalog:
        """A copy with extra entries; an entry with an existing id replaces it."""
        hw = dict(self.hardware)
        hw.update({h.id: h for h in hardware})
        md = dict(self.models)
        md.update({m.id: m for m in models})
        return Catalog(hardware=hw, models=md)


def _load_dir(directory: Path, kind: type[HardwareSpec] | type[ModelSpec]) -> list[Any]:
    entries = []
    for path in sorted(directory.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"{path}: not valid TOML: {exc}") from None
        try:
            entry = kind.model_validate(data)
        except ValidationError as exc:
            raise ScenarioError(f"{path}: {format_validation_error(exc)}") from None
        if entry.id != path.stem:
            raise ScenarioError(f"{path}: id {entry.id!r} must match the file name {path.stem!r}")
        entries.append(entry)
    return entries


def catalog_dirs() -> tuple[Path, ...]:
    """The built-in presets directory followed by the user's directories from the env var."""
    extra = [Path(p) for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p.strip()]
    return (presets_dir(), *extra)


@functools.lru_cache(maxsize=8)
def _load(dirs: tuple[Path, ...]) -> Catalog:
    hardware: dict[str, HardwareSpec] = {}
    models: dict[str, ModelSpec] = {}
    for d in dirs:
        for h in _load_dir(d / "hardware", HardwareSpec):
            hardware[h.id] = h
        for m in _load_dir(d / "models", ModelSpec):
            models[m.id] = m
    return Catalog(hardware=hardware, models=models)


def load_catalog(dirs: Iterable[Path] | None = None) -> Catalog:
    """The catalog from the built-in presets and the user's directories (cached per dir set)."""
    return _load(tuple(dirs) if dirs is not None else catalog_dirs())


_HF_KEYS = {
    "layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "hidden": ("hidden_size", "n_embd", "d_model"),
    "heads": ("num_attention_heads", "n_head"),
    "vocab": ("vocab_size",),
}


def _first(cfg: Mapping[str, Any], keys: tuple[str, ...], what: str) -> Any:
    for k in keys:
        if k in cfg and cfg[k] is not None:
            return cfg[k]
    raise ScenarioError(f"config.json: missing {what} (looked for {', '.join(keys)})")


def model_from_hf_config(
    config: Mapping[str, Any] | str | Path, model_id: str, name: str | None = None
) -> ModelSpec:
    """A model entry from a Hugging Face ``config.json`` (a mapping or a local file path).

    Reads dense (Llama, Qwen, Mistral), MoE (Mixtral, Qwen-MoE, DeepSeek) and MLA fields.
    Nothing is downloaded.
    """
    source = "Hugging Face config.json"
    if not isinstance(config, Mapping):
        path = Path(config)
        source = f"Hugging Face config.json ({path.name})"
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ScenarioError(f"{path}: cannot read a JSON config: {exc}") from None
        if not isinstance(config, Mapping):
            raise ScenarioError(f"{path}: a config.json must hold a JSON object")
    cfg = dict(config)
    layers = _first(cfg, _HF_KEYS["layers"], "the layer count")
    hidden = _first(cfg, _HF_KEYS["hidden"], "the hidden size")
    heads = _first(cfg, _HF_KEYS["heads"], "the attention head count")
    vocab = _first(cfg, _HF_KEYS["vocab"], "the vocabulary size")
    kv_heads = cfg.get("num_key_value_heads") or heads
    head_dim = cfg.get("head_dim") or (hidden // heads if heads else 0)
    act = str(cfg.get("hidden_act") or cfg.get("activation_function") or "silu")
    gated = "glu" in act or act in ("silu", "swish")
    intermediate = cfg.get("intermediate_size") or cfg.get("n_inner") or 4 * hidden
    data: dict[str, Any] = {
        "id": model_id,
        "name": name or str(cfg.get("_name_or_path") or model_id),
        "source": source,
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "intermediate": intermediate,
        "vocab": vocab,
        "mlp_matrices": 3 if gated else 2,
        "tied_embeddings": bool(cfg.get("tie_word_embeddings", False)),
        "max_context": int(cfg.get("max_position_embeddings") or cfg.get("seq_length") or 131072),
    }
    experts = cfg.get("num_local_experts") or cfg.get("num_experts") or cfg.get("n_routed_experts")
    if experts:
        data["moe"] = {
            "experts": experts,
            "experts_per_token": cfg.get("num_experts_per_tok") or 2,
            "expert_intermediate": cfg.get("moe_intermediate_size") or intermediate,
            "shared_experts": cfg.get("n_shared_experts") or 0,
            "dense_layers": cfg.get("first_k_dense_replace") or 0,
        }
    if cfg.get("kv_lora_rank"):
        data["mla"] = {
            "kv_lora_rank": cfg["kv_lora_rank"],
            "q_lora_rank": cfg.get("q_lora_rank") or 0,
            "qk_nope_head_dim": cfg.get("qk_nope_head_dim") or head_dim,
            "qk_rope_head_dim": cfg.get("qk_rope_head_dim") or 0,
            "v_head_dim": cfg.get("v_head_dim") or head_dim,
        }
    try:
        return ModelSpec.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(f"config.json: {format_validation_error(exc)}") from None


def entry_to_toml(entry: HardwareSpec | ModelSpec) -> str:
    """A catalog entry as the TOML text of its file."""
    return tomli_w.dumps(entry.model_dump(mode="json", by_alias=True, exclude_none=True))
