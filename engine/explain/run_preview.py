"""A preview of a run: the same requests over a shorter window, drawn while the full run simulates.

A slider move on the dashboard changes the scenario, and the full run of the default preset takes
about half a second. The preview is the same scenario with a shorter window and nothing else
changed (`preview_scenario`), run on the first requests of the full run's own requests (the same
seed's draws or the same trace rows, cut where the window ends), so its figures are those of the
full run's first `PREVIEW_REQUESTS` requests. It runs in a fifth of the time or less.

How far a preview's headline figures land from the full run's is measured over the shipped
presets that have one (`measure_preview_error`, `python bench/preview_error.py` prints it); the measured
spread is `PREVIEW_ERROR`, shown beside every preview. A preview of a window that starts empty
sees less queueing than the full run's steady state, and a rate that changes over the window
(a ramp, a peak, a day) is seen only in its first part: both are in the measured error.

A closed loop (its clients send when their last request ends) and an offline batch (every
request at t = 0) have no shorter window of the same requests: they get no preview. Nor does a
run small enough (at most `MIN_FULL_REQUESTS` requests) to be its own preview. Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from engine.core.errors import ScenarioError
from engine.scenario.codec import apply_overrides
from engine.scenario.model import Scenario
from engine.serving.run import SimResult, simulate
from engine.serving.workload import Requests, generate

PREVIEW_REQUESTS = 2_000
"""Requests in a preview's window (after any warm-up): about 0.1 s of simulation of the default
preset on the 2-core reference machine (docs/performance.md, "The slider's preview")."""
MIN_FULL_REQUESTS = 2 * PREVIEW_REQUESTS
"""A run of at most this many requests has no preview: it is fast enough to wait for."""
MAX_PREVIEW_SHARE = 0.5
"""A preview that would simulate more than this share of the full run's requests is not offered:
a long warm-up is simulated by the preview too (agentic-cache's 300 s: its preview ran 3,988 of
4,409 requests, and the result waited about twice as long for it)."""

FIGURES = ("ttft_p99_ms", "tpot_p99_ms", "slo_attainment", "goodput_rps", "usd_per_request")
"""The headline figures a preview shows and whose error against the full run is measured."""

KINDS = ("steady", "changing")
"""Kinds of scenario whose previews err differently: a steady one (generated arrivals at a flat
rate, no faults, no autoscaling) looks in its first minutes much as it does over the window; a
changing one (a trace, a shaped rate, faults or autoscaling) does what the preview cannot see later."""

PREVIEW_ERROR: Mapping[str, Mapping[str, float]] = {
    "steady": {  # 11 presets; the default preset's own: 0.016, 0.003, 0.000, 0.031, 0.183
        "ttft_p99_ms": 0.086,
        "tpot_p99_ms": 0.046,
        "slo_attainment": 0.005,
        "goodput_rps": 0.033,
        "usd_per_request": 0.331,
    },
    "changing": {  # 11 presets: the traces, the day of chat, the faults, the enterprise peak
        "ttft_p99_ms": 0.932,
        "tpot_p99_ms": 0.296,
        "slo_attainment": 0.112,
        "goodput_rps": 0.587,
        "usd_per_request": 0.433,
    },
}
"""How far a preview's figure lands from the full run's, per kind of scenario: the 84th percentile,
over the shipped presets of that kind that have a preview, of |preview / full - 1| (for SLO
attainment, of |preview - full|, a share). Measured by `python bench/preview_error.py`
(`measure_preview_error`) on 2026-12-04, once agentic-cache's warm-up left it without a preview, and
again on 2026-12-05, when portfolio-decode-loss was marked unsustainable (its full run's goodput
counts the requests served until its window's last completed: the changing kind's goodput error went
from 0.438 to 0.587; the figures are deterministic: the machine's load does not change them), and
on 2026-12-05 again once a prefill iteration's KV hand-offs shared the NIC (cost per request 0.336 to
0.334 steady, 0.438 to 0.433 changing), and on 2026-12-06 once the MoE terms were refitted with a
rank's KV heads whole (the DeepSeek presets': TPOT 0.045 to 0.046, cost per request 0.334 to 0.331
steady). Cost
per request errs most, upwards on every preset measured: every chip is billed until the last request
drains, and a short window's drain is a larger share of its bill."""


