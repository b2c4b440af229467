"""Power of one chip from what it is doing, fitted to measured serving power (ML.ENERGY).

A chip draws its idle power whenever it is powered, and while it runs iterations three more
parts, each bounded so that the chip never draws more than its TDP:

    P = idle_w + busy * min(tdp_w - idle_w,
                            a * (tdp_w - idle_w) + e_byte * bytes_per_s + e_flop * flops_per_s)

- ``busy`` is the fraction of time the chip runs iterations (0 when idle, 1 in a steady state);
- ``a`` is the share of the chip's dynamic range drawn as soon as it runs anything (clocks up,
  kernels resident, data moving on and off the chip), whatever the work;
- ``e_byte`` the energy of one byte read from or written to HBM, ``e_flop`` of one FLOP, both
  shared across chips; ``bytes_per_s`` and ``flops_per_s`` are what the chip achieves while busy
  (utilisation x peak).

Written with utilisations, it is the form ``idle + (tdp - idle) * min(1, busy * (a + b * u_bw +
c * u_compute))`` with b and c per chip: ``b = e_byte * peak bytes/s / (tdp - idle)``, likewise c.
Energies per operation rather than shares of each chip's range were chosen because they carry
from one chip to the other: fitted on H100 alone they predict B200 power within 9% (median), and
fitted on B200 alone H100 within 8%, where shares of the range missed by 16-19%.

The fit. ML.ENERGY's leaderboard (v3.0, vLLM 0.11.1, rows X159-X222 of
data/reference/calibration-extra.csv, sources in calibration-extra-sources.md, S9) measured the
steady-state power of 16 serving configurations, with their median inter-token latency, output
tokens/s and average running batch. A configuration's utilisations come from its measured steady
state, not from any calibration: one decode step of the measured batch B at the measured median
ITL, on a unit-efficiency instance (`iteration_cost`), gives the step's bytes (weights plus KV)
and FLOPs; ``u = amount / (ITL * tp * peak)``, busy = 1. The prompts' lengths are not in the data,
so the context of a decode is taken as half the mean output length (the prompt left out: a lower
bound of the KV bytes) and the prefill work between decodes is left out too. The fitted e_flop
therefore also carries the prefill FLOPs that accompany each decode FLOP in that workload (one
LMArena prompt per answer); in a simulation, which counts prefill FLOPs itself, prefill-heavy
work is charged somewhat high, bounded by the TDP.

The coefficients minimise the squared relative error of predicted power (non-negative least
squares over the three, closed form per active set), on the power rows of 13 configurations:
DeepSeek-V3.1 (X159-X166) ran with expert parallelism, which the engine does not model, and
Llama-3.1-8B on B200 at max_num_seqs 256 (X207-X210) is host-bound (its ITL jumps 3.5x from
max_num_seqs 64 while power falls), so its chip is not busy all the time. Both are reported by
`energy_validation`, not fitted.
"""

from __future__ import annotations

import csv
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile, HardwareSpec, KvPrecision, Precision
from engine.core import datafiles
from engine.core.errors import ScenarioError
from engine.costmodel import power_cap
from engine.costmodel.iteration import iteration_cost
from engine.costmodel.perf import Instance

# Fitted by `fit_reference` to the ML.ENERGY power rows X168, X172, X176, X180, X184, X188, X192,
# X196, X200, X204, X212, X216 and X220 (data/reference/calibration-extra.csv, with their ITL,
# throughput and batch rows); a test holds these equal to a fresh fit.
ACTIVE_FRACTION = 0.45
"""Share of a chip's dynamic range (TDP - idle) drawn whenever it runs iterations."""
PJ_PER_BYTE = 43.2
"""Energy of one HBM byte moved, in picojoules (about 5.4 pJ/bit: HBM3-class)."""
PJ_PER_FLOP = 0.814
"""Energy of one FLOP, in picojoules (prefill FLOPs of the fitted workload included, module doc)."""

KV_PRECISION: KvPrecision = "bf16"
"""KV precision of the measured runs: vLLM's default KV dtype is the activations' (bf16)."""

HOST_BOUND_IDS = frozenset({"X207", "X208", "X209", "X210"})
"""Rows left out of the fit because the chip waits on the host (sources S9: ITL jumps from 9.0 to
26.7 ms between max_num_seqs 64 and 128 on B200 for Llama-3.1-8B, and power falls)."""

