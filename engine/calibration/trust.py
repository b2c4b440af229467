"""How sure a number is: which calibration profile a chip runs with, why, and the error to expect.

Every pool runs with the profile of its chip and serving stack. Where that profile was fitted to
measurements of that chip under that stack, the pool is *calibrated*; otherwise its factors come
by a rule, in this order, and the pool is marked *uncalibrated* wherever its numbers appear:

1. **same silicon**: a chip with the same die as a fitted chip takes that chip's profile (H200,
   H800, H20 and GH200 from the H100; A800 from the A100; GB200 from the B200; MI325X from the
   MI300X; GB300 from the B300). Memory size and bandwidth differ; the fractions of peak do not;
2. **another stack on the same chip (or same silicon)**: the profile fitted for a different
   serving stack, in the order TensorRT-LLM, vLLM, SGLang;
3. **illustrative chips** (what-if designs, marked as such in the catalog) take the H100's
   profile under the same stack, so a design is judged by its specs;
4. **conservative transfer**: the lower quartile of the compute and bandwidth fractions and the
   upper quartile of the overhead among the profiles fitted for that stack on any chip (all
   stacks where none), so an unmeasured chip is not flattered against a measured one; a newer die
   of a fitted chip's architecture (`SAME_ARCHITECTURE`: B300 after B200) takes that chip's
   fractions instead, with the transfer's mark and band.

The expected error of each basis comes from cross-validation (`engine.calibration.crossval`,
`make validate`): leave one source out for fitted chips, leave one chip out for the same-silicon
rule, leave one chip family out for transfers; MoE models carry their own figure. A calibration's
band (`Calibration.band`, what the app shows beside a figure) is the 16th to 84th percentile of
the held-out ratios of its basis, stack and kind (`engine.calibration.bands`, looked up by
`engine.calibration.band_lookup`). Both live in presets/calibration.toml, which
`python -m engine calibrate --reference --write` rewrites and a test keeps equal to a fresh
cross-validation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from engine.calibration.band_lookup import bands_for, calibration_table, own_widenings
from engine.calibration.chip_rules import PLATFORM_STACKS as PLATFORM_STACKS  # the rules' tables, re-exported
from engine.calibration.chip_rules import RELATED as RELATED
from engine.calibration.chip_rules import SAME_ARCHITECTURE as SAME_ARCHITECTURE
from engine.calibration.chip_rules import SAME_SILICON as SAME_SILICON
from engine.calibration.chip_rules import STACK_ORDER as STACK_ORDER
from engine.calibration.chip_rules import TRANSFER_CHIPS as TRANSFER_CHIPS
from engine.calibration.chip_rules import native_stack as native_stack
from engine.calibration.copies import PRICE_FIELDS, own_profile
from engine.calibration.mark import BASIS_TEXT as BASIS_TEXT  # the mark's names, re-exported
from engine.calibration.mark import PARTIAL_TEXT as PARTIAL_TEXT
from engine.calibration.mark import Basis as Basis
from engine.calibration.mark import Calibration as Calibration
from engine.calibration.mark import CalibrationDoc as CalibrationDoc
from engine.calibration.own import is_own, own_terms
from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile, HardwareSpec
from engine.costmodel.stacks import STACK_NAMES
from engine.costmodel.stages import COMPILER_PLACED

FIGURES = ("throughput", "ttft", "tpot", "energy")
FIGURE_NAMES = {"throughput": "throughput", "ttft": "TTFT", "tpot": "TPOT", "energy": "energy"}

NVIDIA_ONLY = ("trtllm",)
"""Stacks that run on NVIDIA GPUs only."""

ILLUSTRATIVE_REFERENCE = "h100-sxm"
"""An illustrative (what-if) chip runs with this chip's fitted profile under the same stack: its
design is compared on its specs, not on an efficiency penalty no measurement supports."""


def is_fitted(profile: CalibrationProfile) -> bool:
    """True when a profile was fitted to measurements (its source says so)."""
    return profile.source.startswith("fitted")


def _tables() -> dict[str, Any]:
    return calibration_table()  # the same file as the bands: read once


def _error_table() -> dict[str, dict[str, float]]:
    return {
        k: {f: float(v) for f, v in row.items()} for k, row in _tables().get("expected_error", {}).items()
    }


def error_table() -> dict[str, dict[str, float]]:
    """The expected error per basis and figure (presets/calibration.toml: held-out medians)."""
    return _error_table()


def experts_factor(stack: str | None = None) -> float | None:
    """The routed experts' rate against the dense layers' under `stack` (`experts_terms`), or None."""
    return experts_terms(stack).get("eta_experts")


EXPERTS_KEYS = ("eta_experts", "eta_experts_compute", "moe_layer_ms", "span_step_ms")
"""The MoE step model's terms (`moe_fit.TERMS`, in that order), the last the per-step cost over machines."""


