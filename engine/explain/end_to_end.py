"""End-to-end checks: open-loop reference rows rerun by the simulator.

The steady-state predictor behind the fit (engine/costmodel/calibrate.py) covers fixed
concurrency and static batches. Rows measured under Poisson arrivals at a rate (dstack's
H100-vs-MI300X runs: 1,000 ShareGPT prompts at 16 req/s and all at once) depend on queueing,
batch growth and scheduling as well, which is what the simulator itself models. Each such row is
rerun here as a scenario (the stated chip, parallelism, batch limits, chunked prefill, arrival
rate and prompt count; every request at the stated mean lengths) and its figure is measured on
the simulated requests as vLLM's `benchmark_serving.py` measures it:

- output throughput: output tokens over the benchmark's duration (first arrival to last answer);
- mean TTFT;
- mean TPOT: per request with more than one output token, (latency - TTFT) / (output - 1).

Twice: with the shipped profiles (*fit*) and with the profiles refitted without the row's source,
given by the rules of docs/calibration.md (*leave source out*). These rows are never fitted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from engine.catalog.entries import Catalog
from engine.catalog.specs import CalibrationProfile
from engine.costmodel import calibrate, crossval, trust
from engine.costmodel.reference import OpenLoop, open_loop_rows
from engine.scenario.codec import from_data
from engine.scenario.model import Scenario
from engine.serving.run import simulate
from engine.serving.workload import Requests

PROFILE = "end-to-end"
"""Name under which a run's profile is added to its chip (so the run uses exactly that profile)."""


def scenario_of(row: OpenLoop) -> Scenario:
    """The scenario that reruns an open-loop row: one instance, the row's settings, its rate."""
    return from_data(
        {
            "version": 1,
            "name": f"{row.id}: {row.hardware} x{row.tp} at {row.rate_rps:g} req/s",
            "seed": 0,
            "duration_s": row.prompts / row.rate_rps,
            "model": {"id": row.model, "weights": row.weights, "kv": row.kv},
            "workload": {
                "classes": [
                    {
                        "name": "sharegpt",
                        "input": {"kind": "constant", "tokens": max(1, round(row.mean_input))},
                        "output": {"kind": "constant", "tokens": max(1, round(row.mean_output))},
                    }
                ],
                "arrival": {"kind": "poisson", "rate_rps": row.rate_rps},
            },
            "deployment": {
                "mode": "colocated",
                "stack": row.stack,
                "pools": [
                    {
                        "name": "server",
                        "role": "mixed",
                        "hardware": row.hardware,
                        "tp": row.tp,
                        "count": 1,
                        "profile": PROFILE,
                    }
                ],
                "batching": {
                    "max_batch": row.max_batch,
                    "token_budget": row.token_budget,
                    "chunked_prefill": row.chunked,
                },
            },
            # vLLM's scheduler: first come, first served; KV grows a token at a time; recompute on
            # preemption
            "scheduler": {"preemption": "recompute"},
        }
    )


def requests_of(row: OpenLoop) -> Requests:
    """The row's prompts as `benchmark_serving.py` sends them: exactly `prompts` requests, the first
    at 0 and each next one after an exponential gap at the row's rate (seeded), at the mean lengths."""
    n = row.prompts
    gaps = np.random.default_rng(0).exponential(1.0 / row.rate_rps, n)
    arrival = np.concatenate(([0.0], np.cumsum(gaps[:-1])))
    return Requests(
        arrival_s=arrival,
        cls=np.zeros(n, dtype=np.int64),
        prompt_tokens=np.full(n, max(1, round(row.mean_input)), dtype=np.int64),
        output_tokens=np.full(n, max(1, round(row.mean_output)), dtype=np.int64),
        prefix_group=np.zeros(n, dtype=np.int64),
        prefix_tokens=np.zeros(n, dtype=np.int64),
        session=np.arange(n, dtype=np.int64),
        reused_tokens=np.zeros(n, dtype=np.int64),
    )


def figures(requests: pd.DataFrame) -> dict[str, float]:
    """Output throughput (tok/s), mean TTFT and mean TPOT (ms) as benchmark_serving computes them."""
    done = requests[requests["outcome"] == "completed"]
    if done.empty:
        return {"throughput": 0.0, "ttft": float("nan"), "tpot": float("nan")}
    out = done["output_tokens"].to_numpy(dtype=float)
    ttft = (done["first_token_s"] - done["arrival_s"]).to_numpy()
    latency = (done["completion_s"] - done["arrival_s"]).to_numpy()
    many = out > 1
    span = float(done["completion_s"].max() - requests["arrival_s"].min())
    return {
        "throughput": float(out.sum() / span) if span > 0 else float("nan"),
        "ttft": float(ttft.mean() * 1000.0),
        "tpot": float(((latency[many] - ttft[many]) / (out[many] - 1)).mean() * 1000.0)
        if many.any()
        else 0.0,
    }