_MODELS = {
    "Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "Llama-3.1-70B-Instruct": "llama-3.1-70b",
    "Llama-3.1-405B-Instruct-FP8": "llama-3.1-405b",
    "DeepSeek-V3.1": "deepseek-v3",
}
_CHIPS = {"H100": "h100-sxm", "B200": "b200"}
_SOURCE = "ml-energy/leaderboard"


@dataclass(frozen=True, kw_only=True)
class PowerCoefficients:
    """The three shared coefficients of the power model."""

    active_fraction: float
    pj_per_byte: float
    pj_per_flop: float


FITTED = PowerCoefficients(active_fraction=ACTIVE_FRACTION, pj_per_byte=PJ_PER_BYTE, pj_per_flop=PJ_PER_FLOP)
"""The shipped coefficients (the module constants)."""


def chip_power_w(
    hw: HardwareSpec,
    *,
    busy: ArrayLike = 1.0,
    u_bandwidth: ArrayLike = 0.0,
    u_compute: ArrayLike = 0.0,
    weights: Precision = "bf16",
    coefficients: PowerCoefficients = FITTED,
) -> Any:
    """Mean power of one chip (W) busy a fraction `busy` of the time at the given utilisations.

    The utilisations are fractions of the chip's peak HBM bytes/s and of its peak FLOP/s at the
    weights' precision, while it is busy. Vectorised over the three arrays.
    """
    span = hw.tdp_w - hw.idle_w
    rate = (
        coefficients.active_fraction * span
        + coefficients.pj_per_byte * np.asarray(u_bandwidth, dtype=float) * hw.memory_tb_s
        + coefficients.pj_per_flop * np.asarray(u_compute, dtype=float) * hw.peak_flops(weights) / 1e12
    )
    return hw.idle_w + np.asarray(busy, dtype=float) * np.minimum(span, rate)


def run_energy_j(
    hw: HardwareSpec,
    *,
    chips: int,
    span_s: float,
    busy_chip_s: float,
    bytes_moved: float,
    flops: float,
    coefficients: PowerCoefficients = FITTED,
    clock: float = 1.0,
    limit_w: float | None = None,
) -> float:
    """Energy (J) of `chips` chips over `span_s` seconds, from a run's integrals.

    `busy_chip_s` is the chip-seconds spent running iterations, `bytes_moved` and `flops` the
    HBM bytes and FLOPs of all those iterations. The model is linear in them before the bound,
    so the integral of power is idle energy plus the dynamic energy, bounded by every busy
    chip-second at TDP (the bound holds on average over the run, not iteration by iteration).
    A chip under a power limit (`engine.costmodel.power_cap`) runs at `clock`: its active power
    and energy per FLOP scale down, and the bound is `limit_w` instead of the TDP.
    """
    span = hw.tdp_w - hw.idle_w
    active, per_flop = power_cap.energy_scale(clock)
    dynamic = (
        coefficients.active_fraction * span * busy_chip_s * active
        + coefficients.pj_per_byte * 1e-12 * bytes_moved
        + coefficients.pj_per_flop * 1e-12 * flops * per_flop
    )
    most = span if limit_w is None else min(span, limit_w - hw.idle_w)
    return hw.idle_w * chips * span_s + min(most * busy_chip_s, dynamic)


def instance_power_range_w(hw: HardwareSpec, chips: int, weights: Precision = "bf16") -> tuple[float, float]:
    """(idle, most) power of one instance of `chips` chips, in watts.

    Idle: every chip at its idle power. Most: every chip busy at full bandwidth and compute
    utilisation (`chip_power_w` is monotonic in both and bounded by the TDP), the most any iteration
    can draw. An edge site's power budget is enforced against these (`engine.serving.edge`).
    """
    most = float(chip_power_w(hw, busy=1.0, u_bandwidth=1.0, u_compute=1.0, weights=weights))
    return chips * hw.idle_w, chips * most


