"""How sure the shown numbers are: each pool's calibration mark and the band of each figure.

Every pool runs with a calibration profile chosen by a rule (`engine.calibration.trust`): fitted to
measurements of its chip under the scenario's serving stack (*calibrated*), or borrowed from the
same silicon, another stack or a conservative transfer (*uncalibrated*, with the rule). A run's
summary carries the choice per pool (``summary["calibration"]``); this module turns it into what
the pages, the command line and the advisor show: a mark per pool, one note naming every
uncalibrated pool with its chip and rule, and each figure's band: where about two in three real
deployments land (`engine.calibration.bands`), asymmetric where the model's held-out misses are.

Which band a figure carries: TTFT the TTFT band of the pools that prefill (prefill and mixed
roles), TPOT that of the pools that decode (decode and mixed), throughput, goodput and capacity
the throughput band of every pool, cost per request or per token that band turned round (a bill
is exact; what it buys is not); over several pools, the lowest fall and the highest rise. A kind
whose band's coverage was not measured on enough held-out points (TTFT, energy per token today)
gets no band rather than an invented one. SLO attainment and the bill per hour carry none: the
first is a share of requests, not a scaled quantity, and the second is prices times chips. An
open loop cannot complete more than it was sent, so where a run served what arrived, the
throughput-borne figures' bands are cut on the side faster chips would move them (`limits`:
`9.9 req/s (−30% to +0%)`; offline batches and closed loops keep the whole band).

Plain data only, no pandas: the command line's ``run`` imports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.calibration.band_lookup import BAND_MEANING, e2e_coverage
from engine.calibration.trust import (
    BASIS_TEXT,
    FIGURES,
    Calibration,
    calibration,
    error_text,
)
from engine.catalog.entries import Catalog
from engine.costmodel.stacks import STACK_NAMES, runs_only_on
from engine.scenario.model import Scenario
from engine.scenario.resolve import resolve
from engine.serving.speed_limits import LOWERED_BY_SPEED, cut
from engine.serving.speed_limits import Limits as Limits  # (re-exported)
from engine.serving.speed_limits import limits as limits  # (re-exported: the pages' and the CLI's name)

PREFILLING = ("prefill", "mixed")
"""Pool roles whose speed sets TTFT."""
DECODING = ("decode", "mixed")
"""Pool roles whose speed sets TPOT."""

NO_VALUE = ("", "-", "–", "n/a")
"""Texts that stand for a missing figure: they get no error bar."""

FIGURE_NAMES = {"throughput": "throughput", "ttft": "TTFT", "tpot": "TPOT", "energy": "energy"}
"""How each kind of figure is named in a sentence."""

BAND_NOTE = (
    f"Band: {BAND_MEANING} (the 16th to 84th percentile of the model's misses on measurements it "
    "was not fitted to, docs/calibration.md)."
)
"""The one line that says what a band is, wherever bands are printed."""

Source = tuple[tuple[str, tuple[str, ...] | None], ...]
"""Where a figure's error comes from: (kind of figure, pool roles or None for every pool), largest wins."""

THROUGHPUT: Source = (("throughput", None),)
HEADLINE_SOURCES: dict[str, Source] = {
    "ttft_p99_ms": (("ttft", PREFILLING),),
    "tpot_p99_ms": (("tpot", DECODING),),
    "e2e_p99_ms": (("ttft", PREFILLING), ("tpot", DECODING)),
    "goodput_rps": THROUGHPUT,
    "throughput_rps": THROUGHPUT,
    "usd_per_request": THROUGHPUT,
    "usd_per_million_output_tokens": THROUGHPUT,
    "goodput_per_usd": THROUGHPUT,
    "joules_per_output_token": (("energy", None),),
}
"""Headline figures (`engine.explain.presentation.headline` keys, plus throughput and energy) and their error."""

