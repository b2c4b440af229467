"""What a chip's calibration is and how it is marked: its basis, its band, its reason.

`Calibration` is the record `engine.calibration.trust` gives each (chip, stack): which profile,
on what basis (fitted to the chip's own measurements, or a rule's), the expected error and band of
each kind of figure, and why a fitted chip is only *partly* calibrated (a MoE model's experts at
a factor shared by every chip, or a software maturity that derates the fit). `CalibrationDoc` is
its plain form in a run's summary. Pure data.
"""

# No `from __future__ import annotations` here: typing turns each string annotation of a TypedDict into
# a ForwardRef, compiling it at import (docs/performance.md, "The cold start").
import dataclasses
from dataclasses import dataclass
from typing import Literal, TypedDict

from engine.costmodel.stacks import STACK_NAMES

Basis = Literal["fitted", "own", "same_silicon", "other_stack", "illustrative", "transfer", "assumed"]

BASIS_TEXT: dict[str, str] = {
    "fitted": "fitted to measurements of this chip and stack",
    "own": "fitted to your own benchmark of this chip and stack",
    "same_silicon": "same silicon as a fitted chip",
    "other_stack": "fitted for another serving stack",
    "illustrative": "illustrative chip given the H100's profile",
    "transfer": "transfer from the fitted chips, none of its own",
    "assumed": "assumed factors (no measurements)",
}

PARTIAL_TEXT = "MoE experts: fitted per serving stack and chip vendor, not per chip"
"""(The Planner said 'per serving stack' where Results said 'and chip vendor': one phrase now, a review.)"""
"""Why a fitted chip is only partly calibrated for a MoE model (`Calibration.partial`)."""
OWN_MISS_TEXT = "its fit misses the chip's own published results beyond the pooled band"
"""Why a fitted chip whose band was widened to hold its own published results is only partly
calibrated (`Calibration.own_miss`): the Ascend 910B read a green 'calibrated' beside a throughput
band of −22% to > +100% (a review)."""


class _MoeKeys(TypedDict, total=False):
    shared_experts: bool
    """True when the MoE experts' rate is the one factor fitted to every chip's and stack's MoE rows
    (present only then)."""
    eta_experts: float
    """A MoE model's routed experts' rate against the dense layers' (MoE only)."""
    maturity: str
    """The software maturity that derated the profile, 'vendor' or 'port' (present only then)."""
    first_token_ms: float
    """The latency each request's first token takes beyond the step model, not on the chips, ms:
    the fitted figure of a MoE model's stack, or the scenario's `deployment.first_token_ms`
    (present only for a MoE model or where the scenario sets it)."""
    software: str
    """The software the chip runs where it is not `stack`, in words (`Calibration.software`;
    present only then: a chip whose vendor's compiler places the model)."""
    own_miss: bool
    """True when the chip's fit misses its own published results beyond the pooled band, which is
    widened to hold them (`Calibration.own_miss`; present only then)."""


def _software(text: str) -> _MoeKeys:
    return {"software": text} if text else {}


def _own_miss(miss: bool) -> _MoeKeys:
    return {"own_miss": True} if miss else {}


def _shared(shared: bool) -> _MoeKeys:  # the key only when true (a dense model's JSON keeps its keys)
    return {"shared_experts": True} if shared else {}


def _eta(experts: float | None) -> _MoeKeys:
    return {} if experts is None else {"eta_experts": experts}


def _derated(level: str | None) -> _MoeKeys:
    return {} if level is None else {"maturity": level}


def _first(ms: float | None) -> _MoeKeys:
    return {} if ms is None else {"first_token_ms": ms}


class CalibrationDoc(_MoeKeys):
    """A pool's calibration in a run's summary (`Calibration.as_dict`)."""

    profile: str
    """The calibration profile's name."""
    stack: str
    """The serving stack the chip is modelled under."""
    fitted: bool
    """True when the chip's own measurements under this stack were fitted."""
    partial: bool
    """Fitted, but a MoE model's routed experts run at terms fitted to every chip's MoE rows under the stack."""
    basis: Basis
    """Where the profile comes from (fitted, own, same_silicon, other_stack, illustrative, transfer, assumed)."""
    rule: str
    """The rule that chose the profile, in words."""
    expected_error: dict[str, float]
    """Expected relative error by kind of figure (throughput, ttft, tpot, energy), as a fraction: the
    median held-out |predicted / measured - 1| (the printed band is `band`'s)."""
    band: dict[str, list[float]]
    """Per kind of figure: the 16th and 84th percentile ratio predicted / measured on held-out rows. A
    figure's measured value is likely within figure / high to figure / low: divide, not multiply (a
    TPOT band [0.911, 1.346] reads -26% to +10%, as the pages print it)."""
    caveat: str
    """What reruns of online serving showed for this fit ('' when nothing)."""