# --- the measurements -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class PowerPoint:
    """One measured serving configuration: its setup and its four steady-state figures."""

    power_id: str
    energy_id: str
    model: str
    hardware: str
    gpus: int
    expert_parallel: bool
    weights: Precision
    max_num_seqs: int
    batch: float
    mean_output_tokens: float
    itl_s: float
    power_w: float
    joules_per_token: float
    tokens_per_s: float

    @property
    def fitted(self) -> bool:
        """True when the configuration is one the fit uses (module docstring)."""
        return not self.expert_parallel and self.power_id not in HOST_BOUND_IDS

    @property
    def note(self) -> str:
        """Why the configuration is left out of the fit, or empty."""
        if self.expert_parallel:
            return "expert parallelism: predicted as TP over all GPUs (the power fit reads one decode step), not fitted"
        if self.power_id in HOST_BOUND_IDS:
            return "host-bound (chip not busy all the time): not fitted"
        return ""


def reference_csv() -> Path:
    """The file holding the ML.ENERGY rows (data/reference/calibration-extra.csv)."""
    return datafiles.data_dir() / "reference" / "calibration-extra.csv"


def _number(pattern: str, text: str, what: str) -> float:
    found = re.search(pattern, text)
    if found is None:
        raise ScenarioError(f"power measurements: no {what} in {text!r}")
    return float(found.group(1))