def pick_experts_terms(
    shared: dict[str, Any],
    stack_own: dict[str, Any] | None,
    pair: dict[str, Any] | None,
    vendor: dict[str, Any] | None,
) -> dict[str, float]:
    """The MoE terms a point runs with, from the tables that may hold them (each a mapping of term
    to value, None where there is none): the (stack, chip vendor) pair's where fitted, else the
    stack's own, else the vendor's across stacks, else the shared ones; the per-step cost over
    machines from the first of those that has it (a table whose rows hold no TP group over machines
    has none), else the stack's, else the shared one. One rule for the fit in memory
    (`moe_fit.ExpertFit.terms`) and the shipped tables (`experts_terms`)."""
    row = next((r for r in (pair, stack_own, vendor) if r), shared)
    span = next(
        (r[EXPERTS_KEYS[-1]] for r in (row, stack_own, shared) if r and r.get(EXPERTS_KEYS[-1]) is not None),
        None,
    )
    out = {k: float(row[k]) for k in EXPERTS_KEYS[:-1] if k in row}
    return out if span is None else {**out, EXPERTS_KEYS[-1]: float(span)}


def experts_stacks() -> list[str]:
    """The serving stacks whose MoE terms are their own (fitted where two sources allow), the others
    running with the shared ones; sorted, empty before the tables are generated."""
    table = _tables().get("experts", {})
    return sorted(k for k, v in table.items() if isinstance(v, dict) and k != "vendor")


def experts_terms(stack: str | None = None, vendor: str | None = None) -> dict[str, float]:
    """The MoE step model's fitted terms for `stack` on a chip of `vendor` (`pick_experts_terms`):
    the (stack, vendor) pair's table (`[experts.<stack>.<vendor>]`) where it has one, else the
    stack's own, else the vendor's across stacks (`[experts.vendor.<vendor>]`), else the terms
    shared by every stack; empty before they are generated."""
    table = _tables().get("experts", {})
    v = vendor.lower() if vendor else None
    own, theirs = (table.get(stack) if stack else None), (table.get("vendor", {}).get(v) if v else None)
    own = own if isinstance(own, dict) else None
    pair = own.get(v) if own and v else None
    return pick_experts_terms(
        table, own, pair if isinstance(pair, dict) else None, theirs if isinstance(theirs, dict) else None
    )


def first_token_ms(stack: str) -> tuple[float, str] | None:
    """The MoE first-token latency fitted for `stack` (`engine.calibration.first_token`), ms, and
    whose rows it was fitted to: the stack's own figure where it has one, else the figure shared by
    every stack; None before presets/calibration.toml has it."""
    table = _tables().get("first_token", {})
    own = table.get("stacks", {}).get(stack)
    if own is not None:
        return float(own), f"fitted to {STACK_NAMES.get(stack, stack)}'s one-client MoE TTFTs"
    if "shared_ms" not in table:
        return None
    return float(table["shared_ms"]), "fitted to every stack's one-client MoE TTFTs"


def with_experts(
    prof: CalibrationProfile, stack: str | None = None, vendor: str | None = None
) -> CalibrationProfile:
    """`prof` with the fitted MoE terms of `stack` on a chip of `vendor` (`experts_terms`), unless
    the profile states its own `eta_experts`."""
    terms = experts_terms(stack, vendor)
    if not terms or prof.eta_experts is not None:
        return prof
    return prof.model_copy(update=terms)