COMPARED_SOURCES: dict[str, Source] = {
    **{f"TTFT {p}": HEADLINE_SOURCES["ttft_p99_ms"] for p in ("p50", "p90", "p99")},
    **{f"TPOT {p}": HEADLINE_SOURCES["tpot_p99_ms"] for p in ("p50", "p90", "p99")},
    **{f"E2E {p}": HEADLINE_SOURCES["e2e_p99_ms"] for p in ("p50", "p99")},
    "Throughput": THROUGHPUT,
    "Output tokens/s": THROUGHPUT,
    "Cost per request": THROUGHPUT,
    "Cost per 1M output tokens": THROUGHPUT,
    "Energy per output token": (("energy", None),),
    "Mean power, all chips": (("energy", None),),
}
"""Figures of the Compare table (`engine.explain.compare_table.COMPARED` labels) that carry an error
of their kind; goodput none (`SPREAD_ONLY`: its runs' spread alone, `spread_rows`).
E2E's band is the envelope of its prefill pools' TTFT band and its decode pools' TPOT band, where both
are shown (no band of its own is fitted; `figure_range`); its coverage on the reference's held-out mean
E2Es is `e2e_band_note`'s (`make validate`'s E2E line, `engine.calibration.e2e_band`; docs/calibration.md,
"E2E's band")."""


def e2e_band_note() -> str:
    """What E2E's band is and how much of the held-out mean E2Es it held, in one sentence ('' unmeasured)."""
    cov = e2e_coverage()
    if cov is None:
        return ""
    from engine.calibration.bands import COVERAGE_RANGE  # (pandas: only where a band is printed)

    side = (
        ", more than it says"
        if cov[0] > COVERAGE_RANGE[1]
        else ", fewer than it says"
        if cov[0] < COVERAGE_RANGE[0]
        else ""
    )
    return (
        f"E2E's band is the envelope of its TTFT and TPOT bands (none of its own): where both are shown (MoE "
        f"models) it held {cov[0]:.0%} of {cov[1]} published mean E2Es held out from the fit{side}."
    )


@dataclass(frozen=True)
class PoolMark:
    """One pool of a run with the calibration its chip ran under."""

    pool: str
    role: str
    calibration: Calibration

    @property
    def hardware(self) -> str:
        """The pool's chip id."""
        return self.calibration.hardware

    @property
    def fitted(self) -> bool:
        """True when the chip's own measurements under the run's stack were fitted."""
        return self.calibration.fitted


def _from_dict(hardware: str, d: Mapping[str, Any]) -> Calibration:
    return Calibration(
        hardware=hardware,
        stack=str(d.get("stack", "")),
        profile_name=str(d.get("profile", "")),
        basis=d.get("basis", "assumed"),
        rule=str(d.get("rule", "")),
        expected_error={str(k): float(v) for k, v in (d.get("expected_error") or {}).items()},
        caveat=str(d.get("caveat", "")),
        experts=float(d["eta_experts"]) if d.get("eta_experts") is not None else None,
        shared_experts=bool(d.get("shared_experts", False)),
        band={str(k): (float(v[0]), float(v[1])) for k, v in (d.get("band") or {}).items()},
        maturity=str(d["maturity"]) if d.get("maturity") else None,
        first_token_ms=float(d["first_token_ms"]) if d.get("first_token_ms") is not None else None,
        software=str(d.get("software") or ""),
        own_miss=bool(d.get("own_miss", False)),
    )


def pool_marks(
    scenario: Scenario, summary: Mapping[str, Any] | None = None, catalog: Catalog | None = None
) -> tuple[PoolMark, ...]:
    """Each pool's calibration: from the run's summary when given (what the run used), else resolved."""
    carried = (summary or {}).get("calibration")
    pools = scenario.deployment.pools
    if isinstance(carried, Mapping) and all(p.name in carried for p in pools):
        return tuple(PoolMark(p.name, p.role, _from_dict(p.hardware, carried[p.name])) for p in pools)
    res = resolve(scenario, catalog)
    return tuple(PoolMark(p.spec.name, p.spec.role, p.calibration) for p in res.pools)


