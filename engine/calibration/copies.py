"""A custom chip copied from a catalog chip: which of its fields set its speed, and which profile it runs.

A scenario's own chip runs with its entry's default profile (the dashboard's form writes the user's
fractions as `user`); `engine.calibration.trust.speed_twin` finds the catalog chip it copies in every
number that sets its speed, whose calibration it then takes.
"""

from __future__ import annotations

from engine.catalog.specs import HardwareSpec
from engine.costmodel.stacks import STACK_NAMES

PRICE_FIELDS = frozenset(
    {
        "id",
        "name",
        "sources",
        "illustrative",
        "profiles",
        "default_profile",
        "usd_per_hour",
        "capex_usd",
        "server_capex_usd",
    }
)
"""A chip entry's fields that do not set its speed or power: a copy that differs from a catalog
chip in these alone runs, and is measured, as that chip (`speed_twin`)."""


def own_profile(hw: HardwareSpec, stack: str) -> str:
    """A custom chip's profile under `stack`: its default (the form's `user` fractions), unless that is
    another stack's fit and it has the stack's (a catalog entry copied whole ran its TensorRT-LLM
    profile under vLLM, 17% slower per token than the chip it copied: a review)."""
    theirs = hw.default_profile in STACK_NAMES and hw.default_profile not in (stack, "user")
    return stack if theirs and stack in hw.profiles else hw.default_profile