def online_errors(chip: str, stack: str) -> dict[str, float]:
    """The error open-loop serving reruns showed with the profile fitted to (chip, stack) (docs/validation.md)."""
    row = _tables().get("online_error", {}).get(f"{chip}:{stack}", {})
    return {f: float(v) for f, v in row.items()}


def error_text(error: float) -> str:
    """'15%', or '>100%' past 100%: beyond that a figure is off by a factor, not a margin."""
    return ">100%" if error > 1.0 else f"{error:.0%}"


def _own_results_said(cal: Calibration, own: Mapping[str, tuple[float, float, int]]) -> Calibration:
    """`cal` saying that its band holds the chip's own published results the pooled band left out
    (`band_lookup.own_widenings`): 'the profile predicts 0.28 to 0.82 of the measured throughput on 4 of
    this chip's published results, outside the pooled band, so the band holds them'."""
    if not own:
        return cal
    said = ", ".join(
        f"{lo:.2f} to {hi:.2f} of the measured {FIGURE_NAMES[f]} on {n} of its published results"
        if n > 1
        else f"{lo:.2f} of the measured {FIGURE_NAMES[f]} on its one published result"
        for f, (lo, hi, n) in own.items()
    )
    caveat = f"the {cal.hardware} profile predicts {said}, outside the pooled band, so its band is widened to hold them"
    joined = f"{cal.caveat}; {caveat}" if cal.caveat else caveat
    return dataclasses.replace(cal, rule=f"{cal.rule}; {caveat}", caveat=joined, own_miss=True)


def _widened(cal: Calibration, origin: tuple[str, str]) -> Calibration:
    """`cal` with the larger of its basis' error and the online reruns' error of the profile's fit."""
    online = online_errors(*origin)
    reruns = int(online.pop("reruns", 0))
    if not online:
        return cal
    errors = {f: max(cal.expected_error.get(f, 0.0), v) for f, v in online.items()}
    figure = max(("throughput", "ttft", "tpot"), key=lambda f: online.get(f, 0.0))
    miss = online.get(figure, 0.0)
    how = (
        f"put the {FIGURE_NAMES[figure]} at a median {miss + 1:.0f} times the measured"
        if miss > 1.0
        else f"missed the measured {FIGURE_NAMES[figure]} by a median {miss:.0%}"
    )
    caveat = (
        f"serving at a rate, this {origin[0]} {STACK_NAMES.get(origin[1], origin[1])} profile {how} "
        f"({reruns} rows rerun, docs/validation.md)"
    )
    return dataclasses.replace(
        cal, rule=f"{cal.rule}; {caveat}", expected_error={**cal.expected_error, **errors}, caveat=caveat
    )


def expected_errors(basis: Basis, moe: bool = False) -> dict[str, float]:
    """Expected relative error per figure for a basis (MoE models: their own, larger figure)."""
    table = _error_table()
    key = "transfer" if basis in ("assumed", "illustrative") else basis
    out = dict(table.get(key, {}))
    if moe and "moe" in table:
        out = {f: max(out.get(f, 0.0), v) for f, v in table["moe"].items()}
    return out


def floored(
    band: Mapping[str, tuple[float, float]],
    chip: str,
    stack: str,
    basis: Basis,
    moe: bool,
    profile: str | None,
) -> dict[str, tuple[float, float]]:
    """A band (ratio predicted / measured per kind) no narrower than what is known of its basis: it
    holds the basis' median miss on each side (a band of two in three cannot leave out half the
    points: another stack's fit showed TPOT -26% to +10% beside a median miss of 32%, pooled from the
    fitted rows for want of its own), and another stack's fit holds the band the chip would show
    fitted under the stack (it read narrower than the fitted one, from its few held-out points: a review),
    and a transfer or an illustrative or assumed profile the band of the same silicon's."""
    errors = {f: (max(1.0 - e, 0.05), 1.0 + e) for f, e in expected_errors(basis, moe).items()}
    surer = {
        "other_stack": "fitted",
        "transfer": "same_silicon",
        "illustrative": "same_silicon",
        "assumed": "same_silicon",
    }
    # a transfer read TPOT -30% to +67% beside the same silicon's -44% to +64% (a review)
    wider = bands_for(chip, stack, surer[basis], moe, profile) if basis in surer else {}
    return _hull(_hull(band, errors), wider)