def run_row(row: OpenLoop, profile: CalibrationProfile, catalog: Catalog) -> dict[str, float]:
    """Simulate a row's setup with `profile` on its chip; its three figures."""
    hw = catalog.chip(row.hardware)
    spec = hw.model_copy(update={"profiles": {**hw.profiles, PROFILE: profile}})
    reqs = requests_of(row)
    sc = scenario_of(row).model_copy(update={"duration_s": float(reqs.arrival_s[-1]) + 1e-6})
    res = simulate(sc, replace(catalog, hardware={**catalog.hardware, spec.id: spec}), reqs)
    return figures(res.requests)


@dataclass(frozen=True)
class Check:
    """One open-loop row: measured, and simulated with the shipped and the held-out profiles."""

    row: OpenLoop
    fit: float
    held_out: float
    basis: str
    origin: str = ""
    """'chip:stack' of the fit the shipped profile is (by the rules of docs/calibration.md), or 'transfer'."""

    @property
    def fit_error(self) -> float:
        return self.fit / self.row.value - 1.0

    @property
    def held_out_error(self) -> float:
        return self.held_out / self.row.value - 1.0


def checks(catalog: Catalog, points: list[calibrate.Measurement]) -> list[Check]:
    """Every open-loop row rerun with the shipped profiles and with its source left out.

    `points` are the usable reference points the profiles are fitted to (the same fit the
    catalog ships: a test keeps them equal).
    """
    rows = open_loop_rows(catalog)
    fits = calibrate.reference_fits(points, catalog)
    held_fits: dict[str, dict[tuple[str, str], calibrate.Fit]] = {}
    runs: dict[tuple[object, ...], dict[str, float]] = {}
    out = []
    for row in rows:
        if row.source_key not in held_fits:
            kept = [m for m in points if m.source_key != row.source_key]
            held_fits[row.source_key] = calibrate.reference_fits(kept, catalog)
        shipped, _ = crossval.rule_profile(row.hardware, row.stack, fits)
        held, basis = crossval.rule_profile(row.hardware, row.stack, held_fits[row.source_key])
        setup = (row.hardware, row.tp, row.model, row.weights, row.kv, row.mean_input, row.mean_output,
                 row.prompts, row.rate_rps, row.max_batch, row.token_budget, row.chunked, row.stack)  # fmt: skip
        for prof in (shipped, held):
            if (*setup, prof) not in runs:
                runs[(*setup, prof)] = run_row(row, prof, catalog)
        found = trust.borrowed_profile(
            row.hardware, row.stack, lambda c, st: fits[(c, st)].profile if (c, st) in fits else None
        )
        origin = f"{found[2]}:{found[3]}" if found is not None else "transfer"
        out.append(
            Check(row, runs[(*setup, shipped)][row.figure], runs[(*setup, held)][row.figure], basis, origin)
        )
    return out


def frame(found: list[Check]) -> pd.DataFrame:
    """One line per checked row: setup, load, figure, measured, simulated (fit and held out), errors."""
    return pd.DataFrame(
        [
            {
                "id": c.row.id,
                "chip": c.row.hardware,
                "tp": c.row.tp,
                "model": c.row.model,
                "stack": c.row.stack,
                "rate_rps": c.row.rate_rps,
                "figure": c.row.figure,
                "unit": c.row.unit,
                "measured": c.row.value,
                "fit": c.fit,
                "fit_error": c.fit_error,
                "held_out": c.held_out,
                "held_out_error": c.held_out_error,
                "basis": c.basis,
                "origin": c.origin,
                "note": c.row.note,
            }
            for c in found
        ]
    )


def headline(df: pd.DataFrame) -> dict[str, float]:
    """Median and p90 |error| of the reruns, fit and held out."""
    if df.empty:
        return {}
    fit, held = df["fit_error"].abs(), df["held_out_error"].abs()
    return {
        "n": float(len(df)),
        "fit_median": float(fit.median()),
        "fit_p90": float(np.quantile(fit, 0.9)),
        "held_out_median": float(held.median()),
        "held_out_p90": float(np.quantile(held, 0.9)),
    }


def online_errors(df: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per 'chip:stack' whose fit the reruns ran with, the median |error| per figure (to 1%)."""
    out: dict[str, dict[str, float]] = {}
    if df.empty:
        return out
    for origin, g in df.groupby("origin", sort=True):
        out[str(origin)] = {
            str(figure): round(float(f["fit_error"].abs().median()), 2)
            for figure, f in g.groupby("figure", sort=False)
        }
        out[str(origin)]["reruns"] = float(len(g))
    return out