def kind_of(scenario: Scenario) -> str:
    """'steady' (generated arrivals at a flat rate, no faults, no autoscaled pool) or 'changing'."""
    wl = scenario.workload
    steady = (
        wl.trace is None
        and wl.arrival.shape == "flat"
        and not scenario.faults
        and all(p.autoscale is None for p in scenario.deployment.pools)
    )
    return "steady" if steady else "changing"


@dataclass(frozen=True, kw_only=True)
class RunPreview:
    """A preview's result and what it is: its window against the full one, its expected error."""

    result: SimResult
    window_s: float
    full_window_s: float
    requests: int
    """Requests the preview sent (of a session, the turns its window reached)."""
    full_requests: int
    """Requests drawn for the whole window (with multi-turn sessions the full run sends fewer: a
    later turn waits on the answer before it, docs/decisions.md)."""
    kind: str

    def text(self) -> str:
        """'Preview: the first 2,000 of the 9,692 requests drawn (124 s of 600 s); expected error ...'."""
        return (
            f"Preview: the first {self.requests:,} of the {self.full_requests:,} requests drawn "
            f"({self.window_s:,.0f} s of the {self.full_window_s:,.0f} s window); "
            f"{preview_error_text(self.kind)}. "
            "The full run replaces it when it is done."
        )


def preview_error_text(kind: str) -> str:
    """'expected error against the full run: TTFT p99 ±12%, ..., SLO attainment ±1.5 pts', for a
    kind of scenario (`KINDS`)."""
    error = PREVIEW_ERROR[kind]
    names = {
        "ttft_p99_ms": "TTFT p99",
        "tpot_p99_ms": "TPOT p99",
        "slo_attainment": "SLO attainment",
        "goodput_rps": "goodput",
        "usd_per_request": "$ / request",
    }
    parts = [
        f"{names[k]} ±{v * 100:.1f} pts" if k == "slo_attainment" else f"{names[k]} ±{v:.0%}"
        for k, v in error.items()
    ]
    what = "" if kind == "steady" else " (a load that changes over the window: the preview sees its start)"
    return f"expected error against the full run{what}: " + ", ".join(parts)


def _has_window(scenario: Scenario) -> bool:
    """Whether a shorter window holds a prefix of the same requests: open-loop arrivals or a trace."""
    wl = scenario.workload
    return wl.trace is not None or wl.arrival.kind in ("poisson", "gamma")


def preview_window(scenario: Scenario, requests: Requests, budget: int = PREVIEW_REQUESTS) -> float | None:
    """The preview's window (s): it ends after the first `budget` requests past the warm-up; None
    where the scenario has no preview (a closed loop, an offline batch, a run of at most
    `MIN_FULL_REQUESTS` requests, a preview of more than `MAX_PREVIEW_SHARE` of them, or a window
    that would not be shorter)."""
    if not _has_window(scenario) or len(requests) <= MIN_FULL_REQUESTS:
        return None
    arrival = requests.arrival_s
    first = int(np.searchsorted(arrival, scenario.warmup_s, side="left"))
    if first + budget >= MAX_PREVIEW_SHARE * len(arrival):
        return None
    window = float(arrival[first + budget])
    if window >= scenario.duration_s or window <= scenario.warmup_s:
        return None
    return max(window, 1.0)


def preview_scenario(scenario: Scenario, window_s: float) -> Scenario | None:
    """The scenario over the window [0, window_s) and nothing else changed; None where that window
    is not a valid scenario (a field bounded by the window: a fault or a scale event after it)."""
    try:
        return apply_overrides(scenario, {"duration_s": window_s})
    except ScenarioError:
        return None