def _hull(
    band: Mapping[str, tuple[float, float]], wider: Mapping[str, tuple[float, float]]
) -> dict[str, tuple[float, float]]:
    """Each kind of `band` widened to hold `wider`'s range of that kind, where it has one."""
    out = {}
    for f, (lo, hi) in band.items():
        w = wider.get(f, (lo, hi))
        out[f] = (min(lo, w[0]), max(hi, w[1]))
    return out


def _own_default(hw: HardwareSpec) -> bool:
    """True for a chip whose default profile is the user's own fit: `fengong calibrate`'s entry, read
    from a `FENGONG_CATALOG` directory, runs that fit as the same entry in `custom_hardware` does (it
    ran the catalog's profiles, or a transfer, marked as those: a review)."""
    prof = hw.profiles.get(hw.default_profile)
    return prof is not None and is_own(prof)


def _fitted_profile(hw: HardwareSpec | None, stack: str) -> CalibrationProfile | None:
    prof = None if hw is None else hw.profiles.get(stack)
    return prof if prof is not None and is_fitted(prof) else None


TRANSFER_QUANTILE = 0.25
"""Which point of the fitted profiles an unmeasured chip takes: the lower quartile of each fraction
and the upper quartile of the overhead. Lower than typical, so an unmeasured chip is not flattered
against measured ones, but not the single worst fit (one benchmark's 6% compute fraction)."""


def conservative(profiles: list[CalibrationProfile], basis: str) -> CalibrationProfile:
    """Rule 3's profile from a set of fitted profiles (see `TRANSFER_QUANTILE`)."""
    q = TRANSFER_QUANTILE
    return CalibrationProfile(
        eta_compute=round(float(np.quantile([p.eta_compute for p in profiles], q)), 3),
        eta_bandwidth=round(float(np.quantile([p.eta_bandwidth for p in profiles], q)), 3),
        overhead_ms=round(float(np.quantile([p.overhead_ms for p in profiles], 1.0 - q)), 2),
        source=f"transferred: lower quartile of the fractions and upper quartile of the overhead of the "
        f"{len(profiles)} fitted {basis} (rule 3, docs/calibration.md)",
    )


def distinct(profiles: list[CalibrationProfile]) -> list[CalibrationProfile]:
    """The profiles, each fit once (chips sharing a die share one fit), in their first order."""
    return list(dict.fromkeys(profiles))


MIN_TRANSFER_POOL = 3
"""Fewest fits of a stack a transfer takes its quartiles from; with fewer, the fits of every stack
(a quartile of one or two fits is that fit, not a conservative choice)."""


def transfer_profile(catalog: Catalog, stack: str) -> CalibrationProfile:
    """The conservative profile for a chip with no measurements under `stack` (rule 3)."""
    # one fit shared by the chips of a die (H100 and H200 under TensorRT-LLM) counts once
    pool = distinct([p for h in catalog.hardware.values() if (p := _fitted_profile(h, stack)) is not None])
    basis = f"{STACK_NAMES.get(stack, stack)} profiles"
    if len(pool) < MIN_TRANSFER_POOL:
        pool = distinct(
            [
                p
                for h in catalog.hardware.values()
                for s in STACK_ORDER
                if (p := _fitted_profile(h, s)) is not None
            ]
        )
        basis = "profiles of every stack"
    if not pool:
        return CalibrationProfile(
            eta_compute=0.4,
            eta_bandwidth=0.6,
            overhead_ms=5.0,
            source="assumption: conservative factors; no fitted profile in the catalog to transfer from",
        )
    return conservative(pool, basis)


def siblings_of(chip: str) -> list[str]:
    """The other catalog chips on `chip`'s die (`SAME_SILICON`), the one fits usually sit on first."""
    canon = SAME_SILICON.get(chip, chip)
    group = {canon} | {c for c, s in SAME_SILICON.items() if s == canon}
    group.discard(chip)
    return sorted(group, key=lambda c: (c != canon, c))


