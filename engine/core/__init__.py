"""The bottom layer: errors, hard limits, and the trust boundary for text and files.

Owns: `errors` (ScenarioError and how validation failures are worded), `bounds` (the hard
limits every scenario is checked against), `safeparse` (JSON/TOML with size and nesting limits),
`datafiles` (the data location: shipped ``data:`` files, ``upload:`` files, confinement),
`safecsv` (CSV cells a spreadsheet cannot run), and `native` (whether the compiled build of the
simulation's hot modules is current, and if so puts it first on their packages' paths).
May import: nothing of the engine. Everything else may import it.

The face: `__all__` names what the packages above and the dashboard import, each loaded from its
module on first use (docs/architecture.md, Public API). `BOUNDS_TABLE` is `bounds.TABLE`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.faces import lazy as _lazy

_API = {
    "BOUNDS_TABLE": "engine.core.bounds",
    "MAX_CLASSES": "engine.core.bounds",
    "MAX_CLIENTS": "engine.core.bounds",
    "MAX_DURATION_S": "engine.core.bounds",
    "MAX_POOLS": "engine.core.bounds",
    "MAX_PP": "engine.core.bounds",
    "MAX_RATE_RPS": "engine.core.bounds",
    "MAX_REQUESTS": "engine.core.bounds",
    "MAX_TOKENS_PER_REQUEST": "engine.core.bounds",
    "MAX_TP": "engine.core.bounds",
    "MAX_TRACE_BYTES": "engine.core.bounds",
    "DATA_PREFIX": "engine.core.datafiles",
    "LEGACY_PREFIX": "engine.core.datafiles",
    "UPLOAD_PREFIX": "engine.core.datafiles",
    "store_upload": "engine.core.datafiles",
    "unpack_upload": "engine.core.datafiles",
    "ScenarioError": "engine.core.errors",
    "format_validation_error": "engine.core.errors",
    "rate2": "engine.core.numbers",
    "count3": "engine.core.numbers",
    "directed": "engine.core.numbers",
    "figures": "engine.core.numbers",
    "places_apart": "engine.core.numbers",
    "format_apart": "engine.core.numbers",
    "ms_text": "engine.core.numbers",
    "target_of": "engine.core.numbers",
    "clipped": "engine.core.text",
}
_RENAMED = {"BOUNDS_TABLE": "TABLE"}

__all__ = [
    "BOUNDS_TABLE",
    "DATA_PREFIX",
    "LEGACY_PREFIX",
    "MAX_CLASSES",
    "MAX_CLIENTS",
    "MAX_DURATION_S",
    "MAX_POOLS",
    "MAX_PP",
    "MAX_RATE_RPS",
    "MAX_REQUESTS",
    "MAX_TOKENS_PER_REQUEST",
    "MAX_TP",
    "MAX_TRACE_BYTES",
    "UPLOAD_PREFIX",
    "ScenarioError",
    "clipped",
    "count3",
    "directed",
    "figures",
    "format_apart",
    "format_validation_error",
    "ms_text",
    "places_apart",
    "rate2",
    "store_upload",
    "target_of",
    "unpack_upload",
]


__getattr__, __dir__ = _lazy(__name__, _API, _RENAMED, __all__, globals())


if TYPE_CHECKING:
    from engine.core.bounds import (
        MAX_CLASSES,
        MAX_CLIENTS,
        MAX_DURATION_S,
        MAX_POOLS,
        MAX_PP,
        MAX_RATE_RPS,
        MAX_REQUESTS,
        MAX_TOKENS_PER_REQUEST,
        MAX_TP,
        MAX_TRACE_BYTES,
    )
    from engine.core.bounds import TABLE as BOUNDS_TABLE
    from engine.core.datafiles import DATA_PREFIX, LEGACY_PREFIX, UPLOAD_PREFIX, store_upload, unpack_upload
    from engine.core.errors import ScenarioError, format_validation_error
    from engine.core.numbers import count3, directed, format_apart, ms_text, places_apart, rate2, target_of
    from engine.core.text import clipped