def read_power_points(path: str | Path | None = None) -> list[PowerPoint]:
    """The ML.ENERGY configurations of a reference file (default: the shipped one)."""
    file = Path(path) if path is not None else reference_csv()
    if not file.is_file():
        raise ScenarioError(f"power measurements: {file} is missing")
    groups: dict[tuple[str, ...], dict[str, dict[str, str]]] = {}
    with open(file, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if not row["source"].startswith(_SOURCE):
                continue
            key = (row["model"], row["hardware"], row["tp"], row["rate"])
            groups.setdefault(key, {})[row["metric"].split(" ")[0]] = row
    points = []
    for (model, hardware, tp, rate), rows in groups.items():
        power, energy = rows["avg_power_watts"], rows["energy_per_output_token"]
        label = re.search(r'label "(\w+)"', hardware)
        points.append(
            PowerPoint(
                power_id=power["id"],
                energy_id=energy["id"],
                model=_MODELS[model],
                hardware=_CHIPS[label.group(1) if label else hardware],
                gpus=int(power["n_gpus"]),
                expert_parallel="EP" in tp,
                weights="fp8" if "FP8" in power["precision"] else "bf16",
                max_num_seqs=int(_number(r"max_num_seqs (\d+)", rate, "max_num_seqs")),
                batch=_number(r"avg running batch ([\d.]+)", power["notes"], "running batch"),
                mean_output_tokens=_number(r"mean ([\d.]+)", power["output_len"], "output length"),
                itl_s=float(rows["median_itl_ms"]["value"]) / 1e3,
                power_w=float(power["value"]),
                joules_per_token=float(energy["value"]),
                tokens_per_s=float(rows["output_tokens_per_s"]["value"]),
            )
        )
    return points


def _unit_instance(p: PowerPoint, catalog: Catalog) -> Instance:
    """The point's instance at eta = 1 and no overhead (what the chips did, not how well)."""
    chip = catalog.chip(p.hardware)
    unit = chip.model_copy(
        update={
            "profiles": {
                "unit": CalibrationProfile(eta_compute=1, eta_bandwidth=1, overhead_ms=0, source="unit")
            },
            "default_profile": "unit",
        }
    )
    # an expert-parallel run is taken as TP over its GPUs: the engine shards experts that way
    return Instance(
        model=catalog.model(p.model), hardware=unit, tp=p.gpus, weights=p.weights, kv=KV_PRECISION
    )


def utilisation(p: PowerPoint, catalog: Catalog) -> tuple[float, float]:
    """(bandwidth, compute) utilisation per chip in the point's measured steady state.

    One decode step of the measured running batch at half the mean output length of context
    (the unknown prompt left out), over the measured median ITL, against the chips' peaks.
    """
    inst = _unit_instance(p, catalog)
    step = iteration_cost(
        inst, decode_requests=p.batch, decode_context_tokens=p.batch * p.mean_output_tokens / 2.0
    )
    hw = inst.hardware
    u_bw = float(step.bytes) / (p.itl_s * inst.tp * hw.memory_tb_s * 1e12)
    u_c = float(step.flops) / (p.itl_s * inst.tp * hw.peak_flops(p.weights))
    return u_bw, u_c


def predicted_power_w(p: PowerPoint, catalog: Catalog, coefficients: PowerCoefficients = FITTED) -> float:
    """Predicted power of the point's whole instance (W, all GPUs), busy all the time."""
    u_bw, u_c = utilisation(p, catalog)
    hw = catalog.chip(p.hardware)
    per_chip = chip_power_w(hw, u_bandwidth=u_bw, u_compute=u_c, weights=p.weights, coefficients=coefficients)
    return float(per_chip) * p.gpus


def _nnls(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with non-negative coefficients: the best unconstrained fit over every
    subset of the columns whose solution is non-negative (three columns: seven subsets)."""
    best, best_loss = np.zeros(x.shape[1]), math.inf
    for k in range(1, x.shape[1] + 1):
        for cols in itertools.combinations(range(x.shape[1]), k):
            sol = np.linalg.lstsq(x[:, cols], y, rcond=None)[0]
            if (sol < 0).any():
                continue
            coef = np.zeros(x.shape[1])
            coef[list(cols)] = sol
            loss = float(((x @ coef - y) ** 2).sum())
            if loss < best_loss:
                best, best_loss = coef, loss
    return best


def fit(points: Sequence[PowerPoint], catalog: Catalog) -> PowerCoefficients:
    """The coefficients that minimise the squared relative error of power over `points`.

    Per chip, measured power - idle = a * (tdp - idle) + e_byte * bytes/s + e_flop * FLOP/s is
    linear in the coefficients; each row is divided by the measured power so that the residual
    is the relative error. Rounded as the module constants are.
    """
    if not points:
        raise ScenarioError("power fit: no measurements to fit")
    x, y = [], []
    for p in points:
        hw = catalog.chip(p.hardware)
        u_bw, u_c = utilisation(p, catalog)
        watts = p.power_w / p.gpus
        features = (hw.tdp_w - hw.idle_w, u_bw * hw.memory_tb_s, u_c * hw.peak_flops(p.weights) / 1e12)
        x.append([v / watts for v in features])
        y.append((watts - hw.idle_w) / watts)
    a, pj_b, pj_f = _nnls(np.array(x), np.array(y))
    return PowerCoefficients(
        active_fraction=round(float(a), 3),
        pj_per_byte=round(float(pj_b), 1),
        pj_per_flop=round(float(pj_f), 3),
    )


def fit_reference(catalog: Catalog, path: str | Path | None = None) -> PowerCoefficients:
    """A fresh fit to the shipped ML.ENERGY measurements (the configurations the fit uses)."""
    return fit([p for p in read_power_points(path) if p.fitted], catalog)


def energy_validation(
    catalog: Catalog, coefficients: PowerCoefficients = FITTED, path: str | Path | None = None
) -> Any:
    """Measured against predicted power and energy per output token, one row per measurement.

    Columns: id, setup, kind ("power", W for the whole instance, or "energy", J per output token
    for all its GPUs), measured, predicted, error (predicted / measured - 1), abs_error, fitted,
    note. Predicted energy per token = predicted power / measured output tokens per second, so
    its error equals that of the power row of the same configuration.
    """
    # imported here: the simulator's metrics import this module, and a command-line run never loads pandas
    import pandas as pd

    rows = []
    for p in read_power_points(path):
        power = predicted_power_w(p, catalog, coefficients)
        setup = (
            f"{p.model} {p.gpus}x{p.hardware} {p.weights}{' EP' if p.expert_parallel else ''}, "
            f"max_num_seqs {p.max_num_seqs} (batch {p.batch:g})"
        )
        for kind, row_id, measured, predicted in (
            ("power", p.power_id, p.power_w, power),
            ("energy", p.energy_id, p.joules_per_token, power / p.tokens_per_s),
        ):
            rows.append(
                {
                    "id": row_id,
                    "setup": setup,
                    "kind": kind,
                    "measured": measured,
                    "predicted": predicted,
                    "error": predicted / measured - 1.0,
                    "abs_error": abs(predicted / measured - 1.0),
                    "fitted": p.fitted,
                    "note": p.note,
                }
            )
    return pd.DataFrame(rows)