Lookup = Callable[[str, str], CalibrationProfile | None]
"""A (chip id, stack) -> fitted profile or None: the catalog's, or a cross-validation's refits."""


def borrowed_profile(
    chip: str, stack: str, fitted: Lookup
) -> tuple[CalibrationProfile, Basis, str, str] | None:
    """Rules 1-3: (profile, basis, chip, stack it was fitted on), or None when only a transfer is left.

    The chip's own fit; else a fit of the same silicon; else another stack's fit of the chip or
    its silicon, closest stack first. `engine.calibration.crossval` applies the same rules to refits.
    """
    own = fitted(chip, native_stack(chip, stack))
    if own is not None:
        return own, "fitted", chip, native_stack(chip, stack)
    siblings = siblings_of(chip)
    for sib in siblings:
        twin = fitted(sib, stack)
        if twin is not None:
            return twin, "same_silicon", sib, stack
    for other in RELATED.get(stack, STACK_ORDER):
        for c in (chip, *siblings):
            # as the stack runs there: SGLang on a 910B borrows its vLLM-Ascend fit (it took a
            # transfer profile 3.4 times faster than the chip's own fit, found in review)
            mine = native_stack(c, other)
            prof = fitted(c, mine)
            if prof is not None:
                return prof, "other_stack", c, mine
    return None


def calibration(
    hw: HardwareSpec,
    stack: str,
    catalog: Catalog,
    profile_name: str | None = None,
    moe: bool = False,
    custom: bool = False,
) -> tuple[CalibrationProfile, Calibration]:
    """The profile `hw` runs with under `stack` (or the named profile) and how sure it is.

    A scenario's own (custom) chip runs with its entry's default profile (the stack's where that is
    another stack's fit: `copies.own_profile`), fitted or assumed as its source says: the user's
    numbers are theirs to state, and are marked accordingly. For a MoE model the profile carries
    the experts' factor, and the calibration says so (its caveat,
    and a rule's text, as for an online caveat).
    """
    plain, cal = _calibration(hw, stack, catalog, profile_name, moe, custom)
    if hw.kind in COMPILER_PLACED:  # its vendor's compiler and runtime, not the stack, run the model
        cal = dataclasses.replace(cal, software=f"{hw.vendor}'s compiler and runtime")
    elif (native := native_stack(hw.id, stack)) != stack:  # vLLM on a 910B is vLLM-Ascend: said so (a review)
        cal = dataclasses.replace(cal, software=STACK_NAMES.get(native, native))
    prof = with_experts(plain, stack, hw.vendor) if moe else plain
    if not moe or prof.eta_experts is None:
        return prof, cal
    shared = plain.eta_experts is None  # the profile states no experts' rate of its own
    table = _tables().get("experts", {})
    own = table.get(stack)  # the stack's terms of its own, and per vendor
    vendor = isinstance(own, dict) and isinstance(own.get(hw.vendor.lower()), dict)
    theirs = not isinstance(own, dict) and isinstance(table.get("vendor", {}).get(hw.vendor.lower()), dict)
    rows = f"{stack if isinstance(own, dict) else 'every stack'}'s MoE rows" + (
        f" on {hw.vendor} chips" if vendor or theirs else ""
    )
    whose = f"fitted to {rows}" if shared else "its own factor"
    layer = f", {prof.moe_layer_ms:.3g} ms per MoE layer" if prof.moe_layer_ms else ""
    math = prof.eta_experts_compute
    # 'in their math' went unexplained (a review): the two rates are the weights' reads and the matmuls'
    rates = f"{prof.eta_experts:.0%} of the dense layers' rates" + (
        f" reading their weights, {math:.0%} in their matrix multiplies"
        if math is not None and math != prof.eta_experts
        else ""
    )
    note = f"MoE: routed experts at {rates}{layer} ({whose}"
    note += ", docs/calibration.md)"
    return prof, dataclasses.replace(
        cal,
        rule=cal.rule if cal.fitted else f"{cal.rule}; {note}",
        caveat=f"{cal.caveat}; {note}" if cal.caveat else note,
        experts=prof.eta_experts,
        shared_experts=shared,
    )


