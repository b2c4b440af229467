"""The things a scenario names: hardware and model specs and the catalog that holds them.

Owns: `specs` (HardwareSpec, ModelSpec, calibration profiles: validated, sourced values) and
`entries` (the catalog: built-in TOML entries, the user's own folders, inline custom entries,
Hugging Face configs).
May import: engine.core.

The face: `__all__` names what the packages above and the dashboard import, each loaded from its
module on first use (docs/architecture.md, Public API).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_API = {
    "Catalog": "engine.catalog.entries",
    "load_catalog": "engine.catalog.entries",
    "model_from_hf_config": "engine.catalog.entries",
    "CalibrationProfile": "engine.catalog.specs",
    "HardwareSpec": "engine.catalog.specs",
    "ModelSpec": "engine.catalog.specs",
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


def __getattr__(name: str) -> Any:
    """Load a public name from the module that defines it, on first use."""
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), _RENAMED.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:
    from engine.catalog.entries import Catalog, load_catalog, model_from_hf_config
    from engine.catalog.specs import CalibrationProfile, HardwareSpec, ModelSpec