def head(requests: Requests, n: int) -> Requests:
    """The first `n` requests (by id, which is arrival order), block hashes included."""
    offsets, hashes = requests.block_offsets, requests.block_hashes
    if offsets is not None and hashes is not None:
        offsets, hashes = offsets[: n + 1], hashes[: int(offsets[n])]
    pause = requests.pause_s[:n] if requests.pause_s is not None else None
    return replace(
        requests,
        arrival_s=requests.arrival_s[:n],
        cls=requests.cls[:n],
        prompt_tokens=requests.prompt_tokens[:n],
        output_tokens=requests.output_tokens[:n],
        prefix_group=requests.prefix_group[:n],
        prefix_tokens=requests.prefix_tokens[:n],
        session=requests.session[:n],
        reused_tokens=requests.reused_tokens[:n],
        block_offsets=offsets,
        block_hashes=hashes,
        pause_s=pause,
        turn_gap_s=requests.turn_gap_s[:n] if requests.turn_gap_s is not None else None,
    )


def preview_of(scenario: Scenario, budget: int = PREVIEW_REQUESTS) -> RunPreview | None:
    """The preview run of a scenario (the first `budget` requests' window), or None where it has none."""
    if not _has_window(scenario):
        return None
    requests = generate(scenario)
    window = preview_window(scenario, requests, budget)
    short = preview_scenario(scenario, window) if window is not None else None
    if short is None or window is None:
        return None
    n = int(np.searchsorted(requests.arrival_s, window, side="left"))
    result = simulate(short, requests=head(requests, n))
    return RunPreview(
        result=result,
        window_s=window,
        full_window_s=scenario.duration_s,
        requests=result.tables.rows,  # the warm-up's too: the first of the requests drawn it sent
        full_requests=len(requests),
        kind=kind_of(scenario),
    )


def figures(summary: Mapping[str, Any]) -> dict[str, float | None]:
    """The headline figures of a run's summary that a preview's error is measured on."""
    lat = summary.get("latency_ms", {})
    return {
        "ttft_p99_ms": lat.get("ttft", {}).get("p99"),
        "tpot_p99_ms": lat.get("tpot", {}).get("p99"),
        "slo_attainment": summary.get("slo_attainment"),
        "goodput_rps": summary.get("goodput_rps"),
        "usd_per_request": summary.get("cost", {}).get("usd_per_request"),
    }


def difference(preview_summary: Mapping[str, Any], full_summary: Mapping[str, Any]) -> dict[str, float]:
    """Per figure, how far the preview lands from the full run: |preview / full - 1|, and for SLO
    attainment |preview - full| (a share); figures missing on either side are left out."""
    a, b = figures(preview_summary), figures(full_summary)
    out: dict[str, float] = {}
    for key in FIGURES:
        p, f = a[key], b[key]
        if p is None or f is None:
            continue
        if key == "slo_attainment":
            out[key] = abs(p - f)
        elif f > 0:
            out[key] = abs(p / f - 1.0)
    return out


def measure_preview_error(scenarios: Iterable[Scenario], quantile: float = 0.84) -> dict[str, Any]:
    """The expected error of a preview, per kind of scenario: per figure, the `quantile` of
    `difference` over the scenarios of that kind that have a preview (each run in full too);
    ``{"error": {kind: {figure: error}}, "quantile": q, "scenarios": {name: (kind, differences)}}``."""
    rows: dict[str, tuple[str, dict[str, float]]] = {}
    for sc in scenarios:
        pv = preview_of(sc)
        if pv is not None:
            rows[sc.name] = (pv.kind, difference(pv.result.summary, simulate(sc).summary))
    error: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        of_kind = [r for k, r in rows.values() if k == kind]
        error[kind] = {
            key: float(np.quantile([r[key] for r in of_kind if key in r], quantile))
            for key in FIGURES
            if any(key in r for r in of_kind)
        }
    return {"error": error, "quantile": quantile, "scenarios": rows}