def speed_twin(hw: HardwareSpec, stack: str, catalog: Catalog) -> HardwareSpec | None:
    """The catalog chip a custom chip is a copy of in all but price and name: every number that
    sets its speed and power the same, and either its profiles the chip's own (an entry copied whole:
    it ran its default profile where the chip borrows or transfers one, an H200 copy 22% slower per
    token under vLLM: a review) or its default profile the same fractions as that chip's under
    `stack`; None when there is none (a user chip that changed a spec, or its fractions)."""
    mine = hw.model_dump(exclude=set(PRICE_FIELDS))
    own = hw.profile(own_profile(hw, stack))
    for c in catalog.hardware.values():
        if c.id == hw.id or c.illustrative or c.model_dump(exclude=set(PRICE_FIELDS)) != mine:
            continue
        if (hw.profiles, hw.default_profile) == (c.profiles, c.default_profile):
            return c
        prof, _ = _calibration(c, stack, catalog, None, False, False)
        same = (prof.eta_compute, prof.eta_bandwidth, prof.overhead_ms, prof.eta_experts)
        if same == (own.eta_compute, own.eta_bandwidth, own.overhead_ms, own.eta_experts):
            return c
    return None


def _calibration(
    hw: HardwareSpec,
    stack: str,
    catalog: Catalog,
    profile_name: str | None,
    moe: bool,
    custom: bool,
) -> tuple[CalibrationProfile, Calibration]:
    stack_name = STACK_NAMES.get(stack, stack)
    if custom and profile_name is None and (twin := speed_twin(hw, stack, catalog)) is not None:
        # a copy that changed only its price runs as its chip does, and is as sure
        prof, cal = _calibration(twin, stack, catalog, None, moe, False)
        note = f"a copy of {twin.id} in every number that sets its speed"
        return prof, dataclasses.replace(cal, hardware=hw.id, rule=f"{cal.rule} ({note})")

    def fitted_in_catalog(chip: str, st: str) -> CalibrationProfile | None:
        return _fitted_profile(catalog.hardware.get(chip), st)

    def result(
        prof: CalibrationProfile, name: str, basis: Basis, rule: str, fitted: str | None = None
    ) -> tuple[CalibrationProfile, Calibration]:
        # `fitted`: the stack the profile was fitted under, where not `name` (vLLM on a 910B: vLLM-Ascend)
        p = fitted or name
        band = floored(bands_for(hw.id, stack, basis, moe, p), hw.id, stack, basis, moe, p)
        cal = Calibration(hw.id, stack, name, basis, rule, expected_errors(basis, moe), band=band)
        return prof, _own_results_said(cal, own_widenings(hw.id, stack, basis, moe, p))

    if profile_name is None and (custom or _own_default(hw)):
        profile_name = own_profile(hw, stack)
    if profile_name is not None:
        prof = hw.profile(profile_name)
        if (own := own_terms(hw.id, prof, stack, native_stack, moe)) is not None:
            kind, why, band, errors, caveat = own  # another stack's fit takes that rule's expected error
            errors = errors or expected_errors(kind, moe)
            return prof, Calibration(hw.id, stack, profile_name, kind, why, errors, caveat, band=band)
        if is_fitted(prof):  # a chip's fits are named by their stack; one of another stack, pinned, is as
            # sure as that fit borrowed by rule (it read "calibrated under SGLang: fitted to TensorRT-LLM
            # measurements", with the fitted band: a review)
            foreign = profile_name in STACK_NAMES and profile_name != native_stack(hw.id, stack)
            rule = f"{STACK_NAMES.get(profile_name)} profile of {hw.id} pinned for {stack_name} (no {stack_name} fit)"
            basis: Basis = "other_stack" if foreign else "fitted"
            prof, cal = result(prof, profile_name, basis, rule if foreign else prof.source, profile_name)
            return prof, _widened(cal, (hw.id, profile_name))
        return result(prof, profile_name, "assumed", prof.source)
    found = borrowed_profile(hw.id, stack, fitted_in_catalog)
    if found is not None:
        prof, basis, chip, other = found
        if basis == "fitted":
            prof, cal = result(prof, stack, "fitted", prof.source, other)
        else:
            if basis == "same_silicon":
                rule = f"same silicon as {chip}: its {stack_name} profile"
            else:
                rule = f"{STACK_NAMES[other]} profile of {chip} used for {stack_name} (no {stack_name} fit)"
            prof, cal = result(
                prof.model_copy(update={"source": f"{rule} ({prof.source})"}),
                stack,
                basis,
                rule,
                other if chip == hw.id else None,  # its own fit under another stack: the results it missed
            )
            if chip != hw.id:  # another stack's fit of another chip: no surer than the same silicon's
                cal = dataclasses.replace(
                    cal, band=_hull(cal.band, bands_for(hw.id, stack, "same_silicon", moe))
                )
        return prof, _widened(cal, (chip, other))
    ref = catalog.hardware.get(ILLUSTRATIVE_REFERENCE)
    if hw.illustrative and ref is not None and ref.id != hw.id:
        prof, _ = calibration(ref, stack, catalog)
        rule = f"illustrative chip: the {ILLUSTRATIVE_REFERENCE} {stack_name} profile, so comparisons reflect its specs"
        prof, cal = result(
            prof.model_copy(update={"source": f"{rule} ({prof.source})"}), stack, "illustrative", rule
        )
        ref_fit = borrowed_profile(ref.id, stack, fitted_in_catalog)
        return prof, _widened(cal, (ref_fit[2], ref_fit[3])) if ref_fit is not None else cal
    if (kin := _kin_profile(hw.id, stack, fitted_in_catalog)) is not None:
        return result(kin[0], stack, "transfer", kin[1])
    return result(prof := transfer_profile(catalog, stack), stack, "transfer", prof.source)