def stack_name(stack: str) -> str:
    """A serving stack's display name (vLLM, SGLang, TensorRT-LLM)."""
    return STACK_NAMES.get(stack, stack)


def error_list(ranges: Mapping[str, Range]) -> str:
    """'throughput −30% to +17%, TPOT ± 12%' from per-kind bands (`real_bands`; '' when none is shown)."""
    return ", ".join(
        f"{FIGURE_NAMES[f]} {signed_text(*ranges[f])}" for f in FIGURES if ranges.get(f) is not None
    )


def errors_text(ranges: Mapping[str, Range], what: str = "band") -> str:
    """'band: throughput −30% to +17%, ...' (`what` names it), or that no band's coverage has been measured."""
    listed = error_list(ranges)
    return f"{what}: {listed}" if listed else "no band with a measured coverage"


def real_bands(cal: Calibration) -> dict[str, Range]:
    """Per kind of figure with a band: where the real figure lands against the modelled one."""
    return {f: r for f in FIGURES if (r := cal.real_band(f)) is not None}


def describe(cal: Calibration) -> str:
    """A calibration in one line: mark, rule (with a fit's caveat: a rule's text carries its own)
    and expected errors."""
    extra = [c for c in cal.caveat.split("; ") if c and c not in cal.rule] if cal.fitted else []
    how = "; ".join([cal.rule, *extra])
    return f"{cal.mark} under {cal.under}: {how}; {errors_text(real_bands(cal))}"


def caveats(marks: Iterable[PoolMark]) -> list[str]:
    """The distinct online-serving caveats of the pools' profiles (docs/validation.md), in pool order."""
    out: list[str] = []
    for m in marks:
        text = m.calibration.caveat
        if text and text not in out:
            out.append(text)
    return out


def short_mark(cal: Calibration) -> str:
    """A table cell: 'calibrated', 'partly calibrated: <why>' or 'uncalibrated: <basis>'."""
    if cal.partial:
        return f"{cal.mark}: {cal.partial_text}"
    return cal.mark if cal.basis == "fitted" else f"{cal.mark}: {BASIS_TEXT[cal.basis]}"


Range = tuple[float, float]
"""A band as where the real figure lands against the modelled one: (fall, rise), signed relative
changes, fall <= rise (both negative where the model runs high on every held-out point)."""


def figure_range(marks: Iterable[PoolMark], source: Source) -> Range | None:
    """A figure's band over the pools it depends on: the lowest fall and the highest rise of their
    bands (None when no pool has one). A figure of several kinds (E2E: TTFT and TPOT) has one only where
    each kind has one: its envelope's coverage was measured where both are shown (`e2e_band_note`), and a
    dense run's E2E carried its TPOT band alone, with one-token answers a figure equal to its TTFT, which
    had none (a review)."""
    marks = list(marks)
    found = {
        figure: [
            r
            for m in marks
            if roles is None or m.role in roles
            if (r := m.calibration.real_band(figure)) is not None
        ]
        for figure, roles in source
    }
    if not found or not all(found.values()):
        return None
    every = [r for rs in found.values() for r in rs]
    return min(r[0] for r in every), max(r[1] for r in every)


def inverted(r: Range) -> Range:
    """The band of a figure inverse to the one `r` is of: cost per request against throughput."""
    return 1.0 / (1.0 + r[1]) - 1.0, 1.0 / (1.0 + r[0]) - 1.0


def headline_range(marks: Sequence[PoolMark], key: str) -> Range | None:
    """The band of a headline figure (`HEADLINE_SOURCES`), turned round for the costs that faster
    chips lower."""
    src = HEADLINE_SOURCES.get(key)
    r = figure_range(marks, src) if src else None
    return inverted(r) if r is not None and key in LOWERED_BY_SPEED else r


def errors_by_figure(marks: Sequence[PoolMark]) -> dict[str, Range]:
    """The band of each kind of figure over every pool (only those shown)."""
    out = {f: figure_range(marks, ((f, None),)) for f in FIGURES}
    return {f: r for f, r in out.items() if r is not None}


