"""Calibration: fitting the cost model to measurements, and how sure each figure is.

Owns: `reference` and `reference_gpustack` (reading the reference rows into points, each judged
usable or set aside with a reason), `measurements` (what a measured point says; a user's CSV),
`predictor` (a point's predicted figure from a profile, in closed form), `calibrate` (fitting a
profile per chip and serving stack, and the shipped profiles' fits), `crossval` and `validation` (held-out errors: leave a source,
a chip or a chip family out; the validation report), `bands` and `band_lookup` (the range beside a
figure: the 16th to 84th percentile of held-out predicted / measured ratios, and its coverage
measured out of sample), `trust` (which profile a chip runs with under a stack, its basis, and its
bands), `mark` (the `Calibration` record trust gives: basis, band, why only partly calibrated),
`own` (a profile fitted to the user's own benchmark: calibrated under its stack, its own band).
May import: engine.core, engine.catalog, engine.costmodel.

The face: `__all__` names what the packages above and the dashboard import, each loaded from its
module on first use (docs/architecture.md, Public API).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engine.faces import lazy as _lazy

_API = {
    "MEASUREMENT_COLUMNS": "engine.calibration.measurements",
    "Measurement": "engine.calibration.measurements",
    "Calibration": "engine.calibration.mark",
    "OWN_MISS_TEXT": "engine.calibration.mark",
    "calibration": "engine.calibration.trust",
    "chip_for_stack": "engine.calibration.trust",
    "experts_factor": "engine.calibration.trust",
    "experts_terms": "engine.calibration.trust",
    "experts_stacks": "engine.calibration.trust",
    "level_choice": "engine.calibration.software",
    "level_effect": "engine.calibration.software",
}
_RENAMED: dict[str, str] = {}

__all__ = [
    "MEASUREMENT_COLUMNS",
    "OWN_MISS_TEXT",
    "Calibration",
    "Measurement",
    "calibration",
    "chip_for_stack",
    "experts_factor",
    "experts_stacks",
    "experts_terms",
    "level_choice",
    "level_effect",
]


__getattr__, __dir__ = _lazy(__name__, _API, _RENAMED, __all__, globals())


if TYPE_CHECKING:
    from engine.calibration.mark import OWN_MISS_TEXT
    from engine.calibration.measurements import MEASUREMENT_COLUMNS, Measurement
    from engine.calibration.software import level_choice, level_effect
    from engine.calibration.trust import (
        Calibration,
        calibration,
        chip_for_stack,
        experts_factor,
        experts_stacks,
        experts_terms,
    )