def _kin_profile(chip: str, stack: str, fitted: Lookup) -> tuple[CalibrationProfile, str] | None:
    """For a newer die of a fitted chip's architecture (`SAME_ARCHITECTURE`, its same silicon too), that
    chip's profile under the stack (by rules 1-3) and the rule in words; None for any other chip."""
    kin = SAME_ARCHITECTURE.get(SAME_SILICON.get(chip, chip))
    near = borrowed_profile(kin, stack, fitted) if kin is not None else None
    if near is None:
        return None
    rule = f"transfer from {near[2]}, the same architecture on an older die: its {STACK_NAMES[near[3]]} fractions"
    return near[0].model_copy(update={"source": f"{rule} ({near[0].source})"}), rule


def effective_chip(
    hw: HardwareSpec,
    stack: str,
    catalog: Catalog,
    profile_name: str | None = None,
    moe: bool = False,
    custom: bool = False,
) -> tuple[HardwareSpec, str, Calibration]:
    """The chip as an instance should see it: (spec carrying the profile, profile name, calibration).

    A profile given by rule is not in the chip's entry; it is added to a copy, so
    `Instance(hardware=spec, profile_name=name)` runs with exactly what `calibration` chose.
    """
    prof, cal = calibration(hw, stack, catalog, profile_name, moe=moe, custom=custom)
    name = profile_name or cal.profile_name
    if hw.profiles.get(name) != prof:
        hw = hw.model_copy(update={"profiles": {**hw.profiles, name: prof}})
    return hw, name, cal


def chip_for_stack(
    hw: HardwareSpec, stack: str, catalog: Catalog, custom: bool = False, moe: bool = False
) -> HardwareSpec:
    """A copy of `hw` whose default profile is the one it runs with under `stack`.

    For views that take a chip and build instances with its default profile (rooflines, the
    advisor's tables): they then show the same speed the simulation uses.
    """
    spec, name, _ = effective_chip(hw, stack, catalog, moe=moe, custom=custom)
    return spec if spec.default_profile == name else spec.model_copy(update={"default_profile": name})


def with_error(text: str, error: float | None) -> str:
    """'24 ms' -> '24 ms ± 15%' (unchanged when the error is unknown; '± >100%' past 100%)."""
    return text if error is None else f"{text} ± {error_text(error)}"