def uncalibrated(marks: Iterable[PoolMark]) -> list[PoolMark]:
    """The pools whose chip has no fitted profile under the run's stack."""
    return [m for m in marks if not m.fitted]


def partly(marks: Iterable[PoolMark]) -> list[PoolMark]:
    """The fitted pools only partly calibrated (`Calibration.partial`): a MoE model's experts at the
    shared terms, a software maturity's derating, or a fit that misses the chip's own results."""
    return [m for m in marks if m.calibration.partial]


def run_mark(marks: Sequence[PoolMark]) -> str:
    """A run's mark: 'uncalibrated' if any pool is, else 'partly calibrated' if any pool is, else
    'calibrated'. A run is as sure as its least sure pool."""
    return "uncalibrated" if uncalibrated(marks) else "partly calibrated" if partly(marks) else "calibrated"


def note(marks: Sequence[PoolMark], rules: bool = True) -> str | None:
    """A sentence naming every uncalibrated pool with its chip and rule (None when all are calibrated),
    pools on one chip by one rule together; without `rules`, their band only, where an advisor says
    each rule (Results said a MoE rule's paragraph twice, under its figures and in its advisor)."""
    off = uncalibrated(marks)
    if not off:
        return None
    groups: dict[tuple[str, str], list[PoolMark]] = {}
    for m in off:
        groups.setdefault((m.hardware, m.calibration.rule), []).append(m)
    parts = []
    for (hw, rule), ms in groups.items():
        names = ", ".join(m.pool for m in ms)
        errs = errors_text(real_bands(ms[0].calibration))
        own = f" under {sw}" if (sw := ms[0].calibration.software) else ""  # not the stack's software
        how = f": {rule} ({errs})" if rules else f", by a rule ({errs})"
        parts.append(f"{'pools' if len(ms) > 1 else 'pool'} {names} on {hw}{own}{how}")
    stacked = [m for m in off if not m.calibration.software]
    head = f"Uncalibrated under {stack_name(stacked[0].calibration.stack)}" if stacked else "Uncalibrated"
    tail = "" if rules else " The advisor below names each rule and how to calibrate the chip."
    return f"{head}: " + "; ".join(parts) + "." + tail


COMPARED_BOUNDED = {
    "Goodput": "goodput_rps",
    "Throughput": "throughput_rps",
    "Output tokens/s": "throughput_rps",
    "Cost per request": "usd_per_request",
    "Cost per 1M output tokens": "usd_per_million_output_tokens",
}
"""Compare-table figures an open loop's load bounds (`limits`), by the headline key of the bound."""


def compared_errors(
    labels: Iterable[str],
    a: Sequence[PoolMark],
    b: Sequence[PoolMark],
    bounds: tuple[Limits, Limits] = ({}, {}),
) -> list[str | None]:
    """Per Compare-table figure: the band of A and B together (the lower fall, the higher rise) as
    text, '−30% to +17%' (None when neither side has one), each side's cut where its run's load
    says the figure cannot go (`bounds`: A's and B's `limits`, as their cards are)."""
    out: list[str | None] = []
    for label in labels:
        src = COMPARED_SOURCES.get(label)
        found = []
        for marks, bound in zip((a, b), bounds, strict=True):
            r = figure_range(marks, src) if src else None
            if r is None:
                continue
            r = inverted(r) if label.startswith("Cost") else r
            found.append(cut(r, bound.get(COMPARED_BOUNDED.get(label, ""))))
        out.append(signed_text(min(r[0] for r in found), max(r[1] for r in found)) if found else None)
    return out


def side_text(change: float) -> str:
    """One side of a band: '−36%', '+39%', '> +100%' past a doubling, and '+0%' for a side that
    rounds to nothing (never '−0%')."""
    text = error_text(abs(change))
    if text == "0%":
        return "+0%"
    if text.startswith(">"):
        return f"> {'−' if change < 0 else '+'}{text[1:]}"
    return f"{'−' if change < 0 else '+'}{text}"


