"""The Hardware page's chip of your own: a form that starts from a chip's numbers and the fractions it
runs with under the scenario's stack, checks each against the range a chip allows, and saves it into the
scenario's custom hardware (so it travels with the share link and the TOML)."""

from __future__ import annotations

import streamlit as st
from pydantic import ValidationError

from engine.calibration import calibration
from engine.catalog import CalibrationProfile, Catalog, HardwareSpec
from engine.core import format_validation_error
from engine.explain import (
    CHIP_NUMBERS,
    chip_options,
    custom_chip,
    with_custom_chip,
    without_custom_chip,
)
from engine.scenario import Scenario, scenario_catalog
from ui import state
from ui.bound import range_check
from ui.labels import label_of
from ui.shapes import field_shape
from ui.text import plain


def stack_profile(h: HardwareSpec, sc: Scenario, cat: Catalog) -> CalibrationProfile:
    """The profile `h` runs with under the scenario's serving stack (its dense layers'), by the
    rules of `engine.calibration.trust`: what a copy of it starts from, so that an unedited copy
    runs as fast as the chip it copies (its default profile may be another stack's fit)."""
    custom = any(c.id == h.id for c in sc.custom_hardware)
    return calibration(h, sc.deployment.stack, cat, custom=custom)[0]


def _chip_values(h: HardwareSpec, prof: CalibrationProfile) -> dict[str, float]:
    vals: dict[str, float] = {k: float(getattr(h, k)) for k in CHIP_NUMBERS}
    peaks: dict[str, float] = dict(h.tflops)
    vals.update({f"tflops_{p}": float(peaks.get(p, 0.0)) for p in ("bf16", "fp8", "fp4")})
    vals.update(eta_compute=prof.eta_compute, eta_bandwidth=prof.eta_bandwidth, overhead_ms=prof.overhead_ms)
    return vals


CHIP_LABELS = {
    "tflops_bf16": "BF16 TFLOP/s",
    "tflops_fp8": "FP8 TFLOP/s",
    "tflops_fp4": "FP4 TFLOP/s (0: none)",
    "eta_compute": "Compute fraction η_F (of BF16 peak)",
    "eta_bandwidth": "Bandwidth fraction η_B",
    "overhead_ms": "Overhead per 80 layers (ms)",
}
CHIP_FIELDS = ("tflops_bf16", "tflops_fp8", "tflops_fp4", *CHIP_NUMBERS)


PROFILE_FIELDS = {
    k: (field_shape(CalibrationProfile, k).lo, field_shape(CalibrationProfile, k).hi)
    for k in ("eta_compute", "eta_bandwidth", "overhead_ms")
}
"""The form's fractions and the ranges a profile allows them (`CalibrationProfile`'s fields)."""


def _chip_range(key: str) -> tuple[float | None, float | None]:
    """The range a chip allows a form field (a peak: 0, which drops it, up to its entry's 1,000,000;
    BF16's from 0.01, a chip having one): the form passed none, so 0 TB/s said nothing until Save, and
    BF16's 0 passed the field's check to be refused on Save as 'tflops.bf16' (reviews)."""
    if key == "tflops_bf16":
        return 0.01, 1_000_000.0
    if key.startswith("tflops_"):
        return 0.0, 1_000_000.0
    if key in PROFILE_FIELDS:
        return PROFILE_FIELDS[key]
    sh = field_shape(HardwareSpec, key)
    return sh.lo, sh.hi


def _chip_problems(prefix: str) -> list[str]:
    """Each form field out of its range, by its label."""
    out = []
    for key in (*CHIP_FIELDS, *PROFILE_FIELDS):
        label = CHIP_LABELS.get(key, label_of(key))
        if problem := range_check(*_chip_range(key))(st.session_state[f"{prefix}{key}"]):
            out.append(f"{label}: {problem}")
    return out


def _chip_field_changed(key: str, label: str, lo: float | None, hi: float | None) -> None:
    """Say at once when a typed chip number is out of range (no bounds go to Streamlit, which would not say)."""
    problem = range_check(lo, hi)(st.session_state[key])
    if problem:
        state.notify(f"{label}: {problem}; the chip is not saved until it is in range", key=f"chip:{key}")
    else:
        state.dismiss(f"chip:{key}")