@dataclass(frozen=True)
class Calibration:
    """Which profile a chip runs with under a stack, on what basis, and the error to expect."""

    hardware: str
    stack: str
    profile_name: str
    basis: Basis
    rule: str
    expected_error: dict[str, float]
    caveat: str = ""
    """What the simulator's reruns of online serving showed for this profile's fit, and for a MoE
    model the rate its experts ran at ('' when nothing)."""
    experts: float | None = None
    """A MoE model's routed experts' rate against the dense layers' (`CalibrationProfile.eta_experts`)."""
    shared_experts: bool = False
    """True when `experts` is the one factor fitted to every chip's and stack's MoE rows
    (`experts_factor`), not the profile's own."""
    band: dict[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    """Per kind of figure whose band is shown (`engine.calibration.bands`): the 16th and 84th
    percentile ratio predicted / measured over held-out rows of this basis, stack and kind."""
    maturity: str | None = None
    """The software maturity that derated this profile ('vendor', 'port'; `engine.calibration.software`),
    None when the profile runs as its rule gives it."""
    first_token_ms: float | None = None
    """The latency each request's first token takes beyond the step model, not on the chips, ms
    (`engine.calibration.first_token`, `with_first_token`); None where none applies (a dense model)."""
    software: str = ""
    """The software the chip runs where it is not `stack` (a chip whose vendor's compiler places the
    model: Groq's LPU, SambaNova's SN40L, an FPGA), in words; '' where it runs `stack`. The stack still
    gives such a pool its scheduler's defaults."""
    own_miss: bool = False
    """True when the profile misses the chip's own published results beyond the pooled band, so its
    band is widened to hold them (`trust._own_results_said`): fitted, but only partly calibrated."""

    @property
    def under(self) -> str:
        """What the chip runs under, in words: 'vLLM', or its vendor's software (`software`)."""
        return self.software or STACK_NAMES.get(self.stack, self.stack)

    @property
    def fitted(self) -> bool:
        """True when the chip's own measurements under this stack were fitted (the user's own included)."""
        return self.basis in ("fitted", "own")

    @property
    def partial(self) -> bool:
        """Fitted, but for a MoE model whose routed experts run at terms fitted to many chips' MoE rows
        (per serving stack, and chip vendor where two sources allow; the chip's dense layers are its own),
        or derated by a software maturity the measurements did not see."""
        return self.fitted and (self.shared_experts or self.maturity is not None or self.own_miss)

    @property
    def partial_text(self) -> str:
        """Why a fitted chip is only partly calibrated ('' when it is not)."""
        if not self.partial:
            return ""
        if self.maturity is not None:
            return f"derated for software maturity '{self.maturity}'"
        return "; ".join(
            t for t, on in ((OWN_MISS_TEXT, self.own_miss), (PARTIAL_TEXT, self.shared_experts)) if on
        )

    @property
    def mark(self) -> str:
        """'calibrated', 'partly calibrated' or 'uncalibrated'."""
        return "partly calibrated" if self.partial else "calibrated" if self.fitted else "uncalibrated"

    def label(self) -> str:
        """A short mark for tables: 'calibrated', 'partly calibrated (MoE experts: shared factor)'
        or 'uncalibrated (<basis>)'."""
        if self.partial:
            return f"{self.mark} ({self.partial_text})"
        return self.mark if self.basis == "fitted" else f"{self.mark} ({BASIS_TEXT[self.basis]})"

    def error(self, figure: str) -> float | None:
        """The expected relative error of a kind of figure (throughput, ttft, tpot, energy)."""
        return self.expected_error.get(figure)

    def real_band(self, figure: str) -> tuple[float, float] | None:
        """Where a real figure of this kind lands against the modelled one, as signed relative
        changes (fall, rise): the band's ratios turned round (None when no band is shown)."""
        b = self.band.get(figure)
        return None if b is None else (1.0 / b[1] - 1.0, 1.0 / b[0] - 1.0)

    def edges(self) -> tuple[float, float]:
        """How much longer every iteration takes at the band's pessimistic and optimistic edges of
        throughput (e in 1 + e; the second usually negative); (0, 0) when no band is shown."""
        b = self.band.get("throughput")
        return (0.0, 0.0) if b is None else (b[1] - 1.0, b[0] - 1.0)

    def as_dict(self) -> CalibrationDoc:
        """Plain data for JSON: profile, fitted, basis, rule, expected_error, band."""
        doc: CalibrationDoc = {
            "profile": self.profile_name,
            "stack": self.stack,
            "fitted": self.fitted,
            "partial": self.partial,
            **_shared(self.shared_experts),
            "basis": self.basis,
            "rule": self.rule,
            "expected_error": dict(self.expected_error),
            "band": {f: list(b) for f, b in self.band.items()},
            "caveat": self.caveat,
            **_eta(self.experts),
            **_derated(self.maturity),
            **_first(self.first_token_ms),
            **_software(self.software),
            **_own_miss(self.own_miss),
        }
        return doc

    def with_first_token(self, ms: float, why: str) -> "Calibration":
        """This calibration with a first-token latency of `ms` and why (a fitted figure's rows, or
        the scenario's field), said where a MoE experts' note is: in the caveat, and in a rule's
        text when the pool is not fitted."""
        note = (
            f"first token +{ms:.3g} ms a request, in every TTFT and end-to-end time, not on the chips ({why})"
            if ms
            else f"no first-token latency ({why})"
        )
        return dataclasses.replace(
            self,
            first_token_ms=ms,
            rule=self.rule if self.fitted else f"{self.rule}; {note}",
            caveat=f"{self.caveat}; {note}" if self.caveat else note,
        )