def band(r: Range, bound: tuple[float, float] | None = None) -> str:
    """'± 36%', '−30% to +17%', or cut by a bound (`limits`: the largest fall and rise the figure
    can make) '−36% to +0%'."""
    return signed_text(*cut(r, bound))


def with_band(text: str, b: str | None) -> str:
    """A figure and its band in one string: '24 ms ± 15%', '810 ms (−22% to +39%)'; `text` alone
    without one."""
    if b is None:
        return text
    return f"{text} {b}" if b.startswith("±") else f"{text} ({b})"


def band_text(text: str, r: Range | None, bound: tuple[float, float] | None = None) -> str:
    """'9.9 req/s ± 36%', '9.9 req/s (−30% to +17%)'; the text alone when no band is shown."""
    return with_band(text, None if r is None else band(r, bound))


def with_figure_error(text: str, marks: Sequence[PoolMark], key: str, bounds: Limits | None = None) -> str:
    """A headline figure's text with its band: '24 ms' -> '24 ms (−9% to +12%)', cut where the
    run's `bounds` (`limits`) say the figure cannot go."""
    if key not in HEADLINE_SOURCES or not bears_error(text):
        return text
    return band_text(text, headline_range(marks, key), (bounds or {}).get(key))


def bears_error(text: str) -> bool:
    """Whether a formatted figure takes an error bar: not a missing one ('–'), and not zero ('0.00
    req/s', '$0.00000': a percentage of nothing is nothing)."""
    if text.strip() in NO_VALUE:
        return False
    digits = [c for c in text if c.isdigit()]
    return not digits or any(c != "0" for c in digits)


def chip_rows(
    catalog: Catalog, stack: str, moe: bool = False, custom: Iterable[str] = ()
) -> dict[str, dict[str, Any]]:
    """Per chip of the catalog: the profile it runs with under `stack`, its mark, rule and errors.

    `custom` names the scenario's own chips, which run with their entry's default profile.

    Keys of each row: ``calibration`` (short mark), ``calibrated``, ``calibration_rule``,
    ``expected_error`` (text: every kind's band), ``throughput_band`` (text), ``throughput_error``, ``ttft_error``, ``tpot_error``,
    ``energy_error`` (fractions, None where unknown), ``eta_compute``, ``eta_bandwidth``,
    ``overhead_ms`` (the profile's).
    """
    out: dict[str, dict[str, Any]] = {}
    own = set(custom)
    for hw in catalog.hardware.values():
        prof, cal = calibration(hw, stack, catalog, moe=moe, custom=hw.id in own)
        if only := runs_only_on(stack, hw):  # resolving refuses it: no profile to show
            out[hw.id] = {
                "calibration": f"not run by {stack_name(stack)} ({only})",
                "calibrated": False,
                "calibration_rule": "",
                "expected_error": "",
                "throughput_band": "",
                **{f"{f}_error": None for f in FIGURES},
                "eta_compute": None,
                "eta_bandwidth": None,
                "overhead_ms": None,
            }
            continue
        out[hw.id] = {
            "calibration": short_mark(cal),
            "calibrated": cal.fitted,
            "calibration_rule": cal.rule,
            "expected_error": error_list(real_bands(cal)) or "no band with a measured coverage",
            "throughput_band": signed_text(*r) if (r := cal.real_band("throughput")) is not None else "",
            **{f"{f}_error": cal.error(f) for f in FIGURES},
            "eta_compute": prof.eta_compute,
            "eta_bandwidth": prof.eta_bandwidth,
            "overhead_ms": prof.overhead_ms,
        }
    return out


def signed_text(lo: float, hi: float) -> str:
    """A band from its signed sides (lo <= hi): '± 9%' where they mirror, else '−22% to +39%' (or
    '−30% to −5%' when the whole band lies below the figure)."""
    if error_text(abs(lo)) == error_text(abs(hi)) and (lo <= 0.0 <= hi or error_text(abs(hi)) == "0%"):
        return f"± {error_text(abs(hi))}"
    return f"{side_text(lo)} to {side_text(hi)}"