def _save_chip(base_id: str, prefix: str) -> None:
    """Build the chip from the form's widgets and put it into the scenario (or say why not)."""
    ss = st.session_state
    # by the form's labels, the ranges whole, in one notice: each field's own, said as it was typed, gives way
    # to it (one typo read as two banners and a toast: a browser review)
    for key in (*CHIP_FIELDS, *PROFILE_FIELDS):
        state.dismiss(f"chip:{prefix}{key}")
    if problems := _chip_problems(prefix):
        state.notify(f"custom chip not saved: {'; '.join(problems)}", key="chip:save")
        return
    state.dismiss("chip:save")
    cat = scenario_catalog(state.scenario())
    chip_id = str(ss[f"{prefix}id"]).strip()
    values = {k: float(ss[f"{prefix}{k}"]) for k in (*CHIP_FIELDS, *PROFILE_FIELDS)}
    base = cat.chip(base_id)
    fractions = {k: values[k] for k in PROFILE_FIELDS}
    experts = stack_profile(base, state.scenario(), cat).eta_experts  # the form does not edit it
    if experts is not None:
        fractions["eta_experts"] = experts
    try:
        chip = custom_chip(
            base,
            chip_id,
            str(ss[f"{prefix}name"]).strip() or chip_id,
            {k: values[k] for k in CHIP_NUMBERS},
            # the peaks the form does not show (int8) stay the chip's
            {**base.tflops, **{p: values[f"tflops_{p}"] for p in ("bf16", "fp8", "fp4")}},
            fractions,
        )
    except ValidationError as exc:  # (idle power over TDP): the form's labels for the fields' names
        said = format_validation_error(exc)
        for key in CHIP_NUMBERS:
            said = said.replace(key, label_of(key))
        state.notify(f"custom chip not saved: {said}")
        return
    except ValueError as exc:
        state.notify(f"custom chip not saved: {exc}")
        return
    add_custom_chip(chip, use_everywhere=bool(ss.get(f"{prefix}use")))


def add_custom_chip(chip: HardwareSpec, *, use_everywhere: bool = False) -> bool:
    """Put a chip of the user's own into the scenario's custom_hardware (replacing one with its id).

    It then travels with the share link and the TOML and can be picked for any pool on the
    Strategy page; `use_everywhere` also moves every pool onto it. A catalog chip's id is refused.
    Returns whether it was applied (otherwise a notice says why not).
    """
    sc = state.scenario()
    if chip.id in scenario_catalog(sc).hardware and chip.id not in {h.id for h in sc.custom_hardware}:
        state.notify(f"custom chip not saved: {chip.id!r} is a catalog chip; choose another id")
        return False
    new_sc = with_custom_chip(sc, chip)
    if use_everywhere:
        pools = tuple(
            p.model_copy(update={"hardware": chip.id, "profile": None}) for p in new_sc.deployment.pools
        )
        new_sc = new_sc.model_copy(
            update={"deployment": new_sc.deployment.model_copy(update={"pools": pools})}
        )
    return state.commit(new_sc, f"custom chip {chip.id}")


def _remove_chip(chip_id: str) -> None:
    sc = state.scenario()
    fallback = next((p.hardware for p in sc.deployment.pools if p.hardware != chip_id), "h100-sxm")
    state.commit(without_custom_chip(sc, chip_id, fallback), f"removing {chip_id}")


def custom_chip_form(sc: Scenario, cat: Catalog) -> None:
    """Add or edit a chip of the user's own; it travels in the scenario (and its share link)."""
    custom = {h.id: h for h in sc.custom_hardware}
    options = list(dict.fromkeys([*custom, *chip_options(cat)]))
    first = sc.deployment.pools[0].hardware
    base_id = st.selectbox(
        "Start from",
        options,
        index=options.index(first) if first in options else 0,
        key="fg:chip-base",
        format_func=lambda c: f"{c} (custom)" if c in custom else c,
        help="Pick a chip to copy (or one of your custom chips to edit).",
    )
    base = cat.chip(base_id)
    vals = _chip_values(base, stack_profile(base, sc, cat))
    # the fields start from the chosen chip's numbers under the scenario's stack
    prefix = f"fg:chip:{base_id}:{sc.deployment.stack}:"
    with st.container(border=True):
        f1, f2 = st.columns(2)
        f1.text_input(
            "Id",
            value=base_id if base_id in custom else f"my-{base_id}"[:64],
            key=f"{prefix}id",
            help="Lower case letters, digits, . _ - (a catalog chip's id cannot be reused).",
        )
        f2.text_input(
            "Name", value=base.name if base_id in custom else f"{base.name} (custom)", key=f"{prefix}name"
        )
        cols = st.columns(4)
        for i, key in enumerate(CHIP_FIELDS):
            label = CHIP_LABELS.get(key, label_of(key))
            cols[i % 4].number_input(
                label,
                value=vals[key],
                key=f"{prefix}{key}",
                on_change=_chip_field_changed,
                args=(f"{prefix}{key}", label, *_chip_range(key)),
            )
        st.markdown("**Achievable fractions** (saved as the chip's `user` calibration profile)")
        for col, (key, (lo, hi)) in zip(st.columns(3), PROFILE_FIELDS.items(), strict=True):
            col.number_input(
                CHIP_LABELS[key],
                value=vals[key],
                key=f"{prefix}{key}",
                on_change=_chip_field_changed,
                args=(f"{prefix}{key}", CHIP_LABELS[key], lo, hi),
            )
        st.checkbox("Use it in every pool", value=False, key=f"{prefix}use")
        st.button(
            "Save chip to this scenario",
            icon=":material/save:",
            on_click=_save_chip,
            args=(base_id, prefix),
            key="fg:chip-save",
        )
    if custom:
        st.caption("Custom chips of this scenario: " + plain(", ".join(custom)))
        with st.container(horizontal=True):
            for chip_id in custom:
                st.button(
                    f"Remove {plain(chip_id)}",
                    icon=":material/delete:",
                    on_click=_remove_chip,
                    args=(chip_id,),
                    key=f"fg:chip-rm:{chip_id}",
                )
