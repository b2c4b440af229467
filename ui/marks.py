"""The calibration mark beside the numbers: a badge per run or pool, and the note naming uncalibrated pools.

`engine.explain.confidence` says which pools ran with a profile fitted to their chip under the
scenario's serving stack (the shipped fits, or the user's own benchmark's, named as such) and what
error each figure carries; this draws it. Pool names, chip ids
and rules can come from a share link or an upload, so every sentence goes through `ui.text.plain`.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from engine import explain as ex
from engine.calibration import Calibration
from engine.explain import PoolMark
from ui.text import plain

BADGES = {
    "calibrated": ("green", ":material/verified:"),
    "partly calibrated": ("yellow", ":material/rule:"),
    "uncalibrated": ("orange", ":material/warning:"),
}
"""Each mark's colour and icon (`Calibration.mark`, `confidence.run_mark`)."""


def badge(mark: str, help: str | None = None) -> None:
    """A green 'calibrated', a yellow 'partly calibrated' or an orange 'uncalibrated' badge."""
    color, icon = BADGES[mark]
    st.badge(mark, color=color, icon=icon, help=help)  # type: ignore[arg-type]


def badge_markdown(mark: str) -> str:
    """The same badge as a Markdown directive, to sit inside a line of text."""
    color, icon = BADGES[mark]
    return f":{color}-badge[{icon} {mark}]"


MARK_HELP = (
    "Calibrated: every pool's chip has a profile fitted to measurements under the serving stack (the shipped "
    "reference rows, or your own benchmark, fitted on the Hardware page or by `fengong calibrate`, with the band "
    "of its own held-out errors). "
    "Partly calibrated: so it has, but the model is MoE and its routed experts run at terms fitted "
    "to many chips' MoE measurements (per serving stack, and chip vendor where two sources allow), "
    "which held out misses by more (docs/validation.md), or "
    "a pool's software maturity (vendor, port) derates its fitted profile, or its fit misses the chip's own "
    "published results beyond the pooled band (its band is widened to hold them). "
    "Uncalibrated: a pool's profile comes by a rule (same silicon, another stack, or a conservative "
    "transfer; docs/calibration.md). Figures show their band (−x% to +y%), where about two in three real "
    "deployments land, wherever its coverage on held-out measurements has been measured."
)


def run_mark(
    marks: Sequence[PoolMark], *, key: str, prefix: str = "", stacked: bool = False, rules: bool = True
) -> None:
    """One run's mark: a badge, and a caption naming each uncalibrated pool, its chip and its rule
    (without `rules`, its band: an advisor below says the rule, `ex.note`).

    `stacked` puts the caption under the badge (beside a row of metrics) rather than after it.
    """
    off = ex.uncalibrated(marks)
    with st.container(key=key, horizontal=not stacked, gap="small", vertical_alignment="center"):
        if prefix:
            st.markdown(f"**{plain(prefix)}**")
        badge(ex.run_mark(marks), help=MARK_HELP)
        if off:  # the uncalibrated pools' rules carry their caveats; the fitted pools' are added
            shown = ex.note(marks, rules) or ""
            more = [c for c in ex.caveats(m for m in marks if m.fitted) if c not in shown]
            st.caption(plain(shown + "".join(f" Fitted pools: {c}." for c in more)))
        else:
            unders = list(dict.fromkeys(m.calibration.under for m in marks))  # each pool's software, once
            stack = unders[0] if len(unders) == 1 else " and ".join(unders)
            # the widest of the pools' where they differ: the 910B's beside an H100's read as both (a review)
            differ = len({tuple(sorted(m.calibration.band.items())) for m in marks}) > 1
            errs = ex.errors_text(
                ex.errors_by_figure(marks), "the widest of its pools' bands" if differ else "band"
            )
            warn = "".join(f"; {c}" for c in ex.caveats(marks))
            shared = [
                m.pool
                for m in ex.partly(marks)
                if m.calibration.shared_experts and m.calibration.maturity is None
            ]
            only = (
                f" (for {'pools' if len(shared) > 1 else 'pool'} {', '.join(shared)}, its dense layers; the "
                "routed experts run at terms fitted per serving stack and chip vendor, not per chip)"
                if shared
                else ""
            ) + "".join(
                f"; pool {m.pool} {m.calibration.partial_text}, so its fit no longer holds as measured"
                for m in ex.partly(marks)
                if m.calibration.maturity is not None
            )  # (a fit that misses the chip's own results: its caveat, in `warn`, says so)
            st.caption(
                plain(
                    f"Every pool runs with a profile fitted to its chip under {stack}{only}{_own(marks)}; {errs}{warn}."
                )
            )
    if any(m.calibration.band for m in marks):
        st.caption(plain(ex.BAND_NOTE))


OWN_TEXT = "your own calibration, fitted to your benchmark"
"""How a pool that runs the user's own fit (`engine.calibration.own`) is marked beside its badge."""


def _own(marks: Sequence[PoolMark]) -> str:
    """' (pools a, b: your own calibration, ...)' for the pools whose chip runs the user's own fit."""
    own = [m.pool for m in marks if m.calibration.basis == "own"]
    return f" ({'pools' if len(own) > 1 else 'pool'} {', '.join(own)}: {OWN_TEXT})" if own else ""


def pool_mark(cal: Calibration) -> None:
    """A pool's mark: the badge and a one-line reason (the whole rule in the badge's help)."""
    with st.container(horizontal=True, gap="small", vertical_alignment="center"):
        badge(cal.mark, help=plain(ex.describe(cal)))
        stack = cal.under  # the stack, or the vendor's own software (a compiler-placed chip)
        how = f"fitted to measurements under {stack}" if cal.fitted else cal.rule
        if cal.basis == "own":
            how = f"{OWN_TEXT} under {stack}"
        if cal.fitted and cal.maturity is not None:
            how += f", then {cal.partial_text} (docs/calibration.md)"
        if cal.fitted and cal.caveat:  # a rule's text carries its caveat; a fit's is added
            how += f"; {cal.caveat}"
        st.caption(plain(f"{how} · {ex.errors_text(ex.real_bands(cal))}"))


def value_parts(
    text: str,
    trust: Sequence[PoolMark],
    key: str,
    seeds: bool = False,
    bounds: ex.Limits | None = None,
    moves: ex.Moves | None = None,
) -> tuple[str, str | None]:
    """A headline figure's text and its band apart: the run's spread where known (`moves`,
    `run_bands.figure_band`: '−22% to +39%'), else its kind's band ('−30% to +67%', cut by
    the run's `bounds`, `confidence.limits`: '−36% to +0%').

    Over several seeds the text already holds the seeds' interval (``824 ± 36 ms``): the model's
    band says so in words, ``model ± 15%``, so the two are not confused.
    """
    band = ex.figure_band(text, trust, key, moves, bounds)
    if band is None or not seeds:
        return text, band
    return text, f"model {band}"
