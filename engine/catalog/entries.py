"""Hardware and model catalogs: the TOML entries in presets/, plus the user's own.

Built-in entries live in ``presets/hardware/*.toml`` and ``presets/models/*.toml`` (installed
as the ``fengong_presets`` package, so they are found however the engine is started). A user
adds entries without touching code in three ways: a directory named in the ``FENGONG_CATALOG``
environment variable (``os.pathsep``-separated; each may hold ``hardware/`` and ``models/``),
a scenario's inline ``custom_hardware`` / ``custom_models`` tables, or a Hugging Face
``config.json`` turned into a model entry by `model_from_hf_config`.
"""

from __future__ import annotations

import difflib
import functools
import importlib.resources
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.catalog import parsed
from engine.catalog.model_spec import MLA, ModelSpec, MoE
from engine.catalog.specs import HF_ID_PATTERN, ID_PATTERN, HardwareSpec, Spec
from engine.core import safeparse
from engine.core.errors import ScenarioError, format_validation_error

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
    return Path(__file__).resolve().parents[2] / "presets"


def unknown_text(kind: str, name: str, known: Iterable[str]) -> str:
    """ "unknown hardware 'mi300X' (did you mean 'mi300x'?); known: ..." (the hint where one id matches but for
    case, or one is close; a mistyped id listed all 33 chips and left the reader to find it: a review)."""
    ids = sorted(known)
    folded = {i.lower(): i for i in ids}
    key = str(name).lower()
    # an id the name begins ('h100' for 'h100-sxm') before a close spelling: 'h100' was offered 'h200', a
    # dearer chip with more memory (an infrastructure engineer's review)
    begun = [i for i in ids if key and i.lower().startswith(key + "-")] if key not in folded else []
    near = (
        [folded[key]]
        if key in folded
        else begun[:SAID_NEAR] or difflib.get_close_matches(key, ids, n=1, cutoff=0.6)
    )
    said = [repr(n) for n in near]
    hint = (
        f" (did you mean {' or '.join([', '.join(said[:-1]), said[-1]] if len(said) > 1 else said)}?)"
        if near
        else ""
    )
    return f"unknown {kind} {name!r}{hint}; known: {', '.join(ids)}"


SAID_NEAR = 3
"""The most ids a 'did you mean' offers where the name begins several ('qwen3-235b' for two models)."""


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
            raise ScenarioError(unknown_text("hardware", hw_id, self.hardware)) from None

    def model(self, model_id: str) -> ModelSpec:
        """A model entry by id, with a message listing the known ids if it is missing."""
        try:
            return self.models[model_id]
        except KeyError:
            raise ScenarioError(unknown_text("model", model_id, self.models)) from None

    def with_entries(
        self, hardware: Iterable[HardwareSpec] = (), models: Iterable[ModelSpec] = ()
    ) -> Catalog:
        """A copy with a scenario's custom entries added.

        A custom entry may not take the id of an entry already here unless it is that very entry
        (a share link could otherwise put a chip of its own in place of the real H100 while the
        page still says H100), and two custom entries may not share an id. Errors name the entry
        the way a scenario does: ``custom_hardware[i].id``, ``custom_models[i].id``.
        """
        hw = dict(self.hardware)
        md = dict(self.models)
        _add_custom(hw, hardware, "custom_hardware", "chip")
        _add_custom(md, models, "custom_models", "model")
        return Catalog(hardware=hw, models=md)

    def with_rents(self, rents: Mapping[str, float], field: str = "cost.usd_per_hour") -> Catalog:
        """A copy whose chips named in `rents` rent at the price given there, per chip-hour, their
        source saying it is the user's (`price_assumed` then no longer calls it an assumption): a
        scenario's own price, from its `cost.usd_per_hour`. A chip not in the catalog is refused,
        naming the field."""
        if not rents:
            return self
        hw = dict(self.hardware)
        for chip, usd in rents.items():
            if chip not in hw:
                raise ScenarioError(f"{field}.{chip}: {unknown_text('hardware', chip, hw)}")
            sources = {**hw[chip].sources, "usd_per_hour": f"entered by the user ({field})"}
            hw[chip] = hw[chip].model_copy(update={"usd_per_hour": float(usd), "sources": sources})
        return Catalog(hardware=hw, models=self.models)


