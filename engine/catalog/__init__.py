"""The things a scenario names: hardware and model specs and the catalog that holds them.

Owns: `specs` (HardwareSpec, ModelSpec, calibration profiles: validated, sourced values) and
`entries` (the catalog: built-in TOML entries, the user's own folders, inline custom entries,
Hugging Face configs), `parsed` (the shipped TOML parsed ahead, presets/parsed.json) and
`param_counts` (a model's parameter counts, kept per spec object).
May import: engine.core.

The face: `__all__` names what the packages above and the dashboard import, each loaded from its
module on first use (docs/architecture.md, Public API).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.faces import lazy as _lazy

_API = {
    "Catalog": "engine.catalog.entries",
    "load_catalog": "engine.catalog.entries",
    "model_from_hf_config": "engine.catalog.entries",
    "CalibrationProfile": "engine.catalog.specs",
    "HardwareSpec": "engine.catalog.specs",
    "ModelSpec": "engine.catalog.model_spec",
}
_RENAMED: dict[str, str] = {}

__all__ = [
    "CalibrationProfile",
    "Catalog",
    "HardwareSpec",
    "ModelSpec",
    "load_catalog",
    "model_from_hf_config",
]


__getattr__, __dir__ = _lazy(__name__, _API, _RENAMED, __all__, globals())


if TYPE_CHECKING:
    from engine.catalog.entries import Catalog, load_catalog, model_from_hf_config
    from engine.catalog.model_spec import ModelSpec
    from engine.catalog.specs import CalibrationProfile, HardwareSpec