def _add_custom(
    entries: dict[str, Any], custom: Iterable[HardwareSpec | ModelSpec], field: str, what: str
) -> None:
    seen: set[str] = set()
    for i, entry in enumerate(custom):
        where = f"{field}[{i}].id"
        if entry.id in seen:
            raise ScenarioError(f"{where}: {entry.id!r} is given twice; each custom {what} needs its own id")
        seen.add(entry.id)
        if entry.id in entries and entries[entry.id] != entry:
            raise ScenarioError(f"{where}: {entry.id!r} is a catalog {what}; give your {what} its own id")
        entries[entry.id] = entry


def _load_dir(directory: Path, kind: type[HardwareSpec] | type[ModelSpec], presets: Path) -> list[Any]:
    entries = []
    for path in sorted(directory.glob("*.toml")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"{path}: cannot read: {exc}") from None
        data = parsed.lookup(text, presets)  # a shipped entry: parsed ahead (engine.catalog.parsed)
        if data is None:
            data = safeparse.loads_toml(text, str(path))
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
    if missing := [
        str(p) for p in extra if not p.is_dir()
    ]:  # (a mistyped folder added nothing, unsaid: a review)
        raise ScenarioError(f"{ENV_VAR}: no such folder: {', '.join(missing)}")
    return (presets_dir(), *extra)


@functools.lru_cache(maxsize=8)
def _load(dirs: tuple[Path, ...]) -> Catalog:
    hardware: dict[str, HardwareSpec] = {}
    models: dict[str, ModelSpec] = {}
    presets = presets_dir()
    for d in dirs:
        for h in _load_dir(d / "hardware", HardwareSpec, presets):
            hardware[h.id] = h
        for m in _load_dir(d / "models", ModelSpec, presets):
            models[m.id] = m
    return Catalog(hardware=hardware, models=models)


def load_catalog(dirs: Iterable[Path | str] | Path | str | None = None) -> Catalog:
    """The catalog of the folders `dirs` (each holding `hardware/` and `models/`; one folder may be given
    alone), in that order, a later entry replacing an earlier one of the same id; by default the built-in
    presets and the folders `FENGONG_CATALOG` names (`catalog_dirs`). Parsed once per set of folders; each
    call returns its own deep copy (about 1 ms), so a what-if edit of one (`cat.hardware[id] = ...`, or a
    chip's `profiles[...]`, a dict inside a frozen entry) changes no other run (reviews: a copy of the
    two tables still shared each chip's profiles, and halving them slowed every later default run)."""
    cat = shared_catalog(dirs)
    return Catalog(
        hardware={k: v.model_copy(deep=True) for k, v in cat.hardware.items()},
        models={k: v.model_copy(deep=True) for k, v in cat.models.items()},
    )


def shared_catalog(dirs: Iterable[Path | str] | Path | str | None = None) -> Catalog:
    """`load_catalog`'s parsed catalog itself, shared by every caller: for the engine's own reads (a
    scenario's resolution, each run), which never change it; a user's edits go to `load_catalog`'s copy."""
    if dirs is None:
        return _load(catalog_dirs())
    if not isinstance(dirs, str | Path | Iterable):
        raise ScenarioError(f"load_catalog: a folder or a list of folders (got {type(dirs).__name__})")
    folders = tuple(Path(d) for d in ([dirs] if isinstance(dirs, str | Path) else dirs))
    if missing := [str(d) for d in folders if not d.is_dir()]:
        raise ScenarioError(f"load_catalog: no such folder: {', '.join(missing)}")
    # a folder with neither table read as an empty catalog, then every model was unknown (a review)
    if bare := [str(d) for d in folders if not (d / "hardware").is_dir() and not (d / "models").is_dir()]:
        raise ScenarioError(
            f"load_catalog: {', '.join(bare)}: no hardware/ or models/ folder in it (a catalog folder holds "
            "hardware/*.toml and models/*.toml)"
        )
    return _load(folders)


MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""Largest config.json `model_from_hf_config` reads (real ones are a few kilobytes)."""

_HF_KEYS = {
    "layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "hidden": ("hidden_size", "n_embd", "d_model"),
    "heads": ("num_attention_heads", "n_head"),
    "vocab": ("vocab_size",),
}


_SECTION: dict[type[Spec], str] = {MoE: "moe.", MLA: "mla."}
"""Where a nested spec's fields sit in a ModelSpec (for messages)."""


def _limits(spec: type[Spec], name: str) -> tuple[int, int]:
    """The [ge, le] bounds a spec declares for an integer field."""
    lo, hi = 0, 2**63
    for m in spec.model_fields[name].metadata:
        lo = int(getattr(m, "ge", lo))
        hi = int(getattr(m, "le", hi))
    return lo, hi


def _show(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**18:
        return f"a {value.bit_length()}-bit integer"
    text = repr(value) if isinstance(value, bool | int | float | str | None) else type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


class _HfConfig:
    """Typed reads from an untrusted config.json; each problem is a ScenarioError naming its key.

    A key set to null counts as absent; so does 0 for the optional counts whose 0 Hugging Face
    uses for "none" (no MoE, no MLA, no query compression, head_dim to derive).
    """

    def __init__(self, cfg: Mapping[Any, Any]) -> None:
        self.cfg = cfg
        self.used: dict[str, str] = {}  # ModelSpec field path -> the config key it came from

    def find(self, keys: tuple[str, ...]) -> str | None:
        """The first of `keys` the config sets (not null)."""
        return next((k for k in keys if self.cfg.get(k) is not None), None)

    def whole(self, key: str, spec: type[Spec], name: str) -> int:
        """The integer at `key`, within the bounds `spec` declares for its field `name`."""
        value = self.cfg[key]
        lo, hi = _limits(spec, name)
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(f"config.json: {key}: must be a whole number (got {_show(value)})")
        if not lo <= value <= hi:
            raise ScenarioError(f"config.json: {key}: must be in [{lo}, {hi:,}] (got {_show(value)})")
        self.used[_SECTION.get(spec, "") + name] = key
        return value

    def required(self, name: str, what: str) -> int:
        """A count the model cannot do without: ModelSpec's field `name`, described as `what`."""
        keys = _HF_KEYS[name]
        key = self.find(keys)
        if key is None:
            nested = isinstance(self.cfg.get("text_config"), Mapping)
            hint = (
                "; it nests its language model under 'text_config': import that object alone"
                if nested
                else ""
            )
            raise ScenarioError(f"config.json: missing {what} (looked for {', '.join(keys)}){hint}")
        return self.whole(key, ModelSpec, name)

    def optional(self, keys: tuple[str, ...], spec: type[Spec], name: str) -> int | None:
        """A count that may be absent (null; and 0 meaning "none" for the MoE, MLA and head settings). A 0
        of a size (`SIZES`) is checked as the count it claims to be: an intermediate_size of 0 became 4 x
        hidden with nothing said (a hostile review)."""
        key = self.find(keys)
        zero = key is not None and self.cfg[key] == 0 and not isinstance(self.cfg[key], bool)
        if key is None or (zero and key not in SIZES):
            return None
        return self.whole(key, spec, name)

    def text(self, keys: tuple[str, ...]) -> str | None:
        """A string setting, or None when absent."""
        key = self.find(keys)
        if key is None:
            return None
        value = self.cfg[key]
        if not isinstance(value, str):
            raise ScenarioError(f"config.json: {key}: must be a string (got {_show(value)})")
        return value

    def flag(self, key: str) -> bool:
        """A true/false setting (absent: false)."""
        value = self.cfg.get(key)
        if value is not None and not isinstance(value, bool):
            raise ScenarioError(f"config.json: {key}: must be true or false (got {_show(value)})")
        return bool(value)


def _kv_heads(c: _HfConfig, heads: int) -> int:
    """The KV head count (absent or null: multi-head attention, one per head). 0 is refused: read as
    "none" it became full multi-head attention, 4x the KV of an 8-head GQA model (a review)."""
    if c.cfg.get("num_key_value_heads") == 0 and not isinstance(c.cfg["num_key_value_heads"], bool):
        raise ScenarioError(
            f"config.json: num_key_value_heads: 0 is not a head count (1 to {heads}; leave it out, or null, "
            "for multi-head attention)"
        )
    return c.optional(("num_key_value_heads",), ModelSpec, "kv_heads") or heads


CONTEXT_KEYS = ("max_position_embeddings", "seq_length", "n_positions", "n_ctx", "max_sequence_length")
"""Where a config states its context (GPT-2's n_positions and n_ctx too: it read 131,072 for a 1,024-token
model, a review)."""
SIZES = frozenset(
    {"intermediate_size", "n_inner", *CONTEXT_KEYS, "num_experts_per_tok", "moe_intermediate_size"}
)
"""Sizes a config may leave out but not state as 0 (`_HfConfig.optional`)."""


TIED_BY_DEFAULT = ("gpt2", "gemma", "gemma2", "gemma3_text")
"""Model types whose Transformers config class ties the output head to the embedding where a
config.json omits `tie_word_embeddings` (GPT-2 keeps the base class's true, Gemma sets it); the
others read here (Llama, Mistral, Mixtral, Qwen, DeepSeek, OPT's files state it) set false."""


def _tied(c: _HfConfig, config: Mapping[str, Any]) -> bool:
    """Whether the output head shares the embedding: as stated, else by `TIED_BY_DEFAULT`."""
    if "tie_word_embeddings" in config:
        return c.flag("tie_word_embeddings")
    return c.text(("model_type",)) in TIED_BY_DEFAULT


def _checkpoint(config: Mapping[str, Any], label: str) -> dict[str, str]:
    """The checkpoint a config names: its Hub repository (`_name_or_path`, where it is one) and the
    precision its quantization_config stores (fp8; 4-bit AWQ or GPTQ: int4). A DeepSeek-V3 config with
    an fp8 quantization_config came out as bf16 weights, and no repository was written, so launch
    commands loaded a placeholder (a review)."""
    out: dict[str, str] = {}
    if HF_ID_PATTERN.fullmatch(label) and not label.startswith((".", "/")):
        out["hf_id"] = label
    q = config.get("quantization_config")
    if isinstance(q, Mapping):
        method = str(q.get("quant_method", "")).lower()
        if method == "fp8":
            out["hf_weights"] = "fp8"
        elif method in ("awq", "gptq") and q.get("bits") == 4:
            out["hf_weights"] = "int4"
    return out


def _read_config(path: Path) -> Mapping[str, Any]:
    # bounded by what is read: /dev/zero's size reads 0 and its read_text ran out of memory (a hostile review)
    data = safeparse.read_capped(path, MAX_CONFIG_BYTES, "config.json")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: cannot read a JSON config: {exc}") from None
    config = safeparse.loads_json(text, str(path))
    if not isinstance(config, Mapping):
        raise ScenarioError(f"{path}: a config.json must hold a JSON object")
    return config


def model_from_hf_config(
    config: Mapping[str, Any] | str | Path, model_id: str, name: str | None = None
) -> ModelSpec:
    """A model entry from a Hugging Face ``config.json`` (a mapping or a local file path).

    Reads dense (Llama, Qwen, Mistral), MoE (Mixtral, Qwen-MoE, DeepSeek) and MLA fields.
    Nothing is downloaded. The config is untrusted: any JSON at all either gives a valid entry
    or a ScenarioError that names the offending key. A text is a path (JSON text: ``json.loads``). To
    run it: ``apply_overrides(s, {"custom_models": [m.model_dump()], "model.id": m.id})``.
    """
    if not isinstance(model_id, str) or not re.fullmatch(ID_PATTERN, model_id):
        raise ScenarioError(
            f"id: {_show(model_id)} is not a valid id (lower case letters, digits, '.', '_', '-'; "
            f"at most 64 characters)"
        )
    source = "Hugging Face config.json"
    if not isinstance(config, Mapping):
        if not isinstance(config, str | Path):
            raise ScenarioError(f"config.json: expected a JSON object or a file path (got {_show(config)})")
        path = Path(config)
        source = f"Hugging Face config.json ({path.name})"
        config = _read_config(path)
    c = _HfConfig(config)
    layers = c.required("layers", "the layer count")
    hidden = c.required("hidden", "the hidden size")
    heads = c.required("heads", "the attention head count")
    vocab = c.required("vocab", "the vocabulary size")
    kv_heads = _kv_heads(c, heads)
    head_dim = c.optional(("head_dim",), ModelSpec, "head_dim") or hidden // heads
    if head_dim < 1:
        raise ScenarioError(
            f"config.json: head_dim: missing, and hidden size {hidden} // {heads} heads is 0; set head_dim"
        )
    act = c.text(("hidden_act", "activation_function")) or "silu"
    gated = "glu" in act or act in ("silu", "swish")
    intermediate = c.optional(("intermediate_size", "n_inner"), ModelSpec, "intermediate") or 4 * hidden
    label = (c.text(("_name_or_path",)) or "").strip()[:120]
    data: dict[str, Any] = {
        "id": model_id,
        "name": name or label or model_id,
        "source": source,
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": head_dim,
        "intermediate": intermediate,
        "vocab": vocab,
        "mlp_matrices": 3 if gated else 2,
        "tied_embeddings": _tied(c, config),
        "max_context": c.optional(CONTEXT_KEYS, ModelSpec, "max_context") or 131072,
        **_checkpoint(config, label),
    }
    experts = c.optional(("num_local_experts", "num_experts", "n_routed_experts"), MoE, "experts")
    if experts:
        data["moe"] = {
            "experts": experts,
            "experts_per_token": c.optional(("num_experts_per_tok",), MoE, "experts_per_token") or 2,
            "expert_intermediate": c.optional(("moe_intermediate_size",), MoE, "expert_intermediate")
            or intermediate,
            "shared_experts": c.optional(("n_shared_experts",), MoE, "shared_experts") or 0,
            "dense_layers": c.optional(("first_k_dense_replace",), MoE, "dense_layers") or 0,
        }
    kv_rank = c.optional(("kv_lora_rank",), MLA, "kv_lora_rank")
    if kv_rank:
        data["mla"] = {
            "kv_lora_rank": kv_rank,
            "q_lora_rank": c.optional(("q_lora_rank",), MLA, "q_lora_rank") or 0,
            "qk_nope_head_dim": c.optional(("qk_nope_head_dim",), MLA, "qk_nope_head_dim") or head_dim,
            "qk_rope_head_dim": c.optional(("qk_rope_head_dim",), MLA, "qk_rope_head_dim") or 0,
            "v_head_dim": c.optional(("v_head_dim",), MLA, "v_head_dim") or head_dim,
        }
    try:
        return ModelSpec.model_validate(data)
    except ValidationError as exc:
        lines = []
        for line in format_validation_error(exc).split("; "):
            field, sep, rest = line.partition(": ")
            lines.append(f"{c.used.get(field, field)}{sep}{rest}")
        raise ScenarioError("config.json: " + "; ".join(lines)) from None


def entry_to_toml(entry: HardwareSpec | ModelSpec) -> str:
    """A catalog entry as the TOML text of its file."""
    import tomli_w  # only when an entry is written

    return tomli_w.dumps(entry.model_dump(mode="json", by_alias=True, exclude_none=True))


LIST_PRICE_MARK = "hyperscaler list is the only on-demand market"
"""What the source of a chip's hourly rate says where it is its cloud's list price (TPUs, Inferentia2):
the GPUs are priced on the neocloud basis, several times below their own hyperscaler list (docs/hardware.md)."""


def list_priced(hw: HardwareSpec) -> bool:
    """Whether a chip's hourly rate is a hyperscaler's list price, not the GPUs' neocloud basis (`LIST_PRICE_MARK`)."""
    return LIST_PRICE_MARK in hw.sources.get("usd_per_hour", "").lower()  # Inferentia2's starts a sentence


def price_assumed(
    hw: HardwareSpec, own: bool = False, capex_given: bool = False, server_given: bool = False
) -> bool:
    """Whether the price a run bills a chip at is the catalog's assumption rather than a published
    figure (its source opens with "assumption", or says it is "not verified"): rented, its hourly rate;
    owned (`own`), its purchase price or its share of the server's (an H100's assumed $12,000 server
    share, a fifth of its owned bill, went unflagged: a capacity planner's review). A price the user gave
    is theirs, not an assumption: the scenario's purchase price (`capex_given`) or server share
    (`server_given`), a chip entered on the Hardware page ("entered by the user")."""
    if not own:
        return _assumed(hw.sources.get("usd_per_hour", ""))
    chip = not capex_given and _assumed(hw.sources.get("capex_usd", ""))
    server = (
        not server_given and bool(hw.server_capex_usd) and _assumed(hw.sources.get("server_capex_usd", ""))
    )
    return chip or server


def _assumed(source: str) -> bool:
    """A source that opens with "assumption" or says it is "not verified", not the user's own entry."""
    source = source.strip().lower()
    if "entered by the user" in source:
        return False
    return source.startswith("assumption") or "not verified" in source
